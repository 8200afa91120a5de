// Kernels of the dark channel prior chain (SPEC 3). Compiled with -fmad=false (CMakeLists.txt):
// the shared rules are evaluated with the CPU's roundings.
#include "kernels/cuda/dehaze_cuda.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cfloat>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/frame_access.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/dcp_rules.hpp"

namespace hazefree::cuda {
namespace {

constexpr float kInf = __builtin_huge_valf();

__device__ __forceinline__ float* plane_row(const DevicePlaneF& p, int y) {
  return p.data + static_cast<std::ptrdiff_t>(y) * p.stride;
}

// ---- per-pixel kernels ----------------------------------------------------------------------

// 32x32 pixel tiles, 32x8 threads: the grey guide is written as is, the channel minimum through
// a padded shared tile transposed (height x width), ready for the row pass of the min filter.
constexpr int kTile = 32;
constexpr int kTileRows = 8;

template <bool kNormalised, typename T>
__global__ void channel_min_transposed_kernel(FrameRef f, color::YuvToRgbF k,
                                              const AtmosphereState* state, DevicePlaneF grey,
                                              DevicePlaneF minimum_t) {
  __shared__ float s_tile[kTile][kTile + 1];
  const int x = blockIdx.x * kTile + threadIdx.x;
  const int y0 = blockIdx.y * kTile;
  float a0 = 1.f, a1 = 1.f, a2 = 1.f;
  if (kNormalised) {
    a0 = state->value[0];
    a1 = state->value[1];
    a2 = state->value[2];
  }
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const int y = y0 + j;
    if (x < f.width && y < f.height) {
      const Rgb3f c = load_rgb_f<T>(f, k, x, y);
      if (kNormalised) {
        s_tile[j][threadIdx.x] = dcp::min3(c.r / a0, c.g / a1, c.b / a2);
      } else {
        plane_row(grey, y)[x] = dcp::grey(c.r, c.g, c.b);
        s_tile[j][threadIdx.x] = dcp::min3(c.r, c.g, c.b);
      }
    }
  }
  __syncthreads();
  const int ox = y0 + threadIdx.x;  // column of the transposed plane = image row
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const int oy = blockIdx.x * kTile + j;  // row of the transposed plane = image column
    if (ox < f.height && oy < f.width) plane_row(minimum_t, oy)[ox] = s_tile[threadIdx.x][j];
  }
}

template <typename T>
__global__ void frame_to_rgb_f32_kernel(FrameRef f, color::YuvToRgbF k, DevicePlaneF r,
                                        DevicePlaneF g, DevicePlaneF b) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= f.width || y >= f.height) return;
  const Rgb3f c = load_rgb_f<T>(f, k, x, y);
  plane_row(r, y)[x] = c.r;
  plane_row(g, y)[x] = c.g;
  plane_row(b, y)[x] = c.b;
}

// One thread per chroma sample (or per pixel without chroma): the pixels of its block in raster
// order, recovered and written, their clamped RGB summed for the rounded-average chroma.
// (A thread per pixel with the chroma sums through shared memory measured slower for yuv420p:
// 29.1 against 24.4 us at 1080p, H200, 2026-11-21.) Codes are those of the frame's depth; T is
// the storage of a sample, as in load_rgb_f.
template <typename T>
__global__ void recover_to_frame_kernel(FrameRef in, color::YuvToRgbF kin, DevicePlaneF t_plane,
                                        const AtmosphereState* state, float k_tolerance, float t0,
                                        float brightness, FrameRef out, color::RgbToYuvF kout) {
  const int bx = blockIdx.x * blockDim.x + threadIdx.x;
  const int by = blockIdx.y * blockDim.y + threadIdx.y;
  const bool chroma = out.yuv;
  const int sx = chroma ? out.sx : 0, sy = chroma ? out.sy : 0;
  const int x0 = bx << sx, y0 = by << sy;
  if (x0 >= out.width || y0 >= out.height) return;
  const int x1 = min(out.width, (bx + 1) << sx), y1 = min(out.height, (by + 1) << sy);
  const float a0 = state->value[0], a1 = state->value[1], a2 = state->value[2];
  const float mean_a = (a0 + a1 + a2) / 3.0f;
  float sr = 0.f, sg = 0.f, sb = 0.f;
  // Input and output share the format, so the block's pixels share the input chroma sample
  // (bx, by) too: its terms are loaded once.
  ChromaTermsF terms{};
  if (chroma) terms = chroma_terms_f<T>(in, kin, bx, by);
  for (int y = y0; y < y1; ++y) {
    std::uint8_t* row = out.p0 + static_cast<std::ptrdiff_t>(y) * out.s0;
    const std::uint8_t* in_row = in.p0 + static_cast<std::ptrdiff_t>(y) * in.s0;
    for (int x = x0; x < x1; ++x) {
      const Rgb3f c = chroma ? yuv_pixel_rgb_f(read_sample<T>(in_row, x, in.shift), kin, terms)
                             : load_rgb_f<T>(in, kin, x, y);
      const float t = dcp::tolerate(plane_row(t_plane, y)[x], c.r, c.g, c.b, mean_a, k_tolerance);
      const float r = clamp01(dcp::recover(c.r, a0, t, t0, brightness));
      const float g = clamp01(dcp::recover(c.g, a1, t, t0, brightness));
      const float b = clamp01(dcp::recover(c.b, a2, t, t0, brightness));
      if (out.format == PixelFormat::rgb24) {
        write_sample<T>(row, 3 * x, round_code(r * kout.max, kout.max), out.shift);
        write_sample<T>(row, 3 * x + 1, round_code(g * kout.max, kout.max), out.shift);
        write_sample<T>(row, 3 * x + 2, round_code(b * kout.max, kout.max), out.shift);
        continue;
      }
      write_sample<T>(row, x,
                      round_code(kout.y_offset + kout.y_r * r + kout.y_g * g + kout.y_b * b,
                                 kout.max),
                      out.shift);
      sr += r;
      sg += g;
      sb += b;
    }
  }
  if (!chroma) return;
  const float n = static_cast<float>((y1 - y0) * (x1 - x0));
  const float mr = sr / n, mg = sg / n, mb = sb / n;
  const std::ptrdiff_t crow = static_cast<std::ptrdiff_t>(by) * out.s1;
  const int ci = bx * out.cstep;
  write_sample<T>(out.p1 + crow, ci,
                  round_code(kout.c_zero + kout.cb_r * mr + kout.cb_g * mg + kout.cb_b * mb,
                             kout.max),
                  out.shift);
  write_sample<T>(out.p2 + crow, ci,
                  round_code(kout.c_zero + kout.cr_r * mr + kout.cr_g * mg + kout.cr_b * mb,
                             kout.max),
                  out.shift);
}

// ---- min filter -----------------------------------------------------------------------------

// out (height x width) = transpose of in (width x height). 32x33 shared tile: the padding
// column keeps the column reads of the tile free of bank conflicts.
__global__ void transpose_kernel(const float* __restrict__ in, int in_stride, int width,
                                 int height, float* __restrict__ out, int out_stride) {
  __shared__ float s_tile[kTile][kTile + 1];
  const int x = blockIdx.x * kTile + threadIdx.x;
  const int y0 = blockIdx.y * kTile;
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const int y = y0 + j;
    if (x < width && y < height) s_tile[j][threadIdx.x] = in[static_cast<std::ptrdiff_t>(y) * in_stride + x];
  }
  __syncthreads();
  const int ox = y0 + threadIdx.x;  // output column = input row
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const int oy = blockIdx.x * kTile + j;  // output row = input column
    if (ox < height && oy < width)
      out[static_cast<std::ptrdiff_t>(oy) * out_stride + ox] = s_tile[threadIdx.x][j];
  }
}

// Van Herk / Gil-Werman along columns. The padded column (r samples of +inf either side) is
// cut into blocks of k = 2r + 1; output y (padded window [y, y + 2r]) is
// min(suffix_min[y], prefix_min[y + 2r]). One thread per (column, block): the threads of a warp
// read consecutive columns of one row (coalesced). The suffix minima go to `out` first, then
// the prefix minima of the next block are folded in.
__global__ void column_min_kernel(const float* __restrict__ in, int in_stride, int width,
                                  int height, int radius, float* out, int out_stride,
                                  float omega) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int block = blockIdx.y * blockDim.y + threadIdx.y;
  const int k = 2 * radius + 1;
  const int base = block * k;
  if (x >= width || base >= height) return;
  auto value = [&](int p) {
    return (p >= radius && p < height + radius)
               ? in[static_cast<std::ptrdiff_t>(p - radius) * in_stride + x]
               : kInf;
  };
  const int end = min(base + k, height);  // outputs y in [base, end)
  float s = kInf;
  for (int p = base + k - 1; p >= base; --p) {
    s = fminf(s, value(p));
    if (p < end) out[static_cast<std::ptrdiff_t>(p) * out_stride + x] = s;
  }
  float prefix = kInf;
  for (int y = base; y < end; ++y) {
    float* o = out + static_cast<std::ptrdiff_t>(y) * out_stride + x;
    float m = *o;
    if (y > base) {
      prefix = fminf(prefix, value(y + 2 * radius));
      m = fminf(m, prefix);
    }
    *o = omega > 0.f ? dcp::raw_transmission(m, omega) : m;
  }
}

void launch_transpose(const float* in, int in_stride, int width, int height, float* out,
                      int out_stride, cudaStream_t stream) {
  const dim3 block(kTile, kTileRows);
  const dim3 grid(div_up(width, kTile), div_up(height, kTile));
  transpose_kernel<<<grid, block, 0, stream>>>(in, in_stride, width, height, out, out_stride);
  HAZEFREE_CUDA_CHECK_LAUNCH("transpose_kernel");
}

void launch_column_min(const float* in, int in_stride, int width, int height, int radius,
                       float* out, int out_stride, float omega, cudaStream_t stream) {
  // (A variant keeping the suffix minima in registers for k <= 32 served the chain's dark
  // channel before the fused tile kernels; the chain now comes here only for radii above
  // kPatchTileMaxRadius.)
  const int blocks = div_up(height, 2 * radius + 1);
  const dim3 block(64, 4);
  const dim3 grid(div_up(width, 64), div_up(blocks, 4));
  column_min_kernel<<<grid, block, 0, stream>>>(in, in_stride, width, height, radius, out,
                                                out_stride, omega);
  HAZEFREE_CUDA_CHECK_LAUNCH("column_min_kernel");
}

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

constexpr int kBlock = dcp::kAtmosphereBlock;

// One CUDA block of 32x8 threads per 32x32 image block.
__global__ void block_max_kernel(DevicePlaneF dark, DevicePlaneF grey, float4* blocks) {
  const int x = blockIdx.x * kBlock + threadIdx.x;
  const int y_first = blockIdx.y * kBlock;
  Candidate best{-kInf, -kInf, 0x7fffffff, 0x7fffffff};
  if (x < dark.width) {
    for (int j = threadIdx.y; j < kBlock; j += blockDim.y) {
      const int y = y_first + j;
      if (y >= dark.height) break;
      const Candidate c{plane_row(dark, y)[x], plane_row(grey, y)[x], x, y};
      if (better(c, best)) best = c;
    }
  }
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
constexpr int kPatchTile = 64;
constexpr int kPatchThreads = 512;

struct PatchTileShape {
  int r, k, in_w, pitch;  // the region is in_w x in_w; pitch odd: consecutive lines hit other banks
  __host__ __device__ explicit PatchTileShape(int radius)
      : r(radius), k(2 * radius + 1), in_w(kPatchTile + 2 * radius),
        pitch((kPatchTile + 2 * radius) | 1) {}
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
__global__ void __launch_bounds__(kPatchThreads, 4)
    patch_min_tile_kernel(FrameRef f, color::YuvToRgbF k, const AtmosphereState* state, int radius,
                          float omega, DevicePlaneF grey, DevicePlaneF out, float4* block_maxima) {
  extern __shared__ float s_mem[];
  const PatchTileShape t(radius);
  float* s_a = s_mem;                     // values, then prefix minima; later column suffixes
  float* s_b = s_mem + t.in_w * t.pitch;  // row suffixes, then row results
  const int x0 = blockIdx.x * kPatchTile, y0 = blockIdx.y * kPatchTile;
  float a0 = 1.f, a1 = 1.f, a2 = 1.f;
  if (kNormalised) {
    a0 = state->value[0];
    a1 = state->value[1];
    a2 = state->value[2];
  }
  // Region pixel (lx, ly) at (x0 - r + lx, y0 - r + ly); threads step through it in raster order
  // without dividing.
  const int step_y = kPatchThreads / t.in_w, step_x = kPatchThreads - step_y * t.in_w;
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
        if (lx >= t.r && lx < t.r + kPatchTile && ly >= t.r && ly < t.r + kPatchTile)
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
  // Rows: in_w lines of in_w values; the results (kPatchTile per line) over the suffixes.
  segment_scans(s_a, s_b, t.in_w, t.pitch, t.in_w, 1, t.k);
  __syncthreads();
  for (int line = threadIdx.x / kPatchTile; line < t.in_w; line += kPatchThreads / kPatchTile) {
    const int j = threadIdx.x % kPatchTile;
    const int i = line * t.pitch + j;
    s_b[i] = fminf(s_b[i], s_a[i + 2 * t.r]);
  }
  __syncthreads();
  // Columns: kPatchTile lines (consecutive threads on consecutive columns) of in_w values.
  segment_scans(s_b, s_a, kPatchTile, 1, t.in_w, t.pitch, t.k);
  __syncthreads();
  // Thread (w, j), w = threadIdx.x / 64: column j, rows w, w + 8, ..., w + 56; its first four
  // rows lie in the upper atmospheric-light block, the others in the lower one.
  static_assert(kPatchTile == 2 * kBlock && kPatchThreads / kPatchTile * 8 == kPatchTile,
                "a tile holds 2x2 atmospheric-light blocks, eight rows per thread");
  const int j = threadIdx.x % kPatchTile;
  float dark[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int ly = threadIdx.x / kPatchTile + i * (kPatchThreads / kPatchTile);
    const int x = x0 + j, y = y0 + ly;
    dark[i] = -kInf;
    if (x >= f.width || y >= f.height) continue;
    const float m = fminf(s_a[ly * t.pitch + j], s_b[(ly + 2 * t.r) * t.pitch + j]);
    plane_row(out, y)[x] = kNormalised ? dcp::raw_transmission(m, omega) : m;
    dark[i] = m;
  }
  if (kNormalised || !block_maxima) return;
  // Block maxima in two steps: the largest dark value of each block (shuffles, then the warps
  // through shared memory), then among the pixels holding it (few, but all of a flat block)
  // the larger grey and then the first in raster order, by a shared atomicMax on the key
  // (grey bits, 1023 - position in the block); grey >= 0, so its bits order like its values.
  __shared__ float s_warp_max[2][2][kPatchThreads / 64];  // [block row][block column][warp pair]
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
    for (int w = 1; w < kPatchThreads / 64; ++w) m = fmaxf(m, s_warp_max[by][cx][w]);
    s_max[by][cx] = m;
    s_key[by][cx] = 0;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int ly = threadIdx.x / kPatchTile + i * (kPatchThreads / kPatchTile);
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
                              float4* block_maxima, cudaStream_t stream) {
  const PatchTileShape t(radius);
  const int shared = t.shared_floats() * static_cast<int>(sizeof(float));
  // Above 48 KiB (already at the default radius 7) the kernel needs a raised limit, which
  // belongs to the current CUDA context (kernels/cuda/cuda_context.hpp).
  if (shared > 48 * 1024) set_max_dynamic_shared_memory(patch_min_tile_kernel<kNormalised, T>, shared);
  const FrameRef f = frame_ref(d_frame);
  const dim3 grid(div_up(f.width, kPatchTile), div_up(f.height, kPatchTile));
  patch_min_tile_kernel<kNormalised, T><<<grid, kPatchThreads, shared, stream>>>(
      f, decode_coefficients_f(d_frame), d_state, radius, omega, grey, out, block_maxima);
  HAZEFREE_CUDA_CHECK_LAUNCH("patch_min_tile_kernel");
}

template <bool kNormalised>
void launch_patch_min_tile(const ImageView& d_frame, const AtmosphereState* d_state, int radius,
                           float omega, const DevicePlaneF& grey, const DevicePlaneF& out,
                           float4* block_maxima, cudaStream_t stream) {
  if (d_frame.depth > 8)
    launch_patch_min_tile_as<kNormalised, std::uint16_t>(d_frame, d_state, radius, omega, grey,
                                                         out, block_maxima, stream);
  else
    launch_patch_min_tile_as<kNormalised, std::uint8_t>(d_frame, d_state, radius, omega, grey,
                                                        out, block_maxima, stream);
}

constexpr int kSelectThreads = 1024;
constexpr int kSharedKeys = 8192;  // 64 KB of dynamic shared memory

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
__global__ void __launch_bounds__(kSelectThreads)
    atmosphere_select_kernel(const float4* __restrict__ blocks, int count, int used, FrameRef f,
                             color::YuvToRgbF k, float smoothing, float max_step, float scene_cut,
                             AtmosphereState* tracker, AtmosphereState* frame_state) {
  __shared__ unsigned s_hist[256];
  __shared__ unsigned long long s_prefix;
  __shared__ unsigned s_remaining;
  using Scan = cub::BlockScan<int, kSelectThreads>;
  using Reduce = cub::BlockReduce<double, kSelectThreads>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Reduce::TempStorage reduce;
  } s_temp;
  // The keys sit in shared memory when they fit (kSharedKeys: 2040 blocks at 1080p, 8160 at
  // 4K); beyond that each pass reads them from the block list again.
  extern __shared__ unsigned long long s_keys[];
  const bool cached = count <= kSharedKeys;
  const int tid = threadIdx.x;
  if (cached)
    for (int i = tid; i < count; i += blockDim.x) s_keys[i] = block_key(blocks[i]);
  auto key_of = [&](int i) { return cached ? s_keys[i] : block_key(blocks[i]); };
  if (tid == 0) {
    s_prefix = 0;
    s_remaining = static_cast<unsigned>(used);
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
  const int per = (count + kSelectThreads - 1) / kSelectThreads;
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
    s.has_value = 1;
    s.last_cut = cut ? 1 : 0;
    *tracker = s;
    *frame_state = s;
  }
}

// ---- guided filter --------------------------------------------------------------------------

constexpr int kRowThreads = 256;
// Rows per thread of the vertical box sums (at least; r / 2 for large radii, so that each
// chunk's O(r) start stays a bounded share of its work). Parallelism wins over the start's
// re-reads: the fast guided filter at 1080p (r = 8) took 112 / 79 / 64 us with chunks of
// 64 / 32 / 16 rows (H200, 2026-11-21).
constexpr int kColumnChunk = 16;
// 64 x 2 threads per block, at most 64 registers so that eight blocks share an SM: 1080p's 1020
// blocks then run in one wave on the H200's 132 SMs (at 72 registers, seven blocks per SM left
// a second wave of 96 blocks).
constexpr int kColumnThreads = 128;
constexpr int kColumnBlocksPerSm = 8;
constexpr int kMaxSources = 4;

// Box-filter sources over at most two input planes: source c is in[first[c]], times
// in[second[c]] (in double) when second[c] >= 0.
struct BoxSources {
  const float* in[2];
  int inputs;
  int first[kMaxSources];
  int second[kMaxSources];
  float* out[kMaxSources];  // horizontal window sums
  int count;
};

// One block per row: double prefix sums of each source along the row (block scans with a
// running carry), kept in `prefix` (this row's slice), then the clipped window sums rounded to
// float once, as the CPU's box filter does.
__global__ void __launch_bounds__(kRowThreads)
    box_rows_kernel(BoxSources src, int width, int stride, int radius, double* prefix_all) {
  using Scan = cub::BlockScan<double, kRowThreads>;
  __shared__ typename Scan::TempStorage s_scan;
  const int y = blockIdx.x;
  double* prefix = prefix_all + static_cast<std::size_t>(y) * (width + 1);
  const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(y) * stride;
  for (int c = 0; c < src.count; ++c) {
    double carry = 0.0;
    if (threadIdx.x == 0) prefix[0] = 0.0;
    for (int x0 = 0; x0 < width; x0 += kRowThreads) {
      const int x = x0 + threadIdx.x;
      double v = 0.0;
      if (x < width) {
        v = src.in[src.first[c]][row + x];
        if (src.second[c] >= 0) v *= static_cast<double>(src.in[src.second[c]][row + x]);
      }
      double inclusive, chunk_total;
      Scan(s_scan).InclusiveSum(v, inclusive, chunk_total);
      if (x < width) prefix[x + 1] = carry + inclusive;
      carry += chunk_total;
      __syncthreads();
    }
    __syncthreads();
    for (int x = threadIdx.x; x < width; x += kRowThreads) {
      const int hi = min(width, x + radius + 1), lo = max(0, x - radius);
      src.out[c][row + x] = static_cast<float>(prefix[hi] - prefix[lo]);
    }
    __syncthreads();
  }
}

// (Swapping the directions, vertical sums of the two input planes first and a/b fused into the
// row pass, measured 120 against 124 us at 1080p and 414 against 373 us at 4K on the H200,
// 2026-11-21, and moved the rounding away from the CPU's: 13 M of 32 M samples no longer
// bit-identical, against 54. The CPU's order is kept.)
// One block per (row, tile of `tile` outputs), kItems inputs per thread: the tile's inputs
// [x0 - r, x0 + tile + r) (zero outside the image, which clips the window) are prefix-summed in
// double by one block scan per source and the window sums read as differences: the cost per
// output does not depend on r, and the double sums start at the tile, not at the row's start
// (at the row's start, as on the CPU, when one tile spans the row). tile = kItems * 256 - 2r - 1;
// kItems is chosen per launch (2, 4 or 8) for the fewest scanned inputs per row.
// (A fixed 1024-output tile with room for r = 256 scanned 3584 inputs per 1080p row against
// 2048 now: the guided filter went from 124-135 to 113-114 us at 1080p, the exact chain from
// 0.243-0.253 to 0.232 ms, H200, 2026-11-21.)
constexpr int kRowMinTile = 128;

// kProducts: the four sources G, p, G*G, G*p of two inputs; else the two inputs themselves.
// Compile-time source sets keep every per-thread array in registers.
template <bool kProducts, int kItems>
__global__ void __launch_bounds__(kRowThreads)
    box_rows_tile_kernel(BoxSources src, int width, int stride, int radius, int tile) {
  using Scan = cub::BlockScan<double, kRowThreads>;
  __shared__ typename Scan::TempStorage s_scan;
  // One padding double after every kItems: thread t's items start at (kItems + 1) t, an odd
  // multiple, so the 16 threads of a half-warp store to 16 different bank pairs.
  __shared__ double s_prefix[(kItems + 1) * kRowThreads];
  constexpr int kCount = kProducts ? 4 : 2;
  const int y = blockIdx.y;
  const int x0 = blockIdx.x * tile;
  const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(y) * stride;
  const float* __restrict__ in0 = src.in[0];
  const float* __restrict__ in1 = src.in[1];
  // Region index i holds the input at x = x0 - r - 1 + i (i = 0 is the empty prefix).
  const int first = threadIdx.x * kItems;
  const int end = min(width, x0 + tile + radius);  // inputs past it are never used
  // The inputs are loaded coalesced (consecutive threads, consecutive x) into shared memory and
  // read back blocked, kItems consecutive inputs per thread, for the scans. (Loading them
  // blocked straight from global memory touched kItems cache lines per warp-wide load.) One
  // padding float per 32 keeps both the striped writes and the blocked reads free of bank
  // conflicts.
  constexpr int kSpan = kItems * kRowThreads;
  constexpr int kStage = kSpan + kSpan / 32;
  static_assert(2 * kStage * sizeof(float) <= sizeof(s_prefix), "staging fits the prefix array");
  float* s_stage = reinterpret_cast<float*>(s_prefix);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = k * kRowThreads + threadIdx.x;
    const int x = x0 - radius - 1 + i;
    const bool inside = i > 0 && x >= 0 && x < end;
    s_stage[i + i / 32] = inside ? __ldg(in0 + row + x) : 0.f;
    s_stage[kStage + i + i / 32] = inside ? __ldg(in1 + row + x) : 0.f;
  }
  __syncthreads();
  float a0[kItems], a1[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = first + k;
    a0[k] = s_stage[i + i / 32];
    a1[k] = s_stage[kStage + i + i / 32];
  }
  __syncthreads();
#pragma unroll
  for (int c = 0; c < kCount; ++c) {
    double v[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      if (c == 0) v[k] = a0[k];
      else if (c == 1) v[k] = a1[k];
      else if (c == 2) v[k] = static_cast<double>(a0[k]) * static_cast<double>(a0[k]);
      else v[k] = static_cast<double>(a0[k]) * static_cast<double>(a1[k]);
    }
    Scan(s_scan).InclusiveSum(v, v);
#pragma unroll
    for (int k = 0; k < kItems; ++k) s_prefix[first + threadIdx.x + k] = v[k];
    __syncthreads();
    float* out = src.out[c];
    const int span = 2 * radius + 1;
    for (int j = threadIdx.x; j < tile; j += kRowThreads) {
      const int x = x0 + j;
      const int hi = j + span;
      if (x < width)
        out[row + x] = static_cast<float>(s_prefix[hi + hi / kItems] - s_prefix[j + j / kItems]);
    }
    __syncthreads();
  }
}

__device__ __forceinline__ int window_count(int x, int r, int n) {
  return min(n - 1, x + r) - max(0, x - r) + 1;
}

enum class ColumnOutput { coefficients, means, filtered };

struct ColumnArgs {
  const float* hs[kMaxSources];
  int count;
  int width, height, stride;
  int rx, ry;
  int chunk;     // rows per thread
  double eps;
  float* out0;   // a / mean(a) / q
  float* out1;   // b / mean(b)
  const float* guide;  // G, for q = mean(a) G + mean(b)
  int guide_stride;
  int out_stride;
  // When set, G is recomputed from the frame (as the chain's first kernel computed it) instead
  // of read from `guide`, whose plane then served as scratch.
  int guide_from_frame;
  FrameRef frame;
  color::YuvToRgbF rgb;
};

// The outputs of the vertical pass at (x, y) from the float means: a and b (in double from the
// float means), the means themselves, or q = mean(a) G + mean(b).
template <ColumnOutput kOut>
__device__ __forceinline__ void store_column_output(const ColumnArgs& args, const float* mean,
                                                    int x, int y) {
  const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * args.out_stride + x;
  if constexpr (kOut == ColumnOutput::coefficients) {
    const double mg = mean[0], mp = mean[1], mgg = mean[2], mgp = mean[3];
    const double var = fmax(0.0, mgg - mg * mg);
    const double a = (mgp - mg * mp) / (var + args.eps);
    args.out0[o] = static_cast<float>(a);
    args.out1[o] = static_cast<float>(mp - a * mg);
  } else if constexpr (kOut == ColumnOutput::means) {
    args.out0[o] = mean[0];
    args.out1[o] = mean[1];
  } else {
    float g;
    if (args.guide_from_frame) {
      const Rgb3f c = load_rgb_f(args.frame, args.rgb, x, y);
      g = dcp::grey(c.r, c.g, c.b);
    } else {
      g = args.guide[static_cast<std::ptrdiff_t>(y) * args.guide_stride + x];
    }
    args.out0[o] = mean[0] * g + mean[1];
  }
}

// Vertical running sums in double over chunks of rows (each chunk starts from its own window
// sum; sums of these floats are exact in double, so the result equals one long running sum),
// means in double as sum * (1 / (cy cx)) (the CPU's division) rounded to float; then per kind:
// a and b (in double from the float means), the means themselves, or q = mean(a) G + mean(b).
template <ColumnOutput kOut>
__global__ void __launch_bounds__(kColumnThreads, kColumnBlocksPerSm) box_columns_kernel(ColumnArgs args) {
  // Four sources for the coefficients, two for the means: a compile-time count keeps the
  // accumulators in registers.
  constexpr int kCount = kOut == ColumnOutput::coefficients ? 4 : 2;
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * args.chunk;
  if (x >= args.width || y0 >= args.height) return;
  const int h = args.height, ry = args.ry;
  const int y1 = min(h, y0 + args.chunk);
  const double cx = window_count(x, args.rx, args.width);
  double acc[kCount];
#pragma unroll
  for (int c = 0; c < kCount; ++c) acc[c] = 0.0;
  for (int y = max(0, y0 - ry); y <= min(h - 1, y0 + ry); ++y) {
#pragma unroll
    for (int c = 0; c < kCount; ++c) acc[c] += args.hs[c][static_cast<std::ptrdiff_t>(y) * args.stride + x];
  }
  // The CPU's division 1 / (cy cx), done again only where the row count changes (near the top
  // and bottom borders): a double division per output was a sizeable share of the instructions.
  int last_cy = -1;
  double inv = 0.0;
#pragma unroll 4
  for (int y = y0; y < y1; ++y) {
    const int cy = window_count(y, ry, h);
    if (cy != last_cy) {
      inv = 1.0 / (cy * cx);
      last_cy = cy;
    }
    float mean[kCount];
#pragma unroll
    for (int c = 0; c < kCount; ++c) mean[c] = static_cast<float>(acc[c] * inv);
    store_column_output<kOut>(args, mean, x, y);
    const int add = y + ry + 1, sub = y - ry;
#pragma unroll
    for (int c = 0; c < kCount; ++c) {
      if (add < h) acc[c] += args.hs[c][static_cast<std::ptrdiff_t>(add) * args.stride + x];
      if (sub >= 0) acc[c] -= args.hs[c][static_cast<std::ptrdiff_t>(sub) * args.stride + x];
    }
  }
}

// Fast guided filter, step 1: s x s block means of guide and input (double sums in raster order).
__global__ void subsample_kernel(DevicePlaneF guide, DevicePlaneF input, int s, DevicePlaneF gs,
                                 DevicePlaneF ps) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (j >= gs.width || i >= gs.height) return;
  const int y0 = i * s, y1 = min(guide.height, y0 + s);
  const int x0 = j * s, x1 = min(guide.width, x0 + s);
  double sg = 0.0, sp = 0.0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      sg += plane_row(guide, y)[x];
      sp += plane_row(input, y)[x];
    }
  const double n = static_cast<double>((y1 - y0) * (x1 - x0));
  plane_row(gs, i)[j] = static_cast<float>(sg / n);
  plane_row(ps, i)[j] = static_cast<float>(sp / n);
}

// Fast guided filter, last step: bilinear mean(a), mean(b) at full resolution, q = a G + b.
__global__ void upsample_kernel(DevicePlaneF ma, DevicePlaneF mb, int s, DevicePlaneF guide,
                                DevicePlaneF out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= guide.width || y >= guide.height) return;
  const dcp::BilinearTap ty = dcp::bilinear_tap(y, s, ma.height);
  const dcp::BilinearTap tx = dcp::bilinear_tap(x, s, ma.width);
  const float* a0 = plane_row(ma, ty.i0);
  const float* a1 = plane_row(ma, ty.i1);
  const float* b0 = plane_row(mb, ty.i0);
  const float* b1 = plane_row(mb, ty.i1);
  const float at = a0[tx.i0] + tx.f * (a0[tx.i1] - a0[tx.i0]);
  const float ab = a1[tx.i0] + tx.f * (a1[tx.i1] - a1[tx.i0]);
  const float bt = b0[tx.i0] + tx.f * (b0[tx.i1] - b0[tx.i0]);
  const float bb = b1[tx.i0] + tx.f * (b1[tx.i1] - b1[tx.i0]);
  const float a = at + ty.f * (ab - at);
  const float b = bt + ty.f * (bb - bt);
  plane_row(out, y)[x] = a * plane_row(guide, y)[x] + b;
}

template <bool kProducts, int kItems>
void launch_rows_tile(const BoxSources& sources, int width, int height, int stride, int radius,
                      cudaStream_t stream) {
  const int tile = kItems * kRowThreads - 2 * radius - 1;
  const dim3 grid(div_up(width, tile), height);
  box_rows_tile_kernel<kProducts, kItems><<<grid, kRowThreads, 0, stream>>>(sources, width, stride,
                                                                           radius, tile);
  HAZEFREE_CUDA_CHECK_LAUNCH("box_rows_tile_kernel");
}

template <bool kProducts>
void launch_rows_items(const BoxSources& sources, int items, int width, int height, int stride,
                       int radius, cudaStream_t stream) {
  if (items == 2) launch_rows_tile<kProducts, 2>(sources, width, height, stride, radius, stream);
  else if (items == 4) launch_rows_tile<kProducts, 4>(sources, width, height, stride, radius, stream);
  else launch_rows_tile<kProducts, 8>(sources, width, height, stride, radius, stream);
}

// Items per thread of the tiled row pass: the fewest scanned inputs per row (tiles x items),
// ties to the smaller tile; 0 when no tile fits the window (the one-block-per-row kernel with
// double prefix sums then runs instead).
int row_items(int width, int radius) {
  int items = 0, best = 0;
  for (const int k : {2, 4, 8}) {
    const int tile = k * kRowThreads - 2 * radius - 1;
    if (tile < kRowMinTile) continue;
    const int cost = div_up(width, tile) * k;
    if (items == 0 || cost < best) {
      items = k;
      best = cost;
    }
  }
  return items;
}

void launch_box_rows(const BoxSources& sources, int width, int height, int stride, int radius,
                     double* prefix, cudaStream_t stream) {
  const int items = row_items(width, radius);
  if (items > 0) {
    if (sources.count == 4) launch_rows_items<true>(sources, items, width, height, stride, radius, stream);
    else launch_rows_items<false>(sources, items, width, height, stride, radius, stream);
  } else {
    box_rows_kernel<<<height, kRowThreads, 0, stream>>>(sources, width, stride, radius, prefix);
    HAZEFREE_CUDA_CHECK_LAUNCH("box_rows_kernel");
  }
}

// The vertical pass. Two shared-memory variants that load each input fewer times measured
// slower than these chunked running sums (guided filter at 1080p, plain launches, H200,
// 2026-11-21, 114 us with the chunked kernel): a tile kernel prefix-summing 32 columns x 64 /
// 32 / 128 rows in shared memory, one source at a time (135 / 152 / 166 us; not profiled, the
// likely cause is few loads in flight between its barriers), and 32 x 128-row blocks whose
// chunks start from group sums of 16 rows kept in shared memory (3.5 loads per output and
// source against 6: 131 us).
template <ColumnOutput kOut>
void launch_box_columns(const ColumnArgs& args, cudaStream_t stream) {
  // Enough rows per thread that the O(r) start of each chunk stays a fraction of its work.
  ColumnArgs a = args;
  a.chunk = std::max(kColumnChunk, args.ry / 2);
  const dim3 block(64, kColumnThreads / 64);
  const dim3 grid(div_up(a.width, 64), div_up(div_up(a.height, a.chunk), block.y));
  box_columns_kernel<kOut><<<grid, block, 0, stream>>>(a);
  HAZEFREE_CUDA_CHECK_LAUNCH("box_columns_kernel");
}

dim3 pixel_grid(int width, int height, dim3 block) {
  return dim3(div_up(width, block.x), div_up(height, block.y));
}

const dim3 kPixelBlock(32, 8);

}  // namespace

// ---- launchers and operators ------------------------------------------------------------------

namespace {

template <bool kNormalised>
void launch_channel_min_transposed(const ImageView& d_frame, const AtmosphereState* d_state,
                                   const DevicePlaneF& grey, const DevicePlaneF& minimum_t,
                                   cudaStream_t stream) {
  const FrameRef f = frame_ref(d_frame);
  const dim3 grid(div_up(f.width, kTile), div_up(f.height, kTile)), block(kTile, kTileRows);
  const color::YuvToRgbF k = decode_coefficients_f(d_frame);
  if (f.wide)
    channel_min_transposed_kernel<kNormalised, std::uint16_t><<<grid, block, 0, stream>>>(
        f, k, d_state, grey, minimum_t);
  else
    channel_min_transposed_kernel<kNormalised, std::uint8_t><<<grid, block, 0, stream>>>(
        f, k, d_state, grey, minimum_t);
  if (kNormalised) HAZEFREE_CUDA_CHECK_LAUNCH("channel_min_transposed_kernel<normalised>");
  else HAZEFREE_CUDA_CHECK_LAUNCH("channel_min_transposed_kernel<grey>");
}

}  // namespace

void launch_grey_and_channel_min_transposed(const ImageView& d_frame, const DevicePlaneF& grey,
                                            const DevicePlaneF& channel_min_t, cudaStream_t stream) {
  launch_channel_min_transposed<false>(d_frame, nullptr, grey, channel_min_t, stream);
}

void launch_normalised_channel_min_transposed(const ImageView& d_frame,
                                              const AtmosphereState* d_state,
                                              const DevicePlaneF& out_t, cudaStream_t stream) {
  launch_channel_min_transposed<true>(d_frame, d_state, DevicePlaneF{}, out_t, stream);
}

void launch_grey_and_dark_channel(const ImageView& d_frame, int radius, const DevicePlaneF& grey,
                                  const DevicePlaneF& dark, float4* block_maxima,
                                  cudaStream_t stream) {
  if (radius < 0 || radius > kPatchTileMaxRadius)
    throw std::invalid_argument("dark channel: the fused kernel takes radii 0.." +
                                std::to_string(kPatchTileMaxRadius));
  launch_patch_min_tile<false>(d_frame, nullptr, radius, 0.f, grey, dark, block_maxima, stream);
}

void launch_raw_transmission(const ImageView& d_frame, const AtmosphereState* d_state, int radius,
                             float omega, const DevicePlaneF& out, cudaStream_t stream) {
  if (radius < 0 || radius > kPatchTileMaxRadius)
    throw std::invalid_argument("raw transmission: the fused kernel takes radii 0.." +
                                std::to_string(kPatchTileMaxRadius));
  launch_patch_min_tile<true>(d_frame, d_state, radius, omega, DevicePlaneF{}, out, nullptr,
                              stream);
}

void launch_frame_to_rgb_f32(const ImageView& d_frame, const DevicePlaneF& r,
                             const DevicePlaneF& g, const DevicePlaneF& b, cudaStream_t stream) {
  const FrameRef f = frame_ref(d_frame);
  const dim3 grid = pixel_grid(f.width, f.height, kPixelBlock);
  if (f.wide)
    frame_to_rgb_f32_kernel<std::uint16_t><<<grid, kPixelBlock, 0, stream>>>(
        f, decode_coefficients_f(d_frame), r, g, b);
  else
    frame_to_rgb_f32_kernel<std::uint8_t><<<grid, kPixelBlock, 0, stream>>>(
        f, decode_coefficients_f(d_frame), r, g, b);
  HAZEFREE_CUDA_CHECK_LAUNCH("frame_to_rgb_f32_kernel");
}

void launch_recover_to_frame(const ImageView& d_in, const DevicePlaneF& transmission,
                             const AtmosphereState* d_state, const DcpParams& params,
                             const ImageView& d_out, cudaStream_t stream) {
  if (d_in.format != d_out.format || d_in.depth != d_out.depth)
    throw std::invalid_argument("recovery: the output frame is " +
                                format_name(d_out.format, d_out.depth) + ", the input " +
                                format_name(d_in.format, d_in.depth));
  const FrameRef in = frame_ref(d_in);
  const FrameRef out = frame_ref(d_out);
  const int sx = is_yuv(d_out.format) ? out.sx : 0, sy = is_yuv(d_out.format) ? out.sy : 0;
  const int bw = (out.width + (1 << sx) - 1) >> sx, bh = (out.height + (1 << sy) - 1) >> sy;
  const dim3 block(32, 4);
  const dim3 grid = pixel_grid(bw, bh, block);
  const color::YuvToRgbF kin = decode_coefficients_f(d_in);
  const color::RgbToYuvF kout = encode_coefficients_f(d_out);
  if (in.wide)
    recover_to_frame_kernel<std::uint16_t><<<grid, block, 0, stream>>>(
        in, kin, transmission, d_state, params.k_tolerance, params.t0, params.brightness, out,
        kout);
  else
    recover_to_frame_kernel<std::uint8_t><<<grid, block, 0, stream>>>(
        in, kin, transmission, d_state, params.k_tolerance, params.t0, params.brightness, out,
        kout);
  HAZEFREE_CUDA_CHECK_LAUNCH("recover_to_frame_kernel");
}

void MinFilterCuda::apply(const DevicePlaneF& src, const DevicePlaneF& dst, int radius,
                          cudaStream_t stream, float omega) {
  const int w = src.width, h = src.height;
  if (w <= 0 || h <= 0 || dst.width != w || dst.height != h)
    throw std::invalid_argument("min filter: source and destination sizes differ");
  const DevicePlaneF t{nullptr, h, w, float_stride(h)};
  input_t_.reserve(static_cast<std::size_t>(t.stride) * w);
  const DevicePlaneF src_t{input_t_.get(), h, w, t.stride};
  launch_transpose(src.data, src.stride, w, h, src_t.data, src_t.stride, stream);
  apply_transposed(src_t, dst, radius, stream, omega);
}

void MinFilterCuda::apply_transposed(const DevicePlaneF& src_t, const DevicePlaneF& dst,
                                     int radius, cudaStream_t stream, float omega) {
  const int w = dst.width, h = dst.height;
  // a: the row-filtered plane transposed, b: back in normal layout. The column pass never runs
  // in place (its threads read their neighbours' rows).
  transposed_a_.reserve(static_cast<std::size_t>(float_stride(h)) * std::max(w, 0));
  transposed_b_.reserve(static_cast<std::size_t>(float_stride(w)) * std::max(h, 0));
  run_transposed(src_t, dst, radius, transposed_a_.get(), transposed_b_.get(), stream, omega);
}

void MinFilterCuda::apply_transposed_in_place(const DevicePlaneF& src_t, const DevicePlaneF& dst,
                                              int radius, float* scratch, cudaStream_t stream,
                                              float omega) {
  run_transposed(src_t, dst, radius, scratch, src_t.data, stream, omega);
}

void MinFilterCuda::run_transposed(const DevicePlaneF& src_t, const DevicePlaneF& dst, int radius,
                                   float* a, float* b, cudaStream_t stream, float omega) {
  const int w = dst.width, h = dst.height;
  if (w <= 0 || h <= 0 || src_t.width != h || src_t.height != w)
    throw std::invalid_argument("min filter: the transposed source does not match the destination");
  if (radius < 0) throw std::invalid_argument("min filter: negative radius");
  const int rx = std::min(radius, w - 1), ry = std::min(radius, h - 1);
  const int tstride = float_stride(h);
  const int nstride = float_stride(w);
  launch_column_min(src_t.data, src_t.stride, h, w, rx, a, tstride, 0.f, stream);
  // The transpose pays for itself: a vertical pass reading the transposed plane directly (one
  // kernel fewer, strided reads) took the dark channel from 32.6 to 37.5 us (1080p, H200,
  // 2026-11-21).
  launch_transpose(a, tstride, h, w, b, nstride, stream);
  launch_column_min(b, nstride, w, h, ry, dst.data, dst.stride, omega, stream);
}

AtmosphereCuda::AtmosphereCuda() : frame_state_(1) {}

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
      dark, grey, block_maxima(dark.width, dark.height));
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
  const std::size_t shared = count <= kSharedKeys ? count * sizeof(unsigned long long) : 0;
  if (shared > 48 * 1024)
    set_max_dynamic_shared_memory(atmosphere_select_kernel,
                                  static_cast<int>(kSharedKeys * sizeof(unsigned long long)));
  atmosphere_select_kernel<<<1, kSelectThreads, shared, stream>>>(
      blocks, count, used, frame_ref(d_frame),
      decode_coefficients_f(d_frame), params.a_smoothing, params.a_max_step,
      params.a_scene_cut, d_tracker, frame_state_.get());
  HAZEFREE_CUDA_CHECK_LAUNCH("atmosphere_select_kernel");
  if (order.done) HAZEFREE_CUDA_CHECK(cudaEventRecord(order.done, stream));
}

void reset_atmosphere(AtmosphereState* d_tracker, cudaStream_t stream) {
  HAZEFREE_CUDA_CHECK(cudaMemsetAsync(d_tracker, 0, sizeof(AtmosphereState), stream));
}

void GuidedFilterCuda::coefficients(const DevicePlaneF& guide, const DevicePlaneF& input,
                                    int radius, float eps, const DevicePlaneF* output,
                                    const Scratch* scratch, cudaStream_t stream) {
  const int w = guide.width, h = guide.height, st = stride_;
  const std::size_t plane = static_cast<std::size_t>(st) * h;
  const int rx = std::min(radius, w - 1), ry = std::min(radius, h - 1);
  float* hp[4];
  float *a, *b, *ma = nullptr, *mb = nullptr;
  if (scratch) {
    for (int c = 0; c < 4; ++c) hp[c] = scratch->horizontal[c];
    a = input.data;  // t~ is consumed by the first row pass
    // With the guide recomputable from the frame, its plane is free after the first row pass.
    b = scratch->guide_frame ? guide.data : scratch->b;
  } else {
    horizontal_.reserve(plane * kMaxSources);
    coeff_.reserve(plane * (output ? 2 : 4));
    for (int c = 0; c < 4; ++c) hp[c] = horizontal_.get() + c * plane;
    a = coeff_.get();
    b = a + plane;
    if (!output) {
      ma = b + plane;
      mb = ma + plane;
    }
  }
  if (row_items(w, rx) == 0) prefix_.reserve(static_cast<std::size_t>(w + 1) * h);
  // Every plane here (inputs included) has stride st.
  const BoxSources first{{guide.data, input.data}, 2, {0, 1, 0, 0}, {-1, -1, 0, 1},
                         {hp[0], hp[1], hp[2], hp[3]}, 4};
  launch_box_rows(first, w, h, st, rx, prefix_.get(), stream);

  ColumnArgs args{};
  for (int c = 0; c < 4; ++c) args.hs[c] = hp[c];
  args.count = 4;
  args.width = w;
  args.height = h;
  args.stride = st;
  args.rx = rx;
  args.ry = ry;
  args.eps = eps;
  args.out0 = a;
  args.out1 = b;
  args.out_stride = st;
  launch_box_columns<ColumnOutput::coefficients>(args, stream);

  const BoxSources second{{a, b}, 2, {0, 1, 0, 0}, {-1, -1, -1, -1}, {hp[0], hp[1], nullptr, nullptr}, 2};
  launch_box_rows(second, w, h, st, rx, prefix_.get(), stream);
  args.count = 2;
  if (output) {  // exact filter: q = mean(a) G + mean(b) straight from the column sums
    args.out0 = output->data;
    args.out_stride = output->stride;
    args.guide = guide.data;
    args.guide_stride = guide.stride;
    if (scratch && scratch->guide_frame) {
      args.guide_from_frame = 1;
      args.frame = frame_ref(*scratch->guide_frame);
      args.rgb = decode_coefficients_f(*scratch->guide_frame);
    }
    launch_box_columns<ColumnOutput::filtered>(args, stream);
    return;
  }
  args.out0 = ma;
  args.out1 = mb;
  launch_box_columns<ColumnOutput::means>(args, stream);
}

void GuidedFilterCuda::apply(const DevicePlaneF& guide, const DevicePlaneF& input,
                             const DevicePlaneF& output, int radius, float eps, int subsample,
                             cudaStream_t stream, const Scratch* scratch) {
  const int w = guide.width, h = guide.height;
  dcp::check_guided_filter_args(w, h, input.width, input.height, output.width, output.height,
                                radius, eps, subsample);
  const int s = subsample;
  const int ws = s == 1 ? w : dcp::subsampled_size(w, s);
  const int hs = s == 1 ? h : dcp::subsampled_size(h, s);
  width_ = ws;
  height_ = hs;
  stride_ = float_stride(ws);
  const std::size_t plane = static_cast<std::size_t>(stride_) * hs;

  if (s == 1) {
    if (guide.stride != stride_ || input.stride != stride_)
      throw std::invalid_argument("guided filter: planes must have the padded stride");
    // The exact filter writes `a` over the input: copy t~ first when the output is elsewhere.
    if (scratch && output.data != input.data) {
      HAZEFREE_CUDA_CHECK(cudaMemcpy2DAsync(output.data, output.stride * sizeof(float), input.data,
                                            input.stride * sizeof(float), w * sizeof(float), h,
                                            cudaMemcpyDeviceToDevice, stream));
      coefficients(guide, output, radius, eps, &output, scratch, stream);
      return;
    }
    coefficients(guide, input, radius, eps, &output, scratch, stream);
    return;
  }
  small_.reserve(plane * 2);
  const DevicePlaneF gs{small_.get(), ws, hs, stride_}, ps{small_.get() + plane, ws, hs, stride_};
  subsample_kernel<<<pixel_grid(ws, hs, kPixelBlock), kPixelBlock, 0, stream>>>(guide, input, s,
                                                                                gs, ps);
  HAZEFREE_CUDA_CHECK_LAUNCH("subsample_kernel");
  coefficients(gs, ps, dcp::subsampled_radius(radius, s), eps, nullptr, nullptr, stream);
  float* ma = coeff_.get() + 2 * plane;
  float* mb = ma + plane;
  const DevicePlaneF pa{ma, ws, hs, stride_}, pb{mb, ws, hs, stride_};
  upsample_kernel<<<pixel_grid(w, h, kPixelBlock), kPixelBlock, 0, stream>>>(pa, pb, s, guide,
                                                                              output);
  HAZEFREE_CUDA_CHECK_LAUNCH("upsample_kernel");
}

// ---- the chain --------------------------------------------------------------------------------

CudaDehazer::CudaDehazer(const DcpParams& params) : params_(params) {
  ProcessingConfig config;
  config.dcp = params;
  validate(config);
}

const std::vector<std::string>& CudaDehazer::stage_names() {
  static const std::vector<std::string> names = {"grey_and_dark_channel", "atmospheric_light",
                                                 "transmission", "guided_filter",
                                                 "recovery_from_rgb"};
  return names;
}

void CudaDehazer::mark(int i, cudaStream_t stream) {
  if (markers_ && i < static_cast<int>(markers_->size()))
    HAZEFREE_CUDA_CHECK(cudaEventRecord((*markers_)[i], stream));
}

void CudaDehazer::ensure(int width, int height) {
  if (width == width_ && height == height_) return;
  width_ = width;
  height_ = height;
  stride_ = float_stride(width);
  plane_floats_ = std::max(static_cast<std::size_t>(stride_) * height,
                           static_cast<std::size_t>(float_stride(height)) * width);
  recompute_guide_ = static_cast<long>(width) * height <= kRecomputeGuideMaxPixels;
  // The fast filter has workspaces of its own (at a sixteenth of the size for subsample 4).
  const int planes = params_.gf_subsample != 1 ? kExtra0 : (recompute_guide_ ? kExtra2 : kExtra2 + 1);
  planes_.reserve(plane_floats_ * planes);
}

void CudaDehazer::enqueue(const ImageView& d_in, const ImageView& d_out,
                          AtmosphereState* d_tracker, const StateOrder& order,
                          cudaStream_t stream) {
  if (d_in.format != d_out.format || d_in.width != d_out.width || d_in.height != d_out.height ||
      d_in.depth != d_out.depth)
    throw std::invalid_argument("dehaze: output frame differs from the input in format, depth or size");
  if (d_in.width <= 0 || d_in.height <= 0) throw std::invalid_argument("dehaze: empty frame");
  if (!valid_depth(d_in.depth))
    throw std::invalid_argument("dehaze: a depth of " + std::to_string(d_in.depth) +
                                " bits (8 to 16 expected)");
  const int w = d_in.width, h = d_in.height;
  ensure(w, h);
  const DevicePlaneF grey{plane(kGrey), w, h, stride_};
  const DevicePlaneF work{plane(kWork), w, h, stride_};
  const DevicePlaneF dark{plane(kDark), w, h, stride_};
  const DevicePlaneF work_t{plane(kTransposed), h, w, float_stride(h)};

  const int r = params_.patch_radius;
  const bool fused = r <= kPatchTileMaxRadius;
  mark(0, stream);
  if (fused) {
    // The atmospheric-light block maxima come out of the same kernel.
    launch_grey_and_dark_channel(d_in, r, grey, dark, atmosphere_.block_maxima(w, h), stream);
  } else {
    launch_grey_and_channel_min_transposed(d_in, grey, work_t, stream);
    // `work` is free until the raw transmission: the row-filtered plane goes there.
    min_filter_.apply_transposed_in_place(work_t, dark, r, work.data, stream);
  }
  mark(1, stream);
  if (fused) atmosphere_.update_from_block_maxima(d_in, params_, d_tracker, order, stream);
  else atmosphere_.estimate_and_update(dark, grey, d_in, params_, d_tracker, order, stream);
  mark(2, stream);
  if (fused) {
    launch_raw_transmission(d_in, atmosphere_.frame_state(), r, params_.omega, work, stream);
  } else {
    launch_normalised_channel_min_transposed(d_in, atmosphere_.frame_state(), work_t, stream);
    // The dark channel has served its purpose (A): its plane takes the row-filtered plane.
    min_filter_.apply_transposed_in_place(work_t, work, r, dark.data, stream, params_.omega);
  }
  mark(3, stream);
  if (params_.gf_subsample == 1) {
    // Exact filter: the horizontal sums in the dark and transposed planes (both done with) and
    // two more; a over t~; b over the grey plane (the guide recomputed from the frame in the
    // last pass) or in a plane of its own for frames above 1080p.
    const GuidedFilterCuda::Scratch scratch{
        {plane(kDark), plane(kTransposed), plane(kExtra0), plane(kExtra1)},
        recompute_guide_ ? nullptr : plane(kExtra2), recompute_guide_ ? &d_in : nullptr};
    guided_.apply(grey, work, work, params_.gf_radius, params_.gf_eps, 1, stream, &scratch);
  } else {
    guided_.apply(grey, work, work, params_.gf_radius, params_.gf_eps, params_.gf_subsample, stream);
  }
  mark(4, stream);
  ImageView out = d_out;
  out.matrix = d_in.matrix;
  out.range = d_in.range;
  launch_recover_to_frame(d_in, work, atmosphere_.frame_state(), params_, out, stream);
  mark(5, stream);
}

}  // namespace hazefree::cuda
