// Frame <-> planar RGB on the CPU, float (DCP) and fixed-point (8-bit modes) paths. The rules and
// constants live in kernels/color_rules.hpp; this file only walks the planes.
//
// Chroma upsampling replicates: pixel (x, y) reads chroma sample (x >> sx, y >> sy).
// Chroma downsampling: each chroma sample is computed from the sum of R, G, B over the pixels of
// its block that exist (2x2 for 420, 2x1 for 422, fewer at odd right/bottom edges); the float path
// converts the block's mean RGB (sum / count) and rounds once, the fixed-point path rounds
// acc / (count * 2^16) once. Both are the rounded average of the block's exact chroma.
//
// Depth (SPEC 7): the walks read and write one-byte samples at 8 bits and two-byte samples above,
// shifted for nv12's P010/P016 layout; the float path scales by the codes of the frame's depth.
#include "kernels/color_convert.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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

// Float in codes -> legal code 0..max, rounding to nearest (floor(v + 0.5)).
inline int round_code(float v, float max) {
  const float r = std::floor(v + 0.5f);
  return static_cast<int>(r < 0.f ? 0.f : (r > max ? max : r));
}

// Where the chroma samples of a YUV frame are: U and V rows (bytes) and the step between
// samples (in samples).
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
    return {f.planes[1].data, f.planes[1].data + sample_bytes(f.depth), f.planes[1].stride, 2};
  return {f.planes[1].data, f.planes[2].data, f.planes[1].stride, 1};
}

void check_frame(const ImageView& f) {
  if (f.width <= 0 || f.height <= 0 || f.plane_count != plane_count(f.format))
    throw std::invalid_argument("colour conversion: invalid frame view");
  if (!valid_depth(f.depth))
    throw std::invalid_argument("colour conversion: a depth of " + std::to_string(f.depth) +
                                " bits (8 to 16 expected)");
  for (int i = 0; i < f.plane_count; ++i)
    if (f.planes[i].data == nullptr) throw std::invalid_argument("colour conversion: missing plane");
}

template <typename T>
T* row_of(T* base, int stride, int y) {
  return base + static_cast<std::ptrdiff_t>(y) * stride;
}

// The samples of a frame row stored as T (std::uint8_t at 8 bits, std::uint16_t above), the
// value held `shift` bits up (P010/P016; 0 elsewhere).
// 8-bit samples are never shifted.
template <typename T>
struct SampleRow {
  const std::uint8_t* bytes;
  int shift;
  int operator[](int i) const {
    if constexpr (sizeof(T) == 1) return bytes[i];
    else return reinterpret_cast<const T*>(bytes)[i] >> shift;
  }
};

template <typename T>
struct SampleRowOut {
  std::uint8_t* bytes;
  int shift;
  void put(int i, int v) const {
    if constexpr (sizeof(T) == 1) bytes[i] = static_cast<std::uint8_t>(v);
    else reinterpret_cast<T*>(bytes)[i] = static_cast<T>(v << shift);
  }
};

// ---- the arithmetic of each path ----------------------------------------------------------
// The float and the fixed-point conversions walk the planes the same way; they differ only in
// what one pixel or one chroma block computes, which these two rule sets hold (the expressions
// of kernels/color_rules.hpp, evaluated in the same order as the GPU's).

// Codes are those of the frame's depth (0..M, chroma around c_zero; kernels/color_rules.hpp);
// the expressions are the 8-bit ones, which at 8 bits they are exactly.
struct FloatRules {
  using Sample = float;
  using Sum = float;
  color::YuvToRgbF to_rgb;
  color::RgbToYuvF to_yuv;
  FloatRules(ColorMatrix m, ColorRange r, int depth)
      : to_rgb(color::yuv_to_rgb_f(m, r, depth)), to_yuv(color::rgb_to_yuv_f(m, r, depth)) {}
  float from_code(int s) const { return s / to_rgb.max; }
  int to_code(float v) const { return round_code(clamp01(v) * to_yuv.max, to_yuv.max); }
  float grey(int y) const { return clamp01((y - to_rgb.y_offset) * to_rgb.y_mul); }
  void yuv(int y_code, int u_code, int v_code, float& r, float& g, float& b) const {
    const color::YuvToRgbF& k = to_rgb;
    const float yy = (y_code - k.y_offset) * k.y_mul;
    // Exact: codes and the chroma zero are integers below 2^16.
    const float u = static_cast<float>(u_code) - k.c_zero;
    const float v = static_cast<float>(v_code) - k.c_zero;
    r = clamp01(yy + v * k.r_cr);
    g = clamp01(yy + u * k.g_cb + v * k.g_cr);
    b = clamp01(yy + u * k.b_cb);
  }
  int luma(float r, float g, float b) const {
    const color::RgbToYuvF& k = to_yuv;
    return round_code(k.y_offset + k.y_r * clamp01(r) + k.y_g * clamp01(g) + k.y_b * clamp01(b),
                      k.max);
  }
  // What a chroma block sums (in raster order inside the block, reproducible on the GPU).
  static float summand(float v) { return clamp01(v); }
  // The block's mean RGB converted, rounded once.
  void chroma(float sr, float sg, float sb, int n, int& u, int& v) const {
    const color::RgbToYuvF& k = to_yuv;
    const float count = static_cast<float>(n);
    const float mr = sr / count, mg = sg / count, mb = sb / count;
    u = round_code(k.c_zero + k.cb_r * mr + k.cb_g * mg + k.cb_b * mb, k.max);
    v = round_code(k.c_zero + k.cr_r * mr + k.cr_g * mg + k.cr_b * mb, k.max);
  }
};

struct FixedRules {
  using Sample = std::uint8_t;
  using Sum = std::int32_t;
  color::YuvToRgbI to_rgb;
  color::RgbToYuvI to_yuv;
  FixedRules(ColorMatrix m, ColorRange r, int /*depth: 8 only, checked by the callers*/)
      : to_rgb(color::yuv_to_rgb_i(m, r)), to_yuv(color::rgb_to_yuv_i(m, r)) {}
  std::uint8_t from_code(int s) const { return static_cast<std::uint8_t>(s); }
  int to_code(std::uint8_t v) const { return v; }
  std::uint8_t grey(int y) const {
    return color::clamp_u8(((y - to_rgb.y_offset) * to_rgb.y_mul + color::kFixedHalf) >>
                           color::kFixedBits);
  }
  void yuv(int y8, int u8, int v8, std::uint8_t& r, std::uint8_t& g, std::uint8_t& b) const {
    const color::YuvToRgbI& k = to_rgb;
    const std::int32_t yy = (y8 - k.y_offset) * k.y_mul + color::kFixedHalf;
    const std::int32_t u = u8 - color::kChromaZero;
    const std::int32_t v = v8 - color::kChromaZero;
    r = color::clamp_u8((yy + v * k.r_cr) >> color::kFixedBits);
    g = color::clamp_u8((yy + u * k.g_cb + v * k.g_cr) >> color::kFixedBits);
    b = color::clamp_u8((yy + u * k.b_cb) >> color::kFixedBits);
  }
  int luma(std::uint8_t r, std::uint8_t g, std::uint8_t b) const {
    const color::RgbToYuvI& k = to_yuv;
    return color::clamp_u8(k.y_offset + color::fixed_round(k.y_r * r + k.y_g * g + k.y_b * b, 0));
  }
  static std::int32_t summand(std::uint8_t v) { return v; }
  // acc / (n 2^16) rounded once; n is 1, 2 or 4.
  void chroma(std::int32_t sr, std::int32_t sg, std::int32_t sb, int n, int& u, int& v) const {
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
// T is the storage of one sample (std::uint8_t at 8 bits, std::uint16_t above).

template <typename Rules, typename T, typename Planes>
void frame_to_rgb_at(const ImageView& in, Planes rgb, int threads) {
  const int w = in.width, h = in.height;
  const int nt = resolve(threads);
  const int shift = sample_shift(in);
  const PlaneView& p0 = in.planes[0];
  const Rules k(in.matrix, in.range, in.depth);
  if (in.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const SampleRow<T> s{row_of(p0.data, p0.stride, y), shift};
      const auto d = plane_rows(rgb, y);
      for (int x = 0; x < w; ++x) {
        d.r[x] = k.from_code(s[3 * x]);
        d.g[x] = k.from_code(s[3 * x + 1]);
        d.b[x] = k.from_code(s[3 * x + 2]);
      }
    }
    return;
  }
  if (in.format == PixelFormat::gray8) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const SampleRow<T> s{row_of(p0.data, p0.stride, y), shift};
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
    const SampleRow<T> ys{row_of(p0.data, p0.stride, y), shift};
    const SampleRow<T> us{c.u_row(y >> sy), shift};
    const SampleRow<T> vs{c.v_row(y >> sy), shift};
    const auto d = plane_rows(rgb, y);
    for (int x = 0; x < w; ++x) {
      const int ci = (x >> sx) * c.step;
      k.yuv(ys[x], us[ci], vs[ci], d.r[x], d.g[x], d.b[x]);
    }
  }
}

template <typename Rules, typename T, typename Planes>
void rgb_to_frame_at(Planes rgb, ImageView& out, int threads) {
  const int w = out.width, h = out.height;
  const int nt = resolve(threads);
  const int shift = sample_shift(out);
  const PlaneView& p0 = out.planes[0];
  const Rules k(out.matrix, out.range, out.depth);
  if (out.format == PixelFormat::rgb24) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const SampleRowOut<T> d{row_of(p0.data, p0.stride, y), shift};
      const auto s = plane_rows(rgb, y);
      for (int x = 0; x < w; ++x) {
        d.put(3 * x, k.to_code(s.r[x]));
        d.put(3 * x + 1, k.to_code(s.g[x]));
        d.put(3 * x + 2, k.to_code(s.b[x]));
      }
    }
    return;
  }
  // Luma (gray8 and every YUV format).
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    const SampleRowOut<T> d{row_of(p0.data, p0.stride, y), shift};
    const auto s = plane_rows(rgb, y);
    for (int x = 0; x < w; ++x) d.put(x, k.luma(s.r[x], s.g[x], s.b[x]));
  }
  if (out.format == PixelFormat::gray8) return;

  const ChromaPlanes c = chroma_planes(out);
  const int sx = chroma_shift_x(out.format), sy = chroma_shift_y(out.format);
  const int cw = (w + (1 << sx) - 1) >> sx, ch = (h + (1 << sy) - 1) >> sy;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int cy = 0; cy < ch; ++cy) {
    const int y0 = cy << sy, y1 = std::min(h, (cy + 1) << sy);
    const SampleRowOut<T> us{c.u_row(cy), shift};
    const SampleRowOut<T> vs{c.v_row(cy), shift};
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
      int u = 0, v = 0;
      k.chroma(sr, sg, sb, (y1 - y0) * (x1 - x0), u, v);
      us.put(cx * c.step, u);
      vs.put(cx * c.step, v);
    }
  }
}

template <typename Rules, typename Planes>
void frame_to_rgb(const ImageView& in, Planes rgb, int threads) {
  check_frame(in);
  if (in.depth > 8) frame_to_rgb_at<Rules, std::uint16_t>(in, rgb, threads);
  else frame_to_rgb_at<Rules, std::uint8_t>(in, rgb, threads);
}

template <typename Rules, typename Planes>
void rgb_to_frame(Planes rgb, ImageView& out, int threads) {
  check_frame(out);
  if (out.depth > 8) rgb_to_frame_at<Rules, std::uint16_t>(rgb, out, threads);
  else rgb_to_frame_at<Rules, std::uint8_t>(rgb, out, threads);
}

// The fixed-point path converts to and from 8-bit RGB planes: 8-bit frames only.
void check_8bit(const ImageView& f, const char* what) {
  if (f.depth != 8)
    throw std::invalid_argument(std::string(what) + ": a " + format_name(f.format, f.depth) +
                                " frame (8-bit frames only)");
}

}  // namespace

void frame_to_rgb_f32(const ImageView& in, RgbPlanesF rgb, int threads) {
  frame_to_rgb<FloatRules>(in, rgb, threads);
}

void rgb_f32_to_frame(RgbPlanesF rgb, ImageView& out, int threads) {
  rgb_to_frame<FloatRules>(rgb, out, threads);
}

void frame_to_rgb_u8(const ImageView& in, RgbPlanesU8 rgb, int threads) {
  check_8bit(in, "frame_to_rgb_u8");
  frame_to_rgb<FixedRules>(in, rgb, threads);
}

void rgb_u8_to_frame(RgbPlanesU8 rgb, ImageView& out, int threads) {
  check_8bit(out, "rgb_u8_to_frame");
  rgb_to_frame<FixedRules>(rgb, out, threads);
}

}  // namespace cpu
}  // namespace hazefree
