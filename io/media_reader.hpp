// Demuxing and decoding with libavformat/libavcodec (send/receive API, frame threading).
// The only part of the project, with media_writer, that knows FFmpeg. Decoded pictures are
// delivered in one of the PixelFormats of common/image.hpp at their own depth (8 to 16 bits per
// sample, SPEC 7; converted with libswscale when the decoder's own format is not one of them,
// with a warning), or at the depth asked for (InputOptions::depth); other streams' packets are
// handed out untouched for stream copy.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/image.hpp"

struct AVPacket;
struct AVFormatContext;

namespace hazefree::io {

// Every I/O failure: the message names the input/output and the cause, on one line,
// e.g. "in.mp4: No such file or directory".
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The span asked for (InputOptions::trim) lies outside the input: -ss past its end, or no
// picture in the span. A usage error for the caller.
struct TrimError : IoError {
  using IoError::IoError;
};

// No packet arrived within InputOptions::stall_timeout_seconds (a frozen camera or server).
struct StallError : IoError {
  using IoError::IoError;
};

// The run was stopped (InputOptions::stop_requested, interrupt()) before the input was open:
// nothing was read, there is nothing to write.
struct OpenInterrupted : IoError {
  using IoError::IoError;
};

struct Rational {
  int num = 0;
  int den = 1;
  double value() const { return den ? double(num) / den : 0.0; }
};

// An owned packet of a non-video input stream, passed through to the writer unchanged.
struct PacketDeleter {
  void operator()(AVPacket* packet) const;
};
using Packet = std::unique_ptr<AVPacket, PacketDeleter>;

struct InputOptions {
  std::string url;              // path, URL, "-" for stdin, /dev/videoN
  std::string format;           // forced input format ("v4l2", "rawvideo", "yuv4mpegpipe"...), empty = probe
  std::map<std::string, std::string> format_options;  // demuxer options (video_size, framerate, pixel_format...)
  int decoder_threads = 0;      // codec frame threads, 0 = automatic
  bool low_delay = false;       // live sources: no probing delay, low-delay decoding
  std::string hwdec;            // "cuda": decode on the GPU (NVDEC), pictures stay in device memory
  int hw_frames_in_flight = 16; // decoded GPU pictures the caller may hold at once (hwdec)
  int hwdec_device = 0;         // hwdec: the CUDA GPU that decodes (index as CUDA counts them)
  // No packet for this long (opening included) is a stall: the blocked read is woken by FFmpeg's
  // interrupt callback and read()/reopen() throw StallError. 0 = wait for ever.
  double stall_timeout_seconds = 0.0;
  // The run's own stop state. FFmpeg's interrupt callback asks it while opening and reading (at
  // least every 100 ms while it waits on a network source), and once it answers true the blocked
  // call ends: the reader counts as interrupted (read() returns Item::end, opening throws
  // OpenInterrupted). Called from the reading thread and FFmpeg's own I/O threads: thread-safe
  // and cheap. Empty: only interrupt() stops the reader.
  std::function<bool()> stop_requested;
  // A chunk of a job (SPEC 8): demuxing starts at the keyframe at or before `seek_dts` (video time
  // base; no seek when `seek` is false), pictures whose pts lies outside [first_pts, end_pts) are
  // decoded but not delivered, and the other streams are left out (the join copies them once).
  struct Chunk {
    bool active = false;
    bool seek = false;
    std::int64_t seek_dts = 0;
    std::int64_t first_pts = INT64_MIN;
    std::int64_t end_pts = INT64_MAX;
  };
  Chunk chunk;
  // A span of the input, as ffmpeg's input options -ss, -t/-to and -frames:v give it: demuxing
  // starts at the keyframe at or before `start_seconds` (on the input's clock, from its start
  // time; no seek in chunk mode, whose own seek covers it), pictures before it are decoded but
  // not delivered, delivery ends at `end_seconds` or after `max_frames` pictures, the other
  // streams' packets outside the span are left out, and every timestamp is moved so that the
  // span starts at zero.
  struct Trim {
    double start_seconds = 0.0;
    double end_seconds = std::numeric_limits<double>::infinity();
    std::int64_t max_frames = 0;  // 0: no limit (not counted in chunk mode: the chunk's range bounds it)
    std::int64_t end_pts = INT64_MAX;  // or the span ends at this pts of the video (a job's join)
    bool active() const {
      return start_seconds > 0 || end_seconds < std::numeric_limits<double>::infinity() || max_frames > 0 ||
             end_pts != INT64_MAX;
    }
  };
  Trim trim;
  // Every timestamp moved so that the first picture delivered is at zero (the other streams'
  // packets by as much): a live source's own clock (an encoder's uptime, 1099.7 s) means nothing
  // to its recording. Not with a trimmed span, which starts at zero anyway.
  bool start_at_zero = false;
  // Bits per sample of the delivered frames: 0 keeps the source's own depth; 8 to 16 converts
  // every picture to that depth (--output-depth): limited-range samples by a shift (v << s up,
  // rounded down), full-range ones by v * M_out / M_in rounded (see io/depth_convert.hpp).
  int depth = 0;
  // Only the other streams' packets come out of read(): the video is described from its first
  // picture, then its packets are dropped undecoded, or not read where the demuxer can skip them
  // (MP4, MOV: the stream is discarded); a job's join takes its video elsewhere.
  bool other_streams_only = false;
};

// A network URL (rtsp://, tcp://, udp://, srt://...) or a camera (v4l2 and the other capture
// devices): the sources that can stall, drop and come back, and that reopen() can reconnect.
bool is_network_or_camera(const InputOptions& options);

// NVDEC shares the GPU's primary CUDA context with the processing backend, which FFmpeg can set
// up only before anything else in the process has started that context. A program that starts
// CUDA itself before opening its NVDEC inputs (the benchmark, a job's worker threads) calls this
// first, once per GPU: the context is then made with NVDEC's flags and kept for the process's
// life. Throws IoError when the GPU cannot decode.
void prepare_gpu_decoding(int device);

// ffmpeg's time syntax: seconds ("90", "1.5") or [-][HH:]MM:SS[.m...] ("1:30", "00:01:30.5");
// false when `text` is neither.
bool parse_time_text(const std::string& text, double* seconds);

// FFmpeg's own checks of the demuxer options of raw input and cameras, as the demuxer makes them
// when the input opens: a demuxer name (the capture devices' among them), a frame size (WxH or a
// name such as hd720, both sides above 0), a frame rate (25, 30000/1001, ntsc; above 0), a pixel
// format name (yuv420p).
bool is_input_format(const std::string& name);
bool is_video_size(const std::string& text);
bool is_frame_rate(const std::string& text);
bool is_pixel_format(const std::string& name);

// The presentation time of `seconds` after an input's start (`start_time_us`, the container's
// start time in microseconds) in `time_base`: where a trimmed span starts or ends.
std::int64_t span_pts(std::int64_t start_time_us, double seconds, Rational time_base);

// What the writer needs to know about the input video and its companions.
struct VideoInfo {
  int width = 0;
  int height = 0;
  PixelFormat format = PixelFormat::yuv420p;  // format of the frames read() delivers
  int depth = 8;                              // their bits per sample (8..16)
  int source_depth = 8;                       // the decoder's own bits per sample
  std::string source_pixel_format;            // the decoder's own (e.g. "yuv420p10le")
  ColorMatrix matrix = ColorMatrix::bt601;    // resolved (unspecified -> SPEC 3 default)
  ColorRange range = ColorRange::limited;     // resolved (unspecified -> limited for YUV)
  int color_primaries = 2;                    // AVColorPrimaries, 2 = unspecified
  int color_transfer = 2;                     // AVColorTransferCharacteristic
  int color_space = 2;                        // AVColorSpace as the stream said it
  int color_range_tag = 0;                    // AVColorRange as the stream said it
  Rational time_base;                         // of the input video stream
  Rational frame_rate;                        // average (or guessed) frame rate, 0/1 unknown
  Rational sample_aspect_ratio;               // 0/1 unknown
  double rotation_degrees = 0.0;              // display matrix side data, counter-clockwise (av_display_rotation_get)
  std::int64_t frame_count = 0;               // from the container, 0 = unknown
  double duration_seconds = 0.0;              // 0 = unknown
  bool still_image = false;                   // png/jpeg/bmp single picture
  bool live = false;                          // device, pipe or network source
  std::string codec_name;
  std::string container_name;
  bool on_device = false;                     // hwdec: pictures are in GPU memory (nv12; P010/P016 above 8 bits)
};

// One decoded picture; its pixels belong to the reader and stay valid until the next read().
struct DecodedFrame {
  ImageView view;
  std::int64_t pts = 0;        // in VideoInfo::time_base (best effort timestamp)
  std::int64_t duration = 0;   // in VideoInfo::time_base, 0 unknown
  std::int64_t capture_us = 0; // steady-clock microseconds when the decoder returned it
  // hwdec: the view's planes are device pointers, and this keeps the GPU picture alive (the
  // decoder reuses it once every copy of this handle is gone).
  std::shared_ptr<void> device_picture;
};

class MediaReader {
 public:
  enum class Item { video_frame, packet, end };

  explicit MediaReader(const InputOptions& options);  // throws IoError
  ~MediaReader();
  MediaReader(const MediaReader&) = delete;
  MediaReader& operator=(const MediaReader&) = delete;

  const VideoInfo& video() const;
  // Next item in input order: a decoded frame (see frame()), a packet of another stream to copy
  // (see take_packet()), or the end (decoder flushed). Throws IoError on fatal errors;
  // recoverable decode errors are skipped, counted and warned about.
  Item read();
  const DecodedFrame& frame() const;
  Packet take_packet();

  // Makes a blocked read() return Item::end soon (safe from any thread, e.g. a signal path).
  void interrupt();
  // interrupt() was called, or InputOptions::stop_requested said stop.
  bool interrupted() const;
  // Closes the source and opens it again (a live source that stalled, failed or ended); throws
  // IoError/StallError when it cannot. video() keeps describing the first connection: later
  // pictures are converted to it, and timestamps continue monotonically from the last picture
  // delivered, the new connection's first picture coming after the real (wall-clock) gap.
  // Other streams' packets go on being copied when the new connection has the same streams.
  void reopen();
  int decode_errors() const;
  // Pictures decoded, then dropped before the span (-ss) or a job's chunk (its pre-roll).
  std::int64_t pictures_dropped() const;
  // A presentation time of the input's video on its own clock (VideoInfo::time_base), moved to
  // the clock that frame() gives the first connection's pictures on (the span's, after -ss).
  std::int64_t delivered_pts(std::int64_t input_pts) const;
  // Input streams other than the chosen video stream, copied packet for packet.
  const std::vector<int>& copied_stream_indices() const;
  // For the writer (same layer): the demuxer context, the chosen video stream index.
  AVFormatContext* format_context() const;
  int video_stream_index() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hazefree::io
