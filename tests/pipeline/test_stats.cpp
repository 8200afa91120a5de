// Auto defog (SPEC 13) through the command line as a user meets it: --stats FILE (one JSON line a
// frame, parsed with nlohmann) on a clip, a still, a live source and a non-DCP mode, refused
// into a missing folder; --auto-strength on a clear photo (PSNR against the input computed here);
// the haze index printed in the side-by-side picture; bench --json's per-frame index.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/media_reader.hpp"
#include "run_command.hpp"
#include "support/test_support.hpp"
#include "test_robustness_support.hpp"

using namespace hazefree;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;
using test::q;

int run_program(const std::string& command) {
  const int raw = std::system((command + " </dev/null").c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

// Every line of a --stats file parsed, each checked to hold exactly the five fields with their
// types: numbers for DCP (`dcp`), nulls otherwise.
std::vector<json> read_stats(const std::string& path, bool dcp) {
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.good(), path << " was not written");
  std::vector<json> lines;
  for (std::string line; std::getline(file, line);) {
    CAPTURE(line);
    const json j = json::parse(line);  // throws (fails the test) on a line that is not JSON
    REQUIRE(j.is_object());
    CHECK(j.size() == 5);
    REQUIRE(j.contains("frame"));
    CHECK(j.at("frame").is_number_integer());
    CHECK(j.at("pts_time").is_number());
    for (const char* key : {"haze_index", "omega", "atmospheric_light"}) CHECK(j.contains(key));
    if (dcp) {
      const double h = j.at("haze_index").get<double>(), omega = j.at("omega").get<double>();
      CHECK(h >= 0.0);
      CHECK(h <= 1.0);
      CHECK(omega >= 0.0);
      CHECK(omega <= 1.0);
      REQUIRE(j.at("atmospheric_light").is_array());
      REQUIRE(j.at("atmospheric_light").size() == 3);
      for (const json& a : j.at("atmospheric_light")) CHECK((a.get<double>() > 0.0 && a.get<double>() <= 1.0));
    } else {
      CHECK(j.at("haze_index").is_null());
      CHECK(j.at("omega").is_null());
      CHECK(j.at("atmospheric_light").is_null());
    }
    lines.push_back(j);
  }
  return lines;
}

// The first picture of a file as packed 8-bit RGB rows (PNGs of RGB decode to rgb24).
struct Rgb {
  int width = 0, height = 0;
  std::vector<std::uint8_t> samples;  // width * 3 per row
  const std::uint8_t* at(int x, int y) const { return &samples[(static_cast<std::size_t>(y) * width + x) * 3]; }
};

Rgb read_rgb(const std::string& path) {
  io::InputOptions in;
  in.url = path;
  io::MediaReader reader(in);
  while (reader.read() != io::MediaReader::Item::video_frame) {
  }
  const ImageView& v = reader.frame().view;
  REQUIRE(v.format == PixelFormat::rgb24);
  REQUIRE(v.depth == 8);
  Rgb image;
  image.width = v.width;
  image.height = v.height;
  for (int y = 0; y < v.height; ++y) {
    const std::uint8_t* row = v.planes[0].data + static_cast<std::size_t>(y) * v.planes[0].stride;
    image.samples.insert(image.samples.end(), row, row + static_cast<std::size_t>(v.width) * 3);
  }
  return image;
}

double psnr(const Rgb& a, const Rgb& b) {
  REQUIRE(a.samples.size() == b.samples.size());
  double sum = 0;
  for (std::size_t i = 0; i < a.samples.size(); ++i) {
    const double d = static_cast<double>(a.samples[i]) - b.samples[i];
    sum += d * d;
  }
  if (sum == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(255.0 * 255.0 / (sum / static_cast<double>(a.samples.size())));
}

// A hazy 160x120 clip of 10 frames: testsrc2 with its darks lifted to half (a veil), H.264 with
// B-frames in MP4 (time base 1/12800, not the frame period).
const std::string& hazy_clip() {
  static const std::string path = [] {
    const std::string p = test::temp_dir("stats-clip-" + std::to_string(getpid())) + "/hazy.mp4";
    REQUIRE(run_program("ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=s=160x120:r=25:d=0.4 -vf "
                        "colorlevels=romin=0.45:gomin=0.45:bomin=0.45 -c:v libx264 -preset veryfast -bf 2 "
                        "-pix_fmt yuv420p " + q(p)) == 0);
    return p;
  }();
  return path;
}

}  // namespace

TEST_CASE("stats: a clip gives one JSON line per frame, in order, with the frame's time and DCP's figures") {
  const std::string dir = test::temp_dir("stats-clip");
  const std::string out = dir + "/out.mkv", stats = dir + "/stats.jsonl";
  const test::CommandResult r =
      test::run_hazefree("-q -b cpu --encoder ffv1 --stats " + q(stats) + " " + q(hazy_clip()) + " " + q(out));
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::vector<json> lines = read_stats(stats, true);
  const test::Probe p = test::probe_media(out);
  REQUIRE(p.video_frames == 10);
  REQUIRE(lines.size() == p.pts.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CAPTURE(i);
    CHECK(lines[i].at("frame") == static_cast<int>(i));
    CHECK(lines[i].at("pts_time").get<double>() ==
          doctest::Approx(static_cast<double>(p.pts[i]) * p.info.time_base.value()).epsilon(1e-6));
    CHECK(lines[i].at("omega").get<double>() == doctest::Approx(0.95));  // the configured one
    CHECK(lines[i].at("haze_index").get<double>() > 0.1);                // the veil is seen
  }
}

TEST_CASE("stats: pts_time is the output frame's own time (from zero after -ss) on an MP4 and an MPEG-TS starting at 1.46 s") {
  const std::string dir = test::temp_dir("stats-trim");
  const std::string mp4 = test::sample_path("hazy-street.mp4"), ts = dir + "/street.ts";
  REQUIRE(run_program("ffmpeg -v error -nostdin -y -i " + q(mp4) + " -c copy -f mpegts " + q(ts)) == 0);
  struct Case {
    std::string args, input;
    std::size_t frames;
    double first;  // the first line's pts_time: the output's first picture
  };
  for (const Case& c : std::vector<Case>{{"-ss 1.5 -t 0.5", mp4, 12, 0.0},
                                         {"-ss 0.5 -t 1", ts, 25, 0.0},
                                         {"-t 1", ts, 25, 0.021333},  // the span's own clock, from the input's start
                                         {"", ts, 100, 1.48}}) {        // the whole input keeps its clock
    CAPTURE(c.args);
    CAPTURE(c.input);
    const std::string out = dir + "/out.mp4", stats = dir + "/stats.jsonl";
    const test::CommandResult r = test::run_hazefree("-q -y -b cpu --stats " + q(stats) + " " + c.args + " " +
                                                     q(c.input) + " " + q(out));
    INFO(r.err);
    REQUIRE(r.status == 0);
    const std::vector<json> lines = read_stats(stats, true);
    const test::Probe p = test::probe_media(out);
    REQUIRE(p.pts.size() == c.frames);
    REQUIRE(lines.size() == c.frames);
    CHECK(lines.front().at("pts_time").get<double>() == doctest::Approx(c.first).epsilon(1e-6));
    // As ffprobe reads the output, to the container's precision: MP4 holds where its video
    // starts in milliseconds (0.021 s for a first picture at 0.021333 s).
    for (std::size_t i = 0; i < lines.size(); ++i) {
      CAPTURE(i);
      CHECK(std::fabs(lines[i].at("pts_time").get<double>() - static_cast<double>(p.pts[i]) * p.info.time_base.value()) <
            0.0005);
    }
  }
}

TEST_CASE("stats: a PNG gives one line, and --mode he gives the fields as null") {
  const std::string dir = test::temp_dir("stats-png");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  test::CommandResult r = test::run_hazefree("-q -b cpu --stats " + q(dir + "/dcp.jsonl") + " " + q(in) + " " +
                                             q(dir + "/dcp.png"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::vector<json> still = read_stats(dir + "/dcp.jsonl", true);
  REQUIRE(still.size() == 1);
  CHECK(still[0].at("frame") == 0);
  CHECK(still[0].at("pts_time").get<double>() == 0.0);
  CHECK(still[0].at("haze_index").get<double>() > 0.0);

  r = test::run_hazefree("-q -b cpu --mode he --preset ultrafast --stats " + q(dir + "/he.jsonl") + " " +
                         q(hazy_clip()) + " " + q(dir + "/he.mp4"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::vector<json> he = read_stats(dir + "/he.jsonl", false);
  REQUIRE(he.size() == 10);
  for (std::size_t i = 0; i < he.size(); ++i) CHECK(he[i].at("frame") == static_cast<int>(i));
}

TEST_CASE("stats: into a missing folder or onto a folder: one line naming it, status 1 as the output's, nothing written") {
  const std::string dir = test::temp_dir("stats-missing");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  const std::string missing = dir + "/no-such-folder";
  for (const std::string& stats : {missing + "/stats.jsonl", dir}) {
    CAPTURE(stats);
    const test::CommandResult r = test::run_hazefree("-b cpu --stats " + q(stats) + " " + q(in) + " " + q(dir + "/out.png"));
    INFO(r.err);
    CHECK(r.status == 1);
    const std::vector<std::string> own = test::own_lines(r.err);
    REQUIRE(own.size() == 1);
    CHECK(own[0].find("--stats") != std::string::npos);
    CHECK(own[0].find(stats == dir ? dir : missing) != std::string::npos);
    CHECK(test::folder_entries(dir).empty());  // no output, no partial file, no folder made
  }
}

TEST_CASE("stats: the input's or the output's own file is refused before anything is opened, even with -y") {
  const std::string dir = test::temp_dir("stats-same-file");
  const std::string in = dir + "/in.mp4", out = dir + "/out.mp4";
  fs::copy_file(hazy_clip(), in);
  const auto input_size = fs::file_size(in);
  struct Case {
    std::string stats, says;
  };
  for (const Case& c : {Case{in, "is the input file"}, Case{"file:" + in, "is the input file"},
                        Case{dir + "/./in.mp4", "is the input file"}, Case{out, "is the output file"}}) {
    CAPTURE(c.stats);
    const test::CommandResult r =
        test::run_hazefree("-y -b cpu --preset ultrafast --stats " + q(c.stats) + " " + q(in) + " " + q(out));
    INFO(r.err);
    CHECK(r.status == 1);
    const std::vector<std::string> own = test::own_lines(r.err);
    REQUIRE(own.size() == 1);
    CHECK(own[0].find("--stats " + c.stats + ": " + c.says) != std::string::npos);
    CHECK(fs::file_size(in) == input_size);  // the input untouched
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("stats: the output's or the input's file spelled otherwise (relative or ./ or sub/.. or absolute or through a linked folder) is refused as well") {
  const std::string dir = test::temp_dir("stats-same-file-spelled");
  fs::copy_file(hazy_clip(), dir + "/in.mp4");
  fs::create_directory(dir + "/sub");
  fs::create_directory_symlink(dir, dir + "/link");
  // Relative names are the command's: it runs in `dir` (restored after, whatever happens).
  struct InFolder {
    fs::path before = fs::current_path();
    explicit InFolder(const std::string& folder) { fs::current_path(folder); }
    ~InFolder() { fs::current_path(before); }
  } in_folder(dir);
  struct Case {
    std::string stats, input, output, says;
  };
  const std::string out = "is the output file", in = "is the input file";
  for (const Case& c : {Case{dir + "/o3d.mp4", "in.mp4", "o3d.mp4", out}, Case{"./o3d.mp4", "in.mp4", "o3d.mp4", out},
                        Case{"o3d.mp4", "in.mp4", "./o3d.mp4", out}, Case{"sub/../o3d.mp4", "in.mp4", "o3d.mp4", out},
                        Case{"o3d.mp4", "in.mp4", dir + "/sub/../o3d.mp4", out},
                        Case{"link/o3d.mp4", "in.mp4", dir + "/o3d.mp4", out}, Case{"file:o3d.mp4", "in.mp4", "o3d.mp4", out},
                        Case{"./in.mp4", dir + "/in.mp4", "o3d.mp4", in}, Case{"sub/../in.mp4", "link/in.mp4", "o3d.mp4", in}}) {
    CAPTURE(c.stats);
    CAPTURE(c.output);
    const test::CommandResult r = test::run_hazefree("-b cpu --preset ultrafast --stats " + q(c.stats) + " " + q(c.input) +
                                                     " " + q(c.output));
    INFO(r.err);
    CHECK(r.status == 1);
    const std::vector<std::string> own = test::own_lines(r.err);
    REQUIRE(own.size() == 1);
    CHECK(own[0].find("--stats " + c.stats + ": " + c.says + "; choose another file for the statistics") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/o3d.mp4"));  // refused before anything is opened
  }
  // Existing (-y): one file, however it is named.
  fs::copy_file(hazy_clip(), dir + "/o3d.mp4");
  const test::CommandResult r = test::run_hazefree("-y -b cpu --preset ultrafast --stats sub/../o3d.mp4 in.mp4 " + q(dir + "/o3d.mp4"));
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("--stats sub/../o3d.mp4: is the output file") != std::string::npos);
  CHECK(fs::file_size(dir + "/o3d.mp4") == fs::file_size(dir + "/in.mp4"));  // untouched
  // Names that are no file of either are not taken for one.
  const test::CommandResult other =
      test::run_hazefree("-b cpu --preset ultrafast --stats sub/o3d.jsonl in.mp4 sub/o3d.mp4");
  INFO(other.err);
  CHECK(other.status == 0);
  CHECK(read_stats(dir + "/sub/o3d.jsonl", true).size() == 10);
}

TEST_CASE("stats: a file where a folder is expected (clear.mp4/x.jsonl) is said not to be a folder with status 1") {
  const std::string dir = test::temp_dir("stats-not-a-folder");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  { std::ofstream(dir + "/clear.mp4") << "a file"; }
  for (const std::string& stats : {dir + "/clear.mp4/x.jsonl", dir + "/clear.mp4/deeper/x.jsonl"}) {
    CAPTURE(stats);
    const test::CommandResult r = test::run_hazefree("-b cpu --stats " + q(stats) + " " + q(in) + " " + q(dir + "/out.png"));
    INFO(r.err);
    CHECK(r.status == 1);
    const std::vector<std::string> own = test::own_lines(r.err);
    REQUIRE(own.size() == 1);
    CHECK(own[0].find("--stats " + stats + ": " + dir + "/clear.mp4 is not a folder") != std::string::npos);
    CHECK(own[0].find("does not exist") == std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/out.png"));
  }
}

TEST_CASE("stats: a file that takes no line (/dev/full) fails the run with the cause, naming --stats") {
  if (!fs::exists("/dev/full")) {
    MESSAGE("skipped: no /dev/full on this system");
    return;
  }
  const std::string dir = test::temp_dir("stats-full");
  const test::CommandResult r = test::run_hazefree("-y -b cpu --preset ultrafast --stats /dev/full " + q(hazy_clip()) +
                                                   " " + q(dir + "/out.mp4"));
  INFO(r.err);
  CHECK(r.status == 1);
  const std::vector<std::string> own = test::own_lines(r.err);
  REQUIRE(own.size() == 1);
  CHECK(own[0].find("--stats /dev/full: the frame statistics could not be written: No space left on device") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out.mp4"));  // a failed run leaves no output
}

TEST_CASE("stats: an existing file is replaced only with -y, as the output is, and -n or nothing leaves both alone") {
  const std::string dir = test::temp_dir("stats-exists");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  const std::string stats = dir + "/stats.jsonl", out = dir + "/out.png";
  { std::ofstream(stats) << "earlier lines\n"; }
  for (const std::string& flag : {std::string(), std::string("-n "), std::string("-y ")}) {
    CAPTURE(flag);
    const test::CommandResult r = test::run_hazefree("-b cpu " + flag + "--stats " + q(stats) + " " + q(in) + " " + q(out));
    INFO(r.err);
    if (flag == "-y ") {
      CHECK(r.status == 0);
      CHECK(read_stats(stats, true).size() == 1);
      CHECK(fs::exists(out));
    } else {
      CHECK(r.status != 0);
      const std::vector<std::string> own = test::own_lines(r.err);
      REQUIRE(own.size() == 1);
      CHECK(own[0].find(stats + ": already exists (use -y to overwrite)") != std::string::npos);
      std::ifstream kept(stats);
      std::string line;
      CHECK((std::getline(kept, line) && line == "earlier lines"));
      CHECK_FALSE(fs::exists(out));  // the unfinished output is removed
    }
  }
}

TEST_CASE("stats: '-' and pipe:1 write the lines to stdout, pipe:2 to stderr, and stdout twice or another pipe is refused") {
  const std::string dir = test::temp_dir("stats-stdout");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  for (const char* stats : {"-", "pipe:1"}) {
    CAPTURE(stats);
    const test::CommandResult r =
        test::run_hazefree(std::string("-q -y -b cpu --stats ") + stats + " " + q(in) + " " + q(dir + "/out.png"));
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json line = json::parse(r.out);  // one line: the still's
    CHECK(line.at("frame") == 0);
    CHECK(line.at("haze_index").get<double>() > 0.0);
    CHECK_FALSE(fs::exists(stats));  // no file of that name
  }
  test::CommandResult r = test::run_hazefree("-q -y -b cpu --stats pipe:2 " + q(in) + " " + q(dir + "/out.png"));
  REQUIRE(r.status == 0);
  CHECK(r.out.empty());
  CHECK(r.err.find("{\"frame\": 0, ") != std::string::npos);
  struct Refused {
    std::string arguments, says;
  };
  for (const Refused& refused : {Refused{"--stats - -f nut -", "the output is written to stdout"},
                                 Refused{"--stats pipe:7 " + q(dir + "/out.png"), "give pipe:1 (stdout), pipe:2"}}) {
    CAPTURE(refused.arguments);
    r = test::run_hazefree("-y -b cpu " + q(in) + " " + refused.arguments);
    CHECK(r.status == 2);
    const std::vector<std::string> own = test::own_lines(r.err);
    REQUIRE(own.size() == 1);
    CHECK(own[0].find(refused.says) != std::string::npos);
    CHECK(r.out.empty());
  }
  r = test::run_hazefree("job plan -q " + q(dir + "/job") + " " + q(hazy_clip()) + " " + q(dir + "/out.mkv") +
                         " -b cpu --chunks 2 --stats -");
  CHECK(r.status == 2);  // a usage fault, as in the single run
  r = test::run_hazefree("-q -y -b cpu --chunks 2 --stats - " + q(hazy_clip()) + " " + q(dir + "/out.mkv"));
  CHECK(r.status == 2);
  CHECK(r.err.find("--stats -: a job joins its chunks' statistics into a file") != std::string::npos);
}

TEST_CASE("stats: --auto-strength on a clear photo: omega 0 and an output within 30 dB of the input") {
  const std::string dir = test::temp_dir("stats-auto");
  const std::string in = test::sample_path("images/coffee.png");
  test::CommandResult r = test::run_hazefree("-q -b cpu --auto-strength --stats " + q(dir + "/auto.jsonl") + " " +
                                             q(in) + " " + q(dir + "/auto.png"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::vector<json> lines = read_stats(dir + "/auto.jsonl", true);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].at("omega").get<double>() == 0.0);
  CHECK(lines[0].at("haze_index").get<double>() < 0.1);  // a clear scene (the hazy one's is about 0.2)
  const Rgb source = read_rgb(in);
  const double auto_psnr = psnr(source, read_rgb(dir + "/auto.png"));
  CHECK(auto_psnr >= 30.0);
  // The fixed strength dehazes the same clear photo visibly: the comparison can fail.
  r = test::run_hazefree("-q -b cpu " + q(in) + " " + q(dir + "/fixed.png"));
  REQUIRE(r.status == 0);
  CHECK(psnr(source, read_rgb(dir + "/fixed.png")) < 30.0);
  MESSAGE("PSNR against the input: auto " << auto_psnr << " dB");
}

TEST_CASE("stats: --auto-strength outside DCP is said in one warning, the run as without it") {
  const std::string dir = test::temp_dir("stats-auto-he");
  const std::string in = test::sample_path("images/coffee.png");
  const test::CommandResult with = test::run_hazefree("-y -b cpu --mode he --auto-strength " + q(in) + " " + q(dir + "/a.png"));
  const test::CommandResult without = test::run_hazefree("-y -b cpu --mode he " + q(in) + " " + q(dir + "/b.png"));
  REQUIRE(with.status == 0);
  REQUIRE(without.status == 0);
  CHECK(with.err.find("hazefree: warning: dcp.auto_strength (--auto-strength) follows the haze index with DCP's "
                      "strength; --mode he has none") != std::string::npos);
  CHECK(without.err.find("auto_strength") == std::string::npos);
  CHECK(psnr(read_rgb(dir + "/a.png"), read_rgb(dir + "/b.png")) == std::numeric_limits<double>::infinity());
}

TEST_CASE("stats: --side-by-side with DCP prints the haze index in a dark box at the top left, he does not") {
  const std::string dir = test::temp_dir("stats-sbs");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  for (const std::string& run : {"--side-by-side " + q(in) + " " + q(dir + "/sbs.png"), q(in) + " " + q(dir + "/dcp.png"),
                                 "--mode he --color rgb --side-by-side " + q(in) + " " + q(dir + "/he.png")}) {
    const test::CommandResult r = test::run_hazefree("-q -b cpu " + run);
    INFO(r.err);
    REQUIRE(r.status == 0);
  }
  const Rgb source = read_rgb(in), sbs = read_rgb(dir + "/sbs.png"), dcp = read_rgb(dir + "/dcp.png"),
            he = read_rgb(dir + "/he.png");
  REQUIRE(sbs.width == 2 * source.width);
  // The box: "HAZE 0.dd" at scale 1 (300 rows): 9 glyphs of 6 columns and a margin of 2 around.
  const int box_w = 9 * 6 + 4, box_h = 7 + 4;
  int dark = 0, bright = 0, other = 0, differ = 0;
  for (int y = 0; y < box_h; ++y)
    for (int x = 0; x < box_w; ++x) {
      const std::uint8_t* p = sbs.at(x, y);
      if (p[0] <= 16 && p[1] <= 16 && p[2] <= 16) ++dark;
      else if (p[0] >= 235 && p[1] >= 235 && p[2] >= 235) ++bright;
      else ++other;
      if (std::memcmp(p, source.at(x, y), 3) != 0) ++differ;
    }
  CHECK(dark > box_w * box_h / 2);
  CHECK(bright > 40);   // the glyphs' strokes
  CHECK(other == 0);
  CHECK(differ > box_w * box_h / 2);  // the hazy photo's corner is light grey
  // Outside the box the composition is the plain one: the input on the left, the result on the right.
  int left_differs = 0, right_differs = 0;
  for (int y = 0; y < source.height; ++y)
    for (int x = 0; x < source.width; ++x) {
      if (x < box_w && y < box_h) continue;
      left_differs += std::memcmp(sbs.at(x, y), source.at(x, y), 3) != 0;
      right_differs += std::memcmp(sbs.at(source.width + x, y), dcp.at(x, y), 3) != 0;
    }
  CHECK(left_differs == 0);
  CHECK(right_differs == 0);
  // No index outside DCP: the he composition's corner is the input's.
  int he_differs = 0;
  for (int y = 0; y < box_h; ++y)
    for (int x = 0; x < box_w; ++x) he_differs += std::memcmp(he.at(x, y), source.at(x, y), 3) != 0;
  CHECK(he_differs == 0);
}

TEST_CASE("stats: bench --json gives each DCP frame's haze index and omega (the --stats figures), null for he") {
  const std::string dir = test::temp_dir("stats-bench");
  const std::string in = test::sample_path("images/coffee-hazy.png");
  test::CommandResult r = test::run_hazefree("-q -b cpu --stats " + q(dir + "/still.jsonl") + " " + q(in) + " " +
                                             q(dir + "/still.png"));
  REQUIRE(r.status == 0);
  const double index = read_stats(dir + "/still.jsonl", true).at(0).at("haze_index").get<double>();
  for (const char* mode : {"dcp", "he"}) {
    CAPTURE(mode);
    const std::string path = dir + "/" + mode + ".json";
    r = test::run_hazefree(std::string("bench -b cpu --mode ") + mode + " --input " + q(in) +
                           " --frames 2 --warmup 1 --json " + q(path));
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::ifstream file(path);
    const json doc = json::parse(file);
    REQUIRE(doc.at("results").size() == 1);
    const json& frames = doc.at("results").at(0).at("per_frame");
    REQUIRE(frames.size() == 2);
    for (const json& f : frames) {
      if (std::string(mode) == "dcp") {
        // The same picture every frame: the smoothed index stays at the still's own.
        CHECK(f.at("haze_index").get<double>() == doctest::Approx(index).epsilon(1e-5));
        CHECK(f.at("omega").get<double>() == doctest::Approx(0.95));
      } else {
        CHECK(f.at("haze_index").is_null());
        CHECK(f.at("omega").is_null());
      }
    }
  }
}

namespace {

// A program started by the live test, killed (SIGKILL) and reaped by its owner.
struct Child {
  pid_t pid = -1;
  Child(std::vector<std::string> words, const std::string& err_path) {
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(null >= 0);
    REQUIRE(err >= 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    close(null);
    close(err);
  }
  ~Child() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // The exit status, or -1 when it still runs after `seconds`.
  int wait_exit(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
};


std::size_t line_count(const std::string& path) {
  std::ifstream file(path);
  std::size_t n = 0;
  for (std::string line; std::getline(file, line);) ++n;
  return n;
}

}  // namespace

TEST_CASE("stats: a --live run from MPEG-TS over UDP writes a line per frame as it goes, whole at Ctrl-C") {
  const std::string dir = test::temp_dir("stats-live-" + std::to_string(getpid()));
  const std::string url = "udp://127.0.0.1:" + std::to_string(test::free_loopback_port(SOCK_DGRAM));
  const std::string stats = dir + "/live.jsonl", out = dir + "/live.ts";
  Child run({HAZEFREE_BINARY, "-b", "cpu", "--threads", "1", "--preset", "ultrafast", "--live", "--stats", stats,
             url, out},
            dir + "/hazefree.err");
  // Pictures small and slow enough for the processing to keep ahead on two busy cores.
  Child source({"ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i",
                "testsrc2=size=160x120:rate=10", "-t", "30", "-c:v", "mpeg2video", "-g", "5", "-f", "mpegts",
                url + "?pkt_size=1316"},
               dir + "/source.err");
  // The lines come while it runs (each frame's as it is done).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (line_count(stats) < 6 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(line_count(stats) >= 6);
  REQUIRE(kill(run.pid, SIGINT) == 0);
  const int status = run.wait_exit(20);
  std::ifstream err_file(dir + "/hazefree.err");
  INFO("stderr: " << std::string(std::istreambuf_iterator<char>(err_file), {}));
  CHECK(status == 130);
  const std::vector<json> lines = read_stats(stats, true);
  const test::Probe p = test::probe_media(out);
  CHECK(lines.size() == static_cast<std::size_t>(p.video_frames));
  for (std::size_t i = 1; i < lines.size(); ++i) {
    CHECK(lines[i].at("frame").get<long>() > lines[i - 1].at("frame").get<long>());
    CHECK(lines[i].at("pts_time").get<double>() > lines[i - 1].at("pts_time").get<double>());
  }
}
