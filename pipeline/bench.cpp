#include "pipeline/bench.hpp"

#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "io/logging.hpp"
#include "io/media_reader.hpp"
#include "kernels/processor.hpp"
#include "pipeline/bench_cases.hpp"
#include "pipeline/bench_contract.hpp"
#include "pipeline/bench_memory.hpp"
#include "pipeline/bench_plot.hpp"
#include "pipeline/frame_pool.hpp"
#include "pipeline/options.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/processor_factory.hpp"

namespace hazefree {
namespace {

using namespace bench;
using Clock = std::chrono::steady_clock;

struct BenchResult {
  std::string label;
  std::string backend;
  int width = 0, height = 0, frames = 0;
  int depth = 8;  // bits per sample of the frames
  double median_ms = 0, mean_ms = 0, min_ms = 0;
  std::vector<StageTime> stages;  // mean per stage
  Contract contract;
  // Per measured frame: wall ms, each stage's ms, and the atmospheric light used (DCP).
  struct Frame {
    double ms = 0;
    std::vector<StageTime> stages;
    std::array<float, 3> a{};
    DehazeStats dehaze;  // SPEC 13: haze index and omega used (DCP)
  };
  std::vector<Frame> per_frame;
  double paper_value = 0;
  std::string paper_unit, paper_source;
  double ms_per_mpixel() const { return median_ms / (double(width) * height / 1e6); }
  double fps() const { return median_ms > 0 ? 1000.0 / median_ms : 0.0; }
};

// Sums each stage's time over the measured frames, keeping the stages in the order they ran.
class StageMeans {
 public:
  void add(const std::vector<StageTime>& stages) {
    for (const StageTime& st : stages) {
      if (!sum_.count(st.name)) order_.push_back(st.name);
      sum_[st.name] += st.ms;
    }
  }
  std::vector<StageTime> means(int frames) const {
    std::vector<StageTime> out;
    for (const std::string& name : order_) out.push_back({name, sum_.at(name) / frames});
    return out;
  }

 private:
  std::map<std::string, double> sum_;
  std::vector<std::string> order_;
};

// `decode_ms`: the decode of --input's frames, measured in its own pass before the cases (null on
// generated frames).
BenchResult run_case(const BenchCase& c, const std::vector<Image>& frames, int measured, int warmup,
                     HostPeak& host_peak, std::optional<double> decode_ms) {
  host_peak.restart();
  const DeviceMemory device(c.config.backend == Backend::cuda);
  std::unique_ptr<FrameProcessor> processor = create_processor(c.config, false);
  // The CUDA backend copies from and to page-locked memory, as the pipeline's pools provide.
  const ImageView& shape = frames[0].view();
  const BufferAllocator allocator =
      c.config.backend == Backend::cuda ? BufferAllocator::pinned_or_heap() : BufferAllocator::heap();
  FramePool inputs(frames.size(), shape.format, shape.width, shape.height, allocator, shape.depth);
  FramePool outputs(1, shape.format, shape.width, shape.height, allocator, shape.depth);
  std::vector<PooledFrame*> in;
  for (const Image& f : frames) {
    in.push_back(inputs.acquire());
    copy_image(f.view(), in.back()->view);
  }
  PooledFrame* out = outputs.acquire();
  std::vector<double> times;
  std::vector<BenchResult::Frame> per_frame;
  StageMeans stages;
  for (int i = 0; i < warmup + measured; ++i) {
    const auto t0 = Clock::now();
    processor->process(in[static_cast<std::size_t>(i) % in.size()]->view, out->view);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (i < warmup) continue;
    times.push_back(ms);
    BenchResult::Frame frame{ms, processor->stage_times(), processor->atmospheric_light(), processor->dehaze_stats(0)};
    stages.add(frame.stages);
    per_frame.push_back(std::move(frame));
  }
  BenchResult r;
  r.label = c.label;
  r.backend = processor->description();
  r.width = c.width;
  r.height = c.height;
  r.depth = shape.depth;
  r.frames = measured;
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  r.median_ms = sorted[sorted.size() / 2];
  r.min_ms = sorted.front();
  double total = 0;
  for (double t : times) total += t;
  r.mean_ms = total / times.size();
  r.stages = stages.means(measured);
  r.per_frame = std::move(per_frame);
  Contract& k = r.contract;
  k.decode = decode_ms;  // encode: the cases encode nothing (null)
  k.take_stages(r.stages);
  if (!r.stages.empty()) {
    // One frame at a time, so nothing overlaps: the timed stages' sum over the wall time of the
    // same loop (decode, timed in its own pass, left out). Below 1 by the work between the timed
    // stages (format checks, launches, synchronisation); 1 = every millisecond is in a stage.
    double timed = 0;
    for (const StageTime& st : r.stages) timed += st.ms;
    k.overlap_efficiency = timed / r.mean_ms;
  } else {
    // The backend times no stages in this mode (the CPU backend's HE and AHE): the whole
    // process() call is the one kernel stage, and a stage sum that is the wall time itself has no
    // efficiency to tell (null).
    k.kernels.push_back({"process", r.mean_ms});
  }
  k.peak_host_bytes = host_peak.read();
  k.peak_device_bytes = device.added();
  for (PooledFrame* f : in) inputs.release(f);
  outputs.release(out);
  // The paper's column matching this backend.
  if (c.config.backend == Backend::cuda) r.paper_value = c.paper_gpu;
  else if (c.config.threads == 1) r.paper_value = c.paper_sequential;
  else r.paper_value = c.paper_openmp;
  r.paper_unit = c.paper_unit;
  r.paper_source = c.paper_source;
  return r;
}

void print_table(const std::vector<BenchResult>& results) {
  fmt::print("{:<26} {:<28} {:>11} {:>5} {:>10} {:>10} {:>10}  {}\n", "case", "backend", "size", "bits",
             "ms/frame", "fps", "ms/Mpix", "paper");
  for (const BenchResult& r : results) {
    std::string paper;
    if (r.paper_value > 0) paper = fmt::format("{} {} ({})", r.paper_value, r.paper_unit, r.paper_source);
    fmt::print("{:<26} {:<28} {:>11} {:>5} {:>10.3f} {:>10.1f} {:>10.3f}  {}\n", r.label, r.backend,
               fmt::format("{}x{}", r.width, r.height), r.depth, r.median_ms, r.fps(), r.ms_per_mpixel(), paper);
    print_contract(r.contract, "stages ms/frame");
  }
}

Json to_json(const std::vector<BenchResult>& results) {
  Json rows = Json::array();
  for (const BenchResult& r : results) {
    // Per frame: the backend's own stage times (what scripts/plot-bench.py draws).
    Json frames = Json::array();
    for (const BenchResult::Frame& f : r.per_frame) {
      Json fs = Json::object();
      for (const StageTime& s : f.stages) fs[s.name] = s.ms;
      Json frame = {{"ms", f.ms}, {"stages_ms", fs}, {"atmospheric_light", {f.a[0], f.a[1], f.a[2]}}};
      frame["haze_index"] = f.dehaze.valid ? Json(f.dehaze.haze_index) : Json(nullptr);
      frame["omega"] = f.dehaze.valid ? Json(f.dehaze.omega) : Json(nullptr);
      frames.push_back(std::move(frame));
    }
    Json row = {{"case", r.label},
                    {"backend", r.backend},
                    {"width", r.width},
                    {"height", r.height},
                    {"depth", r.depth},
                    {"frames", r.frames},
                    {"ms_per_frame_median", r.median_ms},
                    {"ms_per_frame_mean", r.mean_ms},
                    {"ms_per_frame_min", r.min_ms},
                    {"fps", r.fps()},
                    {"ms_per_mpixel", r.ms_per_mpixel()}};
    put_contract(row, r.contract);
    row["paper"] = r.paper_value > 0 ? Json{{"value", r.paper_value}, {"unit", r.paper_unit}, {"source", r.paper_source}}
                                     : Json(nullptr);
    row["per_frame"] = frames;
    rows.push_back(std::move(row));
  }
  return rows;
}

// The backends a bench row runs on: "all" = CPU sequential, CPU OpenMP, and CUDA when present.
std::vector<ProcessingConfig> backend_variants(const ProcessingConfig& base, const std::string& backend,
                                               int threads) {
  std::vector<ProcessingConfig> out;
  auto cpu = [&](int t) {
    ProcessingConfig c = base;
    c.backend = Backend::cpu;
    c.threads = t;
    out.push_back(c);
  };
  const bool all = backend == "all";
  if (all) {
    cpu(1);
    if (omp_get_max_threads() > 1) cpu(threads);
  } else if (backend == "cpu") {
    cpu(threads);
  }
  if (all || backend == "cuda" || backend == "auto") {
    std::string why;
    if (cuda_available(&why)) {
      ProcessingConfig c = base;
      c.backend = Backend::cuda;
      out.push_back(c);
    } else if (backend == "cuda") {
      throw std::runtime_error("--backend cuda: " + why);
    } else if (backend == "auto") {
      cpu(threads);
    }
  }
  return out;
}

// Host memory -> backend -> host memory for raw frames, in pinned buffers: once one frame at a
// time (lane 0, synchronous copies) and once overlapped over the backend's lanes (frame n+1's
// upload and n-1's download during frame n's kernels), in the same run.
struct PipelineResult {
  std::string backend;
  int width = 0, height = 0, frames = 0, lanes = 0;
  int depth = 8;
  double serial_fps = 0, overlapped_fps = 0;
  double stage_sum_ms = 0;        // mean per frame of the stage times (serial run)
  double overlap_efficiency = 0;  // stage_sum / overlapped wall time per frame
  bool identical = false;         // overlapped output == serial output
  std::vector<StageTime> stages;
  std::size_t pinned_bytes = 0;
  Contract contract;              // peak_device_bytes: all the backend's lanes
};

// `decode_ms` as in run_case.
PipelineResult run_raw_pipeline(const ProcessingConfig& config, const std::vector<Image>& source,
                                int measured, int warmup, HostPeak& host_peak, std::optional<double> decode_ms) {
  host_peak.restart();
  const DeviceMemory device(config.backend == Backend::cuda);
  std::unique_ptr<FrameProcessor> processor = create_processor(config, false);
  const ImageView& first = source[0].view();
  const int lanes = std::max(1, processor->lanes());
  const std::size_t count = source.size();
  FramePool inputs(count, first.format, first.width, first.height, BufferAllocator::pinned_or_heap(), first.depth);
  FramePool outputs(count, first.format, first.width, first.height, BufferAllocator::pinned_or_heap(), first.depth);
  std::vector<PooledFrame*> in(count), out(count);
  for (std::size_t i = 0; i < count; ++i) {
    in[i] = inputs.acquire();
    out[i] = outputs.acquire();
    copy_image(source[i].view(), in[i]->view);
  }
  PipelineResult r;
  r.backend = processor->description();
  r.width = first.width;
  r.height = first.height;
  r.depth = first.depth;
  r.frames = measured;
  r.lanes = processor->lanes();
  r.pinned_bytes = inputs.bytes() + outputs.bytes();

  // Serial: one frame at a time.
  processor->reset();
  StageMeans stages;
  const int total = warmup + measured;
  auto t0 = Clock::now();
  for (int i = 0; i < total; ++i) {
    if (i == warmup) t0 = Clock::now();
    processor->process(in[i % count]->view, out[i % count]->view);
    if (i < warmup) continue;
    stages.add(processor->stage_times());
  }
  const double serial_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.serial_fps = measured / serial_s;
  r.stages = stages.means(measured);
  for (const StageTime& st : r.stages) r.stage_sum_ms += st.ms;
  Contract& k = r.contract;
  k.decode = decode_ms;  // in its own pass before the runs (null on generated frames); no encode
  k.take_stages(r.stages);
  if (r.stage_sum_ms == 0) {
    // The backend times no stages in this mode (the CPU backend's HE and AHE): one frame at a
    // time, the whole process() call is the one stage, and its serial wall time the stage sum.
    r.stage_sum_ms = serial_s * 1000.0 / measured;
    k.kernels.push_back({"process", r.stage_sum_ms});
  }
  std::vector<std::string> serial_bytes;
  for (std::size_t i = 0; i < count; ++i) {
    const PlaneView& y = out[i]->view.planes[0];
    serial_bytes.emplace_back(reinterpret_cast<const char*>(y.data), static_cast<std::size_t>(y.stride) * y.height);
  }

  // Overlapped: frame i on lane i % lanes; a lane is waited for just before its next frame. The
  // outputs rotate over `count` buffers, so a buffer is reused only after its lane completed.
  processor->reset();
  for (int i = 0; i < total; ++i) {
    if (i == warmup) t0 = Clock::now();
    const int lane = i % lanes;
    if (i >= lanes) processor->wait(lane);
    processor->enqueue(lane, in[i % count]->view, out[i % count]->view);
  }
  for (int i = std::max(0, total - lanes); i < total; ++i) processor->wait(i % lanes);
  const double overlapped_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.overlapped_fps = measured / overlapped_s;
  // The stages of one frame at a time (decode, in its own pass, left out) over the overlapped wall
  // time per frame: above 1 where the lanes overlap copies and kernels.
  r.overlap_efficiency = r.stage_sum_ms / (overlapped_s * 1000.0 / measured);
  k.overlap_efficiency = r.overlap_efficiency;
  k.peak_host_bytes = host_peak.read();
  k.peak_device_bytes = device.added();
  // The same frames in the same order from the same state (reset): the last outputs of both
  // runs must be identical (the temporal state, e.g. A, carried correctly across lanes).
  r.identical = true;
  for (std::size_t i = 0; i < count; ++i) {
    const PlaneView& y = out[i]->view.planes[0];
    r.identical &= serial_bytes[i] == std::string(reinterpret_cast<const char*>(y.data),
                                                  static_cast<std::size_t>(y.stride) * y.height);
  }
  for (std::size_t i = 0; i < count; ++i) {
    inputs.release(in[i]);
    outputs.release(out[i]);
  }
  return r;
}

void print_pipeline(const std::vector<PipelineResult>& results) {
  fmt::print("\nraw-frame pipeline (host -> backend -> host, pinned buffers)\n");
  fmt::print("{:<28} {:>11} {:>6} {:>12} {:>14} {:>12} {:>11} {:>10} {:>10} {:>10}  {}\n", "backend", "size",
             "lanes", "serial fps", "overlapped fps", "stages ms", "overlap eff", "device MB", "pinned MB",
             "host MB", "same output");
  auto mb = [](const std::optional<std::uint64_t>& bytes) {
    return bytes ? fmt::format("{:.1f}", *bytes / 1048576.0) : std::string("-");
  };
  for (const PipelineResult& r : results) {
    fmt::print("{:<28} {:>11} {:>6} {:>12.1f} {:>14.1f} {:>12.3f} {:>11.2f} {:>10} {:>10.1f} {:>10}  {}\n",
               r.backend, fmt::format("{}x{}", r.width, r.height), r.lanes, r.serial_fps, r.overlapped_fps,
               r.stage_sum_ms, r.overlap_efficiency, mb(r.contract.peak_device_bytes), r.pinned_bytes / 1048576.0,
               mb(r.contract.peak_host_bytes), r.identical ? "yes" : "NO");
    print_contract(r.contract, "stages (serial, ms/frame)");
  }
}

Json pipeline_json(const std::vector<PipelineResult>& results, const std::string& label) {
  Json rows = Json::array();
  for (const PipelineResult& r : results) {
    // fps: the overlapped run's, the pipeline's throughput.
    Json row = {{"case", label},           {"backend", r.backend},
                {"width", r.width},         {"height", r.height},
                {"depth", r.depth},
                {"frames", r.frames},       {"fps", r.overlapped_fps},
                {"lanes", r.lanes},         {"serial_fps", r.serial_fps},
                {"overlapped_fps", r.overlapped_fps}, {"stage_sum_ms", r.stage_sum_ms},
                {"same_output", r.identical}, {"pinned_bytes", r.pinned_bytes}};
    put_contract(row, r.contract);
    rows.push_back(std::move(row));
  }
  return rows;
}

// The whole run on a file with the encoded stream thrown away (the null muxer), so that decode,
// the backend and the encoder are all measured, as `hazefree in out` would run them.
// `o`: the preset (`preset_values`), the key flags and --set applied.
int bench_end_to_end(RunOptions o, const PresetValues& preset_values, const std::string& input,
                     const std::string& encoder, const std::string& preset, const std::string& hwdec,
                     const std::string& json_path) {
  o.input = input;
  o.output = "/dev/null";
  o.quiet = true;
  finalize_options(o, preset_values);
  // As the program's run does it; and the processor is made before the run here (below), so
  // NVDEC's context must come first: FFmpeg sets its flags only on a context not yet started.
  prepare_gpu_for_run(o);
  // "auto" resolved as in the other modes (the GPU when one is usable), so that the device memory
  // is read exactly when the backend is CUDA.
  if (o.processing.backend == Backend::automatic)
    o.processing.backend = cuda_available() ? Backend::cuda : Backend::cpu;
  int width = 0, height = 0, frame_depth = 8;
  {
    io::InputOptions probe = o.input_options;
    probe.hwdec.clear();
    io::MediaReader reader(probe);
    width = reader.video().width;
    height = reader.video().height;
    frame_depth = reader.video().depth;
  }
  HostPeak host_peak;
  host_peak.restart();
  // The processor is created here rather than by the run, so that it is still alive when the
  // device memory is read after the run (NVDEC's pictures, freed with the run, are not counted).
  const DeviceMemory device(o.processing.backend == Backend::cuda);
  const std::unique_ptr<FrameProcessor> processor = create_processor(o.processing, false);
  const RunSummary r = run_pipeline(o, borrow_processor(*processor));
  const double fps = r.seconds > 0 ? r.frames_out / r.seconds : 0.0;
  const double wall_ms = r.frames_out > 0 ? r.seconds * 1000.0 / r.frames_out : 0.0;
  Contract k;
  // Busy time per frame of each thread's stage. The pipeline times the backend as one stage per
  // frame (enqueue to wait on the CUDA lanes, whose copies overlap other frames' kernels), so
  // upload and download are inside "process" and not measured apart (null), as on the CPU backend
  // where they do not exist.
  k.decode = r.decode_ms;
  k.kernels.push_back({"process", r.process_ms});
  k.encode = r.encode_ms;
  // Decode, process and encode run on their own threads at once: above 1 where they overlap.
  if (wall_ms > 0) k.overlap_efficiency = (r.decode_ms + r.process_ms + r.encode_ms) / wall_ms;
  k.peak_host_bytes = host_peak.read();
  k.peak_device_bytes = device.added();
  fmt::print("end to end: {} frames of {} ({}x{}, {} on {}, {} {}, decode {}) in {:.2f} s: {:.1f} fps\n", r.frames_out,
             input, width, height, to_string(o.processing.mode), r.processor, encoder, preset,
             hwdec.empty() ? "cpu" : hwdec, r.seconds, fps);
  fmt::print("busy ms/frame: decode {:.3f}  process {:.3f}  encode {:.3f}  (wall {:.3f}; overlap efficiency {})\n",
             r.decode_ms, r.process_ms, r.encode_ms, wall_ms,
             k.overlap_efficiency ? fmt::format("{:.2f}", *k.overlap_efficiency) : std::string("-"));
  fmt::print("peak host {}, device added {}\n", megabytes(k.peak_host_bytes), megabytes(k.peak_device_bytes));
  if (!json_path.empty()) {
    Json row = {{"case", describe(o.processing)},
                {"backend", r.processor},
                {"width", width},
                {"height", height},
                {"depth", frame_depth},
                {"frames", r.frames_out},
                {"seconds", r.seconds},
                {"fps", fps},
                {"encoder", encoder},
                {"preset", preset},
                {"hwdec", hwdec.empty() ? Json(nullptr) : Json(hwdec)}};
    put_contract(row, k);
    Json doc = document("hazefree bench --end-to-end", host_peak);
    doc["input"] = input;
    doc["results"] = Json::array({row});
    write_json(json_path, doc);
  }
  return 0;
}

}  // namespace

int bench_main(int argc, char** argv) {
  CLI::App app{"hazefree bench: fps and per-stage timings, warm-up excluded (table on stdout, JSON with --json)",
               "hazefree bench"};
  std::string input, size = "1920x1080", backend, json_path, config_file;
  std::string plot_path;
  int frames = 20, warmup = 3, depth = 0;
  bool seed_tables = false, ahe_windows = false, raw_pipeline = false, end_to_end = false;
  std::string encoder = "libx264", preset = "veryfast", hwdec;
  std::vector<std::string> sets;
  // Each value named in --help by what it takes, as the main command's (a validator's
  // description would be appended to the name: "N:[1, 100000]"; the bounds are said in the
  // description instead).
  app.add_option("--input", input, "decode this file's frames first (decode is then excluded from the timings)")
      ->type_name("FILE");
  app.add_option("--size", size, "generated frames of this size (default 1920x1080)")->type_name("WxH");
  app.add_option("--depth", depth,
                 "bits per sample of the frames (default: 8 for generated frames, the input's own with --input, "
                 "converted to this depth otherwise)")
      ->type_name("8|10|12|16")
      ->check(CLI::IsMember({8, 10, 12, 16}).description(""));
  app.add_option("--frames", frames, "measured frames per case: [1, 100000] (default 20)")
      ->type_name("N")
      ->check(bounds_check(Bounds::closed(1, 100000)).description(""));
  app.add_option("--warmup", warmup, "warm-up frames, not measured: [0, 1000] (default 3)")
      ->type_name("N")
      ->check(bounds_check(Bounds::closed(0, 1000)).description(""));
  // The processing keys' shortcuts of the main command (-m, --color, --window, --clip, --threads),
  // from the options table; they combine with -c and --set as there. -b is the benchmark's own.
  const KeyFlags key_flags(app, [](const ConfigKey& k) { return !k.modes.empty() && k.name != "backend"; });
  app.add_option("-b,--backend", backend,
                 "where the cases run (default: the configuration's backend when it names one, else all: CPU "
                 "sequential, CPU OpenMP, CUDA)")
      ->type_name("all|cpu|cuda|auto");
  app.add_option("-c,--config", config_file, "TOML preset for the algorithm parameters")->type_name("FILE");
  app.add_option("--set", sets, "override one configuration key: key=value")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  app.add_option("--json", json_path, "also write the results as JSON to this file")->type_name("FILE");
  app.add_option("--plot", plot_path,
                 "also draw the per-frame stage times and the atmospheric light over time into this PNG "
                 "(scripts/plot-bench.py, python3 with matplotlib)")
      ->type_name("FILE");
  app.add_flag("--end-to-end", end_to_end,
               "with --input: the whole run (decode thread, backend lanes, encoder thread; the encoded "
               "stream discarded), fps and each stage's busy ms/frame");
  app.add_option("--encoder", encoder, "encoder of --end-to-end (default libx264)")->type_name("ENCODER");
  app.add_option("--preset", preset, "libx264 preset of --end-to-end (default veryfast)")->type_name("WORD");
  app.add_option("--hwdec", hwdec, "decoder of --end-to-end: cuda = NVDEC")->type_name("cuda");
  app.add_flag("--pipeline", raw_pipeline,
               "raw frames host -> backend -> host: one frame at a time versus overlapped lanes, in one run");
  app.add_flag("--ahe-windows", ahe_windows, "AHE at windows 31, 63, 127, 255, 511 (the Panconi sweep)");
  app.add_flag("--seed-tables", seed_tables,
               "reproduce the seed papers' tables: DCP (Wu), AHE windows (Panconi), HE sizes (Bugetti)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // one line, as the command's other usage errors
    fmt::print(stderr, "hazefree bench: {}\n", usage_error_of(e, app).what());
    return 2;
  }

  io::set_ffmpeg_log_level(io::LogLevel::normal);
  try {
    // As in the main command: defaults < preset < flags given < --set.
    RunOptions options;
    PresetValues preset_values;
    if (!config_file.empty()) preset_values = apply_config_file(options, config_file);
    key_flags.apply(options);
    if (end_to_end) {
      if (input.empty()) throw UsageError("--end-to-end needs --input FILE");
      if (!backend.empty()) set_config_value(options, "backend", backend == "all" ? "auto" : backend);
      set_config_value(options, "output.encoder", encoder);
      set_config_value(options, "output.preset", preset);
      set_config_value(options, "output.format", "null");
      if (!hwdec.empty()) set_config_value(options, "input.hwdec", hwdec);
      if (depth > 0) set_config_value(options, "output.depth", std::to_string(depth));
      for (const std::string& s : sets) apply_set_argument(options, s);
      return bench_end_to_end(options, preset_values, input, encoder, preset, hwdec, json_path);
    }
    for (const std::string& s : sets) apply_set_argument(options, s);
    finalize_options(options, preset_values);
    const ProcessingConfig base = options.processing;
    if (backend.empty()) backend = base.backend == Backend::automatic ? "all" : to_string(base.backend);
    const int threads = base.threads;

    HostPeak host_peak;
    // The source frames.
    std::vector<Image> source;
    int width = 0, height = 0;
    PixelFormat format = PixelFormat::yuv420p;
    const int frame_depth = depth > 0 ? depth : 8;  // of generated frames
    std::optional<double> decode_ms;  // demux + decode + copy into memory, per frame (--input)
    if (!input.empty()) {
      io::InputOptions in;
      in.url = input;
      in.depth = depth;
      io::MediaReader reader(in);
      const auto t0 = Clock::now();
      while (static_cast<int>(source.size()) < std::max(1, std::min(frames + warmup, 64))) {
        const auto item = reader.read();
        if (item == io::MediaReader::Item::end) break;
        if (item != io::MediaReader::Item::video_frame) continue;
        const ImageView& v = reader.frame().view;
        Image copy(v.format, v.width, v.height, 64, v.depth);
        copy_image(v, copy.view());
        source.push_back(std::move(copy));
      }
      if (source.empty()) throw std::runtime_error(input + ": no video frames");
      decode_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / source.size();
      width = source[0].view().width;
      height = source[0].view().height;
      format = source[0].view().format;
    } else {
      if (std::sscanf(size.c_str(), "%dx%d", &width, &height) != 2 || width <= 0 || height <= 0 ||
          width > 16384 || height > 16384)
        throw UsageError(fmt::format("--size {}: expected WxH with sides in [1, 16384]", size));
    }

    std::vector<BenchCase> cases;
    if (seed_tables) {
      cases = seed_table_cases(base);
    } else if (ahe_windows) {
      for (int w : {31, 63, 127, 255, 511}) {
        BenchCase c;
        c.config = base;
        c.config.mode = Mode::ahe;
        c.config.ahe.window = w;
        c.label = describe(c.config);
        c.width = width;
        c.height = height;
        cases.push_back(c);
      }
    } else {
      BenchCase c;
      c.config = base;
      c.label = describe(base);
      c.width = width;
      c.height = height;
      cases.push_back(c);
    }

    if (raw_pipeline) {
      if (source.empty())
        for (int s = 0; s < 4; ++s) source.push_back(generate_frame(format, width, height, s, frame_depth));
      std::vector<PipelineResult> rows;
      for (const ProcessingConfig& variant : backend_variants(base, backend, threads)) {
        if (variant.backend == Backend::cpu && variant.threads == 1) continue;  // lanes need a GPU
        rows.push_back(run_raw_pipeline(variant, source, frames, warmup, host_peak, decode_ms));
      }
      if (decode_ms) fmt::print("decode: {:.3f} ms/frame ({}, {} frames)\n", *decode_ms, input, source.size());
      print_pipeline(rows);
      if (!json_path.empty()) {
        Json doc = document("hazefree bench --pipeline", host_peak);
        if (!input.empty()) doc["input"] = input;
        doc["results"] = pipeline_json(rows, describe(base));
        write_json(json_path, doc);
      }
      return 0;
    }

    std::vector<BenchResult> results;
    std::map<std::pair<int, int>, std::vector<Image>> generated;
    for (const BenchCase& c : cases) {
      const std::vector<Image>* frames_in = &source;
      if (source.empty()) {
        auto& g = generated[{c.width, c.height}];
        if (g.empty())
          for (int s = 0; s < 4; ++s) g.push_back(generate_frame(format, c.width, c.height, s, frame_depth));
        frames_in = &g;
      }
      for (const ProcessingConfig& variant : backend_variants(c.config, backend, threads)) {
        BenchCase v = c;
        v.config = variant;
        // Sequential CPU runs of the large seed-table cases take seconds per frame: fewer frames.
        const double mpix = double(c.width) * c.height / 1e6;
        int measured = frames;
        if (variant.backend == Backend::cpu && mpix * frames > 40) measured = std::max(2, int(40 / mpix));
        results.push_back(
            run_case(v, *frames_in, measured, variant.backend == Backend::cpu ? 1 : warmup, host_peak, decode_ms));
        fmt::print(stderr, "bench: {} on {} done\n", results.back().label, results.back().backend);
      }
    }
    if (decode_ms) fmt::print("decode: {:.3f} ms/frame ({}, {} frames)\n", *decode_ms, input, source.size());
    print_table(results);
    if (!plot_path.empty() && json_path.empty()) json_path = plot_path + ".json";
    if (!json_path.empty()) {
      Json doc = document(seed_tables ? "hazefree bench --seed-tables" : "hazefree bench", host_peak);
      if (!input.empty()) doc["input"] = input;
      if (decode_ms) doc["decode_ms_per_frame"] = *decode_ms;
      doc["results"] = to_json(results);
      write_json(json_path, doc);
    }
    if (!plot_path.empty()) plot_results(json_path, plot_path);
    return 0;
  } catch (const UsageError& e) {
    fmt::print(stderr, "hazefree bench: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hazefree bench: {}\n", e.what());
    return 1;
  }
}

}  // namespace hazefree
