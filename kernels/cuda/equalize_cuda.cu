// Kernels of global HE and sliding-window AHE/CLAHE (SPEC 4), and the colour routing of the
// CPU's kernels/cpu/equalize_common.cpp (which channels are equalized, through which
// conversion). All arithmetic is integer, or the explicit fmaf of the he_temporal rule.
#include "kernels/cuda/equalize_cuda.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "kernels/cuda/channel_planes.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/frame_access.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/group_walk.cuh"
#include "kernels/cuda/he_lut_block.cuh"
#include "kernels/cuda/last_block.cuh"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cuda {
namespace rules = equalize_rules;

struct HeArgs {
  const std::uint8_t* src[3];
  int stride;
  int channels;               // 1..3 (8-bit) ; the BITS variant reads three planes
  rules::HistogramRect rect;  // the histogram's rectangle (half-open)
  bool limited;
  bool temporal;
  float alpha;                // he_temporal
  std::uint32_t* hist;        // kHeGlobalCopies x 3 x 256, or 4096; zero on entry and on exit
  unsigned* ticket;
  std::uint8_t* lut8;         // channels x 256
  std::uint16_t* lut12;       // 4096
  HeHistory* history;
};

namespace {

int device_sm_count() {
  int device = 0, count = 0;
  HAZEFREE_CUDA_CHECK(cudaGetDevice(&device));
  HAZEFREE_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// ---- colour routing -----------------------------------------------------------------------

__global__ void to_channels_kernel(FrameRef f, color::YuvToRgbI k, ChannelKind kind,
                                   std::uint8_t* p0, std::uint8_t* p1, std::uint8_t* p2,
                                   int stride) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= f.width || y >= f.height) return;
  const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * stride + x;
  if (f.format == PixelFormat::gray8) {
    const std::uint8_t v = f.p0[static_cast<std::ptrdiff_t>(y) * f.s0 + x];
    p0[o] = v;
    p1[o] = v;
    p2[o] = v;
    return;
  }
  const Rgb3u c = load_rgb_u8(f, k, x, y);
  if (kind == ChannelKind::rgb) {
    p0[o] = static_cast<std::uint8_t>(c.r);
    p1[o] = static_cast<std::uint8_t>(c.g);
    p2[o] = static_cast<std::uint8_t>(c.b);
  } else if (kind == ChannelKind::ycrcb) {
    const rules::YCrCb v = rules::rgb_to_ycrcb(c.r, c.g, c.b);
    p0[o] = static_cast<std::uint8_t>(v.y);
    p1[o] = static_cast<std::uint8_t>(v.cr);
    p2[o] = static_cast<std::uint8_t>(v.cb);
  } else {
    p0[o] = static_cast<std::uint8_t>(rules::rgb_to_grey(c.r, c.g, c.b));
  }
}

// One thread per chroma sample of a YUV output (its block's pixels), else per pixel.
// q0..q2: the result channels; c1, c2: Cr and Cb kept from to_channels (ycrcb kind).
__global__ void from_channels_kernel(FrameRef out, color::RgbToYuvI k, ChannelKind kind,
                                     const std::uint8_t* q0, const std::uint8_t* q1,
                                     const std::uint8_t* q2, const std::uint8_t* c1,
                                     const std::uint8_t* c2, int stride) {
  const OutputBlock blk = output_block(out);
  if (!blk.inside) return;
  std::int32_t sr = 0, sg = 0, sb = 0;
  for (int y = blk.y0; y < blk.y1; ++y) {
    std::uint8_t* row = out.p0 + static_cast<std::ptrdiff_t>(y) * out.s0;
    for (int x = blk.x0; x < blk.x1; ++x) {
      const rules::Rgb c = channels_rgb(kind, q0, q1, q2, c1, c2, static_cast<std::ptrdiff_t>(y) * stride + x, 8);
      const int r = c.r, g = c.g, b = c.b;
      if (out.format == PixelFormat::rgb24) {
        row[3 * x] = static_cast<std::uint8_t>(r);
        row[3 * x + 1] = static_cast<std::uint8_t>(g);
        row[3 * x + 2] = static_cast<std::uint8_t>(b);
      } else if (out.format == PixelFormat::gray8) {
        row[x] = static_cast<std::uint8_t>(rules::rgb_to_grey(r, g, b));
      } else {
        row[x] = color::clamp_u8(k.y_offset + color::fixed_round(k.y_r * r + k.y_g * g + k.y_b * b, 0));
        sr += r;
        sg += g;
        sb += b;
      }
    }
  }
  if (!out.yuv) return;
  const int n = (blk.y1 - blk.y0) * (blk.x1 - blk.x0);
  const int n_log2 = n == 4 ? 2 : (n == 2 ? 1 : 0);
  const std::ptrdiff_t ci = static_cast<std::ptrdiff_t>(blk.by) * out.s1 + blk.bx * out.cstep;
  out.p1[ci] = color::clamp_u8(color::kChromaZero +
                               color::fixed_round(k.cb_r * sr + k.cb_g * sg + k.cb_b * sb, n_log2));
  out.p2[ci] = color::clamp_u8(color::kChromaZero +
                               color::fixed_round(k.cr_r * sr + k.cr_g * sg + k.cr_b * sb, n_log2));
}

// ---- global HE ----------------------------------------------------------------------------

constexpr int kHeThreads = 256;
// 8-bit histograms: each block counts one channel into 32 sub-histograms in shared memory, lane l
// of every warp into sub-histogram l, stored bin-major ([bin][32]) so that lane l's counter of
// any bin lies in bank l: a warp's 32 increments never share an address or a bank, whatever the
// picture (a smooth frame puts most of a warp's samples in a few bins).
// 8192^2 grey, H200, 2026-11-21 (ncu, caches flushed): 33.6 us against 87.2 us for 4 warp-level
// copies per block; 64 M increments in 33.6 us is about 4 cycles per warp-wide shared atomic on
// each SM, so it is probably bound by the atomics now, not by its 64 MiB read (16 us at 4.2 TB/s).
constexpr int kHeLaneCopies = 32;
// Each block adds its sums to global copy (block % kHeGlobalCopies): the blocks' final atomics
// spread over 16 x 3 KB instead of the 8 cache lines of one histogram; the last block adds them
// (not measured on its own: part of the 33.6 us above).
constexpr int kHeGlobalCopies = 16;
// 16-pixel groups loaded per thread before they are counted. 4 measured the same (8192^2 graph
// 0.0654 against 0.0645 ms, 4K 0.0180 against 0.0192, one run each, H200, 2026-11-21).
constexpr int kHeUnroll = 2;


__device__ __forceinline__ int output_code(int e, bool limited) {
  return limited ? rules::limited_range_code(e) : e;
}

// Counts the first n of sixteen samples into this lane's sub-histogram (counters kHeLaneCopies
// words apart).
__device__ __forceinline__ void count_group16(std::uint32_t* lane_hist, const uint4& q, int n) {
  const unsigned w[4] = {q.x, q.y, q.z, q.w};
  if (n == 16) {
#pragma unroll
    for (int k = 0; k < 16; ++k)
      atomicAdd(lane_hist + ((w[k / 4] >> (8 * (k % 4))) & 255) * kHeLaneCopies, 1u);
  } else {
#pragma unroll
    for (int k = 0; k < 16; ++k)
      if (k < n) atomicAdd(lane_hist + ((w[k / 4] >> (8 * (k % 4))) & 255) * kHeLaneCopies, 1u);
  }
}

// 8-bit histograms: block (x, c) counts part of channel c's rectangle, 16-pixel groups dealt out
// over the grid (GroupWalk). The last block to finish sees every count and builds the LUTs.
__global__ void __launch_bounds__(kHeThreads) he_histogram_kernel(HeArgs a) {
  __shared__ __align__(16) std::uint32_t s_hist[256 * kHeLaneCopies];  // [bin][lane]
  for (int i = threadIdx.x; i < 256 * kHeLaneCopies / 4; i += kHeThreads)
    reinterpret_cast<uint4*>(s_hist)[i] = make_uint4(0, 0, 0, 0);
  __syncthreads();
  const int c = blockIdx.y;
  // A select, not an index: an indexed parameter array would be copied to local memory.
  const std::uint8_t* src = (c == 0 ? a.src[0] : (c == 1 ? a.src[1] : a.src[2])) + a.rect.x0;
  std::uint32_t* lane_hist = s_hist + threadIdx.x % 32;
  const int rw = a.rect.x1 - a.rect.x0;
  GroupWalk walk(a.rect.y1 - a.rect.y0, div_up(rw, 16));
  while (walk.more()) {
    // kHeUnroll groups loaded before any is counted: several loads in flight per thread.
    uint4 q[kHeUnroll];
    int n[kHeUnroll];
    walk.load_next<kHeUnroll, 16>(rw, [&](int y, int x, int samples) {
      return load_group(src + static_cast<std::ptrdiff_t>(a.rect.y0 + y) * a.stride + x, samples);
    }, q, n);
#pragma unroll
    for (int u = 0; u < kHeUnroll; ++u) count_group16(lane_hist, q[u], n[u]);
  }
  __syncthreads();
  // The block's sums (lane sub-histograms read diagonally: bank (k + bin) % 32, no conflicts)
  // into one of the global copies.
  std::uint32_t* hist_copy = a.hist + (blockIdx.x % kHeGlobalCopies) * 3 * 256 + c * 256;
  for (int b = threadIdx.x; b < 256; b += kHeThreads) {
    std::uint32_t sum = 0;
#pragma unroll 8
    for (int k = 0; k < kHeLaneCopies; ++k) sum += s_hist[b * kHeLaneCopies + ((k + b) % kHeLaneCopies)];
    if (sum) atomicAdd(&hist_copy[b], sum);
  }
  if (!finished_last(a.ticket, gridDim.x * gridDim.y)) return;
  for (int ch = 0; ch < a.channels; ++ch) {
    std::uint32_t* h = s_hist;  // reused: 256 counts of channel ch
    std::uint32_t part[kHeGlobalCopies];
#pragma unroll
    for (int k = 0; k < kHeGlobalCopies; ++k) part[k] = __ldcg(&a.hist[(k * 3 + ch) * 256 + threadIdx.x]);
    std::uint32_t count = 0;
#pragma unroll
    for (int k = 0; k < kHeGlobalCopies; ++k) {
      count += part[k];
      a.hist[(k * 3 + ch) * 256 + threadIdx.x] = 0;
    }
    __syncthreads();
    h[threadIdx.x] = count;
    __syncthreads();
    std::uint8_t* lut = a.lut8 + ch * 256;
    if (a.temporal) {
      float* hc = a.history->channel[ch];
      const bool has = a.history->has_channel[ch] != 0;
      hc[threadIdx.x] = rules::he_history_step(has, a.alpha, count, hc[threadIdx.x]);
      __syncthreads();
      if (threadIdx.x == 0) {
        rules::he_lut_256_from_float(hc, lut);
        a.history->has_channel[ch] = 1;
      }
      __syncthreads();
      const int code = lut[threadIdx.x];
      __syncthreads();
      lut[threadIdx.x] = static_cast<std::uint8_t>(output_code(code, a.limited));
    } else {
      build_he_lut_block<kHeThreads, 1>(
          256, rules::kMaxCode, [&](int i) { return h[i]; },
          [&](int v, int code) { lut[v] = static_cast<std::uint8_t>(output_code(code, a.limited)); });
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *a.ticket = 0;
}

// BITS: the 4096-bin histogram of the three planes' high nibbles, privatised per block in
// shared memory, merged with global atomics; the last block builds the 12-bit LUT.
__global__ void __launch_bounds__(kHeThreads) he_bits_histogram_kernel(HeArgs a) {
  __shared__ std::uint32_t s_hist[4096];
  for (int i = threadIdx.x; i < 4096; i += kHeThreads) s_hist[i] = 0;
  __syncthreads();
  // Groups of 16 pixels: one 16-byte load per plane where the group is whole and aligned.
  const int rw = a.rect.x1 - a.rect.x0, groups_per_row = div_up(rw, 16);
  const long long groups = static_cast<long long>(a.rect.y1 - a.rect.y0) * groups_per_row;
  for (long long g = blockIdx.x * static_cast<long long>(kHeThreads) + threadIdx.x; g < groups;
       g += static_cast<long long>(gridDim.x) * kHeThreads) {
    const int y = a.rect.y0 + static_cast<int>(g / groups_per_row);
    const int x = a.rect.x0 + 16 * static_cast<int>(g % groups_per_row);
    const int n = min(a.rect.x1, x + 16) - x;
    const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * a.stride + x;
    const uint4 q0 = load_group(a.src[0] + o, n), q1 = load_group(a.src[1] + o, n),
                q2 = load_group(a.src[2] + o, n);
    const unsigned w0[4] = {q0.x, q0.y, q0.z, q0.w}, w1[4] = {q1.x, q1.y, q1.z, q1.w},
                   w2[4] = {q2.x, q2.y, q2.z, q2.w};
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      if (k >= n) break;
      const int shift = 8 * (k % 4);
      const int r = (w0[k / 4] >> shift) & 255, gg = (w1[k / 4] >> shift) & 255,
                b = (w2[k / 4] >> shift) & 255;
      atomicAdd(&s_hist[rules::bits_index(r, gg, b)], 1u);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 4096; i += kHeThreads)
    if (s_hist[i]) atomicAdd(&a.hist[i], s_hist[i]);
  // The last block to finish sees every count and builds the LUT.
  if (!finished_last(a.ticket, gridDim.x)) return;
  std::uint32_t* h = s_hist;
  for (int i = threadIdx.x; i < 4096; i += kHeThreads) {
    h[i] = __ldcg(&a.hist[i]);
    a.hist[i] = 0;
  }
  __syncthreads();
  if (a.temporal) {
    const bool has = a.history->has_bits != 0;
    for (int i = threadIdx.x; i < 4096; i += kHeThreads)
      a.history->bits[i] = rules::he_history_step(has, a.alpha, h[i], a.history->bits[i]);
    __syncthreads();
    if (threadIdx.x == 0) {
      rules::he_lut_4096_from_float(a.history->bits, a.lut12);
      a.history->has_bits = 1;
    }
  } else {
    build_he_lut_block<kHeThreads, 16>(
        4096, rules::kBitsMaxCode, [&](int i) { return h[i]; },
        [&](int v, int code) { a.lut12[v] = static_cast<std::uint16_t>(code); });
  }
  if (threadIdx.x == 0) *a.ticket = 0;
}

// Up to three planes per launch (blockIdx.z): a LUT map, a copy, or a fill with 128 (the
// chroma of the luma / grey modes rides along instead of separate copies).
constexpr int kJobLut = 0, kJobCopy = 1, kJobFill = 2;
using ApplyJob = HePlaneJob;
struct ApplyJobs {
  ApplyJob job[3];
};

// Blocks of 32 x 8 threads; each thread maps kApplyRows 16-byte vectors, 8 rows apart, loaded
// before the block copies the LUTs to shared memory (the loads are in flight meanwhile).
// 8192^2 grey, H200, 2026-11-21 (ncu, caches flushed): 31.9 us for 128 MiB, the device copy's
// rate (34.0 us before, one vector per thread, the LUT copied before the load).
constexpr int kApplyRows = 4;
const dim3 kApplyBlock(32, 8);

__global__ void __launch_bounds__(256) he_apply_kernel(ApplyJobs jobs, const std::uint8_t* lut, int luts) {
  __shared__ __align__(4) std::uint8_t s_lut[3 * 256];
  // A select, not an index: an indexed parameter array would be copied to local memory.
  const ApplyJob j = blockIdx.z == 0 ? jobs.job[0] : (blockIdx.z == 1 ? jobs.job[1] : jobs.job[2]);
  const int x = 16 * (blockIdx.x * blockDim.x + threadIdx.x);
  // Bottom rows first: the histogram walked the frame top to bottom, so its last rows may still
  // be in L2 (8192^2 graph 0.0645 ms against 0.0655 top first: one run each, within noise).
  const int y0 = (gridDim.y - 1 - blockIdx.y) * (blockDim.y * kApplyRows) + threadIdx.y;
  const bool vector =
      x + 16 <= j.row_bytes &&
      ((reinterpret_cast<std::uintptr_t>(j.dst + x) | static_cast<std::uintptr_t>(j.dst_stride)) & 15) == 0 &&
      (j.kind == kJobFill ||
       ((reinterpret_cast<std::uintptr_t>(j.src + x) | static_cast<std::uintptr_t>(j.src_stride)) & 15) == 0);
  uint4 q[kApplyRows];
#pragma unroll
  for (int i = 0; i < kApplyRows; ++i) {
    const int y = y0 + i * static_cast<int>(blockDim.y);
    q[i] = make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
    if (vector && j.kind != kJobFill && y < j.height)
      q[i] = __ldcs(reinterpret_cast<const uint4*>(j.src + static_cast<std::ptrdiff_t>(y) * j.src_stride + x));
  }
  const unsigned* lut_words = reinterpret_cast<const unsigned*>(lut);
  unsigned* s_words = reinterpret_cast<unsigned*>(s_lut);
  for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < luts * 64; i += blockDim.x * blockDim.y)
    s_words[i] = lut_words[i];
  __syncthreads();
  if (x >= j.row_bytes) return;
  const std::uint8_t* l = s_lut + 256 * j.lut;
#pragma unroll
  for (int i = 0; i < kApplyRows; ++i) {
    const int y = y0 + i * static_cast<int>(blockDim.y);
    if (y >= j.height) break;
    std::uint8_t* d = j.dst + static_cast<std::ptrdiff_t>(y) * j.dst_stride + x;
    if (vector) {
      uint4 v = q[i];
      if (j.kind == kJobLut) {
        unsigned* w = &v.x;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const unsigned s = w[k];
          w[k] = l[s & 255] | (l[(s >> 8) & 255] << 8) | (l[(s >> 16) & 255] << 16) |
                 (static_cast<unsigned>(l[s >> 24]) << 24);
        }
      }
      __stcs(reinterpret_cast<uint4*>(d), v);
    } else {
      const std::uint8_t* s = j.src + static_cast<std::ptrdiff_t>(y) * j.src_stride + x;
      for (int k = 0; k < 16 && x + k < j.row_bytes; ++k)
        d[k] = j.kind == kJobFill ? 128 : (j.kind == kJobLut ? l[s[k]] : s[k]);
    }
  }
}

__global__ void bits_apply_kernel(std::uint8_t* r, std::uint8_t* g, std::uint8_t* b, int stride,
                                  int width, int height, const std::uint16_t* lut) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * stride + x;
  const int rr = r[o], gg = g[o], bb = b[o];
  const rules::Rgb c = rules::bits_apply(lut[rules::bits_index(rr, gg, bb)], rr, gg, bb);
  r[o] = static_cast<std::uint8_t>(c.r);
  g[o] = static_cast<std::uint8_t>(c.g);
  b[o] = static_cast<std::uint8_t>(c.b);
}

// ---- sliding-window AHE / CLAHE -----------------------------------------------------------

constexpr int kAheWarps = 8;
constexpr int kAheThreads = kAheWarps * 32;
constexpr int kAheTileWidth = kAheWarps * 32;  // one output column per lane
// Rows per tile: each tile pays (256 + 2r) x w shared-memory increments to build its column
// histograms; 32 rows keep that under the sliding work for every window up to 511 while giving
// 272 tiles per 1080p plane.
constexpr int kAheTileRows = 32;
constexpr int kAheInitColumns = 32;

struct AheArgs {
  const std::uint8_t* src[3];
  std::uint8_t* dst[3];
  int src_stride, dst_stride;
  int width, height, planes;
  int radius;
  int n;          // window samples (2r + 1)^2
  int limit;      // CLAHE clip limit, 0 = plain AHE
  bool limited;   // limited-range output codes
  int tiles_x, tiles_y;
  std::uint16_t* columns;  // per block: (kAheTileWidth + 2r) x 256 counts
};

__device__ __forceinline__ void add_counts(std::uint32_t (&h)[8], const uint4& v) {
  h[0] += v.x & 0xffffu;
  h[1] += v.x >> 16;
  h[2] += v.y & 0xffffu;
  h[3] += v.y >> 16;
  h[4] += v.z & 0xffffu;
  h[5] += v.z >> 16;
  h[6] += v.w & 0xffffu;
  h[7] += v.w >> 16;
}

__device__ __forceinline__ void sub_counts(std::uint32_t (&h)[8], const uint4& v) {
  h[0] -= v.x & 0xffffu;
  h[1] -= v.x >> 16;
  h[2] -= v.y & 0xffffu;
  h[3] -= v.y >> 16;
  h[4] -= v.z & 0xffffu;
  h[5] -= v.z >> 16;
  h[6] -= v.w & 0xffffu;
  h[7] -= v.w >> 16;
}

__global__ void __launch_bounds__(kAheThreads) ahe_kernel(AheArgs a) {
  __shared__ std::uint32_t s_init[kAheInitColumns][256];
  __shared__ std::uint32_t s_start[kAheWarps][256];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = a.radius, w = a.width, h = a.height;
  const int span = kAheTileWidth + 2 * r;
  std::uint16_t* columns = a.columns + static_cast<std::size_t>(blockIdx.x) * span * 256;
  const int tiles_per_plane = a.tiles_x * a.tiles_y;
  const int total = tiles_per_plane * a.planes;
  for (int tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const int p = tile / tiles_per_plane;
    const int tx = (tile % tiles_per_plane) % a.tiles_x, ty = (tile % tiles_per_plane) / a.tiles_x;
    const int x0 = tx * kAheTileWidth, y0 = ty * kAheTileRows;
    const int y1 = min(h, y0 + kAheTileRows);
    const int ncols = min(kAheTileWidth, w - x0) + 2 * r;
    // Selects, not indices: an indexed parameter array would be copied to local memory.
    const std::uint8_t* src = p == 0 ? a.src[0] : (p == 1 ? a.src[1] : a.src[2]);
    std::uint8_t* dst = p == 0 ? a.dst[0] : (p == 1 ? a.dst[1] : a.dst[2]);
    const int ss = a.src_stride;

    // Column histograms at row y0: column j is image column reflect(x0 - r + j), rows
    // reflect(y0 - r .. y0 + r). Counted in shared memory 32 columns at a time.
    for (int j0 = 0; j0 < ncols; j0 += kAheInitColumns) {
      for (int i = threadIdx.x; i < kAheInitColumns * 256; i += kAheThreads) (&s_init[0][0])[i] = 0;
      __syncthreads();
      const int jc = j0 + lane;
      if (jc < ncols) {
        const int c = rules::reflect101(x0 - r + jc, w);
        // Eight loads in flight before their eight increments: the loop is latency-bound
        // otherwise (one L2 round trip per increment).
        for (int k0 = warp; k0 <= 2 * r; k0 += 8 * kAheWarps) {
          std::uint8_t v[8];
#pragma unroll
          for (int u = 0; u < 8; ++u) {
            const int k = k0 + u * kAheWarps;
            v[u] = k <= 2 * r ? src[static_cast<std::ptrdiff_t>(rules::reflect101(y0 - r + k, h)) * ss + c] : 0;
          }
#pragma unroll
          for (int u = 0; u < 8; ++u)
            if (k0 + u * kAheWarps <= 2 * r) atomicAdd(&s_init[lane][v[u]], 1u);
        }
      }
      __syncthreads();
      for (int i = threadIdx.x; i < kAheInitColumns * 256; i += kAheThreads) {
        const int jj = i / 256;
        if (j0 + jj < ncols)
          columns[static_cast<std::size_t>(j0 + jj) * 256 + i % 256] =
              static_cast<std::uint16_t>((&s_init[0][0])[i]);
      }
      __syncthreads();
    }

    // Each warp's window histogram at (xs, y0): the sum of its 2r + 1 columns.
    const int xs = x0 + warp * 32;
    const bool active = xs < w;
    const int count = active ? min(32, w - xs) : 0;
    if (active) {
      std::uint32_t hist[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      const std::uint16_t* base = columns + static_cast<std::size_t>(warp * 32) * 256 + lane * 8;
#pragma unroll 8
      for (int m = 0; m <= 2 * r; ++m)
        add_counts(hist, *reinterpret_cast<const uint4*>(base + static_cast<std::size_t>(m) * 256));
#pragma unroll
      for (int b = 0; b < 8; ++b) s_start[warp][lane * 8 + b] = hist[b];
    }

    for (int y = y0; y < y1; ++y) {
      if (y > y0) {
        __syncthreads();  // every warp is done with the columns of row y - 1
        const int ya = rules::reflect101(y + r, h), yr = rules::reflect101(y - r - 1, h);
        const std::uint8_t* row_add = src + static_cast<std::ptrdiff_t>(ya) * ss;
        const std::uint8_t* row_sub = src + static_cast<std::ptrdiff_t>(yr) * ss;
        // Loads first, then the updates, four columns per thread at a time.
        for (int j0 = threadIdx.x; j0 < ncols; j0 += 4 * kAheThreads) {
          int add[4], sub[4];
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int j = j0 + u * kAheThreads;
            const int c = rules::reflect101(x0 - r + min(j, ncols - 1), w);
            add[u] = row_add[c];
            sub[u] = row_sub[c];
          }
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int j = j0 + u * kAheThreads;
            if (j < ncols) {
              std::uint16_t* cj = columns + static_cast<std::size_t>(j) * 256;
              cj[add[u]] += 1;
              cj[sub[u]] -= 1;
            }
          }
        }
        if (active) {
          for (int m0 = lane; m0 <= 2 * r; m0 += 4 * 32) {
            int add[4], sub[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
              const int c = rules::reflect101(xs - r + min(m0 + 32 * u, 2 * r), w);
              add[u] = row_add[c];
              sub[u] = row_sub[c];
            }
#pragma unroll
            for (int u = 0; u < 4; ++u)
              if (m0 + 32 * u <= 2 * r) {
                atomicAdd(&s_start[warp][add[u]], 1u);
                atomicSub(&s_start[warp][sub[u]], 1u);
              }
          }
        }
        __syncthreads();  // the columns of row y are complete
      }
      if (!active) continue;
      __syncwarp();
      std::uint32_t hist[8];
#pragma unroll
      for (int b = 0; b < 8; ++b) hist[b] = s_start[warp][lane * 8 + b];
      const std::uint8_t* srow = src + static_cast<std::ptrdiff_t>(y) * ss;
      const std::uint16_t* in_col = columns + static_cast<std::size_t>(warp * 32 + 2 * r) * 256 + lane * 8;
      const std::uint16_t* out_col = columns + static_cast<std::size_t>(warp * 32) * 256 + lane * 8;
      // Each lane keeps its own pixel's sums (below its value, and the clipped total) from the
      // step that is its, and makes its code once the warp's 32 windows are done: one division
      // per lane, not one per step.
      std::uint32_t own_below = 0, own_kept = 0;
      const int own_value = lane < count ? srow[xs + lane] : 0;
      // The next step's two column reads are issued one step ahead.
      uint4 next_in = make_uint4(0, 0, 0, 0), next_out = next_in;
      if (count > 1) {
        next_in = *reinterpret_cast<const uint4*>(in_col + 256);
        next_out = *reinterpret_cast<const uint4*>(out_col);
      }
#pragma unroll 2
      for (int i = 0; i < count; ++i) {
        if (i > 0) {
          add_counts(hist, next_in);
          sub_counts(hist, next_out);
          if (i + 1 < count) {
            next_in = *reinterpret_cast<const uint4*>(in_col + static_cast<std::size_t>(i + 1) * 256);
            next_out = *reinterpret_cast<const uint4*>(out_col + static_cast<std::size_t>(i) * 256);
          }
        }
        const int v = __shfl_sync(0xffffffffu, own_value, i);
        std::uint32_t below = 0, kept = 0;
        if (a.limit > 0) {
#pragma unroll
          for (int b = 0; b < 8; ++b) {
            const std::uint32_t m = min(hist[b], static_cast<std::uint32_t>(a.limit));
            kept += m;
            below += (lane * 8 + b <= v) ? m : 0u;
          }
          if (a.n < 65536) {  // both sums in one reduction: each is at most n
            const std::uint32_t both = __reduce_add_sync(0xffffffffu, below | (kept << 16));
            below = both & 0xffffu;
            kept = both >> 16;
          } else {
            below = __reduce_add_sync(0xffffffffu, below);
            kept = __reduce_add_sync(0xffffffffu, kept);
          }
        } else {
#pragma unroll
          for (int b = 0; b < 8; ++b) below += (lane * 8 + b <= v) ? hist[b] : 0u;
          below = __reduce_add_sync(0xffffffffu, below);
        }
        if (lane == i) {
          own_below = below;
          own_kept = kept;
        }
      }
      if (lane < count) {
        const std::uint32_t cdf =
            a.limit > 0 ? rules::clahe_cdf(own_below, static_cast<std::uint32_t>(a.n) - own_kept, own_value) : own_below;
        dst[static_cast<std::ptrdiff_t>(y) * a.dst_stride + xs + lane] =
            static_cast<std::uint8_t>(output_code(rules::ahe_code(cdf, a.n), a.limited));
      }
    }
    __syncthreads();  // the next tile reuses the columns and the shared memory
  }
}

// Which kernel serves 8-bit AHE/CLAHE at a window: the column histograms' (AheCuda) or the
// sliding samples' of the depths (AheDepthCuda at 8 bits), both exact. The kernels alone on a
// 1080p plane, H200, 2026-11-29 (`hazefree_gpu_tests --ahe-kernels`), ms, columns / samples:
// AHE 31 0.445 / 0.640, 63 0.498 / 0.793, 127 0.844 / 1.149, 255 1.103 / 1.944, 511 1.446 / 2.891;
// CLAHE (clip 2) 31 0.535 / 0.471, 63 0.588 / 0.689, 127 0.868 / 1.306, 255 1.122 / 3.045,
// 511 1.459 / 4.904. The samples' windows move by 2 (2r + 1) samples a step, the columns' by two
// columns of 256 counts whatever the window: only CLAHE's smallest windows go to the samples.
bool ahe_by_samples_8bit(const AheParams& params) { return params.clip > 0.f && params.window <= 31; }

const dim3 kPixelBlock(32, 8);
dim3 pixel_grid(int width, int height) {
  return dim3(div_up(width, kPixelBlock.x), div_up(height, kPixelBlock.y));
}

}  // namespace

void reset_he_history(HeHistory* d_history, cudaStream_t stream) {
  HAZEFREE_CUDA_CHECK(cudaMemsetAsync(d_history, 0, sizeof(HeHistory), stream));
}

void AheCuda::apply(const DevicePlaneU8* src, const DevicePlaneU8* dst, int planes,
                    const AheParams& params, bool limited, cudaStream_t stream) {
  const int w = src[0].width, h = src[0].height;
  const int r = rules::ahe_radius(params.window, w, h);
  const long long side = 2LL * r + 1;
  if (side > 65535) throw std::invalid_argument("ahe: window too large for 16-bit column histograms");
  if (sm_count_ == 0) sm_count_ = device_sm_count();
  AheArgs a{};
  set_planes(a, src, dst, planes);
  a.width = w;
  a.height = h;
  a.planes = planes;
  a.radius = r;
  a.n = static_cast<int>(side * side);
  a.limit = static_cast<int>(std::min<long long>(rules::clahe_clip_limit(params.clip, side * side), side * side));
  a.limited = limited;
  a.tiles_x = div_up(w, kAheTileWidth);
  a.tiles_y = div_up(h, kAheTileRows);
  const int tiles = a.tiles_x * a.tiles_y * planes;
  // Up to four resident blocks per multiprocessor (40 KB of shared memory each), each owning its
  // column histograms: 1080p's 272 tiles run in one wave (two blocks per SM left 8 tiles for a
  // second wave and doubled the time, H200, 2026-11-21).
  const int grid = std::min(tiles, 4 * sm_count_);
  columns_.reserve(static_cast<std::size_t>(grid) * (kAheTileWidth + 2 * r) * 256);
  a.columns = columns_.get();
  ahe_kernel<<<grid, kAheThreads, 0, stream>>>(a);
  HAZEFREE_CUDA_CHECK_LAUNCH("ahe_kernel");
}

CudaEqualizer::CudaEqualizer(const ProcessingConfig& config) : config_(config) {
  validate(config_);
  if (config_.mode == Mode::dcp) throw std::invalid_argument("CudaEqualizer: mode is dcp");
  hist_.reserve(std::max(4096, kHeGlobalCopies * 3 * 256));
  ticket_.reserve(1);
  lut8_.reserve(3 * 256);
  lut12_.reserve(4096);
  HAZEFREE_CUDA_CHECK(cudaMemset(hist_.get(), 0, hist_.bytes()));
  HAZEFREE_CUDA_CHECK(cudaMemset(ticket_.get(), 0, ticket_.bytes()));
  sm_count_ = device_sm_count();
  HAZEFREE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&he_blocks_per_sm_, he_histogram_kernel,
                                                                    kHeThreads, 0));
  he_blocks_per_sm_ = std::max(he_blocks_per_sm_, 1);
}

HeArgs CudaEqualizer::he_args(const DevicePlaneU8* planes, int channels, int width, int height,
                              HeHistory* d_history) const {
  const rules::HistogramRect rect = rules::histogram_rect(config_.he.roi, width, height);
  HeArgs a{};
  for (int c = 0; c < channels; ++c) a.src[c] = planes[c].data;
  a.stride = planes[0].stride;
  a.channels = channels;
  a.rect = rect;
  a.temporal = config_.he.temporal < 1.f;
  a.alpha = config_.he.temporal;
  a.hist = hist_.get();
  a.ticket = ticket_.get();
  a.lut8 = lut8_.get();
  a.lut12 = lut12_.get();
  a.history = d_history;
  return a;
}

void CudaEqualizer::he(const DevicePlaneU8* src, const DevicePlaneU8* dst, int channels,
                      bool limited, int width, int height, HeHistory* d_history,
                      const StateOrder& order, cudaStream_t stream) {
  HeArgs a = he_args(src, channels, width, height, d_history);
  a.limited = limited;
  const long long groups = static_cast<long long>(a.rect.y1 - a.rect.y0) * div_up(a.rect.x1 - a.rect.x0, 16);
  // One wave of resident blocks at most (the blocks' set-up and merge are paid once per block),
  // fewer where kHeUnroll groups per thread cover the rectangle.
  const long long per_block = static_cast<long long>(kHeThreads) * kHeUnroll;
  const int blocks = static_cast<int>(std::max<long long>(
      1, std::min<long long>(std::max(1, he_blocks_per_sm_ * sm_count_ / channels),
                             (groups + per_block - 1) / per_block)));
  if (a.temporal && order.wait) HAZEFREE_CUDA_CHECK(cudaStreamWaitEvent(stream, order.wait, 0));
  he_histogram_kernel<<<dim3(blocks, channels), kHeThreads, 0, stream>>>(a);
  HAZEFREE_CUDA_CHECK_LAUNCH("he_histogram_kernel");
  if (a.temporal && order.done) HAZEFREE_CUDA_CHECK(cudaEventRecord(order.done, stream));
  ApplyJobs jobs{};
  int count = 0;
  for (int c = 0; c < channels; ++c)
    jobs.job[count++] = {src[c].data, dst[c].data, src[c].stride, dst[c].stride, width, height, kJobLut, c};
  for (const ApplyJob& extra : extra_jobs_)
    if (count < 3) jobs.job[count++] = extra;
  const dim3 grid_apply(div_up(div_up(width, 16), kApplyBlock.x),
                        div_up(height, kApplyBlock.y * kApplyRows), count);
  he_apply_kernel<<<grid_apply, kApplyBlock, 0, stream>>>(jobs, lut8_.get(), channels);
  HAZEFREE_CUDA_CHECK_LAUNCH("he_apply_kernel");
}

void CudaEqualizer::bits(const DevicePlaneU8* planes, int width, int height, HeHistory* d_history,
                        const StateOrder& order, cudaStream_t stream) {
  const HeArgs a = he_args(planes, 3, width, height, d_history);
  const long long groups = static_cast<long long>(a.rect.y1 - a.rect.y0) * div_up(a.rect.x1 - a.rect.x0, 4);
  const int grid = static_cast<int>(std::max<long long>(
      1, std::min<long long>(2LL * sm_count_, (groups + 4 * kHeThreads - 1) / (4 * kHeThreads))));
  if (a.temporal && order.wait) HAZEFREE_CUDA_CHECK(cudaStreamWaitEvent(stream, order.wait, 0));
  he_bits_histogram_kernel<<<grid, kHeThreads, 0, stream>>>(a);
  HAZEFREE_CUDA_CHECK_LAUNCH("he_bits_histogram_kernel");
  if (a.temporal && order.done) HAZEFREE_CUDA_CHECK(cudaEventRecord(order.done, stream));
  bits_apply_kernel<<<pixel_grid(width, height), kPixelBlock, 0, stream>>>(
      planes[0].data, planes[1].data, planes[2].data, planes[0].stride, width, height, lut12_.get());
  HAZEFREE_CUDA_CHECK_LAUNCH("bits_apply_kernel");
}

void CudaEqualizer::enqueue(const ImageView& d_in, const ImageView& d_out, HeHistory* d_history,
                            const StateOrder& order, cudaStream_t stream) {
  if (d_in.format != d_out.format || d_in.width != d_out.width || d_in.height != d_out.height)
    throw std::invalid_argument("equalize: output frame differs from the input in format or size");
  if (d_in.width <= 0 || d_in.height <= 0) throw std::invalid_argument("equalize: empty frame");
  if (d_in.depth > 8 || d_out.depth > 8) {  // SPEC 7 (equalize_depth_cuda.cu)
    enqueue_wide(d_in, d_out, d_history, order, stream);
    return;
  }
  const int w = d_in.width, h = d_in.height;
  const PixelFormat f = d_in.format;
  const ColorMode color = config_.color;
  const bool is_he = config_.mode == Mode::he;

  // The output keeps the input's colour description (the conversions back use it).
  ImageView out = d_out;
  out.matrix = d_in.matrix;
  out.range = d_in.range;

  const int sstride = (w + 127) / 128 * 128;
  const std::size_t plane = static_cast<std::size_t>(sstride) * h;
  DevicePlaneU8 sc[6];
  auto scratch = [&]() {
    scratch_.reserve(plane * 6);
    for (int i = 0; i < 6; ++i) sc[i] = {scratch_.get() + i * plane, w, h, sstride};
  };
  auto equalize = [&](const DevicePlaneU8* src, const DevicePlaneU8* dst, int channels, bool limited) {
    if (is_he) he(src, dst, channels, limited, w, h, d_history, order, stream);
    else if (ahe_by_samples_8bit(config_.ahe)) ahe_depth_.apply(src, dst, channels, config_.ahe, limited, stream);
    else ahe_.apply(src, dst, channels, config_.ahe, limited, stream);
  };
  auto to_channels = [&](ChannelKind kind) {
    to_channels_kernel<<<pixel_grid(w, h), kPixelBlock, 0, stream>>>(
        frame_ref(d_in), color::yuv_to_rgb_i(d_in.matrix, d_in.range), kind, sc[0].data,
        sc[1].data, sc[2].data, sstride);
    HAZEFREE_CUDA_CHECK_LAUNCH("to_channels_kernel");
  };
  auto from_channels = [&](ChannelKind kind, int first) {
    const FrameRef o = frame_ref(out);
    const int sx = o.yuv ? o.sx : 0, sy = o.yuv ? o.sy : 0;
    const int bw = (w + (1 << sx) - 1) >> sx, bh = (h + (1 << sy) - 1) >> sy;
    from_channels_kernel<<<pixel_grid(bw, bh), kPixelBlock, 0, stream>>>(
        o, color::rgb_to_yuv_i(out.matrix, out.range), kind, sc[first].data, sc[first + 1].data,
        sc[first + 2].data, sc[1].data, sc[2].data, sstride);
    HAZEFREE_CUDA_CHECK_LAUNCH("from_channels_kernel");
  };

  if (is_he && color == ColorMode::rgb_bits) {
    scratch();
    to_channels(ChannelKind::rgb);
    bits(sc, w, h, d_history, order, stream);
    from_channels(ChannelKind::rgb, 0);
    return;
  }
  if (f == PixelFormat::gray8) {  // every mode is the plane itself
    const DevicePlaneU8 src{d_in.planes[0].data, w, h, d_in.planes[0].stride};
    const DevicePlaneU8 dst{out.planes[0].data, w, h, out.planes[0].stride};
    equalize(&src, &dst, 1, false);
    return;
  }
  if (f == PixelFormat::rgb24 || color == ColorMode::rgb) {
    scratch();
    if (color == ColorMode::rgb) {
      to_channels(ChannelKind::rgb);
      equalize(sc, sc + 3, 3, false);
      from_channels(ChannelKind::rgb, 3);
    } else {
      const ChannelKind kind = color == ColorMode::grey ? ChannelKind::grey : ChannelKind::ycrcb;
      to_channels(kind);
      equalize(sc, sc + 3, 1, false);
      from_channels(kind, 3);
    }
    return;
  }
  // YUV, luma or grey: the Y plane itself; chroma kept or set to 128.
  const DevicePlaneU8 src{d_in.planes[0].data, w, h, d_in.planes[0].stride};
  const DevicePlaneU8 dst{out.planes[0].data, w, h, out.planes[0].stride};
  if (is_he) {
    extra_jobs_.clear();
    for (int i = 1; i < d_in.plane_count; ++i)
      extra_jobs_.push_back({d_in.planes[i].data, out.planes[i].data, d_in.planes[i].stride,
                             out.planes[i].stride, static_cast<int>(plane_row_bytes(d_in, i)),
                             d_in.planes[i].height, color == ColorMode::grey ? kJobFill : kJobCopy, 0});
    he(&src, &dst, 1, d_in.range == ColorRange::limited, w, h, d_history, order, stream);
    extra_jobs_.clear();
    return;
  }
  equalize(&src, &dst, 1, d_in.range == ColorRange::limited);
  for (int i = 1; i < d_in.plane_count; ++i) {
    const std::size_t row = plane_row_bytes(d_in, i);
    if (color == ColorMode::grey)
      HAZEFREE_CUDA_CHECK(cudaMemset2DAsync(out.planes[i].data, out.planes[i].stride, 128, row,
                                            out.planes[i].height, stream));
    else
      HAZEFREE_CUDA_CHECK(cudaMemcpy2DAsync(out.planes[i].data, out.planes[i].stride,
                                            d_in.planes[i].data, d_in.planes[i].stride, row,
                                            d_in.planes[i].height, cudaMemcpyDeviceToDevice, stream));
  }
}

}  // namespace hazefree::cuda
