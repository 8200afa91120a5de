#include "io/media_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>

#include "io/av_error.hpp"
#include "io/logging.hpp"
#include "io/av_owners.hpp"
#include "io/av_pixel_format.hpp"
#include "io/clock.hpp"
#include "io/picture_conversion.hpp"
#include "io/span_filter.hpp"
#include "io/stall_watch.hpp"
#include "io/url.hpp"

extern "C" {
#include <libavdevice/avdevice.h>
#include <libavutil/display.h>
#include <libavutil/parseutils.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>
}

namespace hazefree::io {

using namespace detail;

namespace {

// A decoder that fails this many packets in a row without producing a picture is not going to
// recover: the input is broken rather than damaged.
constexpr int kMaxConsecutiveDecodeErrors = 100;

void register_devices_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    avdevice_register_all();
    avformat_network_init();
  });
}

AVRational to_av(Rational value) { return AVRational{value.num, value.den}; }

ColorMatrix resolve_matrix(AVColorSpace space, int height) {
  switch (space) {
    case AVCOL_SPC_BT709: return ColorMatrix::bt709;
    case AVCOL_SPC_BT470BG:
    case AVCOL_SPC_SMPTE170M:
    case AVCOL_SPC_FCC:
    case AVCOL_SPC_SMPTE240M: return ColorMatrix::bt601;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL: return ColorMatrix::bt2020;
    default: return default_matrix_for_height(height);
  }
}

Rational to_rational(AVRational value) { return Rational{value.num, value.den}; }

// What NVDEC's pictures may be on the GPU: 4:2:0 semi-planar, the value in the high bits above
// 8 bits (P012 where this FFmpeg has it; older ones give 12-bit pictures as P016).
bool is_nvdec_layout(AVPixelFormat format) {
#ifdef AV_PIX_FMT_P012
  if (format == AV_PIX_FMT_P012) return true;
#endif
  return format == AV_PIX_FMT_NV12 || format == AV_PIX_FMT_P010 || format == AV_PIX_FMT_P016;
}

}  // namespace

struct MediaReader::Impl {
  explicit Impl(const InputOptions& given)
      : options(given), name(given.url), span(given, given.url), stall(given.stall_timeout_seconds),
        conversion(given.url) {}

  InputOptions options;
  std::string name;  // the URL as the user gave it, for messages
  std::atomic<bool> interrupted{false};

  InputContextPtr demuxer;
  CodecContextPtr decoder;
  int video_index = -1;
  std::vector<int> copied_streams;
  std::vector<bool> is_copied;  // by stream index
  VideoInfo info;

  Packet packet{av_packet_alloc()};   // the packet being demuxed
  Packet handed_out;                  // the last packet read() announced, for take_packet()
  // Other streams' packets read() hands out before anything else: those read before the first
  // picture, and those the span held back until its end was known.
  std::deque<Packet> early_packets;
  bool first_frame_pending = false;
  bool other_streams_only_now = false;  // options.other_streams_only, once the video is described

  FramePtr decoded{av_frame_alloc()};
  DecodedFrame current;
  std::int64_t next_pts = AV_NOPTS_VALUE;  // for pictures without a timestamp

  bool demuxer_done = false;
  bool decoder_done = false;
  int decode_errors = 0;
  std::int64_t pictures_dropped = 0;  // decoded, then dropped before the span or the chunk
  // H.264 decoded on the CPU: a chunk's pre-roll pictures that nothing refers to (nal_ref_idc 0,
  // most B-frames) are skipped by the decoder rather than decoded and dropped. (HEVC's
  // sub-layer non-reference pictures may still be referred to by a higher sub-layer: not skipped.)
  bool skip_unreferenced_preroll = false;
  int consecutive_errors = 0;
  int last_error = 0;

  SpanFilter span;               // which pictures and packets are delivered (-ss, -t/-to, --frames, a chunk)
  StallWatch stall;              // input.timeout, asked by the interrupt callback
  PictureConversion conversion;  // the decoder's pictures in VideoInfo's layout and depth

  // Reconnections (reopen()): each connection's timestamps are moved to follow the last picture
  // delivered by the real gap, in the first connection's time base.
  int connection = 0;  // 0: the first
  AVRational connection_time_base{1, 1};
  std::int64_t pts_offset = 0;  // in info.time_base, added to this connection's timestamps
  bool rebase_pending = false;
  std::int64_t last_pts = AV_NOPTS_VALUE;  // of the last picture delivered (info.time_base)
  std::int64_t last_capture_us = 0;
  // InputOptions::start_at_zero: the first connection's timestamps move back by the first
  // picture's (in the video time base), the other streams' packets by as much.
  bool zero_known = false;
  std::int64_t zero_origin = 0;
  bool starts_at_zero() const { return options.start_at_zero && !span.trimmed(); }
  void move_to_zero(AVPacket& copied) const {
    if (!starts_at_zero() || !zero_known) return;
    const std::int64_t offset =
        av_rescale_q(zero_origin, video_stream()->time_base, demuxer->streams[copied.stream_index]->time_base);
    if (copied.pts != AV_NOPTS_VALUE) copied.pts -= offset;
    if (copied.dts != AV_NOPTS_VALUE) copied.dts -= offset;
  }
  struct StreamShape {
    AVMediaType type;
    AVCodecID codec;
    AVRational time_base;
  };
  std::vector<StreamShape> first_shapes;  // the first connection's streams, by index
  bool copy_packets = true;               // this connection has the first one's streams

  // FFmpeg asks it while it waits for input: a stop, or a stall.
  static int interrupt_callback(void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    if (self->stop_seen()) return 1;
    return self->stall.expired() ? 1 : 0;
  }
  // interrupt() was called, or the run's stop state (InputOptions::stop_requested) says stop:
  // remembered, so that every later look agrees.
  bool stop_seen() {
    if (interrupted.load(std::memory_order_relaxed)) return true;
    if (!options.stop_requested || !options.stop_requested()) return false;
    interrupted.store(true, std::memory_order_relaxed);
    return true;
  }
  [[noreturn]] void throw_interrupted() { throw OpenInterrupted(display_name(name) + ": stopped while opening"); }
  [[noreturn]] void throw_stall() const { stall.throw_stall(name); }

  AVStream* video_stream() const { return demuxer->streams[video_index]; }

  void open();
  const AVCodec* open_connection();
  void close_connection();
  void reopen();
  void move_to_output_time(AVPacket& copied);
  void open_decoder(const AVCodec* codec);
  void prime();
  bool decode_first_picture();
  void describe(const AVFrame& first);
  // The steps of advance().
  MediaReader::Item advance();
  int receive_picture();
  std::optional<MediaReader::Item> take_picture();
  std::optional<MediaReader::Item> end_of_pictures();
  std::optional<MediaReader::Item> read_packet();
  std::optional<MediaReader::Item> copy_packet();
  void note_decode_error(int error);
  void deliver(AVFrame& frame);
  void deliver_device(AVFrame& frame);
  bool setup_hwdec(const AVCodec* codec);
  bool hwdec_active = false;

  // Takes the GPU's output format when the decoder offers it.
  static AVPixelFormat pick_cuda_format(AVCodecContext* context, const AVPixelFormat* offered) {
    for (const AVPixelFormat* f = offered; *f != AV_PIX_FMT_NONE; ++f)
      if (*f == AV_PIX_FMT_CUDA) return *f;
    auto* self = static_cast<Impl*>(context->opaque);
    warn(self->name, "the GPU decoder does not take this stream; decoding on the CPU");
    return offered[0];
  }
};

namespace {

// FFmpeg's CUDA device on GPU `index`, sharing the CUDA runtime's primary context so that the
// processing backend can read the decoded pictures where they are.
int create_cuda_device(AVBufferRef** device, int index) {
  AVDictionary* device_options = nullptr;
  av_dict_set(&device_options, "primary_ctx", "1", 0);
  const std::string name = std::to_string(index);
  const int result = av_hwdevice_ctx_create(device, AV_HWDEVICE_TYPE_CUDA, name.c_str(), device_options, 0);
  av_dict_free(&device_options);
  return result;
}

}  // namespace

void prepare_gpu_decoding(int device) {
  static std::mutex mutex;
  static std::map<int, AVBufferRef*> kept;  // held until the process ends: they hold the flags
  std::lock_guard lock(mutex);
  if (kept.count(device)) return;
  AVBufferRef* context = nullptr;
  const int result = create_cuda_device(&context, device);
  if (result == AVERROR(ENOTSUP))
    throw IoError(fmt::format("GPU {}: --hwdec cuda: the GPU's CUDA context was started before the decoder, with "
                              "other flags than NVDEC needs; decode on the CPU", device));
  if (result < 0) throw IoError(fmt::format("GPU {}: --hwdec cuda: no CUDA device for decoding ({})", device, av_error_text(result)));
  kept[device] = context;
}

// NVDEC through FFmpeg's CUDA device (create_cuda_device).
bool MediaReader::Impl::setup_hwdec(const AVCodec* codec) {
  if (options.hwdec.empty()) return false;
  if (options.hwdec != "cuda") throw_io(name, "--hwdec " + options.hwdec + ": unknown (accepted: cuda)");
  bool supported = false;
  for (int i = 0;; ++i) {
    const AVCodecHWConfig* config = avcodec_get_hw_config(codec, i);
    if (!config) break;
    if ((config->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX) && config->device_type == AV_HWDEVICE_TYPE_CUDA)
      supported = true;
  }
  if (!supported) {
    warn(name, std::string("--hwdec cuda: no GPU decoder for ") + codec->name + "; decoding on the CPU");
    return false;
  }
  AVBufferRef* device = nullptr;
  const int result = create_cuda_device(&device, options.hwdec_device);
  // FFmpeg shares the GPU's primary context only with its own scheduling flags, which it can set
  // only before anything else in the process has started that context.
  if (result == AVERROR(ENOTSUP))
    throw_io(name, "--hwdec cuda: the GPU's CUDA context was started before the decoder, with other flags than "
                   "NVDEC needs (another library such as PyTorch or CuPy, or an earlier processor, started CUDA "
                   "first); decode on the CPU, or open the NVDEC input before anything else uses the GPU");
  if (result < 0) throw_io(name, "--hwdec cuda: no CUDA device for decoding", result);
  decoder->hw_device_ctx = device;
  decoder->opaque = this;
  decoder->get_format = pick_cuda_format;
  // Pictures wait in the pipeline's queues and lanes: the decoder's surface pool must cover them.
  decoder->extra_hw_frames = options.hw_frames_in_flight;
  return true;
}

void MediaReader::Impl::open() {
  if (!packet || !decoded) throw_io(name, "out of memory");
  if (!is_url(options.url) && options.format.empty()) {
    std::error_code error;
    const auto status = std::filesystem::status(options.url, error);
    if (status.type() == std::filesystem::file_type::directory) {
      throw_io(name, "is a directory, not a media file");
    }
    if (status.type() == std::filesystem::file_type::regular &&
        std::filesystem::file_size(options.url, error) == 0 && !error) {
      throw_io(name, "empty file (0 bytes)");
    }
  }
  register_devices_once();
  const AVCodec* codec = open_connection();
  connection_time_base = video_stream()->time_base;

  int video_streams = 0;
  is_copied.assign(demuxer->nb_streams, false);
  for (unsigned i = 0; i < demuxer->nb_streams; ++i) {
    const AVStream* stream = demuxer->streams[i];
    first_shapes.push_back({stream->codecpar->codec_type, stream->codecpar->codec_id, stream->time_base});
    if (stream->codecpar->codec_type == AVMEDIA_TYPE_VIDEO &&
        !(stream->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
      ++video_streams;
    }
    if (static_cast<int>(i) != video_index && !options.chunk.active) {
      copied_streams.push_back(static_cast<int>(i));
      is_copied[i] = true;
    }
  }
  span.start(*demuxer, video_index, copied_streams);
  if (video_streams > 1) {
    warn(name, std::to_string(video_streams) + " video streams: processing stream #" +
                   std::to_string(video_index) + ", copying the others unchanged");
  }
  open_decoder(codec);
  prime();
}

// Opens the demuxer and picks the video stream (the first time and on every reconnection).
const AVCodec* MediaReader::Impl::open_connection() {
  stall.watch_from_now();
  const AVInputFormat* forced_format = nullptr;
  if (!options.format.empty()) {
    forced_format = av_find_input_format(options.format.c_str());
    if (!forced_format) throw_io(name, "unknown input format '" + options.format + "'");
  }
  Dictionary demuxer_options;
  for (const auto& [key, value] : options.format_options) demuxer_options.set(key, value);

  AVFormatContext* context = avformat_alloc_context();
  if (!context) throw_io(name, "out of memory");
  context->interrupt_callback.callback = &Impl::interrupt_callback;
  context->interrupt_callback.opaque = this;
  if (options.low_delay && is_network_or_camera(options)) {
    // A live network source or camera: packets handed out as they arrive, not buffered while the
    // streams are probed (those are dropped: the picture starts at a later keyframe, as a viewer
    // joining the stream would see it). A file or a pipe keeps them: its first keyframe may be
    // its only one (with the flag a file read with --live lost its first group of pictures).
    context->flags |= AVFMT_FLAG_NOBUFFER;
  }
  const std::string open_url = options.url == "-" ? "pipe:0" : options.url;
  stall.watch_opening(context);
  // On failure avformat_open_input frees the context itself.
  forget_ffmpeg_error();
  int result = avformat_open_input(&context, open_url.c_str(), forced_format, demuxer_options.slot());
  if (result < 0) {
    stall.watch_opening(nullptr);
    if (stop_seen()) throw_interrupted();
    if (stall.stalled()) throw_stall();
    throw_io(name, av_error_text(result) + ffmpeg_detail());
  }
  demuxer.reset(context);
  if (av_dict_count(demuxer_options.get()) > 0) {
    warn(name, "input options not used by the " + std::string(demuxer->iformat->name) +
                   " demuxer: " + demuxer_options.keys());
  }

  result = avformat_find_stream_info(demuxer.get(), nullptr);
  stall.watch_opening(nullptr);
  if (result < 0 && stop_seen()) throw_interrupted();
  if (result < 0 && stall.stalled()) throw_stall();
  if (result < 0) throw_io(name, "cannot read the stream parameters", result);

  const AVCodec* codec = nullptr;
  result = av_find_best_stream(demuxer.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (result == AVERROR_STREAM_NOT_FOUND) throw_io(name, "no video stream");
  if (result == AVERROR_DECODER_NOT_FOUND) {
    int index = av_find_best_stream(demuxer.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    const char* codec_name =
        index >= 0 ? avcodec_get_name(demuxer->streams[index]->codecpar->codec_id) : "?";
    throw_io(name, std::string("no decoder for the video codec '") + codec_name + "'");
  }
  if (result < 0) throw_io(name, "cannot select a video stream", result);
  video_index = result;
  return codec;
}

void MediaReader::Impl::close_connection() {
  decoder.reset();
  demuxer.reset();
  early_packets.clear();
  handed_out.reset();
  av_packet_unref(packet.get());
  av_frame_unref(decoded.get());
  first_frame_pending = false;
  demuxer_done = false;
  decoder_done = false;
  consecutive_errors = 0;
  next_pts = AV_NOPTS_VALUE;
  hwdec_active = false;
  stall.forget_reads();
}

void MediaReader::Impl::reopen() {
  // FFmpeg's own line for each failed attempt ("Connection refused") would repeat every few
  // seconds for as long as the source is away: the caller reports the loss and the return once
  // (and each attempt's cause when verbose).
  struct QuietAttempt {
    int level = av_log_get_level();
    QuietAttempt() {
      if (level < AV_LOG_INFO) av_log_set_level(AV_LOG_FATAL);
    }
    ~QuietAttempt() { av_log_set_level(level); }
  } quiet;
  close_connection();
  ++connection;
  const AVCodec* codec = open_connection();
  connection_time_base = video_stream()->time_base;
  // The copied streams go on only where the new connection has the same ones.
  bool same = demuxer->nb_streams == first_shapes.size();
  for (unsigned i = 0; same && i < demuxer->nb_streams; ++i) {
    const AVCodecParameters* parameters = demuxer->streams[i]->codecpar;
    same = parameters->codec_type == first_shapes[i].type && parameters->codec_id == first_shapes[i].codec &&
           is_copied[i] == (static_cast<int>(i) != video_index);
  }
  if (!same && copy_packets && !copied_streams.empty())
    warn(name, "the source came back with other streams; only its video is kept from now on");
  copy_packets = same;
  open_decoder(codec);
  rebase_pending = true;
  if (decode_first_picture()) {
    deliver(*decoded);
    first_frame_pending = true;
    return;
  }
  if (stop_seen()) throw_interrupted();
  if (stall.stalled()) throw_stall();
  throw_io(name, "no picture after reconnecting", last_error);
}

// Decodes up to the connection's first picture (in `decoded`), keeping the other streams'
// packets read meanwhile for read() to hand out first; false when the input ends before one.
bool MediaReader::Impl::decode_first_picture() {
  for (;;) {
    const Item item = advance();
    if (item != Item::packet) return item == Item::video_frame;
    early_packets.push_back(std::move(handed_out));
  }
}

// A copied packet of a later connection: into the first connection's time base, moved by the
// same offset as the pictures.
void MediaReader::Impl::move_to_output_time(AVPacket& copied) {
  const int index = copied.stream_index;
  const AVRational to = first_shapes[static_cast<std::size_t>(index)].time_base;
  av_packet_rescale_ts(&copied, demuxer->streams[index]->time_base, to);
  const std::int64_t offset = av_rescale_q(pts_offset, to_av(info.time_base), to);
  if (copied.pts != AV_NOPTS_VALUE) copied.pts += offset;
  if (copied.dts != AV_NOPTS_VALUE) copied.dts += offset;
}

void MediaReader::Impl::open_decoder(const AVCodec* codec) {
  decoder.reset(avcodec_alloc_context3(codec));
  if (!decoder) throw_io(name, "out of memory");
  int result = avcodec_parameters_to_context(decoder.get(), video_stream()->codecpar);
  if (result < 0) throw_io(name, "bad video stream parameters", result);
  decoder->pkt_timebase = video_stream()->time_base;
  hwdec_active = setup_hwdec(codec);
  decoder->thread_count = hwdec_active ? 1 : options.decoder_threads;
  // Frame threading decodes several pictures at once, which delays each by a frame per thread;
  // live sources use slice threading instead to keep that delay off the camera path.
  decoder->thread_type = options.low_delay ? FF_THREAD_SLICE : FF_THREAD_FRAME;
  if (options.low_delay) decoder->flags |= AV_CODEC_FLAG_LOW_DELAY;
  result = avcodec_open2(decoder.get(), codec, nullptr);
  if (result < 0) throw_io(name, std::string("cannot open the ") + codec->name + " decoder", result);
  skip_unreferenced_preroll = codec->id == AV_CODEC_ID_H264 && !hwdec_active;
}

// Decodes up to the first picture so that VideoInfo describes what read() will deliver (the
// stream parameters alone can be missing or wrong about the pixel format and colours).
void MediaReader::Impl::prime() {
  if (decode_first_picture()) {
    describe(*decoded);
    deliver(*decoded);
    first_frame_pending = true;
    return;
  }
  if (stop_seen()) throw_interrupted();
  if (decode_errors > 0) {
    throw_io(name, "no picture could be decoded", last_error);
  }
  span.refuse_empty();
  // A video stream without pictures: describe it from its parameters; read() ends at once.
  const AVCodecParameters* parameters = video_stream()->codecpar;
  if (parameters->width <= 0 || parameters->height <= 0) {
    throw_io(name, std::string("no picture could be decoded from the ") +
                       avcodec_get_name(parameters->codec_id) + " stream");
  }
  FramePtr stand_in{av_frame_alloc()};
  stand_in->width = parameters->width;
  stand_in->height = parameters->height;
  stand_in->format = parameters->format == AV_PIX_FMT_NONE ? AV_PIX_FMT_YUV420P : parameters->format;
  stand_in->color_range = parameters->color_range;
  stand_in->colorspace = parameters->color_space;
  stand_in->color_primaries = parameters->color_primaries;
  stand_in->color_trc = parameters->color_trc;
  describe(*stand_in);
}

void MediaReader::Impl::describe(const AVFrame& first) {
  const AVStream* stream = video_stream();
  const AVCodecParameters* parameters = stream->codecpar;
  auto source_format = static_cast<AVPixelFormat>(first.format);
  bool on_device = false;
  if (source_format == AV_PIX_FMT_CUDA) {
    const auto* frames = reinterpret_cast<const AVHWFramesContext*>(first.hw_frames_ctx->data);
    source_format = frames->sw_format;
    if (!is_nvdec_layout(source_format)) {
      const char* format_name = av_get_pix_fmt_name(source_format);
      throw_io(name, std::string("--hwdec cuda: the GPU decodes this stream as ") +
                         (format_name ? format_name : "?") +
                         "; only 4:2:0 pictures (nv12, p010, p016) can stay on the GPU (run without --hwdec)");
    }
    on_device = true;
  }
  info.on_device = on_device;
  info.width = first.width;
  info.height = first.height;
  const char* format_name = av_get_pix_fmt_name(source_format);
  info.source_pixel_format = format_name ? format_name : "unknown";
  info.source_depth = av_format_depth(source_format);
  if (on_device) {
    // NVDEC's P016 also carries 12-bit pictures (value << 4): the stream's own depth says which.
    int depth = source_format == AV_PIX_FMT_NV12 ? 8 : source_format == AV_PIX_FMT_P010 ? 10 : 16;
#ifdef AV_PIX_FMT_P012
    if (source_format == AV_PIX_FMT_P012) depth = 12;
#endif
    const int stream_depth = decoder->sw_pix_fmt != AV_PIX_FMT_NONE ? av_format_depth(decoder->sw_pix_fmt) : 0;
    if (depth == 16 && stream_depth > 10 && stream_depth < 16) depth = stream_depth;
    conversion.choose_device_layout(depth, info);
    info.source_depth = depth;
  } else {
    conversion.choose_layout(source_format, info);
  }
  conversion.choose_depth(options.depth, info);

  // The decoder's per-picture tags are the most reliable; the container's fill the gaps.
  const AVColorSpace space =
      first.colorspace != AVCOL_SPC_UNSPECIFIED ? first.colorspace : parameters->color_space;
  const AVColorRange range_tag =
      first.color_range != AVCOL_RANGE_UNSPECIFIED ? first.color_range : parameters->color_range;
  const AVColorPrimaries primaries = first.color_primaries != AVCOL_PRI_UNSPECIFIED
                                         ? first.color_primaries
                                         : parameters->color_primaries;
  const AVColorTransferCharacteristic transfer =
      first.color_trc != AVCOL_TRC_UNSPECIFIED ? first.color_trc : parameters->color_trc;
  info.color_space = space;
  info.color_range_tag = range_tag;
  info.color_primaries = primaries;
  info.color_transfer = transfer;
  info.matrix = resolve_matrix(space, info.height);
  const bool source_full = is_full_range_yuv_format(source_format) || range_tag == AVCOL_RANGE_JPEG ||
                           (range_tag == AVCOL_RANGE_UNSPECIFIED && !is_yuv_layout(source_format));
  info.range = (info.format == PixelFormat::rgb24 || source_full) ? ColorRange::full : ColorRange::limited;

  info.time_base = to_rational(stream->time_base);
  AVRational rate = stream->avg_frame_rate;
  if (rate.num <= 0 || rate.den <= 0) rate = av_guess_frame_rate(demuxer.get(), const_cast<AVStream*>(stream), nullptr);
  info.frame_rate = rate.num > 0 && rate.den > 0 ? to_rational(rate) : Rational{0, 1};
  AVRational aspect = av_guess_sample_aspect_ratio(demuxer.get(), const_cast<AVStream*>(stream),
                                                   const_cast<AVFrame*>(&first));
  info.sample_aspect_ratio = aspect.num > 0 && aspect.den > 0 ? to_rational(aspect) : Rational{0, 1};

  const auto* matrix = reinterpret_cast<const std::int32_t*>(
      av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, nullptr));
  if (matrix) {
    const double degrees = av_display_rotation_get(matrix);
    info.rotation_degrees = std::isnan(degrees) || degrees == 0.0 ? 0.0 : degrees;
  }

  const std::string container = demuxer->iformat->name;
  const bool image_pipe = container.size() > 5 && container.compare(container.size() - 5, 5, "_pipe") == 0;
  const bool image_file = container == "image2" && stream->duration != AV_NOPTS_VALUE && stream->duration <= 1;
  info.still_image = image_pipe || image_file;
  info.frame_count = info.still_image ? 1 : std::max<std::int64_t>(stream->nb_frames, 0);
  if (stream->duration != AV_NOPTS_VALUE && stream->duration > 0) {
    info.duration_seconds = stream->duration * av_q2d(stream->time_base);
  } else if (demuxer->duration != AV_NOPTS_VALUE && demuxer->duration > 0) {
    info.duration_seconds = demuxer->duration / double(AV_TIME_BASE);
  }
  const AVClass* demuxer_class = demuxer->iformat->priv_class;
  const bool device = demuxer_class && (demuxer_class->category == AV_CLASS_CATEGORY_DEVICE_VIDEO_INPUT ||
                                        demuxer_class->category == AV_CLASS_CATEGORY_DEVICE_INPUT);
  info.live = device || is_url(options.url);
  info.codec_name = avcodec_get_name(parameters->codec_id);
  info.container_name = container;
  span.describe(info);
}

// Next decoded picture (in `decoded`), other stream's packet (in `handed_out`), or the end.
MediaReader::Item MediaReader::Impl::advance() {
  for (;;) {
    if (interrupted.load(std::memory_order_relaxed) || decoder_done) return Item::end;
    const int result = receive_picture();
    if (result == 0) {
      if (const std::optional<Item> item = take_picture()) return *item;
      continue;
    }
    if (result == AVERROR_EOF) {
      if (const std::optional<Item> item = end_of_pictures()) return *item;
      continue;
    }
    if (result != AVERROR(EAGAIN)) {
      note_decode_error(result);
      continue;
    }
    if (demuxer_done) {  // a flushed decoder never asks for more input; be safe anyway
      if (const std::optional<Item> item = end_of_pictures()) return *item;
      continue;
    }
    if (const std::optional<Item> item = read_packet()) return *item;
  }
}

// The decoder's next picture into `decoded` (0), or why there is none: EAGAIN when it wants a
// packet (or no picture is wanted any more), AVERROR_EOF when it is drained, or an error.
int MediaReader::Impl::receive_picture() {
  if (other_streams_only_now || span.video_ended()) return AVERROR(EAGAIN);
  return avcodec_receive_frame(decoder.get(), decoded.get());
}

// A decoded picture: delivered, the end (past the chunk, or past the span with nothing more to
// copy), or dropped (nothing: advance() looks again).
std::optional<MediaReader::Item> MediaReader::Impl::take_picture() {
  consecutive_errors = 0;
  const SpanFilter::PictureVerdict verdict =
      span.judge_picture(decoded->best_effort_timestamp, connection == 0, early_packets);
  if (verdict == SpanFilter::PictureVerdict::keep) return Item::video_frame;
  av_frame_unref(decoded.get());
  switch (verdict) {
    case SpanFilter::PictureVerdict::seek_back:
      avcodec_flush_buffers(decoder.get());
      early_packets.clear();
      span.seek_back(*demuxer);
      return std::nullopt;
    case SpanFilter::PictureVerdict::video_ended:
      if (!span.others_ended(copy_packets)) return std::nullopt;
      decoder_done = true;
      return Item::end;
    case SpanFilter::PictureVerdict::end:
      decoder_done = true;
      return Item::end;
    case SpanFilter::PictureVerdict::drop: ++pictures_dropped; break;
    case SpanFilter::PictureVerdict::keep: break;
  }
  return std::nullopt;
}

// The decoder has no more pictures: the packets the span still held back go out (the input
// ended inside the span), then the end. Where -ss's seek landed past the last keyframe before
// the span, no picture came after it: the span seeks again from further back (nothing then).
std::optional<MediaReader::Item> MediaReader::Impl::end_of_pictures() {
  if (span.no_picture_after_seek(connection == 0)) {
    avcodec_flush_buffers(decoder.get());
    early_packets.clear();
    demuxer_done = false;
    span.seek_back(*demuxer);
    return std::nullopt;
  }
  decoder_done = true;
  span.release_all(early_packets);
  return Item::end;
}

// One packet from the demuxer: a video packet into the decoder, another stream's to
// copy_packet(), or the end of the input (the decoder then drains). Nothing (advance() looks
// again) unless there is an item for read().
std::optional<MediaReader::Item> MediaReader::Impl::read_packet() {
  // The wait for a packet starts now (the pipeline may have held this thread back), or at the
  // first of a run of EAGAIN answers.
  stall.before_read();
  const int result = av_read_frame(demuxer.get(), packet.get());
  if (stall.answered_again(result)) {
    if (stall.expired()) throw_stall();
    return std::nullopt;  // non-blocking devices: nothing yet
  }
  if (result < 0) {
    if (stop_seen()) return Item::end;
    if (stall.stalled()) throw_stall();
    if (result != AVERROR_EOF && !(demuxer->pb && avio_feof(demuxer->pb))) {
      throw_io(name, "read error", result);
    }
    demuxer_done = true;
    avcodec_send_packet(decoder.get(), nullptr);  // drain the pictures still in the decoder
    return std::nullopt;
  }
  if (packet->stream_index != video_index) return copy_packet();
  const bool first_connection = connection == 0;
  const bool wanted = !other_streams_only_now && !span.video_ended() && !span.before_chunk_keyframe(*packet, first_connection);
  // Read at each packet's submission, by every decoding thread.
  if (wanted && skip_unreferenced_preroll)
    decoder->skip_frame = span.before_chunk(*packet, first_connection) ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
  const int sent = wanted ? avcodec_send_packet(decoder.get(), packet.get()) : 0;
  av_packet_unref(packet.get());
  if (sent < 0 && sent != AVERROR(EAGAIN)) note_decode_error(sent);
  return std::nullopt;
}

// A packet of another stream: handed out (Item::packet) where its stream is copied and the span
// keeps it; the end when it was the last the span wanted.
std::optional<MediaReader::Item> MediaReader::Impl::copy_packet() {
  const int index = packet->stream_index;
  if (index < 0 || index >= static_cast<int>(is_copied.size()) || !is_copied[index] || !copy_packets) {
    av_packet_unref(packet.get());  // a stream that appeared after opening, or not copied
    return std::nullopt;
  }
  switch (span.judge_packet(*packet, demuxer->streams[index]->time_base, connection == 0)) {
    case SpanFilter::PacketVerdict::held: return std::nullopt;
    case SpanFilter::PacketVerdict::left_out:
      av_packet_unref(packet.get());
      if ((span.video_ended() || other_streams_only_now) && span.others_ended(copy_packets)) {
        decoder_done = true;
        return Item::end;
      }
      return std::nullopt;
    case SpanFilter::PacketVerdict::hand_out: break;
  }
  handed_out.reset(av_packet_alloc());
  if (!handed_out) throw_io(name, "out of memory");
  av_packet_move_ref(handed_out.get(), packet.get());
  return Item::packet;
}

void MediaReader::Impl::note_decode_error(int error) {
  if (error == AVERROR(ENOMEM)) throw_io(name, "decoding", error);
  last_error = error;
  ++decode_errors;
  if (decode_errors == 1) {
    warn(name, "decode error (" + av_error_text(error) + "), picture skipped; later ones are only counted");
  }
  if (++consecutive_errors >= kMaxConsecutiveDecodeErrors) {
    throw_io(name, std::to_string(consecutive_errors) + " decode errors in a row", error);
  }
}

void MediaReader::Impl::deliver(AVFrame& frame) {
  current.capture_us = steady_now_us();
  current.device_picture.reset();
  std::int64_t pts = frame.best_effort_timestamp;
  if (pts == AV_NOPTS_VALUE) pts = next_pts != AV_NOPTS_VALUE ? next_pts : 0;
  std::int64_t duration = frame.pkt_duration;
  if (duration <= 0 && info.frame_rate.num > 0) {
    duration = av_rescale_q(1, AVRational{info.frame_rate.den, info.frame_rate.num}, connection_time_base);
  }
  next_pts = pts + std::max<std::int64_t>(duration, 1);
  if (connection > 0) {
    const AVRational output_time_base = to_av(info.time_base);
    pts = av_rescale_q(pts, connection_time_base, output_time_base);
    duration = av_rescale_q(duration, connection_time_base, output_time_base);
    if (rebase_pending) {
      // The first picture after a reconnection comes the real gap after the last one before.
      const std::int64_t gap =
          av_rescale_q(current.capture_us - last_capture_us, AVRational{1, 1000000}, output_time_base);
      pts_offset = last_pts + std::max<std::int64_t>(gap, 1) - pts;
      rebase_pending = false;
    }
    pts += pts_offset;
  }
  pts = span.on_span_clock(pts, connection == 0);
  if (connection == 0 && starts_at_zero()) {
    if (!zero_known) {
      zero_origin = pts;
      zero_known = true;
    }
    pts -= zero_origin;
  }
  current.pts = pts;
  current.duration = std::max<std::int64_t>(duration, 0);
  last_pts = pts;
  last_capture_us = current.capture_us;

  if (frame.format == AV_PIX_FMT_CUDA) return deliver_device(frame);
  current.view = conversion.convert(frame, info);
}

// A GPU picture: the view points at device memory, and a reference keeps the surface from being
// reused until the caller lets go of it.
void MediaReader::Impl::deliver_device(AVFrame& frame) {
  if (!info.on_device || frame.width != info.width || frame.height != info.height)
    throw_io(name, "--hwdec cuda: the picture size changed mid-stream (run without --hwdec)");
  AVFrame* held = av_frame_clone(&frame);
  if (!held) throw_io(name, "out of memory");
  current.device_picture = std::shared_ptr<void>(held, [](void* p) {
    auto* f = static_cast<AVFrame*>(p);
    av_frame_free(&f);
  });
  ImageView& view = current.view;
  view = ImageView{};
  view.format = PixelFormat::nv12;
  view.width = info.width;
  view.height = info.height;
  view.matrix = info.matrix;
  view.range = info.range;
  view.depth = conversion.layout_depth();  // P010/P016: the value in the high bits (sample_shift)
  view.plane_count = 2;
  for (int i = 0; i < 2; ++i) {
    PlaneView plane = plane_geometry(PixelFormat::nv12, info.width, info.height, i, conversion.layout_depth());
    plane.data = held->data[i];
    plane.stride = held->linesize[i];
    view.planes[i] = plane;
  }
}

// --- MediaReader ---------------------------------------------------------------------------

MediaReader::MediaReader(const InputOptions& options) : impl_(std::make_unique<Impl>(options)) {
  impl_->open();
}

MediaReader::~MediaReader() = default;

bool parse_time_text(const std::string& text, double* seconds) {
  std::int64_t us = 0;
  if (text.empty() || av_parse_time(&us, text.c_str(), 1) < 0) return false;
  *seconds = static_cast<double>(us) / 1e6;
  return true;
}

bool is_input_format(const std::string& name) {
  register_devices_once();
  return av_find_input_format(name.c_str()) != nullptr;
}

bool is_video_size(const std::string& text) {
  int width = 0, height = 0;
  return av_parse_video_size(&width, &height, text.c_str()) >= 0;
}

bool is_frame_rate(const std::string& text) {
  AVRational rate{0, 1};
  return av_parse_video_rate(&rate, text.c_str()) >= 0;
}

bool is_pixel_format(const std::string& name) { return av_get_pix_fmt(name.c_str()) != AV_PIX_FMT_NONE; }

const VideoInfo& MediaReader::video() const { return impl_->info; }

MediaReader::Item MediaReader::read() {
  Impl& impl = *impl_;
  if (impl.stop_seen()) return Item::end;
  if (!impl.early_packets.empty()) {
    impl.handed_out = std::move(impl.early_packets.front());
    impl.early_packets.pop_front();
    if (impl.connection > 0) impl.move_to_output_time(*impl.handed_out);
    else impl.move_to_zero(*impl.handed_out);
    return Item::packet;
  }
  if (impl.first_frame_pending) {
    impl.first_frame_pending = false;
    if (!impl.options.other_streams_only) return Item::video_frame;
  }
  if (impl.options.other_streams_only && !impl.other_streams_only_now && impl.video_index >= 0) {
    // The video's packets are not wanted from here on: demuxers that can (MP4, MOV) skip them
    // without reading them (a job's join reads the source for its audio only).
    impl.demuxer->streams[impl.video_index]->discard = AVDISCARD_ALL;
  }
  impl.other_streams_only_now = impl.options.other_streams_only;
  const Item item = impl.advance();
  if (item == Item::end && !impl.early_packets.empty()) {  // packets released as the input ended
    impl.handed_out = std::move(impl.early_packets.front());
    impl.early_packets.pop_front();
    return Item::packet;
  }
  if (item == Item::video_frame) impl.deliver(*impl.decoded);
  if (item == Item::packet && impl.connection > 0) impl.move_to_output_time(*impl.handed_out);
  else if (item == Item::packet) impl.move_to_zero(*impl.handed_out);
  return item;
}

void MediaReader::reopen() { impl_->reopen(); }

const DecodedFrame& MediaReader::frame() const { return impl_->current; }

Packet MediaReader::take_packet() { return std::move(impl_->handed_out); }

void MediaReader::interrupt() { impl_->interrupted.store(true, std::memory_order_relaxed); }

bool MediaReader::interrupted() const { return impl_->stop_seen(); }

bool is_network_or_camera(const InputOptions& options) {
  static const char* const kCameraFormats[] = {"v4l2", "video4linux2", "dshow", "avfoundation", "decklink"};
  for (const char* camera : kCameraFormats)
    if (options.format == camera) return true;
  if (options.url.rfind("/dev/video", 0) == 0) return true;
  const auto scheme_end = options.url.find("://");
  if (scheme_end == std::string::npos) return false;
  const std::string scheme = options.url.substr(0, scheme_end);
  return scheme != "file" && scheme != "pipe" && scheme != "fd";
}

int MediaReader::decode_errors() const { return impl_->decode_errors; }
std::int64_t MediaReader::pictures_dropped() const { return impl_->pictures_dropped; }

std::int64_t MediaReader::delivered_pts(std::int64_t input_pts) const { return impl_->span.on_span_clock(input_pts, true); }

const std::vector<int>& MediaReader::copied_stream_indices() const { return impl_->copied_streams; }

AVFormatContext* MediaReader::format_context() const { return impl_->demuxer.get(); }

int MediaReader::video_stream_index() const { return impl_->video_index; }

}  // namespace hazefree::io
