// Global HE at depth 9..16 on the GPU (SPEC 7), bit-exact with the CPU backend
// (kernels/cpu/equalize_he.cpp): every rule comes from kernels/equalize_rules.hpp.
#include "kernels/cuda/he_depth_cuda.hpp"

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

// ---- global HE at depth ---------------------------------------------------------------------

// The histogram and LUT kernels' tuning, with the figures that chose it.
struct HeDepthPolicy {
  static constexpr int kSliceLog2 = 13;  // bins per shared-memory slice: 8192 (32 KB)
  // Histogram blocks of 512 threads, two per multiprocessor (10 bits, 1080p, H100: 13.0 us against
  // 14.5 with 256 threads and 13.1 with one block of 1024: each block's clearing and merging of its
  // 8192 shared counters is shared by more threads, and more warps hide the loads).
  static constexpr int kHistThreads = 512;
  static constexpr int kHistBlocksPerSm = 2;
  static constexpr int kLutThreads = 1024;
  // Groups of eight samples each thread loads before it counts any: several loads in flight (2
  // measured the same at 10 bits, 1080p, H100).
  static constexpr int kHistUnroll = 4;
};
static_assert(HeDepthPolicy::kHistThreads <= 512, "build_he_lut_block: 512 bins (9 bits) are a multiple of the threads");

struct HeDepthArgs {
  const std::uint16_t* src[3];
  int stride, shift, channels;
  rules::HistogramRect rect;  // the histogram's rectangle (half-open)
  int depth, bins;
  std::uint32_t* hist;  // channels x bins, zero on entry, cleared by the LUT builder
  // Without he_temporal the block that finishes last builds the LUTs (channels x bins, final
  // codes) and resets `ticket`; with it, he_depth_temporal_lut_kernel does.
  bool temporal, limited;
  unsigned* ticket;
  std::uint16_t* lut;
};

// Block (x, c, z) counts channel c's samples falling in slice z of the bins (kSliced: more than
// 8192 bins, counted a slice at a time; otherwise every sample is counted, with no range test).
// The rectangle's groups of eight samples are dealt out evenly over the grid's threads
// (GroupWalk). Below 8192 bins the slice holds `copies` copies of the histogram (lane l counts
// into copy l % copies, bin-major), so that a warp of equal samples on a smooth picture spreads
// its increments over several addresses.
template <bool kSliced>
__global__ void __launch_bounds__(HeDepthPolicy::kHistThreads, HeDepthPolicy::kHistBlocksPerSm) he_depth_histogram_kernel(HeDepthArgs a) {
  __shared__ std::uint32_t s_hist[1 << HeDepthPolicy::kSliceLog2];
  const int c = blockIdx.y;
  const int slice_bins = min(a.bins, 1 << HeDepthPolicy::kSliceLog2);
  const int copies = min(32, (1 << HeDepthPolicy::kSliceLog2) / slice_bins);
  for (int i = threadIdx.x; i < slice_bins * copies; i += blockDim.x) s_hist[i] = 0;
  __syncthreads();
  const std::uint16_t* src = (c == 0 ? a.src[0] : (c == 1 ? a.src[1] : a.src[2])) + a.rect.x0;
  const unsigned lo = blockIdx.z * slice_bins;
  const unsigned mask = a.bins - 1, shift = a.shift;
  std::uint32_t* lane_hist = s_hist + (threadIdx.x % 32) % copies;
  // One sample of bin `bin` (kSliced: counted only where it falls in this block's slice). The
  // loops below take each bin from its sample's bits [shift, shift + depth) in place, in the
  // word of two samples.
  auto count = [&](unsigned bin) {
    if (kSliced) {
      const unsigned rel = bin - lo;
      if (rel < static_cast<unsigned>(slice_bins)) atomicAdd(lane_hist + rel * copies, 1u);
    } else {
      atomicAdd(lane_hist + bin * copies, 1u);
    }
  };
  const int rw = a.rect.x1 - a.rect.x0;
  GroupWalk walk(a.rect.y1 - a.rect.y0, div_up(rw, 8));
  while (walk.more()) {
    uint4 q[HeDepthPolicy::kHistUnroll];
    int n[HeDepthPolicy::kHistUnroll];
    walk.load_next<HeDepthPolicy::kHistUnroll, 8>(rw, [&](int y, int x, int samples) {
      return load_group(src + static_cast<std::ptrdiff_t>(a.rect.y0 + y) * a.stride + x, samples);
    }, q, n);
#pragma unroll
    for (int u = 0; u < HeDepthPolicy::kHistUnroll; ++u) {
      const unsigned w[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
      if (n[u] == 8) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          count((w[k] >> shift) & mask);
          count((w[k] >> (shift + 16)) & mask);
        }
      } else {
#pragma unroll
        for (int k = 0; k < 8; ++k)
          if (k < n[u]) count((w[k / 2] >> (shift + 16 * (k % 2))) & mask);
      }
    }
  }
  __syncthreads();
  std::uint32_t* hist = a.hist + static_cast<std::size_t>(c) * a.bins + lo;
  for (int i = threadIdx.x; i < slice_bins; i += blockDim.x) {
    std::uint32_t sum = 0;
    for (int k = 0; k < copies; ++k) sum += s_hist[i * copies + k];
    if (sum) atomicAdd(hist + i, sum);
  }
  if (a.temporal || !finished_last(a.ticket, gridDim.x * gridDim.y * gridDim.z)) return;
  // Each channel's LUT in final codes, its counts read with __ldcg (other blocks wrote them) and
  // then cleared for the next frame.
  for (int ch = 0; ch < a.channels; ++ch) {
    std::uint32_t* hist = a.hist + static_cast<std::size_t>(ch) * a.bins;
    std::uint16_t* lut = a.lut + static_cast<std::size_t>(ch) * a.bins;
    build_he_lut_block<HeDepthPolicy::kHistThreads, 16>(
        a.bins, rules::depth_max_code(a.depth), [&](int i) { return __ldcg(hist + i); },
        [&](int v, int code) { lut[v] = static_cast<std::uint16_t>(final_code(code, a.limited, a.depth)); });
    for (int i = threadIdx.x; i < a.bins; i += blockDim.x) hist[i] = 0;
  }
  if (threadIdx.x == 0) *a.ticket = 0;
}

struct HeDepthLutArgs {
  std::uint32_t* hist;  // channels x bins; cleared here for the next frame
  std::uint16_t* lut;   // channels x bins: final codes
  int depth, bins;
  bool limited;
  float alpha;
  HeHistory* history;
};

// Under he_temporal, one block per channel: the history step in parallel and the sequential
// float rule (thread t owns a run of `per` bins).
__global__ void __launch_bounds__(HeDepthPolicy::kLutThreads) he_depth_temporal_lut_kernel(HeDepthLutArgs a) {
  const int c = blockIdx.x;
  const int bins = a.bins, max_code = rules::depth_max_code(a.depth);
  std::uint32_t* hist = a.hist + static_cast<std::size_t>(c) * bins;
  std::uint16_t* lut = a.lut + static_cast<std::size_t>(c) * bins;
  const int per = (bins + HeDepthPolicy::kLutThreads - 1) / HeDepthPolicy::kLutThreads;
  const int begin = min(bins, static_cast<int>(threadIdx.x) * per), end = min(bins, begin + per);
  float* h = a.history->wide[c];
  // Never another depth's history: the host refuses one handed over, and a new depth resets it.
  const bool has = a.history->has_wide[c] != 0 && a.history->wide_bins[c] == bins;
  for (int i = begin; i < end; ++i) {
    h[i] = rules::he_history_step(has, a.alpha, __ldcg(hist + i), h[i]);
    hist[i] = 0;
  }
  // The float rule's sums are one sequential scan (their rounding is the CPU's only in that
  // order). Up to 8192 bins one thread scans the history in shared memory into the running sums
  // H[i0+1] + ... + H[v], and every thread then rounds its own entries (each entry depends only
  // on its sum and the scale, so this is he_lut_from_float bit for bit).
  __shared__ float s_sums[1 << HeDepthPolicy::kSliceLog2];
  __shared__ int s_i0;
  __shared__ float s_rest;
  if (bins <= (1 << HeDepthPolicy::kSliceLog2)) {
    for (int i = begin; i < end; ++i) s_sums[i] = h[i];
    __syncthreads();
    if (threadIdx.x == 0) {
      int i0 = 0;
      while (i0 < bins && !(s_sums[i0] > 0.f)) ++i0;
      float sum = 0.f;
      for (int i = i0 + 1; i < bins; ++i) {
        sum += s_sums[i];
        s_sums[i] = sum;
      }
      s_i0 = i0;
      s_rest = sum;
      a.history->has_wide[c] = 1;
      a.history->wide_bins[c] = bins;
    }
    __syncthreads();
    const int i0 = s_i0;
    const float rest = s_rest;
    const bool identity = i0 == bins || !(rest > 0.f);
    const float scale = identity ? 0.f : static_cast<float>(max_code) / rest;
    for (int i = begin; i < end; ++i) {
      const int code = identity ? i : (i <= i0 ? 0 : rules::he_code(s_sums[i], scale, max_code));
      lut[i] = static_cast<std::uint16_t>(final_code(code, a.limited, a.depth));
    }
    return;
  }
  // More bins: the same in chunks of 8192, twice (the scale needs the whole sum first).
  __syncthreads();
  constexpr int kChunk = 1 << HeDepthPolicy::kSliceLog2;
  if (threadIdx.x == 0) {
    int i0 = 0;
    while (i0 < bins && !(h[i0] > 0.f)) ++i0;
    s_i0 = i0;
  }
  __syncthreads();
  const int i0 = s_i0;
  float sum = 0.f;  // thread 0's running sum
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      const float rest = s_rest;
      if (i0 == bins || !(rest > 0.f)) {  // identity
        for (int i = threadIdx.x; i < bins; i += blockDim.x)
          lut[i] = static_cast<std::uint16_t>(final_code(i, a.limited, a.depth));
        break;
      }
      sum = 0.f;
    }
    for (int base = 0; base < bins; base += kChunk) {
      for (int i = threadIdx.x; i < kChunk; i += blockDim.x) s_sums[i] = h[base + i];
      __syncthreads();
      if (threadIdx.x == 0)
        for (int i = base > i0 + 1 ? base : i0 + 1; i < base + kChunk; ++i) {
          sum += s_sums[i - base];
          s_sums[i - base] = sum;
        }
      __syncthreads();
      if (pass == 1) {
        const float scale = static_cast<float>(max_code) / s_rest;
        for (int i = threadIdx.x; i < kChunk; i += blockDim.x) {
          const int v = base + i;
          const int code = v <= i0 ? 0 : rules::he_code(s_sums[i], scale, max_code);
          lut[v] = static_cast<std::uint16_t>(final_code(code, a.limited, a.depth));
        }
      }
      __syncthreads();  // the chunk is used up before the next one is staged
    }
    if (pass == 0 && threadIdx.x == 0) s_rest = sum;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    a.history->has_wide[c] = 1;
    a.history->wide_bins[c] = bins;
  }
}

// One plane of the map kernel: a LUT map of channel `lut`, a copy, or a fill with `fill` (the
// chroma of the luma and grey modes rides along instead of separate copies).
constexpr int kWideJobLut = 0, kWideJobCopy = 1, kWideJobFill = 2;
struct WideJob {
  const std::uint16_t* src;
  std::uint16_t* dst;
  int src_stride, dst_stride;  // samples
  int samples, height;         // per row, rows
  int kind, lut;
  std::uint16_t fill;
};

struct MapArgs {
  WideJob job[3];
  int shift, bins;
  const std::uint16_t* lut;  // channels x bins, final codes (shifted here)
};

// Eight samples per thread, one 16-byte load and store where the row allows it; blockIdx.z is
// the job.
__global__ void he_depth_map_kernel(MapArgs a) {
  // A select, not an index: an indexed parameter array would be copied to local memory.
  const WideJob j = blockIdx.z == 0 ? a.job[0] : (blockIdx.z == 1 ? a.job[1] : a.job[2]);
  const int x = 8 * (blockIdx.x * blockDim.x + threadIdx.x);
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= j.samples || y >= j.height) return;
  std::uint16_t* d = j.dst + static_cast<std::ptrdiff_t>(y) * j.dst_stride + x;
  const std::uint16_t* s = j.kind == kWideJobFill ? nullptr : j.src + static_cast<std::ptrdiff_t>(y) * j.src_stride + x;
  const std::uint16_t* lut = a.lut + static_cast<std::size_t>(j.lut) * a.bins;
  const int mask = a.bins - 1, shift = a.shift;
  auto map = [&](unsigned sample) -> unsigned {
    if (j.kind == kWideJobCopy) return sample;
    if (j.kind == kWideJobFill) return j.fill;
    return static_cast<unsigned>(__ldg(lut + ((sample >> shift) & mask))) << shift;
  };
  if (x + 8 <= j.samples &&
      ((reinterpret_cast<std::uintptr_t>(s) | reinterpret_cast<std::uintptr_t>(d)) & 15) == 0) {
    uint4 q = s ? __ldcs(reinterpret_cast<const uint4*>(s)) : make_uint4(0, 0, 0, 0);
    unsigned* w = &q.x;
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = (map(w[k] & 0xffffu) & 0xffffu) | (map(w[k] >> 16) << 16);
    __stcs(reinterpret_cast<uint4*>(d), q);
    return;
  }
  for (int k = 0; k < 8 && x + k < j.samples; ++k) d[k] = static_cast<std::uint16_t>(map(s ? s[k] : 0u));
}

}  // namespace

void HeDepthCuda::apply(const DevicePlaneU16* src, const DevicePlaneU16* dst, int channels,
                        int depth, bool limited, const HeParams& params, HeHistory* d_history,
                        const StateOrder& order, cudaStream_t stream,
                        const WidePlaneCompanion* companions, int companion_count) {
  const int w = src[0].width, h = src[0].height;
  const int bins = rules::he_bins(depth);
  if (channels + companion_count > 3) throw std::invalid_argument("he: more than three planes in one map");
  const std::size_t need = static_cast<std::size_t>(3) * (std::size_t{1} << kMaxDepth);
  if (hist_.size() < need) {
    hist_.reserve(need);
    lut_.reserve(need);
    ticket_.reserve(1);
    HAZEFREE_CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, hist_.bytes(), stream));
    HAZEFREE_CUDA_CHECK(cudaMemsetAsync(ticket_.get(), 0, ticket_.bytes(), stream));
  }
  if (sm_count_ == 0) sm_count_ = current_sm_count();
  const rules::HistogramRect rect = rules::histogram_rect(params.roi, w, h);
  const bool temporal = params.temporal < 1.f;
  HeDepthArgs a{};
  for (int c = 0; c < channels; ++c) a.src[c] = src[c].data;
  a.stride = src[0].stride;
  a.shift = src[0].shift;
  a.channels = channels;
  a.rect = rect;
  a.depth = depth;
  a.bins = bins;
  a.hist = hist_.get();
  a.temporal = temporal;
  a.limited = limited;
  a.ticket = ticket_.get();
  a.lut = lut_.get();
  const int slices = std::max(1, bins >> HeDepthPolicy::kSliceLog2);
  // HeDepthPolicy::kHistBlocksPerSm blocks per multiprocessor in all, fewer where
  // HeDepthPolicy::kHistUnroll groups per thread
  // cover the rectangle: one wave, each block's set-up and merge paid once.
  const long long groups = static_cast<long long>(rect.y1 - rect.y0) * div_up(rect.x1 - rect.x0, 8);
  const long long per_block = static_cast<long long>(HeDepthPolicy::kHistThreads) * HeDepthPolicy::kHistUnroll;
  const int blocks = static_cast<int>(std::max<long long>(
      1, std::min<long long>(std::max(1, HeDepthPolicy::kHistBlocksPerSm * sm_count_ / (channels * slices)),
                             (groups + per_block - 1) / per_block)));
  if (temporal && order.wait) HAZEFREE_CUDA_CHECK(cudaStreamWaitEvent(stream, order.wait, 0));
  const auto histogram_kernel = slices > 1 ? he_depth_histogram_kernel<true> : he_depth_histogram_kernel<false>;
  histogram_kernel<<<dim3(blocks, channels, slices), HeDepthPolicy::kHistThreads, 0, stream>>>(a);
  HAZEFREE_CUDA_CHECK_LAUNCH("he_depth_histogram_kernel");
  if (temporal) {
    HeDepthLutArgs l{hist_.get(), lut_.get(), depth, bins, limited, params.temporal, d_history};
    he_depth_temporal_lut_kernel<<<channels, HeDepthPolicy::kLutThreads, 0, stream>>>(l);
    HAZEFREE_CUDA_CHECK_LAUNCH("he_depth_temporal_lut_kernel");
    if (order.done) HAZEFREE_CUDA_CHECK(cudaEventRecord(order.done, stream));
  }
  MapArgs m{};
  int jobs = 0, widest = 0, tallest = 0;
  auto add = [&](const DevicePlaneU16& s, const DevicePlaneU16& d, int kind, int lut, std::uint16_t fill) {
    m.job[jobs++] = {s.data, d.data, s.stride, d.stride, d.width, d.height, kind, lut, fill};
    widest = std::max(widest, d.width);
    tallest = std::max(tallest, d.height);
  };
  for (int c = 0; c < channels; ++c) add(src[c], dst[c], kWideJobLut, c, 0);
  for (int i = 0; i < companion_count; ++i)
    add(companions[i].src, companions[i].dst, companions[i].fill ? kWideJobFill : kWideJobCopy, 0,
        companions[i].value);
  m.shift = src[0].shift;
  m.bins = bins;
  m.lut = lut_.get();
  he_depth_map_kernel<<<grid_2d(div_up(widest, 8), tallest, jobs), kBlock2d, 0, stream>>>(m);
  HAZEFREE_CUDA_CHECK_LAUNCH("he_depth_map_kernel");
}

}  // namespace hazefree::cuda
