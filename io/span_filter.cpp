#include "io/span_filter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "io/av_error.hpp"

namespace hazefree::io {

std::int64_t span_pts(std::int64_t start_time_us, double seconds, Rational time_base) {
  return av_rescale_q(start_time_us + std::llround(seconds * 1e6), AV_TIME_BASE_Q,
                      AVRational{time_base.num, time_base.den});
}

namespace detail {

SpanFilter::SpanFilter(const InputOptions& options, std::string name)
    : trim_(options.trim), chunk_(options.chunk), name_(std::move(name)) {}

void SpanFilter::start(AVFormatContext& demuxer, int video_index, const std::vector<int>& copied_streams) {
  copied_streams_ = copied_streams;
  active_ = trim_.active();
  if (active_) {
    const AVRational time_base = demuxer.streams[video_index]->time_base;
    video_time_base_ = time_base;
    const std::int64_t start_time = demuxer.start_time != AV_NOPTS_VALUE ? demuxer.start_time : 0;
    start_time_us_ = start_time;
    origin_us_ = start_time + std::llround(trim_.start_seconds * 1e6);
    first_pts_ = span_pts(start_time, trim_.start_seconds, Rational{time_base.num, time_base.den});
    if (std::isfinite(trim_.end_seconds))
      end_pts_ = span_pts(start_time, trim_.end_seconds, Rational{time_base.num, time_base.den});
    end_pts_ = std::min(end_pts_, trim_.end_pts);
    stream_ended_.assign(demuxer.nb_streams, false);
    if (trim_.start_seconds > 0 && demuxer.duration != AV_NOPTS_VALUE && demuxer.duration > 0 &&
        trim_.start_seconds * 1e6 >= static_cast<double>(demuxer.duration))
      throw TrimError(fmt::format("{}: -ss {}: past the end of the input ({:.3f} s)", display_name(name_),
                                  trim_.start_seconds, demuxer.duration / double(AV_TIME_BASE)));
    // As ffmpeg seeks for -ss: to the keyframe at or before it; the pictures before are dropped.
    if (trim_.start_seconds > 0 && !chunk_.active) seek_to(demuxer, origin_us_);
  }
  if (chunk_.active && chunk_.seek) {
    const int result = av_seek_frame(&demuxer, video_index, chunk_.seek_dts, AVSEEK_FLAG_BACKWARD);
    if (result < 0)
      throw_io(name_, "cannot seek to the chunk's keyframe (dts " + std::to_string(chunk_.seek_dts) + ")", result);
  }
}

void SpanFilter::seek_to(AVFormatContext& demuxer, std::int64_t target_us) { seek_to(demuxer, target_us, target_us); }

void SpanFilter::seek_to(AVFormatContext& demuxer, std::int64_t target_us, std::int64_t seek_ts) {
  seek_us_ = target_us;
  seek_checked_ = false;
  const int result = avformat_seek_file(&demuxer, -1, INT64_MIN, seek_ts, seek_ts, 0);
  if (result < 0) throw_io(name_, fmt::format("cannot seek to -ss {}", trim_.start_seconds), result);
}

void SpanFilter::seek_back(AVFormatContext& demuxer) {
  std::fill(stream_ended_.begin(), stream_ended_.end(), false);
  const std::int64_t target = seek_us_ - std::max<std::int64_t>(1000000, 2 * (origin_us_ - seek_us_));
  if (target > start_time_us_) return seek_to(demuxer, target);
  // The input's first packet, not its start time: a seek to the start time lands past the first
  // keyframe where the decoding times come before it (B-frames: an MPEG-TS seeks by dts, and the
  // first video dts lies before its start time), and decoding would start a GOP later.
  seek_to(demuxer, start_time_us_, INT64_MIN);
}

SpanFilter::PictureVerdict SpanFilter::judge_picture(std::int64_t pts, bool first_connection,
                                                     std::deque<Packet>& released) {
  if (active_) {
    const bool timed = pts != AV_NOPTS_VALUE && first_connection;
    if (!seek_checked_) {
      seek_checked_ = true;
      if (timed && pts > first_pts_ && seek_us_ > start_time_us_) return PictureVerdict::seek_back;
    }
    if (timed && pts < first_pts_) return PictureVerdict::drop;
    const bool counted_out = counting_frames() && frames_kept_ >= trim_.max_frames;
    if ((timed && pts >= end_pts_) || counted_out) {
      // Past the span: the other streams go on up to where its pictures end.
      if (timed) end_pts_ = std::min(end_pts_, pts);
      release_held_before(end_pts_, released);
      held_back_.clear();
      video_ended_ = true;
      return PictureVerdict::video_ended;
    }
  }
  if (chunk_.active) {
    // Pictures come out in presentation order: before the chunk, dropped; past it, the end.
    if (pts != AV_NOPTS_VALUE && pts < chunk_.first_pts) return PictureVerdict::drop;
    if (pts != AV_NOPTS_VALUE && pts >= chunk_.end_pts) return PictureVerdict::end;
  }
  ++frames_kept_;
  if (active_ && counting_frames() && pts != AV_NOPTS_VALUE) {
    latest_kept_pts_ = std::max(latest_kept_pts_, pts);
    release_held_before(latest_kept_pts_, released);
  }
  return PictureVerdict::keep;
}

// A copied packet inside the span is moved to the span's clock; one outside it is left out.
SpanFilter::PacketVerdict SpanFilter::judge_packet(AVPacket& packet, AVRational time_base, bool first_connection) {
  if (!active_ || !first_connection) return PacketVerdict::hand_out;
  const std::int64_t time = packet.pts != AV_NOPTS_VALUE ? packet.pts : packet.dts;
  if (time == AV_NOPTS_VALUE) return video_ended_ ? PacketVerdict::left_out : PacketVerdict::hand_out;
  const std::int64_t first = av_rescale_q(origin_us_, AV_TIME_BASE_Q, time_base);
  // Before a span that starts at the input's start (no -ss): kept as the whole input keeps it (an
  // AAC priming packet at a negative time), as ffmpeg keeps it.
  if (time < first && trim_.start_seconds > 0) return PacketVerdict::left_out;
  if (end_pts_ != INT64_MAX && time >= av_rescale_q(end_pts_, video_time_base_, time_base)) {
    stream_ended_[static_cast<std::size_t>(packet.stream_index)] = true;
    return PacketVerdict::left_out;
  }
  if (packet.pts != AV_NOPTS_VALUE) packet.pts -= first;
  if (packet.dts != AV_NOPTS_VALUE) packet.dts -= first;
  if (counting_frames() && !video_ended_) {
    const std::int64_t video_time = av_rescale_q(time, time_base, video_time_base_);
    if (video_time >= latest_kept_pts_) {
      Packet waiting(av_packet_alloc());
      if (!waiting) throw_io(name_, "out of memory");
      av_packet_move_ref(waiting.get(), &packet);
      held_back_.emplace_back(video_time, std::move(waiting));
      return PacketVerdict::held;
    }
  }
  return PacketVerdict::hand_out;
}

void SpanFilter::release_held_before(std::int64_t pts, std::deque<Packet>& released) {
  std::deque<std::pair<std::int64_t, Packet>> still;
  for (auto& [time, waiting] : held_back_) {
    if (time < pts) released.push_back(std::move(waiting));
    else still.emplace_back(time, std::move(waiting));
  }
  held_back_ = std::move(still);
}

bool SpanFilter::others_ended(bool copying) const {
  if (!copying) return true;
  for (const int index : copied_streams_)
    if (!stream_ended_[static_cast<std::size_t>(index)]) return false;
  return true;
}

void SpanFilter::describe(VideoInfo& info) const {
  if (!active_) return;
  const double end =
      std::min(trim_.end_seconds, info.duration_seconds > 0 ? info.duration_seconds : trim_.end_seconds);
  const double span = std::isfinite(end) ? std::max(0.0, end - trim_.start_seconds) : 0.0;
  info.duration_seconds = span;
  info.frame_count = span > 0 && info.frame_rate.num > 0 ? std::llround(span * info.frame_rate.value()) : 0;
  if (trim_.max_frames > 0)
    info.frame_count = info.frame_count > 0 ? std::min(info.frame_count, trim_.max_frames) : trim_.max_frames;
}

void SpanFilter::refuse_empty() const {
  if (active_ && trim_.start_seconds > 0 && !chunk_.active)
    throw TrimError(fmt::format("{}: -ss {}: no picture at or after it (past the end of the video)",
                                display_name(name_), trim_.start_seconds));
}

}  // namespace detail
}  // namespace hazefree::io
