// Private to io/: the clock of stall watching and capture times.
#pragma once

#include <chrono>
#include <cstdint>

namespace hazefree::io::detail {

// Microseconds of the steady clock (not wall time: never jumps).
inline std::int64_t steady_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace hazefree::io::detail
