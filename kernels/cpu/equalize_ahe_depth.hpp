// Sliding-window AHE / CLAHE at depth 9..16 on the CPU (SPEC 7): B = 2^min(d, 12) bins, a sample v
// in bin v >> (d - min(d, 12)). Internal to kernels/cpu (used by AdaptiveEqualizer).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/equalize_common.hpp"

namespace hazefree::cpu::detail {

// One equalization of one plane. Scratch (per strip of rows) is kept between calls and grows
// only when the frame size or depth does.
class AheDepthEqualizer {
 public:
  explicit AheDepthEqualizer(int threads) : threads_(threads) {}
  // src -> dst, window radius `radius` (already reduced to the frame), clip limit `limit` in
  // counts (0: plain AHE), each equalized code e written as codes[e] (2^depth entries).
  void run(WideIn src, WideOut dst, int width, int height, int depth, int radius, int limit,
           const std::uint16_t* codes);

  struct Strip {
    std::vector<std::uint16_t> fine;    // width x B column histograms
    std::vector<std::uint16_t> coarse;  // width x K column counts per bucket of 64 bins
    std::vector<std::uint32_t> left_fine, left_coarse;  // the window at x = 0
    std::vector<std::uint32_t> fine_hist, coarse_hist, bucket_excess;  // the sliding window
    // The same in 16 bits, for windows of at most 65535 pixels.
    std::vector<std::uint16_t> left_fine16, fine_hist16, coarse_hist16, bucket_excess16;
  };

 private:
  int threads_;
  int width_ = 0, depth_ = 0;
  std::vector<Strip> strips_;
  std::vector<std::uint8_t> row_lo_, row_hi_;  // bucket range of each source row
  std::vector<std::uint16_t> out_table_;       // cdf -> final code
  const std::uint16_t* table_codes_ = nullptr;
  std::int64_t table_n_ = 0;
  int table_depth_ = 0;
};

}  // namespace hazefree::cpu::detail
