// The job's last renders end together (jobs/render_priority.hpp): the nice values they take from
// the frames they have left, set on the threads named for each render, and a job's -v lines.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>

#include "jobs/job_test_support.hpp"
#include "jobs/render_priority.hpp"
#include "pipeline/pipeline.hpp"
#include "support/test_support.hpp"

namespace hazefree::test {
namespace {

using jobs::apply_render_nice;
using jobs::balanced_nice;
using jobs::render_thread_name;

int nice_of(long tid) {
  errno = 0;
  const int value = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  REQUIRE(errno == 0);
  return value;
}

// A thread named for render `task` (and one thread it started, which takes its name), waiting
// until the object ends.
class RenderThreads {
 public:
  explicit RenderThreads(int task) {
    thread_ = std::thread([this, task] {
      name_this_thread(render_thread_name(task).c_str());
      own_tid = syscall(SYS_gettid);
      std::thread child([this] {
        child_tid = syscall(SYS_gettid);
        wait_for_end();
      });
      wait_for_end();
      child.join();
    });
    while (own_tid.load() == 0 || child_tid.load() == 0) std::this_thread::yield();
  }
  ~RenderThreads() {
    {
      std::lock_guard lock(mutex_);
      ended_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  std::atomic<long> own_tid{0};
  std::atomic<long> child_tid{0};

 private:
  void wait_for_end() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return ended_; });
  }
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool ended_ = false;
};

}  // namespace

TEST_CASE("render priority: the render with the most frames left keeps nice 0 and the others take a step for each tenth fewer") {
  CHECK(render_thread_name(7) == "hf-render-7");
  CHECK(render_thread_name(99999).size() <= 15);  // Linux keeps 15 characters of a thread's name
  const std::map<int, int> nice = balanced_nice({{1, 100}, {2, 90}, {3, 50}, {4, 0}});
  CHECK(nice == std::map<int, int>{{1, 0}, {2, 1}, {3, 5}, {4, 10}});
  CHECK(balanced_nice({{1, 100}, {2, 1}}, 6) == std::map<int, int>{{1, 0}, {2, 6}});
  // One render with frames left (or none): nothing to balance.
  CHECK(balanced_nice({{1, 100}, {2, 0}}).empty());
  CHECK(balanced_nice({{1, 0}, {2, 0}}).empty());
  CHECK(balanced_nice({}).empty());
}

TEST_CASE("render priority: the nice values go to the threads named for each render and to the threads they started") {
  RenderThreads first(70001), second(70002);
  const int floor = apply_render_nice({{70001, 3}, {70002, 0}}, 0);
  CHECK(floor == 0);
  CHECK(nice_of(first.own_tid) == 3);
  CHECK(nice_of(first.child_tid) == 3);
  CHECK(nice_of(second.own_tid) == 0);
  CHECK(nice_of(syscall(SYS_gettid)) == 0);  // a thread not named for a render keeps its value
  // Lowered again: with CAP_SYS_NICE it is lowered; without, it keeps 3 and the floor that keeps
  // the renders' difference is returned (the others are raised by it on the next call).
  const int after = apply_render_nice({{70001, 1}, {70002, 0}}, 0);
  CHECK(nice_of(first.own_tid) == after + 1);
  CHECK(nice_of(first.child_tid) == after + 1);
  apply_render_nice({{70001, 1}, {70002, 0}}, after);
  CHECK(nice_of(first.own_tid) == after + 1);
  CHECK(nice_of(second.own_tid) == after);
  CHECK(nice_of(second.child_tid) == after);
  // A task with no thread named for it: nothing is set, nothing fails.
  CHECK(apply_render_nice({{70003, 5}}, 0) == 0);
}

TEST_CASE("render priority: a job's shorter render gives its share of the cores to the longer one (-v: nice up to)") {
  const std::string dir = temp_dir("jobs-render-priority-" + std::to_string(getpid()));
  const std::string clip = dir + "/clip.mp4";
  // 150 frames of 640x360 with one keyframe, cut at frame 60: two renders of 60 and 90 frames at
  // once on two workers, each long enough for the job to balance them (four times a second).
  REQUIRE(run_program("ffmpeg -v error -y -f lavfi -i testsrc2=s=640x360:r=25:d=6 -c:v libx264 -preset veryfast "
                      "-pix_fmt yuv420p -g 300 " + quoted(clip)) == 0);
  const CommandResult r = run_hazefree("-v -y --backend cpu --workers 2 --chunk-starts 60 " + quoted(clip) + " " +
                                       quoted(dir + "/out.mp4"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  // The highest nice value each render was given, and its frames (from its "render N done" line).
  std::map<int, int> highest, frames;
  const std::regex said(R"(render (\d+): began [^\n]*; nice up to (\d+))");
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), said); it != std::sregex_iterator(); ++it)
    highest[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  const std::regex done(R"(render (\d+) done \([^\n]*\(frames (\d+)-(\d+)\)\))");
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), done); it != std::sregex_iterator(); ++it)
    frames[std::stoi((*it)[1])] = std::stoi((*it)[3]) - std::stoi((*it)[2]) + 1;
  REQUIRE_MESSAGE(highest.size() == 2, r.err);
  REQUIRE_MESSAGE(frames.size() == 2, r.err);
  const int shorter = frames.begin()->second < frames.rbegin()->second ? frames.begin()->first : frames.rbegin()->first;
  const int longer = shorter == frames.begin()->first ? frames.rbegin()->first : frames.begin()->first;
  CHECK(frames[shorter] == 60);
  CHECK(frames[longer] == 90);
  // The shorter render had fewer frames left from the start (60 against 90): a third fewer, three
  // steps at least. (The longer one may take a step too as its last frames are written.)
  CHECK_MESSAGE(highest[shorter] >= 3, r.err);
}

}  // namespace hazefree::test
