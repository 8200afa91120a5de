// A grid-stride walk over the groups of samples of a rectangle (the HE histogram kernels at 8
// bits and at depth): every thread of the grid takes every (grid size)-th group, so that each
// block has the same share of the work whatever the rectangle's shape.
#pragma once

#include <cstdint>

namespace hazefree::cuda {

// One group: the 16 bytes of samples of a row at p (16 one-byte or 8 two-byte samples, the first
// n valid), little-endian in four words: one 16-byte load where the group is whole and aligned,
// a load per sample otherwise (the invalid ones 0).
template <typename Sample>
__device__ __forceinline__ uint4 load_group(const Sample* p, int n) {
  constexpr int kSamples = 16 / sizeof(Sample), kPerWord = 4 / sizeof(Sample);
  if (n == kSamples && (reinterpret_cast<std::uintptr_t>(p) & 15) == 0)
    return __ldg(reinterpret_cast<const uint4*>(p));
  unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int k = 0; k < kSamples; ++k)
    if (k < n) w[k / kPerWord] |= static_cast<unsigned>(__ldg(p + k)) << (8 * sizeof(Sample) * (k % kPerWord));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// The groups are numbered row by row, groups_per_row to a row; the walk is kept as (row, group)
// so that no division runs per group.
class GroupWalk {
 public:
  __device__ GroupWalk(int rows, int groups_per_row)
      : rows_(rows), groups_per_row_(groups_per_row) {
    const int step = gridDim.x * blockDim.x;
    step_rows_ = step / groups_per_row;
    step_groups_ = step % groups_per_row;
    const int first = blockIdx.x * blockDim.x + threadIdx.x;
    row_ = first / groups_per_row;
    group_ = first % groups_per_row;
  }
  __device__ bool more() const { return row_ < rows_; }
  // This thread's next kCount groups of kSamples samples in rows of `width` samples, all loaded
  // before the caller counts any (several loads in flight): q[u] = load(row, first sample, n)
  // and n[u] = n, the group's samples (0 past the end, where q[u] is zero).
  template <int kCount, int kSamples, typename Load>
  __device__ void load_next(int width, Load load, uint4 (&q)[kCount], int (&n)[kCount]) {
#pragma unroll
    for (int u = 0; u < kCount; ++u) {
      int row = 0, group = 0;
      n[u] = next(row, group) ? min(kSamples, width - kSamples * group) : 0;
      q[u] = n[u] > 0 ? load(row, kSamples * group, n[u]) : make_uint4(0, 0, 0, 0);
    }
  }
  // This thread's next group (false past the end), then a step of the grid.
  __device__ bool next(int& row, int& group) {
    if (row_ >= rows_) return false;
    row = row_;
    group = group_;
    group_ += step_groups_;
    row_ += step_rows_;
    if (group_ >= groups_per_row_) {
      group_ -= groups_per_row_;
      ++row_;
    }
    return true;
  }

 private:
  int rows_, groups_per_row_, step_rows_, step_groups_, row_, group_;
};

}  // namespace hazefree::cuda
