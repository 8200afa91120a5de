#include "pipeline/pipeline.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "io/media_reader.hpp"
#include "io/media_writer.hpp"
#include "kernels/processor.hpp"
#include "kernels/side_by_side.hpp"
#include "pipeline/bounded_queue.hpp"
#include "pipeline/frame_pool.hpp"
#include "pipeline/processor_factory.hpp"
#include "pipeline/progress.hpp"

namespace hazefree {
namespace {

std::atomic<bool> g_stop_requested{false};
std::atomic<io::MediaReader*> g_active_reader{nullptr};

std::int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What travels between the stages: a frame from a pool, or a packet of another stream.
struct WorkItem {
  PooledFrame* frame = nullptr;
  io::Packet packet;
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

class Pipeline {
 public:
  explicit Pipeline(const RunOptions& options)
      : options_(options),
        reader_(options.input_options),
        processor_(create_processor(options.processing, options.verbose)),
        in_queue_(static_cast<std::size_t>(options.queue_depth)),
        out_queue_(static_cast<std::size_t>(options.queue_depth)) {
    const io::VideoInfo& video = reader_.video();
    const PixelFormat format = video.format;
    out_width_ = options.side_by_side ? side_by_side_width(format, video.width) : video.width;
    // Frames in flight: a full queue, one being filled, one being worked on.
    const std::size_t pool_size = static_cast<std::size_t>(options.queue_depth) + 2;
    in_pool_.emplace(pool_size, format, video.width, video.height);
    out_pool_.emplace(pool_size, format, out_width_, video.height);
    if (options.side_by_side) result_ = Image(format, video.width, video.height);
    writer_.emplace(options.output_options, reader_, out_width_, video.height, format);
    progress_.emplace(options.quiet, video.frame_count);
    if (options.verbose) {
      fmt::print(stderr, "hazefree: {} {}x{} {} ({}) -> {} on {}\n", options.input, video.width,
                 video.height, video.codec_name, video.source_pixel_format,
                 options.output, processor_->description());
    }
  }

  RunSummary run() {
    const auto start = std::chrono::steady_clock::now();
    g_active_reader.store(&reader_);
    if (g_stop_requested.load()) reader_.interrupt();
    std::thread decoder([this] { guarded([this] { decode_loop(); }); });
    std::thread encoder([this] { guarded([this] { encode_loop(); }); });
    guarded([this] { process_loop(); });
    decoder.join();
    encoder.join();
    g_active_reader.store(nullptr);
    failure_.rethrow_if_failed();

    RunSummary summary;
    summary.frames_in = frames_in_;
    summary.frames_out = writer_->frames_written();
    summary.frames_dropped = frames_dropped_;
    summary.packets_copied = packets_copied_;
    summary.decode_errors = reader_.decode_errors();
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary.interrupted = g_stop_requested.load();
    summary.processor = processor_->description();
    if (latency_count_ > 0) {
      summary.latency_mean_ms = latency_sum_us_ / 1000.0 / latency_count_;
      summary.latency_max_ms = latency_max_us_ / 1000.0;
    }
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
    for (WorkItem& item : in_queue_.abort()) in_pool_->release(item.frame);
    for (WorkItem& item : out_queue_.abort()) out_pool_->release(item.frame);
    in_pool_->close();
    out_pool_->close();
  }

  PooledFrame* acquire_input_frame() {
    if (options_.live) {
      if (PooledFrame* frame = in_pool_->try_acquire()) return frame;
      // Behind: drop the oldest waiting frame rather than block the source.
      if (auto oldest = in_queue_.remove_oldest_if([](const WorkItem& w) { return w.frame != nullptr; })) {
        ++frames_dropped_;
        return oldest->frame;
      }
    }
    return in_pool_->acquire();
  }

  void decode_loop() {
    for (;;) {
      if (g_stop_requested.load()) break;
      const io::MediaReader::Item item = reader_.read();
      if (item == io::MediaReader::Item::end) break;
      WorkItem work;
      if (item == io::MediaReader::Item::packet) {
        work.packet = reader_.take_packet();
      } else {
        const io::DecodedFrame& decoded = reader_.frame();
        PooledFrame* frame = acquire_input_frame();
        if (!frame) return;  // aborted
        copy_image(decoded.view, frame->view);
        frame->pts = decoded.pts;
        frame->duration = decoded.duration;
        frame->capture_us = decoded.capture_us ? decoded.capture_us : steady_us();
        frame->index = frames_in_++;
        work.frame = frame;
      }
      if (!in_queue_.push(work)) {
        in_pool_->release(work.frame);
        return;
      }
    }
    in_queue_.close();
  }

  void process_loop() {
    while (std::optional<WorkItem> item = in_queue_.pop()) {
      if (item->frame) {
        PooledFrame* in = item->frame;
        PooledFrame* out = out_pool_->acquire();
        if (!out) {
          in_pool_->release(in);
          return;
        }
        if (options_.side_by_side) {
          processor_->process(in->view, result_.view());
          compose_side_by_side(in->view, result_.view(), out->view);
        } else {
          processor_->process(in->view, out->view);
        }
        out->pts = in->pts;
        out->duration = in->duration;
        out->capture_us = in->capture_us;
        out->index = in->index;
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
        writer_->write_frame(frame->view, frame->pts, frame->duration);
        const std::int64_t latency = steady_us() - frame->capture_us;
        latency_sum_us_ += static_cast<double>(latency);
        latency_max_us_ = std::max(latency_max_us_, latency);
        ++latency_count_;
        out_pool_->release(frame);
        progress_->frame_done(writer_->frames_written());
      } else {
        writer_->write_packet(std::move(item->packet));
        ++packets_copied_;
      }
    }
    if (!failure_.failed()) writer_->finish();
  }

  const RunOptions& options_;
  io::MediaReader reader_;
  std::unique_ptr<FrameProcessor> processor_;
  BoundedQueue<WorkItem> in_queue_;
  BoundedQueue<WorkItem> out_queue_;
  std::optional<FramePool> in_pool_;
  std::optional<FramePool> out_pool_;
  Image result_;
  std::optional<io::MediaWriter> writer_;
  std::optional<Progress> progress_;
  int out_width_ = 0;
  FirstFailure failure_;
  // Each counter is written by one thread only and read after the joins.
  std::int64_t frames_in_ = 0;
  std::int64_t frames_dropped_ = 0;
  std::int64_t packets_copied_ = 0;
  double latency_sum_us_ = 0;
  std::int64_t latency_max_us_ = 0;
  std::int64_t latency_count_ = 0;
};

}  // namespace

void request_stop() {
  g_stop_requested.store(true);
  if (io::MediaReader* reader = g_active_reader.load()) reader->interrupt();
}

bool stop_requested() { return g_stop_requested.load(); }

RunSummary run_pipeline(const RunOptions& options) {
  Pipeline pipeline(options);
  return pipeline.run();
}

}  // namespace hazefree
