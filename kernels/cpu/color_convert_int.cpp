// Frame <-> RGB codes at depth 9..16 on the CPU (SPEC 7): the fixed-point rules of
// kernels/color_fixed_rules.hpp, the plane walk of the 8-bit fixed-point path.
#include "kernels/cpu/color_convert_int.hpp"

#include <omp.h>

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/color_fixed_rules.hpp"

namespace hazefree::cpu {
namespace {

int resolve(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

void check_wide_frame(const ImageView& f, const char* what) {
  if (f.depth <= 8 || !valid_depth(f.depth))
    throw std::invalid_argument(fmt::format("{}: a {}-bit frame (9 to 16 bits expected)", what, f.depth));
  if (f.format == PixelFormat::gray8)
    throw std::invalid_argument(fmt::format("{}: a grey frame has no RGB of its own", what));
  if (f.width <= 0 || f.height <= 0 || f.plane_count != plane_count(f.format))
    throw std::invalid_argument(fmt::format("{}: invalid frame view", what));
}

std::uint16_t* sample_row(const PlaneView& p, int y) {
  return reinterpret_cast<std::uint16_t*>(p.data + static_cast<std::ptrdiff_t>(y) * p.stride);
}

// U and V samples of a chroma row: planar planes, or nv12's interleaved pairs (step 2).
struct ChromaRows {
  std::uint16_t* u;
  std::uint16_t* v;
  int step;
};
ChromaRows chroma_rows(const ImageView& f, int cy) {
  if (f.format == PixelFormat::nv12) {
    std::uint16_t* uv = sample_row(f.planes[1], cy);
    return {uv, uv + 1, 2};
  }
  return {sample_row(f.planes[1], cy), sample_row(f.planes[2], cy), 1};
}

}  // namespace

void frame_to_rgb_depth(const ImageView& in, RgbPlanesU16 rgb, int threads) {
  check_wide_frame(in, "colour conversion at depth");
  const int w = in.width, h = in.height, nt = resolve(threads);
  if (in.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const std::uint16_t* s = sample_row(in.planes[0], y);
      const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
      for (int x = 0; x < w; ++x) {
        rgb.r[o + x] = s[3 * x];
        rgb.g[o + x] = s[3 * x + 1];
        rgb.b[o + x] = s[3 * x + 2];
      }
    }
    return;
  }
  const color::YuvToRgbDepthI k = color::yuv_to_rgb_depth_i(in.matrix, in.range, in.depth);
  const int shift = sample_shift(in);
  const int sx = chroma_shift_x(in.format), sy = chroma_shift_y(in.format);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    const std::uint16_t* ys = sample_row(in.planes[0], y);
    const ChromaRows c = chroma_rows(in, y >> sy);
    const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
    for (int x = 0; x < w; ++x) {
      const int ci = (x >> sx) * c.step;
      const color::RgbCodes p = color::yuv_to_rgb_depth(k, ys[x] >> shift, c.u[ci] >> shift, c.v[ci] >> shift);
      rgb.r[o + x] = static_cast<std::uint16_t>(p.r);
      rgb.g[o + x] = static_cast<std::uint16_t>(p.g);
      rgb.b[o + x] = static_cast<std::uint16_t>(p.b);
    }
  }
}

void rgb_depth_to_frame(RgbPlanesU16 rgb, ImageView& out, int threads) {
  check_wide_frame(out, "colour conversion at depth");
  const int w = out.width, h = out.height, nt = resolve(threads);
  if (out.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      std::uint16_t* d = sample_row(out.planes[0], y);
      const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
      for (int x = 0; x < w; ++x) {
        d[3 * x] = rgb.r[o + x];
        d[3 * x + 1] = rgb.g[o + x];
        d[3 * x + 2] = rgb.b[o + x];
      }
    }
    return;
  }
  const color::RgbToYuvDepthI k = color::rgb_to_yuv_depth_i(out.matrix, out.range, out.depth);
  const int shift = sample_shift(out);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    std::uint16_t* d = sample_row(out.planes[0], y);
    const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
    for (int x = 0; x < w; ++x)
      d[x] = static_cast<std::uint16_t>(color::rgb_to_luma_depth(k, rgb.r[o + x], rgb.g[o + x], rgb.b[o + x]) << shift);
  }
  const int sx = chroma_shift_x(out.format), sy = chroma_shift_y(out.format);
  const int cw = (w + (1 << sx) - 1) >> sx, ch = (h + (1 << sy) - 1) >> sy;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int cy = 0; cy < ch; ++cy) {
    const int y0 = cy << sy, y1 = std::min(h, (cy + 1) << sy);
    const ChromaRows c = chroma_rows(out, cy);
    for (int cx = 0; cx < cw; ++cx) {
      const int x0 = cx << sx, x1 = std::min(w, (cx + 1) << sx);
      std::int64_t sr = 0, sg = 0, sb = 0;
      for (int y = y0; y < y1; ++y) {
        const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
        for (int x = x0; x < x1; ++x) {
          sr += rgb.r[o + x];
          sg += rgb.g[o + x];
          sb += rgb.b[o + x];
        }
      }
      const color::ChromaCodes uv = color::rgb_sums_to_chroma_depth(k, sr, sg, sb, (y1 - y0) * (x1 - x0));
      c.u[cx * c.step] = static_cast<std::uint16_t>(uv.u << shift);
      c.v[cx * c.step] = static_cast<std::uint16_t>(uv.v << shift);
    }
  }
}

}  // namespace hazefree::cpu
