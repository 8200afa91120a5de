// One camera of the service: a thread that runs the library's live run of its input to its
// output (decoder thread, lanes, encoder thread and reconnection inside the run), starts it
// again after a failure with back-off, counts what the metrics and the API show, keeps the
// latest pictures for snapshots when someone looks, and hands option changes to the run
// between frames.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hazefree/hazefree.hpp"
#include "serve/service_config.hpp"

namespace hazefree::serve {

// Latency buckets of the histogram (seconds, upper bounds; +Inf beyond).
inline constexpr std::array<double, 15> kLatencyBuckets = {0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05,
                                                          0.075,  0.1,   0.2,    0.5,  1,     2,    5};

struct StreamStatus {
  // "starting", "running", "stalled" (starting or running, but no picture for the stall
  // threshold: the source is silent or away and the run waits or reconnects), "retrying" (the
  // run failed and starts again), "stopped".
  std::string state;
  std::string error;       // the last failure's one line (empty when none), URL secrets hidden
  // Since the last picture written (or since the stream started, before the first one).
  double seconds_since_frame = 0.0;
  std::int64_t frames = 0;
  std::int64_t dropped = 0;
  std::int64_t reconnects = 0;  // in the run (SPEC 9) and restarts of the run after a failure
  double seconds_lost = 0.0;
  double fps = 0.0;
  double latency_seconds = 0.0;  // of the last frame
  std::array<std::int64_t, kLatencyBuckets.size() + 1> latency_counts{};  // per bucket, last = +Inf
  double latency_sum = 0.0;
  std::int64_t latency_count = 0;
  std::array<float, 3> atmospheric_light{};
  // DCP (SPEC 13): the last frame's haze index in [0, 1] and the omega it was dehazed with (the
  // configured one, or less with dcp.auto_strength); -1 before the first frame and outside DCP.
  float haze_index = -1.f;
  float omega = -1.f;
};

// One sample of a stream's haze index: the time (Unix seconds) and the last frame's index then.
struct HazeSample {
  double time = 0.0;
  float haze_index = 0.f;
};
// The history of the haze index: a sample a second (the last DCP frame's index) over 5 minutes.
inline constexpr double kHazeSampleSeconds = 1.0;
inline constexpr std::size_t kHazeSamples = 300;

class Stream {
 public:
  // `hls_dir`: where an "hls" output writes its playlist and segments.
  Stream(StreamConfig config, std::string hls_dir);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void start();
  // No picture for this long is a stall: input.timeout where the stream sets one above 0, else
  // kDefaultStallSeconds (the service watches the stream even where the run waits for ever).
  static constexpr double kDefaultStallSeconds = 5.0;
  double stall_seconds() const { return stall_seconds_; }
  // Finishes the output (drain, flush, trailer) and joins the thread; request_stop() only asks.
  void request_stop();
  void stop();

  const StreamConfig& config() const { return config_; }
  StreamStatus status() const;
  // The haze index's samples of the last kHazeSamples seconds, oldest first (none outside DCP).
  std::vector<HazeSample> haze_history() const;
  // The options the stream runs with now (keys given in the file or changed since).
  Options options() const;
  // Checks `changes` with the options table (processor keys only) and applies them from the
  // next frame; throws OptionError and changes nothing when one is refused.
  Options change_options(const Options& changes);
  // The latest picture (input or output) as JPEG, at most `max_width` across (0: full size):
  // waits up to `wait` for one taken after the call. nullopt when the stream has none.
  std::optional<std::vector<std::uint8_t>> snapshot(bool output, int max_width, std::chrono::milliseconds wait);
  // The folder of an "hls" output (empty otherwise).
  const std::string& hls_dir() const { return hls_dir_; }

 private:
  // A copy of a host frame that outlives the run's call.
  struct Picture {
    std::array<std::vector<std::uint8_t>, 3> planes;
    Frame frame;
    void copy_from(const Frame& source);
  };

  void run_loop();
  void run_once();
  void on_progress(const RunProgress& progress);
  void on_frame(const Frame& input, const Frame& output);
  bool take_changes(Options& changes);
  bool wait_or_stopped(double seconds);

  StreamConfig config_;
  std::string hls_dir_;
  const bool loops_file_;  // preview only, of a file: looped at its own rate
  const double stall_seconds_;
  double file_rate_ = 0;   // its frames per second (set by the stream's thread before a run)
  std::chrono::steady_clock::time_point run_started_{};
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  mutable std::mutex mutex_;  // everything below
  std::condition_variable changed_;
  Options options_;
  Options pending_;  // changes not yet taken by the run
  std::atomic<bool> has_pending_{false};
  StreamStatus status_;
  StreamStatus finished_runs_;  // the counters of the runs before this one
  bool after_failure_ = false;  // the run was started again after a failure
  std::int64_t run_frames_ = 0, run_dropped_ = 0, run_reconnects_ = 0;
  double run_lost_ = 0.0;
  std::chrono::steady_clock::time_point rate_since_{};
  std::chrono::steady_clock::time_point started_{};     // start()
  std::chrono::steady_clock::time_point last_frame_{};  // the last picture written, of any run
  std::string recording_;  // the file the last run recorded into (a file output), "" before it
  std::int64_t rate_frames_ = 0;  // the frames of every run at rate_since_
  std::deque<HazeSample> haze_history_;  // at most kHazeSamples
  std::chrono::steady_clock::time_point haze_sampled_{};
  // Snapshots: pictures are copied only while someone looked in the last seconds.
  std::atomic<std::int64_t> wanted_until_us_{0};
  std::int64_t copied_at_us_ = 0;   // processing thread
  std::uint64_t picture_serial_ = 0;
  std::optional<Picture> input_, output_;
};

}  // namespace hazefree::serve
