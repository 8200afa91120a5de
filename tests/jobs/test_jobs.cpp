// Jobs end to end (SPEC 8): a clip with scene cuts, open GOPs, B-frames and audio, cut into
// chunks in every way the tests can think of, must give frames identical to the single run
// (lossless FFV1 outputs, decoded and compared frame by frame), the same timestamps and the same
// audio packets. The stages run as the commands a scheduler runs, in any order, twice, and with
// bad input.
#include <doctest/doctest.h>

extern "C" {
#include <libavformat/avformat.h>
}

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <filesystem>
#include <regex>
#include <fstream>
#include <functional>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include "io/media_reader.hpp"
#include "jobs/job_test_support.hpp"
#include "pipeline/run_command.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using hazefree::test::run_hazefree;

namespace hazefree::test {
namespace {

constexpr auto q = quoted;

// Waits (up to `tries` half-milliseconds) for a chunk being written in `chunks_dir` (a hidden
// partial file), then sends `pid` SIGKILL (or `sig`) and returns its wait status; a SIGKILL is
// checked to have ended it.
int kill_once_writing(pid_t pid, const std::string& chunks_dir, int tries, int sig = SIGKILL) {
  bool writing = false;
  for (int i = 0; i < tries && !writing; ++i) {
    std::error_code error;  // the folder may not exist yet
    for (const auto& entry : fs::directory_iterator(chunks_dir, error))
      if (entry.path().filename().string().find(".partial") != std::string::npos) writing = true;
    if (!writing) usleep(500);
  }
  CHECK(writing);
  ::kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  if (sig == SIGKILL) CHECK(WIFSIGNALED(status));
  return status;
}

// Starts `hazefree ARGUMENTS` (shell words) with stdout and stderr to /dev/null.
pid_t start_hazefree(const std::string& arguments) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(null, STDERR_FILENO);
    dup2(null, STDOUT_FILENO);
    execl("/bin/sh", "sh", "-c", (std::string("exec '") + HAZEFREE_BINARY + "' " + arguments).c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

// DIR/slow.mp4: a 480x270 clip with audio, `seconds` long, its keyframes as `x264_params` say,
// that renders slowly enough with one thread (`mode`: a large AHE window, or DCP) for a signal
// to land mid-chunk; its single run is DIR/single.mkv. Returns the run's options.
std::string slow_clip_and_single_run(const std::string& dir, int seconds, const std::string& x264_params,
                                     const std::string& mode) {
  const std::string d = std::to_string(seconds);
  REQUIRE(run_program("ffmpeg -v error -y -f lavfi -i testsrc2=s=480x270:r=25:d=" + d + " -f lavfi -i sine=d=" + d +
                      " -c:v libx264 -preset veryfast -x264-params " + x264_params + " -c:a aac -shortest " +
                      q(dir + "/slow.mp4")) == 0);
  const std::string options = "--backend cpu --threads 1 " + mode + " --encoder ffv1";
  const CommandResult single = run_hazefree("-q -y " + options + " " + q(dir + "/slow.mp4") + " " + q(dir + "/single.mkv"));
  REQUIRE_MESSAGE(single.status == 0, single.err);
  return options;
}

}  // namespace

TEST_CASE("job chunks: DCP frames identical to the single run for 1, 2, 3 and 7 chunks") {
  const TestClip& clip = test_clip();
  for (const char* cut : {"--chunks 1", "--chunks 2", "--chunks 3", "--chunks 7"})
    check_local_job(clip.path, "--backend cpu", cut);
}

TEST_CASE("job chunks: boundaries on a cut, next to a cut, and one-frame chunks") {
  const TestClip& clip = test_clip();
  // Cuts at frames 30 and 50: chunks starting at each cut, one frame after the first (a chunk of
  // one frame at the cut), one frame before the second, and two keyframes in a row at 60, 61.
  for (const int k : {30, 31, 49, 50, 60, 61}) {
    CAPTURE(k);
    REQUIRE(std::find(clip.keyframes.begin(), clip.keyframes.end(), k) != clip.keyframes.end());
  }
  const std::string starts = "--chunk-starts 30,31,49,50,60,61";
  check_local_job(clip.path, "--backend cpu", starts);
  check_local_job(clip.path, "--backend cpu --mode he --set he.temporal=0.3", starts);
}

TEST_CASE("job chunks: HE with he.temporal and AHE frames identical to the single run") {
  const TestClip& clip = test_clip();
  for (const char* cut : {"--chunks 3", "--chunks 7"}) {
    check_local_job(clip.path, "--backend cpu --mode he --set he.temporal=0.3", cut);
    check_local_job(clip.path, "--backend cpu --mode he --color rgb --set he.temporal=0.6", cut);
  }
  check_local_job(clip.path, "--backend cpu --mode ahe --window 15 --clip 2", "--chunks 3");
}

TEST_CASE("job chunks: -ss and -t: the job covers only the span, frames identical to the trimmed single run") {
  const TestClip& clip = test_clip();
  // From inside a GOP (decoding starts at the keyframe before) across the cut at frame 30.
  check_local_job(clip.path, "--backend cpu -ss 0.5 -t 1.5", "--chunks 3");
  check_local_job(clip.path, "--backend cpu --mode he --set he.temporal=0.3 -ss 0.9", "--chunks 2");
  // --frames: the audio ends where the last frame kept ends, in the single run as in the join.
  check_local_job(clip.path, "--backend cpu --mode he -ss 0.5 --frames 30", "--chunks 2");
  // The plan holds only the span's frames, numbered from its first.
  const std::string dir = temp_dir("jobs-trim-plan-" + std::to_string(getpid()));
  const CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(clip.path) + " " + q(dir + "/out.mkv") +
                                       " --backend cpu -ss 0.5 -t 1.5 --chunks 3");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const nlohmann::json plan = read_plan(dir + "/job");
  const long frames = plan.at("inputs").at(0).at("frames").get<long>();
  CHECK(frames >= 36);
  CHECK(frames <= 38);
  long in_tasks = 0;
  for (const auto& task : plan.at("tasks")) in_tasks += task.at("frames").get<long>();
  CHECK(in_tasks == frames);
}

TEST_CASE("job chunks: --chunks above the frame count gives a chunk per frame and says so") {
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-more-chunks-" + std::to_string(getpid()));
  fs::remove_all(dir + "/job");
  const CommandResult r = run_hazefree("job plan " + q(dir + "/job") + " " + q(clip.path) + " " + q(dir + "/out.mkv") +
                                       " --backend cpu --chunks 100");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(r.err.find("--chunks 100: it has 75 frames, so 75 chunks of one frame each") != std::string::npos, r.err);
  const nlohmann::json plan = read_plan(dir + "/job");
  CHECK(plan.at("tasks").size() == 75);
  // Within the frame count nothing is said.
  const CommandResult fits = run_hazefree("job plan " + q(dir + "/job2") + " " + q(clip.path) + " " + q(dir + "/out.mkv") +
                                          " --backend cpu --chunks 75");
  REQUIRE_MESSAGE(fits.status == 0, fits.err);
  CHECK(fits.err.find("warning") == std::string::npos);
}

TEST_CASE("job chunks: a job run again renders only the chunk it lacks and its rate counts only that chunk") {
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-resumed-" + std::to_string(getpid()));
  fs::remove_all(dir + "/job");
  const std::string command = "-y --backend cpu --encoder ffv1 --chunks 3 --job-dir " + q(dir + "/job") + " " +
                              q(clip.path) + " " + q(dir + "/out.mkv");
  CommandResult r = run_hazefree(command);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.find("rendered before") == std::string::npos);
  // Task 1's chunk lost: the same command renders it alone and says what it found done.
  fs::remove(dir + "/job/state/render-1.json");
  for (const auto& entry : fs::directory_iterator(dir + "/job/chunks"))
    if (entry.path().filename().string().rfind("task-1.", 0) == 0) fs::remove(entry.path());
  const long lost = job_task_frames(dir + "/job", 1);
  r = run_hazefree(command);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(r.err.find("resuming") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("75 frames (" + std::to_string(75 - lost) + " rendered before, " + std::to_string(lost) +
                           " now) in ") != std::string::npos, r.err);
  CHECK(r.err.find("render 1 done") != std::string::npos);
  CHECK(r.err.find("render 0 done") == std::string::npos);
  check_identical(single_run(clip.path, "--backend cpu"), dir + "/out.mkv");
}

TEST_CASE("job chunks: --chunks N in waves gives N chunks where the shrinking last ones are under a frame and --workers-per-gpu without a GPU is said") {
  // 60 chunks of 75 frames on two workers: the chunks shrink toward the end (the first three
  // times the last), to less than a frame each, and still every one of the 60 keeps a frame.
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-waves-" + std::to_string(getpid()));
  fs::remove_all(dir + "/job");
  const CommandResult r = run_hazefree("-y --backend cpu --encoder ffv1 --workers 2 --chunks 60 --job-dir " +
                                       q(dir + "/job") + " " + q(clip.path) + " " + q(dir + "/out.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(r.err.find("75 frames in 60 chunks on 2 workers") != std::string::npos, r.err);
  REQUIRE(job_task_count(dir + "/job") == 60);
  long frames = 0;
  for (int task = 0; task < 60; ++task) {
    CHECK(job_task_frames(dir + "/job", task) >= 1);
    frames += job_task_frames(dir + "/job", task);
  }
  CHECK(frames == 75);
  CHECK(job_task_frames(dir + "/job", 0) > job_task_frames(dir + "/job", 59));
  check_identical(single_run(clip.path, "--backend cpu"), dir + "/out.mkv");
  // Workers per GPU without a GPU: said, not ignored silently.
  const CommandResult no_gpu = run_hazefree("-y --backend cpu --encoder ffv1 --chunks 2 --workers-per-gpu 3 " +
                                            q(clip.path) + " " + q(dir + "/out2.mkv"));
  REQUIRE_MESSAGE(no_gpu.status == 0, no_gpu.err);
  CHECK_MESSAGE(no_gpu.err.find("--workers-per-gpu 3: no GPU here (--backend cpu): the job runs 2 workers on the cores") !=
                    std::string::npos, no_gpu.err);
}

TEST_CASE("job chunks: closed GOPs (IDR keyframes, decoding starts at the chunk itself) with B-frames") {
  const std::string dir = temp_dir("jobs-closed-" + std::to_string(getpid()));
  const std::string clip = dir + "/closed.mkv";
  REQUIRE(run_program("ffmpeg -v error -y -f lavfi -i testsrc2=s=160x120:r=25:d=3 -f lavfi -i sine=d=3 "
                      "-c:v libx264 -preset veryfast -x264-params keyint=10:bframes=3:b-pyramid=normal "
                      "-c:a aac -shortest " + q(clip)) == 0);
  for (const char* cut : {"--chunks 3", "--chunks 7"}) {
    check_local_job(clip, "--backend cpu", cut);
    check_local_job(clip, "--backend cpu --mode he --set he.temporal=0.5", cut);
  }
}

TEST_CASE("job chunks: an H.264 mp4 output joins into one valid file with the single run's timestamps") {
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-h264");
  const CommandResult single = run_hazefree("-q -y --backend cpu " + q(clip.path) + " " + q(dir + "/single.mp4"));
  REQUIRE_MESSAGE(single.status == 0, single.err);
  const CommandResult job = run_hazefree("-q -y --backend cpu --chunks 4 " + q(clip.path) + " " + q(dir + "/job.mp4"));
  REQUIRE_MESSAGE(job.status == 0, job.err);
  const DecodedMedia a = decode_media(dir + "/single.mp4"), b = decode_media(dir + "/job.mp4");
  CHECK(b.frame_hashes.size() == static_cast<std::size_t>(clip.frames));
  CHECK(b.pts_us == a.pts_us);
  CHECK(b.audio_packets == a.audio_packets);
}

TEST_CASE("job stages: tasks in any order with the index from the environment, and join refuses a missing chunk") {
  const TestClip& clip = test_clip();
  const std::string options = "--backend cpu --mode dcp";
  const std::string& single = single_run(clip.path, options);
  const std::string dir = temp_dir("jobs-stages") + "/job";
  const std::string out = temp_dir("jobs-stages") + "/out.mkv";
  fs::remove(out);
  CommandResult r = run_hazefree("job plan -q " + q(dir) + " " + q(clip.path) + " " + q(out) + " " + options +
                                 " --encoder ffv1 --chunks 5");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const int tasks = job_task_count(dir);
  REQUIRE(tasks >= 4);
  // Analyses from the last index to the first, as SLURM_ARRAY_TASK_ID would give them.
  for (int k = tasks - 1; k >= 0; --k) {
    r = run_hazefree_with_env("SLURM_ARRAY_TASK_ID=" + std::to_string(k), "job analyze -q " + q(dir));
    REQUIRE_MESSAGE(r.status == 0, r.err);
  }
  // Renders in another order (Kubernetes' index), all but task 1, which one renders twice.
  for (const int k : {2, 0, 3}) {
    r = run_hazefree_with_env("JOB_COMPLETION_INDEX=" + std::to_string(k), "job render -q " + q(dir));
    REQUIRE_MESSAGE(r.status == 0, r.err);
  }
  for (int k = 4; k < tasks; ++k) REQUIRE(run_hazefree("job render -q " + q(dir) + " --chunk " + std::to_string(k)).status == 0);
  r = run_hazefree("job join -q " + q(dir));
  CHECK(r.status == 1);
  CHECK(r.err.find("task 1 ") != std::string::npos);
  CHECK(r.err.find("missing") != std::string::npos);
  CHECK(hazefree::test::own_error_lines(r.err) == 1);
  CHECK_FALSE(fs::exists(out));
  r = run_hazefree("job status " + q(dir));
  CHECK(r.status == 0);
  CHECK(r.out.find("missing") != std::string::npos);
  r = run_hazefree("job status --json " + q(dir));
  CHECK(r.out.find("\"render\": \"missing\"") != std::string::npos);
  for (int twice = 0; twice < 2; ++twice)
    REQUIRE(run_hazefree("job render -q " + q(dir) + " --chunk 1").status == 0);
  r = run_hazefree("job join -q " + q(dir));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_identical(single, out);
  r = run_hazefree("job status --json " + q(dir));
  CHECK(r.out.find("missing") == std::string::npos);
  CHECK(r.out.find("\"state\": \"done\"") != std::string::npos);
}

TEST_CASE("job stages: several inputs in one job, their chunks scheduled together, longest first") {
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-multi");
  const std::string short_clip = dir + "/short.mkv";
  // The first 20 frames of the clip, with its audio.
  REQUIRE(run_program("ffmpeg -v error -y -i " + q(clip.path) + " -frames:v 20 -c copy " + q(short_clip)) == 0);
  fs::remove_all(dir + "/job");
  CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(clip.path) + " " + q(dir + "/a.mkv") + " " +
                                 q(short_clip) + " " + q(dir + "/b.mkv") + " -y --backend cpu --encoder ffv1 --chunks 2");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const int tasks = job_task_count(dir + "/job");
  std::vector<long> frames;
  for (int k = 0; k < tasks; ++k) frames.push_back(job_task_frames(dir + "/job", k));
  CHECK(std::is_sorted(frames.rbegin(), frames.rend()));  // longest first
  for (const char* stage : {"analyze", "render"})
    for (int k = 0; k < tasks; ++k)
      REQUIRE(run_hazefree(std::string("job ") + stage + " -q " + q(dir + "/job") + " --chunk " + std::to_string(k)).status == 0);
  r = run_hazefree("job join -q " + q(dir + "/job"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_identical(single_run(clip.path, "--backend cpu"), dir + "/a.mkv");
  const CommandResult single_short = run_hazefree("-q -y --backend cpu --encoder ffv1 " + q(short_clip) + " " + q(dir + "/b1.mkv"));
  REQUIRE(single_short.status == 0);
  check_identical(dir + "/b1.mkv", dir + "/b.mkv");
}

TEST_CASE("job errors: one line and a non-zero status for every bad input") {
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-errors");
  fs::remove_all(dir + "/job");
  struct Case {
    std::string arguments;
    int status;
    std::string says;
  };
  const std::string not_media = dir + "/notes.txt";
  std::ofstream(not_media) << "not a video\n";
  const std::vector<Case> before_plan = {
      {"job plan " + q(dir + "/j1") + " " + q(dir + "/missing.mp4") + " " + q(dir + "/o.mkv"), 1, "missing.mp4"},
      {"job plan " + q(dir + "/j2") + " " + q(not_media) + " " + q(dir + "/o.mkv"), 1, "notes.txt"},
      {"job plan " + q(dir + "/j3") + " " + q(dir) + " " + q(dir + "/o.mkv"), 1, "directory"},
      {"job plan " + q(dir + "/j4") + " " + q(clip.path), 2, "pairs"},
      {"job plan " + q(dir + "/j5") + " " + q(clip.path) + " " + q(dir + "/o.mkv") + " --chunk-starts 900", 1,
       "chunk start 900 is outside its 75 frames"},
      {"job analyze " + q(dir + "/none"), 1, "no such job directory"},
      {"job frobnicate " + q(dir), 2, "unknown stage"},
      {"--chunks 3 --live " + q(clip.path) + " " + q(dir + "/o.mkv"), 2, "live"},
      {"--backend cpu --job-dir " + q(dir + "/jd") + " " + q(clip.path) + " " + q(dir + "/o.mkv"), 2,
       "--job-dir goes with --chunks, --chunk-seconds or --chunk-starts"},
      {"--backend cpu --workers 3 --job-memory 100 " + q(clip.path) + " " + q(dir + "/o.mkv"), 2,
       "--workers, --job-memory go with --chunks"},
      // The output is refused as the single run refuses it, before a chunk is planned or rendered.
      {"-y --backend cpu --chunks 3 " + q(clip.path) + " " + q(not_media + "/o.mkv"), 1, "notes.txt is not a folder"},
      {"-y --backend cpu --chunks 3 " + q(clip.path) + " " + q(dir + "/a-folder"), 1, "a-folder: is a directory"},
      {"-y --backend cpu --chunks 3 " + q(clip.path) + " " + q(clip.path), 1, "is the input file"},
  };
  fs::create_directories(dir + "/a-folder");
  for (const Case& c : before_plan) {
    CAPTURE(c.arguments);
    const CommandResult r = run_hazefree(c.arguments);
    CHECK(r.status == c.status);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(own_error_lines(r.err) == 1);
  }
  CHECK_FALSE(fs::exists(dir + "/.a-folder.hazefree-job"));
  CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(clip.path) + " " + q(dir + "/o.mkv") +
                                 " --backend cpu --chunks 3");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  r = run_hazefree("job render " + q(dir + "/job") + " --chunk 99");
  CHECK(r.status == 1);
  CHECK(r.err.find("out of range") != std::string::npos);
  CHECK(own_error_lines(r.err) == 1);
  r = run_hazefree_with_env("SLURM_ARRAY_TASK_ID=7x", "job analyze " + q(dir + "/job"));
  CHECK(r.status == 1);
  CHECK(r.err.find("SLURM_ARRAY_TASK_ID") != std::string::npos);
  r = run_hazefree("job render " + q(dir + "/job"));  // no index anywhere
  CHECK(r.status == 1);
  CHECK(r.err.find("--chunk") != std::string::npos);
  // A job directory of another version.
  {
    std::string text = read_text(dir + "/job/plan.json");
    const auto at = text.find("\"version\": 2");
    REQUIRE(at != std::string::npos);
    text.replace(at, 12, "\"version\": 0");
    std::ofstream(dir + "/job/plan.json") << text;
  }
  for (const char* stage : {"analyze", "render", "join", "status"}) {
    CAPTURE(stage);
    r = run_hazefree(std::string("job ") + stage + " " + q(dir + "/job") + (std::string(stage) == "analyze" || std::string(stage) == "render" ? " --chunk 0" : ""));
    CHECK(r.status == 1);
    CHECK(r.err.find("plan the job again") != std::string::npos);
    CHECK(own_error_lines(r.err) == 1);
  }
}

}  // namespace hazefree::test

namespace hazefree::test {

TEST_CASE("job stages: a render killed mid-way leaves no chunk, status says so, and running it again changes nothing") {
  const std::string dir = temp_dir("jobs-killed");
  const std::string clip = dir + "/slow.mp4";
  const std::string options = slow_clip_and_single_run(dir, 2, "keyint=10:bframes=2", "--mode ahe --window 127");
  fs::remove_all(dir + "/job");
  fs::remove(dir + "/out.mkv");
  CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(clip) + " " + q(dir + "/out.mkv") + " " +
                                 options + " --chunks 2");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  REQUIRE(job_task_count(dir + "/job") == 2);

  // While it renders, its state file counts the frames written so far, and `job status` adds them
  // to the progress line (the render held still meanwhile: it takes a fraction of a second).
  const pid_t render = start_hazefree("job render -q " + q(dir + "/job") + " --chunk 0");
  bool counted = false;
  for (int i = 0; i < 20000 && !counted; ++i) {
    counted = read_text(dir + "/job/state/render-0.json").find("\"frames\"") != std::string::npos;
    if (!counted) usleep(500);
  }
  REQUIRE(counted);
  ::kill(render, SIGSTOP);
  r = run_hazefree("job status --json " + q(dir + "/job"));
  const nlohmann::json running = nlohmann::json::parse(r.out);
  CHECK(running.at("progress").at("frames_done").get<long>() > 0);
  CHECK(running.at("progress").at("frames_done").get<long>() < job_task_frames(dir + "/job", 0));
  // Kill it once its chunk is being written (a hidden partial file in chunks/).
  kill_once_writing(render, dir + "/job/chunks", 20000);
  CHECK_FALSE(fs::exists(dir + "/job/chunks/task-0.mov"));
  r = run_hazefree("job status --json " + q(dir + "/job"));
  CHECK(r.out.find("\"render\": \"interrupted\"") != std::string::npos);
  REQUIRE(run_hazefree("job render -q " + q(dir + "/job") + " --chunk 1").status == 0);
  r = run_hazefree("job join -q " + q(dir + "/job"));
  CHECK(r.status == 1);
  CHECK(r.err.find("task 0 ") != std::string::npos);
  CHECK(r.err.find("interrupted") != std::string::npos);
  REQUIRE(run_hazefree("job render -q " + q(dir + "/job") + " --chunk 0").status == 0);
  r = run_hazefree("job join -q " + q(dir + "/job"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_identical(dir + "/single.mkv", dir + "/out.mkv");
  // The killed run's partial file is no chunk: only the finished ones are there.
  int chunk_files = 0;
  for (const auto& entry : fs::directory_iterator(dir + "/job/chunks"))
    if (entry.path().extension() == ".mov" && entry.path().filename().string()[0] != '.') ++chunk_files;
  CHECK(chunk_files == 2);
}

}  // namespace hazefree::test

namespace hazefree::test {

namespace {

// Decodings per task recorded by the job (`job status --json`: "decodes" of each task).
std::vector<int> decodes_per_task(const std::string& dir) {
  const CommandResult r = run_hazefree("job status --json " + q(dir));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  std::vector<int> decodes;
  for (std::size_t at = r.out.find("\"decodes\": "); at != std::string::npos; at = r.out.find("\"decodes\": ", at + 1))
    decodes.push_back(std::atoi(r.out.c_str() + at + 11));
  return decodes;
}

// `clip` with `options` cut into 3 chunks into DIR.mkv, the job directory DIR kept, with the
// command's `flags` (-q, the workers): the single run's frames, each chunk decoded once (the last
// has no analysis, the others take it from their render's decoding). Returns the command's result.
CommandResult check_fused_job(const std::string& clip, const std::string& options, const std::string& flags,
                              const std::string& dir) {
  fs::remove_all(dir);
  const CommandResult r = run_hazefree(flags + " -y " + options + " --encoder ffv1 --chunks 3 --job-dir " + q(dir) + " " +
                                       q(clip) + " " + q(dir + ".mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_identical(single_run(clip, options), dir + ".mkv");
  const std::vector<int> once = decodes_per_task(dir);
  REQUIRE(once.size() == 3);
  CHECK(std::all_of(once.begin(), once.end(), [](int n) { return n == 1; }));
  return r;
}

}  // namespace

TEST_CASE("job chunks: each frame decoded once (fused), or twice when the memory budget cannot hold a chunk") {
  const TestClip& clip = test_clip();
  const std::string base = temp_dir("jobs-fused-" + std::to_string(getpid()));
  for (const char* options : {"--backend cpu", "--backend cpu --mode he --set he.temporal=0.4"}) {
    CAPTURE(options);
    const std::string& single = single_run(clip.path, options);
    // Default budget: every chunk but the last decoded once, for its analysis and its render.
    check_fused_job(clip.path, options, "-q", base + "/fused");
    CHECK(read_text(base + "/fused/logs/analyze-0.log").find("decoded once") != std::string::npos);
    // A budget too small for any chunk: the two-pass form, said in the job's log, same frames.
    fs::remove_all(base + "/twice");
    CommandResult r = run_hazefree("-y " + std::string(options) + " --encoder ffv1 --chunks 3 --job-memory 0.01 --job-dir " +
                     q(base + "/twice") + " " + q(clip.path) + " " + q(base + "/twice.mkv"));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(r.err.find("decoded twice") != std::string::npos);
    check_identical(single, base + "/twice.mkv");
    const std::vector<int> twice = decodes_per_task(base + "/twice");
    REQUIRE(twice.size() == 3);
    CHECK(std::count(twice.begin(), twice.end(), 2) == 2);  // the last chunk has no analysis
    CHECK(read_text(base + "/twice/logs/analyze-0.log").find("decoded twice") != std::string::npos);
    r = run_hazefree("job status " + q(base + "/twice"));
    CHECK(r.out.find("2x: cpu (analysis) cpu (render)") != std::string::npos);
  }
}

TEST_CASE("job chunks: a job directory planned for other settings is planned again, and the run says so") {
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-replanned-" + std::to_string(getpid()));
  fs::remove_all(dir + "/job");
  const std::string rest = " --encoder ffv1 --chunks 2 --job-dir " + q(dir + "/job") + " " + q(clip.path) + " " + q(dir + "/o.mkv");
  CommandResult r = run_hazefree("-y --backend cpu --mode he" + rest);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.find("planned again") == std::string::npos);
  r = run_hazefree("-y --backend cpu --mode he" + rest);  // the same job: resumed (every chunk done)
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.find(", resuming") != std::string::npos);
  CHECK(r.err.find("planned again") == std::string::npos);
  r = run_hazefree("-y --backend cpu --mode he --set he.temporal=0.5" + rest);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK_MESSAGE(r.err.find("/job: planned again: the job there was for other inputs, outputs or settings (its rendered chunks "
                           "are not used)") != std::string::npos, r.err);
  CHECK(r.err.find(", resuming") == std::string::npos);
  check_identical(single_run(clip.path, "--backend cpu --mode he --set he.temporal=0.5"), dir + "/o.mkv");
}

TEST_CASE("job chunks: -v gives each render's timeline (began, estimates, start state, first frame, end) and busy times") {
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-timeline-" + std::to_string(getpid()));
  const CommandResult r = run_hazefree("-v -y --backend cpu --encoder ffv1 --chunks 3 --job-dir " + q(dir + "/job") + " " +
                                       q(clip.path) + " " + q(dir + "/out.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::regex line(R"(render (\d+): began ([0-9.]+), estimates published ([0-9.]+|-), start state ([0-9.]+|-), )"
                        R"(first frame written ([0-9.]+), ended ([0-9.]+) s; )"
                        R"(busy per frame: decode [0-9.]+, estimate [0-9.]+, )"
                        R"(process [0-9.]+, encode [0-9.]+ ms)");
  const nlohmann::json plan = read_plan(dir + "/job");
  int lines = 0;
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), line); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    CAPTURE(m.str());
    ++lines;
    const bool last = plan.at("tasks").at(std::stoi(m[1])).at("to_end").get<bool>();
    const double began = std::stod(m[2]), first = std::stod(m[5]), ended = std::stod(m[6]);
    CHECK(began <= first);
    CHECK(first <= ended);
    // DCP carries its state: every chunk waits at its gate, and each but the last publishes the
    // estimates its own decoding took (the fused analysis), before it ends.
    CHECK(m[4] != "-");
    CHECK((m[3] == "-") == last);
    if (!last) {
      CHECK(std::stod(m[3]) <= ended);
    }
  }
  CHECK(lines == 3);
}

TEST_CASE("job chunks: --chunks auto on the CPU backend chooses the layout, says it in one line, same frames") {
  const TestClip& clip = test_clip();
  const std::string dir = temp_dir("jobs-auto-" + std::to_string(getpid()));
  for (const char* options : {"--backend cpu", "--backend cpu --mode ahe --window 15 --clip 2"}) {
    CAPTURE(options);
    const CommandResult r = run_hazefree("-y " + std::string(options) + " --encoder ffv1 --chunks auto " + q(clip.path) + " " +
                                         q(dir + "/auto.mkv"));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(r.err.find("--chunks auto: ") != std::string::npos);
    // A short input in the default budget: nothing is over it, so nothing is decoded twice.
    CHECK_MESSAGE(r.err.find("decoded twice") == std::string::npos, r.err);
    check_identical(single_run(clip.path, options), dir + "/auto.mkv");
  }
  // A pipe or a live source cannot be cut: one line, status 2.
  const CommandResult piped = run_hazefree("-y --backend cpu --chunks auto - " + q(dir + "/o.mkv") + " < " + q(clip.path));
  CHECK(piped.status == 2);
  CHECK(piped.err.find("pipe") != std::string::npos);
  CHECK(own_error_lines(piped.err) == 1);
  // The message names the option given.
  const CommandResult seconds = run_hazefree("-y --backend cpu --chunk-seconds 1 - " + q(dir + "/o.mkv") + " < " + q(clip.path));
  CHECK(seconds.status == 2);
  CHECK(seconds.err.find("-: --chunk-seconds needs a file to cut into chunks") != std::string::npos);
  const CommandResult live = run_hazefree("-y --backend cpu --chunks auto udp://127.0.0.1:9 " + q(dir + "/o.mkv"));
  CHECK(live.status == 2);
  CHECK(live.err.find("not a pipe, stream or camera") != std::string::npos);
  CHECK(own_error_lines(live.err) == 1);
  const CommandResult bad = run_hazefree("-y --backend cpu --chunks many " + q(clip.path) + " " + q(dir + "/o.mkv"));
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--chunks many") != std::string::npos);
  // Pictures are no video to join: said before any chunk is rendered.
  for (const char* pictures : {"/f%03d.png", "/still.png"}) {
    const CommandResult r = run_hazefree("-y --backend cpu --chunks 2 " + q(clip.path) + " " + q(dir + pictures));
    CHECK(r.status != 0);
    CHECK(r.err.find("a job joins its chunks into one video file") != std::string::npos);
    CHECK(own_error_lines(r.err) == 1);
  }
}

TEST_CASE("job chunks: the runner killed mid-chunk, then the same command again, gives the single run's frames") {
  const std::string dir = temp_dir("jobs-runner-killed-" + std::to_string(getpid()));
  const std::string clip = dir + "/slow.mp4";
  // One keyframe: every chunk but the first starts between keyframes (decoded from the first).
  const std::string options = slow_clip_and_single_run(dir, 2, "keyint=1000:scenecut=0:bframes=2", "--mode dcp");
  fs::remove(dir + "/out.mkv");
  const std::string job_dir = dir + "/.out.mkv.hazefree-job";
  fs::remove_all(job_dir);
  const std::string command = "-q -y " + options + " --chunks 4 --workers 1 " + q(clip) + " " + q(dir + "/out.mkv");
  // Killed once a chunk is being written and before the job ends.
  kill_once_writing(start_hazefree(command), job_dir + "/chunks", 40000);
  CHECK_FALSE(fs::exists(dir + "/out.mkv"));
  const CommandResult r = run_hazefree(command);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_identical(dir + "/single.mkv", dir + "/out.mkv");
  CHECK_FALSE(fs::exists(job_dir));
}

TEST_CASE("job chunks: Ctrl-C stops a render and a run in chunks with status 130: the tasks read interrupted, not failed, and run again") {
  const std::string dir = temp_dir("jobs-sigint");
  const std::string clip = dir + "/slow.mp4";
  const std::string options = slow_clip_and_single_run(dir, 3, "keyint=10", "--mode ahe --window 127");

  // One stage command: job render.
  fs::remove_all(dir + "/job");
  CommandResult r = run_hazefree("job plan -q " + q(dir + "/job") + " " + q(clip) + " " + q(dir + "/out.mkv") + " " +
                                 options + " --chunks 2");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  int status = kill_once_writing(start_hazefree("job render -q " + q(dir + "/job") + " --chunk 0"), dir + "/job/chunks",
                                 20000, SIGINT);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 130));
  r = run_hazefree("job status --json " + q(dir + "/job"));
  CHECK(r.out.find("\"render\": \"interrupted\"") != std::string::npos);
  CHECK(r.out.find(": \"failed\"") == std::string::npos);
  r = run_hazefree("job status " + q(dir + "/job"));
  CHECK(r.out.find("0 failed") != std::string::npos);
  r = run_hazefree("job join -q " + q(dir + "/job"));
  CHECK(r.status == 1);
  CAPTURE(r.err);
  CHECK(r.err.find("task 0 (slow.mp4 chunk 1/2 (frames 0-39)) was interrupted (stopped before its end): render it "
                   "again") != std::string::npos);
  for (const char* task : {"0", "1"}) REQUIRE(run_hazefree("job render -q " + q(dir + "/job") + " --chunk " + task).status == 0);
  r = run_hazefree("job join -q " + q(dir + "/job"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_identical(dir + "/single.mkv", dir + "/out.mkv");

  // A run in chunks, its job folder kept: no task of it reads failed; run again, it ends the job.
  fs::remove_all(dir + "/kept");
  fs::remove(dir + "/out2.mkv");
  const std::string command =
      "-q -y " + options + " --chunks 4 --workers 1 --job-dir " + q(dir + "/kept") + " " + q(clip) + " " + q(dir + "/out2.mkv");
  status = kill_once_writing(start_hazefree(command), dir + "/kept/chunks", 40000, SIGINT);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 130));
  // The join, which runs beside the renders, stops with them and leaves no output.
  CHECK_FALSE(fs::exists(dir + "/out2.mkv"));
  r = run_hazefree("job status --json " + q(dir + "/kept"));
  CHECK(r.out.find("\"interrupted\"") != std::string::npos);
  CHECK(r.out.find(": \"failed\"") == std::string::npos);
  r = run_hazefree(command);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_identical(dir + "/single.mkv", dir + "/out2.mkv");
  // Every chunk rendered: the job's elapsed time ends at its last render, not at each look.
  const auto elapsed = [&dir] {
    const CommandResult status = run_hazefree("job status --json " + q(dir + "/kept"));
    REQUIRE_MESSAGE(status.status == 0, status.err);
    return nlohmann::json::parse(status.out).at("progress").at("elapsed_seconds").get<double>();
  };
  const double first = elapsed();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(elapsed() == first);
}

}  // namespace hazefree::test
