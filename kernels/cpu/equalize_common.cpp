// Colour-mode plumbing of the CPU equalizers (SPEC 4).
#include "kernels/cpu/equalize_common.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/color_convert.hpp"
#include "kernels/cpu/color_convert_int.hpp"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cpu::detail {
namespace rules = equalize_rules;

namespace {

struct CodeTables {
  std::uint8_t identity[256];
  std::uint8_t limited[256];
  CodeTables() {
    for (int e = 0; e < 256; ++e) {
      identity[e] = static_cast<std::uint8_t>(e);
      limited[e] = static_cast<std::uint8_t>(rules::limited_range_code(e));
    }
  }
};
const CodeTables& tables() {
  static const CodeTables t;
  return t;
}

std::uint8_t* row_of(const PlaneView& p, int y) {
  return p.data + static_cast<std::size_t>(y) * p.stride;
}

// The chroma of the luma and grey modes: copied, or filled with the depth's zero chroma (`zero`,
// at the layout's shift), the rows split over the threads (one thread copying took a fifth of a
// 1080p HE frame at 16 threads).
void keep_chroma(const PlaneView& src, const PlaneView& dst, int row_bytes, bool fill, int depth,
                 std::uint16_t zero, int threads) {
#pragma omp parallel for schedule(static) num_threads(std::max(1, std::min(threads, src.height)))
  for (int y = 0; y < src.height; ++y) {
    std::uint8_t* d = row_of(dst, y);
    if (!fill) {
      std::memcpy(d, row_of(src, y), static_cast<std::size_t>(row_bytes));
    } else if (depth == 8) {
      std::memset(d, zero, static_cast<std::size_t>(row_bytes));
    } else {
      std::uint16_t* d16 = reinterpret_cast<std::uint16_t*>(d);
      std::fill(d16, d16 + row_bytes / 2, zero);
    }
  }
}

}  // namespace

const std::uint8_t* identity_codes() { return tables().identity; }
const std::uint8_t* limited_range_codes() { return tables().limited; }

namespace {

// The code tables of each depth 9..16, built on first use (thread-safe statics).
struct WideCodeTables {
  std::vector<std::uint16_t> identity[kMaxDepth + 1];
  std::vector<std::uint16_t> limited[kMaxDepth + 1];
  WideCodeTables() {
    for (int d = 9; d <= kMaxDepth; ++d) {
      const int bins = rules::he_bins(d);
      identity[d].resize(static_cast<std::size_t>(bins));
      limited[d].resize(static_cast<std::size_t>(bins));
      for (int e = 0; e < bins; ++e) {
        identity[d][static_cast<std::size_t>(e)] = static_cast<std::uint16_t>(e);
        limited[d][static_cast<std::size_t>(e)] = static_cast<std::uint16_t>(rules::limited_range_code(e, d));
      }
    }
  }
};
const WideCodeTables& wide_tables() {
  static const WideCodeTables t;
  return t;
}

void check_wide_depth(int depth) {
  if (depth <= 8 || depth > kMaxDepth)
    throw std::invalid_argument(fmt::format("equalize: no code table at depth {}", depth));
}

std::uint16_t* sample_row(const PlaneView& p, int y) {
  return reinterpret_cast<std::uint16_t*>(p.data + static_cast<std::size_t>(y) * p.stride);
}

}  // namespace

const std::uint16_t* identity_codes_wide(int depth) {
  check_wide_depth(depth);
  return wide_tables().identity[depth].data();
}
const std::uint16_t* limited_range_codes_wide(int depth) {
  check_wide_depth(depth);
  return wide_tables().limited[depth].data();
}

int resolve_threads(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

void ColorRouter::check_same_geometry(const ImageView& in, const ImageView& out) {
  if (in.format != out.format || in.width != out.width || in.height != out.height)
    throw std::invalid_argument(fmt::format(
        "equalize: output {} {}x{} differs from input {} {}x{}", to_string(out.format), out.width,
        out.height, to_string(in.format), in.width, in.height));
  if (in.width <= 0 || in.height <= 0)
    throw std::invalid_argument("equalize: empty frame");
  if (in.depth != out.depth)
    throw std::invalid_argument(fmt::format("equalize: output {} differs from input {} in depth",
                                            format_name(out.format, out.depth),
                                            format_name(in.format, in.depth)));
  if (!valid_depth(in.depth))
    throw std::invalid_argument(fmt::format("equalize: a {}-bit frame (8 to 16 bits supported)", in.depth));
}

void ColorRouter::ensure_wide(int width, int height) {
  if (width == wide_width_ && height == wide_height_) return;
  wide_width_ = width;
  wide_height_ = height;
  wide_plane_samples_ = static_cast<std::size_t>(width) * height;
  wide_scratch_.assign(6 * wide_plane_samples_, 0);
}

void ColorRouter::run_wide(const ImageView& in, ImageView& out, ColorMode mode,
                           ChannelEqualizer& op) {
  const int w = in.width, h = in.height, d = in.depth;
  const PixelFormat f = in.format;
  auto plane_in = [](const ImageView& v, int i) {
    return WideIn{reinterpret_cast<const std::uint16_t*>(v.planes[i].data), v.planes[i].stride / 2,
                  sample_shift(v)};
  };
  auto plane_out = [](ImageView& v, int i) {
    return WideOut{reinterpret_cast<std::uint16_t*>(v.planes[i].data), v.planes[i].stride / 2,
                   sample_shift(v)};
  };

  if (f == PixelFormat::gray8) {  // every mode is the plane itself
    op.equalize_wide(0, plane_in(in, 0), plane_out(out, 0), w, h, d, identity_codes_wide(d));
    return;
  }

  if (mode == ColorMode::rgb) {  // R, G, B codes of depth d, each equalized, and back
    ensure_wide(w, h);
    cpu::frame_to_rgb_depth(in, cpu::RgbPlanesU16{wide_plane(0), wide_plane(1), wide_plane(2), w},
                            threads_);
    for (int c = 0; c < 3; ++c)
      op.equalize_wide(c, WideIn{wide_plane(c), w, 0}, WideOut{wide_plane(3 + c), w, 0}, w, h, d,
                       identity_codes_wide(d));
    cpu::rgb_depth_to_frame(cpu::RgbPlanesU16{wide_plane(3), wide_plane(4), wide_plane(5), w}, out,
                            threads_);
    return;
  }

  if (f == PixelFormat::rgb24) {  // rgb48: OpenCV's YCrCb (luma) or grey at depth d
    ensure_wide(w, h);
    std::uint16_t* luma = wide_plane(0);
    std::uint16_t* cr = wide_plane(1);
    std::uint16_t* cb = wide_plane(2);
    std::uint16_t* eq = wide_plane(3);
    const bool grey = mode == ColorMode::grey;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int y = 0; y < h; ++y) {
      const std::uint16_t* s = sample_row(in.planes[0], y);
      const std::size_t o = static_cast<std::size_t>(y) * w;
      for (int x = 0; x < w; ++x) {
        if (grey) {
          luma[o + x] = static_cast<std::uint16_t>(rules::rgb_to_grey_depth(s[3 * x], s[3 * x + 1], s[3 * x + 2]));
        } else {
          const rules::YCrCb c = rules::rgb_to_ycrcb_depth(s[3 * x], s[3 * x + 1], s[3 * x + 2], d);
          luma[o + x] = static_cast<std::uint16_t>(c.y);
          cr[o + x] = static_cast<std::uint16_t>(c.cr);
          cb[o + x] = static_cast<std::uint16_t>(c.cb);
        }
      }
    }
    op.equalize_wide(0, WideIn{luma, w, 0}, WideOut{eq, w, 0}, w, h, d, identity_codes_wide(d));
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int y = 0; y < h; ++y) {
      std::uint16_t* o16 = sample_row(out.planes[0], y);
      const std::size_t o = static_cast<std::size_t>(y) * w;
      for (int x = 0; x < w; ++x) {
        if (grey) {
          o16[3 * x] = o16[3 * x + 1] = o16[3 * x + 2] = eq[o + x];
        } else {
          const rules::Rgb c = rules::ycrcb_to_rgb_depth(eq[o + x], cr[o + x], cb[o + x], d);
          o16[3 * x] = static_cast<std::uint16_t>(c.r);
          o16[3 * x + 1] = static_cast<std::uint16_t>(c.g);
          o16[3 * x + 2] = static_cast<std::uint16_t>(c.b);
        }
      }
    }
    return;
  }

  // YUV formats: luma or grey. Grey chroma is the depth's zero chroma (128 << s), stored at the
  // layout's shift.
  const std::uint16_t* codes =
      in.range == ColorRange::limited ? limited_range_codes_wide(d) : identity_codes_wide(d);
  op.equalize_wide(0, plane_in(in, 0), plane_out(out, 0), w, h, d, codes);
  const std::uint16_t zero_chroma = static_cast<std::uint16_t>((1 << (d - 1)) << sample_shift(in));
  for (int i = 1; i < in.plane_count; ++i)
    keep_chroma(in.planes[i], out.planes[i], in.planes[i].width * bytes_per_sample(f, i, d),
                mode == ColorMode::grey, d, zero_chroma, threads_);
}

void ColorRouter::ensure(int width, int height) {
  if (width == width_ && height == height_) return;
  width_ = width;
  height_ = height;
  plane_bytes_ = static_cast<std::size_t>(width) * height;
  scratch_.assign(6 * plane_bytes_, 0);
}

RgbScratch ColorRouter::to_rgb(const ImageView& in) {
  ensure(in.width, in.height);
  const int w = in.width, h = in.height;
  RgbScratch rgb{plane(0), plane(1), plane(2), w};
  if (in.format == PixelFormat::rgb24) {
    const PlaneView& p = in.planes[0];
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* s = row_of(p, y);
      const std::size_t o = static_cast<std::size_t>(y) * w;
      for (int x = 0; x < w; ++x) {
        rgb.r[o + x] = s[3 * x];
        rgb.g[o + x] = s[3 * x + 1];
        rgb.b[o + x] = s[3 * x + 2];
      }
    }
  } else if (in.format == PixelFormat::gray8) {
    for (int y = 0; y < h; ++y) {
      const std::size_t o = static_cast<std::size_t>(y) * w;
      std::memcpy(rgb.r + o, row_of(in.planes[0], y), w);
      std::memcpy(rgb.g + o, row_of(in.planes[0], y), w);
      std::memcpy(rgb.b + o, row_of(in.planes[0], y), w);
    }
  } else {
    frame_to_rgb_u8(in, RgbPlanesU8{rgb.r, rgb.g, rgb.b, w}, threads_);
  }
  return rgb;
}

void ColorRouter::from_rgb(const RgbScratch& rgb, ImageView& out) {
  const int w = out.width, h = out.height;
  if (out.format == PixelFormat::rgb24) {
    const PlaneView& p = out.planes[0];
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int y = 0; y < h; ++y) {
      std::uint8_t* d = row_of(p, y);
      const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
      for (int x = 0; x < w; ++x) {
        d[3 * x] = rgb.r[o + x];
        d[3 * x + 1] = rgb.g[o + x];
        d[3 * x + 2] = rgb.b[o + x];
      }
    }
  } else if (out.format == PixelFormat::gray8) {
    for (int y = 0; y < h; ++y) {
      std::uint8_t* d = row_of(out.planes[0], y);
      const std::size_t o = static_cast<std::size_t>(y) * rgb.stride;
      for (int x = 0; x < w; ++x)
        d[x] = static_cast<std::uint8_t>(rules::rgb_to_grey(rgb.r[o + x], rgb.g[o + x], rgb.b[o + x]));
    }
  } else {
    rgb_u8_to_frame(RgbPlanesU8{rgb.r, rgb.g, rgb.b, rgb.stride}, out, threads_);
  }
}

void ColorRouter::run(const ImageView& in, ImageView& out, ColorMode mode, ChannelEqualizer& op) {
  check_same_geometry(in, out);
  out.matrix = in.matrix;
  out.range = in.range;
  if (in.depth > 8) {
    run_wide(in, out, mode, op);
    return;
  }
  const int w = in.width, h = in.height;
  const PixelFormat f = in.format;
  const PlaneView& y_in = in.planes[0];
  const PlaneView& y_out = out.planes[0];

  if (f == PixelFormat::gray8) {  // every mode is the plane itself
    op.equalize(0, {y_in.data, y_in.stride}, {y_out.data, y_out.stride}, w, h, identity_codes());
    return;
  }

  // rgb: each of R, G, B equalized on its own, from and back to the frame's format.
  if (mode == ColorMode::rgb) {
    const RgbScratch rgb = to_rgb(in);
    std::uint8_t* src[3] = {rgb.r, rgb.g, rgb.b};
    for (int c = 0; c < 3; ++c)
      op.equalize(c, {src[c], w}, {plane(3 + c), w}, w, h, identity_codes());
    from_rgb(RgbScratch{plane(3), plane(4), plane(5), w}, out);
    return;
  }

  if (f == PixelFormat::rgb24) {
    ensure(w, h);
    const PlaneView& p_in = in.planes[0];
    const PlaneView& p_out = out.planes[0];
    std::uint8_t* luma = plane(0);
    std::uint8_t* cr = plane(1);
    std::uint8_t* cb = plane(2);
    std::uint8_t* eq = plane(3);
    const bool grey = mode == ColorMode::grey;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* s = row_of(p_in, y);
      const std::size_t o = static_cast<std::size_t>(y) * w;
      for (int x = 0; x < w; ++x) {
        if (grey) {
          luma[o + x] = static_cast<std::uint8_t>(rules::rgb_to_grey(s[3 * x], s[3 * x + 1], s[3 * x + 2]));
        } else {
          const rules::YCrCb c = rules::rgb_to_ycrcb(s[3 * x], s[3 * x + 1], s[3 * x + 2]);
          luma[o + x] = static_cast<std::uint8_t>(c.y);
          cr[o + x] = static_cast<std::uint8_t>(c.cr);
          cb[o + x] = static_cast<std::uint8_t>(c.cb);
        }
      }
    }
    op.equalize(0, {luma, w}, {eq, w}, w, h, identity_codes());
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int y = 0; y < h; ++y) {
      std::uint8_t* d = row_of(p_out, y);
      const std::size_t o = static_cast<std::size_t>(y) * w;
      for (int x = 0; x < w; ++x) {
        if (grey) {
          d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = eq[o + x];
        } else {
          const rules::Rgb c = rules::ycrcb_to_rgb(eq[o + x], cr[o + x], cb[o + x]);
          d[3 * x] = static_cast<std::uint8_t>(c.r);
          d[3 * x + 1] = static_cast<std::uint8_t>(c.g);
          d[3 * x + 2] = static_cast<std::uint8_t>(c.b);
        }
      }
    }
    return;
  }

  // YUV formats: luma or grey.
  const std::uint8_t* codes =
      in.range == ColorRange::limited ? limited_range_codes() : identity_codes();
  op.equalize(0, {y_in.data, y_in.stride}, {y_out.data, y_out.stride}, w, h, codes);
  for (int i = 1; i < in.plane_count; ++i)
    keep_chroma(in.planes[i], out.planes[i], in.planes[i].width * bytes_per_sample(f, i),
                mode == ColorMode::grey, 8, 128, threads_);
}

}  // namespace hazefree::cpu::detail
