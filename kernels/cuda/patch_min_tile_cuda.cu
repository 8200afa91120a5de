// The fused tile kernel of the DCP chain (SPEC 3, steps 1, 2 and 5 for patch radii up to
// kPatchTileMaxRadius): the channel minimum and the min filter in shared memory per 64x64 tile.
// Compiled with -fmad=false (CMakeLists.txt), as every DCP kernel file: the shared rules are
// evaluated with the CPU's roundings.
#include "kernels/cuda/patch_min_tile_cuda.hpp"

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

// ---- fused per-pixel minimum and min filter (small radii) -------------------------------------

// For r <= kPatchTileMaxRadius the chain computes the dark channel (and the raw transmission) in
// one kernel per 64x64 tile of outputs: the per-pixel channel minimum of the tile and its r-wide
// halo (+inf outside the image, which clips the window) goes into shared memory, then the same
// van Herk / Gil-Werman passes as MinFilterCuda run there: along rows (segments of k = 2r + 1,
// suffix minima into a second array, prefix minima in place, output j = min(suffix[j],
// prefix[j + 2r]), written over the suffix), then along the columns of those row results.
// Minima are exact, so the result is the two-pass filter's bit for bit; no plane of channel
// minima, no transposed plane and no row-filtered plane pass through device memory.
// Tile shape: 64x64 outputs with 512 threads and two (64 + 2r) x (64 + 2r) float arrays (49 KB
// at r = 7) fit four blocks on an SM, and 1080p's 510 tiles fill the H200's 132 SMs once.
struct PatchTilePolicy {
  static constexpr int kPatchTile = 64;
  static constexpr int kPatchThreads = 512;
};

struct PatchTileShape {
  int r, k, in_w, pitch;  // the region is in_w x in_w; pitch odd: consecutive lines hit other banks
  __host__ __device__ explicit PatchTileShape(int radius)
      : r(radius), k(2 * radius + 1), in_w(PatchTilePolicy::kPatchTile + 2 * radius),
        pitch((PatchTilePolicy::kPatchTile + 2 * radius) | 1) {}
  __host__ __device__ int shared_floats() const { return 2 * in_w * pitch; }
};

// Van Herk / Gil-Werman on `lines` lines of `count` values (`line_step` floats between lines,
// `pos_step` between positions): one (line, segment of k) per work item, suffix minima into
// `suffix`, prefix minima in place. Work items on consecutive lines go to consecutive threads.
__device__ __forceinline__ void segment_scans(float* values, float* suffix, int lines,
                                              int line_step, int count, int pos_step, int k) {
  const int segments = (count + k - 1) / k;
  for (int item = threadIdx.x; item < lines * segments; item += blockDim.x) {
    const int seg = item / lines, line = item - seg * lines;
    const int begin = seg * k, n = min(count, begin + k) - begin;
    float* v = values + line * line_step + begin * pos_step;
    float* s = suffix + line * line_step + begin * pos_step;
    float m = kInf;
#pragma unroll 4
    for (int i = n - 1; i >= 0; --i) {
      m = fminf(m, v[i * pos_step]);
      s[i * pos_step] = m;
    }
    m = kInf;
#pragma unroll 4
    for (int i = 0; i < n; ++i) {
      m = fminf(m, v[i * pos_step]);
      v[i * pos_step] = m;
    }
  }
}

// kNormalised = false: grey and the dark channel (steps 1 and 2); true: the raw transmission
// 1 - omega * min over the patch of min_c (I_c / A_c) (step 5), A read from `state`.
// With `block_maxima` (dark channel only), each of the tile's four 32x32 atmospheric-light
// blocks also gets its maximum, ranked as block_max_kernel ranks (step 3's first half).
template <bool kNormalised, typename T>
__global__ void __launch_bounds__(PatchTilePolicy::kPatchThreads, 4)
    patch_min_tile_kernel(FrameRef f, color::YuvToRgbF k, const AtmosphereState* state, int radius,
                          float omega, DevicePlaneF grey, DevicePlaneF out, float4* block_maxima,
                          unsigned* haze_histogram) {
  extern __shared__ float s_mem[];
  __shared__ unsigned s_haze[dcp::kHazeBins];  // SPEC 13: the tile's dark-channel histogram
  if (!kNormalised && haze_histogram)
    for (int b = threadIdx.x; b < dcp::kHazeBins; b += blockDim.x) s_haze[b] = 0;
  const PatchTileShape t(radius);
  float* s_a = s_mem;                     // values, then prefix minima; later column suffixes
  float* s_b = s_mem + t.in_w * t.pitch;  // row suffixes, then row results
  const int x0 = blockIdx.x * PatchTilePolicy::kPatchTile, y0 = blockIdx.y * PatchTilePolicy::kPatchTile;
  float a0 = 1.f, a1 = 1.f, a2 = 1.f;
  if (kNormalised) {
    a0 = state->value[0];
    a1 = state->value[1];
    a2 = state->value[2];
    omega = omega * state->strength;  // SPEC 13 (s = 1 without auto strength)
  }
  // Region pixel (lx, ly) at (x0 - r + lx, y0 - r + ly); threads step through it in raster order
  // without dividing.
  const int step_y = PatchTilePolicy::kPatchThreads / t.in_w,
            step_x = PatchTilePolicy::kPatchThreads - step_y * t.in_w;
  int ly = threadIdx.x / t.in_w, lx = threadIdx.x - ly * t.in_w;
  for (; ly < t.in_w; ly += step_y) {
    const int x = x0 - t.r + lx, y = y0 - t.r + ly;
    float v = kInf;
    if (x >= 0 && x < f.width && y >= 0 && y < f.height) {
      const Rgb3f c = load_rgb_f<T>(f, k, x, y);
      if (kNormalised) {
        v = dcp::min3(c.r / a0, c.g / a1, c.b / a2);
      } else {
        v = dcp::min3(c.r, c.g, c.b);
        if (lx >= t.r && lx < t.r + PatchTilePolicy::kPatchTile && ly >= t.r &&
            ly < t.r + PatchTilePolicy::kPatchTile)
          plane_row(grey, y)[x] = dcp::grey(c.r, c.g, c.b);
      }
    }
    s_a[ly * t.pitch + lx] = v;
    lx += step_x;
    if (lx >= t.in_w) {
      lx -= t.in_w;
      ++ly;
    }
  }
  __syncthreads();
  // Rows: in_w lines of in_w values; the results (PatchTilePolicy::kPatchTile per line) over the
  // suffixes.
  segment_scans(s_a, s_b, t.in_w, t.pitch, t.in_w, 1, t.k);
  __syncthreads();
  for (int line = threadIdx.x / PatchTilePolicy::kPatchTile; line < t.in_w;
       line += PatchTilePolicy::kPatchThreads / PatchTilePolicy::kPatchTile) {
    const int j = threadIdx.x % PatchTilePolicy::kPatchTile;
    const int i = line * t.pitch + j;
    s_b[i] = fminf(s_b[i], s_a[i + 2 * t.r]);
  }
  __syncthreads();
  // Columns: PatchTilePolicy::kPatchTile lines (consecutive threads on consecutive columns) of in_w
  // values.
  segment_scans(s_b, s_a, PatchTilePolicy::kPatchTile, 1, t.in_w, t.pitch, t.k);
  __syncthreads();
  // Thread (w, j), w = threadIdx.x / 64: column j, rows w, w + 8, ..., w + 56; its first four
  // rows lie in the upper atmospheric-light block, the others in the lower one.
  static_assert(PatchTilePolicy::kPatchTile == 2 * kBlock &&
                    PatchTilePolicy::kPatchThreads / PatchTilePolicy::kPatchTile * 8 ==
                        PatchTilePolicy::kPatchTile,
                "a tile holds 2x2 atmospheric-light blocks, eight rows per thread");
  const int j = threadIdx.x % PatchTilePolicy::kPatchTile;
  float dark[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int ly = threadIdx.x / PatchTilePolicy::kPatchTile +
                   i * (PatchTilePolicy::kPatchThreads / PatchTilePolicy::kPatchTile);
    const int x = x0 + j, y = y0 + ly;
    dark[i] = -kInf;
    if (x >= f.width || y >= f.height) continue;
    const float m = fminf(s_a[ly * t.pitch + j], s_b[(ly + 2 * t.r) * t.pitch + j]);
    plane_row(out, y)[x] = kNormalised ? dcp::raw_transmission(m, omega) : m;
    dark[i] = m;
  }
  if (!kNormalised && haze_histogram) {
    // Integer counts, so the histogram does not depend on the order of the additions.
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (dark[i] != -kInf) atomicAdd(&s_haze[dcp::haze_bin(dark[i])], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < dcp::kHazeBins; b += blockDim.x)
      if (s_haze[b]) atomicAdd(&haze_histogram[b], s_haze[b]);
  }
  if (kNormalised || !block_maxima) return;
  // Block maxima in two steps: the largest dark value of each block (shuffles, then the warps
  // through shared memory), then among the pixels holding it (few, but all of a flat block)
  // the larger grey and then the first in raster order, by a shared atomicMax on the key
  // (grey bits, 1023 - position in the block); grey >= 0, so its bits order like its values.
  // [block row][block column][warp pair]
  __shared__ float s_warp_max[2][2][PatchTilePolicy::kPatchThreads / 64];
  __shared__ float s_max[2][2];
  __shared__ unsigned long long s_key[2][2];
  const int warp = threadIdx.x / 32, bx = j / kBlock;
  float top[2] = {-kInf, -kInf};
#pragma unroll
  for (int i = 0; i < 8; ++i) top[i / 4] = fmaxf(top[i / 4], dark[i]);
#pragma unroll
  for (int b = 0; b < 2; ++b)
    for (int o = 16; o > 0; o /= 2) top[b] = fmaxf(top[b], __shfl_xor_sync(0xffffffffu, top[b], o));
  if (threadIdx.x % 32 == 0) {
    s_warp_max[0][bx][warp / 2] = top[0];
    s_warp_max[1][bx][warp / 2] = top[1];
  }
  __syncthreads();
  if (threadIdx.x < 4) {
    const int by = threadIdx.x / 2, cx = threadIdx.x % 2;
    float m = s_warp_max[by][cx][0];
    for (int w = 1; w < PatchTilePolicy::kPatchThreads / 64; ++w) m = fmaxf(m, s_warp_max[by][cx][w]);
    s_max[by][cx] = m;
    s_key[by][cx] = 0;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int ly = threadIdx.x / PatchTilePolicy::kPatchTile +
                   i * (PatchTilePolicy::kPatchThreads / PatchTilePolicy::kPatchTile);
    if (dark[i] != s_max[i / 4][bx] || dark[i] == -kInf) continue;
    const int y = y0 + ly, x = x0 + j;
    const unsigned g = __float_as_uint(__fadd_rn(plane_row(grey, y)[x], 0.f));
    const unsigned position = (ly % kBlock) * kBlock + j % kBlock;
    atomicMax(&s_key[i / 4][bx], (static_cast<unsigned long long>(g) << 32) |
                                     (kBlock * kBlock - 1 - position));
  }
  __syncthreads();
  if (threadIdx.x < 4) {
    const int by = threadIdx.x / 2, cx = threadIdx.x % 2;
    const int gx = blockIdx.x * 2 + cx, gy = blockIdx.y * 2 + by;
    const int grid_w = (f.width + kBlock - 1) / kBlock, grid_h = (f.height + kBlock - 1) / kBlock;
    if (gx < grid_w && gy < grid_h) {
      const unsigned long long key = s_key[by][cx];
      const int position = kBlock * kBlock - 1 - static_cast<int>(key & 0xffffffffu);
      block_maxima[gy * grid_w + gx] =
          make_float4(s_max[by][cx], __uint_as_float(static_cast<unsigned>(key >> 32)),
                      __int_as_float(gx * kBlock + position % kBlock),
                      __int_as_float(gy * kBlock + position / kBlock));
    }
  }
}

template <bool kNormalised, typename T>
void launch_patch_min_tile_as(const ImageView& d_frame, const AtmosphereState* d_state, int radius,
                              float omega, const DevicePlaneF& grey, const DevicePlaneF& out,
                              float4* block_maxima, unsigned* haze_histogram, cudaStream_t stream) {
  const PatchTileShape t(radius);
  const int shared = t.shared_floats() * static_cast<int>(sizeof(float));
  // Above 48 KiB (already at the default radius 7) the kernel needs a raised limit, which
  // belongs to the current CUDA context (kernels/cuda/cuda_context.hpp).
  if (shared > 48 * 1024) set_max_dynamic_shared_memory(patch_min_tile_kernel<kNormalised, T>, shared);
  const FrameRef f = frame_ref(d_frame);
  const dim3 grid(div_up(f.width, PatchTilePolicy::kPatchTile),
                  div_up(f.height, PatchTilePolicy::kPatchTile));
  patch_min_tile_kernel<kNormalised, T><<<grid, PatchTilePolicy::kPatchThreads, shared, stream>>>(
      f, decode_coefficients_f(d_frame), d_state, radius, omega, grey, out, block_maxima, haze_histogram);
  HAZEFREE_CUDA_CHECK_LAUNCH("patch_min_tile_kernel");
}

template <bool kNormalised>
void launch_patch_min_tile(const ImageView& d_frame, const AtmosphereState* d_state, int radius,
                           float omega, const DevicePlaneF& grey, const DevicePlaneF& out,
                           float4* block_maxima, unsigned* haze_histogram, cudaStream_t stream) {
  if (d_frame.depth > 8)
    launch_patch_min_tile_as<kNormalised, std::uint16_t>(d_frame, d_state, radius, omega, grey,
                                                         out, block_maxima, haze_histogram, stream);
  else
    launch_patch_min_tile_as<kNormalised, std::uint8_t>(d_frame, d_state, radius, omega, grey,
                                                        out, block_maxima, haze_histogram, stream);
}

}  // namespace

void launch_grey_and_dark_channel(const ImageView& d_frame, int radius, const DevicePlaneF& grey,
                                  const DevicePlaneF& dark, float4* block_maxima,
                                  cudaStream_t stream, unsigned* haze_histogram) {
  if (radius < 0 || radius > kPatchTileMaxRadius)
    throw std::invalid_argument("dark channel: the fused kernel takes radii 0.." +
                                std::to_string(kPatchTileMaxRadius));
  launch_patch_min_tile<false>(d_frame, nullptr, radius, 0.f, grey, dark, block_maxima,
                               haze_histogram, stream);
}

void launch_raw_transmission(const ImageView& d_frame, const AtmosphereState* d_state, int radius,
                             float omega, const DevicePlaneF& out, cudaStream_t stream) {
  if (radius < 0 || radius > kPatchTileMaxRadius)
    throw std::invalid_argument("raw transmission: the fused kernel takes radii 0.." +
                                std::to_string(kPatchTileMaxRadius));
  launch_patch_min_tile<true>(d_frame, d_state, radius, omega, DevicePlaneF{}, out, nullptr,
                              nullptr, stream);
}

}  // namespace hazefree::cuda
