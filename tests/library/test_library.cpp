// The public C++ API (include/hazefree/hazefree.hpp) as a program linking libhazefree sees it:
// frames given as pointer + stride planes (I420, NV12, GREY8, RGB24, with padded rows) give what
// the CPU backend gives on the same pixels; bad frames and options throw the documented
// exceptions naming the argument or key; run() reports progress and stops on its cancel flag
// with a finished output; FrameReader yields the processed frames.
#include <doctest/doctest.h>
#include <hazefree/hazefree.hpp>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/image.hpp"
#include "kernels/processor.hpp"
#include "support/test_support.hpp"

namespace {

// A frame's planes in separate buffers with padded rows, filled with smooth noise.
struct Planes {
  std::vector<std::vector<std::uint8_t>> data;
  std::vector<int> strides;
};

Planes make_planes(hazefree::PixelFormat format, int w, int h, std::uint32_t seed) {
  Planes p;
  std::mt19937 rng(seed);
  for (int i = 0; i < hazefree::plane_count(format); ++i) {
    const hazefree::PlaneView g = hazefree::plane_geometry(format, w, h, i);
    const int row = g.width * hazefree::bytes_per_sample(format, i);
    const int stride = row + 13 + 7 * i;  // odd padding: no alignment to rely on
    std::vector<std::uint8_t> plane(static_cast<std::size_t>(stride) * g.height, 0xA5);
    for (int y = 0; y < g.height; ++y)
      for (int x = 0; x < row; ++x)
        plane[static_cast<std::size_t>(y) * stride + x] = static_cast<std::uint8_t>((x * 3 + y * 5) / 2 + rng() % 40);
    p.data.push_back(std::move(plane));
    p.strides.push_back(stride);
  }
  return p;
}

hazefree::ImageView view_of(Planes& p, hazefree::PixelFormat format, int w, int h) {
  hazefree::ImageView v;
  v.format = format;
  v.width = w;
  v.height = h;
  v.matrix = hazefree::default_matrix_for_height(h);
  v.range = hazefree::is_yuv(format) ? hazefree::ColorRange::limited : hazefree::ColorRange::full;
  v.plane_count = hazefree::plane_count(format);
  for (int i = 0; i < v.plane_count; ++i) {
    v.planes[i] = hazefree::plane_geometry(format, w, h, i);
    v.planes[i].data = p.data[i].data();
    v.planes[i].stride = p.strides[i];
  }
  return v;
}

hazefree::Frame frame_of(Planes& p, hazefree::PixelFormat format, int w, int h) {
  using hazefree::Frame;
  switch (format) {
    case hazefree::PixelFormat::yuv420p:
      return Frame::i420(p.data[0].data(), p.strides[0], p.data[1].data(), p.strides[1], p.data[2].data(),
                         p.strides[2], w, h);
    case hazefree::PixelFormat::nv12:
      return Frame::nv12(p.data[0].data(), p.strides[0], p.data[1].data(), p.strides[1], w, h);
    case hazefree::PixelFormat::gray8: return Frame::gray8(p.data[0].data(), w, h, p.strides[0]);
    case hazefree::PixelFormat::rgb24: return Frame::rgb24(p.data[0].data(), w, h, p.strides[0]);
    default: break;
  }
  FAIL("format not covered");
  return {};
}

}  // namespace

TEST_CASE("version macros and configuration keys") {
  CHECK(std::string(HAZEFREE_VERSION_STRING) == std::to_string(HAZEFREE_VERSION_MAJOR) + "." +
                                                    std::to_string(HAZEFREE_VERSION_MINOR) + "." +
                                                    std::to_string(HAZEFREE_VERSION_PATCH));
  const auto& keys = hazefree::configuration_keys();
  REQUIRE(keys.size() > 20);
  CHECK(keys.front().name == "mode");
  CHECK(keys.front().default_value == "dcp");
  bool found = false;
  for (const auto& k : keys) {
    if (k.name == "ahe.window") {
      found = true;
      CHECK(k.default_value == "63");
      CHECK(!k.help.empty());
      CHECK(!k.range.empty());
    }
  }
  CHECK(found);
}

TEST_CASE("planar host frames give the CPU backend's result, padding untouched") {
  using hazefree::PixelFormat;
  const std::vector<std::vector<std::pair<std::string, std::string>>> configs = {
      {{"mode", "dcp"}, {"dcp.gf_radius", "8"}},
      {{"mode", "he"}, {"color", "luma"}},
      {{"mode", "he"}, {"color", "rgb"}, {"he.temporal", "0.5"}},
      {{"mode", "ahe"}, {"ahe.window", "15"}, {"ahe.clip", "2"}},
  };
  for (const PixelFormat format : {PixelFormat::yuv420p, PixelFormat::nv12, PixelFormat::gray8, PixelFormat::rgb24}) {
    for (const auto& config : configs) {
      for (const auto& [w, h] : {std::pair{37, 23}, std::pair{64, 48}, std::pair{3, 2}}) {
        hazefree::Options options{{"backend", "cpu"}};
        hazefree::ProcessingConfig internal;
        internal.backend = hazefree::Backend::cpu;
        for (const auto& [k, v] : config) options[k] = v;
        internal.mode = *hazefree::parse_mode(options["mode"]);
        if (options.count("color")) internal.color = *hazefree::parse_color_mode(options["color"]);
        if (options.count("dcp.gf_radius")) internal.dcp.gf_radius = 8;
        if (options.count("he.temporal")) internal.he.temporal = 0.5f;
        if (options.count("ahe.window")) internal.ahe = {15, 2.0f};
        INFO(hazefree::to_string(format), " ", w, "x", h, " mode ", options["mode"]);
        hazefree::Processor processor(options);
        auto reference = hazefree::make_cpu_processor(internal);
        // Two frames: the temporal state carries over in both.
        for (std::uint32_t frame = 0; frame < 2; ++frame) {
          Planes in = make_planes(format, w, h, 11 + frame);
          Planes out = make_planes(format, w, h, 99);
          Planes expected = make_planes(format, w, h, 99);
          processor.process(frame_of(in, format, w, h), frame_of(out, format, w, h));
          hazefree::ImageView expected_view = view_of(expected, format, w, h);
          reference->process(view_of(in, format, w, h), expected_view);
          for (std::size_t i = 0; i < out.data.size(); ++i) CHECK(out.data[i] == expected.data[i]);
        }
        CHECK(processor.atmospheric_light() == reference->atmospheric_light());
      }
    }
  }
}

TEST_CASE("errors name the key or the argument") {
  try {
    hazefree::Processor p({{"dcp.omega", "1.5"}});
    FAIL("accepted dcp.omega = 1.5");
  } catch (const hazefree::OptionError& e) {
    CHECK(e.key() == "dcp.omega");
    CHECK(std::string(e.what()).find("(0, 1]") != std::string::npos);
  }
  try {
    hazefree::Processor p({{"dcp.omegaa", "0.5"}});
    FAIL("accepted an unknown key");
  } catch (const hazefree::OptionError& e) {
    CHECK(e.key() == "dcp.omegaa");
  }
  CHECK_THROWS_AS(hazefree::validate_options({{"ahe.window", "4"}}), hazefree::OptionError);
  CHECK_NOTHROW(hazefree::validate_options({{"ahe.window", "5"}, {"mode", "ahe"}}));

  hazefree::Processor p({{"mode", "he"}, {"backend", "cpu"}});
  std::vector<std::uint8_t> a(64 * 3 * 8), b(a.size());
  const hazefree::Frame in = hazefree::Frame::rgb24(a.data(), 64, 8, 64 * 3);
  CHECK_THROWS_WITH_AS(p.process(in, hazefree::Frame::rgb24(b.data(), 64, 8, 100)),
                       doctest::Contains("out: plane 0 stride 100"), hazefree::FrameError);
  CHECK_THROWS_WITH_AS(p.process(in, hazefree::Frame::rgb24(nullptr, 64, 8, 64 * 3)),
                       doctest::Contains("out: plane 0 has no data"), hazefree::FrameError);
  CHECK_THROWS_WITH_AS(p.process(in, hazefree::Frame::rgb24(b.data(), 63, 8, 64 * 3)),
                       doctest::Contains("out: rgb24 63x8 frame, expected the input's rgb24 64x8"), hazefree::FrameError);
  std::vector<std::uint8_t> c(64 * 3 * 9);
  CHECK_THROWS_WITH_AS(p.process(hazefree::Frame::rgb24(c.data(), 64, 8, 64 * 3),
                                 hazefree::Frame::rgb24(c.data() + 64 * 3, 64, 8, 64 * 3)),
                       doctest::Contains("out: overlaps the input frame"), hazefree::FrameError);
  CHECK_THROWS_WITH_AS(p.process(hazefree::Frame::rgb24(a.data(), 0, 8, 64 * 3), in),
                       doctest::Contains("in: empty frame"), hazefree::FrameError);
  std::string why;
  if (!hazefree::gpu_available(&why)) {
    CHECK(!why.empty());
    CHECK_THROWS_AS(p.process_device(in, hazefree::Frame::rgb24(b.data(), 64, 8, 64 * 3), nullptr),
                    hazefree::GpuUnavailableError);
    CHECK_THROWS_AS(hazefree::Processor({{"backend", "cuda"}}), hazefree::GpuUnavailableError);
  }
}

TEST_CASE("run() reports progress and finishes the output when cancelled") {
  const std::string dir = hazefree::test::temp_dir("library-run");
  const std::string clip = hazefree::test::sample_path("hazy-street.mp4");
  std::atomic<bool> cancel{false};
  std::int64_t last = 0, expected = -1;
  hazefree::RunControl control;
  control.cancel = &cancel;
  control.progress = [&](const hazefree::RunProgress& p) {
    CHECK(p.frames == last + 1);
    last = p.frames;
    expected = p.expected_frames;
    if (p.frames == 12) cancel.store(true);
  };
  const hazefree::RunResult result =
      hazefree::run(clip, dir + "/cancelled.y4m", {{"mode", "he"}, {"backend", "cpu"}}, control);
  CHECK(result.cancelled);
  CHECK(expected == 100);
  CHECK(result.frames_out == last);
  CHECK(result.frames_out >= 12);
  CHECK(result.frames_out < 100);
  std::ifstream file(dir + "/cancelled.y4m", std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::size_t frames = 0;
  for (std::size_t at = data.find("FRAME"); at != std::string::npos; at = data.find("FRAME", at + 5)) ++frames;
  CHECK(static_cast<std::int64_t>(frames) == result.frames_out);

  CHECK_THROWS_WITH_AS(hazefree::run(dir + "/missing.mp4", dir + "/out.y4m"), doctest::Contains("missing.mp4"),
                       std::runtime_error);
  CHECK_THROWS_AS(hazefree::run(clip, dir + "/out.y4m", {{"output.crf", "99"}}), hazefree::OptionError);
}

TEST_CASE("FrameReader yields every processed frame as RGB") {
  hazefree::FrameReader reader(hazefree::test::sample_path("hazy-street.mp4"), {{"mode", "he"}, {"backend", "cpu"}});
  REQUIRE(reader.width() == 768);
  REQUIRE(reader.height() == 576);
  std::vector<std::uint8_t> rgb(768 * 576 * 3);
  int frames = 0;
  while (reader.next(hazefree::Frame::rgb24(rgb.data(), 768, 576, 768 * 3))) ++frames;
  CHECK(frames == 100);
  CHECK_THROWS_AS(reader.next(hazefree::Frame::rgb24(rgb.data(), 767, 576, 768 * 3)), hazefree::FrameError);
}
