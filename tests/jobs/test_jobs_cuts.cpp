// Chunks cut at any frame (SPEC 8.2): a chunk that starts between keyframes decodes from the
// keyframe before it (its pre-roll) and drops the frames before its first, and the job still
// gives the single run's frames and audio (FFV1 outputs, decoded and compared frame by frame).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "jobs/job_test_support.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;

namespace hazefree::test {
namespace {

// An MP4 at `path`: 160x120 at 25 fps for `seconds`, H.264 with `x264_params` (its keyframes and
// B-frames), AAC audio.
void make_h264_clip(const std::string& path, int seconds, const std::string& x264_params) {
  const std::string d = std::to_string(seconds);
  REQUIRE(run_program("ffmpeg -v error -y -f lavfi -i testsrc2=s=160x120:r=25:d=" + d + " -f lavfi -i sine=f=330:d=" + d +
                      " -c:v libx264 -preset veryfast -pix_fmt yuv420p -x264-params " + x264_params +
                      " -c:a aac -shortest " + quoted(path)) == 0);
}

// 150 frames with one keyframe (the first), B-frames.
const std::string& one_keyframe_clip() {
  static const std::string path = [] {
    const std::string p = temp_dir("jobs-cuts-clip-" + std::to_string(getpid())) + "/one-key.mp4";
    make_h264_clip(p, 6, "keyint=1000:min-keyint=1000:scenecut=0:bframes=3:b-pyramid=normal");
    REQUIRE(keyframe_positions(p) == std::vector<int>{0});
    return p;
  }();
  return path;
}

// 300 frames with a keyframe every 150 (frames 0 and 150), no B-frames.
const std::string& gop150_clip() {
  static const std::string path = [] {
    const std::string p = temp_dir("jobs-cuts-gop150-" + std::to_string(getpid())) + "/gop150.mp4";
    make_h264_clip(p, 12, "keyint=150:min-keyint=150:scenecut=0:bframes=0");
    REQUIRE(keyframe_positions(p) == std::vector<int>{0, 150});
    return p;
  }();
  return path;
}

// A render's pre-roll as its -v line gives it: "pre-roll: DECODED of PLANNED pictures decoded".
struct RenderPreroll {
  long decoded = -1;
  long planned = -1;
};
RenderPreroll render_preroll(const std::string& err, long task) {
  const std::size_t line = err.find("render " + std::to_string(task) + ": began");
  REQUIRE_MESSAGE(line != std::string::npos, err);
  const std::string said = "pre-roll: ";
  const std::size_t at = err.find(said, line);
  REQUIRE_MESSAGE(at != std::string::npos, err);
  RenderPreroll preroll;
  char* end = nullptr;
  preroll.decoded = std::strtol(err.c_str() + at + said.size(), &end, 10);
  REQUIRE_MESSAGE(std::string(end).rfind(" of ", 0) == 0, err);
  preroll.planned = std::strtol(end + 4, &end, 10);
  REQUIRE_MESSAGE(std::string(end).rfind(" pictures decoded", 0) == 0, err);
  return preroll;
}

}  // namespace

TEST_CASE("job cuts: an input with one keyframe in 6 chunks gives the single run's frames and audio, dcp and he") {
  const std::string& clip = one_keyframe_clip();
  for (const char* options : {"--backend cpu", "--backend cpu --mode he --set he.temporal=0.3"}) {
    CAPTURE(options);
    const std::string dir = temp_dir("jobs-cuts-six-" + std::to_string(getpid())) + "/job";
    fs::remove_all(dir);
    const std::string out = dir + ".mkv";
    const CommandResult r = run_hazefree("-q -y " + std::string(options) + " --encoder ffv1 --chunks 6 --job-dir " +
                                         quoted(dir) + " " + quoted(clip) + " " + quoted(out));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    check_identical(single_run(clip, options), out);
    // Six chunks; each but the first decodes every frame before it (the one keyframe is the first
    // frame) and drops them: its pre-roll, which `job status` shows.
    const nlohmann::json plan = read_plan(dir);
    REQUIRE(plan.at("tasks").size() == 6);
    for (const auto& task : plan.at("tasks")) {
      CAPTURE(task.dump());
      CHECK(task.at("preroll").get<long>() == task.at("first_frame").get<long>());
    }
    const CommandResult status = run_hazefree("job status " + quoted(dir));
    REQUIRE(status.status == 0);
    CHECK(status.out.find("pre-roll") != std::string::npos);
    const CommandResult json = run_hazefree("job status --json " + quoted(dir));
    CHECK(json.out.find("\"preroll\": " + std::to_string(plan.at("tasks").at(0).at("first_frame").get<long>())) !=
          std::string::npos);
  }
}

TEST_CASE("job cuts: an open-GOP input cut one frame after a keyframe and one frame before the next") {
  const TestClip& clip = test_clip();  // open GOPs, B-frames, a keyframe every 12 frames at most
  // The first two keyframes at least three frames apart past the first: cuts at k1 + 1 and k2 - 1.
  int k1 = -1, k2 = -1;
  for (std::size_t i = 1; i + 1 < clip.keyframes.size(); ++i)
    if (clip.keyframes[i + 1] - clip.keyframes[i] >= 3) {
      k1 = clip.keyframes[i];
      k2 = clip.keyframes[i + 1];
      break;
    }
  REQUIRE(k1 > 0);
  for (const int cut : {k1 + 1, k2 - 1})
    REQUIRE(std::find(clip.keyframes.begin(), clip.keyframes.end(), cut) == clip.keyframes.end());
  const std::string starts = "--chunk-starts " + std::to_string(k1 + 1) + "," + std::to_string(k2 - 1);
  check_local_job(clip.path, "--backend cpu", starts);
  check_local_job(clip.path, "--backend cpu --mode he --set he.temporal=0.3", starts);
}

TEST_CASE("job cuts: --chunks auto on an input with one keyframe cuts it, same frames and audio") {
  const std::string& clip = one_keyframe_clip();
  const std::string dir = temp_dir("jobs-cuts-auto-" + std::to_string(getpid()));
  fs::remove_all(dir + "/job");
  const CommandResult r = run_hazefree("-y --backend cpu --encoder ffv1 --chunks auto --job-dir " + quoted(dir + "/job") + " " +
                                       quoted(clip) + " " + quoted(dir + "/auto.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  // "--chunks auto: N chunks on W workers ...": whole waves of workers, at least one.
  const std::size_t at = r.err.find("--chunks auto: ");
  REQUIRE(at != std::string::npos);
  char* end = nullptr;
  const long chunks = std::strtol(r.err.c_str() + at + 15, &end, 10);
  const std::size_t on = r.err.find(" chunks on ", at);
  REQUIRE(on != std::string::npos);
  const long workers = std::strtol(r.err.c_str() + on + 11, nullptr, 10);
  CHECK(chunks >= 2);
  CHECK(workers >= 1);
  CHECK(chunks % workers == 0);
  const nlohmann::json plan = read_plan(dir + "/job");
  CHECK(static_cast<long>(plan.at("tasks").size()) == chunks);
  check_identical(single_run(clip, "--backend cpu"), dir + "/auto.mkv");
}

TEST_CASE("job cuts: a chunk's pre-roll skips the pictures nothing refers to, same frames and audio") {
  // The one-keyframe clip's B-frames (three between references, a pyramid): of the 100 pictures
  // before a chunk starting at frame 100, only the references are decoded, and -v says how many.
  const std::string& clip = one_keyframe_clip();
  const std::string dir = temp_dir("jobs-cuts-skip-" + std::to_string(getpid()));
  fs::remove_all(dir + "/job");
  const CommandResult r = run_hazefree("-y -v --backend cpu --encoder ffv1 --chunk-starts 100 --job-dir " + quoted(dir + "/job") +
                                       " " + quoted(clip) + " " + quoted(dir + "/skip.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const RenderPreroll preroll = render_preroll(r.err, 1);
  CHECK(preroll.planned == 100);
  CHECK(preroll.decoded > 0);
  CHECK(preroll.decoded < 100);
  check_identical(single_run(clip, "--backend cpu"), dir + "/skip.mkv");
}

TEST_CASE("job cuts: chunks of an MP4 with B-frames decode from their own keyframe, no earlier, same frames") {
  // Keyframes every 50 frames, three B-frames between references: chunks at 60 and 130 decode
  // from the keyframes at 50 and 100, at most the 10 and 30 pictures of pre-roll the plan counts
  // (seeking to a keyframe's dts in such a file lands a keyframe earlier).
  const std::string dir = temp_dir("jobs-cuts-bframes-" + std::to_string(getpid()));
  const std::string clip = dir + "/gop50.mp4";
  make_h264_clip(clip, 6, "keyint=50:min-keyint=50:scenecut=0:bframes=3:b-pyramid=normal");
  REQUIRE(keyframe_positions(clip) == std::vector<int>{0, 50, 100});
  fs::remove_all(dir + "/job");
  const CommandResult r = run_hazefree("-y -v --backend cpu --encoder ffv1 --chunk-starts 60,130 --job-dir " + quoted(dir + "/job") +
                                       " " + quoted(clip) + " " + quoted(dir + "/bframes.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const nlohmann::json plan = read_plan(dir + "/job");
  REQUIRE(plan.at("tasks").size() == 3);
  for (const nlohmann::json& task : plan.at("tasks")) {
    const long number = task.at("task").get<long>();
    CAPTURE(number);
    const RenderPreroll preroll = render_preroll(r.err, number);
    CHECK(preroll.planned == task.at("preroll").get<long>());
    CHECK(preroll.decoded <= preroll.planned);
  }
  check_identical(single_run(clip, "--backend cpu"), dir + "/bframes.mkv");
}

TEST_CASE("job cuts: --chunks auto takes one wave when its cuts fall on keyframes, no pre-roll, same frames") {
  // 300 frames, a keyframe every 150: two workers' one wave is cut at frame 150, a keyframe, and
  // decodes no pre-roll; two or three waves of shrinking chunks would cut between keyframes and
  // decode 276 frames or more of it (at a sixth of an encode each), for a shorter end.
  const std::string dir = temp_dir("jobs-cuts-one-wave-" + std::to_string(getpid()));
  const std::string& clip = gop150_clip();
  fs::remove_all(dir + "/job");
  const CommandResult r = run_hazefree("-y --backend cpu --workers 2 --encoder ffv1 --chunks auto --job-dir " +
                                       quoted(dir + "/job") + " " + quoted(clip) + " " + quoted(dir + "/auto.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(r.err.find("--chunks auto: 2 chunks (0 frames of pre-roll) on 2 workers (CPU)") != std::string::npos, r.err);
  const nlohmann::json plan = read_plan(dir + "/job");
  REQUIRE(plan.at("tasks").size() == 2);
  CHECK(plan.at("tasks").at(1).at("first_frame").get<long>() == 150);
  CHECK(plan.at("tasks").at(1).at("preroll").get<long>() == 0);
  check_identical(single_run(clip, "--backend cpu"), dir + "/auto.mkv");
}

TEST_CASE("job cuts: --chunks auto with a budget too small for any chunk keeps its chunks long, decoded twice, same frames") {
  // 10 KiB for 300 frames: chunks that fit would be a frame each (pre-roll and an encoder for
  // every frame). The chunks stay a second or longer and take the two-pass form; of the counts
  // the length allows, one wave cut at the keyframe (frame 150) decodes no pre-roll.
  const std::string dir = temp_dir("jobs-cuts-small-budget-" + std::to_string(getpid()));
  const std::string& clip = gop150_clip();
  fs::remove_all(dir + "/job");
  const CommandResult r = run_hazefree("-y --backend cpu --workers 2 --encoder ffv1 --chunks auto --job-memory 0.01 --job-dir " +
                                       quoted(dir + "/job") + " " + quoted(clip) + " " + quoted(dir + "/auto.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(r.err.find("--chunks auto: 2 chunks (0 frames of pre-roll) on 2 workers (CPU)") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("chunks larger than a worker's share of that memory are decoded twice") != std::string::npos, r.err);
  CHECK(read_plan(dir + "/job").at("tasks").size() == 2);
  CHECK(read_text(dir + "/job/logs/analyze-0.log").find("decoded twice") != std::string::npos);
  check_identical(single_run(clip, "--backend cpu"), dir + "/auto.mkv");
}

TEST_CASE("job cuts: --chunks auto with one worker plans one chunk, no pre-roll, same frames") {
  // One worker takes its chunks one after another: three chunks of this clip (its waves) would
  // cut between keyframes and decode pre-roll, and set up three encoders, for nothing.
  const std::string dir = temp_dir("jobs-cuts-one-worker-" + std::to_string(getpid()));
  const std::string& clip = gop150_clip();
  fs::remove_all(dir + "/job");
  const CommandResult r = run_hazefree("-y --backend cpu --workers 1 --encoder ffv1 --chunks auto --job-dir " +
                                       quoted(dir + "/job") + " " + quoted(clip) + " " + quoted(dir + "/auto.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(r.err.find("--chunks auto: 1 chunk (0 frames of pre-roll) on 1 worker (CPU)") != std::string::npos, r.err);
  CHECK(read_plan(dir + "/job").at("tasks").size() == 1);
  check_identical(single_run(clip, "--backend cpu"), dir + "/auto.mkv");
}

TEST_CASE("job chunks: --chunks auto -v gives each render's encoder threads (on the CPU backend all take the line's count)") {
  const std::string& clip = gop150_clip();
  const std::string dir = temp_dir("jobs-auto-threads-" + std::to_string(getpid()));
  const CommandResult r = run_hazefree("-v -y --backend cpu --encoder ffv1 --chunks auto " + quoted(clip) + " " + quoted(dir + "/out.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  std::smatch layout;
  REQUIRE_MESSAGE(std::regex_search(r.err, layout, std::regex(R"(at once with (\d+) threads each)")), r.err);
  // The first chunk's encoder takes more threads only where a GPU leaves the cores to the decoders.
  CHECK(r.err.find("the first chunk's with") == std::string::npos);
  const std::regex render(R"(render (\d+): began .* encode [0-9.]+ ms \((\d+) encoder threads\); pre-roll)");
  int renders = 0;
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), render); it != std::sregex_iterator(); ++it) {
    CAPTURE((*it).str());
    CHECK((*it)[2] == layout[1].str());
    ++renders;
  }
  CHECK_MESSAGE(renders >= 2, r.err);
  // Threads given with --encoder-opt are the ones every render uses and says.
  const CommandResult given = run_hazefree("-v -y --backend cpu --encoder ffv1 --encoder-opt threads=1 --chunks auto " + quoted(clip) +
                                           " " + quoted(dir + "/out.mkv"));
  REQUIRE_MESSAGE(given.status == 0, given.err);
  int said = 0;
  for (auto it = std::sregex_iterator(given.err.begin(), given.err.end(), render); it != std::sregex_iterator(); ++it, ++said)
    CHECK((*it)[2] == "1");
  CHECK(said == renders);
}

}  // namespace hazefree::test
