// End-to-end tests of the hazefree command on the bundled samples: outputs are probed by
// decoding them again, never trusted from the command's own counters.
#include <doctest/doctest.h>

extern "C" {
#include <libavformat/avformat.h>
}

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "kernels/processor.hpp"
#include "run_command.hpp"
#include "support/test_support.hpp"
#include "test_robustness_support.hpp"

#ifdef HAZEFREE_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

using namespace hazefree;

namespace {

using test::q;

}  // namespace

TEST_CASE("cli: dcp on the sample clip keeps every frame, the audio and the timestamps") {
  const std::string dir = test::temp_dir("cli-dcp");
  const std::string in = test::sample_path("hazy-street.mp4");
  const std::string out = dir + "/dehazed.mp4";
  const test::CommandResult r = test::run_hazefree("--mode dcp -b cpu " + q(in) + " " + q(out));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("100 frames") != std::string::npos);  // the summary line
  test::Probe a = test::probe_media(in), b = test::probe_media(out);
  CHECK(b.video_frames == a.video_frames);
  CHECK(b.video_frames == 100);
  CHECK(b.width == a.width);
  CHECK(b.height == a.height);
  CHECK(b.packets_by_type[AVMEDIA_TYPE_AUDIO] == a.packets_by_type[AVMEDIA_TYPE_AUDIO]);
  CHECK(a.packets_by_type[AVMEDIA_TYPE_AUDIO] > 0);
  CHECK(b.info.frame_rate.num * a.info.frame_rate.den == a.info.frame_rate.num * b.info.frame_rate.den);
  CHECK(b.info.matrix == a.info.matrix);
  CHECK(b.info.range == a.info.range);
  // Same presentation times (in seconds) frame by frame.
  REQUIRE(a.pts.size() == b.pts.size());
  for (std::size_t i = 0; i < a.pts.size(); ++i) {
    const double ta = a.pts[i] * a.info.time_base.value(), tb = b.pts[i] * b.info.time_base.value();
    CHECK(tb == doctest::Approx(ta).epsilon(1e-6));
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/.dehazed.mp4.partial"));
}

#ifdef HAZEFREE_HAVE_OPENCV
TEST_CASE("cli: --mode he --color grey on a PNG equals OpenCV's equalizeHist exactly") {
  const std::string dir = test::temp_dir("cli-he-png");
  for (const std::string name : {"coffee-grey.png", "coffee-hazy.png", "astronaut-hazy.png"}) {
    CAPTURE(name);
    const std::string in = test::sample_path("images/" + name);
    const std::string out = dir + "/eq-" + name;
    const test::CommandResult r = test::run_hazefree("-q --mode he --color grey -b cpu " + q(in) + " " + q(out));
    INFO(r.err);
    REQUIRE(r.status == 0);
    // The grey image as OpenCV defines it (cvtColor; imread's own grey path for PNG goes
    // through libpng's conversion, which differs), then equalizeHist.
    const cv::Mat colour = cv::imread(in, cv::IMREAD_UNCHANGED);
    cv::Mat source;
    if (colour.channels() == 3) cv::cvtColor(colour, source, cv::COLOR_BGR2GRAY);
    else source = colour;
    cv::Mat expected;
    cv::equalizeHist(source, expected);
    const cv::Mat written = cv::imread(out, cv::IMREAD_UNCHANGED);
    cv::Mat got;
    if (written.channels() == 3) {
      std::vector<cv::Mat> bgr;
      cv::split(written, bgr);
      CHECK(cv::countNonZero(bgr[0] != bgr[1]) == 0);  // a grey picture: R = G = B
      CHECK(cv::countNonZero(bgr[1] != bgr[2]) == 0);
      got = bgr[0];
    } else {
      got = written;
    }
    REQUIRE(got.size() == expected.size());
    CHECK(cv::countNonZero(got != expected) == 0);
    CHECK(cv::countNonZero(got != source) > 0);  // it did equalize
  }
}
#endif

TEST_CASE("cli: --side-by-side puts input and result next to each other") {
  const std::string dir = test::temp_dir("cli-sbs");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  const std::string out = dir + "/sbs.png";
  const test::CommandResult r = test::run_hazefree("-q --mode he --color rgb -b cpu --side-by-side " + q(in) + " " + q(out));
  INFO(r.err);
  REQUIRE(r.status == 0);
  test::Probe a = test::probe_media(in), b = test::probe_media(out);
  CHECK(b.width == 2 * a.width);
  CHECK(b.height == a.height);
  CHECK(b.video_frames == 1);
}

TEST_CASE("cli: ahe and clahe run on the sample clip with the same frame count") {
  const std::string dir = test::temp_dir("cli-ahe");
  const std::string in = test::sample_path("hazy-street.mp4");
  const std::string out = dir + "/clahe.mkv";
  const test::CommandResult r =
      test::run_hazefree("-q --mode ahe --window 31 --clip 2 -b cpu --preset ultrafast " + q(in) + " " + q(out));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(test::probe_media(out).video_frames == 100);
}

TEST_CASE("cli: '-' as output writes y4m to stdout") {
  const std::string in = test::sample_path("images/coffee-hazy.png");
  const test::CommandResult r = test::run_hazefree("-q --mode he -b cpu " + q(in) + " -");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.rfind("YUV4MPEG2", 0) == 0);
  CHECK(r.out.find("FRAME") != std::string::npos);
}

TEST_CASE("cli: -f null reads and processes everything and writes no file, as ffmpeg's null muxer") {
  const std::string dir = test::temp_dir("cli-null");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  const std::string out = dir + "/discarded";
  const test::CommandResult r = test::run_hazefree("-b cpu -f null " + q(in) + " " + q(out));
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.err.find("1 frames") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK(std::filesystem::is_empty(dir));
}

TEST_CASE("cli: failures give one line naming the input and a non-zero status") {
  const std::string dir = test::temp_dir("cli-errors");
  SUBCASE("missing input") {
    const test::CommandResult r = test::run_hazefree("-q /nonexistent/in.mp4 " + q(dir + "/o.mp4"));
    CHECK(r.status == 1);
    CHECK(r.err.find("/nonexistent/in.mp4") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(dir + "/o.mp4"));
  }
  SUBCASE("existing output without -y") {
    const std::string out = dir + "/exists.png";
    std::ofstream(out) << "x";
    const test::CommandResult r = test::run_hazefree("-q --mode he " + q(test::sample_path("images/coffee.png")) + " " + q(out));
    CHECK(r.status == 1);
    CHECK(r.err.find("exists.png") != std::string::npos);
    CHECK(std::filesystem::file_size(out) == 1);  // untouched
    const test::CommandResult forced =
        test::run_hazefree("-q -y --mode he " + q(test::sample_path("images/coffee.png")) + " " + q(out));
    CHECK(forced.status == 0);
    CHECK(std::filesystem::file_size(out) > 1000);
  }
  SUBCASE("bad option: exit status 2") {
    const test::CommandResult r = test::run_hazefree("--window 4 a b");
    CHECK(r.status == 2);
    CHECK(r.err.find("ahe.window") != std::string::npos);
  }
  SUBCASE("unknown encoder: a bad option value, exit status 2") {
    const test::CommandResult r = test::run_hazefree("-q --encoder no_such_encoder " +
                                               q(test::sample_path("images/coffee.png")) + " " + q(dir + "/x.mp4"));
    CHECK(r.status == 2);
    CHECK(r.err.find("no_such_encoder") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/x.mp4"));
  }
}

TEST_CASE("cli: a raw input's bad -pixel_format or -framerate or -video_size is one line with status 2 and no file") {
  const std::string dir = test::temp_dir("cli-raw-input");
  const std::string raw = dir + "/in.yuv";
  std::ofstream(raw, std::ios::binary) << std::string(64 * 48 * 3 / 2 * 3, '\x80');  // three grey 64x48 I420 frames
  const std::string out = dir + "/out.mkv";
  struct Case {
    std::string options, line;
  };
  for (const Case& c :
       {Case{"-video_size 64x48 -pixel_format bogus",
             "hazefree: -pixel_format bogus (input.pixel_format): no such pixel format (ffmpeg -pix_fmts lists them)"},
        Case{"-video_size 64x48 -framerate abc",
             "hazefree: -framerate abc (input.framerate): not a frame rate above 0 (25, 30000/1001, ntsc, ...)"},
        Case{"-video_size 64x",
             "hazefree: -video_size 64x (input.size): not a frame size (WxH, both sides above 0, or a name such as "
             "hd720)"}}) {
    CAPTURE(c.options);
    const test::CommandResult r = test::run_hazefree("-b cpu -f rawvideo " + c.options + " -i " + q(raw) + " " + q(out));
    CHECK(r.status == 2);
    CHECK(test::lines_of(r.err) == std::vector<std::string>{c.line});
    CHECK_FALSE(std::filesystem::exists(out));
  }
  const test::CommandResult bad_format = test::run_hazefree("-b cpu -f rawvdeo -i " + q(raw) + " " + q(out));
  CHECK(bad_format.status == 2);
  CHECK(test::lines_of(bad_format.err) ==
        std::vector<std::string>{
            "hazefree: --input-format rawvdeo (input.format): no such input format (ffmpeg -demuxers lists them)"});
  // The same options with values FFmpeg takes read the three frames.
  const test::CommandResult good = test::run_hazefree("-q -b cpu -f rawvideo -video_size 64x48 -framerate 30000/1001 "
                                                      "-pixel_format yuv420p -i " + q(raw) + " " + q(out));
  INFO(good.err);
  CHECK(good.status == 0);
  CHECK(test::probe_media(out).video_frames == 3);
}

TEST_CASE("cli: a job flag's open-ended range and a preset's bad value are one readable line with status 2") {
  const std::string dir = test::temp_dir("cli-readable-ranges");
  const std::string in = q(test::sample_path("hazy-street.mp4")), out = q(dir + "/o.mp4");
  struct Case {
    std::string arguments, line;
  };
  const std::string preset = dir + "/bad.toml";
  std::ofstream(preset) << "[dcp]\nomega=2\n";
  for (const Case& c : {Case{"--chunks 2 --chunk-seconds -1", "hazefree: --chunk-seconds: -1 must be greater than 0"},
                        Case{"--job-memory -5 --chunks 2", "hazefree: --job-memory: -5 must be at least 0"},
                        Case{"-c " + q(preset), "hazefree: " + preset + ": dcp.omega = 2 is outside (0, 1]"}}) {
    CAPTURE(c.arguments);
    const test::CommandResult r = test::run_hazefree(c.arguments + " " + in + " " + out);
    CHECK(r.status == 2);
    CHECK(test::lines_of(r.err) == std::vector<std::string>{c.line});
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/o.mp4"));
}

TEST_CASE("cli: --print-config prints every key and exits 0") {
  const test::CommandResult r = test::run_hazefree("--print-config --mode ahe --window 31");
  CHECK(r.status == 0);
  CHECK(r.out.find("mode = \"ahe\"") != std::string::npos);
  CHECK(r.out.find("window = 31") != std::string::npos);
  CHECK(r.out.find("[dcp]") != std::string::npos);
}

TEST_CASE("cli: --hwdec cuda without a usable GPU fails with one clear line, and unknown names are refused") {
  const std::string dir = test::temp_dir("cli-hwdec");
  const test::CommandResult bad = test::run_hazefree("--hwdec vaapi a.mp4 b.mp4");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("input.hwdec") != std::string::npos);
  if (cuda_available()) return;  // with a GPU the GPU check exercises the real path
  const test::CommandResult r =
      test::run_hazefree("-q --hwdec cuda " + q(test::sample_path("hazy-street.mp4")) + " " + q(dir + "/o.mp4"));
  CHECK(r.status == 1);
  CHECK(r.err.find("hazy-street.mp4") != std::string::npos);
  CHECK(r.err.find("--hwdec cuda") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/o.mp4"));
}

