// The colour routing of frames of depth 9..16 on the GPU (SPEC 7): CudaEqualizer::enqueue_wide,
// the colour modes of the CPU's ColorRouter::run_wide around HE (he_depth_cuda.cu) and AHE/CLAHE
// at depth (ahe_depth_cuda.cu), with the fixed-point rules of kernels/color_fixed_rules.hpp.
#include <algorithm>
#include <stdexcept>

#include "kernels/color_fixed_rules.hpp"
#include "kernels/cuda/channel_planes.cuh"
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

// ---- colour routing at depth ----------------------------------------------------------------

__device__ __forceinline__ std::uint16_t* wide_row(std::uint8_t* base, int stride, int y) {
  return reinterpret_cast<std::uint16_t*>(base + static_cast<std::ptrdiff_t>(y) * stride);
}

// Frame -> channel planes (stride in samples): R, G, B of the fixed-point rule at depth (YUV) or
// as stored (rgb48); rgb48 luma: OpenCV's YCrCb at depth; rgb48 grey: OpenCV's grey at depth.
__global__ void to_wide_channels_kernel(FrameRef f, color::YuvToRgbDepthI k, ChannelKind kind,
                                        std::uint16_t* q0, std::uint16_t* q1, std::uint16_t* q2,
                                        int stride) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= f.width || y >= f.height) return;
  const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * stride + x;
  int r, g, b;
  const std::uint16_t* row = wide_row(f.p0, f.s0, y);
  if (f.format == PixelFormat::rgb24) {
    r = row[3 * x];
    g = row[3 * x + 1];
    b = row[3 * x + 2];
  } else {
    const std::ptrdiff_t ci = static_cast<std::ptrdiff_t>(x >> f.sx) * f.cstep;
    const int cy = y >> f.sy;
    const color::RgbCodes c = color::yuv_to_rgb_depth(k, row[x] >> f.shift, wide_row(f.p1, f.s1, cy)[ci] >> f.shift,
                                                      wide_row(f.p2, f.s1, cy)[ci] >> f.shift);
    r = c.r;
    g = c.g;
    b = c.b;
  }
  if (kind == ChannelKind::rgb) {
    q0[o] = static_cast<std::uint16_t>(r);
    q1[o] = static_cast<std::uint16_t>(g);
    q2[o] = static_cast<std::uint16_t>(b);
  } else if (kind == ChannelKind::ycrcb) {
    const rules::YCrCb v = rules::rgb_to_ycrcb_depth(r, g, b, f.depth);
    q0[o] = static_cast<std::uint16_t>(v.y);
    q1[o] = static_cast<std::uint16_t>(v.cr);
    q2[o] = static_cast<std::uint16_t>(v.cb);
  } else {
    q0[o] = static_cast<std::uint16_t>(rules::rgb_to_grey_depth(r, g, b));
  }
}

// One thread per chroma sample of a YUV output (its block's pixels), else per pixel.
__global__ void from_wide_channels_kernel(FrameRef out, color::RgbToYuvDepthI k, ChannelKind kind,
                                          const std::uint16_t* q0, const std::uint16_t* q1,
                                          const std::uint16_t* q2, const std::uint16_t* c1,
                                          const std::uint16_t* c2, int stride) {
  const OutputBlock blk = output_block(out);
  if (!blk.inside) return;
  std::int64_t sr = 0, sg = 0, sb = 0;
  for (int y = blk.y0; y < blk.y1; ++y) {
    std::uint16_t* row = wide_row(out.p0, out.s0, y);
    for (int x = blk.x0; x < blk.x1; ++x) {
      const rules::Rgb c =
          channels_rgb(kind, q0, q1, q2, c1, c2, static_cast<std::ptrdiff_t>(y) * stride + x, out.depth);
      const int r = c.r, g = c.g, b = c.b;
      if (out.format == PixelFormat::rgb24) {
        row[3 * x] = static_cast<std::uint16_t>(r);
        row[3 * x + 1] = static_cast<std::uint16_t>(g);
        row[3 * x + 2] = static_cast<std::uint16_t>(b);
      } else {
        row[x] = static_cast<std::uint16_t>(color::rgb_to_luma_depth(k, r, g, b) << out.shift);
        sr += r;
        sg += g;
        sb += b;
      }
    }
  }
  if (!out.yuv) return;
  const color::ChromaCodes uv =
      color::rgb_sums_to_chroma_depth(k, sr, sg, sb, (blk.y1 - blk.y0) * (blk.x1 - blk.x0));
  const std::ptrdiff_t ci = static_cast<std::ptrdiff_t>(blk.bx) * out.cstep;
  wide_row(out.p1, out.s1, blk.by)[ci] = static_cast<std::uint16_t>(uv.u << out.shift);
  wide_row(out.p2, out.s1, blk.by)[ci] = static_cast<std::uint16_t>(uv.v << out.shift);
}

// Fills `samples` 16-bit samples of each row with `value`.
__global__ void fill_u16_kernel(std::uint8_t* base, int stride, int samples, int height,
                                std::uint16_t value) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < samples && y < height) wide_row(base, stride, y)[x] = value;
}

}  // namespace

void CudaEqualizer::enqueue_wide(const ImageView& d_in, const ImageView& d_out,
                                 HeHistory* d_history, const StateOrder& order,
                                 cudaStream_t stream) {
  const int w = d_in.width, h = d_in.height, d = d_in.depth;
  const PixelFormat f = d_in.format;
  const ColorMode color = config_.color;
  const bool is_he = config_.mode == Mode::he;
  if (d_out.depth != d)
    throw std::invalid_argument("equalize: output " + format_name(d_out.format, d_out.depth) +
                                " differs from input " + format_name(f, d) + " in depth");
  if (is_he && color == ColorMode::rgb_bits)
    throw std::invalid_argument("color = rgb-bits works on 8-bit frames only; this frame is " +
                                std::to_string(d) + "-bit (" + format_name(f, d) + ")");
  ImageView out = d_out;
  out.matrix = d_in.matrix;
  out.range = d_in.range;

  auto plane_of = [](const ImageView& v, int i) {
    return DevicePlaneU16{reinterpret_cast<std::uint16_t*>(v.planes[i].data), v.width, v.height,
                          v.planes[i].stride / 2, sample_shift(v)};
  };
  auto equalize = [&](const DevicePlaneU16* src, const DevicePlaneU16* dst, int channels, bool limited) {
    if (is_he) he_depth_.apply(src, dst, channels, d, limited, config_.he, d_history, order, stream);
    else ahe_depth_.apply(src, dst, channels, d, config_.ahe, limited, stream);
  };

  if (f == PixelFormat::gray8) {  // every mode is the plane itself
    const DevicePlaneU16 src = plane_of(d_in, 0), dst = plane_of(out, 0);
    equalize(&src, &dst, 1, false);
    return;
  }
  if (f == PixelFormat::rgb24 || color == ColorMode::rgb) {
    const int sstride = (w + 63) / 64 * 64;
    const std::size_t plane = static_cast<std::size_t>(sstride) * h;
    wide_scratch_.reserve(plane * 6);
    DevicePlaneU16 sc[6];
    for (int i = 0; i < 6; ++i) sc[i] = {wide_scratch_.get() + i * plane, w, h, sstride, 0};
    const ChannelKind kind = color == ColorMode::rgb ? ChannelKind::rgb
                          : (color == ColorMode::grey ? ChannelKind::grey : ChannelKind::ycrcb);
    to_wide_channels_kernel<<<grid_2d(w, h), kBlock2d, 0, stream>>>(
        frame_ref(d_in), color::yuv_to_rgb_depth_i(d_in.matrix, d_in.range, d), kind, sc[0].data,
        sc[1].data, sc[2].data, sstride);
    HAZEFREE_CUDA_CHECK_LAUNCH("to_wide_channels_kernel");
    equalize(sc, sc + 3, kind == ChannelKind::rgb ? 3 : 1, false);
    const FrameRef o = frame_ref(out);
    const int sx = o.yuv ? o.sx : 0, sy = o.yuv ? o.sy : 0;
    const int bw = (w + (1 << sx) - 1) >> sx, bh = (h + (1 << sy) - 1) >> sy;
    from_wide_channels_kernel<<<grid_2d(bw, bh), kBlock2d, 0, stream>>>(
        o, color::rgb_to_yuv_depth_i(out.matrix, out.range, d), kind, sc[3].data, sc[4].data,
        sc[5].data, sc[1].data, sc[2].data, sstride);
    HAZEFREE_CUDA_CHECK_LAUNCH("from_wide_channels_kernel");
    return;
  }
  // YUV, luma or grey: the Y plane itself; chroma kept, or the depth's zero chroma.
  const DevicePlaneU16 src = plane_of(d_in, 0), dst = plane_of(out, 0);
  const std::uint16_t neutral = static_cast<std::uint16_t>((1 << (d - 1)) << sample_shift(d_in));
  WidePlaneCompanion chroma[2];
  int count = 0;
  for (int i = 1; i < d_in.plane_count && count < 2; ++i) {
    const int samples = static_cast<int>(plane_row_bytes(d_in, i) / 2);
    const int rows = d_in.planes[i].height;
    chroma[count++] = {DevicePlaneU16{reinterpret_cast<std::uint16_t*>(d_in.planes[i].data), samples, rows,
                                      d_in.planes[i].stride / 2, 0},
                       DevicePlaneU16{reinterpret_cast<std::uint16_t*>(out.planes[i].data), samples, rows,
                                      out.planes[i].stride / 2, 0},
                       color == ColorMode::grey, neutral};
  }
  const bool limited = d_in.range == ColorRange::limited;
  if (is_he) {  // the chroma rides along with the map
    he_depth_.apply(&src, &dst, 1, d, limited, config_.he, d_history, order, stream, chroma, count);
    return;
  }
  ahe_depth_.apply(&src, &dst, 1, d, config_.ahe, limited, stream);
  for (int i = 0; i < count; ++i) {
    const WidePlaneCompanion& c = chroma[i];
    if (c.fill) {
      fill_u16_kernel<<<grid_2d(c.dst.width, c.dst.height), kBlock2d, 0, stream>>>(
          reinterpret_cast<std::uint8_t*>(c.dst.data), c.dst.stride * 2, c.dst.width, c.dst.height, c.value);
      HAZEFREE_CUDA_CHECK_LAUNCH("fill_u16_kernel");
    } else {
      HAZEFREE_CUDA_CHECK(cudaMemcpy2DAsync(c.dst.data, c.dst.stride * 2, c.src.data, c.src.stride * 2,
                                            c.src.width * 2, c.src.height, cudaMemcpyDeviceToDevice, stream));
    }
  }
}

}  // namespace hazefree::cuda
