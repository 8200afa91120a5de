// Long and repeated runs in this process: memory, threads and open files must come back to
// where they were. A long stream of tiny pictures comes through a pipe from a feeder thread (so
// nothing limits its length); many short runs use one tiny file.
#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/options.hpp"
#include "pipeline/pipeline.hpp"
#include "support/test_support.hpp"
#include "test_robustness_support.hpp"

using namespace hazefree;

namespace {

RunOptions parse(std::vector<std::string> words) {
  words.insert(words.begin(), "hazefree");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  RunOptions options;
  std::string message;
  REQUIRE(parse_command_line(static_cast<int>(argv.size()), argv.data(), options, message));
  return options;
}

}  // namespace

TEST_CASE("stress: a long piped stream keeps memory flat and leaves no thread behind") {
  // Sanitizer builds run fewer frames (they are several times slower) and skip the memory
  // figure: their allocators hold freed memory back on purpose.
  const int frames = test::kSanitized ? 10000 : 100000;
  const int early = frames / 10;
  const std::string dir = test::temp_dir("stress-long-" + std::to_string(getpid()));
  const std::string tiny = dir + "/tiny.y4m";
  test::write_y4m_file(tiny, 16, 16, "mono", 3);
  // A first run starts what lives for the whole process (OpenMP's worker threads).
  // One OpenMP thread: on a busy two-core machine every parallel region over a 16x16 picture
  // waits for a descheduled worker, which makes 100k pictures take minutes; this test is about
  // what the stream's length does, not about OpenMP (the short runs below use the default).
  run_pipeline(parse({"-q", "-b", "cpu", "--threads", "1", "--mode", "he", "-f", "null", tiny, "/dev/null"}));
  const long threads_before = test::proc_status_value("Threads");
  const long fds_before = test::open_descriptor_count();

  std::signal(SIGPIPE, SIG_IGN);  // a failed run must not kill the test through the feeder
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  long rss_early = 0;
  bool fed = false;
  std::thread feeder([&] {
    bool ok = test::write_all(fds[1], test::y4m_header(16, 16, "mono"));
    for (int i = 0; ok && i < frames; ++i) {
      ok = test::write_all(fds[1], test::y4m_frame(16, 16, "mono", i));
      // The run is well under way (queues are 4 deep): its working set is established.
      if (i == early) rss_early = test::proc_status_value("VmRSS");
    }
    close(fds[1]);
    fed = ok;
  });
  RunSummary summary;
  try {
    summary = run_pipeline(parse({"-q", "-b", "cpu", "--threads", "1", "--mode", "he", "-f", "null",
                                  "pipe:" + std::to_string(fds[0]), "/dev/null"}));
  } catch (...) {
    close(fds[0]);  // the feeder sees EPIPE (SIGPIPE is ignored) and ends
    feeder.join();
    throw;
  }
  feeder.join();
  close(fds[0]);
  const long rss_end = test::proc_status_value("VmRSS");
  CHECK(fed);
  CHECK(summary.frames_in == frames);
  CHECK(summary.frames_out == frames);
  CHECK(test::proc_status_value("Threads") == threads_before);
  CHECK(test::open_descriptor_count() == fds_before);
  if (!test::kSanitized) {
    INFO("VmRSS after " << early << " frames: " << rss_early << " kB, at the end: " << rss_end << " kB");
    CHECK(rss_early > 0);
    // 90% of the frames later: a leak of even 40 bytes a frame would exceed this.
    CHECK(rss_end - rss_early < 3 * 1024);
  }
}

TEST_CASE("stress: many short runs keep memory, threads and open files flat") {
  const std::string dir = test::temp_dir("stress-short-" + std::to_string(getpid()));
  const std::string in = dir + "/tiny.y4m";
  const std::string out = dir + "/out.y4m";
  test::write_y4m_file(in, 16, 16, "420jpeg", 2);
  const RunOptions options = parse({"-q", "-y", "-b", "cpu", "--mode", "he", in, out});
  constexpr int kWarmup = 20, kRuns = 200;
  long rss_warm = 0, fds_warm = 0, threads_warm = 0;
  for (int i = 0; i < kRuns; ++i) {
    const RunSummary summary = run_pipeline(options);
    REQUIRE(summary.frames_out == 2);
    if (i + 1 == kWarmup) {
      rss_warm = test::proc_status_value("VmRSS");
      fds_warm = test::open_descriptor_count();
      threads_warm = test::proc_status_value("Threads");
    }
  }
  CHECK(test::open_descriptor_count() == fds_warm);
  CHECK(test::proc_status_value("Threads") == threads_warm);
  CHECK(test::folder_entries(dir) == std::vector<std::string>{"out.y4m", "tiny.y4m"});
  if (!test::kSanitized) {
    const long rss_end = test::proc_status_value("VmRSS");
    INFO("VmRSS after " << kWarmup << " runs: " << rss_warm << " kB, after " << kRuns << ": " << rss_end << " kB");
    // 180 more runs: a leak of 16 kB a run (one small frame) would exceed this.
    CHECK(rss_end - rss_warm < 2 * 1024);
  }
}
