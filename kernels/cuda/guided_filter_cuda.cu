// The guided filter on the GPU (SPEC 3, step 6): double prefix sums along rows, chunked running
// sums along columns, the fast filter's subsampling. Compiled with -fmad=false (CMakeLists.txt), as
// every DCP kernel file: the shared rules are evaluated with the CPU's roundings.
#include "kernels/cuda/guided_filter_cuda.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cfloat>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/dcp_device.cuh"
#include "kernels/cuda/frame_access.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/dcp_rules.hpp"

namespace hazefree::cuda {
namespace {

// ---- guided filter --------------------------------------------------------------------------

// The box passes' tuning, with the figures that chose it.
struct GuidedFilterPolicy {
  static constexpr int kRowThreads = 256;
  // Rows per thread of the vertical box sums (at least; r / 2 for large radii, so that each
  // chunk's O(r) start stays a bounded share of its work). Parallelism wins over the start's
  // re-reads: the fast guided filter at 1080p (r = 8) took 112 / 79 / 64 us with chunks of
  // 64 / 32 / 16 rows (H200, 2026-11-21).
  static constexpr int kColumnChunk = 16;
  // 64 x 2 threads per block, at most 64 registers so that eight blocks share an SM: 1080p's 1020
  // blocks then run in one wave on the H200's 132 SMs (at 72 registers, seven blocks per SM left
  // a second wave of 96 blocks).
  static constexpr int kColumnThreads = 128;
  static constexpr int kColumnBlocksPerSm = 8;
  static constexpr int kMaxSources = 4;
};

// Box-filter sources over at most two input planes: source c is in[first[c]], times
// in[second[c]] (in double) when second[c] >= 0.
struct BoxSources {
  const float* in[2];
  int inputs;
  int first[GuidedFilterPolicy::kMaxSources];
  int second[GuidedFilterPolicy::kMaxSources];
  float* out[GuidedFilterPolicy::kMaxSources];  // horizontal window sums
  int count;
};

// One block per row: double prefix sums of each source along the row (block scans with a
// running carry), kept in `prefix` (this row's slice), then the clipped window sums rounded to
// float once, as the CPU's box filter does.
__global__ void __launch_bounds__(GuidedFilterPolicy::kRowThreads)
    box_rows_kernel(BoxSources src, int width, int stride, int radius, double* prefix_all) {
  using Scan = cub::BlockScan<double, GuidedFilterPolicy::kRowThreads>;
  __shared__ typename Scan::TempStorage s_scan;
  const int y = blockIdx.x;
  double* prefix = prefix_all + static_cast<std::size_t>(y) * (width + 1);
  const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(y) * stride;
  for (int c = 0; c < src.count; ++c) {
    double carry = 0.0;
    if (threadIdx.x == 0) prefix[0] = 0.0;
    for (int x0 = 0; x0 < width; x0 += GuidedFilterPolicy::kRowThreads) {
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
    for (int x = threadIdx.x; x < width; x += GuidedFilterPolicy::kRowThreads) {
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
__global__ void __launch_bounds__(GuidedFilterPolicy::kRowThreads)
    box_rows_tile_kernel(BoxSources src, int width, int stride, int radius, int tile) {
  using Scan = cub::BlockScan<double, GuidedFilterPolicy::kRowThreads>;
  __shared__ typename Scan::TempStorage s_scan;
  // One padding double after every kItems: thread t's items start at (kItems + 1) t, an odd
  // multiple, so the 16 threads of a half-warp store to 16 different bank pairs.
  __shared__ double s_prefix[(kItems + 1) * GuidedFilterPolicy::kRowThreads];
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
  constexpr int kSpan = kItems * GuidedFilterPolicy::kRowThreads;
  constexpr int kStage = kSpan + kSpan / 32;
  static_assert(2 * kStage * sizeof(float) <= sizeof(s_prefix), "staging fits the prefix array");
  float* s_stage = reinterpret_cast<float*>(s_prefix);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = k * GuidedFilterPolicy::kRowThreads + threadIdx.x;
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
    for (int j = threadIdx.x; j < tile; j += GuidedFilterPolicy::kRowThreads) {
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
  const float* hs[GuidedFilterPolicy::kMaxSources];
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
__global__ void __launch_bounds__(GuidedFilterPolicy::kColumnThreads, GuidedFilterPolicy::kColumnBlocksPerSm)
    box_columns_kernel(ColumnArgs args) {
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
  plane_row(out, y)[x] = dcp::bilinear(a0, a1, tx, ty.f) * plane_row(guide, y)[x] + dcp::bilinear(b0, b1, tx, ty.f);
}

template <bool kProducts, int kItems>
void launch_rows_tile(const BoxSources& sources, int width, int height, int stride, int radius,
                      cudaStream_t stream) {
  const int tile = kItems * GuidedFilterPolicy::kRowThreads - 2 * radius - 1;
  const dim3 grid(div_up(width, tile), height);
  box_rows_tile_kernel<kProducts, kItems><<<grid, GuidedFilterPolicy::kRowThreads, 0, stream>>>(
      sources, width, stride, radius, tile);
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
    const int tile = k * GuidedFilterPolicy::kRowThreads - 2 * radius - 1;
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
    box_rows_kernel<<<height, GuidedFilterPolicy::kRowThreads, 0, stream>>>(sources, width, stride,
                                                                            radius, prefix);
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
  a.chunk = std::max(GuidedFilterPolicy::kColumnChunk, args.ry / 2);
  const dim3 block(64, GuidedFilterPolicy::kColumnThreads / 64);
  const dim3 grid(div_up(a.width, 64), div_up(div_up(a.height, a.chunk), block.y));
  box_columns_kernel<kOut><<<grid, block, 0, stream>>>(a);
  HAZEFREE_CUDA_CHECK_LAUNCH("box_columns_kernel");
}

}  // namespace

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
    horizontal_.reserve(plane * GuidedFilterPolicy::kMaxSources);
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

}  // namespace hazefree::cuda
