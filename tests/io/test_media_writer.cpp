// MediaWriter: round trips that keep pictures, timestamps, audio and metadata, checked by
// reading the output back with MediaReader.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>

extern "C" {
#include <libavutil/display.h>
}

#include "io/media_reader.hpp"
#include "io/media_writer.hpp"
#include "support/test_support.hpp"
#include "tests/io/io_test_support.hpp"

using namespace hazefree;
using hazefree::test::sample_path;
using hazefree::test::temp_dir;
namespace fs = std::filesystem;

namespace {

io::OutputOptions output(const std::string& url) {
  io::OutputOptions options;
  options.url = url;
  options.preset = "ultrafast";
  return options;
}

// Picture times relative to the first picture.
std::vector<std::int64_t> relative(std::vector<std::int64_t> pts_us) {
  const std::int64_t first = pts_us.empty() ? 0 : pts_us.front();
  for (std::int64_t& pts : pts_us) pts -= first;
  return pts_us;
}

// Containers without edit lists move every stream by the same offset, as ffmpeg -c copy does:
// Matroska so that the AAC priming (audio starts at -21 ms) is not negative, MPEG-TS by its mux
// delay (1.4 s). There only the picture times relative to the first are comparable.
void check_same_stream(const test::Probe& in, const test::Probe& out, bool shifted = false) {
  CHECK(out.frames == in.frames);
  if (shifted) {
    CHECK(relative(out.pts_us) == relative(in.pts_us));
  } else {
    CHECK(out.pts_us == in.pts_us);
  }
  CHECK(out.packets == in.packets);
  CHECK(out.info.width == in.info.width);
  CHECK(out.info.height == in.info.height);
  CHECK(out.info.format == in.info.format);
  CHECK(out.info.color_primaries == in.info.color_primaries);
  CHECK(out.info.color_transfer == in.info.color_transfer);
  CHECK(out.info.color_space == in.info.color_space);
  CHECK(out.info.color_range_tag == in.info.color_range_tag);
  CHECK(out.info.matrix == in.info.matrix);
  CHECK(out.info.range == in.info.range);
  CHECK(out.info.frame_rate.num == in.info.frame_rate.num);
  CHECK(out.info.frame_rate.den == in.info.frame_rate.den);
  CHECK(out.info.sample_aspect_ratio.num == in.info.sample_aspect_ratio.num);
  CHECK(out.info.sample_aspect_ratio.den == in.info.sample_aspect_ratio.den);
  CHECK(out.info.rotation_degrees == in.info.rotation_degrees);
}

bool only_file_in(const std::string& dir, const std::string& name) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename() != name) return false;
    ++count;
  }
  return count == 1;
}

}  // namespace

TEST_CASE("hazy-street.mp4 through MediaWriter keeps frames, pts, audio and metadata") {
  const std::string dir = temp_dir("io_writer_mp4");
  const test::Probe source = test::probe(sample_path("hazy-street.mp4"));
  REQUIRE(source.frames == 100);
  REQUIRE(source.packets.at(AVMEDIA_TYPE_AUDIO) > 0);
  for (const std::string name : {"out.mp4", "out.mkv", "out.ts"}) {
    CAPTURE(name);
    const std::string path = dir + "/" + name;
    CHECK(test::copy_through(sample_path("hazy-street.mp4"), output(path)) == 100);
    CHECK(only_file_in(dir, name));
    const test::Probe copy = test::probe(path);
    check_same_stream(source, copy, name != "out.mp4");
    CHECK(copy.info.codec_name == "h264");
    fs::remove(path);
  }
}

TEST_CASE("aspect ratio, odd sizes and full range survive libx264") {
  const std::string dir = temp_dir("io_writer_sar");
  const std::string input = dir + "/in.y4m";
  test::write_y4m(input, 64, 48, 6, "24000:1001", "A16:15 XCOLORRANGE=FULL");
  const std::string path = dir + "/out.mp4";
  CHECK(test::copy_through(input, output(path)) == 6);
  const test::Probe copy = test::probe(path);
  CHECK(copy.frames == 6);
  CHECK(copy.info.sample_aspect_ratio.num == 16);
  CHECK(copy.info.sample_aspect_ratio.den == 15);
  CHECK(copy.info.frame_rate.num == 24000);
  CHECK(copy.info.frame_rate.den == 1001);
  CHECK(copy.info.range == ColorRange::full);
  CHECK(copy.pts_us == test::probe(input).pts_us);
}

TEST_CASE("rotation is kept from the display matrix") {
  const std::string dir = temp_dir("io_writer_rotation");
  const std::string input = dir + "/in.y4m";
  test::write_y4m(input, 32, 16, 3);
  const std::string rotated = dir + "/rotated.mp4";
  {
    io::InputOptions options;
    options.url = input;
    io::MediaReader reader(options);
    // Give the source stream a display matrix, as a phone recording has.
    AVStream* stream = reader.format_context()->streams[reader.video_stream_index()];
    auto* matrix = reinterpret_cast<std::int32_t*>(
        av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * sizeof(std::int32_t)));
    REQUIRE(matrix);
    av_display_rotation_set(matrix, 90.0);  // clockwise; reported counter-clockwise
    CHECK(test::copy_through(reader, output(rotated)) == 3);
  }
  const test::Probe first = test::probe(rotated);
  CHECK(first.info.rotation_degrees == doctest::Approx(-90.0));
  CHECK(first.info.width == 32);  // stored unrotated; the player rotates
  // And once more, from a file that carries it.
  const std::string again = dir + "/again.mov";
  CHECK(test::copy_through(rotated, output(again)) == 3);
  CHECK(test::probe(again).info.rotation_degrees == doctest::Approx(-90.0));
}

TEST_CASE("PNG still in and out is pixel-exact") {
  const std::string dir = temp_dir("io_writer_png");
  for (const std::string name : {"coffee.png", "coffee-grey.png", "astronaut-hazy.png"}) {
    CAPTURE(name);
    const std::string path = dir + "/" + name;
    io::OutputOptions options = output(path);
    CHECK(test::copy_through(sample_path("images/" + name), options) == 1);
    const test::Probe original = test::probe(sample_path("images/" + name), 1);
    const test::Probe copy = test::probe(path, 1);
    CHECK(copy.info.still_image);
    CHECK(copy.info.format == original.info.format);
    CHECK(copy.frames == 1);
    REQUIRE(copy.pixels.size() == 1);
    CHECK(copy.pixels[0] == original.pixels[0]);
  }
}

TEST_CASE("y4m output to a file is pixel-exact and drops the audio") {
  const std::string dir = temp_dir("io_writer_y4m");
  const std::string path = dir + "/street.y4m";
  CHECK(test::copy_through(sample_path("hazy-street.mp4"), output(path), 5) == 5);
  const test::Probe original = test::probe(sample_path("hazy-street.mp4"), 5);
  const test::Probe copy = test::probe(path, 5);
  CHECK(copy.info.container_name == "yuv4mpegpipe");
  CHECK(copy.frames == 5);
  CHECK(copy.packets.empty());
  CHECK(copy.info.frame_rate.num == 25);
  CHECK(copy.info.range == ColorRange::limited);
  REQUIRE(copy.pixels.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(copy.pixels[i] == original.pixels[i]);
  for (int i = 0; i < 5; ++i) CHECK(copy.pts_us[i] == original.pts_us[i]);
}

TEST_CASE("rgb24 pictures into libx264 are converted and tagged") {
  const std::string dir = temp_dir("io_writer_rgb_x264");
  const std::string path = dir + "/coffee.mkv";
  io::OutputOptions options = output(path);
  options.crf = 0;
  CHECK(test::copy_through(sample_path("images/coffee.png"), options) == 1);
  const test::Probe copy = test::probe(path);
  CHECK(copy.frames == 1);
  CHECK(copy.info.format == PixelFormat::yuv444p);
  CHECK(copy.info.color_space == AVCOL_SPC_SMPTE170M);
  CHECK(copy.info.range == ColorRange::limited);
}

TEST_CASE("an unfinished output leaves no file behind") {
  const std::string dir = temp_dir("io_writer_unfinished");
  const std::string path = dir + "/out.mp4";
  {
    io::InputOptions input;
    input.url = sample_path("hazy-street.mp4");
    io::MediaReader reader(input);
    io::MediaWriter writer(output(path), reader, 768, 576, PixelFormat::yuv420p);
    CHECK(writer.encoder_name() == "libx264");
    for (int i = 0; i < 3; ++i) {
      while (reader.read() != io::MediaReader::Item::video_frame) {
      }
      writer.write_frame(reader.frame().view, reader.frame().pts, reader.frame().duration);
    }
    CHECK(writer.frames_written() == 3);
  }
  CHECK(fs::is_empty(dir));
}

TEST_CASE("low latency gets a packet out for every picture") {
  const std::string dir = temp_dir("io_writer_live");
  io::InputOptions input;
  input.url = sample_path("hazy-street.mp4");
  io::MediaReader reader(input);
  io::OutputOptions options = output(dir + "/live.mkv");
  options.low_latency = true;
  io::MediaWriter writer(options, reader, 768, 576, PixelFormat::yuv420p);
  CHECK(writer.last_packet_us() == 0);
  while (reader.read() != io::MediaReader::Item::video_frame) {
  }
  writer.write_frame(reader.frame().view, reader.frame().pts, reader.frame().duration);
  CHECK(writer.last_packet_us() >= reader.frame().capture_us);
  writer.finish();
  CHECK(test::probe(dir + "/live.mkv").frames == 1);
}

TEST_CASE("frames of another size than announced are refused") {
  const std::string dir = temp_dir("io_writer_size");
  io::InputOptions input;
  input.url = sample_path("images/coffee.png");
  io::MediaReader reader(input);
  io::MediaWriter writer(output(dir + "/out.png"), reader, 450, 300, PixelFormat::rgb24);
  REQUIRE(reader.read() == io::MediaReader::Item::video_frame);
  ImageView wrong = reader.frame().view;
  wrong.width = 100;
  CHECK_THROWS_AS(writer.write_frame(wrong, 0, 1), io::IoError);
}

TEST_CASE("rawvideo output holds exactly the pictures") {
  const std::string dir = temp_dir("io_writer_raw");
  const std::string input = dir + "/in.y4m";
  test::write_y4m(input, 20, 10, 4);
  const std::string path = dir + "/out.yuv";
  CHECK(test::copy_through(input, output(path)) == 4);
  CHECK(fs::file_size(path) == 4u * (20 * 10 + 2 * 10 * 5));
  io::InputOptions raw;
  raw.url = path;
  raw.format = "rawvideo";
  raw.format_options = {{"video_size", "20x10"}, {"pixel_format", "yuv420p"}};
  io::MediaReader reader(raw);
  const test::Probe original = test::probe(input, 4);
  int frames = 0;
  while (reader.read() == io::MediaReader::Item::video_frame) {
    CHECK(test::tight_pixels(reader.frame().view) == original.pixels[frames]);
    ++frames;
  }
  CHECK(frames == 4);
}

TEST_CASE("mp4 output keeps the input time base") {
  const std::string dir = temp_dir("io_writer_time_base");
  const std::string path = dir + "/out.mp4";
  CHECK(test::copy_through(sample_path("hazy-street.mp4"), output(path), 10) == 10);
  const test::Probe copy = test::probe(path);
  CHECK(copy.info.time_base.num == 1);
  CHECK(copy.info.time_base.den == 12800);
  CHECK(copy.frames == 10);
}

TEST_CASE("a hardware encoder that cannot open says so") {
  if (!avcodec_find_encoder_by_name("h264_nvenc")) return;  // FFmpeg built without NVENC
  const std::string dir = temp_dir("io_writer_nvenc");
  io::OutputOptions options = output(dir + "/out.mp4");
  options.encoder = "h264_nvenc";
  try {
    const std::int64_t frames = test::copy_through(sample_path("hazy-street.mp4"), options, 5);
    CHECK(frames == 5);  // a GPU with NVENC
  } catch (const io::IoError& error) {
    const std::string message = error.what();
    CAPTURE(message);
    CHECK(message.rfind(options.url + ": h264_nvenc: ", 0) == 0);
    CHECK(message.find("NVENC") != std::string::npos);
  }
}
