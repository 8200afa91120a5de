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

// ---- the arithmetic of each path ----------------------------------------------------------
// The float and the fixed-point conversions walk the planes the same way; they differ only in
// what one pixel or one chroma block computes, which these two rule sets hold (the expressions
// of kernels/color_rules.hpp, evaluated in the same order as the GPU's).

struct FloatRules {
  using Sample = float;
  using Sum = float;
  color::YuvToRgbF to_rgb;
  color::RgbToYuvF to_yuv;
  FloatRules(ColorMatrix m, ColorRange r)
      : to_rgb(color::yuv_to_rgb_f(m, r)), to_yuv(color::rgb_to_yuv_f(m, r)) {}
  static float from_code(std::uint8_t s) { return s / 255.f; }
  static std::uint8_t to_code(float v) { return round_code(clamp01(v) * 255.f); }
  float grey(std::uint8_t y) const { return clamp01((y - to_rgb.y_offset) * to_rgb.y_mul); }
  void yuv(std::uint8_t y8, std::uint8_t u8, std::uint8_t v8, float& r, float& g, float& b) const {
    const color::YuvToRgbF& k = to_rgb;
    const float yy = (y8 - k.y_offset) * k.y_mul;
    const float u = static_cast<float>(u8 - color::kChromaZero);
    const float v = static_cast<float>(v8 - color::kChromaZero);
    r = clamp01(yy + v * k.r_cr);
    g = clamp01(yy + u * k.g_cb + v * k.g_cr);
    b = clamp01(yy + u * k.b_cb);
  }
  std::uint8_t luma(float r, float g, float b) const {
    const color::RgbToYuvF& k = to_yuv;
    return round_code(k.y_offset + k.y_r * clamp01(r) + k.y_g * clamp01(g) + k.y_b * clamp01(b));
  }
  // What a chroma block sums (in raster order inside the block, reproducible on the GPU).
  static float summand(float v) { return clamp01(v); }
  // The block's mean RGB converted, rounded once.
  void chroma(float sr, float sg, float sb, int n, std::uint8_t& u, std::uint8_t& v) const {
    const color::RgbToYuvF& k = to_yuv;
    const float count = static_cast<float>(n);
    const float mr = sr / count, mg = sg / count, mb = sb / count;
    u = round_code(color::kChromaZero + k.cb_r * mr + k.cb_g * mg + k.cb_b * mb);
    v = round_code(color::kChromaZero + k.cr_r * mr + k.cr_g * mg + k.cr_b * mb);
  }
};

struct FixedRules {
  using Sample = std::uint8_t;
  using Sum = std::int32_t;
  color::YuvToRgbI to_rgb;
  color::RgbToYuvI to_yuv;
  FixedRules(ColorMatrix m, ColorRange r)
      : to_rgb(color::yuv_to_rgb_i(m, r)), to_yuv(color::rgb_to_yuv_i(m, r)) {}
  static std::uint8_t from_code(std::uint8_t s) { return s; }
  static std::uint8_t to_code(std::uint8_t v) { return v; }
  std::uint8_t grey(std::uint8_t y) const {
    return color::clamp_u8(((y - to_rgb.y_offset) * to_rgb.y_mul + color::kFixedHalf) >>
                           color::kFixedBits);
  }
  void yuv(std::uint8_t y8, std::uint8_t u8, std::uint8_t v8, std::uint8_t& r, std::uint8_t& g,
           std::uint8_t& b) const {
    const color::YuvToRgbI& k = to_rgb;
    const std::int32_t yy = (y8 - k.y_offset) * k.y_mul + color::kFixedHalf;
    const std::int32_t u = u8 - color::kChromaZero;
    const std::int32_t v = v8 - color::kChromaZero;
    r = color::clamp_u8((yy + v * k.r_cr) >> color::kFixedBits);
    g = color::clamp_u8((yy + u * k.g_cb + v * k.g_cr) >> color::kFixedBits);
    b = color::clamp_u8((yy + u * k.b_cb) >> color::kFixedBits);
  }
  std::uint8_t luma(std::uint8_t r, std::uint8_t g, std::uint8_t b) const {
    const color::RgbToYuvI& k = to_yuv;
    return color::clamp_u8(k.y_offset + color::fixed_round(k.y_r * r + k.y_g * g + k.y_b * b, 0));
  }
  static std::int32_t summand(std::uint8_t v) { return v; }
  // acc / (n 2^16) rounded once; n is 1, 2 or 4.
  void chroma(std::int32_t sr, std::int32_t sg, std::int32_t sb, int n, std::uint8_t& u,
              std::uint8_t& v) const {
    const color::RgbToYuvI& k = to_yuv;
    const int n_log2 = n == 4 ? 2 : (n == 2 ? 1 : 0);
    u = color::clamp_u8(color::kChromaZero +
                        color::fixed_round(k.cb_r * sr + k.cb_g * sg + k.cb_b * sb, n_log2));
    v = color::clamp_u8(color::kChromaZero +
                        color::fixed_round(k.cr_r * sr + k.cr_g * sg + k.cr_b * sb, n_log2));
  }
};

// Row y of each of the three planes.
template <typename Planes>
auto plane_rows(const Planes& rgb, int y) {
  struct Rows {
    decltype(rgb.r) r, g, b;
  };
  return Rows{row_of(rgb.r, rgb.stride, y), row_of(rgb.g, rgb.stride, y),
              row_of(rgb.b, rgb.stride, y)};
}

// ---- the walks -------------------------------------------------------------------------------

template <typename Rules, typename Planes>
void frame_to_rgb(const ImageView& in, Planes rgb, int threads) {
  check_frame(in);
  const int w = in.width, h = in.height;
  const int nt = resolve(threads);
  const PlaneView& p0 = in.planes[0];
  const Rules k(in.matrix, in.range);
  if (in.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* s = row_of(p0.data, p0.stride, y);
      const auto d = plane_rows(rgb, y);
      for (int x = 0; x < w; ++x) {
        d.r[x] = Rules::from_code(s[3 * x]);
        d.g[x] = Rules::from_code(s[3 * x + 1]);
        d.b[x] = Rules::from_code(s[3 * x + 2]);
      }
    }
    return;
  }
  if (in.format == PixelFormat::gray8) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* s = row_of(p0.data, p0.stride, y);
      const auto d = plane_rows(rgb, y);
      for (int x = 0; x < w; ++x) {
        const typename Rules::Sample v = k.grey(s[x]);
        d.r[x] = v;
        d.g[x] = v;
        d.b[x] = v;
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
    const auto d = plane_rows(rgb, y);
    for (int x = 0; x < w; ++x) {
      const int ci = (x >> sx) * c.step;
      k.yuv(ys[x], us[ci], vs[ci], d.r[x], d.g[x], d.b[x]);
    }
  }
}

template <typename Rules, typename Planes>
void rgb_to_frame(Planes rgb, ImageView& out, int threads) {
  check_frame(out);
  const int w = out.width, h = out.height;
  const int nt = resolve(threads);
  const PlaneView& p0 = out.planes[0];
  const Rules k(out.matrix, out.range);
  if (out.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      std::uint8_t* d = row_of(p0.data, p0.stride, y);
      const auto s = plane_rows(rgb, y);
      for (int x = 0; x < w; ++x) {
        d[3 * x] = Rules::to_code(s.r[x]);
        d[3 * x + 1] = Rules::to_code(s.g[x]);
        d[3 * x + 2] = Rules::to_code(s.b[x]);
      }
    }
    return;
  }
  // Luma (gray8 and every YUV format).
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    std::uint8_t* d = row_of(p0.data, p0.stride, y);
    const auto s = plane_rows(rgb, y);
    for (int x = 0; x < w; ++x) d[x] = k.luma(s.r[x], s.g[x], s.b[x]);
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
      typename Rules::Sum sr = 0, sg = 0, sb = 0;
      for (int y = y0; y < y1; ++y) {
        const auto s = plane_rows(rgb, y);
        for (int x = x0; x < x1; ++x) {
          sr += Rules::summand(s.r[x]);
          sg += Rules::summand(s.g[x]);
          sb += Rules::summand(s.b[x]);
        }
      }
      k.chroma(sr, sg, sb, (y1 - y0) * (x1 - x0), us[cx * c.step], vs[cx * c.step]);
    }
  }
}

}  // namespace

void frame_to_rgb_f32(const ImageView& in, RgbPlanesF rgb, int threads) {
  frame_to_rgb<FloatRules>(in, rgb, threads);
}

void rgb_f32_to_frame(RgbPlanesF rgb, ImageView& out, int threads) {
  rgb_to_frame<FloatRules>(rgb, out, threads);
}

void frame_to_rgb_u8(const ImageView& in, RgbPlanesU8 rgb, int threads) {
  frame_to_rgb<FixedRules>(in, rgb, threads);
}

void rgb_u8_to_frame(RgbPlanesU8 rgb, ImageView& out, int threads) {
  rgb_to_frame<FixedRules>(rgb, out, threads);
}

}  // namespace cpu
}  // namespace hazefree
