// Bad, odd and unusual inputs and outputs through the real command: every failure is one line on
// stderr naming the path and the cause with status 1 (2 for usage), and leaves no output and no
// temporary file; every valid input, however small or unusual, comes out with all its frames.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "run_command.hpp"
#include "support/test_support.hpp"
#include "test_robustness_support.hpp"

using namespace hazefree;
using test::q;

namespace {

namespace fs = std::filesystem;

// A failed run: the status, a single line naming `path`, and an output folder left empty.
void check_clean_failure(const test::CommandResult& r, const std::string& path, const std::string& out_dir,
                         int status = 1) {
  INFO("stderr: " << r.err);
  CHECK(r.status == status);
  // FFmpeg's own diagnostics ("[png @ 0x...] ...") may come first; the product's verdict is one
  // line, the last.
  const auto lines = test::own_lines(r.err);
  REQUIRE(lines.size() == 1);
  CHECK(test::lines_of(r.err).back() == lines[0]);
  CHECK(lines[0].find(path) != std::string::npos);
  CHECK(lines[0].size() > std::string("hazefree: ").size() + path.size() + 2);  // and a cause
  CHECK(test::folder_entries(out_dir).empty());
}

struct Dirs {
  std::string in, out;
};

Dirs make_dirs(const std::string& name) {
  Dirs d;
  d.in = test::temp_dir(name);
  d.out = d.in + "/out";
  fs::create_directories(d.out);
  return d;
}

}  // namespace

TEST_CASE("robustness: bad inputs fail with one line naming the input and leave nothing behind") {
  const Dirs d = make_dirs("robust-bad-inputs-" + std::to_string(getpid()));
  const std::string out = d.out + "/o.mkv";
  auto run = [&](const std::string& input) { return test::run_hazefree("-b cpu " + q(input) + " " + q(out)); };

  SUBCASE("missing path") {
    const std::string in = d.in + "/no-such-file.mp4";
    check_clean_failure(run(in), in, d.out);
  }
  SUBCASE("a directory") {
    const std::string in = d.in + "/a-folder.mp4";
    fs::create_directories(in);
    const auto r = run(in);
    check_clean_failure(r, in, d.out);
    CHECK(r.err.find("directory") != std::string::npos);
  }
  SUBCASE("a zero-byte file") {
    const std::string in = d.in + "/empty.mp4";
    std::ofstream{in};
    const auto r = run(in);
    check_clean_failure(r, in, d.out);
    CHECK(r.err.find("empty") != std::string::npos);
  }
  SUBCASE("random bytes") {
    const std::string in = d.in + "/noise.mp4";
    std::mt19937 random(1234);
    std::string bytes(64 * 1024, '\0');
    for (char& c : bytes) c = static_cast<char>(random() & 0xff);
    std::ofstream(in, std::ios::binary) << bytes;
    check_clean_failure(run(in), in, d.out);
  }
  SUBCASE("a text file named .png") {
    const std::string in = d.in + "/notes.png";
    std::ofstream(in) << "This is not a picture.\nJust two lines of text.\n";
    check_clean_failure(run(in), in, d.out);
  }
  SUBCASE("audio only") {
    const std::string in = d.in + "/tone.wav";
    test::write_wav(in, 8000);
    const auto r = run(in);
    check_clean_failure(r, in, d.out);
    CHECK(r.err.find("no video stream") != std::string::npos);
  }
}

TEST_CASE("robustness: a truncated clip gives its decodable frames with a warning, or one clear error") {
  const Dirs d = make_dirs("robust-truncated-" + std::to_string(getpid()));
  const std::string in = d.in + "/half.mp4";
  {
    std::ifstream sample(test::sample_path("hazy-street.mp4"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(sample)), std::istreambuf_iterator<char>());
    bytes.resize(bytes.size() / 2);
    std::ofstream(in, std::ios::binary) << bytes;
  }
  const std::string out = d.out + "/half.mkv";
  const auto r = test::run_hazefree("-b cpu --mode he --preset ultrafast " + q(in) + " " + q(out));
  INFO("stderr: " << r.err);
  REQUIRE((r.status == 0 || r.status == 1));
  if (r.status == 0) {
    // What it wrote is a complete file of the pictures it could decode, and it said so.
    const test::Probe p = test::probe_media(out);
    CHECK(p.video_frames > 0);
    CHECK(p.video_frames < 100);
    CHECK(r.err.find(std::to_string(p.video_frames) + " frames") != std::string::npos);
    CHECK(r.err.find("warning") != std::string::npos);
    // The file's header announces its 100 frames: the shortfall is said in one line.
    CHECK(r.err.find(in + ": the input ended after " + std::to_string(p.video_frames) +
                     " of the 100 frames its header announces (a truncated file?)") != std::string::npos);
    CHECK(test::folder_entries(d.out) == std::vector<std::string>{"half.mkv"});
  } else {
    check_clean_failure(r, in, d.out);
  }
}

TEST_CASE("robustness: two video streams: the best is processed, the message says so, the other is copied") {
  const Dirs d = make_dirs("robust-two-streams-" + std::to_string(getpid()));
  const std::string in = d.in + "/two.mkv";
  std::vector<test::MuxPicture> pictures;
  for (int i = 0; i < 5; ++i) {
    pictures.push_back({0, 32, 16, i * 40});
    pictures.push_back({1, 64, 48, i * 40});
  }
  // The second, larger stream is the default track: the one a player shows.
  test::mux_pictures(in, 2, AV_CODEC_ID_FFV1, pictures, 0.0, 1);
  const std::string out = d.out + "/two-out.mkv";
  const auto r = test::run_hazefree("-b cpu --mode he --encoder ffv1 " + q(in) + " " + q(out));
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("2 video streams") != std::string::npos);
  CHECK(r.err.find(in) != std::string::npos);
  CHECK(r.err.find("processing stream #1") != std::string::npos);
  const test::Probe p = test::probe_media(out);
  CHECK(p.width == 64);
  CHECK(p.height == 48);
  CHECK(p.video_frames == 5);
  // The other video stream is copied packet for packet.
  CHECK(p.packets_by_type.at(AVMEDIA_TYPE_VIDEO) == 5);
}

TEST_CASE("robustness: bad outputs fail with one line naming the output") {
  const Dirs d = make_dirs("robust-bad-outputs-" + std::to_string(getpid()));
  const std::string in = d.in + "/in.y4m";
  test::write_y4m_file(in, 32, 16, "420jpeg", 3);

  SUBCASE("a missing folder") {
    const std::string out = d.out + "/missing/o.y4m";
    check_clean_failure(test::run_hazefree("-b cpu " + q(in) + " " + q(out)), out, d.out);
  }
  SUBCASE("an unwritable place") {
    // Root ignores permission bits; /sys refuses new files to everyone.
    const std::string out = "/sys/hazefree-test-output.y4m";
    const auto r = test::run_hazefree("-b cpu " + q(in) + " " + q(out));
    check_clean_failure(r, out, d.out);
    CHECK_FALSE(fs::exists(out));
  }
  SUBCASE("an existing output without -y is untouched") {
    const std::string out = d.out + "/exists.y4m";
    std::ofstream(out) << "keep";
    const auto r = test::run_hazefree("-b cpu " + q(in) + " " + q(out));
    INFO("stderr: " << r.err);
    CHECK(r.status == 1);
    const auto lines = test::own_lines(r.err);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find(out) != std::string::npos);
    CHECK(lines[0].find("-y") != std::string::npos);
    CHECK(test::folder_entries(d.out) == std::vector<std::string>{"exists.y4m"});
    CHECK(fs::file_size(out) == 4);
  }
  SUBCASE("the output is the input, by the same or another path, even with -y") {
    const std::string link = d.out + "/link.y4m";
    fs::create_symlink(in, link);
    const std::string dotted = d.in + "/./out/../in.y4m";
    const auto size = fs::file_size(in);
    for (const std::string& out : {in, link, dotted}) {
      CAPTURE(out);
      const auto r = test::run_hazefree("-y -b cpu " + q(in) + " " + q(out));
      INFO("stderr: " << r.err);
      CHECK(r.status == 1);
      CHECK(test::own_lines(r.err).size() == 1);
      CHECK(r.err.find(out) != std::string::npos);
      CHECK(r.err.find("input") != std::string::npos);
      CHECK(fs::file_size(in) == size);
    }
    CHECK(test::folder_entries(d.out) == std::vector<std::string>{"link.y4m"});
    CHECK(test::folder_entries(d.in) == std::vector<std::string>{"in.y4m", "out"});
  }
  SUBCASE("a bad option is status 2 and names it") {
    const auto r = test::run_hazefree("--mode fog " + q(in) + " " + q(d.out + "/o.y4m"));
    CHECK(r.status == 2);
    CHECK(test::lines_of(r.err).size() == 1);
    CHECK(r.err.find("fog") != std::string::npos);
    CHECK(test::folder_entries(d.out).empty());
  }
}

TEST_CASE("robustness: unusual y4m layouts and sizes keep every frame and the size in every mode") {
  const Dirs d = make_dirs("robust-layouts-" + std::to_string(getpid()));
  constexpr int kFrames = 3;
  const std::vector<std::pair<int, int>> sizes = {{321, 241}, {2, 2}, {1, 1}, {17, 9}};
  for (const std::string chroma : {"420jpeg", "422", "444", "mono", "420p10"}) {
    for (const auto& [width, height] : sizes) {
      const std::string in = d.in + "/c" + chroma + "-" + std::to_string(width) + "x" + std::to_string(height) + ".y4m";
      test::write_y4m_file(in, width, height, chroma, kFrames);
      for (const std::string mode : {"dcp", "he", "ahe"}) {
        for (const std::string extension : {".y4m", ".mkv"}) {
          CAPTURE(in);
          CAPTURE(mode);
          CAPTURE(extension);
          const std::string out = d.out + "/" + mode + extension;
          // libx264 takes neither 1x1 nor odd 4:2:0 sizes: ffv1 takes everything.
          const std::string encoder = extension == ".mkv" ? "--encoder ffv1 " : "";
          const auto r = test::run_hazefree("-y -b cpu --window 7 --mode " + mode + " " + encoder + q(in) + " " + q(out));
          INFO("stderr: " << r.err);
          if (chroma == "420p10" && extension == ".y4m" && (width % 2 || height % 2)) {
            // FFmpeg's y4m muxer writes two-byte 4:2:0 pictures of an odd side short, so such an
            // output is refused before anything is written: one line, status 1.
            CHECK(r.status == 1);
            CHECK(test::lines_of(r.err).size() == 1);
            CHECK(r.err.find("y4m") != std::string::npos);
            continue;
          }
          REQUIRE(r.status == 0);
          // Kept at its depth (SPEC 7): nothing is converted, so nothing is warned about.
          if (chroma == "420p10") CHECK(r.err.find("warning") == std::string::npos);
          const test::Probe p = test::probe_media(out);
          CHECK(p.video_frames == kFrames);
          CHECK(p.width == width);
          CHECK(p.height == height);
          // Processed at 10 bits: the output holds 10-bit samples.
          if (chroma == "420p10") CHECK(p.info.source_pixel_format.find("10") != std::string::npos);
          if (chroma == "mono") CHECK(p.info.format == PixelFormat::gray8);
        }
      }
    }
  }
  CHECK(test::folder_entries(d.out) == std::vector<std::string>{"ahe.mkv", "ahe.y4m", "dcp.mkv", "dcp.y4m", "he.mkv", "he.y4m"});
}

TEST_CASE("robustness: variable frame rate keeps every timestamp") {
  const Dirs d = make_dirs("robust-vfr-" + std::to_string(getpid()));
  const std::string in = d.in + "/vfr.mkv";
  std::vector<test::MuxPicture> pictures;
  for (const std::int64_t pts : {0, 40, 50, 130, 200, 210, 400, 433}) pictures.push_back({0, 48, 32, pts});
  test::mux_pictures(in, 1, AV_CODEC_ID_FFV1, pictures);
  const test::Probe source = test::probe_media(in);
  REQUIRE(source.video_frames == 8);
  for (const std::string out_name : {"vfr-out.mkv", "vfr-out.mp4"}) {
    CAPTURE(out_name);
    const std::string out = d.out + "/" + out_name;
    const auto r = test::run_hazefree("-b cpu --mode dcp --preset ultrafast " + q(in) + " " + q(out));
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    const test::Probe p = test::probe_media(out);
    CHECK(p.pts_us == source.pts_us);
  }
}

TEST_CASE("robustness: rotation metadata is kept") {
  const Dirs d = make_dirs("robust-rotation-" + std::to_string(getpid()));
  const std::string in = d.in + "/rotated.mov";
  std::vector<test::MuxPicture> pictures;
  for (int i = 0; i < 4; ++i) pictures.push_back({0, 48, 32, i * 40});
  test::mux_pictures(in, 1, AV_CODEC_ID_MJPEG, pictures, 90.0);
  const test::Probe source = test::probe_media(in);
  REQUIRE(source.info.rotation_degrees != 0.0);
  const std::string out = d.out + "/rotated.mp4";
  const auto r = test::run_hazefree("-b cpu --mode he --preset ultrafast " + q(in) + " " + q(out));
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const test::Probe p = test::probe_media(out);
  CHECK(p.info.rotation_degrees == doctest::Approx(source.info.rotation_degrees));
  CHECK(p.width == 48);  // stored unrotated; players rotate
  CHECK(source.video_frames == 4);
  CHECK(p.video_frames == 4);
}

TEST_CASE("robustness: a mid-stream size change is scaled back to the first size with a warning") {
  const Dirs d = make_dirs("robust-size-change-" + std::to_string(getpid()));
  const std::string in = d.in + "/resize.mkv";
  std::vector<test::MuxPicture> pictures;
  for (int i = 0; i < 4; ++i) pictures.push_back({0, 64, 48, i * 40});
  for (int i = 4; i < 9; ++i) pictures.push_back({0, 96, 32, i * 40});
  test::mux_pictures(in, 1, AV_CODEC_ID_MJPEG, pictures);
  const std::string out = d.out + "/resize-out.mkv";
  const auto r = test::run_hazefree("-b cpu --mode he --encoder ffv1 " + q(in) + " " + q(out));
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("size changed from 64x48 to 96x32") != std::string::npos);
  const test::Probe p = test::probe_media(out);
  CHECK(p.video_frames == 9);
  CHECK(p.width == 64);
  CHECK(p.height == 48);
}
