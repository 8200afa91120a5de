#include "io/media_writer.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

#include "io/av_error.hpp"
#include "io/logging.hpp"
#include "io/av_owners.hpp"
#include "io/av_pixel_format.hpp"
#include "io/clock.hpp"
#include "io/url.hpp"
#include "io/packet_reader.hpp"

extern "C" {
#include <libavutil/display.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

namespace hazefree::io {

using namespace detail;
namespace fs = std::filesystem;

namespace {

// Muxers that hold exactly one video stream and nothing else.
bool is_single_picture_stream_muxer(const AVOutputFormat& format) {
  const std::string name = format.name;
  return name == "image2" || name == "image2pipe" || name == "yuv4mpegpipe" || name == "rawvideo";
}

// Whether a muxer holds H.264: its own answer where it keeps a list (avformat_query_codec() is 1
// or 0); MPEG transport and program streams and RTP carry it without keeping one (a negative
// answer, "don't know", which gif, webp or ogg give as well).
bool holds_h264(const AVOutputFormat& format) {
  const int answer = avformat_query_codec(&format, AV_CODEC_ID_H264, FF_COMPLIANCE_NORMAL);
  if (answer >= 0) return answer == 1;
  const std::string name = format.name;
  return name == "mpegts" || name == "rtp_mpegts" || name == "rtp" || name == "rtsp" || name == "sap" ||
         name == "mpeg";
}

// Whether a muxer's set-up and header (where some check their streams: MPEG-PS) take a stream of
// these parameters alone, on a scratch output in memory: nothing is written. Muxers that open
// their own files or connections (HLS, RTSP) are not asked.
bool muxer_sets_up(const AVOutputFormat& format, const AVCodecParameters& parameters, AVRational time_base) {
  if (format.flags & AVFMT_NOFILE) return true;
  AVFormatContext* scratch = nullptr;
  if (avformat_alloc_output_context2(&scratch, &format, nullptr, nullptr) < 0 || !scratch) return true;
  int result = -1;
  AVStream* stream = avformat_new_stream(scratch, nullptr);
  if (stream && avcodec_parameters_copy(stream->codecpar, &parameters) >= 0 && avio_open_dyn_buf(&scratch->pb) >= 0) {
    stream->codecpar->codec_tag = 0;
    stream->time_base = time_base;
    result = avformat_write_header(scratch, nullptr);
  }
  AVIOContext* memory = scratch->pb;
  avformat_free_context(scratch);  // leaves its I/O context open
  if (memory) {
    std::uint8_t* bytes = nullptr;
    avio_close_dyn_buf(memory, &bytes);
    av_free(bytes);
  }
  forget_ffmpeg_error();  // its refusal is no failure of the output's
  return result >= 0;
}

bool codec_is_x26x(const AVCodec& codec) {
  return std::strcmp(codec.name, "libx264") == 0 || std::strcmp(codec.name, "libx265") == 0;
}

// JPEG holds full-range YUV (its standard): mjpeg and ljpeg refuse limited range at normal
// compliance, and ffmpeg gives them the yuvj formats. Limited-range frames are stretched to full
// range for them as they are converted.
bool takes_full_range_only(const AVCodec& codec) {
  return codec.id == AV_CODEC_ID_MJPEG || codec.id == AV_CODEC_ID_LJPEG;
}

// Encoders whose time base must be the frame period (MPEG-1/2 allow only standard rates,
// MPEG-4 part 2 and H.263 a 16-bit denominator).
bool needs_frame_period_time_base(AVCodecID id) {
  return id == AV_CODEC_ID_MPEG1VIDEO || id == AV_CODEC_ID_MPEG2VIDEO || id == AV_CODEC_ID_MPEG4 ||
         id == AV_CODEC_ID_H263 || id == AV_CODEC_ID_H263P || id == AV_CODEC_ID_MSMPEG4V3;
}

AVPixelFormat full_range_variant(AVPixelFormat format) {
  switch (format) {
    case AV_PIX_FMT_YUV420P: return AV_PIX_FMT_YUVJ420P;
    case AV_PIX_FMT_YUV422P: return AV_PIX_FMT_YUVJ422P;
    case AV_PIX_FMT_YUV444P: return AV_PIX_FMT_YUVJ444P;
    default: return AV_PIX_FMT_NONE;
  }
}

bool list_has(const AVPixelFormat* list, AVPixelFormat format) {
  for (; list && *list != AV_PIX_FMT_NONE; ++list) {
    if (*list == format) return true;
  }
  return false;
}

AVColorSpace av_color_space(ColorMatrix matrix) {
  switch (matrix) {
    case ColorMatrix::bt709: return AVCOL_SPC_BT709;
    case ColorMatrix::bt2020: return AVCOL_SPC_BT2020_NCL;
    case ColorMatrix::bt601: break;
  }
  return AVCOL_SPC_SMPTE170M;
}

bool is_rgb_or_gray(AVPixelFormat format) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  return desc && ((desc->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL)) || desc->nb_components <= 2);
}

// What the yuv4mpegpipe muxer takes (the 9- to 16-bit ones as "unofficial" formats).
const AVPixelFormat kYuv4mpegFormats[] = {
    AV_PIX_FMT_YUV420P,   AV_PIX_FMT_YUV422P,   AV_PIX_FMT_YUV444P,   AV_PIX_FMT_GRAY8,
    AV_PIX_FMT_YUV420P9,  AV_PIX_FMT_YUV422P9,  AV_PIX_FMT_YUV444P9,  AV_PIX_FMT_YUV420P10,
    AV_PIX_FMT_YUV422P10, AV_PIX_FMT_YUV444P10, AV_PIX_FMT_YUV420P12, AV_PIX_FMT_YUV422P12,
    AV_PIX_FMT_YUV444P12, AV_PIX_FMT_YUV420P14, AV_PIX_FMT_YUV422P14, AV_PIX_FMT_YUV444P14,
    AV_PIX_FMT_YUV420P16, AV_PIX_FMT_YUV422P16, AV_PIX_FMT_YUV444P16, AV_PIX_FMT_GRAY9,
    AV_PIX_FMT_GRAY10,    AV_PIX_FMT_GRAY12,    AV_PIX_FMT_GRAY16,    AV_PIX_FMT_NONE};

bool is_gray(AVPixelFormat format) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  return desc && !(desc->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL)) && desc->nb_components <= 2;
}

// The most bits per sample among the formats an encoder takes (0: it takes none we know).
int deepest_format(const AVPixelFormat* accepted) {
  int deepest = 0;
  for (; accepted && *accepted != AV_PIX_FMT_NONE; ++accepted) deepest = std::max(deepest, av_format_depth(*accepted));
  return deepest;
}

// "libx265 (up to 12 bits), ffv1 or png (up to 16)": the usual encoders of this FFmpeg build
// that hold `depth` bits, from the formats each takes, grouped by how deep they go.
std::string encoders_holding(int depth, const AVCodec* besides) {
  std::map<int, std::vector<std::string>> by_depth;
  for (const char* candidate : {"libx264", "libx265", "ffv1", "png"}) {
    const AVCodec* codec = avcodec_find_encoder_by_name(candidate);
    if (!codec || codec == besides) continue;
    const int deepest = deepest_format(codec->pix_fmts);
    if (deepest >= depth) by_depth[deepest].push_back(candidate);
  }
  std::string text;
  for (const auto& [deepest, names] : by_depth) {
    const bool first_group = text.empty();
    if (!first_group) text += ", ";
    for (std::size_t i = 0; i < names.size(); ++i) text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    text += " (up to " + std::to_string(deepest) + (first_group ? " bits)" : ")");
  }
  return text.empty() ? std::string("an encoder that takes them") : text;
}

// libx265's own log at FFmpeg's level ("log-level=error" under -q and without -v).
std::string x265_log_level_param() {
  const int level = av_log_get_level();
  return std::string("log-level=") + (level <= AV_LOG_ERROR ? "error" : (level <= AV_LOG_WARNING ? "warning" : "info"));
}

// x264-params / x265-params (key=value:key=value): libx264 and libx265 only warn about a value
// they cannot parse and go on without it (keyint=abc: every frame a keyframe), so the values of
// their numeric settings are checked here. Returns "key=value" of the first one that is not a
// number of its kind, empty when all are.
std::string bad_x26x_param(const std::string& params, bool x265) {
  static const char* const kIntegers[] = {
      "min-keyint", "scenecut", "bframes", "b-adapt", "b-bias", "ref", "qp", "qpmin", "qpmax", "qpstep",
      "aq-mode", "rc-lookahead", "vbv-maxrate", "vbv-bufsize", "bitrate", "threads", "lookahead-threads",
      "merange", "me-range", "subme", "trellis", "nr", "slices", "chroma-qp-offset", "sync-lookahead",
      "min-keyint", "rd", "ctu", "min-cu-size", "max-tu-size", "frame-threads", "pools", "lookahead-slices"};
  static const char* const kNumbers[] = {"crf", "ipratio", "pbratio", "aq-strength", "qcomp", "cplxblur", "qblur",
                                         "vbv-init", "ratetol", "crf-max", "crf-min", "psy-rdoq"};
  auto whole = [](const std::string& v, bool integer) {
    if (v.empty()) return false;
    char* end = nullptr;
    errno = 0;
    if (integer) (void)std::strtol(v.c_str(), &end, 10);
    else (void)std::strtod(v.c_str(), &end);
    return errno == 0 && end == v.c_str() + v.size();
  };
  std::size_t start = 0;
  while (start < params.size()) {
    std::size_t end = params.find(':', start);
    if (end == std::string::npos) end = params.size();
    const std::string item = params.substr(start, end - start);
    start = end + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) continue;  // a boolean switch (no-scenecut)
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    bool ok = true;
    if (key == "keyint" || (x265 && key == "min-keyint")) ok = whole(value, true) || value == "infinite";
    else if (std::find(std::begin(kIntegers), std::end(kIntegers), key) != std::end(kIntegers)) ok = whole(value, true);
    else if (std::find(std::begin(kNumbers), std::end(kNumbers), key) != std::end(kNumbers)) ok = whole(value, false);
    if (!ok) return item;
  }
  return "";
}

// x264's profile and tune names: the accepted ones as a list when `value` is not among them
// (a tune may join several with '+' or ','), else empty.
std::string unknown_x264_word(const std::string& key, const std::string& value) {
  static const std::vector<std::string> profiles = {"baseline", "main", "high", "high10", "high422", "high444"};
  static const std::vector<std::string> tunes = {"film",       "animation", "grain",      "stillimage",
                                                 "psnr",       "ssim",      "fastdecode", "zerolatency",
                                                 "touhou"};
  const std::vector<std::string>& words = key == "profile" ? profiles : tunes;
  std::vector<std::string> parts;
  if (key == "profile") {
    parts.push_back(value);
  } else {
    std::size_t start = 0;
    for (;;) {
      const std::size_t end = value.find_first_of("+,./-", start);
      parts.push_back(value.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  for (const std::string& part : parts) {
    if (std::find(words.begin(), words.end(), part) == words.end()) {
      std::string list;
      for (const std::string& w : words) list += (list.empty() ? "" : ", ") + w;
      return list;
    }
  }
  return "";
}

// Why an existing file cannot be replaced by a rename over it, or empty: the immutable or
// append-only attribute (chattr +i, +a), or a sticky folder (/tmp) and a file of another user.
std::string unreplaceable(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    int flags = 0;
    const bool known = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    ::close(fd);
    if (known && (flags & FS_IMMUTABLE_FL)) return "cannot be replaced: the file is immutable (chattr -i removes that)";
    if (known && (flags & FS_APPEND_FL)) return "cannot be replaced: the file is append-only (chattr -a removes that)";
  }
  struct stat file_stat {}, folder_stat {};
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (::stat(file.c_str(), &file_stat) == 0 && ::stat(folder.c_str(), &folder_stat) == 0 &&
      (folder_stat.st_mode & S_ISVTX) && ::geteuid() != 0 && file_stat.st_uid != ::geteuid() &&
      folder_stat.st_uid != ::geteuid())
    return "cannot be replaced: it belongs to another user in a sticky folder";
  return "";
}

}  // namespace

struct MediaWriter::Impl {
  OutputOptions options;
  std::string name;           // the output as the user gave it, for messages
  std::string write_url;      // what FFmpeg opens: the temporary file, or the URL itself
  std::string final_path;     // empty when writing directly
  bool finished = false;

  OutputContextPtr muxer;
  CodecContextPtr encoder;
  const AVCodec* codec = nullptr;
  AVStream* video_out = nullptr;
  std::vector<int> output_index_of_input;     // -1: not copied
  std::vector<AVRational> input_time_bases;
  AVRational source_time_base{1, 25};

  int width = 0, height = 0;
  PixelFormat layout = PixelFormat::yuv420p;  // of the frames given to the encoder's conversion
  int depth = 8;                              // their bits per sample
  // nv12 above 8 bits (NVDEC's P010/P016, value in the high bits) is unpacked into planar
  // yuv420p at its depth first: the encoders take that, and the unpacking is exact.
  PixelFormat frame_format = PixelFormat::yuv420p;  // of the frames write_frame() receives
  Image unpacked;
  AVPixelFormat encoder_format = AV_PIX_FMT_NONE;
  bool needs_conversion = false;
  bool encoder_full_range = false;

  FramePtr wrapper{av_frame_alloc()};  // points at the caller's pixels
  FramePtr converted;                  // libswscale output, when the encoder needs another layout
  SwsPtr scaler;
  Packet encoded{av_packet_alloc()};

  std::int64_t frames_written = 0;
  std::int64_t packets_copied = 0;  // of other streams, written
  std::int64_t last_packet_us = 0;
  // OutputOptions::start_at_zero: the copied packets that come before the first picture wait
  // here until it comes; its time is then the origin, in microseconds (without a picture, the
  // earliest packet's).
  bool zero_pending = false;
  std::deque<Packet> held_packets;
  std::int64_t origin_us = 0;
  bool origin_set = false;
  void settle_origin(std::int64_t first_picture_us);
  void write_copied(Packet packet);
  std::int64_t last_pts = AV_NOPTS_VALUE;
  bool warned_pts = false;

  void check_paths(const MediaReader& source);
  const AVOutputFormat* choose_muxer();
  void choose_encoder(const AVOutputFormat& muxer_format);
  void set_encoder_options();
  // The user's encoder settings by FFmpeg's option names (b, maxrate, g, profile, ...).
  std::vector<std::pair<std::string, std::string>> user_settings() const;
  bool has_user_settings() const { return !user_settings().empty(); }
  void open_encoder(const MediaReader& source);
  void add_video_stream(const MediaReader& source, const AVCodecParameters* copied = nullptr,
                        AVRational copied_time_base = AVRational{0, 1});
  void add_copied_streams(const MediaReader& source);
  void open_output();
  void send(AVFrame* frame);
  void convert_into(const ImageView& frame);
  void encode_picture(const ImageView& frame, std::int64_t pts, std::int64_t duration,
                      std::function<void()> release);
};

void MediaWriter::Impl::check_paths(const MediaReader& source) {
  if (is_url(options.url)) {
    write_url = options.url == "-" ? "pipe:1" : options.url;
    return;
  }
  const std::string input_url = source.format_context() ? source.format_context()->url : "";
  if (const std::string why = output_problem(options.url, is_url(input_url) ? "" : input_url, options.overwrite);
      !why.empty())
    throw_io(name, why);
  const fs::path output(options.url);
  std::error_code error;
  // A picture sequence (frame%04d.png) is written in place, one file a frame; so is a device or a
  // FIFO (/dev/null, a named pipe), never renamed over.
  if (av_filename_number_test(options.url.c_str()) || (fs::exists(output, error) && !fs::is_regular_file(output, error))) {
    write_url = options.url;
    return;
  }
  const fs::path folder = output.has_parent_path() ? output.parent_path() : fs::path(".");
  // Same folder (so the final rename is atomic), hidden, and with the real extension kept last
  // so that anything guessing from the name still can.
  final_path = output.string();
  const fs::path temporary = folder / ("." + output.stem().string() + ".partial-" +
                                       std::to_string(::getpid()) + output.extension().string());
  write_url = temporary.string();
}

const AVOutputFormat* MediaWriter::Impl::choose_muxer() {
  const AVOutputFormat* format = nullptr;
  if (!options.format.empty()) {
    format = av_guess_format(options.format.c_str(), nullptr, nullptr);
    // Also accept an extension where the muxer's name differs ("y4m" -> yuv4mpegpipe).
    if (!format) format = av_guess_format(nullptr, ("x." + options.format).c_str(), nullptr);
    if (!format) throw_io(name, "unknown output format '" + options.format + "'");
  } else if (options.url == "-") {
    format = av_guess_format("yuv4mpegpipe", nullptr, nullptr);
  } else {
    format = av_guess_format(nullptr, options.url.c_str(), nullptr);
    if (!format) throw_io(name, "cannot tell the output format from the name (give one with -f)");
  }
  return format;
}

void MediaWriter::Impl::choose_encoder(const AVOutputFormat& muxer_format) {
  if (!options.encoder.empty()) {
    codec = avcodec_find_encoder_by_name(options.encoder.c_str());
    if (!codec) throw EncoderOptionError(name + ": unknown encoder '" + options.encoder + "' (ffmpeg -encoders lists them)");
    if (codec->type != AVMEDIA_TYPE_VIDEO) throw_io(name, "'" + options.encoder + "' is not a video encoder");
    return;
  }
  // Containers of compressed video that hold H.264 get libx264; raw ones (rawvideo, null, y4m),
  // image formats and the containers of another codec (gif, webp, ogv, apng...) keep their own
  // default codec, as ffmpeg gives them.
  const bool raw_muxer = muxer_format.video_codec == AV_CODEC_ID_RAWVIDEO ||
                         muxer_format.video_codec == AV_CODEC_ID_WRAPPED_AVFRAME;
  if (!raw_muxer && !is_single_picture_stream_muxer(muxer_format) && holds_h264(muxer_format))
    codec = avcodec_find_encoder_by_name("libx264");
  if (!codec) {
    const AVCodecID id = av_guess_codec(&muxer_format, nullptr, options.url.c_str(), nullptr,
                                        AVMEDIA_TYPE_VIDEO);
    codec = avcodec_find_encoder(id);
    if (!codec) {
      throw_io(name, std::string("this FFmpeg has no encoder for ") + avcodec_get_name(id) + ", the " +
                         muxer_format.name + " format's video codec (-c:v names another)");
    }
  }
}

void MediaWriter::Impl::open_encoder(const MediaReader& source) {
  const VideoInfo& info = source.video();
  encoder.reset(avcodec_alloc_context3(codec));
  if (!encoder) throw_io(name, "out of memory");

  // Pixel format: the frames' own layout at their depth when the encoder takes it, else the
  // nearest it takes that holds the depth (an encoder that holds fewer bits is refused).
  const AVPixelFormat* accepted = codec->pix_fmts;
  const bool y4m = std::strcmp(muxer->oformat->name, "yuv4mpegpipe") == 0;
  if (!accepted && y4m) accepted = kYuv4mpegFormats;
  const AVPixelFormat wanted = to_av_format(layout, depth);
  if (wanted == AV_PIX_FMT_NONE) throw_io(name, "FFmpeg has no layout for " + format_name(layout, depth) + " frames");
  // At 8 bits nothing is refused, as before: an encoder of fewer bits (rgb555) converts down.
  if (accepted && depth > 8 && deepest_format(accepted) < depth) {
    const int deepest = deepest_format(accepted);
    std::string message = std::string(codec->name) + " holds at most " + std::to_string(deepest) + " bits; for " +
                          std::to_string(depth) + "-bit output use " + encoders_holding(depth, codec);
    // RGB exists at 8 and 16 bits only, and encoders of fewer bits convert 8-bit frames: their
    // way down is 8.
    const int way_down = layout == PixelFormat::rgb24 || deepest < 8 ? 8 : deepest;
    if (way_down == 8 || way_down == 10 || way_down == 12) message += ", or --output-depth " + std::to_string(way_down);
    throw_io(name, message);
  }
  const bool full_range_only = takes_full_range_only(*codec);
  const bool full_range_yuv = is_yuv(layout) && (info.range == ColorRange::full || full_range_only);
  if (full_range_only && list_has(accepted, full_range_variant(wanted))) {
    encoder_format = full_range_variant(wanted);  // yuvj420p for JPEG, as ffmpeg gives it
  } else if (!accepted || list_has(accepted, wanted)) {
    encoder_format = wanted;
  } else if (full_range_yuv && list_has(accepted, full_range_variant(wanted))) {
    encoder_format = full_range_variant(wanted);
  } else {
    // Above 8 bits only the formats that keep the depth compete (FFmpeg's choice may trade depth
    // for layout); at 8 bits FFmpeg chooses among them all, as before.
    std::vector<AVPixelFormat> candidates;
    for (const AVPixelFormat* f = accepted; *f != AV_PIX_FMT_NONE; ++f)
      if (depth == 8 || av_format_depth(*f) >= depth) candidates.push_back(*f);
    candidates.push_back(AV_PIX_FMT_NONE);
    encoder_format = avcodec_find_best_pix_fmt_of_list(candidates.data(), wanted, 0, nullptr);
    if (encoder_format == AV_PIX_FMT_NONE) {
      throw_io(name, std::string(codec->name) + " takes no pixel format we can convert " +
                         format_name(layout, depth) + " to");
    }
  }
  if (!options.pixel_format.empty()) {  // --pix-fmt: the encoder's format as asked, converted to
    const AVPixelFormat asked = av_get_pix_fmt(options.pixel_format.c_str());
    if (asked == AV_PIX_FMT_NONE)
      throw EncoderOptionError(name + ": --pix-fmt " + options.pixel_format +
                               ": no such pixel format (ffmpeg -pix_fmts lists them)");
    if (accepted && !list_has(accepted, asked)) {
      std::string formats;
      for (const AVPixelFormat* f = accepted; *f != AV_PIX_FMT_NONE; ++f)
        formats += std::string(formats.empty() ? "" : ", ") + av_get_pix_fmt_name(*f);
      throw EncoderOptionError(name + ": --pix-fmt " + options.pixel_format + ": " + codec->name + " takes " + formats);
    }
    if (av_format_depth(asked) < depth)
      throw EncoderOptionError(name + ": --pix-fmt " + options.pixel_format + " holds fewer bits than the frames' " +
                               std::to_string(depth) + " (--output-depth converts them first)");
    encoder_format = asked;
  }
  needs_conversion = encoder_format != wanted && encoder_format != full_range_variant(wanted);
  // Bytes swapped only (rgb48le for png's rgb48be): nothing is lost, nothing to warn about.
  const bool byte_order_only = av_pix_fmt_swap_endianness(wanted) == encoder_format;
  if (needs_conversion && !byte_order_only && options.pixel_format.empty()) {
    warn(name, format_name(layout, depth) + " converted to " + av_get_pix_fmt_name(encoder_format) + " for the " +
                   codec->name + " encoder");
  }
  // The y4m muxer writes its 9- to 16-bit formats only when told that unofficial ones will do.
  if (y4m && depth > 8) muxer->strict_std_compliance = FF_COMPLIANCE_UNOFFICIAL;
#if LIBAVFORMAT_VERSION_MAJOR < 60
  // FFmpeg 5's y4m muxer sizes the halved chroma planes of two-byte samples wrongly when a
  // halved side is odd (the file is short and unreadable): refused rather than written broken.
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(encoder_format);
  if (y4m && av_format_depth(encoder_format) > 8 && desc &&
      ((desc->log2_chroma_w > 0 && width % 2 != 0) || (desc->log2_chroma_h > 0 && height % 2 != 0))) {
    throw_io(name, "this FFmpeg's y4m muxer cannot write " + std::string(av_get_pix_fmt_name(encoder_format)) + " at " +
                       std::to_string(width) + "x" + std::to_string(height) +
                       " (an odd side of a subsampled format); use another container (e.g. .mkv with ffv1) or "
                       "--output-depth 8");
  }
#endif

  encoder->codec_id = codec->id;
  encoder->width = width;
  encoder->height = height;
  encoder->pix_fmt = encoder_format;
  const AVRational frame_rate{info.frame_rate.num, info.frame_rate.den};
  if (info.time_base.num > 0 && info.time_base.den > 0) {
    source_time_base = AVRational{info.time_base.num, info.time_base.den};
  } else if (frame_rate.num > 0) {
    source_time_base = av_inv_q(frame_rate);
  }
  encoder->time_base = source_time_base;
  // yuv4mpegpipe writes the stream time base as the frame rate.
  if (needs_frame_period_time_base(codec->id) ||
      std::strcmp(muxer->oformat->name, "yuv4mpegpipe") == 0) {
    encoder->time_base = frame_rate.num > 0 ? av_inv_q(frame_rate) : AVRational{1, 25};
  }
  if (frame_rate.num > 0) encoder->framerate = frame_rate;
  // A live HLS playlist is cut into segments at keyframes: one a second.
  if (std::strcmp(muxer->oformat->name, "hls") == 0)
    encoder->gop_size = frame_rate.num > 0 ? std::max(1, static_cast<int>(av_q2d(frame_rate) + 0.5)) : 25;
  if (info.sample_aspect_ratio.num > 0) {
    encoder->sample_aspect_ratio = AVRational{info.sample_aspect_ratio.num, info.sample_aspect_ratio.den};
  }

  // Colour tags: kept as the input said when YUV stays YUV; a conversion between RGB and YUV
  // states the matrix and range it used.
  const bool source_rgb_or_gray = layout == PixelFormat::rgb24 || layout == PixelFormat::gray8;
  const bool target_rgb_or_gray = is_rgb_or_gray(encoder_format);
  // Grey at depth (gray16be for png) is grey as gray8 is: its colour tags stay.
  const bool target_gray = encoder_format == AV_PIX_FMT_GRAY8 || (depth > 8 && is_gray(encoder_format));
  encoder->color_primaries = static_cast<AVColorPrimaries>(info.color_primaries);
  encoder->color_trc = static_cast<AVColorTransferCharacteristic>(info.color_transfer);
  encoder->colorspace = static_cast<AVColorSpace>(info.color_space);
  encoder->color_range = static_cast<AVColorRange>(info.color_range_tag);
  if (target_rgb_or_gray) {
    encoder_full_range = true;
    if (!target_gray || source_rgb_or_gray) {
      encoder->colorspace = target_gray ? encoder->colorspace : AVCOL_SPC_RGB;
      encoder->color_range = AVCOL_RANGE_JPEG;
    }
  } else if (source_rgb_or_gray) {
    // Into YUV: limited range as video expects, unless the encoder only takes yuvj (JPEG).
    encoder_full_range = is_full_range_yuv_format(encoder_format);
    encoder->colorspace = av_color_space(info.matrix);
    encoder->color_range = encoder_full_range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
  } else if (is_full_range_yuv_format(encoder_format)) {
    encoder_full_range = true;
    encoder->color_range = AVCOL_RANGE_JPEG;
  } else if (full_range_only) {  // --pix-fmt yuv420p for mjpeg: full range, said so
    encoder_full_range = true;
    encoder->color_range = AVCOL_RANGE_JPEG;
  } else {
    encoder_full_range = info.range == ColorRange::full;
    if (encoder->color_range == AVCOL_RANGE_UNSPECIFIED && encoder_full_range) {
      encoder->color_range = AVCOL_RANGE_JPEG;
    }
  }
  // YUV into YUV of the other range (limited-range frames for JPEG, or for an encoder that takes
  // only yuvj): the samples are stretched, not only tagged, so that the picture looks the same.
  if (is_yuv(layout) && !target_rgb_or_gray && encoder_full_range != (info.range == ColorRange::full))
    needs_conversion = true;

  encoder->thread_count = 0;  // automatic, for the encoders that thread
  if (options.low_latency) encoder->max_b_frames = 0;
  if (codec_is_x26x(*codec)) {
    // Both take x264's preset names; an unknown one would fail the opening with x264's own line.
    static constexpr std::array<const char*, 10> kPresets = {"ultrafast", "superfast", "veryfast", "faster", "fast",
                                                             "medium",    "slow",      "slower",   "veryslow", "placebo"};
    if (std::none_of(kPresets.begin(), kPresets.end(), [&](const char* p) { return options.preset == p; })) {
      std::string names;
      for (const char* p : kPresets) names += (names.empty() ? "" : ", ") + std::string(p);
      throw EncoderOptionError(name + ": --preset " + options.preset + ": " + codec->name + " has no such preset (" +
                               names + ")");
    }
    av_opt_set_double(encoder->priv_data, "crf", options.crf, 0);
    av_opt_set(encoder->priv_data, "preset", options.preset.c_str(), 0);
    if (options.low_latency) av_opt_set(encoder->priv_data, "tune", "zerolatency", 0);
    // libx265 prints its own log (libx264's goes through FFmpeg's): the same level as FFmpeg's,
    // so that -q leaves the terminal quiet (an x265-params of the user's keeps it: see below).
    if (std::strcmp(codec->name, "libx265") == 0)
      av_opt_set(encoder->priv_data, "x265-params", x265_log_level_param().c_str(), 0);
  }
  if (muxer->oformat->flags & AVFMT_GLOBALHEADER) encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  set_encoder_options();

  forget_ffmpeg_error();
  const int result = avcodec_open2(encoder.get(), codec, nullptr);
  if (result == AVERROR(EINVAL) && has_user_settings()) {
    std::string given;
    for (const auto& [key, value] : user_settings()) given += (given.empty() ? "" : ", ") + key + "=" + value;
    throw EncoderOptionError(name + ": " + codec->name + " refused these settings (" + given + "): " +
                             av_error_text(result));
  }
  if (result < 0) {
    std::string cause =
        std::string(codec->name) + ": cannot open the encoder (" + av_error_text(result) + ")" + ffmpeg_detail();
    if (std::strstr(codec->name, "nvenc")) cause += " (this GPU has no NVENC engine, or no NVIDIA driver?)";
    else if (std::strstr(codec->name, "vaapi") || std::strstr(codec->name, "qsv")) cause += " (no usable hardware device?)";
    throw_io(name, cause);
  }
}

// The user's encoder settings, each set by name (the encoder's private options first, as ffmpeg
// looks them up) before the encoder opens: an unknown name or a refused value is an error here,
// before any frame is encoded.
std::vector<std::pair<std::string, std::string>> MediaWriter::Impl::user_settings() const {
  std::vector<std::pair<std::string, std::string>> settings;
  if (!options.bitrate.empty()) settings.emplace_back("b", options.bitrate);
  if (!options.maxrate.empty()) settings.emplace_back("maxrate", options.maxrate);
  if (!options.bufsize.empty()) settings.emplace_back("bufsize", options.bufsize);
  if (options.keyint > 0) settings.emplace_back("g", std::to_string(options.keyint));
  if (!options.profile.empty()) settings.emplace_back("profile", options.profile);
  if (!options.tune.empty()) settings.emplace_back("tune", options.tune);
  for (const auto& [key, value] : options.encoder_options) settings.emplace_back(key, value);
  return settings;
}

void MediaWriter::Impl::set_encoder_options() {
  const std::vector<std::pair<std::string, std::string>> settings = user_settings();
  // A high-depth profile (high10, main10, main12, main444-10, ...) over 8-bit frames: x264 and
  // x265 would write their 8-bit profile without a word.
  if (codec_is_x26x(*codec) && depth <= 8 && !options.profile.empty() &&
      (options.profile.find("10") != std::string::npos || options.profile.find("12") != std::string::npos)) {
    const std::string bits = options.profile.find("12") != std::string::npos ? "12" : "10";
    throw EncoderOptionError(name + ": --profile " + options.profile + " encodes " + bits +
                             " bits and the frames are 8-bit: add --output-depth " + bits);
  }
  // A bitrate replaces libx264/libx265's default constant rate factor.
  if (!options.bitrate.empty() && codec_is_x26x(*codec)) av_opt_set(encoder->priv_data, "crf", "-1", 0);
  for (const auto& [key, value] : settings) {
    if (std::strcmp(codec->name, "libx264") == 0 && (key == "profile" || key == "tune")) {
      // x264 prints its own line for these on stderr before FFmpeg's refusal: refused here first.
      const std::string known = unknown_x264_word(key, value);
      if (!known.empty())
        throw EncoderOptionError(name + ": " + codec->name + " refused these settings (" + key + "=" + value +
                                 "): its " + key + "s are " + known);
    }
    if (key == "x264-params" || key == "x265-params") {
      const std::string bad = bad_x26x_param(value, key == "x265-params");
      if (!bad.empty())
        throw EncoderOptionError(name + ": " + key + ": " + bad + " is not a number (" + codec->name +
                                 " would only warn and go on without it)");
    }
    // The user's x265-params replace the log level set above unless they give their own.
    const std::string applied = key == "x265-params" && std::strcmp(codec->name, "libx265") == 0 &&
                                        value.find("log-level") == std::string::npos
                                    ? x265_log_level_param() + ":" + value
                                    : value;
    const int result = av_opt_set(encoder.get(), key.c_str(), applied.c_str(), AV_OPT_SEARCH_CHILDREN);
    if (result == AVERROR_OPTION_NOT_FOUND)
      throw EncoderOptionError(name + ": " + codec->name + " has no option '" + key + "' (ffmpeg -h encoder=" +
                               codec->name + " lists its options)");
    if (result < 0)
      throw EncoderOptionError(name + ": " + codec->name + ": option " + key + "=" + value + " refused (" +
                               av_error_text(result) + ")");
  }
}

void MediaWriter::Impl::add_video_stream(const MediaReader& source, const AVCodecParameters* copied,
                                         AVRational copied_time_base) {
  video_out = avformat_new_stream(muxer.get(), nullptr);
  if (!video_out) throw_io(name, "out of memory");
  if (copied) {
    const int result = avcodec_parameters_copy(video_out->codecpar, copied);
    if (result < 0) throw_io(name, "cannot copy the video stream parameters", result);
    video_out->codecpar->codec_tag = 0;  // the muxer's own tag for the codec
    video_out->time_base = copied_time_base;
    const Rational rate = source.video().frame_rate;
    if (rate.num > 0) video_out->avg_frame_rate = AVRational{rate.num, rate.den};
    video_out->sample_aspect_ratio = copied->sample_aspect_ratio;
  } else {
    const int result = avcodec_parameters_from_context(video_out->codecpar, encoder.get());
    if (result < 0) throw_io(name, "cannot set the video stream parameters", result);
    video_out->time_base = encoder->time_base;  // a hint; the muxer may choose another
    video_out->avg_frame_rate = encoder->framerate;
    video_out->sample_aspect_ratio = encoder->sample_aspect_ratio;
  }

  const AVFormatContext* input = source.format_context();
  const AVStream* video_in = input->streams[source.video_stream_index()];
  size_t matrix_size = 0;
  const std::uint8_t* matrix = av_stream_get_side_data(video_in, AV_PKT_DATA_DISPLAYMATRIX, &matrix_size);
  if (matrix && matrix_size >= 9 * sizeof(std::int32_t)) {
    std::uint8_t* copy = av_stream_new_side_data(video_out, AV_PKT_DATA_DISPLAYMATRIX, matrix_size);
    if (!copy) throw_io(name, "out of memory");
    std::memcpy(copy, matrix, matrix_size);
  } else if (source.video().rotation_degrees != 0.0) {
    auto* rotation = reinterpret_cast<std::int32_t*>(
        av_stream_new_side_data(video_out, AV_PKT_DATA_DISPLAYMATRIX, 9 * sizeof(std::int32_t)));
    if (!rotation) throw_io(name, "out of memory");
    av_display_rotation_set(rotation, -source.video().rotation_degrees);  // set() is clockwise
  }
  for (const char* key : {"language", "title"}) {
    if (const AVDictionaryEntry* entry = av_dict_get(video_in->metadata, key, nullptr, 0)) {
      av_dict_set(&video_out->metadata, key, entry->value, 0);
    }
  }
  video_out->disposition = video_in->disposition & ~AV_DISPOSITION_ATTACHED_PIC;
}

void MediaWriter::Impl::add_copied_streams(const MediaReader& source) {
  const AVFormatContext* input = source.format_context();
  output_index_of_input.assign(input->nb_streams, -1);
  input_time_bases.assign(input->nb_streams, AVRational{0, 1});
  const AVOutputFormat& format = *muxer->oformat;
  std::string dropped;
  for (const int index : source.copied_stream_indices()) {
    const AVStream* in = input->streams[index];
    const AVCodecParameters* parameters = in->codecpar;
    if ((parameters->codec_type == AVMEDIA_TYPE_AUDIO && !options.audio) ||
        (parameters->codec_type == AVMEDIA_TYPE_SUBTITLE && !options.subtitles))
      continue;  // -an, -sn
    const int query = avformat_query_codec(&format, parameters->codec_id, FF_COMPLIANCE_NORMAL);
    // query < 0: the muxer keeps no list; then trust it for the kinds it has a default for, once
    // its own set-up took the stream (Ogg takes no AAC).
    bool accepted = query == 1;
    if (query < 0 && !is_single_picture_stream_muxer(format)) {
      switch (parameters->codec_type) {
        case AVMEDIA_TYPE_AUDIO: accepted = format.audio_codec != AV_CODEC_ID_NONE; break;
        case AVMEDIA_TYPE_SUBTITLE: accepted = format.subtitle_codec != AV_CODEC_ID_NONE; break;
        case AVMEDIA_TYPE_VIDEO: accepted = true; break;
        default: accepted = false; break;
      }
      if (accepted) accepted = muxer_sets_up(format, *parameters, in->time_base);
    }
    if (!accepted) {
      if (!dropped.empty()) dropped += ", ";
      dropped += "#" + std::to_string(index) + " (" + avcodec_get_name(parameters->codec_id) + ")";
      continue;
    }
    AVStream* out = avformat_new_stream(muxer.get(), nullptr);
    if (!out) throw_io(name, "out of memory");
    const int result = avcodec_parameters_copy(out->codecpar, parameters);
    if (result < 0) throw_io(name, "cannot copy the parameters of stream #" + std::to_string(index), result);
    out->codecpar->codec_tag = 0;  // let the muxer pick its own tag for the codec
    out->time_base = in->time_base;
    out->disposition = in->disposition;
    out->avg_frame_rate = in->avg_frame_rate;
    out->sample_aspect_ratio = in->sample_aspect_ratio;
    av_dict_copy(&out->metadata, in->metadata, 0);
    output_index_of_input[index] = out->index;
    input_time_bases[index] = in->time_base;
  }
  if (!dropped.empty()) {
    warn(name, std::string("the ") + format.name + " format cannot hold input stream(s) " + dropped +
                   "; not copied");
  }
}

void MediaWriter::Impl::open_output() {
  AVFormatContext* context = muxer.get();
  if (!(context->oformat->flags & AVFMT_NOFILE)) {
    const int result = avio_open2(&context->pb, write_url.c_str(), AVIO_FLAG_WRITE, nullptr, nullptr);
    if (result < 0) throw_io(name, "cannot create the file", result);
  }
  Dictionary muxer_options;
  // image2 with a plain file name (no %d pattern) writes its one picture to exactly that name.
  if (std::strcmp(context->oformat->name, "image2") == 0 && !av_filename_number_test(options.url.c_str()))
    muxer_options.set("update", "1");
  // HLS as a live playlist of the last few 2-second segments; older segments are deleted.
  if (std::strcmp(context->oformat->name, "hls") == 0) {
    muxer_options.set("hls_time", "2");
    muxer_options.set("hls_list_size", "6");
    muxer_options.set("hls_flags", "delete_segments+independent_segments");
  }
  forget_ffmpeg_error();
  const int result = avformat_write_header(context, muxer_options.slot());
  if (result < 0) throw_io(name, "cannot write the header: " + av_error_text(result) + ffmpeg_detail());
}

void MediaWriter::Impl::convert_into(const ImageView& frame) {
  if (!converted) {
    converted.reset(av_frame_alloc());
    if (!converted) throw_io(name, "out of memory");
    converted->format = encoder_format;
    converted->width = width;
    converted->height = height;
    const int result = av_frame_get_buffer(converted.get(), 0);
    if (result < 0) throw_io(name, "cannot allocate a conversion buffer", result);
  }
  // The encoder may still hold the previous picture; this copies only in that case.
  int result = av_frame_make_writable(converted.get());
  if (result < 0) throw_io(name, "cannot allocate a conversion buffer", result);
  const AVPixelFormat source_format = to_av_format(frame.format, frame.depth);
  const bool source_full = !is_yuv(frame.format) || frame.range == ColorRange::full;
  // libswscale chooses how it converts by the ranges the formats say (yuvj: full) and keeps that
  // way when told other ranges later: a plain YUV format filled at full range from limited-range
  // samples (--pix-fmt yuv420p for JPEG) is named by its yuvj twin, or the samples would only be
  // copied.
  const bool stretched = encoder_full_range && !source_full && full_range_variant(encoder_format) != AV_PIX_FMT_NONE;
  const AVPixelFormat target_format = stretched ? full_range_variant(encoder_format) : encoder_format;
  SwsContext* context = sws_getCachedContext(scaler.release(), width, height, source_format, width,
                                             height, target_format,
                                             SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT,
                                             nullptr, nullptr, nullptr);
  scaler.reset(context);
  if (!context) {
    throw_io(name, std::string("libswscale cannot convert ") + format_name(frame.format, frame.depth) +
                       " to " + av_get_pix_fmt_name(encoder_format));
  }
  const int* coefficients = sws_getCoefficients(sws_matrix_id(frame.matrix));
  sws_setColorspaceDetails(context, coefficients, source_full ? 1 : 0, coefficients,
                           encoder_full_range ? 1 : 0, 0, 1 << 16, 1 << 16);
  const std::uint8_t* source_planes[4] = {};
  int source_strides[4] = {};
  for (int i = 0; i < frame.plane_count; ++i) {
    source_planes[i] = frame.planes[i].data;
    source_strides[i] = frame.planes[i].stride;
  }
  sws_scale(context, source_planes, source_strides, 0, height, converted->data, converted->linesize);
}

// Sends one picture (or the flush, for nullptr) and writes every packet that comes out.
void MediaWriter::Impl::send(AVFrame* frame) {
  int result = avcodec_send_frame(encoder.get(), frame);
  if (result < 0 && result != AVERROR_EOF) throw_io(name, std::string(codec->name) + ": encoding failed", result);
  for (;;) {
    result = avcodec_receive_packet(encoder.get(), encoded.get());
    if (result == AVERROR(EAGAIN) || result == AVERROR_EOF) return;
    if (result < 0) throw_io(name, std::string(codec->name) + ": encoding failed", result);
    last_packet_us = steady_now_us();
    encoded->stream_index = video_out->index;
    av_packet_rescale_ts(encoded.get(), encoder->time_base, video_out->time_base);
    result = av_interleaved_write_frame(muxer.get(), encoded.get());  // takes the packet's data
    if (result < 0) throw_io(name, "cannot write a video packet", result);
  }
}

// --- MediaWriter ---------------------------------------------------------------------------

namespace {
const AVOutputFormat* guessed_format(const OutputOptions& options) {
  return options.format.empty() ? av_guess_format(nullptr, options.url.c_str(), nullptr)
                                : av_guess_format(options.format.c_str(), nullptr, nullptr);
}
}  // namespace

std::string folder_problem(const std::string& folder) {
  std::error_code error;
  if (fs::is_directory(folder, error)) return "";
  // The nearest part of the folder that exists says what is wrong: missing, or not a folder.
  fs::path part = folder;
  while (part.has_parent_path() && part != part.parent_path() && !fs::exists(part, error)) part = part.parent_path();
  if (fs::exists(part, error) && !fs::is_directory(part, error)) return part.string() + " is not a folder";
  return "folder " + folder + " does not exist";
}

std::string output_problem(const std::string& url, const std::string& input, bool overwrite) {
  if (is_url(url)) return "";
  const fs::path output(url);
  std::error_code error;
  const fs::path folder = output.has_parent_path() ? output.parent_path() : fs::path(".");
  if (std::string why = folder_problem(folder.string()); !why.empty()) return why;
  // Found now rather than after the whole encode: a folder the file cannot be created in, and a
  // file that cannot be replaced (immutable or append-only).
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return "cannot write into the folder " + folder.string() + ": " + std::strerror(errno);
  if (av_filename_number_test(url.c_str())) {
    // A picture sequence: the first file already there stands for the sequence.
    char first[4096];
    if (av_get_frame_filename(first, sizeof first, url.c_str(), 1) == 0 && fs::exists(first, error) && !overwrite)
      return std::string(first) + " already exists (use -y to overwrite)";
    return "";
  }
  if (!fs::exists(output, error)) return "";
  if (!input.empty() && fs::equivalent(output, input, error)) return "is the input file; choose another output";
  if (fs::is_directory(output, error)) return "is a directory";
  if (!fs::is_regular_file(output, error)) return "";
  if (!overwrite) return "already exists (use -y to overwrite)";
  return unreplaceable(output);
}

bool writes_one_picture(const OutputOptions& options) {
  if (options.url.empty() || options.url == "-") return false;
  const AVOutputFormat* format = guessed_format(options);
  return format && std::strcmp(format->name, "image2") == 0 && av_filename_number_test(options.url.c_str()) == 0;
}

bool writes_pictures(const OutputOptions& options) {
  if (options.url.empty()) return false;
  const AVOutputFormat* format = guessed_format(options);
  return format && (std::strcmp(format->name, "image2") == 0 || std::strcmp(format->name, "image2pipe") == 0);
}

MediaWriter::MediaWriter(const OutputOptions& options, const MediaReader& source, int width,
                         int height, PixelFormat format, int depth)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.options = options;
  impl.name = options.url;
  impl.zero_pending = options.start_at_zero;
  impl.width = width;
  impl.height = height;
  impl.frame_format = format;
  impl.layout = format == PixelFormat::nv12 && depth > 8 ? PixelFormat::yuv420p : format;
  impl.depth = depth;
  if (!impl.wrapper || !impl.encoded) throw_io(impl.name, "out of memory");
  if (width <= 0 || height <= 0) throw_io(impl.name, "invalid picture size");
  if (!valid_depth(depth)) throw_io(impl.name, std::to_string(depth) + " bits per sample: accepted 8 to 16");
  if (impl.layout != format) impl.unpacked = Image(impl.layout, width, height, 64, depth);
  impl.check_paths(source);
  const AVOutputFormat* muxer_format = impl.choose_muxer();
  if (std::strcmp(muxer_format->name, "null") == 0) {
    // The null muxer writes nothing (as `ffmpeg -f null NAME`): no file to move into place.
    impl.write_url = impl.name;
    impl.final_path.clear();
  }
  impl.choose_encoder(*muxer_format);

  AVFormatContext* context = nullptr;
  const int result = avformat_alloc_output_context2(&context, muxer_format, nullptr, impl.write_url.c_str());
  if (result < 0 || !context) throw_io(impl.name, "cannot set up the output", result);
  impl.muxer.reset(context);

  impl.open_encoder(source);
  impl.add_video_stream(source);
  impl.add_copied_streams(source);
  impl.open_output();
}

MediaWriter::MediaWriter(const OutputOptions& options, const MediaReader& source, const PacketReader& encoded)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.options = options;
  impl.name = options.url;
  impl.zero_pending = options.start_at_zero;
  if (!impl.encoded) throw_io(impl.name, "out of memory");
  impl.check_paths(source);
  const AVOutputFormat* muxer_format = impl.choose_muxer();
  AVFormatContext* context = nullptr;
  const int result = avformat_alloc_output_context2(&context, muxer_format, nullptr, impl.write_url.c_str());
  if (result < 0 || !context) throw_io(impl.name, "cannot set up the output", result);
  impl.muxer.reset(context);
  const AVCodecParameters* parameters = encoded.codec_parameters();
  if (avformat_query_codec(muxer_format, parameters->codec_id, FF_COMPLIANCE_NORMAL) == 0)
    throw_io(impl.name, std::string("the ") + muxer_format->name + " format cannot hold " +
                            avcodec_get_name(parameters->codec_id) + " video");
  const Rational tb = encoded.time_base();
  impl.add_video_stream(source, parameters, AVRational{tb.num, tb.den});
  impl.add_copied_streams(source);
  impl.open_output();
}

MediaWriter::~MediaWriter() {
  if (!impl_ || impl_->finished) return;
  // Unfinished: close everything first, then remove what would look like a complete file.
  impl_->encoder.reset();
  impl_->muxer.reset();
  if (!impl_->final_path.empty()) {
    std::error_code ignored;
    fs::remove(impl_->write_url, ignored);
  }
}

void MediaWriter::write_frame(const ImageView& frame, std::int64_t pts, std::int64_t duration) {
  write_frame(frame, pts, duration, nullptr);
}

namespace {

// nv12 above 8 bits (value in the high bits of each 16-bit sample) into planar yuv420p at the
// same depth (value in the low bits), exactly.
void unpack_nv12(const ImageView& in, ImageView& out) {
  const int shift = sample_shift(in);
  for (int y = 0; y < in.height; ++y) {
    const auto* luma = reinterpret_cast<const std::uint16_t*>(in.planes[0].data + static_cast<std::size_t>(y) * in.planes[0].stride);
    auto* to = reinterpret_cast<std::uint16_t*>(out.planes[0].data + static_cast<std::size_t>(y) * out.planes[0].stride);
    for (int x = 0; x < in.width; ++x) to[x] = static_cast<std::uint16_t>(luma[x] >> shift);
  }
  const PlaneView& uv = in.planes[1];
  for (int y = 0; y < uv.height; ++y) {
    const auto* pairs = reinterpret_cast<const std::uint16_t*>(uv.data + static_cast<std::size_t>(y) * uv.stride);
    auto* u = reinterpret_cast<std::uint16_t*>(out.planes[1].data + static_cast<std::size_t>(y) * out.planes[1].stride);
    auto* v = reinterpret_cast<std::uint16_t*>(out.planes[2].data + static_cast<std::size_t>(y) * out.planes[2].stride);
    for (int x = 0; x < uv.width; ++x) {
      u[x] = static_cast<std::uint16_t>(pairs[2 * x] >> shift);
      v[x] = static_cast<std::uint16_t>(pairs[2 * x + 1] >> shift);
    }
  }
  out.matrix = in.matrix;
  out.range = in.range;
}

// Lets an AVBufferRef over a caller's frame hand the buffer back when its last reference goes.
void release_caller_buffer(void* opaque, std::uint8_t*) {
  auto* release = static_cast<std::function<void()>*>(opaque);
  (*release)();
  delete release;
}

}  // namespace

void MediaWriter::write_frame(const ImageView& frame, std::int64_t pts, std::int64_t duration,
                              std::function<void()> release) {
  Impl& impl = *impl_;
  if (impl.finished) throw_io(impl.name, "write_frame() after finish()");
  if (frame.width != impl.width || frame.height != impl.height || frame.format != impl.frame_format ||
      frame.depth != impl.depth) {
    throw_io(impl.name, "frame is " + std::to_string(frame.width) + "x" + std::to_string(frame.height) + " " +
                            format_name(frame.format, frame.depth) + ", the output was set up for " +
                            std::to_string(impl.width) + "x" + std::to_string(impl.height) + " " +
                            format_name(impl.frame_format, impl.depth));
  }
  if (impl.zero_pending) impl.settle_origin(av_rescale_q(pts, impl.source_time_base, AV_TIME_BASE_Q));
  if (impl.origin_set) pts -= av_rescale_q(impl.origin_us, AV_TIME_BASE_Q, impl.source_time_base);
  if (!impl.unpacked.empty()) {
    unpack_nv12(frame, impl.unpacked.view());
    if (release) release();
    impl.encode_picture(impl.unpacked.view(), pts, duration, nullptr);
  } else {
    impl.encode_picture(frame, pts, duration, std::move(release));
  }
}

// The frame's pixels to the encoder: referenced where it takes them as they are, else converted.
void MediaWriter::Impl::encode_picture(const ImageView& frame, std::int64_t pts, std::int64_t duration,
                                       std::function<void()> release) {
  Impl& impl = *this;
  AVFrame* picture = nullptr;
  if (impl.needs_conversion) {
    impl.convert_into(frame);
    picture = impl.converted.get();
    if (release) release();
  } else {
    picture = impl.wrapper.get();
    av_frame_unref(picture);
    picture->format = impl.encoder_format;
    picture->width = impl.width;
    picture->height = impl.height;
    const std::uint8_t* begin = frame.planes[0].data;
    const std::uint8_t* end = begin;
    for (int i = 0; i < frame.plane_count; ++i) {
      picture->data[i] = frame.planes[i].data;
      picture->linesize[i] = frame.planes[i].stride;
      begin = std::min<const std::uint8_t*>(begin, frame.planes[i].data);
      end = std::max<const std::uint8_t*>(end, frame.planes[i].data +
                                                   static_cast<std::size_t>(frame.planes[i].stride) *
                                                       frame.planes[i].height);
    }
    if (release) {
      // Reference counted over the caller's buffer: avcodec_send_frame() takes a reference
      // instead of copying the pixels (a 1080p frame is 3 MB per frame saved).
      auto* callback = new std::function<void()>(std::move(release));
      picture->buf[0] = av_buffer_create(const_cast<std::uint8_t*>(begin), static_cast<std::size_t>(end - begin),
                                         release_caller_buffer, callback, AV_BUFFER_FLAG_READONLY);
      if (!picture->buf[0]) {
        (*callback)();
        delete callback;
        throw_io(impl.name, "out of memory");
      }
    }
    // Without `release` the frame is not reference counted: avcodec_send_frame() copies the
    // pixels, so the caller's buffer is free again as soon as this returns.
  }
  std::int64_t encoder_pts = av_rescale_q(pts, impl.source_time_base, impl.encoder->time_base);
  if (impl.last_pts != AV_NOPTS_VALUE && encoder_pts <= impl.last_pts) {
    if (!impl.warned_pts) {
      warn(impl.name, "timestamps not increasing (pts " + std::to_string(pts) + "); moved forward");
      impl.warned_pts = true;
    }
    encoder_pts = impl.last_pts + 1;
  }
  impl.last_pts = encoder_pts;
  picture->pts = encoder_pts;
  picture->pkt_duration = av_rescale_q(duration, impl.source_time_base, impl.encoder->time_base);
  picture->sample_aspect_ratio = impl.encoder->sample_aspect_ratio;
  picture->color_range = impl.encoder->color_range;
  picture->colorspace = impl.encoder->colorspace;
  picture->color_primaries = impl.encoder->color_primaries;
  picture->color_trc = impl.encoder->color_trc;
  impl.send(picture);
  if (!impl.needs_conversion) av_frame_unref(picture);  // our reference to the caller's buffer
  ++impl.frames_written;
}

void MediaWriter::write_video_packet(Packet packet, Rational time_base) {
  Impl& impl = *impl_;
  if (!packet) return;
  if (impl.finished) throw_io(impl.name, "write_video_packet() after finish()");
  if (impl.encoder) throw_io(impl.name, "write_video_packet() on an output that encodes its video");
  const AVRational packet_tb{time_base.num, time_base.den};
  if (impl.zero_pending && packet->pts != AV_NOPTS_VALUE)  // the first packet: a keyframe, the earliest picture
    impl.settle_origin(av_rescale_q(packet->pts, packet_tb, AV_TIME_BASE_Q));
  if (impl.origin_set) {
    const std::int64_t shift = av_rescale_q(impl.origin_us, AV_TIME_BASE_Q, packet_tb);
    if (packet->pts != AV_NOPTS_VALUE) packet->pts -= shift;
    if (packet->dts != AV_NOPTS_VALUE) packet->dts -= shift;
  }
  av_packet_rescale_ts(packet.get(), AVRational{time_base.num, time_base.den}, impl.video_out->time_base);
  packet->stream_index = impl.video_out->index;
  packet->pos = -1;
  const int result = av_interleaved_write_frame(impl.muxer.get(), packet.get());
  if (result < 0) throw_io(impl.name, "cannot write a video packet", result);
  ++impl.frames_written;
}

void MediaWriter::write_packet(Packet packet) {
  Impl& impl = *impl_;
  if (!packet) return;
  if (impl.finished) throw_io(impl.name, "write_packet() after finish()");
  if (impl.zero_pending) {
    impl.held_packets.push_back(std::move(packet));
    // A picture so late is no start to wait for: the packets alone give the origin.
    if (impl.held_packets.size() >= 1024) impl.settle_origin(AV_NOPTS_VALUE);
    return;
  }
  impl.write_copied(std::move(packet));
}

void MediaWriter::Impl::settle_origin(std::int64_t first_picture_us) {
  zero_pending = false;
  std::int64_t origin = first_picture_us;
  if (origin == AV_NOPTS_VALUE) {  // no picture: the earliest packet
    for (const Packet& p : held_packets) {
      const int index = p->stream_index;
      if (index < 0 || index >= static_cast<int>(output_index_of_input.size()) || output_index_of_input[index] < 0)
        continue;
      const std::int64_t t = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
      if (t == AV_NOPTS_VALUE) continue;
      const std::int64_t us = av_rescale_q(t, input_time_bases[index], AV_TIME_BASE_Q);
      if (origin == AV_NOPTS_VALUE || us < origin) origin = us;
    }
  }
  origin_us = origin == AV_NOPTS_VALUE ? 0 : origin;
  origin_set = true;
  std::deque<Packet> waiting = std::move(held_packets);
  held_packets.clear();
  for (Packet& p : waiting) write_copied(std::move(p));
}

void MediaWriter::Impl::write_copied(Packet packet) {
  const int input_index = packet->stream_index;
  if (input_index < 0 || input_index >= static_cast<int>(output_index_of_input.size()) ||
      output_index_of_input[input_index] < 0) {
    return;  // a stream this output cannot hold (warned about when it was set up)
  }
  AVStream* out = muxer->streams[output_index_of_input[input_index]];
  if (origin_set) {
    // A packet that begins before the first picture is left out, as ffmpeg's -ss with -c:a copy
    // does: the output starts with the picture at zero.
    const std::int64_t shift = av_rescale_q(origin_us, AV_TIME_BASE_Q, input_time_bases[input_index]);
    const std::int64_t t = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
    if (t != AV_NOPTS_VALUE && t < shift) return;
    if (packet->pts != AV_NOPTS_VALUE) packet->pts -= shift;
    if (packet->dts != AV_NOPTS_VALUE) packet->dts -= shift;
  }
  av_packet_rescale_ts(packet.get(), input_time_bases[input_index], out->time_base);
  packet->stream_index = out->index;
  packet->pos = -1;
  const int result = av_interleaved_write_frame(muxer.get(), packet.get());
  if (result < 0) {
    throw_io(name, "cannot write a packet of input stream #" + std::to_string(input_index), result);
  }
  ++packets_copied;
}

void MediaWriter::finish() {
  Impl& impl = *impl_;
  if (impl.finished) return;
  if (impl.zero_pending) impl.settle_origin(AV_NOPTS_VALUE);  // no picture came
  if (impl.encoder) impl.send(nullptr);
  int result = av_write_trailer(impl.muxer.get());
  if (result < 0) throw_io(impl.name, "cannot write the trailer", result);
  AVFormatContext* context = impl.muxer.get();
  if (context->pb && !(context->oformat->flags & AVFMT_NOFILE)) {
    result = avio_closep(&context->pb);
    if (result < 0) throw_io(impl.name, "cannot close the file", result);
  }
  if (!impl.final_path.empty()) {
    std::error_code error;
    fs::rename(impl.write_url, impl.final_path, error);
    if (error) throw_io(impl.name, "cannot move " + impl.write_url + " into place: " + error.message());
  }
  impl.finished = true;
}

std::int64_t MediaWriter::frames_written() const { return impl_->frames_written; }
std::int64_t MediaWriter::packets_copied() const { return impl_->packets_copied; }

std::int64_t MediaWriter::last_packet_us() const { return impl_->last_packet_us; }

std::string MediaWriter::encoder_name() const { return impl_->codec ? impl_->codec->name : ""; }

}  // namespace hazefree::io
