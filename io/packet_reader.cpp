#include "io/packet_reader.hpp"

#include <filesystem>

#include "io/av_error.hpp"
#include "io/av_owners.hpp"

namespace hazefree::io {

using namespace detail;

struct PacketReader::Impl {
  std::string name;
  InputContextPtr demuxer;
  int video_index = -1;
};

PacketReader::PacketReader(const std::string& url, Opening opening) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.name = url;
  std::error_code error;
  if (std::filesystem::is_directory(url, error)) throw_io(url, "is a directory, not a media file");
  AVFormatContext* context = nullptr;
  int result = avformat_open_input(&context, url.c_str(), nullptr, nullptr);
  if (result < 0) throw_io(url, av_error_text(result));
  m.demuxer.reset(context);
  if (opening == Opening::probed) {
    result = avformat_find_stream_info(context, nullptr);
    if (result < 0) throw_io(url, "cannot read the stream parameters", result);
  }
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

std::int64_t PacketReader::start_time_us() const {
  return impl_->demuxer->start_time != AV_NOPTS_VALUE ? impl_->demuxer->start_time : 0;
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

namespace {

// The NAL unit types in a packet of H.264 or HEVC, length-prefixed (avcC / hvcC extradata,
// as in MP4 and Matroska) or with Annex B start codes (MPEG-TS, raw streams).
class NalTypes {
 public:
  explicit NalTypes(const AVCodecParameters& parameters) : hevc_(parameters.codec_id == AV_CODEC_ID_HEVC) {
    const std::uint8_t* x = parameters.extradata;
    const int n = parameters.extradata_size;
    if (n > 0 && x[0] == 1) {
      if (!hevc_ && n >= 5) length_size_ = (x[4] & 3) + 1;
      if (hevc_ && n >= 22) length_size_ = (x[21] & 3) + 1;
    }
  }
  // True when one of the packet's NAL units is of a type that starts clean decoding.
  bool clean(const std::uint8_t* data, int size) const {
    if (length_size_ > 0) {
      int at = 0;
      while (at + length_size_ < size) {
        std::uint32_t length = 0;
        for (int i = 0; i < length_size_; ++i) length = (length << 8) | data[at + i];
        at += length_size_;
        if (length == 0 || length > static_cast<std::uint32_t>(size - at)) return false;
        if (clean_type(data[at])) return true;
        at += static_cast<int>(length);
      }
      return false;
    }
    for (int i = 0; i + 3 < size; ++i)
      if (data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 && clean_type(data[i + 3])) return true;
    return false;
  }

 private:
  bool clean_type(std::uint8_t header) const {
    if (hevc_) {
      const int type = (header >> 1) & 0x3f;
      return type >= 16 && type <= 21;  // BLA, IDR, CRA (its skipped leading pictures come earlier)
    }
    return (header & 0x1f) == 5;  // IDR
  }
  bool hevc_;
  int length_size_ = 0;  // 0: Annex B
};

}  // namespace

VideoIndex index_video_packets(const std::string& url) {
  PacketReader reader(url);
  VideoIndex index;
  index.time_base = reader.time_base();
  index.start_time_us = reader.start_time_us();
  index.frame_rate = reader.frame_rate();
  index.codec_name = reader.codec_name();
  index.other_streams = reader.other_stream_count();
  const AVCodecParameters& parameters = *reader.codec_parameters();
  const bool parsed = parameters.codec_id == AV_CODEC_ID_H264 || parameters.codec_id == AV_CODEC_ID_HEVC;
  const NalTypes nal_types(parameters);
  while (Packet packet = reader.next()) {
    if (packet->pts == AV_NOPTS_VALUE) {
      throw_io(url, "video packet " + std::to_string(index.packets.size()) +
                        " has no timestamp: this file cannot be cut into chunks (remux it, e.g. into .mkv or .mp4)");
    }
    // Matroska stores no dts for pictures that B-frames reorder; its index (and seeking) is by pts.
    const std::int64_t dts = packet->dts != AV_NOPTS_VALUE ? packet->dts : packet->pts;
    const bool key = (packet->flags & AV_PKT_FLAG_KEY) != 0;
    index.packets.push_back({packet->pts, dts, key, key && parsed && nal_types.clean(packet->data, packet->size)});
  }
  if (index.packets.empty()) throw_io(url, "no video packets");
  return index;
}

}  // namespace hazefree::io
