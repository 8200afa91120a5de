// Watching and tuning a run through the public API (what the service builds on): each frame's
// input and result in RunControl::on_frame, the live counters of RunProgress, option changes
// applied between two frames (RunControl::option_changes), and encode_jpeg().
#include <doctest/doctest.h>
#include <hazefree/hazefree.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

// Mean absolute difference of two frames' first planes.
double mean_difference(const hazefree::Frame& a, const hazefree::Frame& b) {
  double sum = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width; ++x)
      sum += std::abs(a.planes[0].data[y * a.planes[0].stride + x] - b.planes[0].data[y * b.planes[0].stride + x]);
  return sum / (static_cast<double>(a.width) * a.height);
}

}  // namespace

TEST_CASE("run() shows each frame and its result, and takes option changes from the next frame") {
  const std::string dir = hazefree::test::temp_dir("library-watch");
  const std::string clip = hazefree::test::sample_path("hazy-street.mp4");
  std::atomic<bool> cancel{false};
  std::vector<double> differences;  // output against input, per frame
  bool changed = false;
  hazefree::RunControl control;
  control.cancel = &cancel;
  control.on_frame = [&](const hazefree::Frame& in, const hazefree::Frame& out) {
    REQUIRE(in.width == 768);
    REQUIRE(out.width == 768);
    CHECK(in.format == hazefree::FrameFormat::i420);
    differences.push_back(mean_difference(in, out));
    if (differences.size() == 24) cancel.store(true);
  };
  control.option_changes = [&](hazefree::Options& changes) {
    if (differences.size() != 12 || changed) return false;
    changed = true;
    changes["dcp.omega"] = "0.05";  // hardly any haze removed: the result comes close to the input
    return true;
  };
  std::int64_t frames = 0;
  control.progress = [&](const hazefree::RunProgress& p) {
    frames = p.frames;
    CHECK(p.latency_seconds > 0);
    CHECK(p.frames_dropped == 0);
    CHECK(p.reconnects == 0);
  };
  const hazefree::RunResult result =
      hazefree::run(clip, dir + "/watched.y4m", {{"backend", "cpu"}, {"threads", "2"}, {"dcp.omega", "0.95"}}, control);
  CHECK(result.cancelled);
  REQUIRE(differences.size() >= 24);
  CHECK(frames == result.frames_out);
  double before = 0, after = 0;
  for (int i = 0; i < 12; ++i) before += differences[static_cast<std::size_t>(i)] / 12;
  for (int i = 12; i < 24; ++i) after += differences[static_cast<std::size_t>(i)] / 12;
  INFO("output against input before the change " << before << ", after " << after);
  CHECK(after < before / 2);

  // A key a running processor cannot take fails the run, naming it.
  hazefree::RunControl wrong;
  wrong.option_changes = [](hazefree::Options& changes) {
    changes["output.crf"] = "10";
    return true;
  };
  CHECK_THROWS_WITH_AS(hazefree::run(clip, dir + "/wrong.y4m", {{"backend", "cpu"}}, wrong),
                       doctest::Contains("output.crf"), hazefree::OptionError);
}

TEST_CASE("encode_jpeg() writes one JPEG picture, scaled down when asked") {
  std::vector<std::uint8_t> rgb(64 * 48 * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>(i * 7);
  const hazefree::Frame frame = hazefree::Frame::rgb24(rgb.data(), 64, 48, 64 * 3);
  const std::vector<std::uint8_t> full = hazefree::encode_jpeg(frame);
  REQUIRE(full.size() > 4);
  CHECK(full[0] == 0xFF);
  CHECK(full[1] == 0xD8);
  CHECK(full[full.size() - 2] == 0xFF);
  CHECK(full[full.size() - 1] == 0xD9);
  // The frame's size is in the SOF0 marker (FF C0: length, precision, height, width).
  auto size_of = [](const std::vector<std::uint8_t>& jpeg) {
    for (std::size_t i = 0; i + 8 < jpeg.size(); ++i)
      if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) return std::make_pair((jpeg[i + 7] << 8) | jpeg[i + 8], (jpeg[i + 5] << 8) | jpeg[i + 6]);
    return std::make_pair(0, 0);
  };
  CHECK(size_of(full) == std::make_pair(64, 48));
  CHECK(size_of(hazefree::encode_jpeg(frame, 32)) == std::make_pair(32, 24));
  CHECK_THROWS_AS(hazefree::encode_jpeg(hazefree::Frame::rgb24(nullptr, 64, 48, 64 * 3)), hazefree::FrameError);
}
