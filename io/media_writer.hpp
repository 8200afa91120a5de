// Encoding and muxing with libavcodec/libavformat: the processed video (libx264 by default, any
// encoder by name), the input's other streams copied packet for packet, timestamps, frame rate,
// aspect ratio, colour tags and rotation kept. Writes to a temporary name and renames it on
// finish(), so a failed run never leaves a file that looks complete.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "io/media_reader.hpp"
#include "common/image.hpp"

namespace hazefree::io {

class PacketReader;

struct OutputOptions {
  std::string url;            // path, URL or "-" for stdout
  std::string format;         // forced container; empty = from the name ("-" -> yuv4mpegpipe)
  std::string encoder;        // empty = libx264 for video containers, the muxer's default otherwise
  int crf = 20;               // for libx264/libx265 (ignored elsewhere)
  std::string preset = "veryfast";
  bool low_latency = false;   // --live: zerolatency tune, no B-frames
  bool overwrite = false;     // -y
  std::map<std::string, std::string> encoder_options;
};

class MediaWriter {
 public:
  // Sets up the output from the reader's streams; `width`/`height`/`format`/`depth` of the frames
  // that write_frame() will receive (the processed frames; e.g. twice the width for
  // side-by-side). The video is encoded at `depth` bits: an encoder that cannot hold them is
  // refused with one line naming encoders that can. Throws IoError (existing output without
  // overwrite, output equal to input, unknown encoder...).
  MediaWriter(const OutputOptions& options, const MediaReader& source, int width, int height,
              PixelFormat format, int depth = 8);
  // Stream copy of encoded video (a job's join): the video stream takes the parameters of
  // `encoded`'s video stream and write_video_packet() its packets; everything else as above
  // (metadata and the other streams from `source`, the temporary name).
  MediaWriter(const OutputOptions& options, const MediaReader& source, const PacketReader& encoded);
  ~MediaWriter();  // without finish(): removes the partial output
  MediaWriter(const MediaWriter&) = delete;
  MediaWriter& operator=(const MediaWriter&) = delete;

  // Encodes one frame; pts/duration in the source video time base. The pixels are copied, so the
  // caller's buffer is free again when this returns.
  void write_frame(const ImageView& frame, std::int64_t pts, std::int64_t duration);
  // The same without the copy: the encoder references the caller's pixels, and `release` runs
  // (on some encoder thread, or inside this call) once nothing refers to them any more. The
  // planes must lie in one allocation that stays valid until then.
  void write_frame(const ImageView& frame, std::int64_t pts, std::int64_t duration,
                   std::function<void()> release);
  // One packet of the copied video (the stream-copy constructor), timestamps in `time_base`.
  void write_video_packet(Packet packet, Rational time_base);
  // Copies one packet of a source stream (from MediaReader::take_packet()).
  void write_packet(Packet packet);
  // Flushes the encoder, writes the trailer, moves the temporary file into place.
  void finish();
  std::int64_t frames_written() const;
  // Steady-clock microseconds when the last encoded video packet came out (latency measurement).
  std::int64_t last_packet_us() const;
  std::string encoder_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hazefree::io
