// The exact min filter on the GPU (SPEC 3, step 2): van Herk / Gil-Werman along columns, rows
// through a shared-memory transpose. Compiled with -fmad=false (CMakeLists.txt), as every DCP
// kernel file: the shared rules are evaluated with the CPU's roundings.
#include "kernels/cuda/min_filter_cuda.hpp"

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
                                  float omega, const float* omega_scale) {
  const bool transmission = omega > 0.f;  // step 5 fused, whatever the strength
  if (omega_scale) omega = omega * *omega_scale;
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
    *o = transmission ? dcp::raw_transmission(m, omega) : m;
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
                       float* out, int out_stride, float omega, cudaStream_t stream,
                       const float* omega_scale = nullptr) {
  // (A variant keeping the suffix minima in registers for k <= 32 served the chain's dark
  // channel before the fused tile kernels; the chain now comes here only for radii above
  // kPatchTileMaxRadius.)
  const int blocks = div_up(height, 2 * radius + 1);
  const dim3 block(64, 4);
  const dim3 grid(div_up(width, 64), div_up(blocks, 4));
  column_min_kernel<<<grid, block, 0, stream>>>(in, in_stride, width, height, radius, out,
                                                out_stride, omega, omega_scale);
  HAZEFREE_CUDA_CHECK_LAUNCH("column_min_kernel");
}

}  // namespace

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
  run_transposed(src_t, dst, radius, transposed_a_.get(), transposed_b_.get(), stream, omega, nullptr);
}

void MinFilterCuda::apply_transposed_in_place(const DevicePlaneF& src_t, const DevicePlaneF& dst,
                                              int radius, float* scratch, cudaStream_t stream,
                                              float omega, const float* omega_scale) {
  run_transposed(src_t, dst, radius, scratch, src_t.data, stream, omega, omega_scale);
}

void MinFilterCuda::run_transposed(const DevicePlaneF& src_t, const DevicePlaneF& dst, int radius,
                                   float* a, float* b, cudaStream_t stream, float omega,
                                   const float* omega_scale) {
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
  launch_column_min(b, nstride, w, h, ry, dst.data, dst.stride, omega, stream, omega_scale);
}

}  // namespace hazefree::cuda
