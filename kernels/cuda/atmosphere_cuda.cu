// The atmospheric light on the GPU (SPEC 3, steps 3 and 4): block maxima, the selection of the top
// blocks and the inter-frame update. Compiled with -fmad=false (CMakeLists.txt), as every DCP
// kernel file: the shared rules are evaluated with the CPU's roundings.
#include "kernels/cuda/atmosphere_cuda.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cfloat>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/dcp_device.cuh"
#include "kernels/cuda/frame_access.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/dcp_rules.hpp"

namespace hazefree::cuda {
namespace {

// ---- atmospheric light ----------------------------------------------------------------------

struct Candidate {
  float dark, grey;
  int x, y;
};

// Better in the order of SPEC 3: larger dark, then larger grey, then first in raster order.
__device__ __forceinline__ bool better(const Candidate& a, const Candidate& b) {
  if (a.dark != b.dark) return a.dark > b.dark;
  if (a.grey != b.grey) return a.grey > b.grey;
  return a.y != b.y ? a.y < b.y : a.x < b.x;
}
// One CUDA block of 32x8 threads per 32x32 image block.
// Also adds the block's dark values to the haze histogram (SPEC 13).
__global__ void block_max_kernel(DevicePlaneF dark, DevicePlaneF grey, float4* blocks,
                                 unsigned* haze_histogram) {
  __shared__ unsigned s_haze[dcp::kHazeBins];
  const int tid_all = threadIdx.y * blockDim.x + threadIdx.x;
  for (int b = tid_all; b < dcp::kHazeBins; b += blockDim.x * blockDim.y) s_haze[b] = 0;
  __syncthreads();
  const int x = blockIdx.x * kBlock + threadIdx.x;
  const int y_first = blockIdx.y * kBlock;
  Candidate best{-kInf, -kInf, 0x7fffffff, 0x7fffffff};
  if (x < dark.width) {
    for (int j = threadIdx.y; j < kBlock; j += blockDim.y) {
      const int y = y_first + j;
      if (y >= dark.height) break;
      const Candidate c{plane_row(dark, y)[x], plane_row(grey, y)[x], x, y};
      if (haze_histogram) atomicAdd(&s_haze[dcp::haze_bin(c.dark)], 1u);
      if (better(c, best)) best = c;
    }
  }
  __syncthreads();
  if (haze_histogram)
    for (int b = tid_all; b < dcp::kHazeBins; b += blockDim.x * blockDim.y)
      if (s_haze[b]) atomicAdd(&haze_histogram[b], s_haze[b]);
  // Warp shuffles, then the 8 warp winners through shared memory.
  for (int o = 16; o > 0; o /= 2) {
    Candidate other;
    other.dark = __shfl_down_sync(0xffffffffu, best.dark, o);
    other.grey = __shfl_down_sync(0xffffffffu, best.grey, o);
    other.x = __shfl_down_sync(0xffffffffu, best.x, o);
    other.y = __shfl_down_sync(0xffffffffu, best.y, o);
    if (better(other, best)) best = other;
  }
  __shared__ Candidate s_best[8];
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) s_best[threadIdx.y] = best;
  __syncthreads();
  if (tid == 0) {
    Candidate b = s_best[0];
    for (int i = 1; i < 8; ++i)
      if (better(s_best[i], b)) b = s_best[i];
    blocks[blockIdx.y * gridDim.x + blockIdx.x] =
        make_float4(b.dark, b.grey, __int_as_float(b.x), __int_as_float(b.y));
  }
}

// SPEC 13, by the 32 lanes of a warp: the first bin of `histogram` (dcp::kHazeBins counts in
// shared memory) whose cumulative count reaches `wanted` (the last bin when none does), as
// dcp::haze_percentile_bin finds it; every lane returns it. Lane l sums bins [l * per_lane,
// (l + 1) * per_lane), a scan over the lanes finds the lane where the count is reached, that
// lane its bin.
__device__ int percentile_bin_in_warp(const unsigned* histogram, long long wanted) {
  constexpr int per_lane = (dcp::kHazeBins + 31) / 32;
  const int lane = threadIdx.x % 32;
  long long mine = 0;
  for (int j = 0; j < per_lane; ++j) {
    const int b = lane * per_lane + j;
    if (b < dcp::kHazeBins) mine += histogram[b];
  }
  long long upto = mine;  // inclusive scan
  for (int o = 1; o < 32; o *= 2) {
    const long long v = __shfl_up_sync(0xffffffffu, upto, o);
    if (lane >= o) upto += v;
  }
  const unsigned hit = __ballot_sync(0xffffffffu, upto >= wanted && upto - mine < wanted);
  int bin = dcp::kHazeBins - 1;
  if (hit && lane == __ffs(hit) - 1) {
    long long seen = upto - mine;
    for (int j = 0; j < per_lane && lane * per_lane + j < dcp::kHazeBins; ++j) {
      seen += histogram[lane * per_lane + j];
      if (seen >= wanted) {
        bin = lane * per_lane + j;
        break;
      }
    }
  }
  return __shfl_sync(0xffffffffu, bin, hit ? __ffs(hit) - 1 : 0);
}

// The selection kernel's tuning: one block of 1024 threads; the blocks' keys in 64 KB of dynamic
// shared memory up to 8192 blocks (4K), in global memory beyond.
struct AtmosphereSelectPolicy {
  static constexpr int kSelectThreads = 1024;
  static constexpr int kSharedKeys = 8192;  // 64 KB of dynamic shared memory
};

// The ranking key of a block without its index: dark then grey, both >= 0, so their IEEE bits
// order like the values (-0 folded to +0 first).
__device__ __forceinline__ unsigned long long block_key(const float4& b) {
  const unsigned d = __float_as_uint(__fadd_rn(b.x, 0.f));
  const unsigned g = __float_as_uint(__fadd_rn(b.y, 0.f));
  return (static_cast<unsigned long long>(d) << 32) | g;
}

// One block: finds the `used` best blocks by a most-significant-digit radix select on the key
// (8 passes of 8 bits) and, among blocks equal to the threshold key, the first by index; sums
// their RGB in double (exact for these values, so the order does not matter); then the
// inter-frame constraint of step 4 with the expressions of kernels/dcp_rules.hpp.
__global__ void __launch_bounds__(AtmosphereSelectPolicy::kSelectThreads)
    atmosphere_select_kernel(const float4* __restrict__ blocks, int count, int used, FrameRef f,
                             color::YuvToRgbF k, float smoothing, float max_step, float scene_cut,
                             unsigned* haze_histogram, bool auto_strength,
                             AtmosphereState* tracker, AtmosphereState* frame_state) {
  __shared__ unsigned s_haze[dcp::kHazeBins];
  __shared__ int s_haze_bin[2];
  __shared__ unsigned s_hist[256];
  __shared__ unsigned long long s_prefix;
  __shared__ unsigned s_remaining;
  using Scan = cub::BlockScan<int, AtmosphereSelectPolicy::kSelectThreads>;
  using Reduce = cub::BlockReduce<double, AtmosphereSelectPolicy::kSelectThreads>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Reduce::TempStorage reduce;
  } s_temp;
  // The keys sit in shared memory when they fit (AtmosphereSelectPolicy::kSharedKeys: 2040
  // blocks at 1080p, 8160 at 4K); beyond that each pass reads them from the block list again.
  extern __shared__ unsigned long long s_keys[];
  const bool cached = count <= AtmosphereSelectPolicy::kSharedKeys;
  const int tid = threadIdx.x;
  if (cached)
    for (int i = tid; i < count; i += blockDim.x) s_keys[i] = block_key(blocks[i]);
  auto key_of = [&](int i) { return cached ? s_keys[i] : block_key(blocks[i]); };
  if (tid == 0) {
    s_prefix = 0;
    s_remaining = static_cast<unsigned>(used);
  }
  // SPEC 13: the frame's dark-channel histogram, left zeroed for the next frame.
  for (int b = tid; b < dcp::kHazeBins; b += blockDim.x) {
    s_haze[b] = haze_histogram ? haze_histogram[b] : (b == 0 ? 0xffffffffu : 0u);
    if (haze_histogram) haze_histogram[b] = 0;
  }
  __syncthreads();
  if (tid < 32) {
    const long long pixels = static_cast<long long>(f.width) * f.height;
    const int low = percentile_bin_in_warp(s_haze, dcp::haze_wanted_count(pixels, dcp::kHazePercentileLow));
    const int bulk = percentile_bin_in_warp(s_haze, dcp::haze_wanted_count(pixels, dcp::kHazePercentileBulk));
    if (tid == 0) {
      s_haze_bin[0] = low;
      s_haze_bin[1] = bulk;
    }
  }
  __syncthreads();
  unsigned long long mask = 0;
  for (int pass = 0; pass < 8; ++pass) {
    const int shift = 56 - 8 * pass;
    for (int i = tid; i < 256; i += blockDim.x) s_hist[i] = 0;
    __syncthreads();
    const unsigned long long prefix = s_prefix;
    for (int i = tid; i < count; i += blockDim.x) {
      const unsigned long long key = key_of(i);
      if ((key & mask) == prefix) atomicAdd(&s_hist[(key >> shift) & 255], 1u);
    }
    __syncthreads();
    if (tid < 32) {
      // Lane l owns digits 255 - 8l down to 248 - 8l: counts above each digit, from the top.
      unsigned c[8];
      unsigned lane_sum = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        c[j] = s_hist[255 - 8 * tid - j];
        lane_sum += c[j];
      }
      unsigned above = lane_sum;  // inclusive scan over lanes
#pragma unroll
      for (int o = 1; o < 32; o *= 2) {
        const unsigned v = __shfl_up_sync(0xffffffffu, above, o);
        if (tid >= o) above += v;
      }
      above -= lane_sum;  // exclusive
      const unsigned remaining = s_remaining;
      const unsigned hit = __ballot_sync(0xffffffffu, above < remaining && remaining <= above + lane_sum);
      __syncwarp();  // every lane has read s_remaining before one lane rewrites it
      if (tid == __ffs(hit) - 1) {
        unsigned before = above;
        for (int j = 0; j < 8; ++j) {
          if (remaining <= before + c[j]) {
            s_prefix = prefix | (static_cast<unsigned long long>(255 - 8 * tid - j) << shift);
            s_remaining = remaining - before;
            break;
          }
          before += c[j];
        }
      }
    }
    mask |= 255ull << shift;
    __syncthreads();
  }
  const unsigned long long threshold = s_prefix;
  const int take_equal = static_cast<int>(s_remaining);  // blocks equal to the threshold to take

  // Blocked arrangement: thread t owns [t * per, (t + 1) * per), so the equal ones are taken in
  // index order through an exclusive scan of the per-thread counts.
  const int per = (count + AtmosphereSelectPolicy::kSelectThreads - 1) /
                  AtmosphereSelectPolicy::kSelectThreads;
  const int first = tid * per, last = min(count, first + per);
  int equal = 0;
  for (int i = first; i < last; ++i) equal += key_of(i) == threshold;
  int equal_before = 0;
  Scan(s_temp.scan).ExclusiveSum(equal, equal_before);
  __syncthreads();
  double sum[3] = {0.0, 0.0, 0.0};
  for (int i = first; i < last; ++i) {
    const float4 b = blocks[i];
    const unsigned long long key = key_of(i);
    bool take = key > threshold;
    if (key == threshold) take = equal_before++ < take_equal;
    if (take) {
      const Rgb3f c = load_rgb_f(f, k, __float_as_int(b.z), __float_as_int(b.w));
      sum[0] += c.r;
      sum[1] += c.g;
      sum[2] += c.b;
    }
  }
  double total[3];
  for (int c = 0; c < 3; ++c) {
    total[c] = Reduce(s_temp.reduce).Sum(sum[c]);
    __syncthreads();
  }
  if (tid == 0) {
    float est[3];
    for (int c = 0; c < 3; ++c)
      est[c] = fmaxf(dcp::kMinAtmosphere, static_cast<float>(total[c] / used));
    AtmosphereState s = *tracker;
    const bool cut = dcp::next_atmospheric_light(s.has_value != 0, s.value, est, smoothing, max_step, scene_cut);
    for (int c = 0; c < 3; ++c) s.estimate[c] = est[c];
    s.haze_estimate = dcp::haze_from_bins(s_haze_bin[0], s_haze_bin[1], est);
    s.haze = dcp::next_haze_index(cut, s.haze, s.haze_estimate);  // a cut or the first frame
    s.strength = dcp::auto_strength(auto_strength, s.haze);
    s.has_value = 1;
    s.last_cut = cut ? 1 : 0;
    *tracker = s;
    *frame_state = s;
  }
}

}  // namespace

AtmosphereCuda::AtmosphereCuda() : frame_state_(1), haze_histogram_(dcp::kHazeBins) {
  HAZEFREE_CUDA_CHECK(cudaMemset(haze_histogram_.get(), 0, dcp::kHazeBins * sizeof(unsigned)));
}

int AtmosphereCuda::top_count(int width, int height, float fraction) {
  const int blocks = div_up(width, kBlock) * div_up(height, kBlock);
  return dcp::atmosphere_top_count(blocks, fraction);
}

float4* AtmosphereCuda::block_maxima(int width, int height) {
  blocks_.reserve(static_cast<std::size_t>(div_up(width, kBlock)) * div_up(height, kBlock));
  return blocks_.get();
}

void AtmosphereCuda::estimate_and_update(const DevicePlaneF& dark, const DevicePlaneF& grey,
                                         const ImageView& d_frame, const DcpParams& params,
                                         AtmosphereState* d_tracker, const StateOrder& order,
                                         cudaStream_t stream) {
  const int bw = div_up(dark.width, kBlock), bh = div_up(dark.height, kBlock);
  block_max_kernel<<<dim3(bw, bh), dim3(kBlock, 8), 0, stream>>>(
      dark, grey, block_maxima(dark.width, dark.height), haze_histogram());
  HAZEFREE_CUDA_CHECK_LAUNCH("block_max_kernel");
  update_from_block_maxima(d_frame, params, d_tracker, order, stream);
}

void AtmosphereCuda::update_from_block_maxima(const ImageView& d_frame, const DcpParams& params,
                                              AtmosphereState* d_tracker,
                                              const StateOrder& order, cudaStream_t stream) {
  const int count = div_up(d_frame.width, kBlock) * div_up(d_frame.height, kBlock);
  const float4* blocks = block_maxima(d_frame.width, d_frame.height);
  if (order.wait) HAZEFREE_CUDA_CHECK(cudaStreamWaitEvent(stream, order.wait, 0));
  const int used = dcp::atmosphere_top_count(count, params.a_top_fraction);
  const std::size_t shared =
      count <= AtmosphereSelectPolicy::kSharedKeys ? count * sizeof(unsigned long long) : 0;
  if (shared > 48 * 1024)
    set_max_dynamic_shared_memory(atmosphere_select_kernel,
                                  static_cast<int>(AtmosphereSelectPolicy::kSharedKeys *
                                                   sizeof(unsigned long long)));
  atmosphere_select_kernel<<<1, AtmosphereSelectPolicy::kSelectThreads, shared, stream>>>(
      blocks, count, used, frame_ref(d_frame),
      decode_coefficients_f(d_frame), params.a_smoothing, params.a_max_step,
      params.a_scene_cut, haze_histogram(), params.auto_strength, d_tracker, frame_state_.get());
  HAZEFREE_CUDA_CHECK_LAUNCH("atmosphere_select_kernel");
  if (order.done) HAZEFREE_CUDA_CHECK(cudaEventRecord(order.done, stream));
}

void reset_atmosphere(AtmosphereState* d_tracker, cudaStream_t stream) {
  HAZEFREE_CUDA_CHECK(cudaMemsetAsync(d_tracker, 0, sizeof(AtmosphereState), stream));
}

}  // namespace hazefree::cuda
