#include "io/jpeg_encoder.hpp"

#include <algorithm>
#include <memory>

#include "io/av_error.hpp"
#include "io/av_owners.hpp"
#include "io/av_pixel_format.hpp"
#include "io/media_reader.hpp"

namespace hazefree::io {
namespace {

constexpr const char* kName = "jpeg";

}  // namespace

std::vector<std::uint8_t> encode_jpeg(const ImageView& frame, int max_width, int quality) {
  using namespace detail;
  const AVPixelFormat source = to_av_format(frame.format, frame.depth);
  if (source == AV_PIX_FMT_NONE || frame.width <= 0 || frame.height <= 0)
    throw_io(kName, "no JPEG of a " + std::string(to_string(frame.format)) + " frame at this depth");
  int width = frame.width, height = frame.height;
  if (max_width > 0 && width > max_width) {
    height = std::max(2, static_cast<int>(static_cast<std::int64_t>(height) * max_width / width));
    width = max_width;
  }
  width = std::max(2, width & ~1);
  height = std::max(2, height & ~1);

  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
  if (!codec) throw_io(kName, "FFmpeg has no mjpeg encoder");
  CodecContextPtr context(avcodec_alloc_context3(codec));
  if (!context) throw_io(kName, "out of memory");
  context->width = width;
  context->height = height;
  context->pix_fmt = AV_PIX_FMT_YUVJ420P;
  context->time_base = AVRational{1, 25};
  context->flags |= AV_CODEC_FLAG_QSCALE;
  context->global_quality = FF_QP2LAMBDA * std::clamp(quality, 2, 31);
  if (const int error = avcodec_open2(context.get(), codec, nullptr); error < 0)
    throw_io(kName, "cannot open the mjpeg encoder", error);

  FramePtr picture(av_frame_alloc());
  if (!picture) throw_io(kName, "out of memory");
  picture->format = AV_PIX_FMT_YUVJ420P;
  picture->width = width;
  picture->height = height;
  picture->quality = context->global_quality;
  if (const int error = av_frame_get_buffer(picture.get(), 0); error < 0) throw_io(kName, "out of memory", error);

  SwsPtr scaler(sws_getContext(frame.width, frame.height, source, width, height, AV_PIX_FMT_YUVJ420P, SWS_BILINEAR,
                               nullptr, nullptr, nullptr));
  if (!scaler) throw_io(kName, "cannot convert the frame for JPEG");
  const bool yuv = is_yuv(frame.format);
  const int* source_table = sws_getCoefficients(sws_matrix_id(frame.matrix));
  sws_setColorspaceDetails(scaler.get(), source_table, yuv && frame.range == ColorRange::full ? 1 : (yuv ? 0 : 1),
                           sws_getCoefficients(SWS_CS_ITU601), 1, 0, 1 << 16, 1 << 16);
  const std::uint8_t* planes[4] = {};
  int strides[4] = {};
  for (int i = 0; i < frame.plane_count; ++i) {
    planes[i] = frame.planes[static_cast<std::size_t>(i)].data;
    strides[i] = frame.planes[static_cast<std::size_t>(i)].stride;
  }
  sws_scale(scaler.get(), planes, strides, 0, frame.height, picture->data, picture->linesize);

  if (const int error = avcodec_send_frame(context.get(), picture.get()); error < 0)
    throw_io(kName, "cannot encode the picture", error);
  if (const int error = avcodec_send_frame(context.get(), nullptr); error < 0)
    throw_io(kName, "cannot encode the picture", error);
  std::vector<std::uint8_t> jpeg;
  struct PacketDeleter {
    void operator()(AVPacket* packet) const { av_packet_free(&packet); }
  };
  const std::unique_ptr<AVPacket, PacketDeleter> packet(av_packet_alloc());
  if (!packet) throw_io(kName, "out of memory");
  int error = 0;
  while ((error = avcodec_receive_packet(context.get(), packet.get())) >= 0) {
    jpeg.insert(jpeg.end(), packet->data, packet->data + packet->size);
    av_packet_unref(packet.get());
  }
  if (error != AVERROR_EOF) throw_io(kName, "cannot encode the picture", error);
  return jpeg;
}

}  // namespace hazefree::io
