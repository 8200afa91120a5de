// Helpers for the io tests: hand-made media files, probing an output by reading it back, and
// pixel comparison. Test media is made here (or with the library itself), never by external tools.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
}

#include "io/media_reader.hpp"
#include "io/media_writer.hpp"
#include "common/image.hpp"

namespace hazefree::test {

// Only FFmpeg's errors on the test output, not its encoder statistics.
inline const bool kQuietFfmpeg = (av_log_set_level(AV_LOG_ERROR), true);

// Pixels of a view, row by row without padding.
inline std::vector<std::uint8_t> tight_pixels(const ImageView& view) {
  std::vector<std::uint8_t> bytes;
  for (int p = 0; p < view.plane_count; ++p) {
    const PlaneView& plane = view.planes[p];
    const int row_bytes = plane.width * bytes_per_sample(view.format, p);
    for (int y = 0; y < plane.height; ++y) {
      const std::uint8_t* row = plane.data + static_cast<std::ptrdiff_t>(y) * plane.stride;
      bytes.insert(bytes.end(), row, row + row_bytes);
    }
  }
  return bytes;
}

// A YUV4MPEG2 file of `frames` 4:2:0 pictures (a moving gradient), written byte by byte.
// `extra_header` adds tags, e.g. "A16:15 XCOLORRANGE=FULL".
inline void write_y4m(const std::string& path, int width, int height, int frames,
                      const std::string& rate = "25:1", const std::string& extra_header = "") {
  std::ofstream file(path, std::ios::binary);
  file << "YUV4MPEG2 W" << width << " H" << height << " F" << rate << " Ip C420jpeg";
  if (!extra_header.empty()) file << " " << extra_header;
  file << "\n";
  const int chroma_width = (width + 1) / 2, chroma_height = (height + 1) / 2;
  for (int f = 0; f < frames; ++f) {
    file << "FRAME\n";
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) file.put(static_cast<char>(16 + (x * 7 + y * 3 + f * 5) % 220));
    for (int plane = 0; plane < 2; ++plane)
      for (int y = 0; y < chroma_height; ++y)
        for (int x = 0; x < chroma_width; ++x)
          file.put(static_cast<char>(64 + (x * (plane + 1) + y * 2 + f) % 128));
  }
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Everything a round trip must keep, measured by reading a file back.
struct Probe {
  io::VideoInfo info;
  std::int64_t frames = 0;
  std::vector<std::int64_t> pts_us;          // each picture's pts in microseconds
  std::map<AVMediaType, std::int64_t> packets;  // other streams' packets, by kind
  std::vector<std::vector<std::uint8_t>> pixels;  // of the first `keep_pixels` pictures
};

inline Probe probe(const std::string& url, int keep_pixels = 0) {
  io::InputOptions options;
  options.url = url;
  io::MediaReader reader(options);
  Probe result;
  result.info = reader.video();
  const AVRational time_base{result.info.time_base.num, result.info.time_base.den};
  for (;;) {
    const auto item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item == io::MediaReader::Item::packet) {
      const io::Packet packet = reader.take_packet();
      const AVStream* stream = reader.format_context()->streams[packet->stream_index];
      ++result.packets[stream->codecpar->codec_type];
      continue;
    }
    ++result.frames;
    result.pts_us.push_back(av_rescale_q(reader.frame().pts, time_base, AVRational{1, 1000000}));
    if (static_cast<int>(result.pixels.size()) < keep_pixels) {
      result.pixels.push_back(tight_pixels(reader.frame().view));
    }
  }
  return result;
}

// Copies `input` to `output` with every picture unchanged, at its depth (up to max_frames, 0 =
// all) and every other packet copied; returns the pictures written.
inline std::int64_t copy_through(io::MediaReader& reader, const io::OutputOptions& output,
                                 std::int64_t max_frames = 0) {
  const io::VideoInfo& info = reader.video();
  io::MediaWriter writer(output, reader, info.width, info.height, info.format, info.depth);
  for (;;) {
    const auto item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item == io::MediaReader::Item::packet) {
      writer.write_packet(reader.take_packet());
      continue;
    }
    if (max_frames > 0 && writer.frames_written() >= max_frames) continue;
    writer.write_frame(reader.frame().view, reader.frame().pts, reader.frame().duration);
  }
  writer.finish();
  return writer.frames_written();
}

inline std::int64_t copy_through(const std::string& input, const io::OutputOptions& output,
                                 std::int64_t max_frames = 0) {
  io::InputOptions options;
  options.url = input;
  io::MediaReader reader(options);
  return copy_through(reader, output, max_frames);
}

}  // namespace hazefree::test
