#include "serve/stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <string>

#include "io/url.hpp"

namespace hazefree::serve {
namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Rows of a plane of `frame` (the chroma of 4:2:0 layouts is halved in height).
int plane_rows(const Frame& frame, int plane) {
  const bool halved = plane > 0 && (frame.format == FrameFormat::i420 || frame.format == FrameFormat::nv12);
  return halved ? (frame.height + 1) / 2 : frame.height;
}

const ConfigKeyInfo* find_key(const std::string& name) {
  for (const ConfigKeyInfo& key : configuration_keys())
    if (key.name == name) return &key;
  return nullptr;
}

// A preview-only stream of a file (no "://", not a device or a pipe) loops it at its own rate.
bool loops_a_file(const StreamConfig& config) {
  const std::string& input = config.input;
  return config.output.empty() && input != "-" && input.find("://") == std::string::npos &&
         input.rfind("/dev/", 0) != 0 && input.rfind("pipe:", 0) != 0;
}

// The file a run of a stream records into: the configured name for the first recording, then
// NAME-2.EXT, NAME-3.EXT, ... (the first that does not exist), so that a stream started again
// after its input ended or failed never writes over what it recorded. `previous` is the last
// run's name ("" before the first); a run that wrote nothing leaves its name free again.
std::string next_recording(const std::string& configured, const std::string& previous) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (previous.empty()) return configured;
  if (!fs::exists(previous, error)) return previous;
  const fs::path path(configured);
  for (int n = 2;; ++n) {
    const fs::path candidate = path.parent_path() / (path.stem().string() + "-" + std::to_string(n) + path.extension().string());
    if (!fs::exists(candidate, error)) return candidate.string();
  }
}

// input.timeout when the stream sets one above 0 (a bad value was refused with the configuration).
double stall_seconds_of(const StreamConfig& config) {
  const auto timeout = config.options.find("input.timeout");
  if (timeout != config.options.end()) {
    try {
      const double seconds = std::stod(timeout->second);
      if (seconds > 0) return seconds;
    } catch (const std::exception&) {
    }
  }
  return Stream::kDefaultStallSeconds;
}

constexpr std::int64_t kPictureInterval_us = 100000;  // copies for snapshots: at most 10 a second
constexpr std::int64_t kWantedFor_us = 5000000;       // for this long after a look

}  // namespace

void Stream::Picture::copy_from(const Frame& source) {
  frame = source;
  for (int i = 0; i < plane_count(source.format); ++i) {
    const auto p = static_cast<std::size_t>(i);
    const std::size_t bytes = static_cast<std::size_t>(source.planes[p].stride) * static_cast<std::size_t>(plane_rows(source, i));
    planes[p].assign(source.planes[p].data, source.planes[p].data + bytes);
    frame.planes[p].data = planes[p].data();
  }
}

Stream::Stream(StreamConfig config, std::string hls_dir)
    : config_(std::move(config)),
      hls_dir_(config_.output == "hls" ? std::move(hls_dir) : std::string()),
      loops_file_(loops_a_file(config_)),
      stall_seconds_(stall_seconds_of(config_)) {
  options_ = config_.options;
  status_.state = "starting";
}

Stream::~Stream() { stop(); }

void Stream::start() {
  {
    std::lock_guard lock(mutex_);
    started_ = std::chrono::steady_clock::now();
  }
  thread_ = std::thread([this] { run_loop(); });
}

void Stream::request_stop() {
  {
    std::lock_guard lock(mutex_);  // a wait between its check and its sleep still sees it
    cancel_.store(true);
  }
  changed_.notify_all();
}

void Stream::stop() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

StreamStatus Stream::status() const {
  std::lock_guard lock(mutex_);
  StreamStatus s = status_;
  s.frames = finished_runs_.frames + run_frames_;
  s.dropped = finished_runs_.dropped + run_dropped_;
  s.reconnects = finished_runs_.reconnects + run_reconnects_;
  s.seconds_lost = finished_runs_.seconds_lost + run_lost_;
  // The rate over the last second or so; nothing written for two seconds is 0 fps.
  const auto now = std::chrono::steady_clock::now();
  if (now - rate_since_ > std::chrono::seconds(2)) s.fps = 0.0;
  const auto since = last_frame_ != std::chrono::steady_clock::time_point{} ? last_frame_ : started_;
  if (since != std::chrono::steady_clock::time_point{})
    s.seconds_since_frame = std::chrono::duration<double>(now - since).count();
  // A run that waits on a silent source, or reconnects to one that went away, is not running.
  if ((s.state == "running" || s.state == "starting") && s.seconds_since_frame >= stall_seconds_) {
    s.state = "stalled";
    if (s.error.empty())
      s.error = fmt::format("no picture for {:.1f} s (stall threshold {:g} s)", s.seconds_since_frame, stall_seconds_);
  }
  return s;
}

std::vector<HazeSample> Stream::haze_history() const {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double oldest = now - static_cast<double>(kHazeSamples) * kHazeSampleSeconds;
  std::lock_guard lock(mutex_);
  std::vector<HazeSample> out;
  out.reserve(haze_history_.size());
  for (const HazeSample& sample : haze_history_)  // a stream that stalled keeps none older than the window
    if (sample.time >= oldest) out.push_back(sample);
  return out;
}

Options Stream::options() const {
  std::lock_guard lock(mutex_);
  return options_;
}

Options Stream::change_options(const Options& changes) {
  for (const auto& [key, value] : changes) {
    const ConfigKeyInfo* info = find_key(key);
    if (!info) throw OptionError(key, fmt::format("unknown configuration key '{}'", key));
    if (!info->processor_key)
      throw OptionError(key, fmt::format("{}: cannot change while the stream runs (set it in the configuration file)", key));
    std::string why_not;
    if (key == "backend" && value == "cuda" && !gpu_available(&why_not))
      throw OptionError(key, fmt::format("backend = cuda: {}", why_not));
  }
  std::lock_guard lock(mutex_);
  Options merged = options_;
  for (const auto& [key, value] : changes) merged[key] = value;
  validate_options(merged);
  options_ = merged;
  for (const auto& [key, value] : changes) pending_[key] = value;
  has_pending_.store(true);
  return options_;
}

bool Stream::take_changes(Options& changes) {
  if (!has_pending_.load()) return false;
  std::lock_guard lock(mutex_);
  changes = std::move(pending_);
  pending_.clear();
  has_pending_.store(false);
  return !changes.empty();
}

std::optional<std::vector<std::uint8_t>> Stream::snapshot(bool output, int max_width, std::chrono::milliseconds wait) {
  const std::int64_t asked = now_us();
  wanted_until_us_.store(asked + kWantedFor_us);
  std::unique_lock lock(mutex_);
  const std::uint64_t serial = picture_serial_;
  changed_.wait_for(lock, wait, [&] { return picture_serial_ != serial || cancel_.load(); });
  const std::optional<Picture>& picture = output ? output_ : input_;
  if (!picture || picture->frame.width == 0) return std::nullopt;
  Picture owned = *picture;  // encoded without holding the stream's lock
  lock.unlock();
  for (int i = 0; i < plane_count(owned.frame.format); ++i)
    owned.frame.planes[static_cast<std::size_t>(i)].data = owned.planes[static_cast<std::size_t>(i)].data();
  return encode_jpeg(owned.frame, max_width);
}

void Stream::on_frame(const Frame& input, const Frame& output) {
  const std::int64_t now = now_us();
  if (now > wanted_until_us_.load() || now - copied_at_us_ < kPictureInterval_us) return;
  copied_at_us_ = now;
  std::lock_guard lock(mutex_);
  if (!input_) input_.emplace();
  if (!output_) output_.emplace();
  input_->copy_from(input);
  output_->copy_from(output);
  ++picture_serial_;
  changed_.notify_all();
}

void Stream::on_progress(const RunProgress& progress) {
  if (file_rate_ > 0) {  // a file plays at its own rate: the encoder thread waits, and the run with it
    const auto due = run_started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(static_cast<double>(progress.frames) / file_rate_));
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, due, [this] { return cancel_.load(); });
  }
  std::lock_guard lock(mutex_);
  status_.state = "running";
  status_.error.clear();
  last_frame_ = std::chrono::steady_clock::now();
  if (after_failure_) {
    ++finished_runs_.reconnects;
    after_failure_ = false;
  }
  run_frames_ = progress.frames;
  run_dropped_ = progress.frames_dropped;
  run_reconnects_ = progress.reconnects;
  run_lost_ = progress.seconds_lost;
  status_.latency_seconds = progress.latency_seconds;
  status_.latency_sum += progress.latency_seconds;
  ++status_.latency_count;
  const auto bucket = std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), progress.latency_seconds);
  ++status_.latency_counts[static_cast<std::size_t>(bucket - kLatencyBuckets.begin())];
  status_.atmospheric_light = progress.atmospheric_light;
  status_.haze_index = progress.haze_index;
  status_.omega = progress.omega;
  const auto now = std::chrono::steady_clock::now();
  // A sample of the haze index a second (DCP frames only), the oldest dropped beyond the window.
  if (progress.haze_index >= 0.f && now - haze_sampled_ >= std::chrono::duration<double>(kHazeSampleSeconds)) {
    haze_sampled_ = now;
    const double time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    haze_history_.push_back({time, progress.haze_index});
    while (haze_history_.size() > kHazeSamples) haze_history_.pop_front();
  }
  const double span = std::chrono::duration<double>(now - rate_since_).count();
  if (span >= 1.0) {
    const std::int64_t frames = finished_runs_.frames + progress.frames;  // of every run so far
    status_.fps = span < 3.0 ? static_cast<double>(frames - rate_frames_) / span : 0.0;
    rate_since_ = now;
    rate_frames_ = frames;
  }
}

bool Stream::wait_or_stopped(double seconds) {
  std::unique_lock lock(mutex_);
  return !changed_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return cancel_.load(); });
}

void Stream::run_once() {
  Options options;
  {
    std::lock_guard lock(mutex_);
    options = options_;
    pending_.clear();
    has_pending_.store(false);
    run_frames_ = run_dropped_ = run_reconnects_ = 0;
    run_lost_ = 0.0;
    // The rate's window goes on over runs (a looping file's next pass): only the first starts it.
    if (rate_since_ == std::chrono::steady_clock::time_point{}) rate_since_ = std::chrono::steady_clock::now();
  }
  if (loops_file_) {
    // Not live: the file's frames are all shown, at the file's own rate (25 when it says none).
    if (file_rate_ == 0) file_rate_ = FrameReader(config_.input, {{"backend", "cpu"}, {"threads", "1"}}).frame_rate();
    if (file_rate_ <= 0) file_rate_ = 25;
  } else {
    options.emplace("pipeline.live", "true");
  }
  run_started_ = std::chrono::steady_clock::now();
  std::string output = config_.output;
  if (output.empty()) {  // preview only: frames are encoded to nothing
    output = "-";
    options["output.format"] = "null";
    options.emplace("output.encoder", "rawvideo");
  } else if (output == "hls") {
    output = "file://" + hls_dir_ + "/index.m3u8";
    options["output.format"] = "hls";
  } else {
    if (!config_.format.empty()) options["output.format"] = config_.format;
    // A file, not a URL: one recording per run (a URL's receiver takes each run as it comes).
    if (output.find("://") == std::string::npos && output != "-" && output.rfind("pipe:", 0) != 0)
      output = recording_ = next_recording(config_.output, recording_);
  }
  RunControl control;
  control.cancel = &cancel_;
  control.overwrite = true;
  {
    // The stats file (key `stats`) is started afresh by the stream's first run that writes a
    // frame, as the command line's -y replaces it; the runs after it (a looping file's next
    // pass, a run started again after a failure) add their lines to it.
    std::lock_guard lock(mutex_);
    control.append_stats = finished_runs_.frames > 0;
  }
  control.progress = [this](const RunProgress& p) { on_progress(p); };
  control.on_frame = [this](const Frame& in, const Frame& out) { on_frame(in, out); };
  control.option_changes = [this](Options& changes) { return take_changes(changes); };
  run(config_.input, output, options, control);
}

void Stream::run_loop() {
  static constexpr double kFirstBackOff = 0.5, kLongestBackOff = 8.0;
  double back_off = kFirstBackOff;
  while (!cancel_.load()) {
    std::string failure;
    try {
      run_once();
    } catch (const std::exception& e) {
      failure = io::redact_urls(e.what());  // the API, the page and the log show it
    }
    std::unique_lock lock(mutex_);
    finished_runs_.frames += run_frames_;
    finished_runs_.dropped += run_dropped_;
    finished_runs_.reconnects += run_reconnects_;
    finished_runs_.seconds_lost += run_lost_;
    const bool produced = run_frames_ > 0;
    if (produced) back_off = kFirstBackOff;
    run_frames_ = run_dropped_ = run_reconnects_ = 0;
    run_lost_ = 0.0;
    // status_.fps stays: a next pass goes on at that rate, and status() says 0 once two seconds
    // pass without a frame.
    if (cancel_.load()) break;
    if (failure.empty() && loops_file_ && produced) continue;  // the file again from its start
    if (failure.empty()) failure = "the input ended";
    after_failure_ = true;  // the next run's first frame is a reconnection
    status_.state = "retrying";
    status_.error = failure;
    fmt::print(stderr, "hazefree serve: stream '{}': {}; starting again in {:.1f} s\n", config_.name, failure, back_off);
    lock.unlock();
    if (!wait_or_stopped(back_off)) break;
    back_off = std::min(back_off * 2, kLongestBackOff);
  }
  std::lock_guard lock(mutex_);
  status_.state = "stopped";
}

}  // namespace hazefree::serve
