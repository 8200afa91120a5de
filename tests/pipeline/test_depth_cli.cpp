// The hazefree command at high bit depth (SPEC 7), end to end: the outputs are decoded again with
// the ffmpeg program (raw samples) and probed with ffprobe, never trusted from the command's own
// counters; the expected pictures come from the SPEC 7 rules computed here, sharing no code with
// the product.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_command.hpp"
#include "support/test_support.hpp"
#include "test_robustness_support.hpp"

using namespace hazefree;

namespace {

using test::output_of;
using test::q;

int run_program(const std::string& command) {
  const int raw = std::system((command + " </dev/null").c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

void ffmpeg(const std::string& arguments) {
  REQUIRE_MESSAGE(run_program("ffmpeg -v error -nostdin -y " + arguments) == 0, "ffmpeg " << arguments);
}

// One field of the first video stream, as ffprobe reports it ("yuv420p10le", "10", ...).
std::string probe_video(const std::string& path, const std::string& field) {
  return output_of("ffprobe -v error -select_streams v:0 -show_entries stream=" + field +
                   " -of default=noprint_wrappers=1:nokey=1 " + q(path));
}

int count_packets(const std::string& path, const std::string& stream) {
  const std::string n = output_of("ffprobe -v error -select_streams " + stream +
                                  " -count_packets -show_entries stream=nb_read_packets -of csv=p=0 " + q(path));
  return n.empty() ? -1 : std::stoi(n);
}

// Every picture of a file decoded by ffmpeg as raw `pix_fmt` samples (16-bit little-endian words
// above 8 bits).
std::vector<int> raw_samples(const std::string& path, const std::string& pix_fmt) {
  // Beside the build's other test files, never beside the input (which may be a sample).
  const std::string raw = std::string(HAZEFREE_TEST_TMP) + "/depth-cli-" + std::to_string(getpid()) + "-" +
                          std::filesystem::path(path).filename().string() + "." + pix_fmt + ".raw";
  ffmpeg("-i " + q(path) + " -f rawvideo -pix_fmt " + pix_fmt + " " + q(raw));
  std::ifstream file(raw, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  std::filesystem::remove(raw);
  const bool wide = pix_fmt.find("le") != std::string::npos;
  std::vector<int> values;
  for (std::size_t i = 0; i + (wide ? 1 : 0) < bytes.size(); i += wide ? 2 : 1) {
    const int low = static_cast<std::uint8_t>(bytes[i]);
    values.push_back(wide ? low | static_cast<std::uint8_t>(bytes[i + 1]) << 8 : low);
  }
  return values;
}

// SPEC 7 global HE of `plane` (values 0..M): 2^d bins, OpenCV's rule with M for 255.
std::vector<int> he_lut(const std::vector<int>& plane, int depth) {
  const int max = (1 << depth) - 1;
  std::vector<std::int64_t> hist(static_cast<std::size_t>(max) + 1, 0);
  for (const int v : plane) ++hist[static_cast<std::size_t>(v)];
  std::vector<int> lut(hist.size());
  for (int v = 0; v <= max; ++v) lut[static_cast<std::size_t>(v)] = v;  // unchanged
  int first = 0;
  while (hist[static_cast<std::size_t>(first)] == 0) ++first;
  const auto total = static_cast<std::int64_t>(plane.size());
  if (hist[static_cast<std::size_t>(first)] == total) return lut;
  const float scale = static_cast<float>(max) / static_cast<float>(total - hist[static_cast<std::size_t>(first)]);
  lut[static_cast<std::size_t>(first)] = 0;
  std::int64_t sum = 0;
  for (int v = first + 1; v <= max; ++v) {
    sum += hist[static_cast<std::size_t>(v)];
    // Round half to even, as cvRound (lrint in the default rounding mode).
    const float scaled = static_cast<float>(sum) * scale;
    lut[static_cast<std::size_t>(v)] = std::min(max, static_cast<int>(std::nearbyint(scaled)));
  }
  return lut;
}

// SPEC 7 AHE/CLAHE of a width x height grey picture at `depth` with a w x w window (reflect-101
// borders), naively: every pixel's own window histogram of 2^min(d, 12) bins.
std::vector<int> ahe_reference(const std::vector<int>& picture, int width, int height, int depth, int window,
                               double clip) {
  const int max = (1 << depth) - 1;
  const int bins_bits = std::min(depth, 12);
  const int bins = 1 << bins_bits;
  const int drop = depth - bins_bits;
  const int radius = window / 2;
  const std::int64_t n = static_cast<std::int64_t>(window) * window;
  auto reflect = [](int i, int size) { return i < 0 ? -i : i >= size ? 2 * size - 2 - i : i; };
  std::vector<int> out(picture.size());
  std::vector<std::int64_t> hist(static_cast<std::size_t>(bins));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      std::fill(hist.begin(), hist.end(), 0);
      for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx) {
          const int v = picture[static_cast<std::size_t>(reflect(y + dy, height) * width + reflect(x + dx, width))];
          ++hist[static_cast<std::size_t>(v >> drop)];
        }
      if (clip > 0) {
        const std::int64_t limit = std::max<std::int64_t>(1, static_cast<std::int64_t>(clip * n / bins));
        std::int64_t excess = 0;
        for (std::int64_t& h : hist) {
          if (h > limit) {
            excess += h - limit;
            h = limit;
          }
        }
        for (std::int64_t& h : hist) h += excess / bins;
        std::int64_t remainder = excess % bins;
        if (remainder > 0) {
          const std::int64_t step = std::max<std::int64_t>(bins / remainder, 1);
          for (std::int64_t i = 0; i < bins && remainder > 0; i += step, --remainder) ++hist[static_cast<std::size_t>(i)];
        }
      }
      const int centre = picture[static_cast<std::size_t>(y * width + x)] >> drop;
      std::int64_t cdf = 0;
      for (int b = 0; b <= centre; ++b) cdf += hist[static_cast<std::size_t>(b)];
      out[static_cast<std::size_t>(y * width + x)] = static_cast<int>((max * cdf + n / 2) / n);
    }
  }
  return out;
}

// A 16-bit grey PNG whose samples use all 16 bits (a smooth pattern with fine texture), made
// from raw little-endian samples with the ffmpeg program; returns the samples.
std::vector<int> make_grey16_png(const std::string& path, int width, int height) {
  std::vector<int> samples;
  std::string raw;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double smooth = 0.5 + 0.35 * std::sin(x * 0.11 + y * 0.05) * std::cos(y * 0.13);
      const int v = std::clamp(static_cast<int>(smooth * 65535) + (x * 7919 + y * 104729) % 2048 - 1024, 0, 65535);
      samples.push_back(v);
      raw.push_back(static_cast<char>(v & 0xff));
      raw.push_back(static_cast<char>(v >> 8));
    }
  }
  const std::string raw_path = path + ".raw";
  std::ofstream(raw_path, std::ios::binary) << raw;
  ffmpeg("-f rawvideo -pix_fmt gray16le -s " + std::to_string(width) + "x" + std::to_string(height) + " -i " +
         q(raw_path) + " -frames:v 1 -pix_fmt gray16be " + q(path));
  return samples;
}

// A limited-range 10-bit 4:2:0 FFV1 clip whose samples use the two extra bits, with audio.
void make_ten_bit_clip(const std::string& path, int width, int height, double seconds) {
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  const std::string d = std::to_string(seconds);
  ffmpeg("-f lavfi -i gradients=s=" + size + ":r=25:d=" + d + ":speed=0.05 -f lavfi -i sine=d=" + d +
         " -pix_fmt yuv420p10le -color_range tv -c:v ffv1 -c:a flac -shortest " + q(path));
}

}  // namespace

TEST_CASE("depth cli: luma HE of a limited-range 10-bit clip equals the SPEC 7 rule exactly") {
  const std::string dir = test::temp_dir("cli-depth-he10");
  const std::string in = dir + "/in10.mkv", out = dir + "/he10.mkv";
  constexpr int kWidth = 96, kHeight = 64;
  make_ten_bit_clip(in, kWidth, kHeight, 0.2);
  const test::CommandResult r = test::run_hazefree("-q -b cpu --mode he --encoder ffv1 " + q(in) + " " + q(out));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(probe_video(out, "pix_fmt") == "yuv420p10le");
  CHECK(probe_video(out, "bits_per_raw_sample") == "10");
  CHECK(count_packets(out, "a") == count_packets(in, "a"));

  const std::vector<int> source = raw_samples(in, "yuv420p10le"), result = raw_samples(out, "yuv420p10le");
  const std::size_t luma = kWidth * kHeight, chroma = (kWidth / 2) * (kHeight / 2);
  const std::size_t picture = luma + 2 * chroma;
  REQUIRE(source.size() == 5 * picture);
  REQUIRE(result.size() == source.size());
  constexpr int kDepth = 10, kShift = kDepth - 8, kMax = (1 << kDepth) - 1;
  bool uses_ten_bits = false;
  for (std::size_t f = 0; f < 5; ++f) {
    CAPTURE(f);
    const auto begin = source.begin() + static_cast<std::ptrdiff_t>(f * picture);
    const std::vector<int> y(begin, begin + static_cast<std::ptrdiff_t>(luma));
    for (const int v : y) uses_ten_bits |= v % 4 != 0;
    const std::vector<int> lut = he_lut(y, kDepth);
    std::vector<int> expected;
    // Limited-range luma: each equalized code e back into 64..940.
    for (const int v : y) expected.push_back((16 << kShift) + ((219 << kShift) * lut[static_cast<std::size_t>(v)] + kMax / 2) / kMax);
    // Chroma is kept.
    expected.insert(expected.end(), begin + static_cast<std::ptrdiff_t>(luma), begin + static_cast<std::ptrdiff_t>(picture));
    const std::vector<int> got(result.begin() + static_cast<std::ptrdiff_t>(f * picture),
                               result.begin() + static_cast<std::ptrdiff_t>((f + 1) * picture));
    CHECK(got == expected);
  }
  CHECK(uses_ten_bits);
}

TEST_CASE("depth cli: HE and AHE/CLAHE on a 16-bit grey PNG equal the SPEC 7 rules") {
  const std::string dir = test::temp_dir("cli-depth-grey16");
  const std::string in = dir + "/grey16.png";
  constexpr int kWidth = 53, kHeight = 41, kDepth = 16;
  const std::vector<int> samples = make_grey16_png(in, kWidth, kHeight);
  REQUIRE(raw_samples(in, "gray16le") == samples);

  {
    const std::string out = dir + "/he.png";
    const test::CommandResult r = test::run_hazefree("-q -b cpu --mode he " + q(in) + " " + q(out));
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(probe_video(out, "pix_fmt") == "gray16be");
    const std::vector<int> lut = he_lut(samples, kDepth);
    std::vector<int> expected;
    for (const int v : samples) expected.push_back(lut[static_cast<std::size_t>(v)]);
    CHECK(raw_samples(out, "gray16le") == expected);
  }
  const struct {
    int window;
    double clip;
  } windows[] = {{15, 0.0}, {31, 0.0}, {31, 60.0}, {7, 300.0}};
  for (const auto& w : windows) {
    CAPTURE(w.window);
    CAPTURE(w.clip);
    const std::string out = dir + "/ahe-" + std::to_string(w.window) + "-" + std::to_string(int(w.clip)) + ".png";
    const test::CommandResult r = test::run_hazefree("-q -b cpu --mode ahe --window " + std::to_string(w.window) +
                                                     " --clip " + std::to_string(w.clip) + " " + q(in) + " " + q(out));
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(probe_video(out, "pix_fmt") == "gray16be");
    CHECK(raw_samples(out, "gray16le") == ahe_reference(samples, kWidth, kHeight, kDepth, w.window, w.clip));
  }
}

TEST_CASE("depth cli: a 10-bit profile over 8-bit frames is refused with the way to 10 bits; x265's log stays quiet with the user's x265-params") {
  const std::string dir = test::temp_dir("cli-depth-profile");
  const std::string in = dir + "/in8.mkv";
  ffmpeg("-f lavfi -i testsrc2=s=128x72:r=25:d=0.2 -pix_fmt yuv420p -c:v ffv1 " + q(in));
  for (const std::string& encoder_profile : {std::string("libx265 --profile main10"), std::string("libx264 --profile high10")}) {
    CAPTURE(encoder_profile);
    const test::CommandResult r = test::run_hazefree("-b cpu --encoder " + encoder_profile + " " + q(in) + " " +
                                                     q(dir + "/out.mkv"));
    CHECK(r.status == 2);
    const std::vector<std::string> own = test::own_lines(r.err);
    REQUIRE(own.size() == 1);
    CHECK(own[0].find("encodes 10 bits and the frames are 8-bit: add --output-depth 10") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/out.mkv"));
  }
  const std::string out = dir + "/main10.mkv";
  const test::CommandResult r = test::run_hazefree(
      "-q -b cpu --encoder libx265 --output-depth 10 --profile main10 --set output.preset=ultrafast --encoder-opt "
      "x265-params=aq-mode=3:no-sao=1 " + q(in) + " " + q(out));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_MESSAGE(r.err.find("x265 [") == std::string::npos, "-q leaves out libx265's own log beside the user's x265-params");
  CHECK(probe_video(out, "profile") == "Main 10");
  CHECK(probe_video(out, "pix_fmt") == "yuv420p10le");
}

TEST_CASE("depth cli: --output-depth 10 writes 10 bits from 8-bit input, processed at 10 bits") {
  const std::string dir = test::temp_dir("cli-depth-output10");
  const std::string in = dir + "/in8.mkv";
  ffmpeg("-f lavfi -i testsrc2=s=128x72:r=25:d=0.4 -f lavfi -i sine=d=0.4 -pix_fmt yuv420p -c:v ffv1 -c:a flac "
         "-shortest " + q(in));
  for (const std::string encoder : {"ffv1", "libx264", "libx265"}) {
    CAPTURE(encoder);
    const std::string out = dir + "/dcp10-" + encoder + ".mkv";
    const test::CommandResult r = test::run_hazefree("-q -b cpu --mode dcp --output-depth 10 --encoder " + encoder +
                                                     (encoder == "libx265" ? " --set output.preset=ultrafast " : " ") +
                                                     q(in) + " " + q(out));
    INFO(r.err);
    REQUIRE(r.status == 0);
    // -q: no encoder's own log lines either (libx265 prints its own; a sanitizer's summary may
    // follow the run's output, so the check is on x265's lines, not on an empty stderr).
    CHECK_MESSAGE(r.err.find("x265 [") == std::string::npos, "-q leaves out libx265's own log");
    CHECK(probe_video(out, "pix_fmt") == "yuv420p10le");
    if (encoder == "ffv1") CHECK(probe_video(out, "bits_per_raw_sample") == "10");
    if (encoder == "libx264") CHECK(probe_video(out, "profile") == "High 10");
    CHECK(count_packets(out, "v") == 10);
    CHECK(count_packets(out, "a") == count_packets(in, "a"));
  }
  // Processed at 10 bits: the dehazed luma takes codes an 8-bit result shifted up could not.
  const std::vector<int> y = raw_samples(dir + "/dcp10-ffv1.mkv", "yuv420p10le");
  CHECK(std::any_of(y.begin(), y.end(), [](int v) { return v % 4 != 0; }));

  // Without the option the 8-bit input stays 8-bit; 8 asked for on 8-bit input changes nothing.
  const std::string same = dir + "/he8.mkv", asked = dir + "/he8-asked.mkv";
  REQUIRE(test::run_hazefree("-q -b cpu --mode he --encoder ffv1 " + q(in) + " " + q(same)).status == 0);
  REQUIRE(test::run_hazefree("-q -b cpu --mode he --encoder ffv1 --output-depth 8 " + q(in) + " " + q(asked)).status == 0);
  CHECK(probe_video(same, "pix_fmt") == "yuv420p");
  CHECK(raw_samples(asked, "yuv420p") == raw_samples(same, "yuv420p"));

  // Down: a 10-bit clip written at 8 bits.
  const std::string ten = dir + "/in10.mkv", down = dir + "/down8.mkv";
  make_ten_bit_clip(ten, 64, 48, 0.2);
  const test::CommandResult r = test::run_hazefree("-q -b cpu --mode he --output-depth 8 --encoder ffv1 " + q(ten) +
                                                   " " + q(down));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(probe_video(down, "pix_fmt") == "yuv420p");
  CHECK(count_packets(down, "v") == 5);
}

TEST_CASE("depth cli: 10-bit HEVC and 12-bit FFV1 clips keep their depth, every frame and the audio") {
  const std::string dir = test::temp_dir("cli-depth-keep");
  const std::string hevc = dir + "/in10.mp4", ffv1 = dir + "/in12.mkv";
  ffmpeg("-f lavfi -i testsrc2=s=160x90:r=25:d=0.6 -f lavfi -i sine=d=0.6 -pix_fmt yuv420p10le -c:v libx265 "
         "-x265-params log-level=error -c:a aac -shortest " + q(hevc));
  ffmpeg("-f lavfi -i testsrc2=s=160x90:r=25:d=0.6 -f lavfi -i sine=d=0.6 -pix_fmt yuv422p12le -c:v ffv1 "
         "-c:a flac -shortest " + q(ffv1));
  const struct {
    std::string in, out, encoder, pix_fmt;
  } runs[] = {{hevc, dir + "/dcp10.mp4", "libx265", "yuv420p10le"},
              {ffv1, dir + "/ahe12.mkv", "ffv1", "yuv422p12le"},
              {ffv1, dir + "/he12-x265.mkv", "libx265", "yuv422p12le"}};
  for (const auto& run : runs) {
    CAPTURE(run.out);
    const std::string mode = run.out.find("dcp") != std::string::npos   ? "dcp"
                             : run.out.find("ahe") != std::string::npos ? "ahe --window 15"
                                                                        : "he";
    const test::CommandResult r = test::run_hazefree("-q -b cpu --mode " + mode + " --encoder " + run.encoder +
                                                     " --set output.preset=ultrafast " + q(run.in) + " " + q(run.out));
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(probe_video(run.out, "pix_fmt") == run.pix_fmt);
    CHECK(count_packets(run.out, "v") == 15);
    CHECK(count_packets(run.out, "a") == count_packets(run.in, "a"));
    CHECK(count_packets(run.in, "a") > 0);
  }
}

TEST_CASE("depth cli: an encoder that cannot hold the depth fails before encoding, with one line and status 1") {
  const std::string dir = test::temp_dir("cli-depth-refused");
  const std::string in = dir + "/in8.mkv";
  ffmpeg("-f lavfi -i testsrc2=s=64x48:r=25:d=0.2 -pix_fmt yuv420p -c:v ffv1 " + q(in));
  const std::string out = dir + "/out.mkv";
  const test::CommandResult r =
      test::run_hazefree("-b cpu --mode he --output-depth 12 --encoder libx264 " + q(in) + " " + q(out));
  CHECK(r.status == 1);
  const std::vector<std::string> own = test::own_lines(r.err);
  REQUIRE(own.size() == 1);
  CHECK(own[0].find(out) != std::string::npos);
  CHECK(own[0].find("libx264 holds at most 10 bits; for 12-bit output use libx265 (up to 12 bits), ffv1 or png (up to 16)") !=
        std::string::npos);
  CHECK(test::folder_entries(dir) == std::vector<std::string>{"in8.mkv"});

  // The default encoder of an mp4 is libx264 too: 16 bits asked of it names the way out.
  const test::CommandResult mp4 = test::run_hazefree("-b cpu --mode he --output-depth 16 " + q(in) + " " + q(dir + "/out.mp4"));
  CHECK(mp4.status == 1);
  REQUIRE(test::own_lines(mp4.err).size() == 1);
  CHECK(mp4.err.find("for 16-bit output use ffv1 or png (up to 16 bits)") != std::string::npos);
}

TEST_CASE("depth cli: output.depth takes auto, 8, 10, 12 and 16 from --set, TOML and --output-depth") {
  const std::string dir = test::temp_dir("cli-depth-options");
  const std::string in = test::sample_path("images/coffee-grey.png");
  for (const std::string bad : {"--set output.depth=9", "--set output.depth=ten", "--output-depth 9",
                                "--output-depth 24"}) {
    CAPTURE(bad);
    const test::CommandResult r = test::run_hazefree("-b cpu " + bad + " " + q(in) + " " + q(dir + "/x.png"));
    CHECK(r.status == 2);
    REQUIRE(test::lines_of(r.err).size() == 1);
    CHECK(r.err.find("depth") != std::string::npos);
    CHECK(r.err.find("8, 10, 12, 16") != std::string::npos);
  }
  CHECK(test::folder_entries(dir).empty());

  test::CommandResult r = test::run_hazefree("--print-config");
  CHECK(r.out.find("depth = \"auto\"") != std::string::npos);
  r = test::run_hazefree("--print-config --output-depth 12");
  CHECK(r.out.find("depth = 12") != std::string::npos);
  const std::string preset = dir + "/deep.toml";
  std::ofstream(preset) << "[output]\ndepth = 16\n";
  r = test::run_hazefree("--print-config -c " + q(preset));
  CHECK(r.out.find("depth = 16") != std::string::npos);
  r = test::run_hazefree("--print-config -c " + q(preset) + " --set output.depth=auto");
  CHECK(r.out.find("depth = \"auto\"") != std::string::npos);

  // The 8-bit grey still at 16 bits: each code scaled by 65535 / 255 = 257 before HE, which
  // then spreads them over 0..65535.
  const std::string out = dir + "/grey16.png";
  r = test::run_hazefree("-q -b cpu --mode he -c " + q(preset) + " " + q(in) + " " + q(out));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(probe_video(out, "pix_fmt") == "gray16be");
  const std::vector<int> source = raw_samples(in, "gray"), result = raw_samples(out, "gray16le");
  std::vector<int> widened;
  for (const int v : source) widened.push_back(v * 257);
  const std::vector<int> lut = he_lut(widened, 16);
  std::vector<int> expected;
  for (const int v : widened) expected.push_back(lut[static_cast<std::size_t>(v)]);
  CHECK(result == expected);
}

TEST_CASE("depth cli: --side-by-side at 10 bits puts the untouched input next to the result") {
  const std::string dir = test::temp_dir("cli-depth-side");
  const std::string in = dir + "/in10.mkv", out = dir + "/side.mkv";
  constexpr int kWidth = 64, kHeight = 48;
  make_ten_bit_clip(in, kWidth, kHeight, 0.12);
  const test::CommandResult r =
      test::run_hazefree("-q -b cpu --mode he --side-by-side --encoder ffv1 " + q(in) + " " + q(out));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(probe_video(out, "pix_fmt") == "yuv420p10le");
  CHECK(probe_video(out, "width") == std::to_string(2 * kWidth));
  const std::vector<int> source = raw_samples(in, "yuv420p10le"), result = raw_samples(out, "yuv420p10le");
  const std::size_t in_picture = kWidth * kHeight * 3 / 2, out_picture = 2 * in_picture;
  REQUIRE(source.size() == 3 * in_picture);
  REQUIRE(result.size() == 3 * out_picture);
  for (std::size_t f = 0; f < 3; ++f) {
    // Left half of the luma rows: the input's.
    for (int y = 0; y < kHeight; ++y)
      for (int x = 0; x < kWidth; ++x)
        REQUIRE(result[f * out_picture + static_cast<std::size_t>(y * 2 * kWidth + x)] ==
                source[f * in_picture + static_cast<std::size_t>(y * kWidth + x)]);
  }
}

TEST_CASE("depth cli: bench --depth draws its frames at that depth and records it in the JSON") {
  const std::string dir = test::temp_dir("cli-depth-bench");
  for (const std::string mode : {"dcp", "he", "ahe --window 31"}) {
    for (const int depth : {8, 10, 12, 16}) {
      CAPTURE(mode);
      CAPTURE(depth);
      const std::string json_path = dir + "/bench.json";
      const test::CommandResult r =
          test::run_hazefree("bench --size 96x64 --frames 2 --warmup 0 --backend cpu --mode " + mode + " --depth " +
                             std::to_string(depth) + " --json " + q(json_path));
      INFO(r.err);
      REQUIRE(r.status == 0);
      std::ifstream file(json_path);
      const nlohmann::json doc = nlohmann::json::parse(file);
      REQUIRE(doc.at("results").size() == 1);
      CHECK(doc["results"][0].at("depth") == depth);
      CHECK(doc["results"][0].at("ms_per_frame_median").get<double>() > 0);
    }
  }
  // A decoded input is benchmarked at its own depth, or converted to the one asked for.
  const std::string clip = dir + "/in10.mkv";
  make_ten_bit_clip(clip, 64, 48, 0.2);
  for (const auto& [option, depth] : std::vector<std::pair<std::string, int>>{{"", 10}, {"--depth 12", 12}, {"--depth 8", 8}}) {
    CAPTURE(option);
    const std::string json_path = dir + "/input.json";
    const test::CommandResult r = test::run_hazefree("bench --input " + q(clip) + " --frames 2 --warmup 0 --backend cpu --mode he " +
                                                     option + " --json " + q(json_path));
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::ifstream file(json_path);
    CHECK(nlohmann::json::parse(file)["results"][0].at("depth") == depth);
  }
  const test::CommandResult bad = test::run_hazefree("bench --size 96x64 --depth 9");
  CHECK(bad.status != 0);
  CHECK(bad.err.find("--depth") != std::string::npos);
}
