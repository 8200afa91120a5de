// MediaReader: stream description, decoding order and counts, stills, format conversion.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/media_reader.hpp"
#include "support/test_support.hpp"
#include "tests/io/io_test_support.hpp"

using namespace hazefree;
using hazefree::test::sample_path;
using hazefree::test::temp_dir;

namespace {

io::InputOptions input(const std::string& url) {
  io::InputOptions options;
  options.url = url;
  return options;
}

}  // namespace

TEST_CASE("reader describes hazy-street.mp4") {
  io::MediaReader reader(input(sample_path("hazy-street.mp4")));
  const io::VideoInfo& info = reader.video();
  CHECK(info.width == 768);
  CHECK(info.height == 576);
  CHECK(info.format == PixelFormat::yuv420p);
  CHECK(info.source_pixel_format == "yuv420p");
  CHECK(info.matrix == ColorMatrix::bt601);
  CHECK(info.range == ColorRange::limited);
  CHECK(info.color_space == AVCOL_SPC_SMPTE170M);
  CHECK(info.color_primaries == AVCOL_PRI_SMPTE170M);
  CHECK(info.color_transfer == AVCOL_TRC_SMPTE170M);
  CHECK(info.color_range_tag == AVCOL_RANGE_MPEG);
  CHECK(info.frame_rate.num == 25);
  CHECK(info.frame_rate.den == 1);
  CHECK(info.frame_count == 100);
  CHECK(info.duration_seconds == doctest::Approx(4.0).epsilon(0.01));
  CHECK(info.rotation_degrees == 0.0);
  CHECK_FALSE(info.still_image);
  CHECK_FALSE(info.live);
  CHECK(info.codec_name == "h264");
  REQUIRE(reader.copied_stream_indices().size() == 1);
  const int audio = reader.copied_stream_indices()[0];
  CHECK(reader.format_context()->streams[audio]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO);
  CHECK(reader.video_stream_index() != audio);
}

TEST_CASE("reader delivers every picture of hazy-street.mp4 in order, with the audio") {
  io::MediaReader reader(input(sample_path("hazy-street.mp4")));
  std::int64_t frames = 0, audio_packets = 0, last_pts = -1, last_capture = 0;
  bool planes_ok = true;
  for (;;) {
    const auto item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item == io::MediaReader::Item::packet) {
      const io::Packet packet = reader.take_packet();
      REQUIRE(packet);
      CHECK(packet->stream_index == reader.copied_stream_indices()[0]);
      ++audio_packets;
      continue;
    }
    const io::DecodedFrame& frame = reader.frame();
    CHECK(frame.pts > last_pts);
    CHECK(frame.duration == 512);  // 1/25 s in 1/12800
    CHECK(frame.capture_us >= last_capture);
    last_pts = frame.pts;
    last_capture = frame.capture_us;
    const ImageView& view = frame.view;
    planes_ok = planes_ok && view.plane_count == 3 && view.planes[0].width == 768 &&
                view.planes[1].width == 384 && view.planes[2].height == 288 &&
                view.planes[0].stride >= 768 && view.planes[0].data != nullptr;
    ++frames;
  }
  CHECK(planes_ok);
  CHECK(frames == 100);
  CHECK(audio_packets > 150);  // 4 s of 1024-sample AAC frames at 48 kHz
  CHECK(reader.decode_errors() == 0);
  CHECK(reader.read() == io::MediaReader::Item::end);  // stays at the end
}

TEST_CASE("reader opens PNG stills as rgb24 and gray, full range") {
  {
    io::MediaReader reader(input(sample_path("images/coffee.png")));
    const io::VideoInfo& info = reader.video();
    CHECK(info.still_image);
    CHECK(info.format == PixelFormat::rgb24);
    CHECK(info.range == ColorRange::full);
    CHECK(info.width == 450);
    CHECK(info.height == 300);
    REQUIRE(reader.read() == io::MediaReader::Item::video_frame);
    CHECK(reader.frame().view.planes[0].width == 450);
    CHECK(reader.read() == io::MediaReader::Item::end);
  }
  {
    io::MediaReader reader(input(sample_path("images/coffee-grey.png")));
    CHECK(reader.video().format == PixelFormat::gray8);
    CHECK(reader.video().range == ColorRange::full);
    REQUIRE(reader.read() == io::MediaReader::Item::video_frame);
    CHECK(reader.read() == io::MediaReader::Item::end);
  }
}

TEST_CASE("JPEG stills come back as full-range YUV close to the original") {
  const std::string dir = temp_dir("io_reader_jpeg");
  const std::string jpeg = dir + "/coffee.jpg";
  io::OutputOptions options;
  options.url = jpeg;
  CHECK(test::copy_through(sample_path("images/coffee.png"), options) == 1);
  io::MediaReader reader(input(jpeg));
  CHECK(reader.video().still_image);
  CHECK(is_yuv(reader.video().format));
  CHECK(reader.video().range == ColorRange::full);
  CHECK(reader.video().width == 450);
  REQUIRE(reader.read() == io::MediaReader::Item::video_frame);
  // Mean luma of the JPEG against the PNG's BT.601 luma.
  const test::Probe png = test::probe(sample_path("images/coffee.png"), 1);
  const ImageView& view = reader.frame().view;
  double difference = 0;
  for (int y = 0; y < 300; ++y)
    for (int x = 0; x < 450; ++x) {
      const std::uint8_t* rgb = &png.pixels[0][(y * 450 + x) * 3];
      const double luma = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2];
      difference += std::abs(luma - view.planes[0].data[y * view.planes[0].stride + x]);
    }
  CHECK(difference / (450 * 300) < 3.0);
}

TEST_CASE("reader takes a hand-made y4m with its aspect ratio, rate and range") {
  const std::string dir = temp_dir("io_reader_y4m");
  const std::string path = dir + "/odd.y4m";
  test::write_y4m(path, 33, 17, 4, "30000:1001", "A16:15 XCOLORRANGE=FULL");
  io::MediaReader reader(input(path));
  const io::VideoInfo& info = reader.video();
  CHECK(info.width == 33);
  CHECK(info.height == 17);
  CHECK(info.format == PixelFormat::yuv420p);
  CHECK(info.range == ColorRange::full);
  CHECK(info.matrix == ColorMatrix::bt601);  // unspecified, below 720 lines
  CHECK(info.frame_rate.num == 30000);
  CHECK(info.frame_rate.den == 1001);
  CHECK(info.sample_aspect_ratio.num == 16);
  CHECK(info.sample_aspect_ratio.den == 15);
  const test::Probe result = test::probe(path, 1);
  CHECK(result.frames == 4);
  REQUIRE(result.pixels.size() == 1);
  CHECK(result.pixels[0].size() == 33 * 17 + 2 * 17 * 9);
  CHECK(result.pixels[0][1] == 16 + 7);  // the gradient written by write_y4m
}

TEST_CASE("reader forces rawvideo with demuxer options") {
  const std::string dir = temp_dir("io_reader_raw");
  const std::string path = dir + "/grey.raw";
  std::string bytes;
  for (int frame = 0; frame < 3; ++frame)
    for (int i = 0; i < 16 * 8; ++i) bytes.push_back(static_cast<char>(i + frame));
  test::write_bytes(path, bytes);
  io::InputOptions options = input(path);
  options.format = "rawvideo";
  options.format_options = {{"video_size", "16x8"}, {"pixel_format", "gray"}, {"framerate", "5"}};
  io::MediaReader reader(options);
  CHECK(reader.video().format == PixelFormat::gray8);
  CHECK(reader.video().frame_rate.num == 5);
  int frames = 0;
  while (reader.read() == io::MediaReader::Item::video_frame) {
    const ImageView& view = reader.frame().view;
    CHECK(view.planes[0].data[5] == 5 + frames);
    CHECK(view.planes[0].data[view.planes[0].stride * 7 + 15] == static_cast<std::uint8_t>(127 + frames));
    ++frames;
  }
  CHECK(frames == 3);
}

TEST_CASE("reader converts formats the processors do not take") {
  const std::string dir = temp_dir("io_reader_convert");
  // BMP stores bgr24: read back as rgb24 with the same pixels.
  const std::string bmp = dir + "/coffee.bmp";
  io::OutputOptions to_bmp;
  to_bmp.url = bmp;
  CHECK(test::copy_through(sample_path("images/coffee.png"), to_bmp) == 1);
  const test::Probe original = test::probe(sample_path("images/coffee.png"), 1);
  const test::Probe from_bmp = test::probe(bmp, 1);
  CHECK(from_bmp.info.source_pixel_format == "bgr24");
  CHECK(from_bmp.info.format == PixelFormat::rgb24);
  REQUIRE(from_bmp.pixels.size() == 1);
  CHECK(from_bmp.pixels[0] == original.pixels[0]);

  // v210 is 10-bit 4:2:2: read back as 8-bit yuv422p, same size, limited range kept.
  const std::string v210 = dir + "/street.mov";
  io::OutputOptions to_v210;
  to_v210.url = v210;
  to_v210.encoder = "v210";
  CHECK(test::copy_through(sample_path("hazy-street.mp4"), to_v210, 3) == 3);
  const test::Probe ten_bit = test::probe(v210, 1);
  CHECK(ten_bit.info.source_pixel_format == "yuv422p10le");
  CHECK(ten_bit.info.format == PixelFormat::yuv422p);
  CHECK(ten_bit.info.range == ColorRange::limited);
  CHECK(ten_bit.info.width == 768);
  CHECK(ten_bit.frames == 3);
}

TEST_CASE("reader interrupt() ends reading") {
  io::MediaReader reader(input(sample_path("hazy-street.mp4")));
  REQUIRE(reader.read() != io::MediaReader::Item::end);
  std::thread other([&reader] { reader.interrupt(); });
  other.join();
  int items = 0;
  while (reader.read() != io::MediaReader::Item::end && items < 1000) ++items;
  CHECK(items < 5);  // at most what was already buffered before the first picture
}

TEST_CASE("reader survives a damaged stream") {
  const std::string dir = temp_dir("io_reader_damaged");
  const std::string path = dir + "/damaged.mp4";
  std::filesystem::copy_file(sample_path("hazy-street.mp4"), path);
  {
    // Overwrite some of the coded pictures in the middle of the file with noise.
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(std::filesystem::file_size(path));
    for (std::streamoff at = size / 3; at < size / 3 + 20000; at += 97) {
      file.seekp(at);
      file.put(static_cast<char>((at * 131) & 0xff));
    }
  }
  io::MediaReader reader(input(path));
  int frames = 0;
  while (reader.read() != io::MediaReader::Item::end) {
    if (reader.frame().view.width == 768) ++frames;
  }
  CHECK(frames >= 90);  // damaged pictures are concealed or skipped, never fatal
  MESSAGE("decode errors: " << reader.decode_errors());
}
