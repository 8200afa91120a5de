// Helpers of the robustness tests: hand-made inputs (y4m of every chroma layout, WAV, media
// muxed with libavformat directly), probing an output by decoding it, and process counters
// read from /proc.
#pragma once

#include <unistd.h>

#include <cerrno>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
}

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/media_reader.hpp"

namespace hazefree::test {

// Writes all of `bytes` to a pipe, through interrupted writes; false when the reader is gone.
inline bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

inline std::string q(const std::string& s) { return "'" + s + "'"; }

struct Probe {
  int width = 0, height = 0;
  std::int64_t video_frames = 0;
  std::vector<std::int64_t> pts;     // in info.time_base
  std::vector<std::int64_t> pts_us;  // the same in microseconds
  std::map<int, std::int64_t> packets_by_type;  // AVMediaType -> packets of other streams
  io::VideoInfo info;
};

// Decodes a whole file with the project's reader: what a player would get.
inline Probe probe_media(const std::string& path) {
  io::InputOptions in;
  in.url = path;
  io::MediaReader reader(in);
  Probe p;
  p.info = reader.video();
  p.width = p.info.width;
  p.height = p.info.height;
  const AVRational time_base{p.info.time_base.num, p.info.time_base.den};
  for (;;) {
    const auto item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item == io::MediaReader::Item::video_frame) {
      ++p.video_frames;
      p.pts.push_back(reader.frame().pts);
      p.pts_us.push_back(av_rescale_q(reader.frame().pts, time_base, AVRational{1, 1000000}));
    } else {
      io::Packet packet = reader.take_packet();
      ++p.packets_by_type[reader.format_context()->streams[packet->stream_index]->codecpar->codec_type];
    }
  }
  return p;
}

// Every entry of a folder, hidden ones included (a temporary output is hidden).
inline std::vector<std::string> folder_entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

// The product's own lines on stderr, warnings left out.
inline std::vector<std::string> own_lines(const std::string& text) {
  std::vector<std::string> own;
  for (const std::string& line : lines_of(text))
    if (line.rfind("hazefree: ", 0) == 0 && line.rfind("hazefree: warning: ", 0) != 0) own.push_back(line);
  return own;
}

// A YUV4MPEG2 stream: `chroma` is the C tag (420jpeg, 422, 444, mono, 420p10), pictures are a
// moving gradient, 10-bit samples little-endian.
inline std::string y4m_header(int width, int height, const std::string& chroma, const std::string& rate = "25:1") {
  return "YUV4MPEG2 W" + std::to_string(width) + " H" + std::to_string(height) + " F" + rate + " Ip A1:1 C" +
         chroma + "\n";
}

inline std::string y4m_frame(int width, int height, const std::string& chroma, int index) {
  const bool ten_bit = chroma.find("p10") != std::string::npos;
  int chroma_w = (width + 1) / 2, chroma_h = (height + 1) / 2, planes = 3;
  if (chroma == "422") chroma_h = height;
  if (chroma == "444") chroma_w = width, chroma_h = height;
  if (chroma == "mono") planes = 1;
  std::string bytes = "FRAME\n";
  auto put = [&](int value) {
    if (ten_bit) {
      value *= 4;
      bytes.push_back(static_cast<char>(value & 0xff));
      bytes.push_back(static_cast<char>(value >> 8));
    } else {
      bytes.push_back(static_cast<char>(value));
    }
  };
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) put(16 + (x * 7 + y * 3 + index * 5) % 220);
  for (int p = 1; p < planes; ++p)
    for (int y = 0; y < chroma_h; ++y)
      for (int x = 0; x < chroma_w; ++x) put(64 + (x * p + y * 2 + index) % 128);
  return bytes;
}

inline void write_y4m_file(const std::string& path, int width, int height, const std::string& chroma, int frames) {
  std::ofstream file(path, std::ios::binary);
  file << y4m_header(width, height, chroma);
  for (int i = 0; i < frames; ++i) file << y4m_frame(width, height, chroma, i);
}

// A 16-bit mono PCM WAV of `samples` samples at 8 kHz, header written field by field.
inline void write_wav(const std::string& path, int samples) {
  std::ofstream file(path, std::ios::binary);
  auto u32 = [&](std::uint32_t v) { for (int i = 0; i < 4; ++i) file.put(static_cast<char>((v >> (8 * i)) & 0xff)); };
  auto u16 = [&](std::uint16_t v) { file.put(static_cast<char>(v & 0xff)); file.put(static_cast<char>(v >> 8)); };
  const std::uint32_t data_bytes = static_cast<std::uint32_t>(samples) * 2;
  file << "RIFF";
  u32(36 + data_bytes);
  file << "WAVEfmt ";
  u32(16);
  u16(1);      // PCM
  u16(1);      // channels
  u32(8000);   // sample rate
  u32(16000);  // byte rate
  u16(2);      // block align
  u16(16);     // bits per sample
  file << "data";
  u32(data_bytes);
  for (int i = 0; i < samples; ++i) u16(static_cast<std::uint16_t>((i * 397) & 0x7fff));
}

// One picture to mux: which stream, its size and presentation time in milliseconds.
struct MuxPicture {
  int stream = 0;
  int width = 0, height = 0;
  std::int64_t pts_ms = 0;
};

// Writes `pictures` with libavformat/libavcodec directly (the product's writer is not used to
// make its own inputs). `codec` ffv1 or mjpeg (mjpeg carries the size in every picture, so a
// size change mid-stream reaches the decoder); `rotation` adds a display matrix to stream 0;
// `default_stream` is the one marked as the default track.
inline void mux_pictures(const std::string& path, int streams, AVCodecID codec_id,
                         const std::vector<MuxPicture>& pictures, double rotation = 0.0,
                         int default_stream = 0) {
  AVFormatContext* muxer = nullptr;
  if (avformat_alloc_output_context2(&muxer, nullptr, nullptr, path.c_str()) < 0) throw std::runtime_error("muxer");
  const AVCodec* codec = avcodec_find_encoder(codec_id);
  const AVPixelFormat format = codec_id == AV_CODEC_ID_MJPEG ? AV_PIX_FMT_YUVJ420P : AV_PIX_FMT_YUV420P;
  std::vector<AVCodecContext*> encoders(streams, nullptr);
  std::vector<AVStream*> out(streams, nullptr);
  auto open_encoder = [&](int s, int width, int height) {
    avcodec_free_context(&encoders[s]);
    AVCodecContext* encoder = avcodec_alloc_context3(codec);
    encoder->width = width;
    encoder->height = height;
    encoder->pix_fmt = format;
    encoder->time_base = AVRational{1, 1000};
    encoder->strict_std_compliance = FF_COMPLIANCE_EXPERIMENTAL;
    if (muxer->oformat->flags & AVFMT_GLOBALHEADER) encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (avcodec_open2(encoder, codec, nullptr) < 0) throw std::runtime_error("encoder");
    encoders[s] = encoder;
  };
  for (int s = 0; s < streams; ++s) {
    const auto first = std::find_if(pictures.begin(), pictures.end(), [&](const MuxPicture& p) { return p.stream == s; });
    open_encoder(s, first->width, first->height);
    out[s] = avformat_new_stream(muxer, nullptr);
    avcodec_parameters_from_context(out[s]->codecpar, encoders[s]);
    out[s]->time_base = AVRational{1, 1000};
    out[s]->disposition = s == default_stream ? AV_DISPOSITION_DEFAULT : 0;
  }
  if (rotation != 0.0) {
    auto* matrix = reinterpret_cast<std::int32_t*>(
        av_stream_new_side_data(out[0], AV_PKT_DATA_DISPLAYMATRIX, 9 * sizeof(std::int32_t)));
    av_display_rotation_set(matrix, rotation);
  }
  if (avio_open(&muxer->pb, path.c_str(), AVIO_FLAG_WRITE) < 0) throw std::runtime_error("open " + path);
  if (avformat_write_header(muxer, nullptr) < 0) throw std::runtime_error("header");
  AVPacket* packet = av_packet_alloc();
  auto drain = [&](int s) {
    while (avcodec_receive_packet(encoders[s], packet) == 0) {
      packet->stream_index = s;
      if (packet->duration <= 0) packet->duration = 40;  // else mov trims the last sample
      av_packet_rescale_ts(packet, encoders[s]->time_base, out[s]->time_base);
      av_interleaved_write_frame(muxer, packet);
    }
  };
  int index = 0;
  for (const MuxPicture& picture : pictures) {
    AVCodecContext*& encoder = encoders[picture.stream];
    if (encoder->width != picture.width || encoder->height != picture.height) {
      avcodec_send_frame(encoder, nullptr);
      drain(picture.stream);
      open_encoder(picture.stream, picture.width, picture.height);
    }
    AVFrame* frame = av_frame_alloc();
    frame->width = picture.width;
    frame->height = picture.height;
    frame->format = format;
    av_frame_get_buffer(frame, 0);
    for (int p = 0; p < 3; ++p) {
      const int h = p ? (picture.height + 1) / 2 : picture.height;
      const int w = p ? (picture.width + 1) / 2 : picture.width;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          frame->data[p][y * frame->linesize[p] + x] = static_cast<std::uint8_t>(p ? 128 : (x * 5 + y * 3 + index * 7) % 256);
    }
    frame->pts = picture.pts_ms;
    avcodec_send_frame(encoder, frame);
    av_frame_free(&frame);
    drain(picture.stream);
    ++index;
  }
  for (int s = 0; s < streams; ++s) {
    avcodec_send_frame(encoders[s], nullptr);
    drain(s);
    avcodec_free_context(&encoders[s]);
  }
  av_packet_free(&packet);
  av_write_trailer(muxer);
  avio_closep(&muxer->pb);
  avformat_free_context(muxer);
}

// A number from /proc/self/status (or another process's), e.g. "VmRSS" (kB) or "Threads".
inline long proc_status_value(const std::string& key, const std::string& pid = "self") {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

inline long open_descriptor_count() {
  long count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

// Sanitizer builds keep freed memory in quarantine and change thread and RSS figures.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

}  // namespace hazefree::test
