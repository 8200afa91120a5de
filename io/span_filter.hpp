// Private to io/: the part of an input a reader delivers. A span (InputOptions::trim: -ss, -t/-to,
// --frames, a join's end pts) is kept as ffmpeg keeps it: demuxing starts at the keyframe at or
// before its start, the pictures before it are decoded and dropped, delivery ends at its end or
// after its count of pictures, the other streams' packets outside it are left out (those before
// a span that starts at the input's start kept, as the whole input keeps an AAC priming packet at
// a negative time), and its timestamps start at zero. A job's chunk (InputOptions::chunk) starts at its keyframe and keeps
// the pictures of its range of presentation times. Only the first connection is trimmed: a
// reconnected live source has a clock of its own.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
}

#include "io/media_reader.hpp"

namespace hazefree::io::detail {

class SpanFilter {
 public:
  // `name`: the input, for messages.
  SpanFilter(const InputOptions& options, std::string name);

  // On the first connection, its streams known: where the span starts and ends on the input's
  // clock, and the seek to where demuxing starts (the span's start, or the chunk's keyframe).
  // Throws TrimError when -ss lies past the input's end, IoError when a seek fails.
  void start(AVFormatContext& demuxer, int video_index, const std::vector<int>& copied_streams);
  // A span was asked for (-ss, -t/-to, --frames or a join's end).
  bool trimmed() const { return active_; }

  enum class PictureVerdict {
    keep,         // delivered
    drop,         // decoded but before the span (or the chunk): the next one
    seek_back,    // the seek landed past the span's start: flush, then seek_back()
    video_ended,  // past the span: no more pictures; the other streams go on up to its end
    end,          // past the chunk: nothing more to read
  };
  // A decoded picture by its best-effort timestamp. Packets held back for --frames that now lie
  // before the span's last picture move to the end of `released`, in order.
  PictureVerdict judge_picture(std::int64_t pts, bool first_connection, std::deque<Packet>& released);
  // After PictureVerdict::seek_back or no_picture_after_seek(), the caller's decoder flushed:
  // seeks twice as far back as the last time (1 s first), down to the input's first packet.
  void seek_back(AVFormatContext& demuxer);
  // The input ended before a picture came after -ss's seek, which can land past the last
  // keyframe before the span (an MPEG-TS seeks by decoding time, not to a keyframe): the caller
  // flushes its decoder and calls seek_back().
  bool no_picture_after_seek(bool first_connection) const {
    return active_ && first_connection && !seek_checked_ && seek_us_ > start_time_us_;
  }
  // The pictures are past the span (they are then dropped undecoded).
  bool video_ended() const { return video_ended_; }
  // A video packet of a job's chunk that comes before the chunk's keyframe in decode order.
  // Seeking to that keyframe's dts can land a keyframe earlier (MP4 files with B-frames did:
  // a GOP more decoded for every chunk): those packets are left undecoded, since decoding starts
  // cleanly at the chunk's keyframe.
  bool before_chunk_keyframe(const AVPacket& packet, bool first_connection) const {
    return chunk_.active && chunk_.seek && first_connection && packet.dts != AV_NOPTS_VALUE && packet.dts < chunk_.seek_dts;
  }
  // A video packet of a job's chunk whose picture comes before the chunk's first: its pre-roll,
  // needed only as a reference for the pictures after it.
  bool before_chunk(const AVPacket& packet, bool first_connection) const {
    return chunk_.active && first_connection && packet.pts != AV_NOPTS_VALUE && packet.pts < chunk_.first_pts;
  }

  enum class PacketVerdict {
    hand_out,  // delivered now (moved to the span's clock)
    held,      // kept by the filter until the span's end is known (--frames); released later
    left_out,  // outside the span
  };
  // A packet of a copied stream (`time_base`: its stream's).
  PacketVerdict judge_packet(AVPacket& packet, AVRational time_base, bool first_connection);
  // Every copied stream has passed the span's end (or, `copying` false, none is copied any more).
  bool others_ended(bool copying) const;
  // The input ended: every packet still held back moves to the end of `released`.
  void release_all(std::deque<Packet>& released) { release_held_before(INT64_MAX, released); }

  // A picture's timestamp on the span's clock (the span starts at zero).
  std::int64_t on_span_clock(std::int64_t pts, bool first_connection) const {
    return active_ && first_connection ? pts - first_pts_ : pts;
  }
  // The span's length in `info` (duration, frame count), as far as it is known.
  void describe(VideoInfo& info) const;
  // No picture was decoded: throws TrimError when the span starts past the video's end (-ss);
  // otherwise nothing.
  void refuse_empty() const;

 private:
  bool counting_frames() const { return trim_.max_frames > 0 && !chunk_.active; }
  // Seeks for the span starting at `target_us` (microseconds on the input's clock), to `seek_ts`
  // (the same, or INT64_MIN for the input's first packet).
  void seek_to(AVFormatContext& demuxer, std::int64_t target_us);
  void seek_to(AVFormatContext& demuxer, std::int64_t target_us, std::int64_t seek_ts);
  void release_held_before(std::int64_t pts, std::deque<Packet>& released);

  InputOptions::Trim trim_;
  InputOptions::Chunk chunk_;
  std::string name_;
  // The span on the first connection's clock: its start in microseconds, its ends in the video
  // time base (the end moves to the first picture past --frames once seen).
  bool active_ = false;
  AVRational video_time_base_{1, 1};
  std::int64_t origin_us_ = 0;
  std::int64_t first_pts_ = INT64_MIN;
  std::int64_t end_pts_ = INT64_MAX;
  std::int64_t frames_kept_ = 0;
  bool video_ended_ = false;
  std::vector<int> copied_streams_;
  std::vector<bool> stream_ended_;  // by stream index: a packet past the span's end was seen
  // -ss seeks to a keyframe by decoding time: when the first picture decoded after the seek
  // already lies past the span's start (an open GOP's leading pictures need the GOP before), it
  // seeks again from further back.
  std::int64_t start_time_us_ = 0;  // the container's start time
  std::int64_t seek_us_ = 0;        // where the last seek aimed
  bool seek_checked_ = true;
  // --frames: where the span ends is known only once the first picture past it is decoded, so
  // the other streams' packets at or after the last picture kept wait here (with their time in
  // the video time base) until a later picture is kept or the end is known.
  std::int64_t latest_kept_pts_ = INT64_MIN;
  std::deque<std::pair<std::int64_t, Packet>> held_back_;
};

}  // namespace hazefree::io::detail
