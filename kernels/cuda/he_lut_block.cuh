// The HE LUT built by one block (the last block of the HE histogram kernels at 8 bits, in BITS
// mode and at depth): the he_lut rule of SPEC 4 / 7 over integer counts, bit-exact with the
// sequential rule (kernels/equalize_rules.hpp).
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "kernels/equalize_rules.hpp"

namespace hazefree::cuda {

// Entry v of the LUT over `bins` counts (a multiple of kThreads) with the largest code
// `max_code`: exact integer scans, each entry the shared he_code() of its sum. Thread t owns the
// run of bins / kThreads bins from t * bins / kThreads, reads each count with count(i) and hands
// each entry to write(v, code). It keeps the first kHeld counts of its run in registers, so that
// up to kHeld * kThreads bins every count is read once: one scan gives each run's offset and the
// total, and the run holding the first non-empty bin i0 names it (10 bits, 1080p, H100, 256
// threads: 2.9 us against 4.1 with two passes over the counts and two block reductions besides
// the scan). Every thread of the block calls it; it ends with a barrier, so the counts may be
// cleared and the function called again as soon as it returns.
template <int kThreads, int kHeld, typename CountAt, typename Write>
__device__ void build_he_lut_block(int bins, int max_code, CountAt count, Write write) {
  namespace rules = equalize_rules;
  using Scan = cub::BlockScan<std::uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage s_scan;
  __shared__ std::uint32_t s_first_count;
  __shared__ int s_first;
  const int per = bins / kThreads, begin = static_cast<int>(threadIdx.x) * per;
  std::uint32_t held[kHeld];
#pragma unroll
  for (int k = 0; k < kHeld; ++k)
    if (k < per) held[k] = count(begin + k);
  std::uint32_t local = 0;
#pragma unroll
  for (int k = 0; k < kHeld; ++k)
    if (k < per) local += held[k];
  for (int k = kHeld; k < per; ++k) local += count(begin + k);
  if (threadIdx.x == 0) s_first = bins;
  __syncthreads();
  std::uint32_t before = 0, total = 0;
  Scan(s_scan).ExclusiveSum(local, before, total);
  if (before == 0 && local != 0) {  // this run holds the first non-empty bin
    int first = -1;
    std::uint32_t first_count = 0;
#pragma unroll
    for (int k = 0; k < kHeld; ++k)
      if (k < per && first < 0 && held[k] != 0) {
        first = k;
        first_count = held[k];
      }
    for (int k = kHeld; k < per && first < 0; ++k) {
      const std::uint32_t c = count(begin + k);
      if (c != 0) {
        first = k;
        first_count = c;
      }
    }
    s_first = begin + first;
    s_first_count = first_count;
  }
  __syncthreads();
  const int f = s_first;
  const bool identity = f == bins || s_first_count == total;
  const float scale = identity ? 0.f : rules::he_scale(max_code, total, s_first_count);
  // Below i0 every bin is empty, so the sum of bins i0 < u <= v is cum(v) - hist[i0].
  std::uint32_t cum = before;
  auto entry = [&](int v, std::uint32_t c) {
    cum += c;
    if (identity) write(v, v);
    else if (v <= f) write(v, 0);
    else write(v, rules::he_code(cum - s_first_count, scale, max_code));
  };
#pragma unroll
  for (int k = 0; k < kHeld; ++k)
    if (k < per) entry(begin + k, held[k]);
  for (int k = kHeld; k < per; ++k) entry(begin + k, count(begin + k));
  __syncthreads();  // every count is read, and s_first / s_first_count free for the next call
}

}  // namespace hazefree::cuda
