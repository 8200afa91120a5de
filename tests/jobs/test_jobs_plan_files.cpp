// A job's plan against what it records: the input as planned (its size and modification time),
// the cut as given (--chunk-starts), and the run's settings as they come back to every stage.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "jobs/job_test_support.hpp"
#include "pipeline/run_command.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;

namespace hazefree::test {
namespace {
constexpr auto q = quoted;
}  // namespace

TEST_CASE("job stages: an input touched after the plan (same size, new modification time) is refused with one line") {
  const std::string dir = temp_dir("jobs-touched");
  const std::string input = dir + "/in.mp4";
  fs::remove_all(dir + "/job");
  fs::copy_file(test_clip().path, input, fs::copy_options::overwrite_existing);
  CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(input) + " " + q(dir + "/out.mkv") +
                                 " -y --backend cpu --mode ahe --encoder ffv1 --chunk-starts 40,60");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  REQUIRE(job_task_count(dir + "/job") == 3);
  for (int task = 0; task < 3; ++task) {
    r = run_hazefree("job render -q " + q(dir + "/job") + " --chunk " + std::to_string(task));
    REQUIRE_MESSAGE(r.status == 0, r.err);
  }
  const auto bytes = fs::file_size(input);
  REQUIRE(run_program("touch -d '2001-02-03 04:05:06 UTC' " + q(input)) == 0);
  REQUIRE(fs::file_size(input) == bytes);
  for (const char* stage : {"join", "render"}) {
    CAPTURE(stage);
    r = run_hazefree(std::string("job ") + stage + " -q " + q(dir + "/job") + (std::string(stage) == "render" ? " --chunk 1" : ""));
    CHECK(r.status == 1);
    CHECK(r.err.find("in.mp4: changed since the job was planned") != std::string::npos);
    CHECK(r.err.find("(modified 2001-02-03 04:05:06 UTC, planned at ") != std::string::npos);
    CHECK(r.err.find("plan the job again") != std::string::npos);
    CHECK(own_error_lines(r.err) == 1);
  }
  CHECK_FALSE(fs::exists(dir + "/out.mkv"));
}

TEST_CASE("job plan: --chunk-starts with an empty item is refused with one line") {
  const std::string dir = temp_dir("jobs-chunk-starts");
  for (const char* starts : {"10,,40", "10,40,", ",10"}) {
    CAPTURE(starts);
    const CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(test_clip().path) + " " +
                                         q(dir + "/out.mkv") + " --backend cpu --chunk-starts " + starts);
    CHECK(r.status == 2);
    CHECK(r.err.find(std::string("--chunk-starts ") + starts + ": expected frame numbers separated by commas") !=
          std::string::npos);
    CHECK(own_error_lines(r.err) == 1);
  }
}

}  // namespace hazefree::test

namespace hazefree::test {

TEST_CASE("job plan: a setting holding a quote, a backslash and non-ASCII comes back to every stage as given") {
  const std::string dir = temp_dir("jobs-settings-text");
  fs::remove_all(dir + "/job");
  // --stats is a string key that reaches the plan; the join writes the file where it names.
  const std::string stats = dir + "/frames \"quoted\" back\\slash Fr\xC3\xA9quence \xE9\x9B\xBE.jsonl";
  fs::remove(stats);
  CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(test_clip().path) + " " + q(dir + "/out.mkv") +
                                 " -y --backend cpu --mode ahe --encoder ffv1 --chunks 2 --stats " + q(stats));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string text = read_text(dir + "/job/settings.toml");
  CHECK(text.find("stats = \"" + dir + "/frames \\\"quoted\\\" back\\\\slash Fr\xC3\xA9quence \xE9\x9B\xBE.jsonl\"") !=
        std::string::npos);
  for (const char* stage : {"render -q --chunk 0", "render -q --chunk 1", "join -q"}) {
    CAPTURE(stage);
    r = run_hazefree(std::string("job ") + stage + " " + q(dir + "/job"));
    REQUIRE_MESSAGE(r.status == 0, r.err);
  }
  std::ifstream lines(stats);
  REQUIRE(lines.good());
  int count = 0;
  for (std::string line; std::getline(lines, line);) ++count;
  CHECK(count == test_clip().frames);
  // The saved settings are a preset the single run reads back to the same path.
  r = run_hazefree("--config " + q(dir + "/job/settings.toml") + " --print-config");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out == text);
}

// The join reads the later chunks from their MOV headers alone (no picture decoded): a chunk
// encoded at another size is still found and refused, and no output is left.
TEST_CASE("job join: a chunk encoded with other parameters than the first is refused with one line, no output") {
  const std::string dir = temp_dir("jobs-other-chunk");
  fs::remove_all(dir + "/job");
  CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(test_clip().path) + " " + q(dir + "/out.mp4") +
                                 " -y --backend cpu --mode he --chunk-starts 40");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  for (int task = 0; task < 2; ++task) {
    r = run_hazefree("job render -q " + q(dir + "/job") + " --chunk " + std::to_string(task));
    REQUIRE_MESSAGE(r.status == 0, r.err);
  }
  // Task 1's chunk (frames 40 to the end) replaced by one of the same codec and frame count at
  // half the size.
  const std::string chunk = dir + "/job/chunks/task-1.mov";
  REQUIRE(fs::exists(chunk));
  REQUIRE(run_program("ffmpeg -v error -y -f lavfi -i testsrc2=s=80x60:r=25 -frames:v " + std::to_string(test_clip().frames - 40) +
                      " -c:v libx264 -pix_fmt yuv420p " + q(dir + "/other.mov")) == 0);
  fs::rename(dir + "/other.mov", chunk);
  r = run_hazefree("job join -q " + q(dir + "/job"));
  CHECK(r.status == 1);
  CHECK(r.err.find("task-1.mov: encoded with other codec parameters than") != std::string::npos);
  CHECK(own_error_lines(r.err) == 1);
  CHECK_FALSE(fs::exists(dir + "/out.mp4"));
}

}  // namespace hazefree::test
