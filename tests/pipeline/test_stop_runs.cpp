// Several runs in one process, each waiting on a silent network source (two TCP servers on
// loopback that accept and never send, a UDP port nobody sends to; input.timeout 0, so no stall
// ends the wait): a run's own stop flag (RunHooks::stop) stops that run only, and the stop request
// of a signal (request_stop(), which the program's SIGINT/SIGTERM handler calls) stops them all,
// each within a second.
//
// A stop request holds for the rest of the process: its test comes last in this binary's order
// (ctest runs every test case in a process of its own anyway).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/options.hpp"
#include "pipeline/pipeline.hpp"
#include "support/test_support.hpp"

using namespace hazefree;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kStopWithin = std::chrono::seconds(1);

// A TCP server on loopback that takes one connection and never sends a byte.
class SilentTcpServer {
 public:
  SilentTcpServer() : listening_(test::bound_loopback_socket(SOCK_STREAM, &port_)) { REQUIRE(listen(listening_, 4) == 0); }
  ~SilentTcpServer() {
    if (connection_ >= 0) close(connection_);
    close(listening_);
  }
  std::string url() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  // Whether a run connected within `seconds` (the connection is kept open, silent).
  bool connected_within(double seconds) {
    pollfd waiting{listening_, POLLIN, 0};
    if (poll(&waiting, 1, static_cast<int>(seconds * 1000)) != 1) return false;
    connection_ = accept4(listening_, nullptr, nullptr, SOCK_CLOEXEC);
    return connection_ >= 0;
  }

 private:
  int port_ = 0;
  int listening_ = -1;
  int connection_ = -1;
};

// A UDP port on loopback that nobody sends to (free once this is gone: the run binds it).
std::string silent_udp_url() { return "udp://127.0.0.1:" + std::to_string(test::free_loopback_port(SOCK_DGRAM)); }

// Whether a socket is bound to the UDP port of `url` on loopback (the run opening it), within
// `seconds`. Read from /proc, as nothing can be sent to it.
bool udp_bound_within(const std::string& url, double seconds) {
  char wanted[16];
  std::snprintf(wanted, sizeof wanted, ":%04X ", std::stoi(url.substr(url.rfind(':') + 1)));
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    std::ifstream table("/proc/net/udp");
    std::string line;
    while (std::getline(table, line))
      if (line.find(wanted) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (Clock::now() < until);
  return false;
}

// A live run of `url` on the CPU, input.timeout 0, stopped by `stop` or a stop request.
std::future<RunSummary> start_run(const std::string& url, const std::string& output, const std::atomic<bool>* stop) {
  RunOptions options;
  options.input = url;
  options.output = output;
  options.live = true;
  options.quiet = true;
  options.processing.backend = Backend::cpu;
  apply_set_argument(options, "input.timeout=0");
  finalize_options(options);
  options.hooks.stop = stop;
  return std::async(std::launch::async, [options] { return run_pipeline(options); });
}

// Three runs on silent sources, each with its own stop flag, all waiting for input.
struct ThreeRuns {
  SilentTcpServer first, second;
  std::string udp = silent_udp_url();
  std::string dir = test::temp_dir("stop-runs-" + std::to_string(getpid()));
  std::array<std::atomic<bool>, 3> stop{};
  std::vector<std::future<RunSummary>> runs;

  ThreeRuns() {
    try {
      runs.push_back(start_run(first.url(), output(0), &stop[0]));
      runs.push_back(start_run(second.url(), output(1), &stop[1]));
      runs.push_back(start_run(udp, output(2), &stop[2]));
      REQUIRE(first.connected_within(10));
      REQUIRE(second.connected_within(10));
      REQUIRE(udp_bound_within(udp, 10));
      for (std::future<RunSummary>& run : runs)
        REQUIRE(run.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);  // waiting
    } catch (...) {
      stop_all();
      throw;
    }
  }
  ~ThreeRuns() { stop_all(); }
  // A failed check leaves no run behind (a run's future waits for it).
  void stop_all() {
    for (std::atomic<bool>& flag : stop) flag.store(true);
    for (std::future<RunSummary>& run : runs)
      if (run.valid()) run.wait();
  }
  std::string output(int i) const { return dir + "/out-" + std::to_string(i) + ".mkv"; }

  // Run i ended within a second, stopped before its input opened: nothing written.
  void check_stopped(int i, Clock::time_point asked) {
    CAPTURE(i);
    REQUIRE(runs[i].wait_for(kStopWithin) == std::future_status::ready);
    CHECK(Clock::now() - asked < kStopWithin);
    const RunSummary summary = runs[i].get();
    CHECK(summary.interrupted);
    CHECK(summary.frames_in == 0);
    CHECK_FALSE(std::filesystem::exists(output(i)));
  }
};

}  // namespace

TEST_CASE("stop: a run's own stop flag stops that run only, the others wait on until theirs") {
  ThreeRuns three;
  const auto asked = Clock::now();
  three.stop[1].store(true);
  three.check_stopped(1, asked);
  // The others are still waiting on their sources.
  CHECK(three.runs[0].wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  CHECK(three.runs[2].wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
  CHECK_FALSE(stop_requested());

  const auto rest_asked = Clock::now();
  three.stop[0].store(true);
  three.stop[2].store(true);
  three.check_stopped(0, rest_asked);
  three.check_stopped(2, rest_asked);
}

// Last in this binary: the stop request holds for the rest of the process.
TEST_CASE("stop: the stop request of SIGINT/SIGTERM stops every run of the process") {
  ThreeRuns three;
  const auto asked = Clock::now();
  request_stop();  // what the program's signal handler calls
  for (int i = 0; i < 3; ++i) three.check_stopped(i, asked);
  CHECK(stop_requested());
}
