// Sliding-window AHE / CLAHE at depth 9..16 on the CPU (SPEC 7): B = 2^min(d, 12) bins, a sample v
// in bin v >> (d - min(d, 12)). Internal to kernels/cpu (used by AdaptiveEqualizer).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/equalize_common.hpp"

namespace hazefree::cpu::detail {

// One equalization of one plane. Scratch (per strip of rows) is kept between calls and made
// afresh only when the frame size, the depth, the mode (AHE or CLAHE) or the AHE column blocks
// (which follow the window) change.
class AheDepthEqualizer {
 public:
  explicit AheDepthEqualizer(int threads) : threads_(threads) {}
  // src -> dst, window radius `radius` (already reduced to the frame), clip limit `limit` in
  // counts (0: plain AHE), each equalized code e written as codes[e] (2^depth entries).
  void run(WideIn src, WideOut dst, int width, int height, int depth, int radius, int limit,
           const std::uint16_t* codes);

  // Scratch of one strip of rows, for the mode in use. The arrays read as whole vectors start at
  // a 64-byte boundary inside their std::vector (which holds spare elements for that).
  struct AheScratch {
    // Per image column, over the 2r+1 window rows: the count of every bin summed from the start
    // of the column's block (bucket by bucket, 16 bins each, a bucket's neighbouring columns side
    // by side), the count of every bin per superblock of columns, and the count per bucket. The
    // bins in 8-bit counters (column_bins8) for windows of at most 63 rows.
    std::vector<std::uint16_t> column_bins, super_bins, column_buckets;
    std::vector<std::uint8_t> column_bins8;
    std::vector<std::uint32_t> left_buckets;  // the window's bucket counts at x = 0
    // The sliding window in 16-bit counters (n <= 65535) or 32-bit: per bucket its bins as of
    // bucket_stamp (the x they were last brought up to date at in this row), and its count.
    std::vector<std::uint16_t> window_bins16, window_buckets16;
    std::vector<std::uint32_t> window_bins32, window_buckets32;
    std::vector<int> bucket_stamp;
    // Windows of at most 47 rows, counted directly: the bins of the strip's window rows, padded
    // by r reflected columns on each side.
    std::vector<std::int16_t> direct_bins;
  };
  struct ClaheScratch {
    std::vector<std::uint16_t> fine;    // width x B column histograms
    std::vector<std::uint16_t> coarse;  // width x K column counts per bucket of 64 bins
    std::vector<std::uint32_t> left_fine, left_coarse;  // the window at x = 0
    std::vector<std::uint32_t> fine_hist, coarse_hist, bucket_excess;  // the sliding window
    // The same in 16 bits, for windows of at most 65535 pixels.
    std::vector<std::uint16_t> left_fine16, fine_hist16, coarse_hist16, bucket_excess16;
    // Windows of at most 127 rows, moved by samples: the bins of the strip's window rows column by
    // column (padded by r reflected columns on each side), and the window's clipped count per
    // 16-bin bucket.
    std::vector<std::uint16_t> sample_columns, bucket_clipped16;
  };
  struct Strip {
    AheScratch ahe;
    ClaheScratch clahe;
  };

 private:
  int threads_;
  int width_ = 0, depth_ = 0, block_log2_ = 0, super_log2_ = 0;
  bool clip_ = false;  // the scratch is CLAHE's
  bool wide_counters_ = false;  // the scratch is for windows of more than 255 rows
  bool byte_lines_ = false;     // the AHE column lines are 8-bit
  std::vector<Strip> strips_;
  std::vector<std::uint8_t> row_lo_, row_hi_;  // bucket range of each source row
  std::vector<std::uint16_t> out_table_;       // cdf -> final code
  const std::uint16_t* table_codes_ = nullptr;
  std::int64_t table_n_ = 0;
  int table_depth_ = 0;
};

}  // namespace hazefree::cpu::detail
