// io at high bit depth (SPEC 7): frames read at their own 9 to 16 bits, written back keeping the
// depth and every frame (and the audio), the depth conversion of --output-depth, and an encoder
// that cannot hold the depth refused with one line. The clips are made with the ffmpeg program,
// as the job tests make theirs.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "io/av_pixel_format.hpp"
#include "io/depth_convert.hpp"
#include "io/io_test_support.hpp"
#include "io/media_reader.hpp"
#include "io/media_writer.hpp"
#include "support/test_support.hpp"

namespace hazefree {
namespace {

std::string q(const std::string& s) { return "'" + s + "'"; }

int run_program(const std::string& command) {
  const int raw = std::system((command + " </dev/null").c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

void make_with_ffmpeg(const std::string& arguments) {
  REQUIRE_MESSAGE(run_program("ffmpeg -v error -nostdin -y " + arguments) == 0,
                  "the ffmpeg program could not make the test media: " << arguments);
}

std::string slurp(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// Every sample of a view as a number (the value, whatever the storage), plane after plane.
std::vector<int> samples_of(const ImageView& view) {
  std::vector<int> values;
  for (int p = 0; p < view.plane_count; ++p) {
    const PlaneView& plane = view.planes[p];
    const int per_row = plane.width * bytes_per_sample(view.format, p, view.depth) / sample_bytes(view.depth);
    for (int y = 0; y < plane.height; ++y) {
      const std::uint8_t* row = plane.data + static_cast<std::size_t>(y) * plane.stride;
      for (int x = 0; x < per_row; ++x) {
        values.push_back(view.depth > 8 ? reinterpret_cast<const std::uint16_t*>(row)[x] >> sample_shift(view)
                                        : row[x]);
      }
    }
  }
  return values;
}

// What a file holds, read back with the reader: its description, each picture's samples, and
// the other streams' packets.
struct Decoded {
  io::VideoInfo info;
  std::vector<std::vector<int>> pictures;
  int audio_packets = 0;
};

Decoded decode(const std::string& path, int depth = 0) {
  io::InputOptions options;
  options.url = path;
  options.depth = depth;
  io::MediaReader reader(options);
  Decoded d;
  d.info = reader.video();
  for (;;) {
    const auto item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item == io::MediaReader::Item::packet) {
      const io::Packet packet = reader.take_packet();
      if (reader.format_context()->streams[packet->stream_index]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO)
        ++d.audio_packets;
      continue;
    }
    CHECK(reader.frame().view.depth == d.info.depth);
    d.pictures.push_back(samples_of(reader.frame().view));
  }
  return d;
}


// FFmpeg's own decode of a file's first picture as raw samples of `pix_fmt` (little-endian
// 16-bit words above 8 bits).
std::vector<int> ffmpeg_samples(const std::string& path, const std::string& pix_fmt, const std::string& dir) {
  const std::string raw = dir + "/ffmpeg-" + pix_fmt + ".raw";
  make_with_ffmpeg("-i " + q(path) + " -frames:v 1 -f rawvideo -pix_fmt " + pix_fmt + " " + q(raw));
  const std::string bytes = slurp(raw);
  std::vector<int> values;
  const bool wide = pix_fmt.find("le") != std::string::npos;
  for (std::size_t i = 0; i < bytes.size(); i += wide ? 2 : 1) {
    const auto low = static_cast<std::uint8_t>(bytes[i]);
    values.push_back(wide ? low | static_cast<std::uint8_t>(bytes[i + 1]) << 8 : low);
  }
  return values;
}

}  // namespace

TEST_CASE("depth io: FFmpeg's layouts map to PixelFormat and depth both ways") {
  using io::detail::from_av_format;
  using io::detail::to_av_format;
  const struct {
    PixelFormat format;
    int depth;
    AVPixelFormat av;
  } layouts[] = {{PixelFormat::yuv420p, 8, AV_PIX_FMT_YUV420P},     {PixelFormat::yuv420p, 10, AV_PIX_FMT_YUV420P10},
                 {PixelFormat::yuv422p, 12, AV_PIX_FMT_YUV422P12},  {PixelFormat::yuv444p, 16, AV_PIX_FMT_YUV444P16},
                 {PixelFormat::nv12, 8, AV_PIX_FMT_NV12},           {PixelFormat::nv12, 10, AV_PIX_FMT_P010},
                 {PixelFormat::nv12, 16, AV_PIX_FMT_P016},          {PixelFormat::gray8, 8, AV_PIX_FMT_GRAY8},
                 {PixelFormat::gray8, 10, AV_PIX_FMT_GRAY10},       {PixelFormat::gray8, 12, AV_PIX_FMT_GRAY12},
                 {PixelFormat::gray8, 16, AV_PIX_FMT_GRAY16},       {PixelFormat::rgb24, 8, AV_PIX_FMT_RGB24},
                 {PixelFormat::rgb24, 16, AV_PIX_FMT_RGB48}};
  for (const auto& l : layouts) {
    CAPTURE(format_name(l.format, l.depth));
    CHECK(to_av_format(l.format, l.depth) == l.av);
    PixelFormat format{};
    int depth = 0;
    REQUIRE(from_av_format(l.av, &format, &depth));
    CHECK(format == l.format);
    CHECK(depth == l.depth);
  }
  // 8 bits by default, as before; no layout where FFmpeg has none.
  CHECK(to_av_format(PixelFormat::yuv420p) == AV_PIX_FMT_YUV420P);
  CHECK(to_av_format(PixelFormat::rgb24, 10) == AV_PIX_FMT_NONE);
  CHECK(to_av_format(PixelFormat::yuv420p, 11) == AV_PIX_FMT_NONE);
  PixelFormat format{};
  CHECK_FALSE(from_av_format(av_pix_fmt_swap_endianness(AV_PIX_FMT_GRAY16), &format));
}

TEST_CASE("depth io: other formats go to the nearest layout at their own depth") {
  using io::detail::nearest_supported;
  const struct {
    AVPixelFormat source;
    PixelFormat format;
    int depth;
  } cases[] = {{AV_PIX_FMT_GBRP10LE, PixelFormat::rgb24, 16},     {AV_PIX_FMT_RGBA64LE, PixelFormat::rgb24, 16},
               {AV_PIX_FMT_RGB48BE, PixelFormat::rgb24, 16},      {AV_PIX_FMT_GRAY16BE, PixelFormat::gray8, 16},
               {AV_PIX_FMT_GRAY10BE, PixelFormat::gray8, 10},     {AV_PIX_FMT_YA16LE, PixelFormat::gray8, 16},
               {AV_PIX_FMT_YUV420P10BE, PixelFormat::yuv420p, 10}, {AV_PIX_FMT_YUVA444P12LE, PixelFormat::yuv444p, 12},
               {AV_PIX_FMT_P210LE, PixelFormat::yuv422p, 10},     {AV_PIX_FMT_YUV440P12LE, PixelFormat::yuv444p, 12},
               {AV_PIX_FMT_NV21, PixelFormat::nv12, 8},           {AV_PIX_FMT_RGB565LE, PixelFormat::rgb24, 8},
               {AV_PIX_FMT_PAL8, PixelFormat::rgb24, 8},          {AV_PIX_FMT_YUVA420P, PixelFormat::yuv420p, 8}};
  for (const auto& c : cases) {
    CAPTURE(av_get_pix_fmt_name(c.source));
    int depth = 0;
    CHECK(nearest_supported(c.source, &depth) == c.format);
    CHECK(depth == c.depth);
  }
}

TEST_CASE("depth io: a sample moves between depths by shifting (limited range) or scaling (full range)") {
  using io::convert_sample_depth;
  // Limited range: the legal range maps onto itself exactly.
  CHECK(convert_sample_depth(16, 8, 10, ColorRange::limited) == 64);
  CHECK(convert_sample_depth(235, 8, 10, ColorRange::limited) == 940);
  CHECK(convert_sample_depth(128, 8, 12, ColorRange::limited) == 2048);
  CHECK(convert_sample_depth(941, 10, 8, ColorRange::limited) == 235);  // (941 + 2) >> 2
  CHECK(convert_sample_depth(942, 10, 8, ColorRange::limited) == 236);  // halves round up
  CHECK(convert_sample_depth(1023, 10, 8, ColorRange::limited) == 255);  // never past M
  CHECK(convert_sample_depth(65535, 16, 8, ColorRange::limited) == 255);
  // Full range: 0 and M stay the ends; v * M_out / M_in rounded to nearest.
  CHECK(convert_sample_depth(255, 8, 16, ColorRange::full) == 65535);
  CHECK(convert_sample_depth(1, 8, 16, ColorRange::full) == 257);
  CHECK(convert_sample_depth(255, 8, 10, ColorRange::full) == 1023);
  CHECK(convert_sample_depth(128, 8, 10, ColorRange::full) == 514);  // 128 * 1023 / 255 = 513.5
  CHECK(convert_sample_depth(1023, 10, 8, ColorRange::full) == 255);
  CHECK(convert_sample_depth(2, 10, 8, ColorRange::full) == 0);  // 0.498...
  CHECK(convert_sample_depth(3, 10, 8, ColorRange::full) == 1);
  CHECK(convert_sample_depth(700, 10, 10, ColorRange::full) == 700);

  // A whole frame, nv12 at 10 bits (P010: the value in the high bits) down to 8 bits.
  Image p010(PixelFormat::nv12, 4, 2, 64, 10);
  ImageView& in = p010.view();
  in.range = ColorRange::limited;
  const int luma[8] = {64, 65, 66, 940, 1023, 0, 512, 513};
  for (int i = 0; i < 8; ++i)
    reinterpret_cast<std::uint16_t*>(in.planes[0].data + (i / 4) * in.planes[0].stride)[i % 4] =
        static_cast<std::uint16_t>(luma[i] << 6);
  for (int i = 0; i < 4; ++i) reinterpret_cast<std::uint16_t*>(in.planes[1].data)[i] = static_cast<std::uint16_t>((512 + i) << 6);
  Image eight(PixelFormat::nv12, 4, 2, 64, 8);
  io::convert_depth(in, eight.view());
  CHECK(samples_of(eight.view()) == std::vector<int>{16, 16, 17, 235, 255, 0, 128, 128, 128, 128, 129, 129});
  CHECK(eight.view().range == ColorRange::limited);
  Image wrong(PixelFormat::yuv420p, 4, 2, 64, 8);
  CHECK_THROWS_AS(io::convert_depth(in, wrong.view()), std::invalid_argument);
}

TEST_CASE("depth io: a 10-bit HEVC clip is read at 10 bits and written back at 10 bits with every frame and the audio") {
  const std::string dir = test::temp_dir("io_depth_hevc");
  const std::string clip = dir + "/in10.mkv";
  make_with_ffmpeg("-f lavfi -i testsrc2=s=192x108:r=25:d=0.8 -f lavfi -i sine=d=0.8 -pix_fmt yuv420p10le "
                   "-c:v libx265 -x265-params log-level=error -c:a aac -shortest " + q(clip));
  const Decoded in = decode(clip);
  CHECK(in.info.format == PixelFormat::yuv420p);
  CHECK(in.info.depth == 10);
  CHECK(in.info.source_depth == 10);
  CHECK(in.info.source_pixel_format == "yuv420p10le");
  REQUIRE(in.pictures.size() == 20);
  CHECK(in.audio_packets > 0);
  // 10 bits used: codes beyond what an 8-bit picture shifted up would have.
  bool not_multiple_of_four = false;
  for (const int v : in.pictures[0]) not_multiple_of_four |= v % 4 != 0;
  CHECK(not_multiple_of_four);

  io::OutputOptions hevc;
  hevc.url = dir + "/out10.mkv";
  hevc.encoder = "libx265";
  hevc.encoder_options["x265-params"] = "log-level=error";
  CHECK(test::copy_through(clip, hevc) == 20);
  const Decoded out = decode(hevc.url);
  CHECK(out.info.depth == 10);
  CHECK(out.info.source_pixel_format == "yuv420p10le");
  CHECK(out.pictures.size() == 20);
  CHECK(out.audio_packets == in.audio_packets);

  // Losslessly (FFV1) every sample comes back.
  io::OutputOptions ffv1;
  ffv1.url = dir + "/out10-ffv1.mkv";
  ffv1.encoder = "ffv1";
  CHECK(test::copy_through(clip, ffv1) == 20);
  const Decoded exact = decode(ffv1.url);
  CHECK(exact.info.source_pixel_format == "yuv420p10le");
  CHECK(exact.pictures == in.pictures);
  CHECK(exact.audio_packets == in.audio_packets);
}

TEST_CASE("depth io: 12-bit FFV1 clips (4:2:0, 4:2:2, 4:4:4) and 16-bit grey keep their depth and every sample") {
  const std::string dir = test::temp_dir("io_depth_ffv1");
  for (const std::string pix_fmt : {"yuv420p12le", "yuv422p12le", "yuv444p12le", "yuv444p16le", "gray12le", "gray16le"}) {
    CAPTURE(pix_fmt);
    const std::string clip = dir + "/" + pix_fmt + ".mkv";
    make_with_ffmpeg("-f lavfi -i testsrc2=s=96x54:r=25:d=0.4 -f lavfi -i sine=d=0.4 -vf format=" + pix_fmt +
                     " -c:v ffv1 -c:a flac -shortest " + q(clip));
    const Decoded in = decode(clip);
    const int depth = pix_fmt.find("16") != std::string::npos ? 16 : 12;
    CHECK(in.info.depth == depth);
    CHECK(in.info.format == (pix_fmt.rfind("gray", 0) == 0   ? PixelFormat::gray8
                             : pix_fmt.rfind("yuv420", 0) == 0 ? PixelFormat::yuv420p
                             : pix_fmt.rfind("yuv422", 0) == 0 ? PixelFormat::yuv422p
                                                               : PixelFormat::yuv444p));
    REQUIRE(in.pictures.size() == 10);
    // FFmpeg's own decode gives the same samples.
    CHECK(in.pictures[0] == ffmpeg_samples(clip, pix_fmt, dir));

    io::OutputOptions output;
    output.url = dir + "/copy-" + pix_fmt + ".mkv";
    output.encoder = "ffv1";
    CHECK(test::copy_through(clip, output) == 10);
    const Decoded out = decode(output.url);
    CHECK(out.info.source_pixel_format == pix_fmt);
    CHECK(out.pictures == in.pictures);
    CHECK(out.audio_packets == in.audio_packets);
    CHECK(out.audio_packets > 0);
  }
}

TEST_CASE("depth io: 16-bit grey and RGB stills (PNG, TIFF) are read and written at 16 bits, sample for sample") {
  const std::string dir = test::temp_dir("io_depth_stills");
  const struct {
    const char* name;
    const char* pix_fmt;
    PixelFormat format;
  } stills[] = {{"grey.png", "gray16be", PixelFormat::gray8},
                {"colour.png", "rgb48be", PixelFormat::rgb24},
                {"colour.tiff", "rgb48le", PixelFormat::rgb24},
                {"grey.tiff", "gray16le", PixelFormat::gray8},
                {"alpha.png", "rgba64be", PixelFormat::rgb24}};
  for (const auto& still : stills) {
    CAPTURE(still.name);
    const std::string path = dir + "/" + still.name;
    // A smooth gradient uses every bit of the 16 (no multiple-of-257 codes only).
    make_with_ffmpeg("-f lavfi -i gradients=s=67x45:c0=0x102030:c1=0xf0e0d0:type=radial -frames:v 1 -vf format=" +
                     std::string(still.pix_fmt) + " " + q(path));
    const Decoded in = decode(path);
    CHECK(in.info.format == still.format);
    CHECK(in.info.depth == 16);
    CHECK(in.info.still_image);
    REQUIRE(in.pictures.size() == 1);
    const std::string raw_format = still.format == PixelFormat::gray8 ? "gray16le" : "rgb48le";
    CHECK(in.pictures[0] == ffmpeg_samples(path, raw_format, dir));
    bool fine = false;
    for (const int v : in.pictures[0]) fine |= v % 257 != 0;
    CHECK(fine);

    const std::string extension = std::string(still.name).substr(std::string(still.name).find('.'));
    io::OutputOptions output;
    output.url = dir + "/copy-" + std::string(still.name) + extension;
    CHECK(test::copy_through(path, output) == 1);
    const Decoded out = decode(output.url);
    CHECK(out.info.depth == 16);
    CHECK(out.pictures == in.pictures);
  }
}

TEST_CASE("depth io: the depth asked for converts every picture as it is read") {
  const std::string dir = test::temp_dir("io_depth_convert");
  // 8-bit limited-range video to 10 bits: each sample shifted by two.
  const std::string street = test::sample_path("hazy-street.mp4");
  const Decoded eight = decode(street);
  const Decoded ten = decode(street, 10);
  CHECK(eight.info.depth == 8);
  CHECK(ten.info.depth == 10);
  CHECK(ten.info.source_depth == 8);
  CHECK(ten.info.format == eight.info.format);
  CHECK(ten.info.range == ColorRange::limited);
  REQUIRE(ten.pictures.size() == eight.pictures.size());
  std::vector<int> shifted = eight.pictures[0];
  for (int& v : shifted) v <<= 2;
  CHECK(ten.pictures[0] == shifted);
  CHECK(ten.audio_packets == eight.audio_packets);

  // A full-range 8-bit grey still to 16 bits: v * 65535 / 255 = v * 257.
  const std::string grey = dir + "/grey8.png";
  make_with_ffmpeg("-f lavfi -i testsrc2=s=40x30 -frames:v 1 -pix_fmt gray " + q(grey));
  const Decoded grey8 = decode(grey);
  const Decoded grey16 = decode(grey, 16);
  CHECK(grey16.info.depth == 16);
  std::vector<int> scaled = grey8.pictures[0];
  for (int& v : scaled) v *= 257;
  CHECK(grey16.pictures[0] == scaled);

  // 16 bits down to 12 (full range): rounded to nearest.
  const std::string deep = dir + "/grey16.png";
  make_with_ffmpeg("-f lavfi -i gradients=s=40x30 -frames:v 1 -vf format=gray16be " + q(deep));
  const Decoded full = decode(deep), twelve = decode(deep, 12);
  REQUIRE(full.pictures[0].size() == twelve.pictures[0].size());
  for (std::size_t i = 0; i < full.pictures[0].size(); ++i)
    REQUIRE(twelve.pictures[0][i] == (full.pictures[0][i] * 4095 + 32767) / 65535);

  // RGB exists at 8 and 16 bits only: one line naming the key.
  const std::string rgb = dir + "/rgb.png";
  make_with_ffmpeg("-f lavfi -i testsrc2=s=40x30 -frames:v 1 -pix_fmt rgb24 " + q(rgb));
  io::InputOptions options;
  options.url = rgb;
  options.depth = 10;
  try {
    io::MediaReader reader(options);
    FAIL("an RGB picture at 10 bits was accepted");
  } catch (const io::IoError& e) {
    const std::string message = e.what();
    CHECK(message.find("output.depth = 10") != std::string::npos);
    CHECK(message.find("RGB") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("depth io: an encoder that cannot hold the depth is refused with one line naming those that can") {
  const std::string dir = test::temp_dir("io_depth_refused");
  const std::string clip = dir + "/in12.mkv";
  make_with_ffmpeg("-f lavfi -i testsrc2=s=64x48:r=25:d=0.2 -pix_fmt yuv420p12le -c:v ffv1 " + q(clip));
  io::InputOptions in;
  in.url = clip;
  io::MediaReader reader(in);
  REQUIRE(reader.video().depth == 12);
  const struct {
    const char* encoder;
    const char* file;
    const char* says;
  } refused[] = {{"libx264", "x264.mkv", "libx264 holds at most 10 bits; for 12-bit output use libx265 (up to 12 bits), ffv1"},
                 {"mjpeg", "mjpeg.mkv", "mjpeg holds at most 8 bits"}};
  for (const auto& r : refused) {
    io::OutputOptions output;
    output.url = dir + "/" + r.file;
    output.encoder = r.encoder;
    try {
      io::MediaWriter writer(output, reader, 64, 48, PixelFormat::yuv420p, 12);
      FAIL(r.encoder << " was set up for 12 bits");
    } catch (const io::IoError& e) {
      const std::string message = e.what();
      CAPTURE(message);
      CHECK(message.find(r.says) != std::string::npos);
      CHECK(message.find("png (up to 16)") != std::string::npos);
      CHECK(message.find(output.url) == 0);
      CHECK(message.find('\n') == std::string::npos);
    }
    // Refused before anything was written: the folder holds the input alone.
    CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 1);
  }
  // At 10 bits libx264 takes it (High 10).
  io::OutputOptions x264;
  x264.url = dir + "/x264-10.mkv";
  x264.encoder = "libx264";
  io::MediaWriter writer(x264, reader, 64, 48, PixelFormat::yuv420p, 10);
  Image frame(PixelFormat::yuv420p, 64, 48, 64, 10);
  for (int p = 0; p < 3; ++p)
    for (int y = 0; y < frame.view().planes[p].height; ++y)
      for (int x = 0; x < frame.view().planes[p].width; ++x)
        reinterpret_cast<std::uint16_t*>(frame.view().planes[p].data + y * frame.view().planes[p].stride)[x] =
            static_cast<std::uint16_t>(64 + (x * 13 + y * 7) % 800);
  writer.write_frame(frame.view(), 0, 1);
  writer.finish();
  const Decoded out = decode(x264.url);
  CHECK(out.info.source_pixel_format == "yuv420p10le");
  CHECK(out.pictures.size() == 1);
}

TEST_CASE("depth io: nv12 at depth (P010, P016 with 12 bits) is written as planar yuv at its depth, exactly") {
  const std::string dir = test::temp_dir("io_depth_nv12");
  const std::string clip = dir + "/source.mkv";
  make_with_ffmpeg("-f lavfi -i testsrc2=s=32x16:r=25:d=0.04 -c:v ffv1 " + q(clip));
  io::InputOptions in;
  in.url = clip;
  io::MediaReader reader(in);
  for (const int depth : {10, 12, 16}) {
    CAPTURE(depth);
    Image frame(PixelFormat::nv12, 32, 16, 64, depth);
    ImageView& v = frame.view();
    const int shift = sample_shift(v);
    std::vector<int> luma, u, w;
    for (int y = 0; y < 16; ++y)
      for (int x = 0; x < 32; ++x) {
        const int value = (x * 97 + y * 31) % (max_code(depth) + 1);
        reinterpret_cast<std::uint16_t*>(v.planes[0].data + y * v.planes[0].stride)[x] = static_cast<std::uint16_t>(value << shift);
        luma.push_back(value);
      }
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 16; ++x) {
        const int cb = (x * 5 + y * 300) % (max_code(depth) + 1), cr = max_code(depth) - cb;
        auto* pair = reinterpret_cast<std::uint16_t*>(v.planes[1].data + y * v.planes[1].stride) + 2 * x;
        pair[0] = static_cast<std::uint16_t>(cb << shift);
        pair[1] = static_cast<std::uint16_t>(cr << shift);
        u.push_back(cb);
        w.push_back(cr);
      }
    io::OutputOptions output;
    output.url = dir + "/p0" + std::to_string(depth) + ".mkv";
    output.encoder = "ffv1";
    io::MediaWriter writer(output, reader, 32, 16, PixelFormat::nv12, depth);
    writer.write_frame(v, 0, 1);
    writer.finish();
    const Decoded out = decode(output.url);
    CHECK(out.info.format == PixelFormat::yuv420p);
    CHECK(out.info.depth == depth);
    std::vector<int> expected = luma;
    expected.insert(expected.end(), u.begin(), u.end());
    expected.insert(expected.end(), w.begin(), w.end());
    REQUIRE(out.pictures.size() == 1);
    CHECK(out.pictures[0] == expected);
  }
}

TEST_CASE("depth io: y4m holds 10 bits; 8-bit input is still read and written at 8 bits") {
  const std::string dir = test::temp_dir("io_depth_y4m");
  const std::string clip = dir + "/in10.mkv";
  make_with_ffmpeg("-f lavfi -i testsrc2=s=48x32:r=25:d=0.2 -pix_fmt yuv422p10le -c:v ffv1 " + q(clip));
  io::OutputOptions y4m;
  y4m.url = dir + "/out.y4m";
  CHECK(test::copy_through(clip, y4m) == 5);
  const Decoded back = decode(y4m.url), in = decode(clip);
  CHECK(back.info.depth == 10);
  CHECK(back.info.format == PixelFormat::yuv422p);
  CHECK(back.pictures == in.pictures);
  CHECK(slurp(y4m.url).find("C422p10") != std::string::npos);

#if LIBAVFORMAT_VERSION_MAJOR < 60
  // An odd side of a subsampled picture at 10 bits: this FFmpeg's muxer would write it short.
  io::InputOptions source;
  source.url = clip;
  io::MediaReader reader(source);
  io::OutputOptions odd_y4m;
  odd_y4m.url = dir + "/odd.y4m";
  try {
    io::MediaWriter writer(odd_y4m, reader, 33, 17, PixelFormat::yuv420p, 10);
    FAIL("a 33x17 10-bit y4m was set up");
  } catch (const io::IoError& e) {
    const std::string message = e.what();
    CHECK(message.find("y4m muxer cannot write yuv420p10le at 33x17") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(odd_y4m.url));
#endif

  const Decoded street = decode(test::sample_path("hazy-street.mp4"));
  CHECK(street.info.depth == 8);
  CHECK(street.info.source_depth == 8);
  io::OutputOptions eight;
  eight.url = dir + "/street.mkv";
  eight.encoder = "ffv1";
  CHECK(test::copy_through(test::sample_path("hazy-street.mp4"), eight) == static_cast<std::int64_t>(street.pictures.size()));
  const Decoded copy = decode(eight.url);
  CHECK(copy.info.source_pixel_format == "yuv420p");
  CHECK(copy.pictures == street.pictures);
}

}  // namespace hazefree
