#include "io/packet_reader.hpp"

#include <filesystem>

#include "io/av_error.hpp"

namespace hazefree::io {

using namespace detail;

struct PacketReader::Impl {
  std::string name;
  InputContextPtr demuxer;
  int video_index = -1;
};

PacketReader::PacketReader(const std::string& url) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.name = url;
  std::error_code error;
  if (std::filesystem::is_directory(url, error)) throw_io(url, "is a directory, not a media file");
  AVFormatContext* context = nullptr;
  int result = avformat_open_input(&context, url.c_str(), nullptr, nullptr);
  if (result < 0) throw_io(url, av_error_text(result));
  m.demuxer.reset(context);
  result = avformat_find_stream_info(context, nullptr);
  if (result < 0) throw_io(url, "cannot read the stream parameters", result);
  result = av_find_best_stream(context, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (result < 0) throw_io(url, "no video stream");
  m.video_index = result;
}

PacketReader::~PacketReader() = default;

Packet PacketReader::next() {
  Impl& m = *impl_;
  for (;;) {
    Packet packet{av_packet_alloc()};
    if (!packet) throw_io(m.name, "out of memory");
    const int result = av_read_frame(m.demuxer.get(), packet.get());
    if (result == AVERROR_EOF) return nullptr;
    if (result < 0) throw_io(m.name, "read error", result);
    if (packet->stream_index == m.video_index) return packet;
  }
}

Rational PacketReader::time_base() const {
  const AVRational tb = impl_->demuxer->streams[impl_->video_index]->time_base;
  return {tb.num, tb.den};
}

Rational PacketReader::frame_rate() const {
  AVStream* stream = impl_->demuxer->streams[impl_->video_index];
  AVRational rate = stream->avg_frame_rate;
  if (rate.num <= 0 || rate.den <= 0) rate = av_guess_frame_rate(impl_->demuxer.get(), stream, nullptr);
  return rate.num > 0 && rate.den > 0 ? Rational{rate.num, rate.den} : Rational{0, 1};
}

const AVCodecParameters* PacketReader::codec_parameters() const {
  return impl_->demuxer->streams[impl_->video_index]->codecpar;
}

std::string PacketReader::codec_name() const { return avcodec_get_name(codec_parameters()->codec_id); }

int PacketReader::other_stream_count() const { return static_cast<int>(impl_->demuxer->nb_streams) - 1; }

VideoIndex index_video_packets(const std::string& url) {
  PacketReader reader(url);
  VideoIndex index;
  index.time_base = reader.time_base();
  index.frame_rate = reader.frame_rate();
  index.codec_name = reader.codec_name();
  index.other_streams = reader.other_stream_count();
  while (Packet packet = reader.next()) {
    if (packet->pts == AV_NOPTS_VALUE) {
      throw_io(url, "video packet " + std::to_string(index.packets.size()) +
                        " has no timestamp: this file cannot be cut into chunks (remux it, e.g. into .mkv or .mp4)");
    }
    // Matroska stores no dts for pictures that B-frames reorder; its index (and seeking) is by pts.
    const std::int64_t dts = packet->dts != AV_NOPTS_VALUE ? packet->dts : packet->pts;
    index.packets.push_back({packet->pts, dts, (packet->flags & AV_PKT_FLAG_KEY) != 0});
  }
  if (index.packets.empty()) throw_io(url, "no video packets");
  return index;
}

}  // namespace hazefree::io
