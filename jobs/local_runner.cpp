// `hazefree --chunks N|auto [--gpus ...] INPUT OUTPUT`: the job's stages on this machine, in this
// process. One worker thread per slot (one or more per GPU, each GPU's workers sharing this
// process's CUDA context; or CPU workers sharing the cores) takes chunk after chunk, in time
// order, with the same processors and no process or context started per chunk.
//
// Each frame is decoded once where the mode carries state from frame to frame (DCP's atmospheric
// light, HE's smoothed histogram): a chunk's worker decodes it, takes every frame's estimate as it
// goes (the estimator, a processor of its own) and publishes them as soon as the chunk is decoded,
// holding the decoded frames in memory until the estimates of its input's earlier chunks are
// known; then it processes and encodes them from the exact start state. A chunk whose frames do
// not fit its worker's share of the memory budget is decoded twice instead (an analysis pass,
// then the render), and its log says so. The analyses and chunks are written to DIR exactly as
// the stage commands write them, so `job status`, a resumed run and the join see one layout.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "io/logging.hpp"
#include "io/media_reader.hpp"
#include "jobs/job_command.hpp"
#include "jobs/job_files.hpp"
#include "jobs/job_plan.hpp"
#include "jobs/job_progress.hpp"
#include "jobs/job_stages.hpp"
#include "jobs/render_priority.hpp"
#include "kernels/processor.hpp"
#include "kernels/temporal_state.hpp"
#include "pipeline/frame_pool.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/processor_factory.hpp"

namespace hazefree::jobs {
namespace fs = std::filesystem;

namespace {

std::vector<int> parse_gpus(const std::string& text, int available) {
  std::vector<int> gpus;
  if (text.empty() || text == "all") {
    for (int i = 0; i < available; ++i) gpus.push_back(i);
    return gpus;
  }
  for (const std::string& part : comma_list(text)) {
    char* end = nullptr;
    const long g = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || g < 0)
      throw UsageError(fmt::format("--gpus {}: expected all or GPU numbers separated by commas", text));
    if (g >= available)
      throw UsageError(fmt::format("--gpus {}: GPU {} does not exist ({} GPU{} here)", text, g, available,
                                   available == 1 ? "" : "s"));
    gpus.push_back(static_cast<int>(g));
  }
  return gpus;
}

// The GPUs the workers can use, counted from the driver's list (/proc/driver/nvidia/gpus,
// narrowed by CUDA_VISIBLE_DEVICES) where it exists, else by asking CUDA.
int visible_gpu_count() {
#if defined(HAZEFREE_HAVE_CUDA)
  std::error_code error;
  int listed = 0;
  for (fs::directory_iterator it("/proc/driver/nvidia/gpus", error), end; !error && it != end; it.increment(error))
    ++listed;
  if (error || listed == 0) return cuda_device_count();
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    // CUDA stops at the first entry it cannot use; count the entries up to there.
    int entries = 0;
    for (const std::string& entry : comma_list(visible)) {
      if (entry.empty()) break;
      ++entries;
    }
    return std::min(entries, listed);
  }
  return listed;
#else
  return cuda_device_count();
#endif
}

// Memory the system could give now (MemAvailable), in bytes; 0 when unknown.
std::uint64_t available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// One worker: a GPU (or -1 for the CPU) and, for CPU workers, its share of the cores.
struct Slot {
  int gpu = -1;
  int threads = 0;
};

// What the job looks like on this machine, chosen before it is planned.
struct Layout {
  std::vector<Slot> slots;
  int chunks = 0;             // for --chunks auto: the most chunks (whole waves of workers)
  int fewest_chunks = 0;      // for --chunks auto: the fewest (memory; whole waves below `chunks`)
  int encoder_threads = 0;    // for --chunks auto: per worker's encoder (0: the encoder's own choice)
  int leading_encoder_threads = 0;  // for --chunks auto: the job's first chunk's encoder (0: encoder_threads)
  int decoder_threads = 0;    // for --chunks auto: per worker's decoder (0: the decoder's own choice)
  std::uint64_t budget = 0;   // bytes of decoded frames all workers may hold
  int gpus = 0;               // GPUs the workers use
  std::string line;           // what was chosen, for --chunks auto ("{}" for the chunks, their pre-roll)
};

// The waves of --chunks auto: at most this many chunks per worker.
constexpr int kAutoWaves = 3;

// --chunks auto. Encoders: as many x264 at once as the cores feed best, three per four cores
// with four threads each, and each worker's decoder with three where the GPU processes. One x264
// fed by one pipeline keeps about 11 of 16 cores busy whatever its threads; eight bare transcodes
// at once keep 15.8 busy. On 16-core H200 hosts (docs/SCALING.md): eight workers gave 220 fps
// with three encoder threads and automatic decoder threads, 251 with six and two; twelve workers
// with four threads against eight with six, 12032 frames, 337 against 311 fps on one host and
// 374 against 373 on another. Each encoder is a worker of its own (decoder, estimator, processor,
// encoder); a GPU's workers share its one CUDA context, so one GPU feeds as many encoders as the
// host's cores run (DCP takes about 0.2 ms of it per 1080p frame). Without a GPU the workers
// also process on the cores: one per four cores.
// Chunks: whole waves of workers (a multiple of their count), at most three, shrinking toward the
// end (the first three times the last, job_plan.cpp) so that a worker that finishes early takes
// a shorter chunk and the last wave ends together; the last chunk no shorter than a second, no
// chunk larger than its worker's share of the memory budget.
Layout choose_layout(const RunOptions& options, const JobOptions& job, const io::VideoInfo& video,
                     std::int64_t bytes_per_frame) {
  Layout layout;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int gpu_count = options.processing.backend != Backend::cpu ? visible_gpu_count() : 0;
  const std::uint64_t available = available_memory();
  layout.budget = job.memory_mb > 0 ? static_cast<std::uint64_t>(job.memory_mb * 1024.0 * 1024.0)
                  : available > 0   ? available / 2
                                    : std::uint64_t{4} << 30;
  if (gpu_count > 0) {
    const std::vector<int> gpus = parse_gpus(job.gpus, gpu_count);
    const int gpu_number = static_cast<int>(gpus.size());
    int per_gpu = job.workers_per_gpu > 0 ? job.workers_per_gpu : 1;
    if (job.auto_chunks && job.workers_per_gpu == 0) per_gpu = std::max(1, (std::max(1, 3 * cores / 4) + gpu_number - 1) / gpu_number);
    for (const int gpu : gpus)
      for (int w = 0; w < per_gpu; ++w) layout.slots.push_back(Slot{gpu, 0});
    layout.gpus = gpu_number;
  } else {
    if (!job.gpus.empty() && job.gpus != "all")
      throw UsageError(fmt::format("--gpus {}: no usable GPU here{}", job.gpus,
                                   options.processing.backend == Backend::cpu ? " (--backend cpu)" : ""));
    int workers = job.workers > 0 ? job.workers : 2;
    if (job.auto_chunks && job.workers == 0) workers = std::clamp(cores / 4, 2, 16);
    if (job.workers_per_gpu > 0)
      io::warning(fmt::format("--workers-per-gpu {}: no GPU here{}: the job runs {} on the cores (--workers sets how many)",
                              job.workers_per_gpu, options.processing.backend == Backend::cpu ? " (--backend cpu)" : "",
                              counted(workers, "worker")));
    for (int w = 0; w < workers; ++w) layout.slots.push_back(Slot{-1, std::max(1, cores / workers)});
  }
  const int workers = static_cast<int>(layout.slots.size());
  if (!job.auto_chunks) return layout;

  const std::int64_t frames = video.frame_count;
  if (frames <= 0) throw UsageError(fmt::format("{}: --chunks auto: the input does not say how many frames it has; give --chunks N",
                                                options.input));
  const double rate = video.frame_rate.value() > 0 ? video.frame_rate.value() : 25.0;
  // The last chunk is half the mean under the shrinking sizes: a second of frames at least.
  const std::int64_t most_by_length = std::max<std::int64_t>(1, frames / static_cast<std::int64_t>(std::ceil(2.0 * rate)));
  std::int64_t chunks = std::min<std::int64_t>(std::int64_t{kAutoWaves} * workers, most_by_length);
  if (chunks > workers) chunks -= chunks % workers;  // whole waves
  // The first (longest) chunk is 1.5 times the mean under the shrinking sizes.
  const std::uint64_t share = layout.budget / static_cast<std::uint64_t>(workers);
  const std::uint64_t frames_per_share = std::max<std::uint64_t>(1, share / static_cast<std::uint64_t>(std::max<std::int64_t>(1, bytes_per_frame)));
  const auto fewest_by_memory =
      static_cast<std::int64_t>(std::ceil(1.5 * static_cast<double>(frames) / static_cast<double>(frames_per_share)));
  // More chunks keep each within its worker's share, but none shorter than the length allows: past
  // that, each chunk's pre-roll and encoder set-up cost more than decoding its frames twice, which
  // a chunk larger than its share does (the two-pass form). A budget far too small for the input
  // (3008 1080p frames in 1 MiB) took one chunk a frame, at a thirtieth of the usual speed.
  const std::int64_t by_memory = (fewest_by_memory + workers - 1) / workers * workers;
  const std::int64_t by_length = std::max(chunks, most_by_length - most_by_length % workers);
  // Over the budget only where more chunks than the length allows would be needed (not where the
  // whole waves that `by_memory` rounds up to are more: a 75-frame input on two workers).
  const bool over_budget = fewest_by_memory > by_length;
  if (chunks < by_memory) chunks = std::min(by_memory, by_length);
  chunks = std::clamp<std::int64_t>(chunks, 1, std::min<std::int64_t>(frames, 100000));
  layout.chunks = static_cast<int>(chunks);
  // Chunks that cannot all fit may be as few as the workers: the plan weighs each wave count.
  layout.fewest_chunks = static_cast<int>(
      std::min<std::int64_t>(chunks, over_budget ? workers : std::max<std::int64_t>(1, fewest_by_memory)));
  // A job's only worker holds no frames and takes its chunks one after another: more than one
  // chunk would only add pre-roll, encoder set-ups and a join, with no other worker to end with.
  if (workers == 1) layout.chunks = layout.fewest_chunks = 1;
  // GPU workers: the encoders oversubscribe the cores three times (four threads per encoder at
  // three encoders per four cores), so that an encoder waiting on its pictures leaves no core idle
  // (twelve each, for the encoders still running at the job's end, were faster on one host and
  // slower on another: docs/SCALING.md, 2026-12-03). A decoder with its automatic threads
  // (one per core and more, each a frame in flight) would compete with them; three keep a
  // decoder well ahead of its encoder, and shorten the held chunks' decoding before the first
  // estimates are published, when only the first chunk's encoder has work (three against two:
  // 7.31 / 7.37 s against 7.47 / 7.68 s, four 7.86 / 7.50 s, docs/SCALING.md 2026-12-04). CPU
  // workers, whose processing takes cores too: 1.5 encoder threads a core.
  // The chunk whose start state is known when the job starts renders alone until the other
  // workers have decoded their chunks and published the estimates (about a second), their
  // decoders leaving cores free: its encoder takes threads for all of them (one x264 keeps about
  // 11 of 16 cores busy whatever its threads: 16 at most). With 12 or 16 threads, 3008 frames on
  // 16 cores ran 4-10 % faster in five of six pairs of rounds on three hosts, 1 % slower in the
  // sixth (docs/SCALING.md, 2026-12-07).
  if (layout.gpus > 0) {
    layout.encoder_threads = std::max(1, (3 * cores + workers - 1) / workers);
    layout.decoder_threads = 3;
    if (workers > 1) layout.leading_encoder_threads = std::max(layout.encoder_threads, std::min(cores, 16));
  } else {
    layout.encoder_threads = std::max(1, (3 * cores + 2 * workers - 1) / (2 * workers));
  }
  std::string thread_notes;  // "; " between them
  if (layout.leading_encoder_threads > layout.encoder_threads)
    thread_notes = fmt::format("the first chunk's with {} while the others decode", layout.leading_encoder_threads);
  if (layout.decoder_threads > 0)
    thread_notes += fmt::format("{}decoders with {}", thread_notes.empty() ? "" : "; ", layout.decoder_threads);
  layout.line = fmt::format("--chunks auto: {{}} on {} ({}), {} at once with {} threads each{}, "
                            "decoded frames held in at most {:.0f} MiB ({} cores, {} frames of {}x{})",
                            counted(workers, "worker"),
                            layout.gpus > 0 ? fmt::format("{} per GPU", workers / layout.gpus) : "CPU",
                            counted(std::min<std::int64_t>(workers, chunks), "encoder"), layout.encoder_threads,
                            thread_notes.empty() ? "" : " (" + thread_notes + ")",
                            static_cast<double>(layout.budget) / (1024.0 * 1024.0), cores, frames, video.width, video.height);
  if (over_budget)
    layout.line += "; chunks larger than a worker's share of that memory are decoded twice (--job-memory raises it)";
  return layout;
}

// The estimates of the job's chunks as they become known, folded per input into the state at
// each chunk's first frame. The fold runs over a contiguous prefix of each input's chunks, as
// soon as the next chunk's estimates are there (published by a worker, or read from DIR when an
// earlier run left them), so estimates are kept only until they are folded.
class StateBoard {
 public:
  StateBoard(const std::string& dir, const Plan& plan) : dir_(dir), plan_(plan), settings_(plan_settings(plan)) {
    for (const InputPlan& in : plan.inputs) {
      InputFold fold;
      fold.pending.resize(in.chunks.size());
      fold.starts.resize(in.chunks.size());
      folds_.push_back(std::move(fold));
    }
  }

  // Task `task`'s estimates are known (empty for a chunk nothing depends on).
  void publish(int task, std::vector<FrameEstimate> estimates) {
    std::lock_guard lock(mutex_);
    const ChunkPlan& c = plan_.tasks[static_cast<std::size_t>(task)];
    folds_[static_cast<std::size_t>(c.input)].pending[static_cast<std::size_t>(c.number)] = std::move(estimates);
    advance_locked(c.input);
    changed_.notify_all();
  }

  // Every wait from now on throws with `why` (a failed task, a stop).
  void abort(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (aborted_.empty()) aborted_ = why;
    changed_.notify_all();
  }

  // The state at `task`'s first frame; blocks until its input's earlier chunks are all folded.
  TemporalState wait(int task, const std::atomic<bool>& cancelled) {
    const ChunkPlan& c = plan_.tasks[static_cast<std::size_t>(task)];
    std::unique_lock lock(mutex_);
    InputFold& fold = folds_[static_cast<std::size_t>(c.input)];
    for (;;) {
      advance_locked(c.input);  // analyses an earlier run left in DIR
      if (!aborted_.empty()) throw JobError(aborted_);
      if (cancelled.load()) throw JobError(fmt::format("{}: render {} stopped", dir_, task));
      if (fold.folded >= c.number) return *fold.starts[static_cast<std::size_t>(c.number)];
      changed_.wait(lock);
    }
  }

  void notify_all() {
    std::lock_guard lock(mutex_);
    changed_.notify_all();
  }

  // True when the state at `task`'s first frame is known now (wait() would not block).
  bool known(int task) {
    const ChunkPlan& c = plan_.tasks[static_cast<std::size_t>(task)];
    std::lock_guard lock(mutex_);
    advance_locked(c.input);
    return folds_[static_cast<std::size_t>(c.input)].folded >= c.number;
  }

  // True when `task`'s start state is known now and the next chunk of its input waits for this
  // one's estimates: the head of its input's chain of start states.
  bool leads(int task) {
    const ChunkPlan& c = plan_.tasks[static_cast<std::size_t>(task)];
    std::lock_guard lock(mutex_);
    advance_locked(c.input);
    const auto chunks = plan_.inputs[static_cast<std::size_t>(c.input)].chunks.size();
    return folds_[static_cast<std::size_t>(c.input)].folded == c.number && static_cast<std::size_t>(c.number) + 1 < chunks;
  }

 private:
  struct InputFold {
    std::vector<std::optional<std::vector<FrameEstimate>>> pending;  // by chunk number, until folded
    std::vector<std::optional<TemporalState>> starts;                // the state at each chunk's first frame
    TemporalState state;                                             // after the folded chunks
    int folded = -1;                                                 // chunks 0 .. folded have their start
  };

  void advance_locked(int input) {
    InputFold& fold = folds_[static_cast<std::size_t>(input)];
    const InputPlan& in = plan_.inputs[static_cast<std::size_t>(input)];
    const int count = static_cast<int>(in.chunks.size());
    if (fold.folded < 0) {
      fold.starts[0] = TemporalState{};
      fold.folded = 0;
    }
    while (fold.folded + 1 < count) {
      const int number = fold.folded;  // the chunk whose estimates lead to the next start
      auto& estimates = fold.pending[static_cast<std::size_t>(number)];
      if (!estimates) {
        const int task = in.chunks[static_cast<std::size_t>(number)];
        if (!task_done(dir_, plan_.id, Stage::analyze, task)) return;
        estimates = load_analysis(dir_, plan_, task);
      }
      for (const FrameEstimate& e : *estimates) advance_temporal_state(settings_.processing, e, fold.state);
      estimates.reset();
      fold.starts[static_cast<std::size_t>(number + 1)] = fold.state;
      ++fold.folded;
    }
  }

  const std::string dir_;
  const Plan& plan_;
  const RunOptions settings_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<InputFold> folds_;
  std::string aborted_;
};

// A chunk's pipeline waits here for its start state (pipeline/pipeline.hpp).
class BoardGate final : public StartStateGate {
 public:
  BoardGate(StateBoard& board, int task) : board_(board), task_(task) {}
  TemporalState wait() override {
    TemporalState state = board_.wait(task_, cancelled_);
    known_at = std::chrono::steady_clock::now();
    return state;
  }
  // When the start state came (read once the chunk's pipeline has ended).
  std::optional<std::chrono::steady_clock::time_point> known_at;
  void cancel() override {
    cancelled_.store(true);
    board_.notify_all();
  }

 private:
  StateBoard& board_;
  int task_;
  std::atomic<bool> cancelled_{false};
};

// Blocking GPU waits, or with NVDEC its context on every GPU of --gpus, before any worker starts
// CUDA there (io/media_reader.hpp). Either starts CUDA (a few hundred ms).
void prepare_gpus(const RunOptions& options, const JobOptions& job) {
  if (options.processing.backend == Backend::cpu) return;
  if (options.input_options.hwdec == "cuda") {
    const int count = visible_gpu_count();
    if (count == 0) return;
    for (const int gpu : parse_gpus(job.gpus, count)) io::prepare_gpu_decoding(gpu);
  } else {
    prepare_gpu_for_run(options);
  }
}

// The job on this machine: the workers, the board, what is left to do.
class LocalJob {
 public:
  // `gpus_ready`: the GPUs' preparation (prepare_gpus), still under way when the workers begin.
  LocalJob(const RunOptions& options, std::string dir, const Plan& plan, const Layout& layout, std::int64_t bytes_per_frame,
           std::chrono::steady_clock::time_point started, std::shared_future<void> gpus_ready)
      : options_(options), dir_(std::move(dir)), plan_(plan), layout_(layout), frame_bytes_(bytes_per_frame), started_(started),
        gpus_ready_(std::move(gpus_ready)), board_(dir_, plan_) {
    // In time order within each input (chunk 0 of every input first, longest first among equal
    // numbers): a chunk's earlier chunks are always taken before it, so a worker waiting for a
    // start state waits for work that is running.
    for (const ChunkPlan& c : plan_.tasks) order_.push_back(c.task);
    std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
      const ChunkPlan& x = plan_.tasks[static_cast<std::size_t>(a)];
      const ChunkPlan& y = plan_.tasks[static_cast<std::size_t>(b)];
      return x.number != y.number ? x.number < y.number : x.frames > y.frames;
    });
    for (const int task : order_) {
      const ChunkPlan& c = plan_.tasks[static_cast<std::size_t>(task)];
      if (!task_done(dir_, plan_.id, Stage::render, task) || (needs_analysis(c) && !task_done(dir_, plan_.id, Stage::analyze, task)))
        ++total_;
      frames_total_ += c.frames;
      if (task_done(dir_, plan_.id, Stage::render, task)) {  // rendered by an earlier run of the job
        frames_before_ += c.frames;
        ++chunks_done_;
        rendered_[static_cast<std::size_t>(task)] = true;
      }
    }
  }

  // Returns once `task` is rendered (by this run or an earlier one); throws JobInterrupted when
  // the job's workers have all ended without it (a failure or a stop request).
  void wait_rendered(int task) {
    std::unique_lock lock(mutex_);
    rendered_changed_.wait(lock, [&] { return rendered_[static_cast<std::size_t>(task)] || workers_ended_; });
    if (!rendered_[static_cast<std::size_t>(task)])
      throw JobInterrupted(fmt::format("{}: join interrupted: the job ended before task {} was rendered", dir_, task));
  }

  // The frames of the chunks an earlier run of the job rendered (resumed), set before run().
  std::int64_t frames_rendered_before() const { return frames_before_; }

  // Runs every task left; returns false when stopped by a stop request.
  bool run() {
    // However it ends, a join waiting in wait_rendered() for a chunk that will not come is woken.
    struct WorkersEnded {
      LocalJob& job;
      ~WorkersEnded() {
        {
          std::lock_guard lock(job.mutex_);
          job.workers_ended_ = true;
        }
        job.rendered_changed_.notify_all();
      }
    } workers_ended{*this};
    int done_pipe[2];
    if (pipe2(done_pipe, O_CLOEXEC) != 0) throw JobError(fmt::format("{}: cannot start the workers ({})", dir_, std::strerror(errno)));
    // A thread per worker.
    std::vector<std::thread> workers;
    for (std::size_t w = 0; w < layout_.slots.size(); ++w) {
      workers.emplace_back([this, w, &done_pipe] {
        name_this_thread("hf-worker");  // its encoder's threads take the name too
        work(layout_.slots[w]);
        (void)!write(done_pipe[1], "x", 1);
      });
    }
    // Waits for the workers, and turns a stop request (a signal) into the board's abort, which
    // wakes the chunks waiting for their start state.
    // Meanwhile the progress line: redrawn in place twice a second on a terminal, else a line
    // every five seconds.
    // And four times a second, once no chunk is left to hand out, the last renders' shares of the
    // cores (balance_last_renders).
    std::size_t ended = 0;
    bool stop_seen = false;
    const auto started = std::chrono::steady_clock::now();
    const int interval_ms = on_terminal_ ? 500 : 5000;
    constexpr std::chrono::milliseconds kBalanceInterval{250};
    auto next_line = started + std::chrono::milliseconds(on_terminal_ ? 0 : interval_ms);
    auto next_balance = started + kBalanceInterval;
    while (ended < workers.size()) {
      if (std::chrono::steady_clock::now() >= next_line) {
        if (!options_.quiet) show_progress(started, false);
        next_line += std::chrono::milliseconds(interval_ms);
      }
      if (std::chrono::steady_clock::now() >= next_balance) {
        balance_last_renders();
        next_balance = std::chrono::steady_clock::now() + kBalanceInterval;
      }
      const auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::min(next_line, next_balance) - std::chrono::steady_clock::now());
      pollfd wake[2] = {{done_pipe[0], POLLIN, 0}, {stop_request_fd(), POLLIN, 0}};
      if (poll(wake, stop_seen ? 1 : 2, static_cast<int>(std::clamp<std::int64_t>(wait.count(), 0, interval_ms))) < 0) {
        if (errno == EINTR) continue;
        break;  // the joins below still wait for every worker
      }
      if (!stop_seen && (wake[1].revents & POLLIN)) {  // stays readable: looked at once
        stop_seen = true;
        fail_all(fmt::format("{}: interrupted", dir_));
      }
      if (wake[0].revents & POLLIN) {
        char bytes[16];
        const ssize_t n = read(done_pipe[0], bytes, sizeof bytes);
        if (n > 0) ended += static_cast<std::size_t>(n);
      }
    }
    for (std::thread& t : workers) t.join();
    if (!options_.quiet && on_terminal_) show_progress(started, true);
    for (const int fd : {done_pipe[0], done_pipe[1]}) close(fd);
    if (stopped()) return false;
    if (!failure_.empty()) throw JobError(failure_);
    return true;
  }

 private:
  bool needs_analysis(const ChunkPlan& c) const { return plan_.analysis && !c.to_end; }

  // A stop request (a signal).
  bool stopped() const { return stop_requested(); }

  void fail_all(const std::string& why) {
    {
      std::lock_guard lock(mutex_);
      if (failure_.empty() && !stopped()) failure_ = why;
    }
    stop_.store(true);
    board_.abort(why);
  }

  // The next task in time order, or -1 when none is left or the job is failing.
  int next_task() {
    std::lock_guard lock(mutex_);
    if (stop_.load() || next_ >= order_.size()) return -1;
    const int task = order_[next_++];
    if (next_ == order_.size())
      for (const std::weak_ptr<BufferCache>& cache : held_caches_)
        if (const std::shared_ptr<BufferCache> held = cache.lock()) held->stop_keeping();
    return task;
  }

  // The job's last renders end together (jobs/render_priority.hpp): once every chunk has been
  // handed out, each running render's threads take a nice value from the frames it has left
  // against the render with the most. Before that, a render that ends early takes the next chunk.
  // A render whose estimates the later chunks still wait for (a held chunk still decoding) keeps
  // its share: its decoding holds up every start state after it.
  void balance_last_renders() {
    {
      std::lock_guard lock(mutex_);
      if (next_ < order_.size()) return;
    }
    std::map<int, std::int64_t> left;
    {
      std::lock_guard lock(frames_left_mutex_);
      for (const auto& [task, render] : renders_left_)
        if (!render.estimates_awaited) left[task] = render.frames;
    }
    const std::map<int, int> nice = balanced_nice(left);
    if (nice.empty()) return;
    const int floor = nice_floor_;
    nice_floor_ = apply_render_nice(nice, floor);
    std::lock_guard lock(frames_left_mutex_);
    for (const auto& [task, value] : nice) highest_nice_[task] = std::max(highest_nice_[task], std::min(19, floor + value));
  }

  // The highest nice value render `task`'s threads were given (-v).
  int highest_nice(int task) {
    std::lock_guard lock(frames_left_mutex_);
    const auto found = highest_nice_.find(task);
    return found != highest_nice_.end() ? found->second : 0;
  }

  // A worker's held frames are kept for its next chunk while chunks are left to hand out; after
  // that, its chunks free each held frame once processed (no worker needs one again).
  void keep_held_frames_while_tasks_left(const std::shared_ptr<BufferCache>& held) {
    std::lock_guard lock(mutex_);
    if (next_ >= order_.size()) held->stop_keeping();
    held_caches_.push_back(held);
  }

  void say(const std::string& line) {
    if (options_.quiet) return;
    std::lock_guard lock(print_mutex_);
    // Over the progress line, which the next redraw puts back below.
    fmt::print(stderr, "{}hazefree: {}\n", drawn_ ? "\r\x1b[K" : "", line);
    drawn_ = false;
  }

  void show_progress(std::chrono::steady_clock::time_point started, bool last) {
    JobProgress p;
    p.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const std::int64_t frames_now = frames_this_run_.load();
    p.frames_done = frames_before_ + frames_now;
    p.frames_total = frames_total_;
    p.fps = p.elapsed_seconds > 0 ? static_cast<double>(frames_now) / p.elapsed_seconds : 0.0;
    p.chunks = static_cast<int>(plan_.tasks.size());
    p.running = running_.load();
    p.done = chunks_done_.load();
    p.failed = chunks_failed_.load();
    std::lock_guard lock(print_mutex_);
    if (on_terminal_) {
      fmt::print(stderr, "\rhazefree: {}\x1b[K{}", progress_line(p), last ? "\n" : "");
      drawn_ = !last;
    } else {
      fmt::print(stderr, "hazefree: {}\n", progress_line(p));
    }
  }

  // A chunk's frames all processed (RunHooks::on_processing_done), or its run ended.
  class ChunkProcessed {
   public:
    void set() {
      {
        std::lock_guard lock(mutex_);
        done_ = true;
      }
      changed_.notify_all();
    }
    void wait() {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return done_; });
    }

   private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool done_ = false;
  };

  void work(const Slot& slot) {
    try {
      Worker worker;  // outlives its chunks' threads (`finishing` and `running` below are waited for first)
      worker.slot = slot;
      keep_held_frames_while_tasks_left(worker.held);
      // Each chunk runs on a thread of its own, and the worker takes its next chunk as soon as
      // the current one's frames are all processed: the next chunk opens its input, decodes its
      // pre-roll and sets up its encoder while the current one's encoder finishes its last frames
      // (x264's frame threads empty one by one) and the output's trailer. At most two chunks of a
      // worker run at once, and only one of them uses its processors.
      std::future<void> finishing;
      for (int task = next_task(); task >= 0; task = next_task()) {
        auto processed = std::make_shared<ChunkProcessed>();
        std::future<void> running = std::async(std::launch::async, [this, &worker, task, processed] {
          // Its decoder's and encoder's threads take the name too (balance_last_renders).
          name_this_thread(render_thread_name(task).c_str());
          try {
            run_task(worker, task, [processed] { processed->set(); });
          } catch (const std::exception& e) {
            fail_all(e.what());
          }
          processed->set();
        });
        processed->wait();
        if (finishing.valid()) finishing.get();
        finishing = std::move(running);
      }
      if (finishing.valid()) finishing.get();
      // Its processors and buffers freed, each part timed for -v (a job's end waits for them).
      using Clock = std::chrono::steady_clock;
      const Clock::time_point last_chunk_ended = Clock::now();
      const auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
      worker.render.reset();
      worker.estimator.reset();
      const double processors_ms = ms_since(last_chunk_ended);
      Clock::time_point t = Clock::now();
      worker.pinned.reset();
      const double pinned_ms = ms_since(t);
      t = Clock::now();
      worker.held.reset();
      const double held_ms = ms_since(t);
      if (options_.verbose)
        say(fmt::format("a worker ended {:.2f} s, {:.0f} ms after its last chunk (processors freed in {:.0f} ms, "
                        "page-locked buffers {:.0f} ms, held frames {:.0f} ms)",
                        std::chrono::duration<double>(Clock::now() - started_).count(), ms_since(last_chunk_ended),
                        processors_ms, pinned_ms, held_ms));
    } catch (const std::exception& e) {
      fail_all(e.what());
    }
  }

  // What a worker keeps from chunk to chunk: its processors (on its GPU, in this process's
  // context) and its frame buffers, made for its first chunk (ready_worker).
  struct Worker {
    Slot slot;
    std::unique_ptr<FrameProcessor> render;
    std::unique_ptr<FrameProcessor> estimator;  // with an analysis
    // The frame buffers of its chunks' pools, kept from chunk to chunk: the held chunks' in plain
    // memory (page-locked, gigabytes of them cost more than they save: docs/SCALING.md), taken
    // before the backend is ready (a chunk decodes into them meanwhile); the lanes' page-locked.
    std::shared_ptr<BufferCache> held = std::make_shared<BufferCache>(huge_page_heap());
    std::shared_ptr<BufferCache> pinned;
    // Its chunks begun so far (run_task: each begins once the one before has been processed).
    std::atomic<int> chunks_begun{0};
  };

  // Makes the worker's processors and buffers, once the GPUs are prepared; nothing for its later
  // chunks. Called on any thread: the processors keep their GPU for every thread that uses them.
  void ready_worker(Worker& worker) {
    if (worker.render) return;
    std::shared_future<void> gpus_ready = gpus_ready_;  // a copy for this thread
    gpus_ready.get();  // rethrows the preparation's failure
    use_gpu(worker.slot.gpu);
    worker.pinned = std::make_shared<BufferCache>(BufferAllocator::pinned_or_heap());
    if (plan_.analysis) worker.estimator = make_estimator(processing_for(worker.slot), options_.verbose);
    worker.render = create_processor(processing_for(worker.slot), options_.verbose);
  }

  // A worker's share of GPU `gpu`'s memory for held frames: what they leave free (an eighth, at
  // least 1 GiB: CudaProcessor::hold_on_device) taken off, split among the GPU's workers.
  std::uint64_t gpu_share(int gpu) const {
    const std::uint64_t total = cuda_device_memory(std::max(0, gpu));
    const std::uint64_t kept = std::max<std::uint64_t>(std::uint64_t{1} << 30, total / 8);
    const auto workers = static_cast<std::uint64_t>(
        std::count_if(layout_.slots.begin(), layout_.slots.end(), [gpu](const Slot& s) { return s.gpu == gpu; }));
    return total > kept ? (total - kept) / std::max<std::uint64_t>(1, workers) : 0;
  }

  ProcessingConfig processing_for(const Slot& slot) const {
    ProcessingConfig processing = plan_settings(plan_).processing;
    if (slot.threads > 0) processing.threads = slot.threads;
    return processing;
  }

  FrameProcessor& estimator_of(Worker& worker) {
    ready_worker(worker);
    return *worker.estimator;
  }

  // Runs `task` on `worker`'s processors; `processed` is called once its frames are all processed
  // (the processors free for the worker's next chunk), if its run gets that far.
  void run_task(Worker& worker, int task, const std::function<void()>& processed) {
    const ChunkPlan& c = plan_.tasks[static_cast<std::size_t>(task)];
    const bool own_analysis = needs_analysis(c) && !task_done(dir_, plan_.id, Stage::analyze, task);
    if (task_done(dir_, plan_.id, Stage::render, task)) {
      if (own_analysis) analyse_alone(worker, task);  // an earlier run rendered it but left no analysis
      return;
    }
    RunOptions chunk_run = chunk_render_options(dir_, plan_, task, options_.verbose);
    chunk_run.hooks.stop = &stop_;
    chunk_run.hooks.on_processing_done = processed;
    // The head of the chain of start states, on a worker's first chunk (the job's start), while
    // the next chunk's worker decodes and waits: the leading count (choose_layout).
    const bool leading = worker.chunks_begun++ == 0 && layout_.leading_encoder_threads > 0 && board_.leads(task);
    const int encoder_threads = leading ? layout_.leading_encoder_threads : layout_.encoder_threads;
    if (encoder_threads > 0 && !chunk_run.output_options.encoder_options.count("threads"))
      chunk_run.output_options.encoder_options["threads"] = std::to_string(encoder_threads);
    const auto threads_given = chunk_run.output_options.encoder_options.find("threads");
    const std::string encoder_threads_said =
        threads_given != chunk_run.output_options.encoder_options.end() ? fmt::format(" ({} encoder threads)", threads_given->second) : "";
    if (layout_.decoder_threads > 0 && chunk_run.input_options.decoder_threads == 0)
      chunk_run.input_options.decoder_threads = layout_.decoder_threads;
    const bool on_nvdec = !chunk_run.input_options.hwdec.empty();
    if (on_nvdec) chunk_run.input_options.hwdec_device = std::max(0, worker.slot.gpu);
    // NVDEC opens the input on the GPU, whose context takes its flags from the preparation first.
    if (on_nvdec) ready_worker(worker);
    std::shared_ptr<BoardGate> gate;
    if (plan_.analysis) {
      gate = std::make_shared<BoardGate>(board_, task);
      chunk_run.hooks.start_gate = gate;
    }
    // The fused form: this chunk's analysis comes from the render's own decoding. On NVDEC the
    // chunk waits on its GPU (copied out of the decoder's surfaces), so the estimator must be a
    // GPU processor (DCP; HE's histograms come from the CPU) and the chunk must fit the worker's
    // share of that GPU's memory beside the eighth that held frames leave free.
    std::uint64_t share = layout_.budget / layout_.slots.size();
    if (on_nvdec) share = std::min(share, gpu_share(worker.slot.gpu));
    const auto chunk_bytes = static_cast<std::uint64_t>(c.frames) * static_cast<std::uint64_t>(frame_bytes_);
    const bool held_on_gpu = !on_nvdec || (worker.estimator && worker.estimator->lanes() > 0);
    const bool fused = own_analysis && held_on_gpu && chunk_bytes <= share;
    std::optional<TaskRun> analysis;
    const auto began = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> published_at, first_written_at;
    if (own_analysis && !fused) {
      const std::string two_decoders = "its render decodes on NVDEC, its analysis on the CPU";
      const std::string why =
          !held_on_gpu ? two_decoders
                       : fmt::format("its {} frames ({:.0f} MiB) exceed a worker's share of {}the memory budget ({:.3g} MiB, "
                                     "--job-memory){}",
                                     c.frames, static_cast<double>(chunk_bytes) / 1048576.0,
                                     on_nvdec ? "the GPU's memory or of " : "", static_cast<double>(share) / 1048576.0,
                                     on_nvdec ? "; " + two_decoders : "");
      analyse_alone(worker, task, fmt::format("decoded twice: {}", why));
    } else if (fused) {
      analysis.emplace(dir_, Stage::analyze, task, plan_.id, true);
      analysis->line(fmt::format("analyze {}: {} taken from the render's decoding (each frame decoded once; up to {:.0f} MiB held)",
                                 task, describe_task(plan_, task), static_cast<double>(chunk_bytes) / 1048576.0));
      analysis->set_decoded("fused");
      // The decoder runs ahead of the encoder, the chunk held in memory, where that publishes the
      // estimates sooner for a worker that waits for them, or where this chunk waits for its own
      // start state. A job's only worker has neither: its chunks come in time order, each start
      // state known when it begins, and holding them would only fault in memory for nothing.
      const bool alone = layout_.slots.size() == 1;
      if (!alone || !board_.known(task)) chunk_run.hooks.hold_frames = c.frames;
      chunk_run.hooks.publish_estimates = [this, task, &analysis, &published_at](std::vector<FrameEstimate>&& estimates) {
        published_at = std::chrono::steady_clock::now();
        save_analysis(dir_, plan_, task, estimates);
        analysis->done(static_cast<std::int64_t>(estimates.size()));
        board_.publish(task, std::move(estimates));
        std::lock_guard lock(frames_left_mutex_);
        if (const auto render = renders_left_.find(task); render != renders_left_.end()) render->second.estimates_awaited = false;
      };
    }
    TaskRun render(dir_, Stage::render, task, plan_.id, true);
    std::int64_t counted = 0;  // this render's frames in frames_this_run_
    // Its frames left while it runs, and whether the later chunks await its estimates (a held
    // chunk's, until it publishes them): balance_last_renders.
    struct FramesLeft {
      LocalJob& job;
      int task;
      FramesLeft(LocalJob& j, int t, std::int64_t frames, bool estimates_awaited) : job(j), task(t) {
        std::lock_guard lock(job.frames_left_mutex_);
        job.renders_left_[task] = RenderLeft{frames, estimates_awaited};
      }
      void set(std::int64_t frames) {
        std::lock_guard lock(job.frames_left_mutex_);
        job.renders_left_[task].frames = frames;
      }
      ~FramesLeft() {
        std::lock_guard lock(job.frames_left_mutex_);
        job.renders_left_.erase(task);
      }
    } frames_left(*this, task, c.frames, fused);
    chunk_run.hooks.on_frame_written = [this, &render, &counted, &first_written_at, &frames_left, &c](const FrameWritten& written) {
      if (counted == 0) first_written_at = std::chrono::steady_clock::now();
      frames_this_run_ += written.frames - counted;
      counted = written.frames;
      frames_left.set(c.frames - written.frames);
      render.progress(written.frames);
    };
    // The chunk counted as running while it renders; a render that fails takes its frames back
    // (its chunk is rendered again).
    struct Running {
      LocalJob& job;
      const std::int64_t& counted;
      bool ok = false;
      Running(LocalJob& j, const std::int64_t& c) : job(j), counted(c) { ++job.running_; }
      ~Running() {
        --job.running_;
        if (ok) {
          ++job.chunks_done_;
        } else {
          ++job.chunks_failed_;
          job.frames_this_run_ -= counted;
        }
      }
    } running(*this, counted);
    try {
      render.line(fmt::format("render {}: {}{}", task, describe_task(plan_, task),
                              plan_.analysis ? (fused ? " (decoded once, with its analysis)" : "") : ""));
      render.set_decoded(on_nvdec ? "nvdec" : "cpu");
      // The worker's processors and buffers are made (on its first chunk, once CUDA has started:
      // the workers begin while the GPUs are prepared) while the pipeline opens its input, which
      // decodes a chunk's pre-roll, and a held chunk decodes into its held frames. The pipeline
      // reads the hooks set here only once it has the processor (the future's result makes them
      // visible to it).
      chunk_run.hooks.held_buffers = worker.held;
      std::future<std::unique_ptr<FrameProcessor>> backend =
          std::async(std::launch::async, [this, &worker, &chunk_run, fused]() -> std::unique_ptr<FrameProcessor> {
            ready_worker(worker);
            chunk_run.hooks.pinned_buffers = worker.pinned;
            if (fused) chunk_run.hooks.estimator = worker.estimator.get();
            worker.render->reset();
            return borrow_processor(*worker.render);
          });
      const RunSummary summary = run_pipeline(chunk_run, std::move(backend));
      check_chunk_rendered(dir_, plan_, task, summary);
      render.line(fmt::format("render {}: {:.1f} fps on {}", task,
                              summary.seconds > 0 ? summary.frames_out / summary.seconds : 0.0, summary.processor));
      if (options_.verbose) {
        // Where the chunk's time went, in seconds from the job's start, and each stage's busy time.
        const auto at = [this](const std::optional<std::chrono::steady_clock::time_point>& t) {
          return t ? fmt::format("{:.2f}", std::chrono::duration<double>(*t - started_).count()) : std::string("-");
        };
        say(fmt::format("render {}: began {}, estimates published {}, start state {}, first frame written {}, ended {} s; "
                        "busy per frame: decode {:.2f}, estimate {:.2f}, process {:.2f}, encode {:.2f} ms{}; "
                        "pre-roll: {} of {} pictures decoded; nice up to {}",
                        task, at(began), at(published_at), at(gate ? gate->known_at : std::nullopt), at(first_written_at),
                        at(std::chrono::steady_clock::now()), summary.decode_ms, summary.estimate_ms, summary.process_ms,
                        summary.encode_ms,
                        encoder_threads_said,
                        summary.pictures_dropped, plan_.tasks[static_cast<std::size_t>(task)].preroll, highest_nice(task)));
      }
      render.done(summary.frames_out);
      running.ok = true;
    } catch (const std::exception& e) {
      // Stopped because another task failed (or a stop request): this one was only interrupted.
      const bool interrupted = stop_.load() || stopped();
      const std::string why = interrupted ? fmt::format("{}: render {} interrupted", dir_, task) : e.what();
      interrupted ? render.interrupted(why) : render.failed(why);
      if (analysis && !task_done(dir_, plan_.id, Stage::analyze, task))
        interrupted ? analysis->interrupted(why) : analysis->failed(why);
      throw JobError(why);
    }
    finished(task);
  }

  // The two-pass form's analysis: a decoding pass of its own, published before the render.
  void analyse_alone(Worker& worker, int task, const std::string& why = "") {
    TaskRun run(dir_, Stage::analyze, task, plan_.id, true);
    try {
      FrameProcessor& estimator = estimator_of(worker);
      run.line(fmt::format("analyze {}: {} on {}{}", task, describe_task(plan_, task), estimator.description(),
                           why.empty() ? "" : "; " + why));
      if (!why.empty()) say(fmt::format("task {} ({}): {}", task, describe_task(plan_, task), why));
      run.set_decoded("cpu");
      std::vector<FrameEstimate> estimates = estimate_chunk(dir_, plan_, task, estimator, &stop_);
      save_analysis(dir_, plan_, task, estimates);
      run.done(static_cast<std::int64_t>(estimates.size()));
      board_.publish(task, std::move(estimates));
    } catch (const std::exception& e) {
      stop_.load() || stopped() ? run.interrupted(e.what()) : run.failed(e.what());
      throw;
    }
  }

  void finished(int task) {
    std::size_t count = 0;
    {
      std::lock_guard lock(mutex_);
      count = ++finished_;
      rendered_[static_cast<std::size_t>(task)] = true;
    }
    rendered_changed_.notify_all();
    say(fmt::format("render {} done ({}) [{}/{}]", task, describe_task(plan_, task), count, total_));
  }

  const RunOptions& options_;
  const std::string dir_;
  const Plan& plan_;
  const Layout& layout_;
  const std::int64_t frame_bytes_;
  const std::chrono::steady_clock::time_point started_;  // the job's start (before its plan)
  const std::shared_future<void> gpus_ready_;
  StateBoard board_;
  std::vector<int> order_;
  std::size_t total_ = 0;
  std::mutex mutex_;
  std::size_t next_ = 0;
  std::vector<std::weak_ptr<BufferCache>> held_caches_;  // every worker's, freed with it (under mutex_)
  std::size_t finished_ = 0;
  std::vector<bool> rendered_ = std::vector<bool>(plan_.tasks.size(), false);  // by task: its chunk is rendered
  bool workers_ended_ = false;
  std::condition_variable rendered_changed_;
  std::string failure_;
  std::atomic<bool> stop_{false};
  std::mutex print_mutex_;
  // The progress line's counts: frames encoded by this run's renders, and before it (chunks an
  // earlier run of the job left done), chunks running, done and failed.
  const bool on_terminal_ = isatty(STDERR_FILENO) != 0;
  bool drawn_ = false;  // the progress line is on the screen, unfinished
  std::int64_t frames_total_ = 0;
  std::int64_t frames_before_ = 0;
  std::atomic<std::int64_t> frames_this_run_{0};
  std::atomic<int> running_{0};
  std::atomic<int> chunks_done_{0};
  std::atomic<int> chunks_failed_{0};
  // The running renders' frames left, by task, the highest nice value each render was given, and
  // the value the last renders' are raised from (balance_last_renders).
  struct RenderLeft {
    std::int64_t frames = 0;
    bool estimates_awaited = false;
  };
  std::mutex frames_left_mutex_;
  std::map<int, RenderLeft> renders_left_;
  std::map<int, int> highest_nice_;
  int nice_floor_ = 0;
};

}  // namespace

// --chunks auto's plan: of the whole waves of workers it may take (one, two, three), the one
// whose work ends first by a simple count in frames per worker: every frame encoded, the
// pre-roll decoded at a sixth of an encode's cost (1080p H.264 decodes at about 2040 fps on 16
// cores, x264 veryfast reaches about 370 there: docs/SCALING.md), and what the workers wait for
// at the end: in waves, half the last chunk (the workers take chunks as they finish); in one
// wave, a quarter of a chunk (its equal chunks begin together, and end apart only as their
// pictures differ in cost). More waves end closer together but, on an input of long GOPs, decode
// more pre-roll (on a 16-core H200 host, 3008 frames with a keyframe every 250: one wave of 12
// chunks, no pre-roll, 38-39 CPU-ms per frame; two waves, 2615 frames of pre-roll, 41-45).
Plan choose_auto_plan(const RunOptions& options, const Layout& layout, ChunkRequest request) {
  const int workers = static_cast<int>(layout.slots.size());
  std::optional<Plan> best;
  double best_cost = 0.0;
  PacketIndexes indexes;  // the input is read once for all the plans weighed
  for (int chunks = layout.chunks; chunks >= layout.fewest_chunks; chunks -= workers) {
    request.chunks = chunks;
    Plan plan = make_plan({{options.input, options.output}}, options, request, &indexes);
    std::int64_t preroll = 0, last = 0;
    for (const ChunkPlan& c : plan.tasks) {
      preroll += c.preroll;
      if (c.to_end) last = c.frames;
    }
    const double end_wait = static_cast<double>(last) / (chunks > workers ? 2.0 : 4.0);
    const double cost = (static_cast<double>(plan.inputs[0].frames) + static_cast<double>(preroll) / 6.0) / workers + end_wait;
    if (!best || cost < best_cost) {
      best = std::move(plan);
      best_cost = cost;
    }
    if (chunks <= workers) break;
  }
  return std::move(*best);
}

int run_local_job(const RunOptions& options, const JobOptions& job) {
  const char* const cut = job.chunk_seconds > 0 ? "--chunk-seconds" : !job.chunk_starts.empty() ? "--chunk-starts" : "--chunks";
  if (options.live) throw UsageError(fmt::format("{}: a --live source cannot be cut into chunks", cut));
  if (options.input == "-" || io::is_network_or_camera(options.input_options))
    throw UsageError(fmt::format("{}: {} needs a file to cut into chunks, not a pipe, stream or camera", options.input, cut));
  // DIR: given, or hidden next to the output (kept until the job succeeds, so that the same
  // command run again after a failure or an interruption resumes it).
  const fs::path output = fs::absolute(options.output);
  const bool own_dir = job.dir.empty();
  const std::string dir = own_dir ? (output.parent_path() / ("." + output.filename().string() + ".hazefree-job")).string()
                                  : fs::absolute(job.dir).string();
  const auto started = std::chrono::steady_clock::now();
  // CUDA starts while the input is probed and planned, and while the workers open their chunks
  // (on the 32-core 2-GPU host the plan took 0.15 s, CUDA's start on both GPUs 0.5 s more;
  // docs/SCALING.md). The workers wait for it before they make their processors.
  const std::shared_future<void> gpus_prepared =
      std::async(std::launch::async, [&options, &job] { prepare_gpus(options, job); }).share();
  // The frames' size (what a held chunk costs) and, for --chunks auto, their count and rate.
  io::VideoInfo video;
  {
    io::InputOptions probe = options.input_options;
    probe.hwdec.clear();
    io::MediaReader reader(probe);
    video = reader.video();
  }
  const auto bytes_per_frame = static_cast<std::int64_t>(frame_bytes(video.format, video.width, video.height, 64, video.depth));
  const Layout layout = choose_layout(options, job, video, bytes_per_frame);
  ChunkRequest request = chunk_request(job);
  request.workers = static_cast<int>(layout.slots.size());
  Plan fresh;
  if (job.auto_chunks) {
    fresh = choose_auto_plan(options, layout, request);
    if (!options.quiet) {
      std::int64_t preroll = 0;
      for (const ChunkPlan& c : fresh.tasks) preroll += c.preroll;
      fmt::print(stderr, "hazefree: {}\n",
                 fmt::format(fmt::runtime(layout.line), fmt::format("{} ({} frames of pre-roll)", counted(fresh.tasks.size(), "chunk"), preroll)));
    }
  } else {
    fresh = make_plan({{options.input, options.output}}, options, request);
  }
  std::error_code error;
  bool resumed = false;
  const bool planned_before = fs::exists(plan_path(dir), error);
  if (planned_before) {
    try {
      resumed = load_plan(dir).id == fresh.id;
    } catch (const JobError&) {
      resumed = false;  // another version or damaged: planned again below
    }
  }
  // A job directory planned for other inputs, outputs or settings (-y included, which the join
  // obeys) is planned again, and what was rendered for it is not used: said, not done silently.
  if (planned_before && !resumed && !options.quiet)
    fmt::print(stderr, "hazefree: {}: planned again: the job there was for other inputs, outputs or settings "
                       "(its rendered chunks are not used)\n", dir);
  if (!resumed) save_plan(dir, fresh);
  const Plan plan = load_plan(dir);
  const std::size_t workers = layout.slots.size();
  if (!options.quiet)
    fmt::print(stderr, "hazefree: {} frames in {} on {} ({}){}; job directory {}\n", plan.inputs[0].frames,
               counted(plan.tasks.size(), "chunk"), counted(workers, "worker"),
               layout.slots[0].gpu >= 0 ? fmt::format("GPU {}", job.gpus.empty() ? "all" : job.gpus) : "CPU",
               resumed ? ", resuming" : "", dir);

  // FFmpeg's own messages from many decoders and encoders at once would bury the job's lines,
  // and a chunk that starts at an open GOP's keyframe decodes leading pictures whose references
  // lie in the chunk before (dropped, as in the single run, but the decoder logs them as errors).
  // What fails still fails with hazefree's one line; -v shows FFmpeg's messages.
  if (!options.verbose) io::set_ffmpeg_log_level(io::LogLevel::silent);
  LocalJob local(options, dir, plan, layout, bytes_per_frame, started, gpus_prepared);
  // The join copies each chunk as soon as it is rendered, beside the renders still running, so
  // that only the last chunks are left to copy after them (joined after the renders, 0.54 s of an
  // 11 s job passed at one busy core between the last render and the job's end; docs/SCALING.md).
  std::future<void> joined = std::async(std::launch::async, [&dir, &options, &local] {
    join_outputs(dir, -1, StageOptions{true, options.verbose}, [&local](int task) { local.wait_rendered(task); });
  });
  bool finished = false;
  try {
    finished = local.run();
  } catch (...) {
    joined.wait();  // woken by the workers' end: the job's own failure is the one to report
    gpus_prepared.get();  // unless the GPUs' preparation failed (its own error, naming the GPU)
    throw;
  }
  if (!finished) {
    joined.wait();
    fmt::print(stderr, "hazefree: interrupted; the finished chunks are kept in {}: the same command resumes the job\n", dir);
    return 130;
  }
  const auto since_start = [&started] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  const double workers_ended = since_start();
  joined.get();
  const double seconds = since_start();
  if (!options.quiet) {
    // A resumed job's rate counts only the frames this run rendered.
    const std::int64_t before = local.frames_rendered_before(), now = plan.inputs[0].frames - before;
    fmt::print(stderr, "hazefree: {} frames{} in {:.2f} s ({:.1f} fps), {} on {}, {}\n", plan.inputs[0].frames,
               before > 0 ? fmt::format(" ({} rendered before, {} now)", before, now) : "", seconds,
               now / std::max(seconds, 1e-9), counted(plan.tasks.size(), "chunk"), counted(workers, "worker"),
               to_string(options.processing.mode));
  }
  if (own_dir) fs::remove_all(dir, error);
  // Where the job's end went: the workers' teardown, the join of the last chunks, the directory.
  if (options.verbose)
    fmt::print(stderr, "hazefree: job's end: workers ended {:.2f}, join ended {:.2f}, job directory removed {:.2f} s\n",
               workers_ended, seconds, since_start());
  return 0;
}

}  // namespace hazefree::jobs
