// Sliding-window AHE / CLAHE on the CPU (SPEC 4), Perreault-Hebert style: one 256-bin histogram
// per image column covering the 2r+1 window rows (moved down one row with two counter updates
// per column), and the window histogram moved right one column by adding the entering column's
// histogram and subtracting the leaving one's. Per pixel: one pass over the bins (update, and for
// CLAHE the excess) and one up to the centre value (the cdf, clipped for CLAHE), so the cost does
// not depend on the window. OpenMP over horizontal strips, each with its own column histograms;
// one thread is the sequential baseline, and every thread count gives the same bits.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/cpu/cpu_isa.hpp"
#include "kernels/cpu/equalize_ahe_depth.hpp"
#include "kernels/cpu/equalize_common.hpp"
#include "kernels/equalize.hpp"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cpu {
namespace rules = equalize_rules;
using detail::ChannelIn;
using detail::ChannelOut;

namespace {

constexpr int kBins = rules::kBins;

// The per-pixel loops are compiled twice on x86-64, for the baseline and for AVX2 (twice the
// 16-bit lanes), and the AVX2 copy is picked at run time where the CPU has it. The bodies are
// forced inline into each copy so that they are generated for its instruction set.
#if defined(__GNUC__) && defined(__x86_64__)
#define HAZEFREE_AHE_INLINE inline __attribute__((always_inline))
#define HAZEFREE_AHE_AVX2 1
#else
#define HAZEFREE_AHE_INLINE inline
#define HAZEFREE_AHE_AVX2 0
#endif

// Output tables up to this many window pixels (1 MiB); larger windows divide per pixel.
constexpr std::int64_t kMaxTableWindow = std::int64_t{1} << 20;

alignas(64) const std::uint16_t kZeroColumn[kBins] = {};

// Window histogram += entering column - leaving column, returning the (clipped) cdf at v.
// Only bins [lo, hi) are touched: the window rows hold no value outside them, so every other bin
// of every histogram involved is zero (low-contrast, hazy frames span few bins).
// Count is uint16_t while n = w*w fits in 16 bits (w <= 255), else uint32_t; the running sums
// wrap in Count but never exceed n, so they come out exact. Plain loops the compiler vectorizes;
// the cdf is summed in a second pass up to v rather than masked in the first, which measured
// faster (27 vs 36 ms/Mpixel, 1080p, window 63, AVX2, one EPYC core, 2026-11).
template <typename Count>
HAZEFREE_AHE_INLINE std::uint32_t slide_cdf(Count* __restrict hist, const std::uint16_t* __restrict enter,
                                            const std::uint16_t* __restrict leave, int v, int lo, int hi) {
  for (int i = lo; i < hi; ++i) hist[i] = static_cast<Count>(hist[i] + enter[i] - leave[i]);
  Count below = 0;
  for (int i = lo; i <= v; ++i) below = static_cast<Count>(below + hist[i]);
  return below;
}

template <typename Count>
HAZEFREE_AHE_INLINE std::uint32_t slide_clahe_cdf(Count* __restrict hist, const std::uint16_t* __restrict enter,
                                                  const std::uint16_t* __restrict leave, int v, int lo,
                                                  int hi, Count limit) {
  Count excess = 0;
  for (int i = lo; i < hi; ++i) {
    const Count h = static_cast<Count>(hist[i] + enter[i] - leave[i]);
    hist[i] = h;
    excess = static_cast<Count>(excess + (h > limit ? static_cast<Count>(h - limit) : Count{0}));
  }
  Count below = 0;
  for (int i = lo; i <= v; ++i) below = static_cast<Count>(below + (hist[i] < limit ? hist[i] : limit));
  return rules::clahe_cdf(below, excess, v);
}

struct StripWorkspace {
  std::vector<std::uint16_t> columns;  // width x 256 column histograms
  // The window histogram and the one at x = 0, in the counter width of the window.
  alignas(64) std::uint16_t hist16[kBins];
  alignas(64) std::uint16_t left16[kBins];
  alignas(64) std::uint32_t hist32[kBins];
  alignas(64) std::uint32_t left32[kBins];
  template <typename Count> Count* hist();
  template <typename Count> Count* left();
};
template <> std::uint16_t* StripWorkspace::hist<std::uint16_t>() { return hist16; }
template <> std::uint16_t* StripWorkspace::left<std::uint16_t>() { return left16; }
template <> std::uint32_t* StripWorkspace::hist<std::uint32_t>() { return hist32; }
template <> std::uint32_t* StripWorkspace::left<std::uint32_t>() { return left32; }

struct AheGeometry {
  int width, height, radius;
  std::int64_t n;
  int limit;                        // CLAHE clip limit, 0 = plain AHE
  const std::uint8_t* out_table;    // cdf -> final code, or nullptr (n too large)
  const std::uint8_t* codes;        // equalized code -> final code
  const std::uint8_t* row_min;      // smallest and largest value of each source row
  const std::uint8_t* row_max;
};

HAZEFREE_AHE_INLINE std::uint8_t final_code(const AheGeometry& g, std::uint32_t cdf) {
  return g.out_table ? g.out_table[cdf] : g.codes[rules::ahe_code(cdf, g.n)];
}

// Rows [y_begin, y_end) of one channel.
template <typename Count, bool kClip>
HAZEFREE_AHE_INLINE void strip_body(ChannelIn src, ChannelOut dst, const AheGeometry& g,
                                    int y_begin, int y_end, StripWorkspace& ws) {
  const int width = g.width, height = g.height, r = g.radius;
  std::uint16_t* cols = ws.columns.data();
  Count* hist = ws.hist<Count>();
  Count* left = ws.left<Count>();
  const Count limit = static_cast<Count>(g.limit);

  // Column histograms of the window rows around y_begin, and the window histogram at x = 0.
  std::memset(cols, 0, static_cast<std::size_t>(width) * kBins * sizeof(std::uint16_t));
  for (int j = -r; j <= r; ++j) {
    const std::uint8_t* row = src.data + static_cast<std::size_t>(rules::reflect101(y_begin + j, height)) * src.stride;
    for (int x = 0; x < width; ++x) ++cols[static_cast<std::size_t>(x) * kBins + row[x]];
  }
  std::fill(left, left + kBins, Count{0});
  for (int j = -r; j <= r; ++j) {
    const std::uint16_t* c = cols + static_cast<std::size_t>(rules::reflect101(j, width)) * kBins;
    for (int i = 0; i < kBins; ++i) left[i] = static_cast<Count>(left[i] + c[i]);
  }

  for (int y = y_begin; y < y_end; ++y) {
    if (y > y_begin) {  // move every column histogram and the x = 0 window down one row
      const std::uint8_t* leaving =
          src.data + static_cast<std::size_t>(rules::reflect101(y - 1 - r, height)) * src.stride;
      const std::uint8_t* entering =
          src.data + static_cast<std::size_t>(rules::reflect101(y + r, height)) * src.stride;
      for (int x = 0; x < width; ++x) {
        std::uint16_t* c = cols + static_cast<std::size_t>(x) * kBins;
        --c[leaving[x]];
        ++c[entering[x]];
      }
      for (int j = -r; j <= r; ++j) {
        const int x = rules::reflect101(j, width);
        --left[leaving[x]];
        ++left[entering[x]];
      }
    }
    std::memcpy(hist, left, kBins * sizeof(Count));
    // Values of the window rows (reflection stays inside [y - r, y + r]), widened to whole
    // vectors of bins.
    int lo = 255, hi = 0;
    for (int k = std::max(0, y - r); k <= std::min(height - 1, y + r); ++k) {
      lo = std::min<int>(lo, g.row_min[k]);
      hi = std::max<int>(hi, g.row_max[k]);
    }
    lo &= ~15;
    hi = (hi | 15) + 1;
    const std::uint8_t* s = src.data + static_cast<std::size_t>(y) * src.stride;
    std::uint8_t* d = dst.data + static_cast<std::size_t>(y) * dst.stride;
    for (int x = 0; x < width; ++x) {
      const std::uint16_t* enter = kZeroColumn;
      const std::uint16_t* leave = kZeroColumn;
      if (x > 0) {
        enter = cols + static_cast<std::size_t>(rules::reflect101(x + r, width)) * kBins;
        leave = cols + static_cast<std::size_t>(rules::reflect101(x - 1 - r, width)) * kBins;
      }
      const int v = s[x];
      const std::uint32_t cdf = kClip ? slide_clahe_cdf(hist, enter, leave, v, lo, hi, limit)
                                      : slide_cdf(hist, enter, leave, v, lo, hi);
      d[x] = final_code(g, cdf);
    }
  }
}

using StripFunction = void (*)(ChannelIn, ChannelOut, const AheGeometry&, int, int, StripWorkspace&);

template <typename Count, bool kClip>
void strip_baseline(ChannelIn src, ChannelOut dst, const AheGeometry& g, int y_begin, int y_end,
                    StripWorkspace& ws) {
  strip_body<Count, kClip>(src, dst, g, y_begin, y_end, ws);
}

#if HAZEFREE_AHE_AVX2
template <typename Count, bool kClip>
__attribute__((target("avx2"))) void strip_avx2(ChannelIn src, ChannelOut dst,
                                                const AheGeometry& g, int y_begin, int y_end,
                                                StripWorkspace& ws) {
  strip_body<Count, kClip>(src, dst, g, y_begin, y_end, ws);
}
#endif

template <typename Count, bool kClip>
StripFunction pick_strip() {
#if HAZEFREE_AHE_AVX2
  if (detail::cpu_allows(detail::CpuIsa::avx2)) return strip_avx2<Count, kClip>;
#endif
  return strip_baseline<Count, kClip>;
}

StripFunction pick_strip(bool wide_counters, bool clip) {
  if (wide_counters) return clip ? pick_strip<std::uint32_t, true>() : pick_strip<std::uint32_t, false>();
  return clip ? pick_strip<std::uint16_t, true>() : pick_strip<std::uint16_t, false>();
}

}  // namespace

struct AdaptiveEqualizer::Impl final : detail::ChannelEqualizer {
  AheParams params;
  ColorMode color;
  int threads;
  detail::ColorRouter router;

  int width = 0, height = 0;
  AheGeometry geometry{};
  std::vector<StripWorkspace> strips;
  std::vector<std::uint8_t> out_table;
  std::vector<std::uint8_t> row_min, row_max;
  const std::uint8_t* table_codes = nullptr;  // codes the table was built with

  detail::AheDepthEqualizer depth_equalizer;  // frames of 9..16 bits (SPEC 7)

  Impl(const AheParams& p, ColorMode c, int t)
      : params(p), color(c), threads(detail::resolve_threads(t)), router(threads),
        depth_equalizer(threads) {
    if (params.window < 3 || params.window % 2 == 0)
      throw std::invalid_argument(
          fmt::format("ahe.window = {} must be odd and >= 3", params.window));
    if (!(params.clip >= 0.f))
      throw std::invalid_argument(fmt::format("ahe.clip = {} must be >= 0", params.clip));
    if (color == ColorMode::rgb_bits)
      throw std::invalid_argument("color = rgb-bits is for mode he only");
  }

  void prepare(int w, int h) {
    if (w == width && h == height) return;
    width = w;
    height = h;
    const int r = rules::ahe_radius(params.window, w, h);
    if (rules::ahe_radius_reduced(params.window, w, h))
      fmt::print(stderr, "hazefree: ahe window {} does not fit the {}x{} frame; using window {}\n",
                 params.window, w, h, 2 * r + 1);
    const std::int64_t side = 2 * r + 1;
    if (side > 65535)
      throw std::invalid_argument("ahe: window too large for 16-bit column histograms");
    // A limit of n or more clips nothing; capping it keeps it within the 16-bit counters.
    const std::int64_t limit = std::min<std::int64_t>(rules::clahe_clip_limit(params.clip, side * side),
                                                      side * side);
    geometry = AheGeometry{w, h, r, side * side, static_cast<int>(limit), nullptr, nullptr, nullptr, nullptr};
    row_min.resize(static_cast<std::size_t>(h));
    row_max.resize(static_cast<std::size_t>(h));
    strips.resize(static_cast<std::size_t>(std::min(threads, h)));
    for (StripWorkspace& s : strips) s.columns.assign(static_cast<std::size_t>(w) * kBins, 0);
    table_codes = nullptr;
  }

  void equalize(int, ChannelIn src, ChannelOut dst, int w, int h,
                const std::uint8_t* codes) override {
    prepare(w, h);
    AheGeometry g = geometry;
    g.codes = codes;
    if (g.n <= kMaxTableWindow) {
      if (table_codes != codes) {
        out_table.resize(static_cast<std::size_t>(g.n) + 1);
        for (std::int64_t cdf = 0; cdf <= g.n; ++cdf)
          out_table[static_cast<std::size_t>(cdf)] = codes[rules::ahe_code(cdf, g.n)];
        table_codes = codes;
      }
      g.out_table = out_table.data();
    }
#pragma omp parallel for schedule(static) num_threads(std::min(threads, h))
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* row = src.data + static_cast<std::size_t>(y) * src.stride;
      std::uint8_t lo = 255, hi = 0;
      for (int x = 0; x < w; ++x) {
        lo = std::min(lo, row[x]);
        hi = std::max(hi, row[x]);
      }
      row_min[static_cast<std::size_t>(y)] = lo;
      row_max[static_cast<std::size_t>(y)] = hi;
    }
    g.row_min = row_min.data();
    g.row_max = row_max.data();
    const int count = static_cast<int>(strips.size());
    const StripFunction strip = pick_strip(g.n > 65535, g.limit > 0);
#pragma omp parallel for schedule(static, 1) num_threads(count)
    for (int k = 0; k < count; ++k) {
      const int y0 = static_cast<int>(static_cast<std::int64_t>(h) * k / count);
      const int y1 = static_cast<int>(static_cast<std::int64_t>(h) * (k + 1) / count);
      if (y0 >= y1) continue;
      StripWorkspace& ws = strips[static_cast<std::size_t>(k)];
      strip(src, dst, g, y0, y1, ws);
    }
  }

  // SPEC 7: B = 2^min(d, 12) bins, L = max(1, int(clip * n / B)) (capped at n as at 8 bits).
  void equalize_wide(int, detail::WideIn src, detail::WideOut dst, int w, int h, int depth,
                     const std::uint16_t* codes) override {
    prepare(w, h);  // the radius (and its warning) as at 8 bits
    const std::int64_t n = geometry.n;
    const int limit = static_cast<int>(
        std::min<std::int64_t>(rules::clahe_clip_limit(params.clip, n, rules::ahe_bins(depth)), n));
    depth_equalizer.run(src, dst, w, h, depth, geometry.radius, limit, codes);
  }

  void process(const ImageView& in, ImageView& out) { router.run(in, out, color, *this); }
};

AdaptiveEqualizer::AdaptiveEqualizer(const AheParams& params, ColorMode color, int threads)
    : impl_(std::make_unique<Impl>(params, color, threads)) {}
AdaptiveEqualizer::~AdaptiveEqualizer() = default;
AdaptiveEqualizer::AdaptiveEqualizer(AdaptiveEqualizer&&) noexcept = default;
AdaptiveEqualizer& AdaptiveEqualizer::operator=(AdaptiveEqualizer&&) noexcept = default;

void AdaptiveEqualizer::process(const ImageView& in, ImageView& out) { impl_->process(in, out); }

}  // namespace hazefree::cpu
