// Sliding-window AHE / CLAHE on the CPU (SPEC 4), Perreault-Hebert style: one 256-bin histogram
// per image column covering the 2r+1 window rows (moved down one row with two counter updates
// per column), and the window histogram moved right one column by adding the entering column's
// histogram and subtracting the leaving one's. The cdf at the centre value (and, for CLAHE, the
// clipped cdf and the excess) is accumulated in the same pass over the 256 bins, so the cost per
// pixel does not depend on the window. OpenMP over horizontal strips, each with its own column
// histograms; one thread is the sequential baseline, and every thread count gives the same bits.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/cpu/equalize_common.hpp"
#include "kernels/equalize.hpp"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cpu {
namespace rules = equalize_rules;
using detail::ChannelIn;
using detail::ChannelOut;

namespace {

constexpr int kBins = rules::kBins;

// Output tables up to this many window pixels (1 MiB); larger windows divide per pixel.
constexpr std::int64_t kMaxTableWindow = std::int64_t{1} << 20;

alignas(64) const std::uint16_t kZeroColumn[kBins] = {};

// Window histogram += entering column - leaving column, returning the (clipped) cdf at v.
// Count is uint16_t while n = w*w fits in 16 bits (w <= 255), else uint32_t; the running sums
// wrap in Count but never exceed n, so they come out exact. Written as plain full-width loops
// so the compiler vectorizes them.
template <typename Count>
inline std::uint32_t slide_cdf(Count* __restrict hist, const std::uint16_t* __restrict enter,
                               const std::uint16_t* __restrict leave, int v) {
  Count below = 0;
  for (int i = 0; i < kBins; ++i) {
    const Count h = static_cast<Count>(hist[i] + enter[i] - leave[i]);
    hist[i] = h;
    below = static_cast<Count>(below + (i <= v ? h : Count{0}));
  }
  return below;
}

template <typename Count>
inline std::uint32_t slide_clahe_cdf(Count* __restrict hist, const std::uint16_t* __restrict enter,
                                     const std::uint16_t* __restrict leave, int v, Count limit) {
  Count below = 0, excess = 0;
  for (int i = 0; i < kBins; ++i) {
    const Count h = static_cast<Count>(hist[i] + enter[i] - leave[i]);
    hist[i] = h;
    const Count over = h > limit ? static_cast<Count>(h - limit) : Count{0};
    excess = static_cast<Count>(excess + over);
    below = static_cast<Count>(below + (i <= v ? static_cast<Count>(h - over) : Count{0}));
  }
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
};

inline std::uint8_t final_code(const AheGeometry& g, std::uint32_t cdf) {
  return g.out_table ? g.out_table[cdf] : g.codes[rules::ahe_code(cdf, g.n)];
}

// Rows [y_begin, y_end) of one channel.
template <typename Count, bool kClip>
void equalize_strip(ChannelIn src, ChannelOut dst, const AheGeometry& g, int y_begin, int y_end,
                    StripWorkspace& ws) {
  const int width = g.width, height = g.height, r = g.radius;
  std::uint16_t* cols = ws.columns.data();
  Count* hist = ws.hist<Count>();
  Count* left = ws.left<Count>();
  const Count limit = static_cast<Count>(g.limit);
  auto src_row = [&](int y) { return src.data + static_cast<std::size_t>(y) * src.stride; };

  // Column histograms of the window rows around y_begin, and the window histogram at x = 0.
  std::memset(cols, 0, static_cast<std::size_t>(width) * kBins * sizeof(std::uint16_t));
  for (int j = -r; j <= r; ++j) {
    const std::uint8_t* row = src_row(rules::reflect101(y_begin + j, height));
    for (int x = 0; x < width; ++x) ++cols[static_cast<std::size_t>(x) * kBins + row[x]];
  }
  std::fill(left, left + kBins, Count{0});
  for (int j = -r; j <= r; ++j) {
    const std::uint16_t* c = cols + static_cast<std::size_t>(rules::reflect101(j, width)) * kBins;
    for (int i = 0; i < kBins; ++i) left[i] = static_cast<Count>(left[i] + c[i]);
  }

  for (int y = y_begin; y < y_end; ++y) {
    if (y > y_begin) {  // move every column histogram and the x = 0 window down one row
      const std::uint8_t* leaving = src_row(rules::reflect101(y - 1 - r, height));
      const std::uint8_t* entering = src_row(rules::reflect101(y + r, height));
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
    const std::uint8_t* s = src_row(y);
    std::uint8_t* d = dst.data + static_cast<std::size_t>(y) * dst.stride;
    for (int x = 0; x < width; ++x) {
      const std::uint16_t* enter = kZeroColumn;
      const std::uint16_t* leave = kZeroColumn;
      if (x > 0) {
        enter = cols + static_cast<std::size_t>(rules::reflect101(x + r, width)) * kBins;
        leave = cols + static_cast<std::size_t>(rules::reflect101(x - 1 - r, width)) * kBins;
      }
      const int v = s[x];
      const std::uint32_t cdf = kClip ? slide_clahe_cdf(hist, enter, leave, v, limit)
                                      : slide_cdf(hist, enter, leave, v);
      d[x] = final_code(g, cdf);
    }
  }
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
  const std::uint8_t* table_codes = nullptr;  // codes the table was built with

  Impl(const AheParams& p, ColorMode c, int t)
      : params(p), color(c), threads(detail::resolve_threads(t)), router(threads) {
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
    geometry = AheGeometry{w, h, r, side * side, static_cast<int>(limit), nullptr, nullptr};
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
    const int count = static_cast<int>(strips.size());
    const bool small = g.n <= 65535;
    const bool clip = g.limit > 0;
#pragma omp parallel for schedule(static, 1) num_threads(count)
    for (int k = 0; k < count; ++k) {
      const int y0 = static_cast<int>(static_cast<std::int64_t>(h) * k / count);
      const int y1 = static_cast<int>(static_cast<std::int64_t>(h) * (k + 1) / count);
      if (y0 >= y1) continue;
      StripWorkspace& ws = strips[static_cast<std::size_t>(k)];
      if (small) {
        if (clip) equalize_strip<std::uint16_t, true>(src, dst, g, y0, y1, ws);
        else equalize_strip<std::uint16_t, false>(src, dst, g, y0, y1, ws);
      } else {
        if (clip) equalize_strip<std::uint32_t, true>(src, dst, g, y0, y1, ws);
        else equalize_strip<std::uint32_t, false>(src, dst, g, y0, y1, ws);
      }
    }
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
