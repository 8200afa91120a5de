// Sliding-window AHE / CLAHE at depth 9..16 on the CPU (SPEC 7): B = 2^min(d, 12) bins. The 8-bit
// scheme (column histograms moved down a row with two updates per column, the window histogram
// moved right by the entering column minus the leaving one) over B bins would cost O(B) per pixel,
// 16 times the 8-bit work at 4096 bins. Two-level histograms keep it nearer the 8-bit cost;
// buckets outside the value range of the window rows are never visited.
//
// AHE (no clip): the bins in buckets of 16 (one AVX2 vector of 16-bit counters). Every column
// counts its pixels per bucket, and the window's bucket counts move right exactly as the 8-bit
// bins do (vectorised over the buckets of the window rows), giving the cdf up to the centre's
// bucket. The window's 16 bins of a bucket are needed only where the centre falls in it, so they
// are brought up to date lazily there (Perreault & Hebert, "Median filtering in constant time"):
// from the columns entered and left since the bucket was last the centre's in this row, or summed
// afresh over the 2r+1 columns when that reads fewer vectors. The column bins are laid out bucket
// by bucket (a bucket's vectors of neighbouring columns are neighbours in memory), each column's
// holding the sum from the start of its block of 4 or 8 columns (in 8-bit counters for windows of
// at most 63 rows, 16-bit above), and are also summed per superblock of 64 columns for windows of
// 128 columns or more: a run of columns reads the prefix at each block end it passes (or one
// superblock per 64 columns), the prefix at its own end and, unless it starts a block, the one
// before its start. (Plain column lines with separate block sums read a line per column at both
// ends of a run. With prefix lines each strip builds its column histograms counting every sample
// once and summing afterwards, which matters for tall windows on many threads: 63 -> 47 ms at
// 511 rows on 16 threads.)
//
// CLAHE: the total excess is needed at every pixel, so every bin of the window must stay up to
// date. The bins are in buckets of 64, and every column also counts its pixels per bucket. Moving
// right, a bucket's 64 bins are updated only where the entering or the leaving column has pixels
// in it, and each bucket keeps its excess (sum of max(h - L, 0) over its bins), recomputed when it
// changes; the clipped cdf is a sum over the buckets below the centre's plus its own bins. (Buckets
// of 16 updated through per-column occupancy masks, with clipped sums kept per group of buckets,
// measured about as fast up to window 63 and slower beyond, 3x at 511: the columns of tall windows
// span many more buckets of 16.)
//
// Short windows skip all this: AHE windows of at most 47 rows are counted directly, 16 bins at a
// time (ahe_direct_strip_body), and CLAHE windows of at most 127 rows move by their samples
// (clahe_sample_strip_body).
//
// OpenMP over horizontal strips, each with its own column histograms: every thread count gives
// the same bits.
#include "kernels/cpu/equalize_ahe_depth.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "kernels/cpu/cpu_isa.hpp"
#include "kernels/equalize_rules.hpp"

namespace hazefree::cpu::detail {
namespace rules = equalize_rules;

namespace {

constexpr int kLanesLog2 = 4;
constexpr int kLanes = 1 << kLanesLog2;  // AHE: bins per bucket, one vector
constexpr int kBucketLog2 = 6;
constexpr int kBucket = 1 << kBucketLog2;  // CLAHE: bins per bucket
constexpr int kAlignBytes = 64;            // of the arrays read as whole vectors
// AHE: columns per block, up to 8 while a block's counts fit the line counters, and per
// superblock, 64, for windows of 128..1023 columns; 8-bit line counters for windows of at most
// 63 rows (blocks of 4 columns or more).
constexpr int kMaxBlockLog2 = 3;
constexpr int kMaxByteLineSide = 63;
constexpr int kSuperLog2 = 6;
constexpr int block_count_of(int width, int block_log2) { return ((width - 1) >> block_log2) + 1; }
// Column histograms are built a group of columns at a time, all window rows of one group before
// the next, so that the counters being written (a group's share of the histograms) stay in the
// core's cache; row by row across the whole width, every count missed it.
constexpr int kBuildGroup = 32;

// The strip bodies are compiled twice on x86-64, for the baseline and for AVX2, and the AVX2 copy
// is picked at run time (unless HAZEFREE_CPU_ISA says otherwise, see cpu_isa.hpp). Everything
// they call that takes or returns a vector, lambdas included, is forced inline: a vector crossing
// a call between the two instruction sets would not be passed alike on both sides.
#if defined(__GNUC__) && defined(__x86_64__)
#define HAZEFREE_AHE_DEPTH_INLINE inline __attribute__((always_inline))
#define HAZEFREE_AHE_DEPTH_LAMBDA_INLINE __attribute__((always_inline))
#define HAZEFREE_AHE_DEPTH_AVX2 1
#else
#define HAZEFREE_AHE_DEPTH_INLINE inline
#define HAZEFREE_AHE_DEPTH_LAMBDA_INLINE
#define HAZEFREE_AHE_DEPTH_AVX2 0
#endif

// Output tables up to this many window pixels (32 KiB); larger windows divide per pixel, which
// measured faster than a table that misses the cache (AHE, windows 255 and 511).
constexpr std::int64_t kMaxTableWindow = 16384;

// The 16 counters of one bucket as one value: a GCC (12 on) or Clang vector (one AVX2 register of
// 16-bit lanes), or a plain array elsewhere. Arithmetic wraps in the counter type.
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
// Nothing here passes a vector across a call (see HAZEFREE_AHE_DEPTH_INLINE), so the compilers'
// note on the vector ABI without AVX (GCC's and Clang's -Wpsabi) does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef std::uint16_t ColumnLanes __attribute__((vector_size(kLanes * sizeof(std::uint16_t))));
// 32-bit counters as two vectors of 8 (one AVX2 register each; GCC splits wider generic vectors
// through memory).
typedef std::uint32_t HalfLanes32 __attribute__((vector_size(kLanes / 2 * sizeof(std::uint32_t))));
struct Lanes32 {
  HalfLanes32 low, high;
  friend Lanes32 operator+(const Lanes32& a, const Lanes32& b) { return {a.low + b.low, a.high + b.high}; }
  friend Lanes32 operator-(const Lanes32& a, const Lanes32& b) { return {a.low - b.low, a.high - b.high}; }
  Lanes32& operator+=(const Lanes32& b) { return *this = *this + b; }
};
// Bins as signed 16-bit lanes, for the direct count of small windows (one signed compare each).
#define HAZEFREE_AHE_DEPTH_DIRECT 1
typedef std::int16_t SignedLanes __attribute__((vector_size(kLanes * sizeof(std::int16_t))));
constexpr int kMaxDirectSide = 3 * kLanes - 1;
constexpr int kMaxSampleSide = 127;  // CLAHE moved by samples
// A column line of 8-bit counters (windows of at most 63 rows), widened to 16 bits.
typedef std::uint8_t ByteLanes __attribute__((vector_size(kLanes * sizeof(std::uint8_t))));
HAZEFREE_AHE_DEPTH_INLINE ColumnLanes widen_bytes(const ByteLanes& v) { return __builtin_convertvector(v, ColumnLanes); }
template <typename Count> struct LaneVector;
template <> struct LaneVector<std::uint16_t> { using type = ColumnLanes; };
template <> struct LaneVector<std::uint32_t> { using type = Lanes32; };
template <typename Count> using Lanes = typename LaneVector<Count>::type;

template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Lanes<Count> widen(const ColumnLanes& v) {
  if constexpr (std::is_same_v<Count, std::uint16_t>) {
    return v;
  } else {
    return {__builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7), HalfLanes32),
            __builtin_convertvector(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15), HalfLanes32)};
  }
}
// v with the lanes from `count` on zeroed.
template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Lanes<Count> lanes_below(const Lanes<Count>& v, int count) {
  if constexpr (std::is_same_v<Count, std::uint16_t>) {
    const ColumnLanes index = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    return v & (ColumnLanes)(index < static_cast<Count>(count));
  } else {
    const HalfLanes32 index = {0, 1, 2, 3, 4, 5, 6, 7};
    const Count n = static_cast<Count>(count);
    return {v.low & (HalfLanes32)(index < n), v.high & (HalfLanes32)(index + 8 < n)};
  }
}
// The sum of the lanes, halving the vector (4 adds rather than 15).
typedef std::uint16_t Lanes16x8 __attribute__((vector_size(8 * sizeof(std::uint16_t))));
typedef std::uint16_t Lanes16x4 __attribute__((vector_size(4 * sizeof(std::uint16_t))));
typedef std::uint32_t Lanes32x4 __attribute__((vector_size(4 * sizeof(std::uint32_t))));
typedef std::uint32_t Lanes32x2 __attribute__((vector_size(2 * sizeof(std::uint32_t))));
template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Count lanes_sum(const Lanes<Count>& v) {
  if constexpr (std::is_same_v<Count, std::uint16_t>) {
    const Lanes16x8 v8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                         __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    const Lanes16x4 v4 = __builtin_shufflevector(v8, v8, 0, 1, 2, 3) + __builtin_shufflevector(v8, v8, 4, 5, 6, 7);
    return static_cast<Count>(v4[0] + v4[1] + v4[2] + v4[3]);
  } else {
    const HalfLanes32 v8 = v.low + v.high;
    const Lanes32x4 v4 = __builtin_shufflevector(v8, v8, 0, 1, 2, 3) + __builtin_shufflevector(v8, v8, 4, 5, 6, 7);
    const Lanes32x2 v2 = __builtin_shufflevector(v4, v4, 0, 1) + __builtin_shufflevector(v4, v4, 2, 3);
    return v2[0] + v2[1];
  }
}
#else
#define HAZEFREE_AHE_DEPTH_DIRECT 0
constexpr int kMaxDirectSide = 0;  // the direct count needs the compilers' vectors
constexpr int kMaxSampleSide = 0;
template <typename Count> struct Lanes {
  Count lane[kLanes];
  friend Lanes operator+(Lanes a, Lanes b) {
    for (int i = 0; i < kLanes; ++i) a.lane[i] = static_cast<Count>(a.lane[i] + b.lane[i]);
    return a;
  }
  friend Lanes operator-(Lanes a, Lanes b) {
    for (int i = 0; i < kLanes; ++i) a.lane[i] = static_cast<Count>(a.lane[i] - b.lane[i]);
    return a;
  }
  Lanes& operator+=(Lanes b) { return *this = *this + b; }
};
using ColumnLanes = Lanes<std::uint16_t>;
struct ByteLanes {
  std::uint8_t lane[kLanes];
};
HAZEFREE_AHE_DEPTH_INLINE ColumnLanes widen_bytes(const ByteLanes& v) {
  ColumnLanes w;
  for (int i = 0; i < kLanes; ++i) w.lane[i] = v.lane[i];
  return w;
}

template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Lanes<Count> widen(const ColumnLanes& v) {
  Lanes<Count> w;
  for (int i = 0; i < kLanes; ++i) w.lane[i] = v.lane[i];
  return w;
}
template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Lanes<Count> lanes_below(Lanes<Count> v, int count) {
  for (int i = count; i < kLanes; ++i) v.lane[i] = 0;
  return v;
}
template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Count lanes_sum(Lanes<Count> v) {
  Count sum = 0;
  for (int i = 0; i < kLanes; ++i) sum = static_cast<Count>(sum + v.lane[i]);
  return sum;
}
#endif

template <typename Vector, typename Count>
HAZEFREE_AHE_DEPTH_INLINE Vector load_lanes(const Count* p) {
  Vector v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename Vector, typename Count>
HAZEFREE_AHE_DEPTH_INLINE void store_lanes(Count* p, const Vector& v) {
  std::memcpy(p, &v, sizeof v);
}

// The first 64-byte boundary in a vector's storage.
template <typename T>
T* aligned_data(std::vector<T>& v) {
  const auto address = reinterpret_cast<std::uintptr_t>(v.data());
  return reinterpret_cast<T*>((address + kAlignBytes - 1) & ~std::uintptr_t{kAlignBytes - 1});
}
// Room for n elements after that boundary, zero.
template <typename T>
void assign_aligned(std::vector<T>& v, std::size_t n) {
  v.assign(n + kAlignBytes / sizeof(T), T{0});
}

struct Geometry {
  int width, height, radius;
  std::int64_t n;
  int limit;         // CLAHE clip limit, 0 = plain AHE
  int bins, buckets;  // buckets of 16 bins (AHE) or 64 (CLAHE)
  int bin_shift;     // sample value -> bin
  int block_log2;    // AHE: log2 of the columns per block
  int super_log2;    // AHE: log2 of the columns per superblock, 0 = none
  int max_code;
  const std::uint16_t* out_table;  // cdf -> final code, or nullptr
  const std::uint16_t* codes;      // equalized code -> final code
  const std::uint8_t* row_lo;      // lowest and highest bucket of each source row
  const std::uint8_t* row_hi;
};

// A sample's bin; the mask keeps stray bits above the depth out of the histograms.
HAZEFREE_AHE_DEPTH_INLINE int sample_bin(std::uint16_t sample, int value_shift, int max_code, int bin_shift) {
  return ((sample >> value_shift) & max_code) >> bin_shift;
}

HAZEFREE_AHE_DEPTH_INLINE std::uint16_t final_code(const Geometry& g, std::uint32_t cdf, int out_shift) {
  const int code = g.out_table ? g.out_table[cdf] : g.codes[rules::ahe_code(cdf, g.n, g.max_code)];
  return static_cast<std::uint16_t>(code << out_shift);
}

// Lowest and highest bucket of the window rows of row y (reflection stays inside [y - r, y + r]);
// no column histogram has counts outside them, so the window never does either.
HAZEFREE_AHE_DEPTH_INLINE void bucket_range(const Geometry& g, int y, int& lo, int& hi) {
  lo = g.buckets - 1;
  hi = 0;
  for (int k = std::max(0, y - g.radius); k <= std::min(g.height - 1, y + g.radius); ++k) {
    lo = std::min<int>(lo, g.row_lo[k]);
    hi = std::max<int>(hi, g.row_hi[k]);
  }
}

// ---- AHE ---------------------------------------------------------------------------------------

// The AHE window's counters: 16 bits while n = w*w fits (w <= 255), else 32.
template <typename Count> struct AheWindow;
template <> struct AheWindow<std::uint16_t> {
  static std::uint16_t* bins(AheDepthEqualizer::AheScratch& s) { return aligned_data(s.window_bins16); }
  static std::uint16_t* counts(AheDepthEqualizer::AheScratch& s) { return aligned_data(s.window_buckets16); }
};
template <> struct AheWindow<std::uint32_t> {
  static std::uint32_t* bins(AheDepthEqualizer::AheScratch& s) { return aligned_data(s.window_bins32); }
  static std::uint32_t* counts(AheDepthEqualizer::AheScratch& s) { return aligned_data(s.window_buckets32); }
};

// The AHE column lines of a strip, in 8-bit counters for windows of at most 63 rows (their
// prefix sums over blocks of 4 columns fit, and half the bytes stay in cache), else 16-bit.
template <typename Line> Line* column_lines(AheDepthEqualizer::AheScratch& s);
template <> std::uint8_t* column_lines<std::uint8_t>(AheDepthEqualizer::AheScratch& s) {
  return aligned_data(s.column_bins8);
}
template <> std::uint16_t* column_lines<std::uint16_t>(AheDepthEqualizer::AheScratch& s) {
  return aligned_data(s.column_bins);
}

// The AHE column histograms of one strip, over the 2r+1 window rows. Per image column x and
// bucket k, a line of 16 bins (at (k * width + x) * 16) holding the counts of columns
// block_start(x) .. x summed (a prefix within the block of columns), so that any run of columns
// within a block is one line less another; the same per superblock of columns (plain sums), and
// the count per bucket of each column. Each strip leaves them all zero for the next.
template <typename Line>
struct AheColumns {
  int width, height, radius, buckets;
  int value_shift, bin_shift, max_code, block_log2;
  const std::uint16_t* src;
  std::size_t src_stride;
  Line* bins;
  std::uint16_t* supers;  // line (x >> super_log2, k) at (k * super_count + (x >> super_log2)) * 16
  std::uint16_t* counts;  // column x at x * buckets
  int super_log2, super_count;

  AheColumns(WideIn in, const Geometry& g, AheDepthEqualizer::AheScratch& s)
      : width(g.width), height(g.height), radius(g.radius), buckets(g.buckets), value_shift(in.shift),
        bin_shift(g.bin_shift), max_code(g.max_code), block_log2(g.block_log2), src(in.data),
        src_stride(static_cast<std::size_t>(in.stride)), bins(column_lines<Line>(s)),
        supers(aligned_data(s.super_bins)), counts(aligned_data(s.column_buckets)), super_log2(g.super_log2),
        super_count(g.super_log2 ? block_count_of(g.width, g.super_log2) : 0) {}

  HAZEFREE_AHE_DEPTH_INLINE int bin_of(std::uint16_t sample) const {
    return sample_bin(sample, value_shift, max_code, bin_shift);
  }
  HAZEFREE_AHE_DEPTH_INLINE const std::uint16_t* row(int y) const {
    return src + static_cast<std::size_t>(rules::reflect101(y, height)) * src_stride;
  }
  HAZEFREE_AHE_DEPTH_INLINE Line* line(int x, int k) const {
    return bins + (static_cast<std::size_t>(k) * width + x) * kLanes;
  }
  HAZEFREE_AHE_DEPTH_INLINE std::uint16_t* super_line(int super, int k) const {
    return supers + (static_cast<std::size_t>(k) * super_count + super) * kLanes;
  }
  HAZEFREE_AHE_DEPTH_INLINE std::uint16_t* column_counts(int x) const {
    return counts + static_cast<std::size_t>(x) * buckets;
  }
  // The last column of x's block.
  HAZEFREE_AHE_DEPTH_INLINE int block_end(int x) const { return std::min(x | ((1 << block_log2) - 1), width - 1); }

  // One sample of bin b in column x more (step 1) or less (step -1): the prefix lines from x to
  // the end of its block, the superblock and the column's bucket count.
  HAZEFREE_AHE_DEPTH_INLINE void count(int x, int b, int step) {
    const int k = b >> kLanesLog2, lane = b & (kLanes - 1);
    Line* p = line(x, k) + lane;
    for (int c = block_end(x) - x; c >= 0; --c, p += kLanes) *p = static_cast<Line>(*p + step);
    if (super_log2 != 0) {
      std::uint16_t* super = super_line(x >> super_log2, k) + lane;
      *super = static_cast<std::uint16_t>(*super + step);
    }
    std::uint16_t* c = column_counts(x) + k;
    *c = static_cast<std::uint16_t>(*c + step);
  }
  // The window rows of row y, whose bins lie in buckets [lo, hi], kBuildGroup columns at a time:
  // each sample counted in its column's own line and bucket count, then the group's lines made
  // prefixes within their blocks and its superblocks summed from the block totals.
  void build(int y, int lo, int hi) {
    std::memset(counts, 0, static_cast<std::size_t>(width) * buckets * sizeof(std::uint16_t));
    for (int x0 = 0; x0 < width; x0 += kBuildGroup) {
      const int x1 = std::min(width, x0 + kBuildGroup);
      for (int j = -radius; j <= radius; ++j) {
        const std::uint16_t* r = row(y + j);
        for (int x = x0; x < x1; ++x) {
          const int b = bin_of(r[x]);
          const int k = b >> kLanesLog2;
          Line* p = line(x, k) + (b & (kLanes - 1));
          *p = static_cast<Line>(*p + 1);
          std::uint16_t* c = column_counts(x) + k;
          *c = static_cast<std::uint16_t>(*c + 1);
        }
      }
      for (int k = lo; k <= hi; ++k) {
        for (int x = x0; x < x1; ++x) {
          if ((x & ((1 << block_log2) - 1)) != 0) {
            Line* p = line(x, k);
            const Line* q = p - kLanes;
            for (int i = 0; i < kLanes; ++i) p[i] = static_cast<Line>(p[i] + q[i]);
          }
          if (super_log2 != 0 && x == block_end(x)) {
            std::uint16_t* s = super_line(x >> super_log2, k);
            const Line* q = line(x, k);
            for (int i = 0; i < kLanes; ++i) s[i] = static_cast<std::uint16_t>(s[i] + q[i]);
          }
        }
      }
    }
  }
  // The window at x = 0 of the rows built: its count per bucket.
  void sum_left(std::uint32_t* left) const {
    std::fill(left, left + buckets, 0u);
    for (int j = -radius; j <= radius; ++j) {
      const std::uint16_t* c = column_counts(rules::reflect101(j, width));
      for (int k = 0; k < buckets; ++k) left[k] += c[k];
    }
  }
  // From the window rows of y - 1 to those of y, and `left` with them.
  void move_down(int y, std::uint32_t* left) {
    const std::uint16_t* leaving = row(y - 1 - radius);
    const std::uint16_t* entering = row(y + radius);
    for (int x = 0; x < width; ++x) {
      count(x, bin_of(leaving[x]), -1);
      count(x, bin_of(entering[x]), 1);
    }
    for (int j = -radius; j <= radius; ++j) {
      const int x = rules::reflect101(j, width);
      --left[bin_of(leaving[x]) >> kLanesLog2];
      ++left[bin_of(entering[x]) >> kLanesLog2];
    }
  }
  // Zero the bin counts, which lie in buckets [lo, hi] (those of the rows last built or moved to).
  void clear(int lo, int hi) {
    const std::size_t counters = static_cast<std::size_t>(hi - lo + 1) * kLanes;  // per column, superblock
    std::memset(line(0, lo), 0, counters * width * sizeof(Line));
    if (super_log2 != 0) std::memset(super_line(0, lo), 0, counters * super_count * sizeof(std::uint16_t));
  }
};

// AHE, rows [y_begin, y_end), with column lines of Line counters. Running sums in Count wrap but
// never exceed n, so they come out exact.
template <typename Count, typename Line>
HAZEFREE_AHE_DEPTH_INLINE void ahe_strip_body(WideIn src, WideOut dst, const Geometry& g, int y_begin,
                                              int y_end, AheDepthEqualizer::AheScratch& ws) {
  using V = Lanes<Count>;
  const int width = g.width, r = g.radius, block_log2 = g.block_log2, block = 1 << block_log2;
  // Without superblocks, one longer than any run (no frame is 2^24 columns wide), whose doubling
  // still fits an int.
  const int super_log2 = g.super_log2 ? g.super_log2 : 24, super = 1 << super_log2;
  AheColumns<Line> columns(src, g, ws);
  std::uint32_t* left = ws.left_buckets.data();
  Count* hist = AheWindow<Count>::bins(ws);     // per bucket, its window bins at x = stamp
  Count* counts = AheWindow<Count>::counts(ws);  // the window's count per bucket
  int* stamp = ws.bucket_stamp.data();           // -1: not yet in this row
  auto lanes_at = [](const std::uint16_t* p) HAZEFREE_AHE_DEPTH_LAMBDA_INLINE {
    return widen<Count>(load_lanes<ColumnLanes>(p));
  };
  auto line_lanes = [](const Line* p) HAZEFREE_AHE_DEPTH_LAMBDA_INLINE {
    if constexpr (std::is_same_v<Line, std::uint8_t>) return widen<Count>(widen_bytes(load_lanes<ByteLanes>(p)));
    else return widen<Count>(load_lanes<ColumnLanes>(p));
  };
  // The bins of bucket k summed over columns [a, b] of the frame: the prefix lines at the ends of
  // the blocks in between (or their superblocks where whole ones fit), less the prefix before a.
  auto run_sum = [&](int k, int a, int b) HAZEFREE_AHE_DEPTH_LAMBDA_INLINE {
    V sum{};
    if (a > b) return sum;
    const Line* lines = columns.line(0, k);
    auto prefix = [lines, &line_lanes](int x) HAZEFREE_AHE_DEPTH_LAMBDA_INLINE {
      return line_lanes(lines + static_cast<std::size_t>(x) * kLanes);
    };
    if ((a & (block - 1)) != 0) sum = sum - prefix(a - 1);
    const int b_start = b & ~(block - 1);  // the start of b's block
    if (a < b_start) {
      a &= ~(block - 1);
      const std::uint16_t* super_lines = columns.super_line(0, k);
      for (; a < b_start && (a & (super - 1)) != 0; a += block) sum += prefix(a + block - 1);
      for (; a + super <= b_start; a += super) sum += lanes_at(super_lines + (a >> super_log2) * kLanes);
      for (; a < b_start; a += block) sum += prefix(a + block - 1);
    }
    return sum + prefix(b);
  };
  // The same over columns reflect101(a .. b), -width < a <= b < 2 * width - 1.
  auto reflected_sum = [&](int k, int a, int b) HAZEFREE_AHE_DEPTH_LAMBDA_INLINE {
    V sum = run_sum(k, std::max(a, 0), std::min(b, width - 1));
    if (a < 0) sum += run_sum(k, std::max(-b, 1), -a);
    if (b >= width) sum += run_sum(k, 2 * width - 2 - b, std::min(2 * width - 2 - a, width - 2));
    return sum;
  };
  // About how many vectors run_sum reads over n columns.
  auto run_cost = [=](int n) {
    if (n < 2 * super) return 2 + (n >> block_log2);
    return 2 + (n >> super_log2) + 2 * (super >> block_log2);
  };
  const int window_cost = run_cost(2 * r + 1);

  int lo = 0, hi = 0;
  bucket_range(g, y_begin, lo, hi);
  columns.build(y_begin, lo, hi);
  columns.sum_left(left);
  for (int y = y_begin; y < y_end; ++y) {
    if (y > y_begin) columns.move_down(y, left);
    bucket_range(g, y, lo, hi);
    // The bucket counts are read in whole vectors (those outside [lo, hi] are zero).
    const int vector_lo = lo & ~(kLanes - 1), vector_hi = (hi | (kLanes - 1)) + 1;
    for (int k = vector_lo; k < vector_hi; ++k) counts[k] = static_cast<Count>(left[k]);
    std::fill(stamp + lo, stamp + hi + 1, -1);

    const std::uint16_t* s = columns.row(y);
    std::uint16_t* d = dst.data + static_cast<std::size_t>(y) * dst.stride;
    for (int x = 0; x < width; ++x) {
      if (x > 0) {
        const std::uint16_t* enter = columns.column_counts(rules::reflect101(x + r, width));
        const std::uint16_t* leave = columns.column_counts(rules::reflect101(x - 1 - r, width));
        for (int k = vector_lo; k < vector_hi; k += kLanes)
          store_lanes(counts + k, load_lanes<V>(counts + k) + lanes_at(enter + k) - lanes_at(leave + k));
      }
      // The cdf: the buckets below the centre's, then its bucket's bins up to its bin.
      const int b = columns.bin_of(s[x]);
      const int kb = b >> kLanesLog2;
      V below{};
      for (int k = vector_lo; k < (kb & ~(kLanes - 1)); k += kLanes) below += load_lanes<V>(counts + k);
      below += lanes_below<Count>(load_lanes<V>(counts + (kb & ~(kLanes - 1))), kb & (kLanes - 1));

      // The window's bins of bucket kb: from those at x = since, with the columns entered and
      // left since, or summed afresh over the window, whichever reads fewer vectors.
      Count* h = hist + kb * kLanes;
      V bucket;
      const int since = stamp[kb];
      if (since >= 0 && 2 * run_cost(x - since) < window_cost)
        bucket = load_lanes<V>(h) + reflected_sum(kb, since + r + 1, x + r) - reflected_sum(kb, since - r, x - 1 - r);
      else
        bucket = reflected_sum(kb, x - r, x + r);
      store_lanes(h, bucket);
      stamp[kb] = x;
      below += lanes_below<Count>(bucket, (b & (kLanes - 1)) + 1);
      d[x] = final_code(g, lanes_sum<Count>(below), dst.shift);
    }
  }
  columns.clear(lo, hi);
}

// The bins of the strip's window rows (rows y_begin - r .. y_end - 1 + r, reflected), each row
// padded by r reflected columns on both sides: padded column c of row j at c * column_step +
// j * row_step, so that either a row's or a column's samples lie side by side.
template <typename Bin>
HAZEFREE_AHE_DEPTH_INLINE void padded_strip_bins(WideIn src, const Geometry& g, int y_begin, int y_end, Bin* out,
                                                 std::size_t column_step, std::size_t row_step) {
  const int r = g.radius;
  for (int j = 0; j < y_end - y_begin + 2 * r; ++j) {
    const std::uint16_t* s = src.data + static_cast<std::size_t>(rules::reflect101(y_begin - r + j, g.height)) * src.stride;
    for (int c = 0; c < g.width + 2 * r; ++c)
      out[static_cast<std::size_t>(c) * column_step + static_cast<std::size_t>(j) * row_step] =
          static_cast<Bin>(sample_bin(s[rules::reflect101(c - r, g.width)], src.shift, g.max_code, g.bin_shift));
  }
}

// AHE for windows of at most kMaxDirectSide (47) rows: each pixel's cdf counted straight from the
// bins of its window, 16 samples at a time, kVectors vectors per window row (a compare with the
// centre's bin and a subtract per vector): 2 (2r + 1) kVectors operations a pixel, no histograms
// to build or move. On 16 threads at 12 bits (1080p) this took window 31 from 13.3 to 6.4 ms and
// 47 from 16.5 to 13.1; at 55 the two were level (17.7 against 17.2) and at 63 the histograms
// win (17.4 against 21.1).
#if HAZEFREE_AHE_DEPTH_DIRECT
template <int kVectors>
HAZEFREE_AHE_DEPTH_INLINE void ahe_direct_strip_body(WideIn src, WideOut dst, const Geometry& g, int y_begin,
                                                     int y_end, AheDepthEqualizer::AheScratch& ws) {
  const int width = g.width, r = g.radius, side = 2 * r + 1;
  // The strip's padded window rows, and a vector more on the right of each (the last vector of a
  // window row reads past the window; those lanes are masked).
  const int pitch = width + 2 * r + kLanes;
  std::int16_t* bins = aligned_data(ws.direct_bins);
  padded_strip_bins(src, g, y_begin, y_end, bins, 1, static_cast<std::size_t>(pitch));
  for (int j = 0; j < y_end - y_begin + 2 * r; ++j)
    std::fill(bins + static_cast<std::size_t>(j) * pitch + width + 2 * r, bins + static_cast<std::size_t>(j + 1) * pitch,
              std::int16_t{0});
  const SignedLanes index = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const SignedLanes last_lanes = (SignedLanes)(index < static_cast<std::int16_t>(side - kLanes * (kVectors - 1)));
  for (int y = y_begin; y < y_end; ++y) {
    const std::int16_t* top = bins + static_cast<std::size_t>(y - y_begin) * pitch;
    std::uint16_t* d = dst.data + static_cast<std::size_t>(y) * dst.stride;
    for (int x = 0; x < width; ++x) {
      // Each lane counts -1 for every sample whose bin is at most the centre's.
      const SignedLanes above = SignedLanes{} + static_cast<std::int16_t>(top[static_cast<std::size_t>(r) * pitch + x + r] + 1);
      SignedLanes whole{}, last{};
      const std::int16_t* p = top + x;
      for (int j = 0; j < side; ++j, p += pitch) {
        for (int v = 0; v + 1 < kVectors; ++v) whole += (SignedLanes)(load_lanes<SignedLanes>(p + v * kLanes) < above);
        last += (SignedLanes)(load_lanes<SignedLanes>(p + (kVectors - 1) * kLanes) < above);
      }
      const ColumnLanes counted = (ColumnLanes)(SignedLanes{} - whole - (last & last_lanes));
      d[x] = final_code(g, lanes_sum<std::uint16_t>(counted), dst.shift);
    }
  }
}
#endif

// ---- CLAHE -------------------------------------------------------------------------------------

// How far a counter exceeds the limit, as h - min(h, L): in loops the compilers vectorise it into
// a vector minimum and a subtract, where h > L ? h - L : 0 took four operations.
template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Count over_limit(Count h, Count limit) {
  return static_cast<Count>(h - std::min(h, limit));
}
// The excess over the limit of one 64-bin bucket of the window.
template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE Count bucket_excess(const Count* __restrict h, Count limit) {
  Count excess = 0;
  for (int i = 0; i < kBucket; ++i) excess = static_cast<Count>(excess + over_limit(h[i], limit));
  return excess;
}
alignas(kAlignBytes) const std::uint16_t kZeroBucket[kBucket] = {};

// The CLAHE window's counters: 16 bits while n = w*w fits (w <= 255), else 32.
template <typename Count> struct ClaheWindow;
template <> struct ClaheWindow<std::uint16_t> {
  static std::uint16_t* fine(AheDepthEqualizer::ClaheScratch& s) { return s.fine_hist16.data(); }
  static std::uint16_t* left(AheDepthEqualizer::ClaheScratch& s) { return s.left_fine16.data(); }
  static std::uint16_t* counts(AheDepthEqualizer::ClaheScratch& s) { return s.coarse_hist16.data(); }
  static std::uint16_t* excess(AheDepthEqualizer::ClaheScratch& s) { return s.bucket_excess16.data(); }
};
template <> struct ClaheWindow<std::uint32_t> {
  static std::uint32_t* fine(AheDepthEqualizer::ClaheScratch& s) { return s.fine_hist.data(); }
  static std::uint32_t* left(AheDepthEqualizer::ClaheScratch& s) { return s.left_fine.data(); }
  static std::uint32_t* counts(AheDepthEqualizer::ClaheScratch& s) { return s.coarse_hist.data(); }
  static std::uint32_t* excess(AheDepthEqualizer::ClaheScratch& s) { return s.bucket_excess.data(); }
};

// CLAHE for windows of at most kMaxSampleSide (127) rows: the window moves right by its 2r + 1
// leaving and 2r + 1 entering samples, each one counter step, which also keeps the clipped count
// (the sum of min(h, L)) of its 16-bin bucket exact: a step changes it where the counter was
// below the limit (before a gain, after a loss). The cdf is then the clipped counts of the
// buckets below the centre's plus its own bucket's clipped bins, and the excess n less all of
// them. No column histograms; each row's window at x = 0 is counted afresh. Its cost grows with
// the window, the column histograms' does not: on 16 threads at 12 bits (1080p) the bucket design
// took 50.6 / 60.3 / 69.7 ms at windows 31 / 63 / 95 and this one 23.7 / 39.8 / 55.1 (in separate
// runs); at 127, in one run, 84.0 against 78.5 (medians 89.4 and 87.3: where the two meet).
#if HAZEFREE_AHE_DEPTH_DIRECT
HAZEFREE_AHE_DEPTH_INLINE void clahe_sample_strip_body(WideIn src, WideOut dst, const Geometry& g, int y_begin,
                                                       int y_end, AheDepthEqualizer::ClaheScratch& ws) {
  using Count = std::uint16_t;  // n <= 127^2
  const int width = g.width, r = g.radius, side = 2 * r + 1;
  const int bins = g.bins, buckets = bins >> kLanesLog2;
  const Count limit = static_cast<Count>(g.limit);
  // The strip's padded window rows, column by column (each column's rows side by side).
  const int rows = y_end - y_begin + 2 * r;
  std::uint16_t* columns = ws.sample_columns.data();
  padded_strip_bins(src, g, y_begin, y_end, columns, static_cast<std::size_t>(rows), 1);
  Count* hist = ws.fine_hist16.data();
  Count* clipped = aligned_data(ws.bucket_clipped16);  // per 16-bin bucket, whole vectors
  auto gain = [&](int b) HAZEFREE_AHE_DEPTH_LAMBDA_INLINE {
    const Count h = hist[b];
    hist[b] = static_cast<Count>(h + 1);
    clipped[b >> kLanesLog2] = static_cast<Count>(clipped[b >> kLanesLog2] + (h < limit));
  };
  auto loss = [&](int b) HAZEFREE_AHE_DEPTH_LAMBDA_INLINE {
    const Count h = static_cast<Count>(hist[b] - 1);
    hist[b] = h;
    clipped[b >> kLanesLog2] = static_cast<Count>(clipped[b >> kLanesLog2] - (h < limit));
  };
  const ColumnLanes limit_lanes = ColumnLanes{} + limit;
  for (int y = y_begin; y < y_end; ++y) {
    const int j0 = y - y_begin;  // the window's first row in the columns
    std::fill(hist, hist + bins, Count{0});
    std::fill(clipped, clipped + buckets, Count{0});
    for (int c = 0; c < side; ++c) {
      const std::uint16_t* column = columns + static_cast<std::size_t>(c) * rows + j0;
      for (int j = 0; j < side; ++j) gain(column[j]);
    }
    // Buckets outside the window rows' range hold nothing; the sums cover the vectors of 16-bin
    // buckets from the lowest to the highest.
    int lo, hi;
    bucket_range(g, y, lo, hi);
    const int first = (lo << (kBucketLog2 - kLanesLog2)) & ~(kLanes - 1);
    const int end = (((hi + 1) << (kBucketLog2 - kLanesLog2)) + kLanes - 1) & ~(kLanes - 1);
    const std::uint16_t* centre = columns + static_cast<std::size_t>(r) * rows + j0 + r;
    std::uint16_t* d = dst.data + static_cast<std::size_t>(y) * dst.stride;
    for (int x = 0; x < width; ++x, centre += rows) {
      if (x > 0) {
        const std::uint16_t* leaving = columns + static_cast<std::size_t>(x - 1) * rows + j0;
        const std::uint16_t* entering = columns + static_cast<std::size_t>(x + 2 * r) * rows + j0;
        for (int j = 0; j < side; ++j) {
          loss(leaving[j]);
          gain(entering[j]);
        }
      }
      // The clipped counts of the buckets below the centre's, of its vector of buckets, and of
      // the rest: the cdf below and, all together, the window's clipped count.
      const int b = *centre;
      const int kb = b >> kLanesLog2, kv = kb & ~(kLanes - 1);
      ColumnLanes under{}, rest{};
      for (int k = first; k < kv; k += kLanes) under += load_lanes<ColumnLanes>(clipped + k);
      const ColumnLanes at = load_lanes<ColumnLanes>(clipped + kv);
      for (int k = kv + kLanes; k < end; k += kLanes) rest += load_lanes<ColumnLanes>(clipped + k);
      const ColumnLanes own = load_lanes<ColumnLanes>(hist + kb * kLanes);
      const ColumnLanes own_below = (ColumnLanes)(own < limit_lanes);
      const ColumnLanes below = under + lanes_below<Count>(at, kb & (kLanes - 1)) +
                                lanes_below<Count>((own & own_below) | (limit_lanes & ~own_below), (b & (kLanes - 1)) + 1);
      const Count excess = static_cast<Count>(g.n - lanes_sum<Count>(under + at + rest));
      d[x] = final_code(g, rules::clahe_cdf(lanes_sum<Count>(below), excess, b, bins), dst.shift);
    }
  }
}
#endif

// CLAHE, rows [y_begin, y_end). Running sums in Count wrap but never exceed n, so they come out
// exact.
template <typename Count>
HAZEFREE_AHE_DEPTH_INLINE void clahe_strip_body(WideIn src, WideOut dst, const Geometry& g, int y_begin,
                                                int y_end, AheDepthEqualizer::ClaheScratch& ws) {
  const int width = g.width, height = g.height, r = g.radius;
  const int bins = g.bins, buckets = g.buckets;
  const int value_shift = src.shift, bin_shift = g.bin_shift, max_code = g.max_code;
  auto bin_of = [=](std::uint16_t sample) { return sample_bin(sample, value_shift, max_code, bin_shift); };
  std::uint16_t* fine = ws.fine.data();
  std::uint16_t* coarse = ws.coarse.data();
  Count* left_fine = ClaheWindow<Count>::left(ws);
  std::uint32_t* left_coarse = ws.left_coarse.data();
  Count* hist = ClaheWindow<Count>::fine(ws);
  Count* counts = ClaheWindow<Count>::counts(ws);
  Count* excess = ClaheWindow<Count>::excess(ws);
  const Count limit = static_cast<Count>(g.limit);
  auto row_of = [&](int y) { return src.data + static_cast<std::size_t>(y) * src.stride; };

  // Column histograms of the window rows around y_begin (kBuildGroup columns at a time), and
  // the window at x = 0.
  for (int x0 = 0; x0 < width; x0 += kBuildGroup) {
    const int x1 = std::min(width, x0 + kBuildGroup);
    std::fill(fine + static_cast<std::size_t>(x0) * bins, fine + static_cast<std::size_t>(x1) * bins, std::uint16_t{0});
    std::fill(coarse + static_cast<std::size_t>(x0) * buckets, coarse + static_cast<std::size_t>(x1) * buckets,
              std::uint16_t{0});
    for (int j = -r; j <= r; ++j) {
      const std::uint16_t* row = row_of(rules::reflect101(y_begin + j, height));
      for (int x = x0; x < x1; ++x) {
        const int b = bin_of(row[x]);
        ++fine[static_cast<std::size_t>(x) * bins + b];
        ++coarse[static_cast<std::size_t>(x) * buckets + (b >> kBucketLog2)];
      }
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
    int lo, hi;
    bucket_range(g, y, lo, hi);
    const std::size_t span = static_cast<std::size_t>(hi - lo + 1);
    std::memcpy(hist + lo * kBucket, left_fine + lo * kBucket, span * kBucket * sizeof(Count));
    for (int k = lo; k <= hi; ++k) counts[k] = static_cast<Count>(left_coarse[k]);
    Count total_excess = 0;
    for (int k = lo; k <= hi; ++k) {
      excess[k] = bucket_excess(hist + k * kBucket, limit);
      total_excess = static_cast<Count>(total_excess + excess[k]);
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
          // The bucket's 64 bins moved and their excess summed in the same pass; a column with
          // no pixels in the bucket reads a line of zeros that stays in cache, not its own.
          Count* __restrict h = hist + k * kBucket;
          const std::uint16_t* __restrict enter = in_count != 0 ? fine + ce * bins + k * kBucket : kZeroBucket;
          const std::uint16_t* __restrict leave = out_count != 0 ? fine + cl * bins + k * kBucket : kZeroBucket;
          Count e = 0;
          for (int i = 0; i < kBucket; ++i) {
            const Count moved = static_cast<Count>(h[i] + enter[i] - leave[i]);
            h[i] = moved;
            e = static_cast<Count>(e + over_limit(moved, limit));
          }
          total_excess = static_cast<Count>(total_excess + e - excess[k]);
          excess[k] = e;
        }
      }
      const int b = bin_of(s[x]);
      const int kb = b >> kBucketLog2;
      Count below = 0;
      const Count* h = hist + kb * kBucket;
      const int top = b & (kBucket - 1);
      for (int k = lo; k < kb; ++k) below = static_cast<Count>(below + counts[k] - excess[k]);
      for (int i = 0; i <= top; ++i) below = static_cast<Count>(below + (h[i] < limit ? h[i] : limit));
      d[x] = final_code(g, rules::clahe_cdf(below, total_excess, b, bins), dst.shift);
    }
  }
}

using StripFunction = void (*)(WideIn, WideOut, const Geometry&, int, int, AheDepthEqualizer::Strip&);

// The strip bodies, one per design, each taking the strip's scratch. Line: the counter of the AHE
// column lines (CLAHE has none of its own and takes uint16_t).
template <typename Count, typename Line, bool kClip>
HAZEFREE_AHE_DEPTH_INLINE void histogram_strip(WideIn src, WideOut dst, const Geometry& g, int y_begin,
                                               int y_end, AheDepthEqualizer::Strip& ws) {
  if constexpr (kClip) clahe_strip_body<Count>(src, dst, g, y_begin, y_end, ws.clahe);
  else ahe_strip_body<Count, Line>(src, dst, g, y_begin, y_end, ws.ahe);
}
#if HAZEFREE_AHE_DEPTH_DIRECT
template <int kVectors>
HAZEFREE_AHE_DEPTH_INLINE void direct_strip(WideIn src, WideOut dst, const Geometry& g, int y_begin, int y_end,
                                            AheDepthEqualizer::Strip& ws) {
  ahe_direct_strip_body<kVectors>(src, dst, g, y_begin, y_end, ws.ahe);
}
HAZEFREE_AHE_DEPTH_INLINE void sample_strip(WideIn src, WideOut dst, const Geometry& g, int y_begin, int y_end,
                                            AheDepthEqualizer::Strip& ws) {
  clahe_sample_strip_body(src, dst, g, y_begin, y_end, ws.clahe);
}
#endif

// A body compiled for the baseline and for AVX2 (inlined into each, see
// HAZEFREE_AHE_DEPTH_INLINE), and the copy this CPU runs.
template <StripFunction kBody>
void strip_baseline(WideIn src, WideOut dst, const Geometry& g, int y0, int y1, AheDepthEqualizer::Strip& ws) {
  kBody(src, dst, g, y0, y1, ws);
}
#if HAZEFREE_AHE_DEPTH_AVX2
template <StripFunction kBody>
__attribute__((target("avx2"))) void strip_avx2(WideIn src, WideOut dst, const Geometry& g, int y0, int y1,
                                                AheDepthEqualizer::Strip& ws) {
  kBody(src, dst, g, y0, y1, ws);
}
#endif
template <StripFunction kBody>
StripFunction pick() {
#if HAZEFREE_AHE_DEPTH_AVX2
  if (cpu_allows(CpuIsa::avx2)) return strip_avx2<kBody>;
#endif
  return strip_baseline<kBody>;
}

// The direct count for AHE windows of `side` rows, or CLAHE moved by samples, where it applies;
// else nullptr.
StripFunction pick_direct_strip(int side, bool clip) {
#if HAZEFREE_AHE_DEPTH_DIRECT
  if (clip) return side <= kMaxSampleSide ? pick<sample_strip>() : nullptr;
  if (side > kMaxDirectSide) return nullptr;
  static_assert(kMaxDirectSide <= 3 * kLanes, "one instance per count of vectors");
  switch ((side + kLanes - 1) / kLanes) {
    case 1: return pick<direct_strip<1>>();
    case 2: return pick<direct_strip<2>>();
    default: return pick<direct_strip<3>>();
  }
#else
  (void)side;
  (void)clip;
  return nullptr;
#endif
}

StripFunction pick_strip(bool wide_counters, bool byte_lines, bool clip) {
  using std::uint8_t, std::uint16_t, std::uint32_t;
  if (clip) return wide_counters ? pick<histogram_strip<uint32_t, uint16_t, true>>() : pick<histogram_strip<uint16_t, uint16_t, true>>();
  if (wide_counters) return pick<histogram_strip<uint32_t, uint16_t, false>>();
  return byte_lines ? pick<histogram_strip<uint16_t, uint8_t, false>>() : pick<histogram_strip<uint16_t, uint16_t, false>>();
}

}  // namespace

void AheDepthEqualizer::run(WideIn src, WideOut dst, int width, int height, int depth, int radius,
                            int limit, const std::uint16_t* codes) {
  const bool clip = limit > 0;
  const int bin_shift = rules::ahe_bin_shift(depth);
  const int bins = rules::ahe_bins(depth);
  const int bucket_log2 = clip ? kBucketLog2 : kLanesLog2;
  const int buckets = bins >> bucket_log2;
  const std::int64_t side = 2 * static_cast<std::int64_t>(radius) + 1;
  if (side > 65535) throw std::invalid_argument("ahe: window too large for 16-bit column histograms");
  const std::int64_t n = side * side;
  const bool wide_counters = n > 65535;
  // AHE column lines: 8-bit counters while a block of at least 4 columns fits them (windows of
  // at most 63 rows), else 16-bit; the block as long as its prefix sums fit, up to 8 columns.
  const bool byte_lines = side <= kMaxByteLineSide;
  const std::int64_t line_max = byte_lines ? 255 : 65535;
  int block_log2 = 0;
  while (block_log2 < kMaxBlockLog2 && (side << (block_log2 + 1)) <= line_max) ++block_log2;
  const int super_log2 = side >= (2 << kSuperLog2) && (side << kSuperLog2) <= 65535 ? kSuperLog2 : 0;

  const int count = std::max(1, std::min(threads_, height));
  if (static_cast<int>(strips_.size()) != count || width != width_ || depth != depth_ || clip != clip_ ||
      block_log2 != block_log2_ || super_log2 != super_log2_ || wide_counters != wide_counters_ ||
      byte_lines != byte_lines_) {
    strips_.assign(static_cast<std::size_t>(count), Strip{});
    const std::size_t w = static_cast<std::size_t>(width);
    for (Strip& s : strips_) {
      if (clip) {
        ClaheScratch& c = s.clahe;
        c.fine.assign(w * bins, 0);
        c.coarse.assign(w * buckets, 0);
        c.left_fine.assign(static_cast<std::size_t>(bins), 0);
        c.fine_hist.assign(static_cast<std::size_t>(bins), 0);
        c.left_coarse.assign(static_cast<std::size_t>(buckets), 0);
        c.coarse_hist.assign(static_cast<std::size_t>(buckets), 0);
        c.bucket_excess.assign(static_cast<std::size_t>(buckets), 0);
        c.left_fine16.assign(static_cast<std::size_t>(bins), 0);
        c.fine_hist16.assign(static_cast<std::size_t>(bins), 0);
        c.coarse_hist16.assign(static_cast<std::size_t>(buckets), 0);
        c.bucket_excess16.assign(static_cast<std::size_t>(buckets), 0);
      } else {
        AheScratch& a = s.ahe;
        if (byte_lines) assign_aligned(a.column_bins8, w * bins);
        else assign_aligned(a.column_bins, w * bins);
        if (super_log2 != 0)
          assign_aligned(a.super_bins, static_cast<std::size_t>(block_count_of(width, super_log2)) * bins);
        assign_aligned(a.column_buckets, w * buckets);
        a.left_buckets.assign(static_cast<std::size_t>(buckets), 0);
        assign_aligned(a.window_bins16, static_cast<std::size_t>(bins));
        assign_aligned(a.window_bins32, static_cast<std::size_t>(bins));
        assign_aligned(a.window_buckets16, static_cast<std::size_t>(buckets));
        assign_aligned(a.window_buckets32, static_cast<std::size_t>(buckets));
        a.bucket_stamp.assign(static_cast<std::size_t>(buckets), -1);
      }
    }
    width_ = width;
    depth_ = depth;
    clip_ = clip;
    block_log2_ = block_log2;
    super_log2_ = super_log2;
    wide_counters_ = wide_counters;
    byte_lines_ = byte_lines;
  }

  Geometry g{width, height, radius, n, limit, bins, buckets, bin_shift, block_log2, super_log2, rules::depth_max_code(depth),
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
      const int k = sample_bin(row[x], src.shift, max_code, bin_shift) >> bucket_log2;
      lo = std::min(lo, k);
      hi = std::max(hi, k);
    }
    row_lo_[static_cast<std::size_t>(y)] = static_cast<std::uint8_t>(lo);
    row_hi_[static_cast<std::size_t>(y)] = static_cast<std::uint8_t>(hi);
  }
  g.row_lo = row_lo_.data();
  g.row_hi = row_hi_.data();

  StripFunction strip = pick_direct_strip(static_cast<int>(side), clip);
  if (strip) {
    const std::size_t rows = static_cast<std::size_t>((height + count - 1) / count + 2 * radius);
    const std::size_t pitch = static_cast<std::size_t>(width + 2 * radius + kLanes);
    for (Strip& s : strips_) {
      if (clip) {
        if (s.clahe.sample_columns.size() < rows * pitch) s.clahe.sample_columns.assign(rows * pitch, 0);
        if (s.clahe.bucket_clipped16.empty()) assign_aligned(s.clahe.bucket_clipped16, static_cast<std::size_t>(bins >> kLanesLog2));
      } else if (s.ahe.direct_bins.size() < rows * pitch) {
        assign_aligned(s.ahe.direct_bins, rows * pitch);
      }
    }
  } else {
    strip = pick_strip(wide_counters, byte_lines, clip);
  }
#pragma omp parallel for schedule(static, 1) num_threads(count)
  for (int k = 0; k < count; ++k) {
    const int y0 = static_cast<int>(static_cast<std::int64_t>(height) * k / count);
    const int y1 = static_cast<int>(static_cast<std::int64_t>(height) * (k + 1) / count);
    if (y0 < y1) strip(src, dst, g, y0, y1, strips_[static_cast<std::size_t>(k)]);
  }
}

}  // namespace hazefree::cpu::detail
