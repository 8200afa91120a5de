// Sliding-window AHE / CLAHE at depth 9..16 on the CPU (SPEC 7). The 8-bit scheme (column
// histograms moved down a row with two updates per column, the window histogram moved right by
// the entering column minus the leaving one) over B = 2^min(d, 12) bins would cost O(B) per
// pixel, 16 times the 8-bit work at 4096 bins. A two-level histogram keeps it near the 8-bit
// cost: the bins are grouped in buckets of 64, and every column also counts its pixels per
// bucket. Moving right, a bucket's 64 fine bins are updated only when the entering or the leaving
// column has pixels in it (a column of a natural image spans few buckets); the cdf at the centre
// value is a sum over the buckets below its own plus the fine bins of its own bucket, O(sqrt(B)).
// CLAHE keeps each bucket's excess (sum of max(h - L, 0) over its bins), recomputed when the
// bucket changes, so the clipped cdf and the total excess cost the same. Buckets outside the
// value range of the window rows are never visited. OpenMP over horizontal strips, each with its
// own column histograms: every thread count gives the same bits.
#include "kernels/cpu/equalize_ahe_depth.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/equalize_rules.hpp"

namespace hazefree::cpu::detail {
namespace rules = equalize_rules;

namespace {

constexpr int kBucketLog2 = 6;
constexpr int kBucket = 1 << kBucketLog2;  // fine bins per bucket

#if defined(__GNUC__) && defined(__x86_64__)
#define HAZEFREE_AHE_DEPTH_INLINE inline __attribute__((always_inline))
#define HAZEFREE_AHE_DEPTH_AVX2 1
#else
#define HAZEFREE_AHE_DEPTH_INLINE inline
#define HAZEFREE_AHE_DEPTH_AVX2 0
#endif

// Output tables up to this many window pixels; larger windows divide per pixel.
constexpr std::int64_t kMaxTableWindow = std::int64_t{1} << 20;

struct Geometry {
  int width, height, radius;
  std::int64_t n;
  int limit;         // CLAHE clip limit, 0 = plain AHE
  int bins, buckets;
  int bin_shift;     // sample value -> bin
  int max_code;
  const std::uint16_t* out_table;  // cdf -> final code, or nullptr
  const std::uint16_t* codes;      // equalized code -> final code
  const std::uint8_t* row_lo;      // lowest and highest bucket of each source row
  const std::uint8_t* row_hi;
};

template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Count bucket_excess(const Count* __restrict h, Count limit) {
  Count excess = 0;
  for (int i = 0; i < kBucket; ++i) excess = static_cast<Count>(excess + (h[i] > limit ? h[i] - limit : 0));
  return excess;
}

// The window's counters: 16 bits while n = w*w fits (w <= 255, twice the vector lanes), else 32.
template <typename Count> struct WindowArrays;
template <> struct WindowArrays<std::uint16_t> {
  static std::uint16_t* fine(AheDepthEqualizer::Strip& s) { return s.fine_hist16.data(); }
  static std::uint16_t* left(AheDepthEqualizer::Strip& s) { return s.left_fine16.data(); }
  static std::uint16_t* counts(AheDepthEqualizer::Strip& s) { return s.coarse_hist16.data(); }
  static std::uint16_t* excess(AheDepthEqualizer::Strip& s) { return s.bucket_excess16.data(); }
};
template <> struct WindowArrays<std::uint32_t> {
  static std::uint32_t* fine(AheDepthEqualizer::Strip& s) { return s.fine_hist.data(); }
  static std::uint32_t* left(AheDepthEqualizer::Strip& s) { return s.left_fine.data(); }
  static std::uint32_t* counts(AheDepthEqualizer::Strip& s) { return s.coarse_hist.data(); }
  static std::uint32_t* excess(AheDepthEqualizer::Strip& s) { return s.bucket_excess.data(); }
};

// Rows [y_begin, y_end) of one plane. Running sums in Count wrap but never exceed n, so they
// come out exact.
template <typename Count, bool kClip>
HAZEFREE_AHE_DEPTH_INLINE void strip_body(WideIn src, WideOut dst, const Geometry& g, int y_begin,
                                          int y_end, AheDepthEqualizer::Strip& ws) {
  const int width = g.width, height = g.height, r = g.radius;
  const int bins = g.bins, buckets = g.buckets;
  // A sample's bin; the mask keeps stray bits above the depth out of the histograms.
  const int value_shift = src.shift, bin_shift = g.bin_shift, max_code = g.max_code;
  auto bin_of = [=](std::uint16_t sample) { return ((sample >> value_shift) & max_code) >> bin_shift; };
  std::uint16_t* fine = ws.fine.data();
  std::uint16_t* coarse = ws.coarse.data();
  Count* left_fine = WindowArrays<Count>::left(ws);
  std::uint32_t* left_coarse = ws.left_coarse.data();
  Count* hist = WindowArrays<Count>::fine(ws);
  Count* counts = WindowArrays<Count>::counts(ws);
  Count* excess = WindowArrays<Count>::excess(ws);
  const Count limit = static_cast<Count>(g.limit);
  auto row_of = [&](int y) { return src.data + static_cast<std::size_t>(y) * src.stride; };

  // Column histograms of the window rows around y_begin, and the window at x = 0.
  std::fill(ws.fine.begin(), ws.fine.end(), std::uint16_t{0});
  std::fill(ws.coarse.begin(), ws.coarse.end(), std::uint16_t{0});
  for (int j = -r; j <= r; ++j) {
    const std::uint16_t* row = row_of(rules::reflect101(y_begin + j, height));
    for (int x = 0; x < width; ++x) {
      const int b = bin_of(row[x]);
      ++fine[static_cast<std::size_t>(x) * bins + b];
      ++coarse[static_cast<std::size_t>(x) * buckets + (b >> kBucketLog2)];
    }
  }
  std::fill(left_fine, left_fine + bins, Count{0});
  std::fill(left_coarse, left_coarse + buckets, 0u);
  for (int j = -r; j <= r; ++j) {
    const std::size_t c = static_cast<std::size_t>(rules::reflect101(j, width));
    for (int i = 0; i < bins; ++i) left_fine[i] = static_cast<Count>(left_fine[i] + fine[c * bins + i]);
    for (int k = 0; k < buckets; ++k) left_coarse[k] += coarse[c * buckets + k];
  }

  for (int y = y_begin; y < y_end; ++y) {
    if (y > y_begin) {  // every column histogram and the x = 0 window down one row
      const std::uint16_t* leaving = row_of(rules::reflect101(y - 1 - r, height));
      const std::uint16_t* entering = row_of(rules::reflect101(y + r, height));
      for (int x = 0; x < width; ++x) {
        const int bl = bin_of(leaving[x]), be = bin_of(entering[x]);
        std::uint16_t* f = fine + static_cast<std::size_t>(x) * bins;
        std::uint16_t* c = coarse + static_cast<std::size_t>(x) * buckets;
        --f[bl];
        ++f[be];
        --c[bl >> kBucketLog2];
        ++c[be >> kBucketLog2];
      }
      for (int j = -r; j <= r; ++j) {
        const int x = rules::reflect101(j, width);
        const int bl = bin_of(leaving[x]), be = bin_of(entering[x]);
        --left_fine[bl];
        ++left_fine[be];
        --left_coarse[bl >> kBucketLog2];
        ++left_coarse[be >> kBucketLog2];
      }
    }
    // Buckets the window rows touch (reflection stays inside rows [y - r, y + r]).
    int lo = buckets - 1, hi = 0;
    for (int k = std::max(0, y - r); k <= std::min(height - 1, y + r); ++k) {
      lo = std::min<int>(lo, g.row_lo[k]);
      hi = std::max<int>(hi, g.row_hi[k]);
    }
    const std::size_t span = static_cast<std::size_t>(hi - lo + 1);
    std::memcpy(hist + lo * kBucket, left_fine + lo * kBucket, span * kBucket * sizeof(Count));
    for (int k = lo; k <= hi; ++k) counts[k] = static_cast<Count>(left_coarse[k]);
    Count total_excess = 0;
    if (kClip) {
      for (int k = lo; k <= hi; ++k) {
        excess[k] = bucket_excess(hist + k * kBucket, limit);
        total_excess = static_cast<Count>(total_excess + excess[k]);
      }
    }

    const std::uint16_t* s = row_of(y);
    std::uint16_t* d = dst.data + static_cast<std::size_t>(y) * dst.stride;
    for (int x = 0; x < width; ++x) {
      if (x > 0) {
        const std::size_t ce = static_cast<std::size_t>(rules::reflect101(x + r, width));
        const std::size_t cl = static_cast<std::size_t>(rules::reflect101(x - 1 - r, width));
        const std::uint16_t* enter_c = coarse + ce * buckets;
        const std::uint16_t* leave_c = coarse + cl * buckets;
        for (int k = lo; k <= hi; ++k) {
          const int in_count = enter_c[k], out_count = leave_c[k];
          if ((in_count | out_count) == 0) continue;
          counts[k] = static_cast<Count>(counts[k] + in_count - out_count);
          Count* __restrict h = hist + k * kBucket;
          const std::uint16_t* __restrict enter = fine + ce * bins + k * kBucket;
          const std::uint16_t* __restrict leave = fine + cl * bins + k * kBucket;
          if (out_count == 0) {
            for (int i = 0; i < kBucket; ++i) h[i] = static_cast<Count>(h[i] + enter[i]);
          } else if (in_count == 0) {
            for (int i = 0; i < kBucket; ++i) h[i] = static_cast<Count>(h[i] - leave[i]);
          } else {
            for (int i = 0; i < kBucket; ++i) h[i] = static_cast<Count>(h[i] + enter[i] - leave[i]);
          }
          if (kClip) {
            const Count e = bucket_excess(h, limit);
            total_excess = static_cast<Count>(total_excess + e - excess[k]);
            excess[k] = e;
          }
        }
      }
      const int b = bin_of(s[x]);
      const int kb = b >> kBucketLog2;
      Count below = 0;
      const Count* h = hist + kb * kBucket;
      const int top = b & (kBucket - 1);
      if (kClip) {
        for (int k = lo; k < kb; ++k) below = static_cast<Count>(below + counts[k] - excess[k]);
        for (int i = 0; i <= top; ++i) below = static_cast<Count>(below + (h[i] < limit ? h[i] : limit));
      } else {
        for (int k = lo; k < kb; ++k) below = static_cast<Count>(below + counts[k]);
        for (int i = 0; i <= top; ++i) below = static_cast<Count>(below + h[i]);
      }
      const std::uint32_t cdf = kClip ? rules::clahe_cdf(below, total_excess, b, bins) : below;
      const int code = g.out_table ? g.out_table[cdf] : g.codes[rules::ahe_code(cdf, g.n, g.max_code)];
      d[x] = static_cast<std::uint16_t>(code << dst.shift);
    }
  }
}

using StripFunction = void (*)(WideIn, WideOut, const Geometry&, int, int, AheDepthEqualizer::Strip&);

template <typename Count, bool kClip>
void strip_baseline(WideIn src, WideOut dst, const Geometry& g, int y0, int y1,
                    AheDepthEqualizer::Strip& ws) {
  strip_body<Count, kClip>(src, dst, g, y0, y1, ws);
}

#if HAZEFREE_AHE_DEPTH_AVX2
template <typename Count, bool kClip>
__attribute__((target("avx2"))) void strip_avx2(WideIn src, WideOut dst, const Geometry& g, int y0,
                                                int y1, AheDepthEqualizer::Strip& ws) {
  strip_body<Count, kClip>(src, dst, g, y0, y1, ws);
}
#endif

template <typename Count>
StripFunction pick_strip(bool clip) {
#if HAZEFREE_AHE_DEPTH_AVX2
  if (__builtin_cpu_supports("avx2")) return clip ? strip_avx2<Count, true> : strip_avx2<Count, false>;
#endif
  return clip ? strip_baseline<Count, true> : strip_baseline<Count, false>;
}

StripFunction pick_strip(bool wide_counters, bool clip) {
  return wide_counters ? pick_strip<std::uint32_t>(clip) : pick_strip<std::uint16_t>(clip);
}

}  // namespace

void AheDepthEqualizer::run(WideIn src, WideOut dst, int width, int height, int depth, int radius,
                            int limit, const std::uint16_t* codes) {
  const int bin_shift = rules::ahe_bin_shift(depth);
  const int bins = rules::ahe_bins(depth);
  const int buckets = bins / kBucket;
  const std::int64_t side = 2 * static_cast<std::int64_t>(radius) + 1;
  if (side > 65535) throw std::invalid_argument("ahe: window too large for 16-bit column histograms");
  const std::int64_t n = side * side;

  const int count = std::max(1, std::min(threads_, height));
  if (static_cast<int>(strips_.size()) != count || width != width_ || depth != depth_) {
    strips_.resize(static_cast<std::size_t>(count));
    for (Strip& s : strips_) {
      s.fine.assign(static_cast<std::size_t>(width) * bins, 0);
      s.coarse.assign(static_cast<std::size_t>(width) * buckets, 0);
      s.left_fine.assign(static_cast<std::size_t>(bins), 0);
      s.fine_hist.assign(static_cast<std::size_t>(bins), 0);
      s.left_coarse.assign(static_cast<std::size_t>(buckets), 0);
      s.coarse_hist.assign(static_cast<std::size_t>(buckets), 0);
      s.bucket_excess.assign(static_cast<std::size_t>(buckets), 0);
      s.left_fine16.assign(static_cast<std::size_t>(bins), 0);
      s.fine_hist16.assign(static_cast<std::size_t>(bins), 0);
      s.coarse_hist16.assign(static_cast<std::size_t>(buckets), 0);
      s.bucket_excess16.assign(static_cast<std::size_t>(buckets), 0);
    }
    width_ = width;
    depth_ = depth;
  }

  Geometry g{width, height, radius, n, limit, bins, buckets, bin_shift, rules::depth_max_code(depth),
             nullptr, codes, nullptr, nullptr};
  if (n <= kMaxTableWindow) {
    if (table_codes_ != codes || table_n_ != n || table_depth_ != depth) {
      out_table_.resize(static_cast<std::size_t>(n) + 1);
      for (std::int64_t cdf = 0; cdf <= n; ++cdf)
        out_table_[static_cast<std::size_t>(cdf)] = codes[rules::ahe_code(cdf, n, g.max_code)];
      table_codes_ = codes;
      table_n_ = n;
      table_depth_ = depth;
    }
    g.out_table = out_table_.data();
  }

  row_lo_.resize(static_cast<std::size_t>(height));
  row_hi_.resize(static_cast<std::size_t>(height));
  const int max_code = g.max_code;
#pragma omp parallel for schedule(static) num_threads(count)
  for (int y = 0; y < height; ++y) {
    const std::uint16_t* row = src.data + static_cast<std::size_t>(y) * src.stride;
    int lo = buckets - 1, hi = 0;
    for (int x = 0; x < width; ++x) {
      const int k = (((row[x] >> src.shift) & max_code) >> bin_shift) >> kBucketLog2;
      lo = std::min(lo, k);
      hi = std::max(hi, k);
    }
    row_lo_[static_cast<std::size_t>(y)] = static_cast<std::uint8_t>(lo);
    row_hi_[static_cast<std::size_t>(y)] = static_cast<std::uint8_t>(hi);
  }
  g.row_lo = row_lo_.data();
  g.row_hi = row_hi_.data();

  const StripFunction strip = pick_strip(n > 65535, limit > 0);
#pragma omp parallel for schedule(static, 1) num_threads(count)
  for (int k = 0; k < count; ++k) {
    const int y0 = static_cast<int>(static_cast<std::int64_t>(height) * k / count);
    const int y1 = static_cast<int>(static_cast<std::int64_t>(height) * (k + 1) / count);
    if (y0 < y1) strip(src, dst, g, y0, y1, strips_[static_cast<std::size_t>(k)]);
  }
}

}  // namespace hazefree::cpu::detail
