// --stats of a job (SPEC 13): the chunks' lines joined into the user's file must be the single
// run's, byte for byte (frame numbers, pts_time, haze index, omega, light): the temporal state
// carries the index across the chunks' boundaries. The clip's haze thickens through it, so that
// with --auto-strength omega passes through values between 0 and the configured one.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/job_test_support.hpp"
#include "pipeline/run_command.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using hazefree::test::run_hazefree;

namespace hazefree::test {
namespace {

constexpr auto q = quoted;

// 160x120 at 25 fps, 75 frames: testsrc2 under a white veil fading in over 6 s (it reaches 0.5),
// H.264 with B-frames, open GOPs and a keyframe every 12 frames, AAC audio.
const std::string& thickening_haze_clip() {
  static const std::string path = [] {
    const std::string p = temp_dir("jobs-stats-clip-" + std::to_string(getpid())) + "/haze.mp4";
    const std::string command =
        "ffmpeg -v error -y -f lavfi -i 'testsrc2=s=160x120:r=25:d=3[v];color=c=white:s=160x120:r=25:d=3,"
        "format=rgba,fade=in:st=0:d=6:alpha=1[w];[v][w]overlay=shortest=1,format=yuv420p' "
        "-f lavfi -i 'sine=f=440:d=3' -c:v libx264 -preset veryfast -pix_fmt yuv420p "
        "-x264-params open-gop=1:bframes=3:keyint=12:min-keyint=1 -c:a aac -shortest '" + p + "'";
    REQUIRE_MESSAGE(run_program(command) == 0, "the ffmpeg program could not make the test clip");
    return p;
  }();
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path << " was not written");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<nlohmann::json> parse_lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// The single run's --stats of `clip` with `options`.
std::string single_stats(const std::string& clip, const std::string& options, const std::string& dir) {
  const CommandResult r = run_hazefree("-q -y " + options + " --encoder ffv1 --stats " + q(dir + "/single.jsonl") + " " +
                                       q(clip) + " " + q(dir + "/single.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return slurp(dir + "/single.jsonl");
}

}  // namespace

TEST_CASE("job stats: --chunks 3 --stats gives the single run's lines exactly, also with --auto-strength") {
  const std::string& clip = thickening_haze_clip();
  for (const std::string options : {"--backend cpu", "--backend cpu --auto-strength"}) {
    CAPTURE(options);
    const std::string dir = temp_dir("jobs-stats-" + std::to_string(getpid()) + "-" +
                                     std::to_string(std::hash<std::string>{}(options)));
    const std::string single = single_stats(clip, options, dir);
    const CommandResult r = run_hazefree("-q -y " + options + " --encoder ffv1 --chunks 3 --stats " +
                                         q(dir + "/chunked.jsonl") + " " + q(clip) + " " + q(dir + "/chunked.mkv"));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const std::string chunked = slurp(dir + "/chunked.jsonl");
    const std::vector<nlohmann::json> lines = parse_lines(chunked);
    REQUIRE(lines.size() == 75);
    for (std::size_t i = 0; i < lines.size(); ++i) CHECK(lines[i].at("frame") == static_cast<int>(i));
    CHECK(chunked == single);  // the same text: every figure at the same precision
    check_identical(dir + "/single.mkv", dir + "/chunked.mkv");
    if (options.find("--auto-strength") != std::string::npos) {
      // The response is exercised: clear (0), in between, and the configured omega all occur.
      int none = 0, between = 0, full = 0;
      for (const nlohmann::json& line : lines) {
        const double omega = line.at("omega").get<double>();
        if (omega == 0.0) ++none;
        else if (omega < 0.95 - 1e-6) ++between;
        else ++full;
      }
      CHECK(none > 0);
      CHECK(between > 0);
      CHECK(full > 0);
    }
  }
}

TEST_CASE("job stats: after -ss on an MP4 and its MPEG-TS copy --chunks 3 gives the single run's lines from zero") {
  const std::string& clip = thickening_haze_clip();
  const std::string dir = temp_dir("jobs-stats-trim-" + std::to_string(getpid()));
  // The MPEG-TS copy's clock starts at about 1.4 s: the span counts from there in both runs.
  const std::string ts = dir + "/haze.ts";
  REQUIRE(run_program("ffmpeg -v error -nostdin -y -i " + q(clip) + " -c copy -f mpegts " + q(ts)) == 0);
  for (const std::string& input : {clip, ts}) {
    CAPTURE(input);
    const std::string options = "--backend cpu -ss 0.7 -t 1.6";
    const std::string single = single_stats(input, options, dir);
    const CommandResult r = run_hazefree("-q -y " + options + " --encoder ffv1 --chunks 3 --stats " +
                                         q(dir + "/chunked.jsonl") + " " + q(input) + " " + q(dir + "/chunked.mkv"));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const std::string chunked = slurp(dir + "/chunked.jsonl");
    const std::vector<nlohmann::json> lines = parse_lines(chunked);
    REQUIRE(lines.size() == 40);
    CHECK(lines.front().at("pts_time").get<double>() == 0.0);  // the output's first picture
    CHECK(chunked == single);
    // The pictures and their times (the audio packets' are checked on MP4 inputs by the tests of
    // jobs over a span).
    const DecodedMedia a = decode_media(dir + "/single.mkv"), b = decode_media(dir + "/chunked.mkv");
    CHECK(b.frame_hashes == a.frame_hashes);
    CHECK(b.pts_us == a.pts_us);
  }
}

TEST_CASE("job stats: two inputs through the stages give FILE.0 and FILE.1, and a chunk's lines cut short stop the join") {
  const std::string& clip = thickening_haze_clip();
  const std::string dir = temp_dir("jobs-stats-stages-" + std::to_string(getpid()));
  const std::string short_clip = dir + "/short.mkv";
  REQUIRE(run_program("ffmpeg -v error -y -i " + q(clip) + " -frames:v 20 -c copy " + q(short_clip)) == 0);
  const std::string options = "--backend cpu --auto-strength";
  fs::create_directories(dir + "/long");
  fs::create_directories(dir + "/short");
  const std::string single_long = single_stats(clip, options, dir + "/long");
  const std::string single_short = single_stats(short_clip, options, dir + "/short");

  const std::string job = dir + "/job", stats = dir + "/stats.jsonl";
  CommandResult r = run_hazefree("job plan -q " + q(job) + " " + q(clip) + " " + q(dir + "/a.mkv") + " " + q(short_clip) +
                                 " " + q(dir + "/b.mkv") + " -y " + options + " --encoder ffv1 --chunks 2 --stats " + q(stats));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const int tasks = job_task_count(job);
  REQUIRE(tasks >= 3);
  for (const char* stage : {"analyze", "render"})
    for (int k = 0; k < tasks; ++k) {
      r = run_hazefree(std::string("job ") + stage + " -q " + q(job) + " --chunk " + std::to_string(k));
      REQUIRE_MESSAGE(r.status == 0, r.err);
    }
  // Task 0's lines lose their last one (a file damaged between render and join): refused.
  const std::string part = job + "/chunks/task-0.stats.jsonl";
  std::string text = slurp(part);
  REQUIRE(text.size() > 1);
  text.erase(text.rfind('\n', text.size() - 2) + 1);
  std::ofstream(part, std::ios::binary | std::ios::trunc) << text;
  r = run_hazefree("job join -q " + q(job));
  CHECK(r.status != 0);
  CHECK(own_error_lines(r.err) == 1);
  CHECK(r.err.find(part) != std::string::npos);
  CHECK(r.err.find("task 0") != std::string::npos);
  // Rendered again, the join gives each input's single-run lines.
  r = run_hazefree("job render -q " + q(job) + " --chunk 0");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  r = run_hazefree("job join -q " + q(job));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(slurp(stats + ".0") == single_long);
  CHECK(slurp(stats + ".1") == single_short);
  CHECK_FALSE(fs::exists(stats));
}

}  // namespace hazefree::test
