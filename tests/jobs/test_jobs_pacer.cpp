// The last wave's renders end together (jobs/end_pacer.hpp): who waits, when, and that a wait
// ends when the render behind catches up or the job stops.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "jobs/end_pacer.hpp"

namespace hazefree::jobs {
namespace {

TEST_CASE("end pacer: a render more than the margin ahead waits, in the last wave, while enough others encode") {
  EndPacer pacer(2, 4);  // two others fill the cores; four frames of margin
  pacer.wrote(0, 100);
  pacer.wrote(1, 120);
  pacer.wrote(2, 104);
  CHECK_FALSE(pacer.ahead(0));  // chunks still wait for a worker: the early ones take the next
  pacer.last_wave();
  CHECK(pacer.ahead(0));         // 100 left, 120 behind it
  CHECK(pacer.ahead(2));         // 104 left: 16 frames ahead of 120
  CHECK_FALSE(pacer.ahead(1));   // the one behind never waits
  pacer.wrote(1, 104);
  CHECK_FALSE(pacer.ahead(2));  // level
  CHECK(pacer.ahead(0) == false);  // 100 + 4 is not ahead of 104
  pacer.wrote(0, 99);
  CHECK(pacer.ahead(0));
  CHECK_FALSE(pacer.ahead(7));  // a render that has written nothing is not paced

  SUBCASE("too few others left to fill the cores: nobody waits") {
    pacer.ended(2);
    CHECK_FALSE(pacer.ahead(0));
  }
  SUBCASE("a render that ended is waited for no longer") {
    pacer.wrote(3, 99);
    pacer.ended(1);
    pacer.ended(2);
    CHECK_FALSE(pacer.ahead(0));
  }
}

TEST_CASE("end pacer: a wait ends once the render behind catches up, or at once when the job stops") {
  EndPacer pacer(1, 0);
  pacer.last_wave();
  pacer.wrote(0, 10);
  pacer.wrote(1, 20);
  std::atomic<bool> stop{false};
  std::future<double> waited = std::async(std::launch::async, [&] { return pacer.wait(0, stop); });
  CHECK(waited.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  for (std::int64_t left = 19; left >= 10; --left) pacer.wrote(1, left);
  REQUIRE(waited.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(waited.get() > 0.0);

  pacer.wrote(0, 5);
  std::future<double> stopped = std::async(std::launch::async, [&] { return pacer.wait(0, stop); });
  CHECK(stopped.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  stop = true;
  REQUIRE(stopped.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(pacer.wait(0, stop) < 0.1);  // a stopped job never waits
}

}  // namespace
}  // namespace hazefree::jobs
