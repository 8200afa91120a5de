// Sliding-window AHE/CLAHE at depth 9..16 on the GPU (SPEC 7), bit-exact with the CPU backend
// (kernels/cpu/equalize_ahe_depth.cpp), and at 8 bits (one-byte samples, 256 bins: the 8-bit
// rules' codes) where it is the faster kernel: every rule comes from kernels/equalize_rules.hpp.
#include "kernels/cuda/ahe_depth_cuda.hpp"

#include <algorithm>
#include <stdexcept>

#include "kernels/color_fixed_rules.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/device_frame.hpp"
#include "kernels/cuda/equalize_cuda.hpp"
#include "kernels/cuda/equalize_depth_device.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/group_walk.cuh"
#include "kernels/cuda/he_lut_block.cuh"
#include "kernels/cuda/last_block.cuh"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cuda {
namespace rules = equalize_rules;

namespace {

// ---- AHE / CLAHE at depth ---------------------------------------------------------------------

// The sliding kernel's block: four warps, one output column per lane.
struct AheDepthPolicy {
  static constexpr int kAdWarps = 4;
  static constexpr int kAdThreads = kAdWarps * 32;
  static constexpr int kAdTileWidth = kAdWarps * 32;  // one output column per lane
};
constexpr int kFineLog2 = 4;
constexpr int kFine = 1 << kFineLog2;          // fine bins per bucket
constexpr int kBuckets = 256;                  // buckets of 4096 bins (fewer used below 12 bits)
constexpr int kLaneBuckets = kBuckets / 32;    // lane l keeps buckets l, l + 32, ..., l + 224

// Column bucket counts are stored lane-major, bucket k at (k % 32) * 8 + k / 32: a lane's eight
// buckets are one 16-byte load, and neighbouring buckets (a column's values spread over a few
// neighbours) belong to different lanes, which then update their fine bins side by side.
__device__ __forceinline__ int bucket_slot(int k) { return (k & 31) * kLaneBuckets + (k >> 5); }

}  // namespace

struct AheDepthArgs {
  const void* src[3];          // Sample planes: uint8_t at depth 8, uint16_t above
  void* dst[3];
  int src_stride, dst_stride;  // samples
  int src_shift, dst_shift;
  int width, height, planes;
  int radius, n, limit;
  bool limited;
  bool code32;  // M n + n / 2 < 2^32: the output code in 32-bit integers
  int depth, bins, bin_shift, max_code;
  int tiles_x, tiles_y, tile_rows;
  std::uint16_t* fine;    // per block: (AheDepthPolicy::kAdTileWidth + 2r) x bins, zero on entry and exit
  std::uint16_t* coarse;  // per block: (AheDepthPolicy::kAdTileWidth + 2r) x kBuckets (lane-major), likewise
  // Windows moving by samples: each plane's bins transposed and padded by r on every side with
  // the reflected samples (image column x at (x + r) * column_pitch, image row y at y + r), so
  // that a column's window rows are consecutive, a warp reads them in one transaction, and every
  // address is a column's base plus a constant: no reflection in the sliding.
  const std::uint16_t* columns[3];
  int column_pitch;
};

namespace {

__device__ __forceinline__ int ahe_bin(const AheDepthArgs& a, unsigned sample) {
  return ((sample >> a.src_shift) & a.max_code) >> a.bin_shift;
}

// Plane p of the source and of the destination, as Sample (selects, not indices: an indexed
// parameter array would be copied to local memory).
template <typename Sample>
__device__ __forceinline__ const Sample* src_plane(const AheDepthArgs& a, int p) {
  return static_cast<const Sample*>(p == 0 ? a.src[0] : (p == 1 ? a.src[1] : a.src[2]));
}
template <typename Sample>
__device__ __forceinline__ Sample* dst_plane(const AheDepthArgs& a, int p) {
  return static_cast<Sample*>(p == 0 ? a.dst[0] : (p == 1 ? a.dst[1] : a.dst[2]));
}

// bins[x * pitch + y] = the bin of src[reflect(y - r)][reflect(x - r)] for x < width + 2r and
// y < height + 2r, through 32 x 32 tiles in shared memory (reads and writes coalesced). Block
// (32, 8), grid (tiles across, tiles down, planes) over the padded plane.
template <typename Sample>
__global__ void transpose_bins_kernel(AheDepthArgs a, std::uint16_t* bins0, std::uint16_t* bins1,
                                      std::uint16_t* bins2) {
  __shared__ std::uint16_t tile[32][33];
  const int p = blockIdx.z;
  const Sample* src = src_plane<Sample>(a, p);
  std::uint16_t* out = p == 0 ? bins0 : (p == 1 ? bins1 : bins2);
  const int bx = blockIdx.x * 32, by = blockIdx.y * 32;
  const int r = a.radius, pw = a.width + 2 * r, ph = a.height + 2 * r;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const int x = bx + threadIdx.x, y = by + k;
    if (x < pw && y < ph) {
      const int sy = rules::reflect101(y - r, a.height), sx = rules::reflect101(x - r, a.width);
      tile[k][threadIdx.x] = static_cast<std::uint16_t>(ahe_bin(a, src[static_cast<std::ptrdiff_t>(sy) * a.src_stride + sx]));
    }
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const int x = bx + k, y = by + threadIdx.x;
    if (x < pw && y < ph) out[static_cast<std::ptrdiff_t>(x) * a.column_pitch + y] = tile[threadIdx.x][k];
  }
}

// counts[index] += sign (+1 or -1) on a 16-bit counter, as a 32-bit atomic on the word holding
// it: the result is not waited for (a reduction in flight, where a plain read-modify-write would
// stall on each counter), and any order of the adds gives the exact counts, none of which ever
// leaves 0..65535 in the end.
__device__ __forceinline__ void add_count(std::uint16_t* counts, std::size_t index, int sign) {
  unsigned* word = reinterpret_cast<unsigned*>(counts) + (index >> 1);
  const unsigned one = 1u << (16 * (index & 1));
  atomicAdd(word, sign > 0 ? one : 0u - one);
}
__device__ __forceinline__ void add_count(std::uint32_t* counts, std::size_t index, int sign) {
  atomicAdd(counts + index, sign > 0 ? 1u : 0u - 1u);
}

// The same, returning the counter's value before the step.
__device__ __forceinline__ std::uint32_t move_sample(std::uint16_t* counts, int index, int sign) {
  unsigned* word = reinterpret_cast<unsigned*>(counts) + (index >> 1);
  const unsigned shift = 16 * (index & 1);
  return (atomicAdd(word, sign > 0 ? 1u << shift : 0u - (1u << shift)) >> shift) & 0xffffu;
}
__device__ __forceinline__ std::uint32_t move_sample(std::uint32_t* counts, int index, int sign) {
  return atomicAdd(counts + static_cast<std::size_t>(index), sign > 0 ? 1u : 0u - 1u);
}

// A window moving by samples under CLAHE: bin `in` gains a sample and bin `out` loses one, and
// each bucket's clipped count kept[slot] (sum of min(h, L)) follows: a gain counts below the
// limit, a loss at or below it. Each step is judged by its own counter's value before it, so
// any order of the warp's steps gives the exact counts.
template <typename Count>
__device__ __forceinline__ void move_clipped(Count* win, std::uint32_t* kept, int in, int out, std::uint32_t limit) {
  const std::uint32_t gained = move_sample(win, in, +1), lost = move_sample(win, out, -1);
  if (gained < limit) atomicAdd(&kept[bucket_slot(in >> kFineLog2)], 1u);
  if (lost <= limit) atomicSub(&kept[bucket_slot(out >> kFineLog2)], 1u);
}

// Adds (sign +1) or removes (-1) rows reflect(y - r .. y + r) to or from the column histograms of
// the tile, one thread per column, eight samples loaded before their eight updates.
template <typename Sample>
__device__ void count_columns(const AheDepthArgs& a, const Sample* src, int x0, int ncols,
                              int y, int sign, std::uint16_t* fine, std::uint16_t* coarse) {
  const int r = a.radius;
  for (int j = threadIdx.x; j < ncols; j += blockDim.x) {
    const int c = rules::reflect101(x0 - r + j, a.width);
    const std::size_t f = static_cast<std::size_t>(j) * a.bins;
    const std::size_t q = static_cast<std::size_t>(j) * kBuckets;
    for (int k0 = -r; k0 <= r; k0 += 8) {
      int b[8];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        b[u] = k0 + u <= r ? ahe_bin(a, src[static_cast<std::ptrdiff_t>(rules::reflect101(y + k0 + u, a.height)) * a.src_stride + c])
                           : -1;
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (b[u] >= 0) {
          add_count(fine, f + b[u], sign);
          add_count(coarse, q + bucket_slot(b[u] >> kFineLog2), sign);
        }
    }
  }
}

// rules::ahe_code, in 32 bits where M n + n / 2 fits them (12 bits and windows to 1023), a
// third of the 64-bit division's instructions.
__device__ __forceinline__ int window_code(const AheDepthArgs& a, std::uint32_t cdf) {
  if (a.code32)
    return static_cast<int>((static_cast<std::uint32_t>(a.max_code) * cdf + static_cast<std::uint32_t>(a.n / 2)) /
                            static_cast<std::uint32_t>(a.n));
  return rules::ahe_code(cdf, a.n, a.max_code);
}

__device__ __forceinline__ std::uint32_t excess_part(std::uint32_t h, std::uint32_t limit) {
  return h > limit ? h - limit : 0u;
}

// Count i (0..7) of eight 16-bit counts loaded as one uint4.
__device__ __forceinline__ std::uint32_t count_of(const uint4& q, int i) {
  const unsigned w = i < 2 ? q.x : (i < 4 ? q.y : (i < 6 ? q.z : q.w));
  return (w >> (16 * (i & 1))) & 0xffffu;
}

// One bucket of the window: its 16 fine bins += entering column's - leaving column's (either
// pointer may be null: nothing to add or take); returns the bucket's excess over `limit`
// (CLAHE), 0 without clipping. With 16-bit window counters, two counters per word: every true
// count stays in 0..65535, so the packed 32-bit sums come out exact.
template <typename Count>
__device__ __forceinline__ std::uint32_t move_bucket(Count* win, const std::uint16_t* enter,
                                                     const std::uint16_t* leave, bool clip,
                                                     std::uint32_t limit) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const uint4* en = reinterpret_cast<const uint4*>(enter);
  const uint4* lv = reinterpret_cast<const uint4*>(leave);
  uint4 e[2], l[2];
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    e[q] = enter ? en[q] : zero;
    l[q] = leave ? lv[q] : zero;
  }
  std::uint32_t excess = 0;
  if constexpr (sizeof(Count) == 2) {
    uint4* h4 = reinterpret_cast<uint4*>(win);
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      uint4 h = h4[q];
      h.x += e[q].x - l[q].x;
      h.y += e[q].y - l[q].y;
      h.z += e[q].z - l[q].z;
      h.w += e[q].w - l[q].w;
      h4[q] = h;
      if (clip) {
        const unsigned words[4] = {h.x, h.y, h.z, h.w};
#pragma unroll
        for (int k = 0; k < 4; ++k)
          excess += excess_part(words[k] & 0xffffu, limit) + excess_part(words[k] >> 16, limit);
      }
    }
  } else {
    uint4* h4 = reinterpret_cast<uint4*>(win);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint4 h = h4[q];
      const uint4& eq = e[q / 2];
      const uint4& lq = l[q / 2];
      const unsigned ew0 = (q & 1) ? eq.z : eq.x, ew1 = (q & 1) ? eq.w : eq.y;
      const unsigned lw0 = (q & 1) ? lq.z : lq.x, lw1 = (q & 1) ? lq.w : lq.y;
      h.x += (ew0 & 0xffffu) - (lw0 & 0xffffu);
      h.y += (ew0 >> 16) - (lw0 >> 16);
      h.z += (ew1 & 0xffffu) - (lw1 & 0xffffu);
      h.w += (ew1 >> 16) - (lw1 >> 16);
      h4[q] = h;
      if (clip)
        excess += excess_part(h.x, limit) + excess_part(h.y, limit) + excess_part(h.z, limit) +
                  excess_part(h.w, limit);
    }
  }
  return excess;
}

// The excess of one bucket of the window as it stands.
template <typename Count>
__device__ __forceinline__ std::uint32_t bucket_excess(const Count* win, std::uint32_t limit) {
  std::uint32_t excess = 0;
#pragma unroll
  for (int i = 0; i < kFine; ++i) excess += excess_part(win[i], limit);
  return excess;
}

// Each warp's window goes right along one row and left along the next (moved down one row at
// the end of each, by the 2r + 1 pixels entering and leaving), so one window histogram per warp
// is all the shared memory it needs. Two levels: 256 buckets of 16 bins. Lane l keeps the counts
// (and for CLAHE the excess) of buckets l, l + 32, ..., l + 224 in registers, as the 8-bit
// kernel keeps its 256 bins; the fine bins of the window are in shared memory. A step moves the
// bucket counts by the entering and leaving columns' (one 16-byte load each per lane), and the
// 16 fine bins of each bucket either column has samples in, by the lane owning it: a column
// whose values spread over up to 32 neighbouring buckets costs each lane at most one bucket.
// The cdf at the centre value: the buckets below its own, plus its own bucket's fine bins up to
// it, in one warp sum, kept by the lane whose pixel it is; each lane makes its code (a division)
// once the warp's 32 windows are done.
// kRowsPerLane > 0 (windows of at most 32 kRowsPerLane rows, used up to 511): no column fine
// histograms; the fine bins of the window move by its 2r + 1 entering and 2r + 1 leaving samples
// themselves, lane l taking rows l, l + 32, ..., read from the padded column-major bins
// `a.columns` (one coalesced read per 32 rows, at a constant offset from the column's base) a
// step before they are counted. On noisy content this beats the
// buckets of two columns at every window to 511, and the tile's columns then keep only their
// 512-byte bucket counts, which stay in L2. Under CLAHE not even those: each bucket's clipped
// count (sum of min(h, L)) lives in shared memory, kept by the samples' updates, and stands in
// for the bucket count in the cdf, the excess being n minus their sum (12-bit 1080p, H100,
// window 255: 3.99 ms against 4.58 with the columns' counts and each bucket's excess).
// kClip: CLAHE (a.limit > 0), AHE otherwise; a parameter of the kernel so that neither carries
// the other's branches in its sliding.
template <typename Sample, typename Count, int kRowsPerLane, bool kClip>
__global__ void __launch_bounds__(AheDepthPolicy::kAdThreads) ahe_depth_kernel(AheDepthArgs a) {
  constexpr bool kPixels = kRowsPerLane > 0;
  extern __shared__ __align__(16) unsigned char s_raw[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = a.radius, w = a.width, h = a.height, bins = a.bins;
  const int span = AheDepthPolicy::kAdTileWidth + 2 * r;
  // This warp's window: fine bins, then the bucket counts staged for the move down a row.
  const std::size_t warp_bytes =
      static_cast<std::size_t>(bins) * sizeof(Count) + (kPixels ? 2 : 1) * kBuckets * sizeof(std::uint32_t);
  Count* win = reinterpret_cast<Count*>(s_raw + warp * warp_bytes);
  std::uint32_t* stage = reinterpret_cast<std::uint32_t*>(s_raw + warp * warp_bytes + static_cast<std::size_t>(bins) * sizeof(Count));
  // kPixels with CLAHE: each bucket's clipped count, sum of min(h, L) over its bins (lane-major).
  std::uint32_t* kept_of = stage + kBuckets;
  std::uint16_t* fine = kPixels ? nullptr : a.fine + static_cast<std::size_t>(blockIdx.x) * span * bins;
  std::uint16_t* coarse = a.coarse + static_cast<std::size_t>(blockIdx.x) * span * kBuckets;
  const std::uint32_t limit = static_cast<std::uint32_t>(a.limit);
  constexpr bool clip = kClip;
  // Windows moving by samples under CLAHE need no bucket counts from the columns: the samples'
  // steps keep each bucket's clipped count (kept_of), and the excess is n minus their sum.
  constexpr bool kept_mode = kPixels && clip;
  const int tiles_per_plane = a.tiles_x * a.tiles_y;
  const int total = tiles_per_plane * a.planes;
  auto column_buckets = [&](std::size_t j) {
    return *reinterpret_cast<const uint4*>(coarse + j * kBuckets + lane * kLaneBuckets);
  };
  auto column_fine = [&](std::size_t j, int k) { return fine + j * bins + k * kFine; };

  for (int tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const int p = tile / tiles_per_plane;
    const int tx = (tile % tiles_per_plane) % a.tiles_x, ty = (tile % tiles_per_plane) / a.tiles_x;
    const int x0 = tx * AheDepthPolicy::kAdTileWidth, y0 = ty * a.tile_rows;
    const int y1 = min(h, y0 + a.tile_rows);
    const int ncols = min(AheDepthPolicy::kAdTileWidth, w - x0) + 2 * r;
    const Sample* src = src_plane<Sample>(a, p);
    Sample* dst = dst_plane<Sample>(a, p);
    const std::uint16_t* tcols = p == 0 ? a.columns[0] : (p == 1 ? a.columns[1] : a.columns[2]);

    if constexpr (kPixels) {
      // Each warp counts whole columns: the column's 2r + 1 bins (consecutive in `tcols`) into
      // shared counters, written out as the column's 256 bucket counts (no clearing needed).
      std::uint32_t* counts = kept_of;  // free until the rows begin
      for (int j = warp; j < (kept_mode ? 0 : ncols); j += AheDepthPolicy::kAdWarps) {
#pragma unroll
        for (int i = 0; i < kLaneBuckets; ++i) counts[lane * kLaneBuckets + i] = 0;
        __syncwarp();
        const std::uint16_t* col = tcols + static_cast<std::ptrdiff_t>(x0 + j) * a.column_pitch + y0;
        for (int k = lane; k <= 2 * r; k += 32) atomicAdd(&counts[bucket_slot(col[k] >> kFineLog2)], 1u);
        __syncwarp();
        const std::uint32_t* mine = counts + lane * kLaneBuckets;
        *reinterpret_cast<uint4*>(coarse + static_cast<std::size_t>(j) * kBuckets + lane * kLaneBuckets) =
            make_uint4(mine[0] | (mine[1] << 16), mine[2] | (mine[3] << 16), mine[4] | (mine[5] << 16),
                       mine[6] | (mine[7] << 16));
        __syncwarp();
      }
    } else {
      count_columns(a, src, x0, ncols, y0, +1, fine, coarse);
    }
    __syncthreads();

    const int xs = x0 + warp * 32;
    const bool active = xs < w;
    const int count = active ? min(32, w - xs) : 0;
    int cur = 0;  // the window's pixel in the warp's 32 (image column xs + cur)
    if (active) {  // the window at (xs, y0): its 2r + 1 columns
      for (int i = lane; i < bins; i += 32) win[i] = 0;
      __syncwarp();
      std::uint32_t c[kLaneBuckets] = {};
      const uint4 none4 = make_uint4(0, 0, 0, 0);
      uint4 next = kept_mode ? none4 : column_buckets(static_cast<std::size_t>(warp * 32));
      for (int m = 0; m <= 2 * r; ++m) {
        const std::size_t j = static_cast<std::size_t>(warp * 32 + m);
        const uint4 q = next;
        if (m < 2 * r && !kept_mode) next = column_buckets(j + 1);
        if constexpr (kPixels) {  // the column's samples, a row per lane
          const std::uint16_t* col = tcols + static_cast<std::ptrdiff_t>(xs + m) * a.column_pitch + y0;
          for (int k = lane; k <= 2 * r; k += 32) add_count(win, col[k], +1);
        }
#pragma unroll
        for (int i = 0; i < kLaneBuckets; ++i) {
          const std::uint32_t n = count_of(q, i);
          c[i] += n;
          if (!kPixels && n) {
            const int k = lane + 32 * i;
            move_bucket(win + k * kFine, column_fine(j, k), nullptr, false, 0u);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < kLaneBuckets; ++i) stage[lane * kLaneBuckets + i] = c[i];
      if (kept_mode) {  // each bucket's clipped count
        __syncwarp();
#pragma unroll
        for (int i = 0; i < kLaneBuckets; ++i) {
          const int k = lane + 32 * i;  // below 12 bits the window has fewer buckets
          const Count* hk = win + k * kFine;
          std::uint32_t kept = 0;
          if (k * kFine < bins)
#pragma unroll
            for (int j = 0; j < kFine; ++j) kept += min(static_cast<std::uint32_t>(hk[j]), limit);
          kept_of[lane * kLaneBuckets + i] = kept;
        }
      }
    }

    for (int y = y0; y < y1; ++y) {
      if (y > y0) {
        __syncthreads();  // every warp is done with the columns of row y - 1
        const int ya = rules::reflect101(y + r, h), yr = rules::reflect101(y - r - 1, h);
        const Sample* row_add = src + static_cast<std::ptrdiff_t>(ya) * a.src_stride;
        const Sample* row_sub = src + static_cast<std::ptrdiff_t>(yr) * a.src_stride;
        for (int j = threadIdx.x; j < (kept_mode ? 0 : ncols); j += blockDim.x) {
          const int col = rules::reflect101(x0 - r + j, w);
          const int ba = ahe_bin(a, row_add[col]), bs = ahe_bin(a, row_sub[col]);
          const std::size_t f = static_cast<std::size_t>(j) * bins;
          const std::size_t q = static_cast<std::size_t>(j) * kBuckets;
          if constexpr (!kPixels) {
            add_count(fine, f + ba, +1);
            add_count(fine, f + bs, -1);
          }
          add_count(coarse, q + bucket_slot(ba >> kFineLog2), +1);
          add_count(coarse, q + bucket_slot(bs >> kFineLog2), -1);
        }
        if (active) {  // the window down one row where it stands
          for (int m = lane; m <= 2 * r; m += 32) {
            const int col = rules::reflect101(xs + cur - r + m, w);
            const int ba = ahe_bin(a, row_add[col]), bs = ahe_bin(a, row_sub[col]);
            if (kept_mode) {
              move_clipped(win, kept_of, ba, bs, limit);
            } else {
              add_count(win, ba, +1);
              add_count(win, bs, -1);
              atomicAdd(&stage[bucket_slot(ba >> kFineLog2)], 1u);
              atomicSub(&stage[bucket_slot(bs >> kFineLog2)], 1u);
            }
          }
        }
        __syncthreads();  // the columns of row y are complete
      }
      if (!active) continue;
      __syncwarp();
      std::uint32_t c[kLaneBuckets], ex[kLaneBuckets];
      // With 16-bit window counters the moving samples' path keeps the bucket counts two to a
      // word, moved by the columns' packed counts as they load (every true count fits 16 bits,
      // so the packed sums are exact).
      constexpr bool packed_mode = kPixels && sizeof(Count) == 2 && !clip;
      std::uint32_t packed[kLaneBuckets / 2];
#pragma unroll
      for (int i = 0; i < kLaneBuckets; ++i) {
        // kept_mode: the clipped counts, with no excess left to take from them.
        c[i] = kept_mode ? kept_of[lane * kLaneBuckets + i] : stage[lane * kLaneBuckets + i];
        if (packed_mode && (i & 1)) packed[i / 2] = c[i - 1] | (c[i] << 16);
        // A bucket holding at most L samples has no bin above L.
        ex[i] = clip && !kept_mode && c[i] > limit ? bucket_excess(win + (lane + 32 * i) * kFine, limit) : 0u;
      }
      // kPixels: this lane's window rows are y - r + lane + 32 t for t <= last_row (at padded
      // rows y + lane + 32 t of the column-major bins).
      const int last_row = (2 * r - lane) >> 5;
      const Sample* srow = src + static_cast<std::ptrdiff_t>(y) * a.src_stride;
      // Right along row y0 and every other row after it, left along the others.
      const int step = cur == 0 ? 1 : -1;
      // The entering and leaving columns of the window at pixel `at`, coming from at - step.
      auto entering = [&](int at) {
        return static_cast<std::size_t>(warp * 32 + (step > 0 ? at + 2 * r : at));
      };
      auto leaving = [&](int at) {
        return static_cast<std::size_t>(warp * 32 + (step > 0 ? at - 1 : at + 1 + 2 * r));
      };
      // What a step needs is loaded a step ahead: the entering and leaving columns' bucket
      // counts, and (kPixels) the bins entering and leaving (rows past the window stay 0 in
      // both, and cancel). Two sets take turns, so that a step loads into the set the step
      // before it used, with no copies between them.
      struct Ahead {
        uint4 qe, ql;
        int enter[kPixels ? kRowsPerLane : 1], leave[kPixels ? kRowsPerLane : 1];
      };
      Ahead odd{}, even{};
      auto load_ahead = [&](Ahead& to, int at) {
        if constexpr (!kept_mode) {
          to.qe = column_buckets(entering(at));
          to.ql = column_buckets(leaving(at));
        }
        if constexpr (kPixels) {
          const std::uint16_t* ce = tcols + static_cast<std::ptrdiff_t>(x0 + static_cast<int>(entering(at))) * a.column_pitch + y + lane;
          const std::uint16_t* cl = tcols + static_cast<std::ptrdiff_t>(x0 + static_cast<int>(leaving(at))) * a.column_pitch + y + lane;
#pragma unroll
          for (int t = 0; t < kRowsPerLane; ++t)
            if (t <= last_row) {
              to.enter[t] = ce[32 * t];
              to.leave[t] = cl[32 * t];
            }
        }
      };
      // The window one column on, with the set `now`, loading the next step's into `next`.
      auto advance = [&](int done, Ahead& now, Ahead& next) {
        cur += step;
        const std::size_t je = entering(cur), jl = leaving(cur);
        if (done + 1 < count) load_ahead(next, cur + step);
        const uint4 qe = now.qe, ql = now.ql;
        if constexpr (kPixels) {
          if constexpr (!clip && !packed_mode)
#pragma unroll
            for (int i = 0; i < kLaneBuckets; ++i) c[i] += count_of(qe, i) - count_of(ql, i);
          if constexpr (packed_mode) {
            packed[0] += qe.x - ql.x;
            packed[1] += qe.y - ql.y;
            packed[2] += qe.z - ql.z;
            packed[3] += qe.w - ql.w;
          }
#pragma unroll
          for (int t = 0; t < kRowsPerLane; ++t) {
            const int be = now.enter[t], bl = now.leave[t];
            if (be == bl) continue;
            if constexpr (clip) {
              move_clipped(win, kept_of, be, bl, limit);
            } else {
              add_count(win, be, +1);
              add_count(win, bl, -1);
            }
          }
          __syncwarp();
          if constexpr (clip) {
            const uint4* k4 = reinterpret_cast<const uint4*>(kept_of + lane * kLaneBuckets);
            const uint4 lo = k4[0], hi = k4[1];
            c[0] = lo.x, c[1] = lo.y, c[2] = lo.z, c[3] = lo.w;
            c[4] = hi.x, c[5] = hi.y, c[6] = hi.z, c[7] = hi.w;
          }
        } else {
#pragma unroll
          for (int i = 0; i < kLaneBuckets; ++i) {
            const std::uint32_t ne = count_of(qe, i), nl = count_of(ql, i);
            if ((ne | nl) == 0) continue;
            c[i] += ne - nl;
            const int k = lane + 32 * i;
            const std::uint32_t e = move_bucket(win + k * kFine, ne ? column_fine(je, k) : nullptr,
                                                nl ? column_fine(jl, k) : nullptr, clip, limit);
            if constexpr (clip) ex[i] = e;
          }
        }
      };
      // Lane l's pixel is xs + l: its bin is handed to the steps by a shuffle, and the lane keeps
      // the counts of its own window (below the centre, and the excess), from which it makes its
      // code once the warp's 32 windows are done: one division per lane, not one per step.
      const int own_bin = lane < count ? ahe_bin(a, srow[xs + lane]) : 0;
      std::uint32_t own_below = 0, own_excess = 0;
      auto evaluate = [&]() {
        const int v = __shfl_sync(0xffffffffu, own_bin, cur);
        const int kv = v >> kFineLog2, top = v & (kFine - 1);
        std::uint32_t below = 0, excess = 0;  // kept_mode: the sum of the clipped counts
#pragma unroll
        for (int i = 0; i < kLaneBuckets; ++i) {
          if (packed_mode) c[i] = (packed[i / 2] >> (16 * (i & 1))) & 0xffffu;
          if (lane + 32 * i < kv) below += c[i] - ex[i];
          excess += kept_mode ? c[i] : ex[i];
        }
        if (lane <= top) {
          const std::uint32_t hv = win[kv * kFine + lane];
          below += clip ? min(hv, limit) : hv;
        }
        if (kept_mode && a.n < 65536) {  // both sums in one reduction: each is at most n
          const std::uint32_t both = __reduce_add_sync(0xffffffffu, below | (excess << 16));
          below = both & 0xffffu;
          excess = static_cast<std::uint32_t>(a.n) - (both >> 16);
        } else {
          below = __reduce_add_sync(0xffffffffu, below);
          if constexpr (clip) {
            excess = __reduce_add_sync(0xffffffffu, excess);
            if (kept_mode) excess = static_cast<std::uint32_t>(a.n) - excess;
          }
        }
        if (lane == cur) {
          own_below = below;
          own_excess = excess;
        }
      };
      if (count > 1) load_ahead(odd, cur + step);
      evaluate();
      for (int done = 1; done < count; done += 2) {
        advance(done, odd, even);
        evaluate();
        if (done + 1 == count) break;
        advance(done + 1, even, odd);
        evaluate();
      }
      __syncwarp();
#pragma unroll
      for (int i = 0; i < kLaneBuckets; ++i) stage[lane * kLaneBuckets + i] = c[i];
      if (lane < count) {
        const std::uint32_t cdf = clip ? rules::clahe_cdf(own_below, own_excess, own_bin, bins) : own_below;
        const int code = final_code(window_code(a, cdf), a.limited, a.depth);
        dst[static_cast<std::ptrdiff_t>(y) * a.dst_stride + xs + lane] = static_cast<Sample>(code << a.dst_shift);
      }
    }
    __syncthreads();  // every warp is done with the columns
    if constexpr (kPixels) continue;  // the next tile's counts overwrite these
    // Back to zero for the next tile: the rows counted taken out again, or for large windows
    // (2 (2r + 1) atomics per column cost more than bins / 8 vector stores) plain zeros.
    if (2 * (2 * r + 1) > bins / 8) {
      const uint4 zero = make_uint4(0, 0, 0, 0);
      uint4* f4 = reinterpret_cast<uint4*>(fine);
      uint4* q4 = reinterpret_cast<uint4*>(coarse);
      const std::size_t nf = static_cast<std::size_t>(ncols) * bins / 8;
      const std::size_t nq = static_cast<std::size_t>(ncols) * kBuckets / 8;
      for (std::size_t i = threadIdx.x; i < nf; i += blockDim.x) f4[i] = zero;
      for (std::size_t i = threadIdx.x; i < nq; i += blockDim.x) q4[i] = zero;
    } else {
      count_columns(a, src, x0, ncols, y1 - 1, -1, fine, coarse);
    }
    __syncthreads();
  }
}

// The AHE (clip false) or CLAHE instance of ahe_depth_kernel<Sample, Count, kRowsPerLane>.
template <typename Sample, typename Count, int kRowsPerLane>
void (*ahe_depth_instance(bool clip))(AheDepthArgs) {
  return clip ? ahe_depth_kernel<Sample, Count, kRowsPerLane, true> : ahe_depth_kernel<Sample, Count, kRowsPerLane, false>;
}

}  // namespace

void AheDepthCuda::apply(const DevicePlaneU16* src, const DevicePlaneU16* dst, int planes,
                         int depth, const AheParams& params, bool limited, cudaStream_t stream) {
  AheDepthArgs a{};
  set_planes(a, src, dst, planes);
  a.src_shift = src[0].shift;
  a.dst_shift = dst[0].shift;
  run<std::uint16_t>(a, src[0].width, src[0].height, planes, depth, params, limited, stream);
}

void AheDepthCuda::apply(const DevicePlaneU8* src, const DevicePlaneU8* dst, int planes,
                         const AheParams& params, bool limited, cudaStream_t stream) {
  AheDepthArgs a{};
  set_planes(a, src, dst, planes);
  run<std::uint8_t>(a, src[0].width, src[0].height, planes, 8, params, limited, stream);
}

template <typename Sample>
void AheDepthCuda::run(AheDepthArgs& a, int w, int h, int planes, int depth, const AheParams& params,
                       bool limited, cudaStream_t stream) {
  const int r = rules::ahe_radius(params.window, w, h);
  const long long side = 2LL * r + 1;
  if (side > 65535) throw std::invalid_argument("ahe: window too large for 16-bit column histograms");
  if (sm_count_ == 0) sm_count_ = current_sm_count();
  const int bins = rules::ahe_bins(depth);
  a.width = w;
  a.height = h;
  a.planes = planes;
  a.radius = r;
  a.n = static_cast<int>(side * side);
  a.limit = static_cast<int>(std::min<long long>(rules::clahe_clip_limit(params.clip, side * side, bins), side * side));
  a.limited = limited;
  a.depth = depth;
  a.bins = bins;
  a.bin_shift = rules::ahe_bin_shift(depth);
  a.max_code = rules::depth_max_code(depth);
  a.code32 = static_cast<long long>(a.max_code) * a.n + a.n / 2 < (1LL << 32);
  // Window counters of 16 bits while n = w*w fits (w <= 255), else 32.
  const bool wide_counters = side * side > 65535;
  // Windows of up to 512 rows move their fine bins by samples (see ahe_depth_kernel): 12-bit
  // 1080p benchmark frames, H100, 2026-11-22, windows 127 / 255 / 511: 2.4 / 3.5 / 7.2 ms,
  // against 7.2 / 11.5 / 18.2 ms with column fine histograms (which longer windows keep: their
  // cost does not grow with the window).
  int rows_per_lane = 0;
  if (side <= 512)
    for (rows_per_lane = 1; 32 * rows_per_lane < side;) rows_per_lane *= 2;
  const std::size_t smem = static_cast<std::size_t>(AheDepthPolicy::kAdWarps) *
                           (static_cast<std::size_t>(bins) * (wide_counters ? 4 : 2) +
                            (rows_per_lane ? 2 : 1) * kBuckets * sizeof(std::uint32_t));
  const bool clip = a.limit > 0;
  void (*kernel)(AheDepthArgs) = nullptr;
  switch (rows_per_lane) {
    case 1: kernel = ahe_depth_instance<Sample, std::uint16_t, 1>(clip); break;
    case 2: kernel = ahe_depth_instance<Sample, std::uint16_t, 2>(clip); break;
    case 4: kernel = ahe_depth_instance<Sample, std::uint16_t, 4>(clip); break;
    case 8: kernel = ahe_depth_instance<Sample, std::uint16_t, 8>(clip); break;
    case 16: kernel = ahe_depth_instance<Sample, std::uint32_t, 16>(clip); break;
    default:
      kernel = wide_counters ? ahe_depth_instance<Sample, std::uint32_t, 0>(clip)
                             : ahe_depth_instance<Sample, std::uint16_t, 0>(clip);
  }
  set_max_dynamic_shared_memory(kernel, static_cast<int>(smem));
  int per_sm = 1;
  HAZEFREE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, AheDepthPolicy::kAdThreads, smem));
  const int span = AheDepthPolicy::kAdTileWidth + 2 * r;
  const std::size_t fine_per_column = rows_per_lane ? 0 : static_cast<std::size_t>(bins);
  // Column histograms of at most about 2 GiB in all.
  const std::size_t per_block = static_cast<std::size_t>(span) * (fine_per_column + kBuckets) * sizeof(std::uint16_t);
  const int memory_cap = static_cast<int>(std::max<std::size_t>(1, (std::size_t{2} << 30) / per_block));
  const int slots = std::max(1, std::min(std::max(1, per_sm) * sm_count_, memory_cap));
  // The sliding is latency-bound, so the tiles are cut short enough to fill every resident slot
  // (one wave), but no shorter than 16 rows, nor, where the columns keep fine histograms, r / 4:
  // each tile builds and clears them, 2 (2r + 1) updates per column, shared by its rows. (Bucket
  // counts alone are built in shared memory, and need no clearing.)
  a.tiles_x = div_up(w, AheDepthPolicy::kAdTileWidth);
  const long long rows_per_slot = (static_cast<long long>(h) * a.tiles_x * planes + slots - 1) / slots;
  a.tile_rows = static_cast<int>(std::min<long long>(
      128, std::max<long long>({16, rows_per_lane ? 0 : r / 4, (rows_per_slot + 7) / 8 * 8})));
  a.tiles_y = div_up(h, a.tile_rows);
  const int tiles = a.tiles_x * a.tiles_y * planes;
  const int grid = std::max(1, std::min(tiles, slots));
  const std::size_t fine_count = static_cast<std::size_t>(grid) * span * fine_per_column;
  const std::size_t coarse_count = static_cast<std::size_t>(grid) * span * kBuckets;
  // The kernel leaves the column histograms at zero; a fresh buffer is cleared once.
  if (fine_.size() < fine_count) {
    fine_.reserve(fine_count);
    HAZEFREE_CUDA_CHECK(cudaMemsetAsync(fine_.get(), 0, fine_.bytes(), stream));
  }
  if (coarse_.size() < coarse_count) {
    coarse_.reserve(coarse_count);
    HAZEFREE_CUDA_CHECK(cudaMemsetAsync(coarse_.get(), 0, coarse_.bytes(), stream));
  }
  a.fine = fine_.get();
  a.coarse = coarse_.get();
  if (rows_per_lane) {  // the planes' bins, column by column, padded by r on every side
    a.column_pitch = (h + 2 * r + 31) / 32 * 32;
    const std::size_t plane = static_cast<std::size_t>(a.column_pitch) * (w + 2 * r);
    columns_.reserve(plane * planes);
    for (int p = 0; p < planes; ++p) a.columns[p] = columns_.get() + p * plane;
    std::uint16_t* out = columns_.get();
    transpose_bins_kernel<Sample><<<dim3(div_up(w + 2 * r, 32), div_up(h + 2 * r, 32), planes), dim3(32, 8), 0, stream>>>(
        a, out, planes > 1 ? out + plane : out, planes > 2 ? out + 2 * plane : out);
    HAZEFREE_CUDA_CHECK_LAUNCH("transpose_bins_kernel");
  }
  kernel<<<grid, AheDepthPolicy::kAdThreads, smem, stream>>>(a);
  HAZEFREE_CUDA_CHECK_LAUNCH("ahe_depth_kernel");
}

}  // namespace hazefree::cuda
