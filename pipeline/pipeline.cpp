#include "pipeline/pipeline.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "io/logging.hpp"
#include "io/media_reader.hpp"
#include "io/media_writer.hpp"
#include "io/url.hpp"
#include "kernels/processor.hpp"
#include "kernels/side_by_side.hpp"
#include "pipeline/bounded_queue.hpp"
#include "pipeline/frame_pool.hpp"
#include "pipeline/frame_stats.hpp"
#include "pipeline/processor_factory.hpp"
#include "pipeline/progress.hpp"

namespace hazefree {
namespace {

std::atomic<bool> g_stop_requested{false};
// A stop request wakes the decoder threads with this signal (see set_stop_wake_signal()).
std::atomic<int> g_wake_signal{0};
// The decoder threads of the runs going on (several in one process: a job's chunks), 0 = a free
// slot. A run beyond the slots still stops: its reader looks at the stop state itself (it only
// misses the wake-up of a read() blocked on a silent pipe).
constexpr std::size_t kReadingThreadSlots = 64;
std::array<std::atomic<pthread_t>, kReadingThreadSlots> g_reading_threads{};
// request_stop() calls in progress: a reading thread is not released while one may still be
// signalling it.
std::atomic<int> g_stoppers{0};
std::atomic<int> g_stop_pipe_write{-1};

// Becomes readable at the first stop request (a byte written from request_stop(), which a
// signal handler may call): the reconnection back-off waits on it, so a stop ends the wait at
// once, with no polling and no lost wake-up.
int stop_pipe_read_end() {
  static const int read_end = [] {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    g_stop_pipe_write.store(ends[1]);
    return ends[0];
  }();
  return read_end;
}

void wait_for_stoppers() {
  while (g_stoppers.load() != 0) std::this_thread::yield();
}

// The decoder thread, registered while it may block in a read.
class ReadingThread {
 public:
  ReadingThread() {
    for (std::atomic<pthread_t>& slot : g_reading_threads) {
      pthread_t free_slot{};
      if (slot.compare_exchange_strong(free_slot, pthread_self())) {
        slot_ = &slot;
        return;
      }
    }
  }
  ~ReadingThread() {
    if (!slot_) return;
    slot_->store(pthread_t{});
    wait_for_stoppers();
  }
  ReadingThread(const ReadingThread&) = delete;
  ReadingThread& operator=(const ReadingThread&) = delete;

 private:
  std::atomic<pthread_t>* slot_ = nullptr;
};

std::int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The result frame travels with its input's timing.
void carry_timing(const PooledFrame& from, PooledFrame& to) {
  to.pts = from.pts;
  to.duration = from.duration;
  to.capture_us = from.capture_us;
  to.index = from.index;
}

// Thrown inside the processing stage when a queue was aborted by another stage.
struct Aborted {};

// What travels between the stages: a frame from a pool, or a packet of another stream.
struct WorkItem {
  PooledFrame* frame = nullptr;
  io::Packet packet;
  // The first picture after a reconnection: the processor's temporal state starts afresh (the
  // atmospheric light as at a scene cut).
  bool restart = false;
  // --hwdec: the picture stays in GPU memory; `frame` then carries only its timing.
  std::shared_ptr<void> device_picture;
  ImageView device_view;
  const ImageView& pixels() const { return device_picture ? device_view : frame->view; }
};

// The first error of any stage; the others are consequences.
class FirstFailure {
 public:
  void record(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
  }
  bool failed() const {
    std::lock_guard lock(mutex_);
    return static_cast<bool>(error_);
  }
  void rethrow_if_failed() const {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  mutable std::mutex mutex_;
  std::exception_ptr error_;
};

// The input opened; a span outside it (-ss past the end) is a usage error. Opening and every
// read look at the run's own stop state (a stop request, RunHooks::stop): a stop ends a wait on
// a silent source at once, in each of the runs of a process.
io::MediaReader open_reader(const RunOptions& run) {
  io::InputOptions options = run.input_options;
  options.start_at_zero = run.live;  // a live source's recording starts at zero, not at its clock
  options.stop_requested = [stop = run.hooks.stop] {
    return g_stop_requested.load(std::memory_order_relaxed) || (stop && stop->load(std::memory_order_relaxed));
  };
  try {
    return io::MediaReader(options);
  } catch (const io::TrimError& e) {
    throw UsageError("input.start", e.what());
  }
}

class Pipeline {
 public:
  // The backend starts (a CUDA context takes a few hundred ms) while the input is opened.
  Pipeline(const RunOptions& options, std::future<std::unique_ptr<FrameProcessor>> processor,
           std::chrono::steady_clock::time_point created)
      : created_(created),
        options_(options),
        reader_(open_reader(options)),
        // A held chunk's frames are bounded by its pool; the packets between them by nothing else.
        in_queue_(options.hooks.hold_frames > 0 ? SIZE_MAX / 2 : static_cast<std::size_t>(options.queue_depth)),
        estimate_queue_(static_cast<std::size_t>(options.queue_depth)),
        out_queue_(static_cast<std::size_t>(options.queue_depth)) {
    const io::VideoInfo& video = reader_.video();
    const PixelFormat format = video.format;
    // A held chunk's frames (a job's chunk waiting for its start state) take plain heap memory, as
    // much as the chunk turns out to need: pinning gigabytes would cost more than the pageable
    // uploads it saves on a host whose encoders, not the GPU, set the pace. They need no backend,
    // so the chunk decodes into them while its backend is still being made (a job's first chunks:
    // CUDA's start, half a second in which its cores would otherwise wait).
    const std::size_t hold = static_cast<std::size_t>(std::max<std::int64_t>(0, options.hooks.hold_frames));
    if (hold > 0) {
      // The chunk's frames, and the estimator's stage and queue more (they come back to the pool
      // only once the start state has come).
      const std::size_t queued = static_cast<std::size_t>(options.queue_depth) + 1;
      in_pool_.emplace(hold + queued, format, video.width, video.height,
                       options.hooks.held_buffers ? options.hooks.held_buffers->allocator() : huge_page_heap(), video.depth, queued);
      // Not NVDEC's pictures: they stay in the decoder's few surfaces until the backend, ready,
      // copies them out.
      if (!video.on_device) read_ahead(processor, hold);
    }
    processor_ = processor.get();
    const auto opened = std::chrono::steady_clock::now();  // the input open, the backend ready
    if (options.processing.backend == Backend::automatic && processor_->lanes() > 0 && !video.on_device)
      try_gpu_or_fall_back();
    if (options.hooks.start_state) processor_->set_temporal_state(*options.hooks.start_state);
    out_width_ = options.side_by_side ? side_by_side_width(format, video.width) : video.width;
    // Overlapped lanes (CUDA streams) when the backend has them; side-by-side composes on the
    // host after each frame, so it runs one frame at a time.
    lanes_ = options.side_by_side ? 0 : processor_->lanes();
    // A held chunk's frames from here on wait on the GPU, when the frames go through its lanes
    // and the estimator (if any) is a GPU processor too (HE's histograms come from the CPU).
    hold_on_device_ = hold > 0 && lanes_ > 0 && (!options.hooks.estimator || options.hooks.estimator->lanes() > 0);
    if (video.on_device && lanes_ == 0) {
      throw std::runtime_error(io::redact_urls(options.input) + ": --hwdec cuda keeps pictures on the GPU: it needs the CUDA "
                               "backend and no --side-by-side (processor: " + processor_->description() + ")");
    }
    // Frames in flight: a full queue, one being filled or encoded, one per lane being worked on.
    const std::size_t pool_size = static_cast<std::size_t>(options.queue_depth) + 1 + std::max(1, lanes_);
    const BufferAllocator allocator = lanes_ == 0                ? BufferAllocator::heap()
                                      : options.hooks.pinned_buffers ? options.hooks.pinned_buffers->allocator()
                                                               : BufferAllocator::pinned_or_heap();
    // Buffers at the frames' depth (two bytes a sample above 8 bits); the output keeps it.
    if (hold == 0) {
      in_pool_.emplace(pool_size + (options.hooks.estimator ? static_cast<std::size_t>(options.queue_depth) + 1 : 0), format,
                       video.width, video.height, allocator, video.depth);
    }
    // A held chunk's output frames are taken as its render needs them, once its start state has
    // come: page-locked allocations up front, 24 workers at once on a 2-GPU host, took 0.2-1.1 s
    // of each pipeline's set-up there and held its decoding back (docs/SCALING.md).
    out_pool_.emplace(pool_size, format, out_width_, video.height, allocator, video.depth, hold > 0 ? 1 : pool_size);
    if (options.side_by_side) result_ = Image(format, video.width, video.height, 64, video.depth);
    const auto pooled = std::chrono::steady_clock::now();
    try {
      writer_.emplace(options.output_options, reader_, out_width_, video.height, format, video.depth);
    } catch (const io::EncoderOptionError& e) {
      throw UsageError("output.encoder_options", e.what());
    }
    const auto encoder_opened = std::chrono::steady_clock::now();
    // After the writer: an output it refuses leaves no statistics file (and an unfinished output
    // is removed by the writer when the statistics file is refused).
    if (!options.stats_path.empty()) stats_file_.emplace(options.stats_path, options.stats_append);  // run_pipeline checked the path
    if (options.one_picture_implied && !video.still_image && !options.quiet)
      fmt::print(stderr, "hazefree: {}: a still image holds one picture: writing the first frame (--frames 1; a name "
                         "with a frame number such as frame%04d.png writes them all)\n", io::redact_urls(options.output));
    progress_.emplace(options.progress, options.quiet, video.frame_count,
                      video.frame_rate.den > 0 ? video.frame_rate.value() : 0.0);
    expected_frames_ = video.frame_count;
    if (options.verbose) {
      const auto ms = [](auto from, auto to) { return std::chrono::duration<double, std::milli>(to - from).count(); };
      // The lanes where frames overlap (the CUDA backend's streams); a backend that has them,
      // left unused by --side-by-side, works one frame at a time; the CPU backend has none.
      const std::string lanes = lanes_ > 0 ? fmt::format(", {} lane{}", lanes_, lanes_ == 1 ? "" : "s")
                                : processor_->lanes() > 0 ? ", one frame at a time (--side-by-side)"
                                                          : "";
      fmt::print(stderr, "hazefree: {} {}x{} {} ({}, processed as {}) -> {} on {}{}, set-up {:.0f} ms "
                         "(input and backend {:.0f}, frame buffers {:.0f}, encoder {:.0f}){}\n",
                 io::redact_urls(options.input), video.width, video.height, video.codec_name, video.source_pixel_format,
                 format_name(format, video.depth), io::redact_urls(options.output),
                 processor_->description(), lanes, ms(created_, std::chrono::steady_clock::now()), ms(created_, opened),
                 ms(opened, pooled), ms(pooled, encoder_opened),
                 read_ahead_.empty() ? "" : fmt::format("; {} frames decoded meanwhile", std::count_if(read_ahead_.begin(), read_ahead_.end(), is_frame)));
    }
  }

  // `--backend auto`: the GPU backend processes the first picture once before the run (which
  // also allocates its workspaces for this size up front); if it fails there (out of device
  // memory at a large size, a GPU that fails to initialise its kernels), the CPU backend takes
  // over with a warning instead of the run failing.
  void try_gpu_or_fall_back() {
    // The reader's picture, or a held chunk's first frame when it decoded ahead (the reader may
    // have reached its end).
    const auto ahead = std::find_if(read_ahead_.begin(), read_ahead_.end(), is_frame);
    const ImageView& first = ahead != read_ahead_.end() ? ahead->frame->view : reader_.frame().view;
    try {
      Image scratch(first.format, first.width, first.height, 64, first.depth);
      processor_->process(first, scratch.view());
      processor_->reset();
    } catch (const std::exception& e) {
      io::warning(fmt::format("{} failed on the first picture ({}); using the CPU backend", processor_->description(), e.what()));
      ProcessingConfig cpu = options_.processing;
      cpu.backend = Backend::cpu;
      processor_ = make_cpu_processor(cpu);
    }
  }

  RunSummary run() {
    const auto start = std::chrono::steady_clock::now();
    std::thread decoder([this] {
      name_this_thread("hf-decode");
      ReadingThread registration;
      guarded([this] { decode_loop(); });
    });
    std::thread encoder([this] {
      name_this_thread("hf-encode");
      guarded([this] { encode_loop(); });
    });
    std::thread estimator;
    if (options_.hooks.estimator) {
      estimator = std::thread([this] {
        name_this_thread("hf-estimate");
        guarded([this] { estimate_loop(); });
      });
    }
    guarded([this] { process_loop(); });
    decoder.join();
    if (estimator.joinable()) estimator.join();
    // The processor's part is over; whoever lent it may use it again (RunHooks::on_processing_done).
    const std::string processor_description = processor_->description();
    if (options_.hooks.on_processing_done && !failure_.failed()) options_.hooks.on_processing_done();
    encoder.join();
    failure_.rethrow_if_failed();

    RunSummary summary;
    summary.frames_in = frames_in_;
    summary.frames_out = writer_->frames_written();
    summary.frames_dropped = frames_dropped_;
    summary.frames_announced = expected_frames_;
    summary.packets_copied = writer_->packets_copied();
    summary.decode_errors = reader_.decode_errors();
    summary.pictures_dropped = reader_.pictures_dropped();
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary.interrupted = g_stop_requested.load() || stop_asked();
    summary.processor = processor_description;
    summary.reconnects = reconnects_;
    summary.seconds_lost = seconds_lost_;
    summary.input_lost = input_lost_;
    if (latency_count_ > 0) {
      summary.latency_mean_ms = latency_sum_us_ / 1000.0 / latency_count_;
      summary.latency_max_ms = latency_max_us_ / 1000.0;
      summary.latency_p50_ms = latency_percentile(0.50);
      summary.latency_p95_ms = latency_percentile(0.95);
    }
    if (summary.frames_out > 0) {
      summary.decode_ms = decode_busy_us_ / 1000.0 / summary.frames_out;
      summary.process_ms = process_busy_us_ / 1000.0 / summary.frames_out;
      summary.encode_ms = encode_busy_us_ / 1000.0 / summary.frames_out;
    }
    if (frames_in_ > 0) summary.estimate_ms = estimate_busy_us_ / 1000.0 / static_cast<double>(frames_in_);
    progress_->finish();
    return summary;
  }

 private:
  // Runs one stage; any exception stops every stage.
  template <typename Stage>
  void guarded(Stage stage) {
    try {
      stage();
    } catch (...) {
      failure_.record(std::current_exception());
      abort_all();
    }
  }

  void abort_all() {
    reader_.interrupt();
    if (abort_pipe_[1] >= 0) (void)!write(abort_pipe_[1], "x", 1);
    for (WorkItem& item : in_queue_.abort()) in_pool_->release(item.frame);
    for (WorkItem& item : estimate_queue_.abort()) in_pool_->release(item.frame);
    for (WorkItem& item : out_queue_.abort()) out_pool_->release(item.frame);
    if (options_.hooks.start_gate) options_.hooks.start_gate->cancel();
    in_pool_->close();
    out_pool_->close();
  }

  PooledFrame* acquire_input_frame() {
    if (options_.hooks.hold_frames > 0 && !start_state_applied_.load()) {
      // Until its start state comes, a held chunk may not wait for a buffer: none would come back.
      if (PooledFrame* frame = in_pool_->try_acquire()) return frame;
      throw std::runtime_error(fmt::format("{}: more frames than the {} the chunk holds", io::redact_urls(options_.input), options_.hooks.hold_frames));
    }
    if (options_.live) {
      if (PooledFrame* frame = drop_oldest_if_full()) return frame;
      if (PooledFrame* frame = in_pool_->try_acquire()) return frame;
      // No buffer free (the lanes hold them): drop the oldest waiting frame rather than block.
      if (auto oldest = in_queue_.remove_oldest_if(is_frame)) return dropped(*oldest);
    }
    return in_pool_->acquire();
  }

  // Live: processing that falls behind a device, pipe or network source drops the oldest waiting
  // frame (counted) and never holds the reader back. A held-back reader would leave the source's
  // data piling up in the socket's buffers (seconds of pictures over TCP), and would see a stall
  // or the source's end only once it had read through that backlog, at the processing's pace.
  // (A file waits for its reader: nothing is dropped for it.) Returns the dropped frame's buffer,
  // or nothing when the queue has room (or holds no frame).
  PooledFrame* drop_oldest_if_full() {
    if (!reader_.video().live) return nullptr;
    std::optional<WorkItem> oldest = decoded_queue().remove_oldest_if_full(is_frame);
    return oldest ? dropped(*oldest) : nullptr;
  }
  PooledFrame* dropped(WorkItem& item) {
    ++frames_dropped_;
    // The first picture after a reconnection: the next one restarts the temporal state instead.
    if (item.restart) restart_pending_ = true;
    return item.frame;
  }
  static bool is_frame(const WorkItem& item) { return item.frame != nullptr; }

  void decode_loop() {
    for (WorkItem& work : std::exchange(read_ahead_, {})) {
      if (!decoded_queue().push(work)) {
        in_pool_->release(work.frame);
        return;
      }
    }
    // The input's end, a stop, or an abort (whose queues are closed already: closing is harmless).
    while (!read_ahead_ended_) {
      std::optional<WorkItem> work = read_work_item();
      if (!work) break;
      if (!decoded_queue().push(*work)) {
        in_pool_->release(work->frame);
        return;
      }
    }
    decoded_queue().close();
    // A held chunk's frames are all decoded: each is freed once processed, while the chunk goes
    // on, rather than all at its end (a job's last wave ends together, and freeing its gigabytes
    // of held frames then kept the cores waiting).
    if (options_.hooks.hold_frames > 0) in_pool_->stop_recycling();
  }

  // A held chunk decodes into its held frames until its backend is ready (or the chunk is all
  // decoded); the decoder thread hands them on first.
  void read_ahead(std::future<std::unique_ptr<FrameProcessor>>& processor, std::size_t hold) {
    std::size_t frames = 0;
    while (frames < hold && processor.wait_for(std::chrono::seconds(0)) == std::future_status::timeout) {
      std::optional<WorkItem> work = read_work_item();
      if (!work) {
        read_ahead_ended_ = true;
        return;
      }
      if (work->frame) ++frames;
      read_ahead_.push_back(std::move(*work));
    }
  }

  // The input's next packet or decoded frame (in a buffer of the pool); nothing at its end, at a
  // stop request, or once the pool is closed (another stage failed).
  std::optional<WorkItem> read_work_item() {
    for (;;) {
      if (g_stop_requested.load() || stop_asked()) return std::nullopt;
      const std::int64_t t0 = steady_us();
      io::MediaReader::Item item = io::MediaReader::Item::end;
      try {
        item = reader_.read();
      } catch (const io::IoError& e) {
        if (!may_reconnect() || reader_.interrupted()) throw;
        if (!reconnect(e.what())) return std::nullopt;
        continue;
      }
      decode_busy_us_ += steady_us() - t0;
      if (item == io::MediaReader::Item::end) {
        if (reader_.interrupted() || g_stop_requested.load() || stop_asked() || !may_reconnect()) return std::nullopt;
        if (!reconnect(options_.input + ": the source ended")) return std::nullopt;
        continue;
      }
      WorkItem work;
      if (item == io::MediaReader::Item::packet) {
        work.packet = reader_.take_packet();
        if (options_.live) {
          if (PooledFrame* frame = drop_oldest_if_full()) in_pool_->release(frame);
        }
        return work;
      }
      const io::DecodedFrame& decoded = reader_.frame();
      PooledFrame* frame = acquire_input_frame();
      if (!frame) return std::nullopt;
      if (decoded.device_picture) {
        // A held chunk's NVDEC picture is copied out of the decoder's surfaces, which it would
        // otherwise keep until its start state comes (the decoder has only a few).
        const std::int64_t t1 = steady_us();
        if (hold_on_device_) {
          work.device_picture = processor_->hold_on_device(decoded.view, work.device_view);
          if (!work.device_picture)
            throw std::runtime_error(io::redact_urls(options_.input) + ": --hwdec cuda: no GPU memory free to hold the chunk's "
                                     "decoded pictures until its start state comes (a smaller --job-memory, or no --hwdec)");
        } else {
          work.device_picture = decoded.device_picture;
          work.device_view = decoded.view;
        }
        decode_busy_us_ += steady_us() - t1;
      } else {
        // A held chunk's frame waits on the GPU that estimates and renders it where it can (not
        // where the GPU has no memory free for it); every other frame in its pool's buffer.
        const std::int64_t t1 = steady_us();
        if (hold_on_device_) work.device_picture = processor_->hold_on_device(decoded.view, work.device_view);
        if (!work.device_picture) copy_image(decoded.view, frame->view);
        decode_busy_us_ += steady_us() - t1;
      }
      frame->pts = decoded.pts;
      frame->duration = decoded.duration;
      frame->capture_us = decoded.capture_us ? decoded.capture_us : steady_us();
      frame->index = frames_in_++;
      work.frame = frame;
      work.restart = std::exchange(restart_pending_, false);
      return work;
    }
  }

  // The queue the decoder fills: the estimator's when there is one, else the processing's.
  BoundedQueue<WorkItem>& decoded_queue() { return options_.hooks.estimator ? estimate_queue_ : in_queue_; }

  // The fused analysis of a job's chunk: each frame's estimate before it is processed (frames go
  // on in order); all of them are published once the input has ended.
  void estimate_loop() {
    std::vector<FrameEstimate> estimates;
    while (std::optional<WorkItem> item = estimate_queue_.pop()) {
      if (item->frame) {
        const std::int64_t t0 = steady_us();
        estimates.push_back(options_.hooks.estimator->estimate(item->pixels()));
        estimate_busy_us_ += steady_us() - t0;
      }
      if (!in_queue_.push(*item)) {
        in_pool_->release(item->frame);
        return;
      }
    }
    // A run cut short (stopped, or another stage failed) has nothing complete to publish.
    const bool complete = !failure_.failed() && !g_stop_requested.load() && !stop_asked();
    if (complete && options_.hooks.publish_estimates) options_.hooks.publish_estimates(std::move(estimates));
    in_queue_.close();
  }

  // A job's chunk: the state its first frame starts from, once known.
  void await_start_state() {
    if (!options_.hooks.start_gate || start_state_applied_.load()) return;
    const TemporalState state = options_.hooks.start_gate->wait();
    processor_->set_temporal_state(state);
    start_state_applied_.store(true);
  }

  // SPEC 9: with --live, a network or camera source that stalled, failed or ended is reopened.
  bool may_reconnect() const {
    return options_.live && reconnect_limit() != 0 && io::is_network_or_camera(options_.input_options);
  }
  int reconnect_limit() const {
    if (options_.input_reconnect == RunOptions::kAuto) return options_.live ? RunOptions::kUnlimited : 0;
    return options_.input_reconnect;
  }

  // Reopens the source with back-off (0.5 s doubling to 8 s) until it comes back (true), or the
  // attempts run out or the run is stopped (false: the input ends there and the output is
  // finished). One line for the loss, one for the reconnection.
  bool reconnect(const std::string& cause) {
    static constexpr double kFirstBackOff = 0.5, kLongestBackOff = 8.0;
    const std::int64_t last_picture_us = reader_.frame().capture_us;
    // The cause as text, secrets redacted once: it is said now and in the run's last line.
    std::string last_cause = io::redact_urls(cause);
    io::warning(last_cause + "; reconnecting");
    const int limit = reconnect_limit();
    double back_off = kFirstBackOff;
    for (int attempt = 1;; ++attempt) {
      if (limit != RunOptions::kUnlimited && attempt > limit) {
        input_lost_ = fmt::format("{}; gave up after {} reconnection attempt{}", last_cause, limit, limit == 1 ? "" : "s");
        return false;
      }
      if (!wait_unless_stopped(back_off)) return false;
      try {
        reader_.reopen();
        break;
      } catch (const io::IoError& e) {
        if (reader_.interrupted() || g_stop_requested.load() || stop_asked()) return false;
        last_cause = e.what();
        if (options_.verbose) fmt::print(stderr, "hazefree: reconnection attempt {}: {}\n", attempt, last_cause);
      }
      back_off = std::min(back_off * 2, kLongestBackOff);
    }
    const double lost = static_cast<double>(reader_.frame().capture_us - last_picture_us) / 1e6;
    ++reconnects_;
    seconds_lost_.store(seconds_lost_.load() + lost);
    restart_pending_ = true;
    fmt::print(stderr, "hazefree: {}: reconnected ({:.1f} s lost)\n", io::redact_urls(options_.input), lost);
    return true;
  }

  // Sleeps for the back-off unless a stop request (signal) or an abort (another stage failed)
  // comes first; false then. The library's stop flag (RunHooks::stop) sends no wake-up: with
  // one, the wait looks at it every 100 ms.
  bool wait_unless_stopped(double seconds) {
    pollfd wake[2] = {{stop_pipe_read_end(), POLLIN, 0}, {abort_pipe_[0], POLLIN, 0}};
    auto stopped = [this] { return g_stop_requested.load() || stop_asked() || reader_.interrupted(); };
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!stopped()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      if (left <= 0) return true;
      const int slice = options_.hooks.stop ? static_cast<int>(std::min<std::int64_t>(left, 100)) : static_cast<int>(left);
      if (poll(wake, 2, slice) > 0) break;  // EINTR (the wake signal of a stop request): look again
    }
    return !stopped();
  }

  // One frame or packet between the queues while lanes work: frames complete in order, and
  // packets wait behind the frames that came before them.
  struct InFlight {
    WorkItem item;
    PooledFrame* out = nullptr;
    int lane = -1;
  };

  void complete_front(std::deque<InFlight>& flight) {
    InFlight done = std::move(flight.front());
    flight.pop_front();
    if (done.item.frame) {
      PooledFrame* in = done.item.frame;
      const std::int64_t t0 = steady_us();
      processor_->wait(done.lane);
      process_busy_us_ += steady_us() - t0;
      frame_processed(done.item, done.out->view, done.lane);
      carry_timing(*in, *done.out);
      in_pool_->release(in);
      done.item.device_picture.reset();  // the decoder may reuse the GPU picture now
      done.item.frame = done.out;
    }
    if (!out_queue_.push(done.item)) {
      out_pool_->release(done.item.frame);
      throw_if_aborted();
    }
  }

  void throw_if_aborted() { throw Aborted{}; }

  // RunHooks::processing_change: a configuration to apply from the next frame, if any.
  std::optional<ProcessingConfig> processing_change() {
    if (!options_.hooks.processing_change) return std::nullopt;
    return options_.hooks.processing_change();
  }

  // A new processor for the frames from here on (no frame in flight): the backend starts
  // afresh, as at a scene cut.
  void change_processor(const ProcessingConfig& config) {
    processor_ = create_processor(config, options_.verbose);
    if (options_.verbose) fmt::print(stderr, "hazefree: {}: new processing options ({})\n", io::redact_urls(options_.input), processor_->description());
  }

  // After a frame processed: DCP's figures of the frame (index, omega, light: the --stats line and
  // the counters), the watcher's look at it, and, for a processor without those figures, when
  // asked for (sample_atmospheric_light), the atmospheric light about once a second.
  void frame_processed(const WorkItem& item, const ImageView& output, int lane) {
    // SPEC 13: DCP's figures of this frame (no wait: they came back with it).
    const DehazeStats stats = processor_->dehaze_stats(lane);
    haze_index_.store(stats.valid ? stats.haze_index : -1.f);
    omega_.store(stats.valid ? stats.omega : -1.f);
    if (stats_file_) {
      // pts_time: the frame's time in the output, which the writer starts at its first picture
      // after -ss and on a live source (OutputOptions::start_at_zero); a job's chunk is told
      // where its joined output starts.
      if (!stats_zero_pts_) {
        stats_zero_pts_ = options_.hooks.output_zero_pts ? reader_.delivered_pts(*options_.hooks.output_zero_pts)
                          : options_.output_options.start_at_zero ? item.frame->pts
                                                                  : 0;
      }
      const io::VideoInfo& video = reader_.video();
      stats_file_->write(item.frame->index, static_cast<double>(item.frame->pts - *stats_zero_pts_) * video.time_base.value(),
                         stats);
    }
    if (stats.valid) {
      for (std::size_t c = 0; c < 3; ++c) light_[c].store(stats.atmospheric_light[c]);
      light_sampled_us_ = steady_us();
    } else if (options_.hooks.sample_atmospheric_light && steady_us() - light_sampled_us_ >= 1000000) {
      const std::array<float, 3> light = processor_->atmospheric_light();
      for (std::size_t c = 0; c < 3; ++c) light_[c].store(light[c]);
      light_sampled_us_ = steady_us();
    }
    if (options_.hooks.on_frame_processed) options_.hooks.on_frame_processed(item.device_picture ? ImageView{} : item.frame->view, output);
  }

  // Overlapped processing: frame n+1's upload and frame n-1's download run while frame n
  // computes, each frame on lane n % lanes; output order is input order.
  void process_loop_laned() {
    std::deque<InFlight> flight;
    int next_lane = 0;
    try {
      for (;;) {
        // Nothing waiting: finish the frames in flight now rather than holding them until the
        // next input arrives (a live source's next frame is a frame period away).
        std::optional<WorkItem> item = in_queue_.try_pop();
        if (!item) {
          while (!flight.empty()) complete_front(flight);
          item = in_queue_.pop();
        }
        if (!item) break;
        if (!item->frame) {
          if (flight.empty()) {
            if (!out_queue_.push(*item)) return;
          } else {
            flight.push_back({std::move(*item), nullptr, -1});
          }
          continue;
        }
        await_start_state();
        if (item->restart) {  // the state update must not mix the two connections' frames
          while (!flight.empty()) complete_front(flight);
          processor_->reset();
        }
        if (std::optional<ProcessingConfig> change = processing_change()) {
          while (!flight.empty()) complete_front(flight);
          change_processor(*change);
          next_lane = 0;
        }
        // A processor made anew by a change may have no lanes (the CPU backend): lane 0 then.
        const int lane = next_lane;
        next_lane = (next_lane + 1) % std::max(1, processor_->lanes());
        // The lane must be free: complete everything up to its previous frame.
        while (std::any_of(flight.begin(), flight.end(), [&](const InFlight& f) { return f.lane == lane; }))
          complete_front(flight);
        PooledFrame* out = out_pool_->acquire();
        if (!out) {
          in_pool_->release(item->frame);
          break;
        }
        const std::int64_t t0 = steady_us();
        processor_->enqueue(lane, item->pixels(), out->view);
        process_busy_us_ += steady_us() - t0;
        flight.push_back({std::move(*item), out, lane});
      }
      while (!flight.empty()) complete_front(flight);
    } catch (const Aborted&) {
    }
    // Frames still in flight after an abort: let their lanes finish before the pools go away.
    for (InFlight& f : flight) {
      if (f.lane >= 0) {
        try {
          processor_->wait(f.lane);
        } catch (...) {
        }
      }
      in_pool_->release(f.item.frame);
      out_pool_->release(f.out);
    }
    if (flight.empty()) out_queue_.close();
  }

  void process_loop() {
    if (lanes_ > 0) return process_loop_laned();
    while (std::optional<WorkItem> item = in_queue_.pop()) {
      if (item->frame) {
        await_start_state();
        if (item->restart) processor_->reset();
        if (std::optional<ProcessingConfig> change = processing_change()) change_processor(*change);
        PooledFrame* in = item->frame;
        PooledFrame* out = out_pool_->acquire();
        if (!out) {
          in_pool_->release(in);
          return;
        }
        const std::int64_t t0 = steady_us();
        if (options_.side_by_side) {
          processor_->process(in->view, result_.view());
          compose_side_by_side(in->view, result_.view(), out->view);
          // SPEC 13: the frame's haze index in the corner.
          if (const DehazeStats stats = processor_->dehaze_stats(0); stats.valid)
            draw_label(out->view, fmt::format("HAZE {:.2f}", stats.haze_index).c_str());
        } else {
          processor_->process(in->view, out->view);
        }
        process_busy_us_ += steady_us() - t0;
        frame_processed(*item, out->view, 0);
        carry_timing(*in, *out);
        in_pool_->release(in);
        item->frame = out;
      }
      if (!out_queue_.push(*item)) {
        out_pool_->release(item->frame);
        return;
      }
    }
    out_queue_.close();
  }

  void encode_loop() {
    while (std::optional<WorkItem> item = out_queue_.pop()) {
      if (item->frame) {
        PooledFrame* frame = item->frame;
        const std::int64_t t0 = steady_us();
        // The encoder references the pool buffer (no copy) and gives it back when done with it.
        const std::int64_t capture_us = frame->capture_us;  // the frame may be reused once released
        FramePool* pool = &*out_pool_;
        writer_->write_frame(frame->view, frame->pts, frame->duration, [pool, frame] { pool->release(frame); });
        encode_busy_us_ += steady_us() - t0;
        const std::int64_t latency = steady_us() - capture_us;
        latency_sum_us_ += static_cast<double>(latency);
        latency_max_us_ = std::max(latency_max_us_, latency);
        ++latency_histogram_[static_cast<std::size_t>(
            std::clamp<std::int64_t>(latency / 1000, 0, kLatencyBuckets - 1))];
        ++latency_count_;
        progress_->frame_done(writer_->frames_written());
        if (options_.hooks.on_frame_written) {
          FrameWritten written;
          written.frames = writer_->frames_written();
          written.expected_frames = expected_frames_;
          written.frames_dropped = frames_dropped_.load();
          written.reconnects = reconnects_.load();
          written.seconds_lost = seconds_lost_.load();
          written.latency_seconds = static_cast<double>(latency) / 1e6;
          for (std::size_t c = 0; c < 3; ++c) written.atmospheric_light[c] = light_[c].load();
          written.haze_index = haze_index_.load();
          written.omega = omega_.load();
          options_.hooks.on_frame_written(written);
        }
      } else {
        writer_->write_packet(std::move(item->packet));
      }
    }
    if (!failure_.failed()) {
      const std::int64_t t0 = steady_us();
      writer_->finish();  // flushes the encoder's delayed frames
      if (stats_file_) stats_file_->close();
      encode_busy_us_ += steady_us() - t0;
    }
  }

  std::chrono::steady_clock::time_point created_;
  const RunOptions& options_;
  io::MediaReader reader_;
  std::unique_ptr<FrameProcessor> processor_;
  BoundedQueue<WorkItem> in_queue_;
  BoundedQueue<WorkItem> estimate_queue_;  // decoder -> estimator (the fused analysis only)
  BoundedQueue<WorkItem> out_queue_;
  std::atomic<bool> start_state_applied_{false};  // set by the processing stage, read by the decoder
  std::optional<FramePool> in_pool_;
  std::optional<FramePool> out_pool_;
  // What a held chunk decoded while its backend was being made (read_ahead), and whether that
  // reached the input's end; the decoder thread's from then on.
  std::vector<WorkItem> read_ahead_;
  bool read_ahead_ended_ = false;
  Image result_;
  std::optional<io::MediaWriter> writer_;
  std::optional<Progress> progress_;
  std::int64_t expected_frames_ = 0;
  bool stop_asked() const { return options_.hooks.stop != nullptr && options_.hooks.stop->load(); }
  int out_width_ = 0;
  int lanes_ = 0;
  bool hold_on_device_ = false;  // set before the stages start; read by the decoder
  FirstFailure failure_;
  // Each counter is written by one thread only and read after the joins.
  std::int64_t frames_in_ = 0;
  // Written by the decoder thread, read by the encoder thread's on_frame_written too.
  std::atomic<std::int64_t> frames_dropped_{0};
  // Reconnections (decoder thread).
  bool restart_pending_ = false;
  std::atomic<int> reconnects_{0};
  std::atomic<double> seconds_lost_{0.0};
  // DCP's atmospheric light, sampled by the processing stage about once a second (reading it
  // waits for the GPU's lanes) for on_frame_written.
  std::array<std::atomic<float>, 3> light_{};
  std::atomic<float> haze_index_{-1.f}, omega_{-1.f};  // DCP's figures of the last frame (SPEC 13)
  std::optional<FrameStatsFile> stats_file_;            // --stats
  std::optional<std::int64_t> stats_zero_pts_;          // the output's zero on the frames' clock (processing stage)
  std::int64_t light_sampled_us_ = 0;
  std::string input_lost_;
  struct AbortPipe {  // readable once abort_all() ran: wakes a reconnection back-off
    int ends[2] = {-1, -1};
    AbortPipe() {
      if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) ends[0] = ends[1] = -1;
    }
    ~AbortPipe() {
      for (int fd : ends)
        if (fd >= 0) close(fd);
    }
    int operator[](int i) const { return ends[i]; }
  } abort_pipe_;
  double latency_sum_us_ = 0;
  std::int64_t latency_max_us_ = 0;
  std::int64_t latency_count_ = 0;
  // Latencies in 1 ms buckets (the last one holds everything beyond): percentiles of a run of
  // any length in fixed memory.
  static constexpr int kLatencyBuckets = 2000;
  std::vector<std::int64_t> latency_histogram_ = std::vector<std::int64_t>(kLatencyBuckets, 0);
  double latency_percentile(double fraction) const {
    const auto wanted = static_cast<std::int64_t>(fraction * static_cast<double>(latency_count_));
    std::int64_t seen = 0;
    for (int ms = 0; ms < kLatencyBuckets; ++ms) {
      seen += latency_histogram_[static_cast<std::size_t>(ms)];
      // The bucket's middle, but never beyond the largest latency seen (which may lie in it).
      if (seen > wanted) return std::min(ms + 0.5, static_cast<double>(latency_max_us_) / 1000.0);
    }
    return static_cast<double>(latency_max_us_) / 1000.0;
  }
  std::int64_t decode_busy_us_ = 0;
  std::int64_t estimate_busy_us_ = 0;  // written by the estimator thread, read after it is joined
  std::int64_t process_busy_us_ = 0;
  std::int64_t encode_busy_us_ = 0;
};

}  // namespace

void request_stop() {
  g_stoppers.fetch_add(1);
  g_stop_requested.store(true);
  if (const int fd = g_stop_pipe_write.load(); fd >= 0) (void)!write(fd, "x", 1);
  // Every reader sees the stop state in FFmpeg's interrupt callback, but a read() waiting on a
  // silent pipe must be made to return (EINTR) before FFmpeg asks it again.
  if (const int wake = g_wake_signal.load(); wake != 0) {
    for (const std::atomic<pthread_t>& slot : g_reading_threads) {
      const pthread_t reading = slot.load();
      if (reading != pthread_t{} && !pthread_equal(reading, pthread_self())) pthread_kill(reading, wake);
    }
  }
  g_stoppers.fetch_sub(1);
}

void set_stop_wake_signal(int signal_number) { g_wake_signal.store(signal_number); }

int stop_request_fd() { return stop_pipe_read_end(); }

void name_this_thread(const char* name) { pthread_setname_np(pthread_self(), name); }

bool stop_requested() { return g_stop_requested.load(); }

RunSummary run_pipeline(const RunOptions& options) { return run_pipeline(options, nullptr); }

RunSummary run_pipeline(const RunOptions& options, std::unique_ptr<FrameProcessor> processor) {
  std::future<std::unique_ptr<FrameProcessor>> pending;
  if (processor) {
    std::promise<std::unique_ptr<FrameProcessor>> given;
    given.set_value(std::move(processor));
    pending = given.get_future();
  }
  return run_pipeline(options, std::move(pending));
}

RunSummary run_pipeline(const RunOptions& options, std::future<std::unique_ptr<FrameProcessor>> pending) {
  const auto created = std::chrono::steady_clock::now();
  stop_pipe_read_end();  // created before any stop request can need it
  // Lines added to an existing file replace nothing: no -y needed for it.
  check_stats_file(options.stats_path, options.input, options.output,
                   options.output_options.overwrite || options.stats_append);
  if (!pending.valid()) {
    // With NVDEC the backend starts after the reader: FFmpeg's CUDA device takes the GPU's
    // primary context only with its own scheduling flags, which it can set only while the
    // context does not exist yet (else "incompatible flags", depending on who came first).
    const auto policy = options.input_options.hwdec.empty() ? std::launch::async : std::launch::deferred;
    pending = std::async(policy, [&options] { return create_processor(options.processing, options.verbose); });
  }
  std::optional<Pipeline> pipeline;
  try {
    pipeline.emplace(options, std::move(pending), created);
  } catch (const io::OpenInterrupted&) {
    // Stopped before the input opened: nothing was read and no output was made.
    RunSummary summary;
    summary.interrupted = true;
    summary.processor = "none (stopped while the input opened)";
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - created).count();
    return summary;
  }
  return pipeline->run();
}

}  // namespace hazefree
