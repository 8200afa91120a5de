// The DCP chain's per-pixel kernels (SPEC 3): grey and channel minimum (transposed), frame to float
// RGB, and the recovery back into the frame's format. Compiled with -fmad=false (CMakeLists.txt),
// as every DCP kernel file: the shared rules are evaluated with the CPU's roundings.
#include "kernels/cuda/dcp_pixels_cuda.hpp"

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

// ---- per-pixel kernels ----------------------------------------------------------------------

// The channel minimum goes through a 32x32 tile transposed (height x width), ready for the row
// pass of the min filter; the grey guide is written as is.

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
  brightness = brightness * state->strength;  // SPEC 13 (s = 1 without auto strength)
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

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------

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

}  // namespace hazefree::cuda
