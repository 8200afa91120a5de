// Frame <-> planar RGB on the CPU, float (DCP) and fixed-point (8-bit modes) paths. The rules and
// constants live in kernels/color_rules.hpp; this file only walks the planes.
//
// Chroma upsampling replicates: pixel (x, y) reads chroma sample (x >> sx, y >> sy).
// Chroma downsampling: each chroma sample is computed from the sum of R, G, B over the pixels of
// its block that exist (2x2 for 420, 2x1 for 422, fewer at odd right/bottom edges); the float path
// converts the block's mean RGB (sum / count) and rounds once, the fixed-point path rounds
// acc / (count * 2^16) once. Both are the rounded average of the block's exact chroma.
#include "kernels/color_convert.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/color_rules.hpp"

namespace hazefree {

YuvCoefficients yuv_coefficients(ColorMatrix matrix, ColorRange range) {
  const color::MatrixWeights w = color::matrix_weights(matrix);
  const color::RangeScales s = color::range_scales(range);
  return {static_cast<float>(w.kr), static_cast<float>(w.kb), static_cast<float>(s.y_offset),
          static_cast<float>(s.y_scale), static_cast<float>(s.c_scale)};
}

namespace cpu {
namespace {

int resolve(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

inline float clamp01(float v) { return v < 0.f ? 0.f : (v > 1.f ? 1.f : v); }

// Float in codes -> legal 8-bit code, rounding to nearest (floor(v + 0.5)).
inline std::uint8_t round_code(float v) {
  const float r = std::floor(v + 0.5f);
  return static_cast<std::uint8_t>(r < 0.f ? 0.f : (r > 255.f ? 255.f : r));
}

// Where the chroma samples of a YUV frame are: U and V rows and the step between samples.
struct ChromaPlanes {
  std::uint8_t* u;
  std::uint8_t* v;
  int stride;
  int step;  // 1 planar, 2 interleaved (nv12)
  std::uint8_t* u_row(int cy) const { return u + static_cast<std::ptrdiff_t>(cy) * stride; }
  std::uint8_t* v_row(int cy) const { return v + static_cast<std::ptrdiff_t>(cy) * stride; }
};

ChromaPlanes chroma_planes(const ImageView& f) {
  if (f.format == PixelFormat::nv12)
    return {f.planes[1].data, f.planes[1].data + 1, f.planes[1].stride, 2};
  return {f.planes[1].data, f.planes[2].data, f.planes[1].stride, 1};
}

void check_frame(const ImageView& f) {
  if (f.width <= 0 || f.height <= 0 || f.plane_count != plane_count(f.format))
    throw std::invalid_argument("colour conversion: invalid frame view");
  for (int i = 0; i < f.plane_count; ++i)
    if (f.planes[i].data == nullptr) throw std::invalid_argument("colour conversion: missing plane");
}

template <typename T>
T* row_of(T* base, int stride, int y) {
  return base + static_cast<std::ptrdiff_t>(y) * stride;
}

}  // namespace

// ---- float path --------------------------------------------------------------------------

void frame_to_rgb_f32(const ImageView& in, RgbPlanesF rgb, int threads) {
  check_frame(in);
  const int w = in.width, h = in.height;
  const int nt = resolve(threads);
  const PlaneView& p0 = in.planes[0];
  if (in.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* s = row_of(p0.data, p0.stride, y);
      float* r = row_of(rgb.r, rgb.stride, y);
      float* g = row_of(rgb.g, rgb.stride, y);
      float* b = row_of(rgb.b, rgb.stride, y);
      for (int x = 0; x < w; ++x) {
        r[x] = s[3 * x] / 255.f;
        g[x] = s[3 * x + 1] / 255.f;
        b[x] = s[3 * x + 2] / 255.f;
      }
    }
    return;
  }
  const color::YuvToRgbF k = color::yuv_to_rgb_f(in.matrix, in.range);
  if (in.format == PixelFormat::gray8) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* s = row_of(p0.data, p0.stride, y);
      float* r = row_of(rgb.r, rgb.stride, y);
      float* g = row_of(rgb.g, rgb.stride, y);
      float* b = row_of(rgb.b, rgb.stride, y);
      for (int x = 0; x < w; ++x) {
        const float v = clamp01((s[x] - k.y_offset) * k.y_mul);
        r[x] = v;
        g[x] = v;
        b[x] = v;
      }
    }
    return;
  }
  const ChromaPlanes c = chroma_planes(in);
  const int sx = chroma_shift_x(in.format), sy = chroma_shift_y(in.format);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    const std::uint8_t* ys = row_of(p0.data, p0.stride, y);
    const std::uint8_t* us = c.u_row(y >> sy);
    const std::uint8_t* vs = c.v_row(y >> sy);
    float* r = row_of(rgb.r, rgb.stride, y);
    float* g = row_of(rgb.g, rgb.stride, y);
    float* b = row_of(rgb.b, rgb.stride, y);
    for (int x = 0; x < w; ++x) {
      const int ci = (x >> sx) * c.step;
      const float yy = (ys[x] - k.y_offset) * k.y_mul;
      const float u = static_cast<float>(us[ci] - color::kChromaZero);
      const float v = static_cast<float>(vs[ci] - color::kChromaZero);
      r[x] = clamp01(yy + v * k.r_cr);
      g[x] = clamp01(yy + u * k.g_cb + v * k.g_cr);
      b[x] = clamp01(yy + u * k.b_cb);
    }
  }
}

void rgb_f32_to_frame(RgbPlanesF rgb, ImageView& out, int threads) {
  check_frame(out);
  const int w = out.width, h = out.height;
  const int nt = resolve(threads);
  const PlaneView& p0 = out.planes[0];
  if (out.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      std::uint8_t* d = row_of(p0.data, p0.stride, y);
      const float* r = row_of(rgb.r, rgb.stride, y);
      const float* g = row_of(rgb.g, rgb.stride, y);
      const float* b = row_of(rgb.b, rgb.stride, y);
      for (int x = 0; x < w; ++x) {
        d[3 * x] = round_code(clamp01(r[x]) * 255.f);
        d[3 * x + 1] = round_code(clamp01(g[x]) * 255.f);
        d[3 * x + 2] = round_code(clamp01(b[x]) * 255.f);
      }
    }
    return;
  }
  const color::RgbToYuvF k = color::rgb_to_yuv_f(out.matrix, out.range);
  // Luma (gray8 and every YUV format).
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    std::uint8_t* d = row_of(p0.data, p0.stride, y);
    const float* r = row_of(rgb.r, rgb.stride, y);
    const float* g = row_of(rgb.g, rgb.stride, y);
    const float* b = row_of(rgb.b, rgb.stride, y);
    for (int x = 0; x < w; ++x)
      d[x] = round_code(k.y_offset + k.y_r * clamp01(r[x]) + k.y_g * clamp01(g[x]) +
                        k.y_b * clamp01(b[x]));
  }
  if (out.format == PixelFormat::gray8) return;

  const ChromaPlanes c = chroma_planes(out);
  const int sx = chroma_shift_x(out.format), sy = chroma_shift_y(out.format);
  const int cw = (w + (1 << sx) - 1) >> sx, ch = (h + (1 << sy) - 1) >> sy;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int cy = 0; cy < ch; ++cy) {
    const int y0 = cy << sy, y1 = std::min(h, (cy + 1) << sy);
    std::uint8_t* us = c.u_row(cy);
    std::uint8_t* vs = c.v_row(cy);
    for (int cx = 0; cx < cw; ++cx) {
      const int x0 = cx << sx, x1 = std::min(w, (cx + 1) << sx);
      float sr = 0.f, sg = 0.f, sb = 0.f;
      // Raster order inside the block: the float sums are reproducible on the GPU.
      for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
          sr += clamp01(row_of(rgb.r, rgb.stride, y)[x]);
          sg += clamp01(row_of(rgb.g, rgb.stride, y)[x]);
          sb += clamp01(row_of(rgb.b, rgb.stride, y)[x]);
        }
      const float n = static_cast<float>((y1 - y0) * (x1 - x0));
      const float mr = sr / n, mg = sg / n, mb = sb / n;
      us[cx * c.step] = round_code(color::kChromaZero + k.cb_r * mr + k.cb_g * mg + k.cb_b * mb);
      vs[cx * c.step] = round_code(color::kChromaZero + k.cr_r * mr + k.cr_g * mg + k.cr_b * mb);
    }
  }
}

// ---- fixed-point path --------------------------------------------------------------------

void frame_to_rgb_u8(const ImageView& in, RgbPlanesU8 rgb, int threads) {
  check_frame(in);
  const int w = in.width, h = in.height;
  const int nt = resolve(threads);
  const PlaneView& p0 = in.planes[0];
  if (in.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* s = row_of(p0.data, p0.stride, y);
      std::uint8_t* r = row_of(rgb.r, rgb.stride, y);
      std::uint8_t* g = row_of(rgb.g, rgb.stride, y);
      std::uint8_t* b = row_of(rgb.b, rgb.stride, y);
      for (int x = 0; x < w; ++x) {
        r[x] = s[3 * x];
        g[x] = s[3 * x + 1];
        b[x] = s[3 * x + 2];
      }
    }
    return;
  }
  const color::YuvToRgbI k = color::yuv_to_rgb_i(in.matrix, in.range);
  if (in.format == PixelFormat::gray8) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* s = row_of(p0.data, p0.stride, y);
      std::uint8_t* r = row_of(rgb.r, rgb.stride, y);
      std::uint8_t* g = row_of(rgb.g, rgb.stride, y);
      std::uint8_t* b = row_of(rgb.b, rgb.stride, y);
      for (int x = 0; x < w; ++x) {
        const std::uint8_t v =
            color::clamp_u8(((s[x] - k.y_offset) * k.y_mul + color::kFixedHalf) >> color::kFixedBits);
        r[x] = v;
        g[x] = v;
        b[x] = v;
      }
    }
    return;
  }
  const ChromaPlanes c = chroma_planes(in);
  const int sx = chroma_shift_x(in.format), sy = chroma_shift_y(in.format);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    const std::uint8_t* ys = row_of(p0.data, p0.stride, y);
    const std::uint8_t* us = c.u_row(y >> sy);
    const std::uint8_t* vs = c.v_row(y >> sy);
    std::uint8_t* r = row_of(rgb.r, rgb.stride, y);
    std::uint8_t* g = row_of(rgb.g, rgb.stride, y);
    std::uint8_t* b = row_of(rgb.b, rgb.stride, y);
    for (int x = 0; x < w; ++x) {
      const int ci = (x >> sx) * c.step;
      const std::int32_t yy = (ys[x] - k.y_offset) * k.y_mul + color::kFixedHalf;
      const std::int32_t u = us[ci] - color::kChromaZero;
      const std::int32_t v = vs[ci] - color::kChromaZero;
      r[x] = color::clamp_u8((yy + v * k.r_cr) >> color::kFixedBits);
      g[x] = color::clamp_u8((yy + u * k.g_cb + v * k.g_cr) >> color::kFixedBits);
      b[x] = color::clamp_u8((yy + u * k.b_cb) >> color::kFixedBits);
    }
  }
}

void rgb_u8_to_frame(RgbPlanesU8 rgb, ImageView& out, int threads) {
  check_frame(out);
  const int w = out.width, h = out.height;
  const int nt = resolve(threads);
  const PlaneView& p0 = out.planes[0];
  if (out.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      std::uint8_t* d = row_of(p0.data, p0.stride, y);
      const std::uint8_t* r = row_of(rgb.r, rgb.stride, y);
      const std::uint8_t* g = row_of(rgb.g, rgb.stride, y);
      const std::uint8_t* b = row_of(rgb.b, rgb.stride, y);
      for (int x = 0; x < w; ++x) {
        d[3 * x] = r[x];
        d[3 * x + 1] = g[x];
        d[3 * x + 2] = b[x];
      }
    }
    return;
  }
  const color::RgbToYuvI k = color::rgb_to_yuv_i(out.matrix, out.range);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    std::uint8_t* d = row_of(p0.data, p0.stride, y);
    const std::uint8_t* r = row_of(rgb.r, rgb.stride, y);
    const std::uint8_t* g = row_of(rgb.g, rgb.stride, y);
    const std::uint8_t* b = row_of(rgb.b, rgb.stride, y);
    for (int x = 0; x < w; ++x)
      d[x] = color::clamp_u8(k.y_offset + color::fixed_round(k.y_r * r[x] + k.y_g * g[x] + k.y_b * b[x], 0));
  }
  if (out.format == PixelFormat::gray8) return;

  const ChromaPlanes c = chroma_planes(out);
  const int sx = chroma_shift_x(out.format), sy = chroma_shift_y(out.format);
  const int cw = (w + (1 << sx) - 1) >> sx, ch = (h + (1 << sy) - 1) >> sy;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int cy = 0; cy < ch; ++cy) {
    const int y0 = cy << sy, y1 = std::min(h, (cy + 1) << sy);
    std::uint8_t* us = c.u_row(cy);
    std::uint8_t* vs = c.v_row(cy);
    for (int cx = 0; cx < cw; ++cx) {
      const int x0 = cx << sx, x1 = std::min(w, (cx + 1) << sx);
      std::int32_t sr = 0, sg = 0, sb = 0;
      for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
          sr += row_of(rgb.r, rgb.stride, y)[x];
          sg += row_of(rgb.g, rgb.stride, y)[x];
          sb += row_of(rgb.b, rgb.stride, y)[x];
        }
      const int n = (y1 - y0) * (x1 - x0);  // 1, 2 or 4
      const int n_log2 = n == 4 ? 2 : (n == 2 ? 1 : 0);
      us[cx * c.step] = color::clamp_u8(
          color::kChromaZero + color::fixed_round(k.cb_r * sr + k.cb_g * sg + k.cb_b * sb, n_log2));
      vs[cx * c.step] = color::clamp_u8(
          color::kChromaZero + color::fixed_round(k.cr_r * sr + k.cr_g * sg + k.cr_b * sb, n_log2));
    }
  }
}

}  // namespace cpu
}  // namespace hazefree
