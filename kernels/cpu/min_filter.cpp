// Separable running minimum (van Herk / Gil-Werman). In the padded line (r samples of +inf on
// either side) split into blocks of k = 2r + 1, the window starting at padded index p ends at
// p + 2r, so it spans at most two blocks: min = min(suffix_min[p], prefix_min[p + 2r]). The
// suffix minima are stored, the prefix minimum runs along in a register: 3 comparisons per
// sample whatever r. The window is clipped at the borders by the +inf padding; r is first
// reduced to n - 1, beyond which every window covers the whole line.
#include <omp.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "kernels/dehaze_ops.hpp"

namespace hazefree::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
// Columns per vertical strip: wide enough to vectorise, small enough that the strip's suffix
// buffer ((H + 2r) x 128 floats, ~0.55 MB at 1080p) stays in L2.
constexpr int kStrip = 128;

int resolve(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

// One line: out[x] = min(in[max(0, x - r) .. min(n - 1, x + r)]). `suffix` holds n + 2r floats.
void running_min_line(const float* in, float* out, int n, int r, float* suffix) {
  const int k = 2 * r + 1, padded = n + 2 * r;
  // Suffix minima inside each block, from the end. Block b covers padded [b k, b k + k).
  for (int p = padded - 1; p >= 0; --p) {
    const float v = (p >= r && p < n + r) ? in[p - r] : kInf;
    suffix[p] = (p == padded - 1 || (p + 1) % k == 0) ? v : std::min(v, suffix[p + 1]);
  }
  float prefix = kInf;
  int in_block = 0;  // position of p inside its block
  for (int p = 0; p < padded; ++p) {
    const float v = (p >= r && p < n + r) ? in[p - r] : kInf;
    prefix = in_block == 0 ? v : std::min(prefix, v);
    if (++in_block == k) in_block = 0;
    if (p >= 2 * r) out[p - 2 * r] = std::min(suffix[p - 2 * r], prefix);
  }
}

}  // namespace

void MinFilter::apply(const PlaneF& src, const PlaneF& dst, int radius, int threads) {
  const int w = src.width, h = src.height;
  if (w <= 0 || h <= 0 || dst.width != w || dst.height != h)
    throw std::invalid_argument("min filter: source and destination sizes differ");
  if (radius < 0) throw std::invalid_argument("min filter: negative radius");
  const int nt = resolve(threads);
  const int rx = std::min(radius, w - 1), ry = std::min(radius, h - 1);

  const std::size_t plane = static_cast<std::size_t>(w) * h;
  const std::size_t per_thread = std::max(static_cast<std::size_t>(w + 2 * rx),
                                          static_cast<std::size_t>(h + 2 * ry) * kStrip);
  if (rows_.size() < plane) rows_.resize(plane);
  if (scratch_.size() < per_thread * nt) scratch_.resize(per_thread * nt);
  float* rows = rows_.data();
  float* scratch = scratch_.data();

#pragma omp parallel num_threads(nt)
  {
    float* mine = scratch + per_thread * omp_get_thread_num();
#pragma omp for schedule(static)
    for (int y = 0; y < h; ++y) {
      float* out = rows + static_cast<std::size_t>(y) * w;
      if (rx == 0) std::copy(src.row(y), src.row(y) + w, out);
      else running_min_line(src.row(y), out, w, rx, mine);
    }
    // Vertical pass over strips of columns: the same recurrence, vectorised across the strip.
    const int strips = (w + kStrip - 1) / kStrip;
    const int k = 2 * ry + 1, padded = h + 2 * ry;
#pragma omp for schedule(static)
    for (int s = 0; s < strips; ++s) {
      const int x0 = s * kStrip, cols = std::min(kStrip, w - x0);
      if (ry == 0) {
        for (int y = 0; y < h; ++y)
          std::copy(rows + static_cast<std::size_t>(y) * w + x0,
                    rows + static_cast<std::size_t>(y) * w + x0 + cols, dst.row(y) + x0);
        continue;
      }
      float* suffix = mine;  // padded x kStrip
      for (int p = padded - 1; p >= 0; --p) {
        float* sp = suffix + static_cast<std::size_t>(p) * kStrip;
        const bool inside = p >= ry && p < h + ry;
        const float* in = inside ? rows + static_cast<std::size_t>(p - ry) * w + x0 : nullptr;
        if (p == padded - 1 || (p + 1) % k == 0) {
          if (inside) std::copy(in, in + cols, sp);
          else std::fill(sp, sp + cols, kInf);
        } else {
          const float* next = sp + kStrip;
          if (inside)
            for (int j = 0; j < cols; ++j) sp[j] = std::min(in[j], next[j]);
          else
            std::copy(next, next + cols, sp);
        }
      }
      float prefix[kStrip];
      int in_block = 0;
      for (int p = 0; p < padded; ++p) {
        const bool inside = p >= ry && p < h + ry;
        const float* in = inside ? rows + static_cast<std::size_t>(p - ry) * w + x0 : nullptr;
        if (in_block == 0) {
          if (inside) std::copy(in, in + cols, prefix);
          else std::fill(prefix, prefix + cols, kInf);
        } else if (inside) {
          for (int j = 0; j < cols; ++j) prefix[j] = std::min(prefix[j], in[j]);
        }
        if (++in_block == k) in_block = 0;
        if (p >= 2 * ry) {
          const float* sp = suffix + static_cast<std::size_t>(p - 2 * ry) * kStrip;
          float* out = dst.row(p - 2 * ry) + x0;
          for (int j = 0; j < cols; ++j) out[j] = std::min(sp[j], prefix[j]);
        }
      }
    }
  }
}

}  // namespace hazefree::cpu
