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

// An encoder option (OutputOptions) the encoder does not know or whose value it refuses: a
// configuration error, found before the encoder opens.
struct EncoderOptionError : IoError {
  using IoError::IoError;
};

struct OutputOptions {
  std::string url;            // path, URL or "-" for stdout
  std::string format;         // forced container; empty = from the name ("-" -> yuv4mpegpipe)
  std::string encoder;        // empty = libx264 for video containers, the muxer's default otherwise
  int crf = 20;               // for libx264/libx265 (ignored elsewhere)
  std::string preset = "veryfast";
  bool low_latency = false;   // --live: zerolatency tune, no B-frames
  bool overwrite = false;     // -y
  bool audio = true;          // false (-an): the input's audio streams are left out
  bool subtitles = true;      // false (-sn): its subtitle streams too
  // The earliest timestamp written becomes zero, every stream moved by as much (after -ss: the
  // span's first picture or packet, which are rarely at the -ss position itself).
  bool start_at_zero = false;
  // Rate control and GOP (ffmpeg's -b:v, -maxrate, -bufsize, -g; empty or 0: the encoder's own),
  // profile and tune; then the encoder's options by name (its private ones included, e.g.
  // x264-params). Each is set before the encoder opens: one it does not know, or a value it
  // refuses, is an IoError naming the option.
  std::string bitrate;
  std::string maxrate;
  std::string bufsize;
  int keyint = 0;
  std::string profile;
  std::string tune;
  std::string pixel_format;   // the encoder's pixel format (ffmpeg's -pix_fmt); empty = the nearest it takes
  std::map<std::string, std::string> encoder_options;
};

// True when `options` writes one still picture to a plain name (image2 without a %d pattern):
// every frame would replace the one before.
bool writes_one_picture(const OutputOptions& options);
// True when `options` writes pictures rather than a video stream: image2 (one picture or a %d
// sequence) and image2pipe.
bool writes_pictures(const OutputOptions& options);
// Why the file `url` cannot be written as an output, or empty: its folder missing, not a folder
// or not writable; the input itself (`input`, a path or empty); a file already there without
// `overwrite`, a directory, or a file that cannot be replaced (chattr +i, +a, another user's in a
// sticky folder). URLs, pipes and devices are not refused. A run checks before its first frame is
// decoded, a job before it plans.
std::string output_problem(const std::string& url, const std::string& input, bool overwrite);
// Why `folder` cannot hold a file, as output_problem() says it, or empty where it is a folder:
// "folder a/b does not exist", or "a is not a folder" where the nearest part of it that exists is
// a file.
std::string folder_problem(const std::string& folder);

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
  // Packets of other streams (audio, subtitles, data) written into the output: those the output
  // leaves out (-an, a format without audio) or that begin before the first picture are not.
  std::int64_t packets_copied() const;
  // Steady-clock microseconds when the last encoded video packet came out (latency measurement).
  std::int64_t last_packet_us() const;
  std::string encoder_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hazefree::io
