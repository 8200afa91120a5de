// hazefree: the public C++ API (SPEC 10). Dark channel prior dehazing, global HE and sliding
// AHE/CLAHE on frames in memory (host planes, or device planes on a caller's CUDA stream), and
// the whole file/stream run of the command-line tool. No FFmpeg or CUDA header is needed to use
// it: CUDA streams travel as `void*` (a `cudaStream_t`), device planes as plain pointers.
//
//   #include <hazefree/hazefree.hpp>
//   hazefree::Processor dehaze({{"mode", "dcp"}, {"dcp.omega", "0.9"}});
//   dehaze.process(hazefree::Frame::rgb24(pixels, width, height, width * 3),
//                  hazefree::Frame::rgb24(result, width, height, width * 3));
//
// Link with the CMake target hazefree::hazefree (find_package(hazefree CONFIG)) or with
// `pkg-config --cflags --libs hazefree`.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hazefree/version.hpp"  // HAZEFREE_VERSION_MAJOR, _MINOR, _PATCH, _STRING

namespace hazefree {

// ---- errors -------------------------------------------------------------------------------

// An unknown configuration key or a value outside its range. what() is one line naming the key
// and the accepted values, e.g. "dcp.omega = 2 is outside (0, 1]"; key() is the key.
class OptionError : public std::invalid_argument {
 public:
  OptionError(const std::string& key, const std::string& message)
      : std::invalid_argument(message), key_(key) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// A frame that does not fit the call (null plane, stride shorter than a row, a depth outside 8..16,
// output of another size, format or depth, overlapping input and output). what() names the
// argument and the expectation.
class FrameError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The CUDA backend was asked for (backend=cuda, or a device frame) and this build or machine
// has none; what() says why (no driver, no GPU, built without CUDA, compute capability).
class GpuUnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Any other failure (reading or writing media, processing) is a std::runtime_error whose what()
// is one line naming the input or output and the cause.

// ---- configuration keys ---------------------------------------------------------------------

// Options by key, as in a TOML preset or `--set key=value`: {"mode", "ahe"}, {"ahe.clip", "2"},
// {"backend", "cpu"}. Values are text in the preset syntax ("5/255", "true", "10,20,300,200").
using Options = std::map<std::string, std::string>;

// One key of the configuration table (the same table drives the CLI, presets and --set).
struct ConfigKeyInfo {
  std::string name;           // "dcp.omega"
  std::string help;           // effect and unit
  std::string range;          // accepted values, e.g. "(0, 1]"
  std::string default_value;  // the default as text, e.g. "0.95" ("dcp" for mode)

  // For bindings that need typed values (the GStreamer element's properties): the kind of value;
  // for integer and number keys the interval of `range` as numbers (infinite where it has no
  // bound; an end in "(" or ")" is itself refused); for choice keys the accepted values. A key
  // that takes words besides a number (input.timeout: "auto or [0, 86400]") is of kind text.
  enum class Kind : std::uint8_t { integer, number, boolean, choice, text };
  Kind kind = Kind::text;
  double minimum = -std::numeric_limits<double>::infinity();
  double maximum = std::numeric_limits<double>::infinity();
  bool minimum_excluded = false;
  bool maximum_excluded = false;
  std::vector<std::string> choices;
  // True for the keys a Processor uses; false for those of the file run only (input.*,
  // output.*, pipeline.*, side_by_side), which a Processor accepts and ignores.
  bool processor_key = false;
  // The modes ("dcp", "he", "ahe") whose Processor uses the key: all three for mode, backend and
  // threads, "he" and "ahe" for color, "dcp" for dcp.*; empty where processor_key is false.
  std::vector<std::string> modes;
  // Integer keys that take odd values only (ahe.window).
  bool odd_only = false;
};

// Every configuration key, in the table's order (mode, color, backend, threads, dcp.*, he.*,
// ahe.*, input.*, output.*, pipeline.*).
const std::vector<ConfigKeyInfo>& configuration_keys();

// Checks a set of options without processing anything: throws OptionError for the first
// unknown key or bad value (the same checks Processor and run() make).
void validate_options(const Options& options);

// ---- frames in memory -----------------------------------------------------------------------

// Pixel layouts of frames in memory. At 8 bits per sample (Frame::depth, the default) a sample
// is one byte; at 9 to 16 bits it is a native-endian std::uint16_t holding the value in its low
// `depth` bits (FFmpeg's yuv420p10le, gray16le, rgb48le; GStreamer's I420_10LE, GRAY16_LE),
// except nv12, whose samples hold it in their high bits (P010, P016: value << (16 - depth)).
// Strides stay in bytes.
enum class FrameFormat : std::uint8_t {
  rgb24,  // one plane of interleaved R, G, B (width * 3 samples per row at least); rgb48 at 16
  gray8,  // one plane; gray10, gray12, gray16 at depth
  i420,   // Y, U, V planes; U and V halved in both directions (rounded up): yuv420p
  nv12,   // Y plane, then one plane of interleaved U, V pairs halved in both directions
  yuv422p,  // Y, U, V planes; U and V halved horizontally
  yuv444p,  // Y, U, V planes of full size
};

// YCbCr matrix of YUV frames (and of grey frames, for DCP's grey -> RGB); `automatic` takes
// BT.709 for heights >= 720, else BT.601 (as for a stream that does not say).
enum class FrameMatrix : std::uint8_t { automatic, bt601, bt709, bt2020 };
// Sample range: `automatic` is `full` for rgb24 and gray8, `limited` (16-235, or 16 << (d - 8)
// to 235 << (d - 8) at depth d) for YUV.
enum class FrameRange : std::uint8_t { automatic, limited, full };

// One plane: a pointer to its first row and the bytes from one row to the next.
struct Plane {
  std::uint8_t* data = nullptr;
  std::ptrdiff_t stride = 0;
};

// A non-owning view of one frame. The planes' sizes follow from the format: plane 0 is
// width x height samples (rgb24: width pixels of 3 samples), the chroma planes as the format says
// ((width + 1) / 2 for halved directions). Host frames point to CPU memory; device frames
// (Processor::process_device) to CUDA device memory of the current device.
struct Frame {
  FrameFormat format = FrameFormat::rgb24;
  int width = 0;
  int height = 0;
  std::array<Plane, 3> planes{};  // as many as the format has (1, 2 or 3)
  FrameMatrix matrix = FrameMatrix::automatic;
  FrameRange range = FrameRange::automatic;
  // Bits per sample, 8 to 16 (two-byte samples above 8; see FrameFormat). Frames are processed
  // at their own depth (SPEC 7): codes 0..2^depth - 1, HE over 2^depth bins.
  int depth = 8;

  // Frames of one plane at 8 bits.
  static Frame rgb24(void* data, int width, int height, std::ptrdiff_t stride);
  static Frame gray8(void* data, int width, int height, std::ptrdiff_t stride);
  // Frames of one plane of two-byte samples holding `depth` (9..16) bits: 16-bit RGB (rgb48,
  // 16-bit PNG/TIFF stills) and grey 10, 12 or 16.
  static Frame rgb48(void* data, int width, int height, std::ptrdiff_t stride, int depth = 16);
  static Frame gray16(void* data, int width, int height, std::ptrdiff_t stride, int depth = 16);
  // Planar YUV 4:2:0 (GStreamer I420, or I420_10LE and I420_12LE at depth 10 and 12): Y, U and
  // V each with its own pointer and stride.
  static Frame i420(void* y, std::ptrdiff_t y_stride, void* u, std::ptrdiff_t u_stride, void* v,
                    std::ptrdiff_t v_stride, int width, int height, int depth = 8);
  // Planar YUV 4:2:2 and 4:4:4 (Y42B, Y444 and their _10LE, _12LE, _16LE forms).
  static Frame yuv422p(void* y, std::ptrdiff_t y_stride, void* u, std::ptrdiff_t u_stride, void* v,
                       std::ptrdiff_t v_stride, int width, int height, int depth = 8);
  static Frame yuv444p(void* y, std::ptrdiff_t y_stride, void* u, std::ptrdiff_t u_stride, void* v,
                       std::ptrdiff_t v_stride, int width, int height, int depth = 8);
  // NV12: Y, then interleaved UV; at depth 10, 12 or 16 the P010, P012 and P016 layouts (the
  // value in the high bits of each two-byte sample, as NVDEC gives them).
  static Frame nv12(void* y, std::ptrdiff_t y_stride, void* uv, std::ptrdiff_t uv_stride,
                    int width, int height, int depth = 8);
};

// Number of planes of a format (1 to 3).
int plane_count(FrameFormat format);

// A frame processor: one algorithm with its parameters on one backend, keeping the temporal
// state of one video stream (DCP's atmospheric light, HE's temporal histogram) across calls.
// Workspaces are allocated on the first frame of a size and format and reused: feed frames of
// one stream in presentation order; call reset() before another stream. Not thread-safe: one
// thread at a time per Processor (several Processors may run at once).
class Processor {
 public:
  // `options`: any configuration key (configuration_keys()), typically "mode" (dcp | he | ahe),
  // "backend" (auto | cuda | cpu; auto takes the GPU when one is usable), "color", "dcp.*",
  // "he.*", "ahe.*", "threads". Keys about files (input.*, output.*, pipeline.*) are accepted
  // and ignored. Throws OptionError for an unknown key or a bad value, GpuUnavailableError for
  // backend=cuda without a usable GPU.
  explicit Processor(const Options& options = {});
  // The same from a braced list: Processor({{"mode", "he"}}) (one pair would otherwise also
  // match the move constructor).
  explicit Processor(std::initializer_list<Options::value_type> options) : Processor(Options(options)) {}
  ~Processor();
  Processor(Processor&&) noexcept;
  Processor& operator=(Processor&&) noexcept;
  Processor(const Processor&) = delete;
  Processor& operator=(const Processor&) = delete;

  // Processes one host frame into `out` (same format, size and depth, not overlapping `in`);
  // blocks until `out` is written. On the CUDA backend the frame is uploaded and downloaded (page-locked
  // memory makes that faster). Throws FrameError for a frame that does not fit.
  void process(const Frame& in, const Frame& out);

  // Processes one frame in CUDA device memory into `out` (device memory, same format, size and
  // depth, not overlapping) on the caller's stream `cuda_stream` (a cudaStream_t; nullptr is the legacy
  // default stream). Returns once the work is queued: `out` is ready when the stream reaches
  // this point; `in` must be ready on that stream. No host copy of the pixels is made. Needs the
  // CUDA backend: throws GpuUnavailableError on the CPU backend. I420/YUV frames need the same
  // stride for U and V here (std::invalid_argument otherwise).
  void process_device(const Frame& in, const Frame& out, void* cuda_stream);

  // Frames in flight on the CUDA backend's lanes (each a stream with its own device frames), so
  // that the copies of one host frame overlap the processing of another. lanes() is how many may
  // be in flight at once: 2 on the CUDA backend, 0 on the CPU backend, where enqueue() processes
  // the frame before it returns and wait() returns at once. enqueue() starts host frame `in` into
  // `out` (as process() takes them) on `lane` (0 <= lane < max(lanes(), 1)) and returns; neither
  // may be touched until wait(lane), which blocks until `out` is written and rethrows the frame's
  // errors. Enqueue frames in presentation order: the temporal state is updated frame by frame
  // in that order whatever their lanes; a lane's previous frame must have been waited for.
  // Host memory from allocate_pinned() makes the copies asynchronous (into ordinary memory the
  // download waits for the frame's processing).
  int lanes() const;
  void enqueue(int lane, const Frame& in, const Frame& out);
  void wait(int lane);

  // Forgets the temporal state (a new stream).
  void reset();

  // DCP's atmospheric light A (R, G, B in [0, 1]) used for the last frame; zeros before the
  // first frame and in the he/ahe modes. Waits for device work in flight.
  std::array<float, 3> atmospheric_light() const;
  // DCP's haze index h in [0, 1] of the last frame (0 clear, rising with the haze; SPEC 13), which
  // dcp.auto_strength follows; 0 before the first frame and in the he/ahe modes. Waits for
  // device work in flight.
  float haze_index() const;

  // The backend in words: "cpu (8 threads)", "cuda (NVIDIA H200)".
  std::string description() const;
  // True when frames run on the CUDA backend (process_device is available).
  bool on_gpu() const;
  // The effective value of a configuration key (its text as --print-config writes it).
  std::string option(const std::string& key) const;

 private:
  friend class FrameReader;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Page-locked host memory (cudaMallocHost) for the frames of Processor::enqueue(), so that the
// CUDA backend's copies run while the CPU goes on; nullptr without the CUDA backend or a GPU (use
// ordinary memory then). Free it with free_pinned().
void* allocate_pinned(std::size_t bytes);
void free_pinned(void* memory);

// True when this build has the CUDA backend and a usable GPU is present; otherwise `why_not`
// (when given) says why.
bool gpu_available(std::string* why_not = nullptr);

// Device memory in use on the current GPU (this process's and others'), in bytes; 0 without the
// CUDA backend or a GPU. Starts the GPU's context when none runs yet.
std::size_t gpu_memory_used();

// ---- the file / stream run --------------------------------------------------------------------

// Progress of a run, given to the callback after each frame written (on the encoder thread: keep
// it short, and synchronise what it touches).
struct RunProgress {
  std::int64_t frames = 0;           // frames written so far
  std::int64_t expected_frames = 0;  // from the container; 0 when unknown
  double seconds = 0.0;              // since the start of the run
  // Live runs (pipeline.live = true; SPEC 9): frames dropped when processing fell behind,
  // reconnections of the source and the seconds lost to them, this frame's latency from decoded
  // to encoded, and DCP's atmospheric light A (R, G, B in [0, 1]; sampled about once a second,
  // zeros in the he/ahe modes).
  std::int64_t frames_dropped = 0;
  int reconnects = 0;
  double seconds_lost = 0.0;
  double latency_seconds = 0.0;
  std::array<float, 3> atmospheric_light{};
  // DCP (SPEC 13): the last frame's haze index and the omega it was dehazed with (-1 in the
  // he/ahe modes).
  float haze_index = -1.f;
  float omega = -1.f;
};
using ProgressCallback = std::function<void(const RunProgress&)>;

// How a run is watched and stopped.
struct RunControl {
  ProgressCallback progress;                  // may be empty
  const std::atomic<bool>* cancel = nullptr;  // when it becomes true: stop reading, drain, flush
                                              // and finish the output (a valid, shorter file)
  bool overwrite = false;                     // replace an existing output (refused otherwise)
  bool verbose = false;                       // the CLI's -v lines on stderr; without it, as
                                              // without -v, none of FFmpeg's and the encoders'
                                              // (x264's statistics) while the run goes on
                                              // (FFmpeg's log level is the host's after it)
  // Watching a run: called on the processing thread after each frame with the decoded picture
  // (width 0 when it stays on the GPU, input.hwdec) and its result, host frames valid during
  // the call only (copy what is kept, and keep it short: the next frame waits).
  std::function<void(const Frame& input, const Frame& output)> on_frame;
  // Tuning a run: called on the processing thread before each frame; when it returns true,
  // the keys it put in `changes` (keys a Processor uses: ConfigKeyInfo::processor_key) apply
  // over the run's options from that frame on, with a new processor whose temporal state
  // starts afresh (as at a scene cut); input and output go on. Check the keys first with
  // validate_options(): a key the run cannot take then fails the run (OptionError).
  std::function<bool(Options& changes)> option_changes;
  // The `stats` file (one JSON line a frame): the lines are added to an existing file instead
  // of replacing it, which is then taken without `overwrite`. For a run started again that
  // goes on with the same file (the service's stream after its input ended or failed).
  bool append_stats = false;
};

struct RunResult {
  std::int64_t frames_in = 0;       // decoded video frames
  std::int64_t frames_out = 0;      // encoded video frames
  std::int64_t frames_dropped = 0;  // pipeline.live: frames dropped when processing fell behind
  std::int64_t packets_copied = 0;  // packets of audio/subtitle/data streams copied
  double seconds = 0.0;
  bool cancelled = false;           // stopped by `cancel`; the output is finished and valid
  std::string processor;            // the backend in words
};

// Runs the whole pipeline of the command-line tool: decodes `input` (path, URL, "-"), processes
// every frame and writes `output` with audio, timestamps and metadata kept, exactly as
// `hazefree [--set key=value ...] input output` does. `options`: any configuration key. Throws
// OptionError for bad options, std::runtime_error naming the input or output on failure (the
// partial output is removed).
RunResult run(const std::string& input, const std::string& output, const Options& options = {},
              const RunControl& control = {});

// A frame as one JPEG picture (previews, snapshots), scaled down to at most `max_width` pixels
// across when that is above 0, at FFmpeg's mjpeg quality scale `quality` (2 best .. 31).
// Throws FrameError for a frame that does not fit, std::runtime_error when encoding fails.
std::vector<std::uint8_t> encode_jpeg(const Frame& frame, int max_width = 0, int quality = 5);

// ---- decoded, processed frames for a program to consume -------------------------------------------

// Reads `input` and hands out its processed video frames one by one as RGB (decoding, then the
// Processor of `options` on the stream's own format and depth, exactly as run() processes them,
// then the conversion to RGB with the stream's matrix and range, at 8 bits or at the frames'
// depth).
class FrameReader {
 public:
  // `options`: as for run() (input.* keys apply to the input). Throws OptionError,
  // std::runtime_error naming the input when it cannot be opened.
  explicit FrameReader(const std::string& input, const Options& options = {});
  ~FrameReader();
  FrameReader(FrameReader&&) noexcept;
  FrameReader& operator=(FrameReader&&) noexcept;

  int width() const;
  int height() const;
  // Frames per second as the container says (0 when unknown), and the frame count (0 unknown).
  double frame_rate() const;
  std::int64_t frame_count() const;
  // Bits per sample of the frames as they are processed: the stream's own (10 for a 10-bit HEVC
  // clip), or output.depth when that option asks for another.
  int depth() const;

  // Decodes and processes the next frame into `rgb`: a host rgb24 frame of width() x height() at
  // 8 bits, or at depth() (rgb48 codes of that depth) to keep the precision of a deeper stream.
  // An 8-bit `rgb` of a deeper stream gets the processed frame reduced to 8 bits as
  // output.depth = 8 reduces it (a shift for limited range, rounded scaling for full range)
  // before the conversion. Returns false at the end of the input.
  bool next(const Frame& rgb);
  // The processor (its atmospheric_light(), description()).
  const Processor& processor() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hazefree
