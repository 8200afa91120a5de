// The pipeline's overlapped path (frames in flight on several lanes, as the CUDA streams run
// them) driven by a CPU stand-in that finishes each frame only when its lane is waited for:
// output order, frame count, packets and pixels must be those of the one-frame-at-a-time run.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "io/media_reader.hpp"
#include "kernels/processor.hpp"
#include "pipeline/frame_pool.hpp"
#include "pipeline/options.hpp"
#include "pipeline/pipeline.hpp"
#include "support/test_support.hpp"

using namespace hazefree;

namespace {

// Defers each frame's work to wait(), checks the lane discipline, and counts frames in flight.
class DeferredLanes final : public FrameProcessor {
 public:
  // `max_in_flight` outlives the processor (the pipeline owns and destroys it).
  DeferredLanes(int lanes, int* max_in_flight, int fail_at = -1)
      : inner_(make_cpu_processor(config())), pending_(lanes), max_in_flight_(max_in_flight), fail_at_(fail_at) {}

  static ProcessingConfig config() {
    ProcessingConfig c;
    c.mode = Mode::he;
    c.backend = Backend::cpu;
    c.he.temporal = 0.5f;  // temporal state: frames must reach the backend in order
    return c;
  }

  void process(const ImageView& in, ImageView& out) override { inner_->process(in, out); }
  void reset() override { inner_->reset(); }
  void set_temporal_state(const TemporalState& state) override { inner_->set_temporal_state(state); }
  std::string description() const override { return "deferred lanes"; }
  int lanes() const override { return static_cast<int>(pending_.size()); }

  void enqueue(int lane, const ImageView& in, const ImageView& out) override {
    Pending& p = pending_.at(lane);
    if (p.busy) throw std::logic_error("lane enqueued twice without a wait");
    p = {true, in, out, enqueued_++};
    int busy = 0;
    for (const Pending& q : pending_) busy += q.busy;
    *max_in_flight_ = std::max(*max_in_flight_, busy);
  }

  void wait(int lane) override {
    Pending& p = pending_.at(lane);
    if (!p.busy) return;
    if (p.sequence != completed_) throw std::logic_error("frames completed out of order");
    if (completed_ == fail_at_) throw std::runtime_error("simulated device fault");
    ImageView out = p.out;
    inner_->process(p.in, out);  // the temporal state advances in presentation order
    p.busy = false;
    ++completed_;
  }

 private:
  struct Pending {
    bool busy = false;
    ImageView in, out;
    int sequence = 0;
  };
  std::unique_ptr<FrameProcessor> inner_;
  std::vector<Pending> pending_;
  int* max_in_flight_;
  int enqueued_ = 0, completed_ = 0;
  int fail_at_;
};

RunOptions options_for(const std::string& out) {
  RunOptions o;
  o.input = test::sample_path("hazy-street.mp4");
  o.output = out;
  o.processing = DeferredLanes::config();
  o.quiet = true;
  o.output_options.encoder = "ffv1";  // lossless, so the pixels can be compared
  finalize_options(o);
  return o;
}

// Decodes every picture of a file into one byte string per frame.
std::vector<std::string> frames_of(const std::string& path) {
  io::InputOptions in;
  in.url = path;
  io::MediaReader reader(in);
  std::vector<std::string> frames;
  while (true) {
    const auto item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item != io::MediaReader::Item::video_frame) continue;
    const ImageView& v = reader.frame().view;
    std::string bytes;
    for (int p = 0; p < v.plane_count; ++p)
      for (int y = 0; y < v.planes[p].height; ++y)
        bytes.append(reinterpret_cast<const char*>(v.planes[p].data + y * v.planes[p].stride),
                     static_cast<std::size_t>(v.planes[p].width) * bytes_per_sample(v.format, p));
    frames.push_back(std::move(bytes));
  }
  return frames;
}

}  // namespace

TEST_CASE("pipeline lanes: overlapped frames give the one-at-a-time output, in order") {
  const std::string dir = test::temp_dir("pipeline-lanes");
  const RunOptions serial = options_for(dir + "/serial.mkv");
  const RunSummary a = run_pipeline(serial, make_cpu_processor(DeferredLanes::config()));
  for (int lanes : {2, 3}) {
    CAPTURE(lanes);
    const RunOptions overlapped = options_for(dir + "/lanes" + std::to_string(lanes) + ".mkv");
    int max_in_flight = 0;
    const RunSummary b = run_pipeline(overlapped, std::make_unique<DeferredLanes>(lanes, &max_in_flight));
    CHECK(b.frames_out == a.frames_out);
    CHECK(b.frames_out == 100);
    CHECK(b.packets_copied == a.packets_copied);
    // The lanes really held several frames at once (how many depends on decode versus
    // processing speed: with an empty input queue frames are finished at once).
    CHECK(max_in_flight >= 2);
    CHECK(max_in_flight <= lanes);
    CHECK(frames_of(overlapped.output) == frames_of(serial.output));
  }
}

namespace {

// Stderr into a file for as long as it lives (the run's -v set-up line).
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) : saved_(dup(STDERR_FILENO)), file_(std::fopen(path.c_str(), "w")) {
    REQUIRE(file_);
    std::fflush(stderr);
    dup2(fileno(file_), STDERR_FILENO);
  }
  ~StderrToFile() {
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    std::fclose(file_);
  }
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

 private:
  int saved_;
  std::FILE* file_;
};

// What a run printed on stderr, through the file `path`.
std::string stderr_of_run(const RunOptions& options, std::unique_ptr<FrameProcessor> processor, const std::string& path) {
  {
    StderrToFile capture(path);
    run_pipeline(options, std::move(processor));
  }
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("pipeline lanes: the -v set-up line counts the lanes where frames overlap and names none on the CPU backend") {
  const std::string dir = test::temp_dir("pipeline-verbose");
  auto verbose = [&dir](const std::string& name, bool side_by_side) {
    RunOptions o;
    o.input = test::sample_path("hazy-street.mp4");
    o.output = dir + "/" + name + ".mkv";
    o.processing = DeferredLanes::config();
    o.side_by_side = side_by_side;
    o.max_frames = 5;
    o.quiet = true;
    o.verbose = true;
    o.output_options.encoder = "ffv1";
    finalize_options(o);
    return o;
  };
  int unused = 0;
  // The CPU backend has no lanes: the line names it and says nothing of lanes ("0 lanes" before).
  const std::string cpu = stderr_of_run(verbose("cpu", false), make_cpu_processor(DeferredLanes::config()),
                                        dir + "/cpu.log");
  INFO(cpu);
  CHECK(cpu.find(" on cpu (") != std::string::npos);
  CHECK(cpu.find("lane") == std::string::npos);
  CHECK(cpu.find("set-up") != std::string::npos);
  // A backend with lanes (the CUDA streams): how many the frames overlap on.
  const std::string two = stderr_of_run(verbose("two", false), std::make_unique<DeferredLanes>(2, &unused),
                                        dir + "/two.log");
  INFO(two);
  CHECK(two.find(" on deferred lanes, 2 lanes, set-up") != std::string::npos);
  const std::string one = stderr_of_run(verbose("one", false), std::make_unique<DeferredLanes>(1, &unused),
                                        dir + "/one.log");
  INFO(one);
  CHECK(one.find(" on deferred lanes, 1 lane, set-up") != std::string::npos);
  // Side by side composes each frame on the host: the lanes stay unused, and the line says so.
  const std::string side = stderr_of_run(verbose("side", true), std::make_unique<DeferredLanes>(2, &unused),
                                         dir + "/side.log");
  INFO(side);
  CHECK(side.find(" on deferred lanes, one frame at a time (--side-by-side), set-up") != std::string::npos);
}

TEST_CASE("pipeline lanes: a device fault mid-stream ends the run with its message and no output") {
  const std::string dir = test::temp_dir("pipeline-lanes-fault");
  const RunOptions o = options_for(dir + "/out.mkv");
  int unused = 0;
  CHECK_THROWS_WITH(run_pipeline(o, std::make_unique<DeferredLanes>(2, &unused, 37)), "simulated device fault");
  CHECK_FALSE(std::filesystem::exists(o.output));
  CHECK(std::filesystem::is_empty(dir));  // no temporary file left behind either
}

namespace {

// Counts every call the run makes on a processor (DeferredLanes within), from any thread.
class Watched final : public FrameProcessor {
 public:
  Watched(std::unique_ptr<FrameProcessor> inner, std::atomic<int>* calls) : inner_(std::move(inner)), calls_(calls) {}
  void process(const ImageView& in, ImageView& out) override { ++*calls_, inner_->process(in, out); }
  void reset() override { ++*calls_, inner_->reset(); }
  void set_temporal_state(const TemporalState& state) override { ++*calls_, inner_->set_temporal_state(state); }
  std::string description() const override { return ++*calls_, inner_->description(); }
  int lanes() const override { return ++*calls_, inner_->lanes(); }
  void enqueue(int lane, const ImageView& in, const ImageView& out) override { ++*calls_, inner_->enqueue(lane, in, out); }
  void wait(int lane) override { ++*calls_, inner_->wait(lane); }
  DehazeStats dehaze_stats(int lane) const override { return ++*calls_, inner_->dehaze_stats(lane); }

 private:
  std::unique_ptr<FrameProcessor> inner_;
  std::atomic<int>* calls_;
};

}  // namespace

TEST_CASE("pipeline: the processing-done hook comes once, after the last frame is processed, and the processor is left alone after it") {
  const std::string dir = test::temp_dir("pipeline-processing-done");
  for (const int lanes : {0, 2}) {
    CAPTURE(lanes);
    RunOptions o = options_for(dir + "/out" + std::to_string(lanes) + ".mkv");
    std::atomic<int> calls{0}, processed{0}, hooks{0}, calls_at_hook{-1}, processed_at_hook{-1};
    o.hooks.on_frame_processed = [&](const ImageView&, const ImageView&) { ++processed; };
    o.hooks.on_processing_done = [&] {
      ++hooks;
      calls_at_hook = calls.load();
      processed_at_hook = processed.load();
    };
    int max_in_flight = 0;
    std::unique_ptr<FrameProcessor> inner =
        lanes > 0 ? std::unique_ptr<FrameProcessor>(std::make_unique<DeferredLanes>(lanes, &max_in_flight))
                  : make_cpu_processor(DeferredLanes::config());
    const RunSummary r = run_pipeline(o, std::make_unique<Watched>(std::move(inner), &calls));
    CHECK(r.frames_out == 100);
    CHECK(r.processor != "");
    CHECK(hooks.load() == 1);
    CHECK(processed_at_hook.load() == 100);
    CHECK(calls_at_hook.load() > 100);
    CHECK(calls.load() == calls_at_hook.load());  // nothing asked of the processor after the hook
  }
  // A run that fails before its frames are all processed: no hook.
  RunOptions failing = options_for(dir + "/failing.mkv");
  std::atomic<int> hooks{0};
  failing.hooks.on_processing_done = [&] { ++hooks; };
  int unused = 0;
  CHECK_THROWS_WITH(run_pipeline(failing, std::make_unique<DeferredLanes>(2, &unused, 37)), "simulated device fault");
  CHECK(hooks.load() == 0);
}

namespace {

// A GPU-like backend (it has lanes) that fails on its first picture, as one out of device memory
// would.
class FailingGpu final : public FrameProcessor {
 public:
  void process(const ImageView&, ImageView&) override { throw std::runtime_error("out of memory (simulated)"); }
  void reset() override {}
  std::string description() const override { return "failing gpu"; }
  int lanes() const override { return 2; }
};

}  // namespace

TEST_CASE("pipeline lanes: with --backend auto a GPU failing on the first picture hands over to the CPU") {
  const std::string dir = test::temp_dir("pipeline-fallback");
  RunOptions reference = options_for(dir + "/cpu.mkv");
  const RunSummary a = run_pipeline(reference, make_cpu_processor(DeferredLanes::config()));
  RunOptions automatic = options_for(dir + "/auto.mkv");
  automatic.processing.backend = Backend::automatic;
  const RunSummary b = run_pipeline(automatic, std::make_unique<FailingGpu>());
  CHECK(b.processor.rfind("cpu", 0) == 0);
  CHECK(b.frames_out == a.frames_out);
  CHECK(frames_of(automatic.output) == frames_of(reference.output));

  // An explicit --backend cuda is not second-guessed: the failure ends the run.
  RunOptions explicit_gpu = options_for(dir + "/cuda.mkv");
  explicit_gpu.processing.backend = Backend::cuda;
  CHECK_THROWS_WITH(run_pipeline(explicit_gpu, std::make_unique<FailingGpu>()),
                    doctest::Contains("out of memory"));
  CHECK_FALSE(std::filesystem::exists(explicit_gpu.output));
}

namespace {

// A start state known only later: released by the test once the run has published its
// estimates (what the job runner's board does once the earlier chunks are folded).
class HeldGate final : public StartStateGate {
 public:
  TemporalState wait() override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return released_ || cancelled_; });
    if (cancelled_) throw std::runtime_error("gate cancelled");
    return state_;
  }
  void cancel() override {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    changed_.notify_all();
  }
  void release(const TemporalState& state) {
    std::lock_guard lock(mutex_);
    state_ = state;
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  TemporalState state_;
  bool released_ = false, cancelled_ = false;
};

}  // namespace

TEST_CASE("pipeline held chunk: every frame estimated before it is processed, held until the start state comes") {
  const std::string dir = test::temp_dir("pipeline-held");
  const ProcessingConfig config = DeferredLanes::config();
  // The reference: the whole clip in one run, and each frame's estimate taken alone.
  const RunOptions whole = options_for(dir + "/whole.mkv");
  REQUIRE(run_pipeline(whole, make_cpu_processor(config)).frames_out == 100);
  std::vector<FrameEstimate> expected;
  {
    io::InputOptions in;
    in.url = whole.input;
    io::MediaReader reader(in);
    auto estimator = make_cpu_processor(config);
    for (auto item = reader.read(); item != io::MediaReader::Item::end; item = reader.read())
      if (item == io::MediaReader::Item::video_frame) expected.push_back(estimator->estimate(reader.frame().view));
  }
  for (const int lanes : {0, 2}) {
    CAPTURE(lanes);
    RunOptions held = options_for(dir + "/held" + std::to_string(lanes) + ".mkv");
    auto gate = std::make_shared<HeldGate>();
    auto estimator = make_cpu_processor(config);
    std::vector<FrameEstimate> published;
    held.hooks.start_gate = gate;
    held.hooks.hold_frames = 100;  // the whole clip waits in memory
    held.hooks.estimator = estimator.get();
    held.hooks.publish_estimates = [&](std::vector<FrameEstimate>&& estimates) {
      published = std::move(estimates);
      gate->release(TemporalState{});  // the clip's own start: a fresh stream
    };
    int max_in_flight = 0;
    std::unique_ptr<FrameProcessor> processor =
        lanes > 0 ? std::unique_ptr<FrameProcessor>(std::make_unique<DeferredLanes>(lanes, &max_in_flight)) : make_cpu_processor(config);
    const RunSummary r = run_pipeline(held, std::move(processor));
    CHECK(r.frames_out == 100);
    // Published before any frame was processed (the gate opened only then), all of them, equal
    // to the estimates taken alone; and the frames equal the whole run's.
    REQUIRE(published.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK(published[i].light == expected[i].light);
      for (int c = 0; c < 3; ++c) CHECK(published[i].channel_histograms[c] == expected[i].channel_histograms[c]);
    }
    CHECK(frames_of(held.output) == frames_of(whole.output));
  }
}

TEST_CASE("pipeline held chunk: a failing estimator cancels the gate and the run fails with its error") {
  const std::string dir = test::temp_dir("pipeline-held-fail");
  RunOptions held = options_for(dir + "/held.mkv");
  auto gate = std::make_shared<HeldGate>();
  // A processor without estimates: FrameProcessor::estimate() throws.
  struct NoEstimates final : FrameProcessor {
    void process(const ImageView&, ImageView&) override {}
    void reset() override {}
    std::string description() const override { return "no estimates"; }
  };
  auto estimator = std::make_unique<NoEstimates>();
  held.hooks.start_gate = gate;
  held.hooks.hold_frames = 100;
  held.hooks.estimator = estimator.get();
  held.hooks.publish_estimates = [](std::vector<FrameEstimate>&&) { FAIL("nothing to publish after a failure"); };
  CHECK_THROWS_WITH(run_pipeline(held, make_cpu_processor(DeferredLanes::config())),
                    doctest::Contains("cannot estimate"));
  CHECK_FALSE(std::filesystem::exists(held.output));
}

TEST_CASE("pipeline held chunk: decodes into its held frames while its processor is still being made") {
  const std::string dir = test::temp_dir("pipeline-held-ahead");
  const ProcessingConfig config = DeferredLanes::config();
  const RunOptions whole = options_for(dir + "/whole.mkv");
  REQUIRE(run_pipeline(whole, make_cpu_processor(config)).frames_out == 100);
  // The processor comes only once the held frames' allocator has handed out `ahead` buffers: the
  // chunk decoded that many frames before it had a processor (all of them, then 30 of 100 with
  // the rest decoded as usual). The frames and the estimates are the whole run's either way.
  for (const int ahead : {100, 30}) {
    CAPTURE(ahead);
    std::mutex mutex;
    std::condition_variable allocated;
    int buffers = 0;
    BufferAllocator counting = BufferAllocator::heap();
    counting.allocate = [&, heap = BufferAllocator::heap()](std::size_t bytes) {
      void* p = heap.allocate(bytes);
      std::lock_guard lock(mutex);
      ++buffers;
      allocated.notify_all();
      return p;
    };
    RunOptions held = options_for(dir + "/ahead" + std::to_string(ahead) + ".mkv");
    auto gate = std::make_shared<HeldGate>();
    auto estimator = make_cpu_processor(config);
    std::vector<FrameEstimate> published;
    held.hooks.start_gate = gate;
    held.hooks.hold_frames = 100;
    held.hooks.held_buffers = std::make_shared<BufferCache>(counting);
    held.hooks.estimator = estimator.get();
    held.hooks.publish_estimates = [&](std::vector<FrameEstimate>&& estimates) {
      published = std::move(estimates);
      gate->release(TemporalState{});
    };
    std::promise<std::unique_ptr<FrameProcessor>> made;
    bool reached = false;
    std::thread maker([&] {
      {
        std::unique_lock lock(mutex);
        reached = allocated.wait_for(lock, std::chrono::seconds(20), [&] { return buffers >= ahead; });
      }
      made.set_value(make_cpu_processor(config));
    });
    const RunSummary r = run_pipeline(held, made.get_future());
    maker.join();
    CHECK(reached);
    CHECK(r.frames_out == 100);
    CHECK(published.size() == 100);
    CHECK(frames_of(held.output) == frames_of(whole.output));
  }
}
