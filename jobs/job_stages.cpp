#include "jobs/job_stages.hpp"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include "io/chunk_join.hpp"
#include "io/media_reader.hpp"
#include "jobs/job_files.hpp"
#include "jobs/job_progress.hpp"
#include "kernels/temporal_state.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/processor_factory.hpp"

namespace hazefree::jobs {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// ---- DIR/analysis/task-K.bin: the per-frame estimates of one chunk --------------------------
// "HZFANAL2", the plan id (16 characters), the frame count (int64), then per frame: A^ (3
// floats), a mask of the histograms that follow (bits 0-2: channels, bit 3: BITS of 4096), and
// those histograms (uint32 counts), each channel's preceded by its bin count (uint32: 2^d at
// depth d, 256 for 8-bit frames). Native byte order: the job's hosts share one.
constexpr char kAnalysisMagic[8] = {'H', 'Z', 'F', 'A', 'N', 'A', 'L', '3'};
constexpr std::uint32_t kMostChannelBins = 1u << 16;  // 16-bit frames

void append_bytes(std::string& out, const void* data, std::size_t size) {
  out.append(static_cast<const char*>(data), size);
}

std::string encode_analysis(const std::string& plan_id, const std::vector<FrameEstimate>& estimates) {
  std::string out;
  append_bytes(out, kAnalysisMagic, sizeof kAnalysisMagic);
  out.append(plan_id.substr(0, 16));
  out.append(16 - std::min<std::size_t>(16, plan_id.size()), ' ');
  const auto count = static_cast<std::int64_t>(estimates.size());
  append_bytes(out, &count, sizeof count);
  for (const FrameEstimate& e : estimates) {
    append_bytes(out, e.light.data(), sizeof(float) * 3);
    append_bytes(out, &e.haze, sizeof(float));
    std::uint8_t mask = 0;
    for (int c = 0; c < 3; ++c)
      if (!e.channel_histograms[c].empty()) mask |= static_cast<std::uint8_t>(1u << c);
    if (!e.bits_histogram.empty()) mask |= 8u;
    append_bytes(out, &mask, 1);
    for (int c = 0; c < 3; ++c) {
      if (e.channel_histograms[c].empty()) continue;
      const auto bins = static_cast<std::uint32_t>(e.channel_histograms[c].size());
      append_bytes(out, &bins, sizeof bins);
      append_bytes(out, e.channel_histograms[c].data(), bins * sizeof(std::uint32_t));
    }
    if (!e.bits_histogram.empty()) append_bytes(out, e.bits_histogram.data(), 4096 * sizeof(std::uint32_t));
  }
  return out;
}

}  // namespace

std::vector<FrameEstimate> load_analysis(const std::string& dir, const Plan& plan, int task) {
  const std::string path = analysis_path(dir, task);
  const std::optional<TaskState> state = read_task_state(dir, Stage::analyze, task);
  const std::string rerun = fmt::format("run `hazefree job analyze {} --chunk {}`", dir, task);
  if (!done_for_plan(state, plan.id)) {
    const std::string what = !state ? "missing" : state->plan != plan.id ? "stale (made for another plan)" : to_string(state->state);
    throw JobError(fmt::format("{}: the analysis of task {} ({}) is {}: {}", dir, task, describe_task(plan, task), what, rerun));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw JobError(fmt::format("{}: missing: {}", path, rerun));
  auto read = [&](void* data, std::size_t size) {
    if (!file.read(static_cast<char*>(data), static_cast<std::streamsize>(size)))
      throw JobError(fmt::format("{}: truncated: {}", path, rerun));
  };
  char magic[8];
  read(magic, sizeof magic);
  char id[16];
  read(id, sizeof id);
  if (std::memcmp(magic, kAnalysisMagic, sizeof magic) != 0)
    throw JobError(fmt::format("{}: not an analysis file of this version: {}", path, rerun));
  if (std::string(id, 16) != plan.id.substr(0, 16)) throw JobError(fmt::format("{}: stale (made for another plan): {}", path, rerun));
  std::int64_t count = 0;
  read(&count, sizeof count);
  const ChunkPlan& chunk = plan.tasks[static_cast<std::size_t>(task)];
  if (count != chunk.frames)
    throw JobError(fmt::format("{}: {} frames where the chunk has {}: {}", path, count, chunk.frames, rerun));
  std::vector<FrameEstimate> estimates(static_cast<std::size_t>(count));
  for (FrameEstimate& e : estimates) {
    read(e.light.data(), sizeof(float) * 3);
    read(&e.haze, sizeof(float));
    std::uint8_t mask = 0;
    read(&mask, 1);
    for (int c = 0; c < 3; ++c) {
      if (!(mask & (1u << c))) continue;
      std::uint32_t bins = 0;
      read(&bins, sizeof bins);
      if (bins == 0 || bins > kMostChannelBins) throw JobError(fmt::format("{}: damaged ({} bins): {}", path, bins, rerun));
      e.channel_histograms[c].resize(bins);
      read(e.channel_histograms[c].data(), bins * sizeof(std::uint32_t));
    }
    if (mask & 8u) {
      e.bits_histogram.resize(4096);
      read(e.bits_histogram.data(), 4096 * sizeof(std::uint32_t));
    }
  }
  return estimates;
}

void save_analysis(const std::string& dir, const Plan& plan, int task, const std::vector<FrameEstimate>& estimates) {
  const ChunkPlan& chunk = plan.tasks[static_cast<std::size_t>(task)];
  const InputPlan& in = plan.inputs[static_cast<std::size_t>(chunk.input)];
  if (!estimates.empty() && static_cast<std::int64_t>(estimates.size()) != chunk.frames)
    throw JobError(fmt::format("{}: task {} ({}) decoded {} frames where the plan counted {}", in.input, task,
                               describe_task(plan, task), estimates.size(), chunk.frames));
  write_file_atomically(analysis_path(dir, task), encode_analysis(plan.id, estimates));
}

namespace {

// "2026-11-28 14:03:07 UTC" for a modification_time() (seconds of the file system's clock,
// whose epoch is not the system clock's).
std::string utc_text(std::int64_t file_seconds) {
  const auto since_now = fs::file_time_type(std::chrono::seconds(file_seconds)) - fs::file_time_type::clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(
      std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(since_now));
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

// The reader options of one chunk: the run's input options, the chunk's range.
io::InputOptions chunk_input(const RunOptions& settings, const InputPlan& in, const ChunkPlan& chunk) {
  io::InputOptions input = settings.input_options;
  input.url = in.input;
  input.chunk.active = true;
  input.chunk.seek = !chunk.from_start;
  input.chunk.seek_dts = chunk.seek_dts;
  if (!chunk.from_start) input.chunk.first_pts = chunk.first_pts;
  if (!chunk.to_end) input.chunk.end_pts = chunk.end_pts;
  return input;
}

}  // namespace

void check_input_unchanged(const std::string& dir, const InputPlan& in) {
  std::error_code error;
  const auto bytes = static_cast<std::int64_t>(fs::file_size(in.input, error));
  if (error) throw JobError(fmt::format("{}: cannot read it ({})", in.input, error.message()));
  const std::int64_t modified = modification_time(in.input);
  if (bytes == in.bytes && modified == in.modified) return;
  const std::string what = bytes != in.bytes ? fmt::format("{} bytes, planned {}", bytes, in.bytes)
                                             : fmt::format("modified {}, planned at {}", utc_text(modified), utc_text(in.modified));
  throw JobError(fmt::format("{}: changed since the job was planned in {} ({}): plan the job again", in.input, dir, what));
}

namespace {

// Runs `body` as task `index` of `stage`: state running -> done / failed, its log in DIR.
template <typename Body>
void as_task(const std::string& dir, const Plan& plan, Stage stage, int index, const StageOptions& options, Body body) {
  TaskRun run(dir, stage, index, plan.id, options.quiet);
  try {
    const std::int64_t frames = body(run);
    run.done(frames);
  } catch (const std::exception& e) {
    if (stop_requested() || dynamic_cast<const JobInterrupted*>(&e)) run.interrupted(e.what());
    else run.failed(e.what());
    throw;
  }
}

}  // namespace

std::vector<FrameEstimate> estimate_chunk(const std::string& dir, const Plan& plan, int task, FrameProcessor& estimator,
                                          const std::atomic<bool>* stop) {
  const ChunkPlan& chunk = plan.tasks[static_cast<std::size_t>(task)];
  const InputPlan& in = plan.inputs[static_cast<std::size_t>(chunk.input)];
  check_input_unchanged(dir, in);
  io::InputOptions input = chunk_input(plan_settings(plan), in, chunk);
  // Decoded on the CPU even where the run decodes with NVDEC: one frame at a time through
  // NVDEC and back measured slower (2026-11-22, H200: 3 chunks of 750 1080p frames in 7.9 s
  // against 3.0 s with the CPU's frame-threaded decoder).
  input.hwdec.clear();
  io::MediaReader reader(input);
  std::vector<FrameEstimate> estimates;
  estimates.reserve(static_cast<std::size_t>(chunk.frames));
  for (;;) {
    if (stop_requested() || (stop && stop->load())) throw JobError(fmt::format("{}: analyze {} interrupted", dir, task));
    const io::MediaReader::Item item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item != io::MediaReader::Item::video_frame) continue;
    estimates.push_back(estimator.estimate(reader.frame().view));
  }
  if (static_cast<std::int64_t>(estimates.size()) != chunk.frames)
    throw JobError(fmt::format("{}: task {} ({}) decoded {} frames where the plan counted {}", in.input, task,
                               describe_task(plan, task), estimates.size(), chunk.frames));
  return estimates;
}

std::unique_ptr<FrameProcessor> make_estimator(const ProcessingConfig& processing, bool verbose) {
  // HE's histograms are integers, the same on both backends: the CPU computes them. DCP's A^
  // comes from the backend that renders.
  return processing.mode == Mode::dcp ? create_processor(processing, verbose) : make_cpu_processor(processing);
}

void analyze_task(const std::string& dir, int task, const StageOptions& options) {
  const Plan plan = load_plan(dir);
  const ChunkPlan& chunk = plan.tasks[static_cast<std::size_t>(task)];
  as_task(dir, plan, Stage::analyze, task, options, [&](TaskRun& run) -> std::int64_t {
    if (!plan.analysis || chunk.to_end) {
      // Nothing later depends on it: an empty analysis marks the task done.
      run.line(fmt::format("analyze {}: {} ({})", task, describe_task(plan, task),
                           plan.analysis ? "an input's last chunk: nothing depends on it" : "the mode carries no state"));
      save_analysis(dir, plan, task, {});
      return 0;
    }
    const RunOptions settings = plan_settings(plan);
    const std::unique_ptr<FrameProcessor> processor = make_estimator(settings.processing, options.verbose);
    run.line(fmt::format("analyze {}: {} on {}", task, describe_task(plan, task), processor->description()));
    run.set_decoded("cpu");
    const std::vector<FrameEstimate> estimates = estimate_chunk(dir, plan, task, *processor, nullptr);
    save_analysis(dir, plan, task, estimates);
    return static_cast<std::int64_t>(estimates.size());
  });
}

TemporalState start_state_from_files(const std::string& dir, const Plan& plan, int task) {
  const ChunkPlan& chunk = plan.tasks[static_cast<std::size_t>(task)];
  const InputPlan& in = plan.inputs[static_cast<std::size_t>(chunk.input)];
  const RunOptions settings = plan_settings(plan);
  TemporalState state;
  if (!plan.analysis) return state;
  for (const int earlier : in.chunks) {
    if (plan.tasks[static_cast<std::size_t>(earlier)].number >= chunk.number) break;
    for (const FrameEstimate& e : load_analysis(dir, plan, earlier)) advance_temporal_state(settings.processing, e, state);
  }
  return state;
}

RunOptions chunk_render_options(const std::string& dir, const Plan& plan, int task, bool verbose) {
  const ChunkPlan& chunk = plan.tasks[static_cast<std::size_t>(task)];
  const InputPlan& in = plan.inputs[static_cast<std::size_t>(chunk.input)];
  check_input_unchanged(dir, in);
  std::error_code error;
  fs::create_directories(fs::path(chunk_path(dir, task)).parent_path(), error);
  RunOptions chunk_run = plan_settings(plan);
  chunk_run.input = in.input;
  chunk_run.output = chunk_path(dir, task);
  chunk_run.output_options.format = "mov";
  chunk_run.output_options.overwrite = true;  // a task run again replaces its chunk
  chunk_run.quiet = true;
  chunk_run.verbose = verbose;
  // --stats: each chunk's lines beside its file; the join puts them together in order.
  if (!chunk_run.stats_path.empty()) chunk_run.stats_path = chunk_stats_path(dir, task);
  // After -ss the join starts the output at the span's first picture, as the single run does:
  // the lines' times count from there.
  if (chunk_run.trim_start > 0)
    chunk_run.hooks.output_zero_pts = plan.tasks[static_cast<std::size_t>(in.chunks.front())].first_pts;
  finalize_options(chunk_run);
  chunk_run.input_options = chunk_input(chunk_run, in, chunk);
  return chunk_run;
}

void check_chunk_rendered(const std::string& dir, const Plan& plan, int task, const RunSummary& summary) {
  const ChunkPlan& chunk = plan.tasks[static_cast<std::size_t>(task)];
  const InputPlan& in = plan.inputs[static_cast<std::size_t>(chunk.input)];
  if (summary.interrupted) {
    std::error_code ignored;
    fs::remove(chunk_path(dir, task), ignored);
    throw JobError(fmt::format("{}: render {} interrupted", dir, task));
  }
  if (summary.frames_out != chunk.frames) {
    std::error_code ignored;
    fs::remove(chunk_path(dir, task), ignored);
    throw JobError(fmt::format("{}: task {} ({}) gave {} frames where the plan counted {}", in.input, task,
                               describe_task(plan, task), summary.frames_out, chunk.frames));
  }
}

void render_task(const std::string& dir, int task, const StageOptions& options) {
  const Plan plan = load_plan(dir);
  as_task(dir, plan, Stage::render, task, options, [&](TaskRun& run) -> std::int64_t {
    RunOptions chunk_run = chunk_render_options(dir, plan, task, options.verbose);
    // The state at the chunk's first frame: every earlier frame's estimate, in order, through
    // the update the single run applies frame by frame.
    if (plan.analysis) chunk_run.hooks.start_state = start_state_from_files(dir, plan, task);
    run.line(fmt::format("render {}: {}", task, describe_task(plan, task)));
    run.set_decoded(chunk_run.input_options.hwdec.empty() ? "cpu" : "nvdec");
    chunk_run.hooks.on_frame_written = [&run](const FrameWritten& written) { run.progress(written.frames); };
    const RunSummary summary = run_pipeline(chunk_run);
    check_chunk_rendered(dir, plan, task, summary);
    run.line(fmt::format("render {}: {:.1f} fps on {}", task, summary.seconds > 0 ? summary.frames_out / summary.seconds : 0.0,
                         summary.processor));
    return summary.frames_out;
  });
}

namespace {

bool process_alive(const TaskState& s) {
  if (s.host != host_name() || s.pid <= 0) return true;  // another host: trust it
  return ::kill(static_cast<pid_t>(s.pid), 0) == 0 || errno == EPERM;
}

// Why task `task` cannot be joined yet, or empty.
std::string chunk_problem(const std::string& dir, const Plan& plan, int task) {
  const std::optional<TaskState> state = read_task_state(dir, Stage::render, task);
  const std::string what = fmt::format("task {} ({})", task, describe_task(plan, task));
  const std::string rerun = fmt::format("hazefree job render {} --chunk {}", dir, task);
  std::error_code error;
  if (!state) return fmt::format("{} is missing: render it ({})", what, rerun);
  if (state->plan != plan.id) return fmt::format("{} is stale (rendered for another plan): render it again ({})", what, rerun);
  if (state->state == TaskStatus::failed) return fmt::format("{} failed ({}): render it again ({})", what, state->error, rerun);
  if (state->state == TaskStatus::interrupted)
    return fmt::format("{} was interrupted (stopped before its end): render it again ({})", what, rerun);
  if (state->state == TaskStatus::running && !process_alive(*state))
    return fmt::format("{} was interrupted ({} pid {} is gone): render it again ({})", what, state->host, state->pid, rerun);
  if (state->state == TaskStatus::running)
    return fmt::format("{} is still running ({} pid {})", what, state->host, state->pid);
  if (state->frames != plan.tasks[static_cast<std::size_t>(task)].frames || !fs::exists(chunk_path(dir, task), error))
    return fmt::format("{} is missing its chunk file: render it again ({})", what, rerun);
  return {};
}

// --stats of a job: the chunks' lines of one input, in order, into the user's file (with several
// inputs, FILE.<input index> for each). A chunk numbers its frames from 0: each line's "frame"
// is moved by the frames of the chunks before it, as the single run numbers them.
void join_stats(const std::string& dir, const Plan& plan, int input, const std::string& stats_path) {
  const InputPlan& in = plan.inputs[static_cast<std::size_t>(input)];
  const std::string path = plan.inputs.size() > 1 ? fmt::format("{}.{}", stats_path, input) : stats_path;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw JobError(fmt::format("{}: cannot write the frame statistics", path));
  static constexpr char kFrame[] = "{\"frame\": ";  // how frame_stats_line() starts
  std::int64_t before = 0;                        // frames of the earlier chunks
  for (const int task : in.chunks) {
    const std::string part_path = chunk_stats_path(dir, task);
    std::ifstream part(part_path, std::ios::binary);
    if (!part) throw JobError(fmt::format("{}: the frame statistics of task {} are missing: run the task again", dir, task));
    const std::int64_t frames = plan.tasks[static_cast<std::size_t>(task)].frames;
    std::int64_t lines = 0;
    for (std::string line; std::getline(part, line); ++lines) {
      std::size_t end = sizeof kFrame - 1;
      while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
      if (line.compare(0, sizeof kFrame - 1, kFrame) != 0 || end == sizeof kFrame - 1)
        throw JobError(fmt::format("{}: line {} is no frame's statistics: run task {} again", part_path, lines + 1, task));
      const std::int64_t frame = std::stoll(line.substr(sizeof kFrame - 1, end - (sizeof kFrame - 1)));
      out << kFrame << before + frame << line.substr(end) << '\n';
    }
    if (lines != frames)
      throw JobError(fmt::format("{}: {} lines for the {} frames of task {}: run the task again", part_path, lines, frames, task));
    before += frames;
  }
  out.flush();
  if (!out) throw JobError(fmt::format("{}: the frame statistics could not be written", path));
}

void join_input(const std::string& dir, const Plan& plan, int input, const StageOptions& options,
                const std::function<void(int task)>& rendered) {
  const InputPlan& in = plan.inputs[static_cast<std::size_t>(input)];
  std::error_code error;
  if (task_done(dir, plan.id, Stage::join, input) && fs::exists(in.output, error)) {
    if (!options.quiet) fmt::print(stderr, "hazefree: {}: already joined for this plan\n", in.output);
    return;
  }
  auto check_chunk = [&](int task) {
    if (const std::string problem = chunk_problem(dir, plan, task); !problem.empty())
      throw JobError(fmt::format("{}: cannot join {}: {}", dir, in.output, problem));
  };
  // Every chunk before anything opens; or, beside the renders, each one once it is rendered.
  if (!rendered)
    for (const int task : in.chunks) check_chunk(task);
  as_task(dir, plan, Stage::join, input, options, [&](TaskRun& run) -> std::int64_t {
    check_input_unchanged(dir, in);
    const RunOptions settings = plan_settings(plan);
    io::OutputOptions output = settings.output_options;
    output.url = in.output;
    output.overwrite = plan.overwrite;
    output.start_at_zero = settings.trim_start > 0;  // as the single run's output after -ss
    std::vector<std::string> chunk_files;
    for (const int task : in.chunks) chunk_files.push_back(chunk_path(dir, task));
    // The source's other streams over the job's span: its start, and the end of its last chunk.
    io::InputOptions source;
    source.url = in.input;
    source.trim = trim_of(settings);
    source.trim.max_frames = 0;
    const ChunkPlan& last = plan.tasks[static_cast<std::size_t>(in.chunks.back())];
    if (!last.to_end) source.trim.end_pts = last.end_pts;
    run.line(fmt::format("join {}: {} chunks -> {}", input, in.chunks.size(), in.output));
    std::function<void(std::size_t)> before_chunk;
    if (rendered)
      before_chunk = [&](std::size_t k) {
        const int task = in.chunks[k];
        rendered(task);
        check_chunk(task);
      };
    const std::int64_t frames = io::join_chunks(chunk_files, source, output, in.frames, before_chunk);
    if (!settings.stats_path.empty()) join_stats(dir, plan, input, settings.stats_path);
    return frames;
  });
}

// "done", "running", "failed", "missing", "stale", "interrupted" for one task of one stage.
std::string state_word(const Plan& plan, const std::optional<TaskState>& s) {
  if (!s) return "missing";
  if (s->plan != plan.id) return "stale";
  if (s->state == TaskStatus::running && !process_alive(*s)) return "interrupted";
  return to_string(s->state);
}

}  // namespace

void join_outputs(const std::string& dir, int input, const StageOptions& options,
                  const std::function<void(int task)>& rendered) {
  const Plan plan = load_plan(dir);
  if (input >= static_cast<int>(plan.inputs.size()))
    throw JobError(fmt::format("{}: input {} is out of range (the job has inputs 0 to {})", dir, input, plan.inputs.size() - 1));
  if (input >= 0) return join_input(dir, plan, input, options, rendered);
  for (int i = 0; i < static_cast<int>(plan.inputs.size()); ++i) join_input(dir, plan, i, options, rendered);
}

std::string job_status(const std::string& dir, bool as_json) {
  const Plan plan = load_plan(dir);
  json j;
  j["dir"] = dir;
  j["plan"] = plan.id;
  j["made_by"] = plan.made_by;
  std::string text = fmt::format("job {} (plan {}, {}, {})\n", dir, plan.id, counted(plan.tasks.size(), "task"),
                                 counted(plan.inputs.size(), "input"));
  text += fmt::format("{:>5}  {:<44} {:>8} {:>8}  {:<12} {:<12} {}\n", "task", "chunk", "frames", "pre-roll", "analyze", "render",
                      "decoded");
  int done = 0;
  JobProgress progress;
  progress.chunks = static_cast<int>(plan.tasks.size());
  for (const InputPlan& in : plan.inputs) progress.frames_total += in.frames;
  for (const ChunkPlan& c : plan.tasks) {
    const std::optional<TaskState> a = read_task_state(dir, Stage::analyze, c.task);
    const std::optional<TaskState> r = read_task_state(dir, Stage::render, c.task);
    const bool needs_analysis = plan.analysis && !c.to_end;
    const std::string analyze = needs_analysis ? state_word(plan, a) : (a ? state_word(plan, a) : "not needed");
    std::string render = state_word(plan, r);
    if (render == "done" && !chunk_problem(dir, plan, c.task).empty()) render = "missing";
    if (render == "done") {
      ++done;
      progress.frames_done += c.frames;
    } else if (render == "running" && process_alive(*r)) {
      ++progress.running;
      progress.frames_done += std::min(r->frames, c.frames);
    } else if (render == "failed") {
      ++progress.failed;
    }
    // Where the chunk's frames were decoded, and how many times: by its render, and by its
    // analysis where that decoded them itself (the two-pass form) rather than with the render.
    std::vector<std::string> decoded_on;
    const bool current_a = done_for_plan(a, plan.id);
    if (current_a && a->decoded != "" && a->decoded != "fused") decoded_on.push_back(a->decoded + " (analysis)");
    if (render == "done" && r && !r->decoded.empty())
      decoded_on.push_back(r->decoded + (current_a && a->decoded == "fused" ? " (render + analysis)" : " (render)"));
    std::string decoded_text = decoded_on.empty() ? "-" : fmt::format("{}x:", decoded_on.size());
    for (const std::string& d : decoded_on) decoded_text += " " + d;
    json t{{"task", c.task}, {"input", c.input}, {"chunk", c.number}, {"first_frame", c.first_frame},
           {"frames", c.frames}, {"preroll", c.preroll}, {"analyze", analyze}, {"render", render},
           {"decodes", decoded_on.size()}, {"decoded_on", decoded_on}};
    for (const auto& [stage, s] : {std::pair{"analyze", a}, std::pair{"render", r}}) {
      if (s && s->state == TaskStatus::failed && s->plan == plan.id) t[std::string(stage) + "_error"] = s->error;
      if (s && s->state == TaskStatus::running && s->plan == plan.id) t[std::string(stage) + "_host"] = fmt::format("{} pid {}", s->host, s->pid);
    }
    t["log"] = log_path(dir, Stage::render, c.task);
    j["tasks"].push_back(t);
    text += fmt::format("{:>5}  {:<44} {:>8} {:>8}  {:<12} {:<12} {}\n", c.task, describe_task(plan, c.task), c.frames,
                        c.preroll, analyze, render, decoded_text);
    for (const auto& [stage, s] : {std::pair{Stage::analyze, a}, std::pair{Stage::render, r}}) {
      if (s && s->state == TaskStatus::failed && s->plan == plan.id)
        text += fmt::format("       {} failed: {} (log: {})\n", to_string(stage), s->error, log_path(dir, stage, c.task));
      if (s && s->state == TaskStatus::running && s->plan == plan.id && process_alive(*s))
        text += fmt::format("       {} running on {} (pid {})\n", to_string(stage), s->host, s->pid);
    }
  }
  for (int i = 0; i < static_cast<int>(plan.inputs.size()); ++i) {
    const InputPlan& in = plan.inputs[static_cast<std::size_t>(i)];
    const std::optional<TaskState> s = read_task_state(dir, Stage::join, i);
    const std::string word = state_word(plan, s);
    j["joins"].push_back({{"input", in.input}, {"output", in.output}, {"state", word}});
    text += fmt::format("join {} -> {}: {}\n", fs::path(in.input).filename().string(), in.output, word);
    if (s && s->state == TaskStatus::failed && s->plan == plan.id) text += fmt::format("       failed: {}\n", s->error);
  }
  j["rendered"] = done;
  text += fmt::format("{} of {} chunks rendered\n", done, plan.tasks.size());
  // The rate since the job was planned (its plan.json written), up to now, or up to its last
  // render's end once every chunk is rendered (its state file's last write).
  std::error_code error;
  const auto planned = fs::last_write_time(plan_path(dir), error);
  progress.done = done;
  auto until = fs::file_time_type::clock::now();
  if (done == static_cast<int>(plan.tasks.size()) && !plan.tasks.empty()) {
    auto last = planned;
    std::error_code state_error;
    for (const ChunkPlan& c : plan.tasks) {
      const auto written = fs::last_write_time(state_path(dir, Stage::render, c.task), state_error);
      if (!state_error) last = std::max(last, written);
    }
    until = last;
  }
  const double since_planned = std::chrono::duration<double>(until - planned).count();
  progress.elapsed_seconds = error ? 0.0 : std::max(0.0, since_planned);
  progress.fps = progress.elapsed_seconds > 0 ? static_cast<double>(progress.frames_done) / progress.elapsed_seconds : 0.0;
  text += progress_line(progress) + "\n";
  j["progress"] = {{"frames_done", progress.frames_done}, {"frames_total", progress.frames_total},
                   {"fps", progress.fps}, {"elapsed_seconds", progress.elapsed_seconds},
                   {"running", progress.running}, {"done", progress.done}, {"failed", progress.failed}};
  return as_json ? j.dump(2) + "\n" : text;
}

bool job_complete(const std::string& dir) {
  const Plan plan = load_plan(dir);
  for (int i = 0; i < static_cast<int>(plan.inputs.size()); ++i)
    if (!task_done(dir, plan.id, Stage::join, i)) return false;
  return true;
}

}  // namespace hazefree::jobs
