// Guided filter (He, Sun, Tang) with box means whose cost does not grow with the radius, and the
// fast (subsampled) variant. Precision choices (see dehaze_ops.hpp): horizontal sums from double
// prefix sums rounded to float once; vertical running sums in double; means rounded to float;
// a and b in double from the float means. Every value is independent of the thread count.
#include <omp.h>

#include <algorithm>

#include "kernels/dcp_rules.hpp"
#include "kernels/dehaze_ops.hpp"

namespace hazefree::cpu {
namespace {

constexpr int kStrip = 64;  // columns per vertical strip (4 double accumulators each)
constexpr int kMaxSources = 4;

int resolve(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

// A box-filter input: plane a, or the product a * b (in double) when b is set.
struct Source {
  const float* a;
  const float* b;
  int stride_a, stride_b;
};

// Window [x - r, x + r] clipped to [0, n - 1].
inline int window_count(int x, int r, int n) {
  return std::min(n - 1, x + r) - std::max(0, x - r) + 1;
}

}  // namespace

void GuidedFilter::ensure(int width, int height, int threads) {
  const std::size_t plane = static_cast<std::size_t>(width) * height;
  if (horizontal_.size() < plane * kMaxSources) horizontal_.resize(plane * kMaxSources);
  for (auto& m : mean_)
    if (m.size() < plane) m.resize(plane);
  // Prefix sums of up to 4 sources per row; also holds the 4 x kStrip column accumulators.
  const std::size_t per_thread = (std::max(width, kStrip) + std::size_t{1}) * kMaxSources;
  if (scratch_.size() < per_thread * threads) scratch_.resize(per_thread * threads);
}

namespace {

// out[c] (width x height, stride width) = box mean of sources[c] with radius r, true counts.
void box_means_impl(const Source* sources, int count, float* const* out, float* horizontal,
                    double* scratch, int w, int h, int r, int nt) {
  const int rx = std::min(r, w - 1), ry = std::min(r, h - 1);
  const std::size_t plane = static_cast<std::size_t>(w) * h;
  const std::size_t per_thread = (std::max(w, kStrip) + std::size_t{1}) * kMaxSources;
#pragma omp parallel num_threads(nt)
  {
    double* mine = scratch + per_thread * omp_get_thread_num();
#pragma omp for schedule(static)
    for (int y = 0; y < h; ++y) {
      // The prefix sums of all sources advance together: independent add chains run in parallel.
      double* prefix = mine;  // kMaxSources x (w + 1), prefix[c][x] = sum of the first x samples
      const std::size_t pw = static_cast<std::size_t>(w) + 1;
      double run[kMaxSources] = {0.0, 0.0, 0.0, 0.0};
      const float* a[kMaxSources];
      const float* b[kMaxSources];
      for (int c = 0; c < count; ++c) {
        a[c] = sources[c].a + static_cast<std::ptrdiff_t>(y) * sources[c].stride_a;
        b[c] = sources[c].b ? sources[c].b + static_cast<std::ptrdiff_t>(y) * sources[c].stride_b
                            : nullptr;
        prefix[c * pw] = 0.0;
      }
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < count; ++c) {
          run[c] += b[c] ? static_cast<double>(a[c][x]) * static_cast<double>(b[c][x])
                         : static_cast<double>(a[c][x]);
          prefix[c * pw + x + 1] = run[c];
        }
      for (int c = 0; c < count; ++c) {
        const double* pc = prefix + c * pw;
        float* hs = horizontal + plane * c + static_cast<std::size_t>(y) * w;
        for (int x = 0; x < w; ++x)
          hs[x] = static_cast<float>(pc[std::min(w, x + rx + 1)] - pc[std::max(0, x - rx)]);
      }
    }
    const int strips = (w + kStrip - 1) / kStrip;
#pragma omp for schedule(static)
    for (int s = 0; s < strips; ++s) {
      const int x0 = s * kStrip, cols = std::min(kStrip, w - x0);
      double* acc = mine;  // kMaxSources x kStrip
      double count_x[kStrip];
      for (int j = 0; j < cols; ++j) count_x[j] = window_count(x0 + j, rx, w);
      for (int c = 0; c < count; ++c) {
        double* ac = acc + c * kStrip;
        std::fill(ac, ac + cols, 0.0);
        const float* hs = horizontal + plane * c + x0;
        for (int y = 0; y <= ry; ++y)
          for (int j = 0; j < cols; ++j) ac[j] += hs[static_cast<std::size_t>(y) * w + j];
      }
      double inv_count[kStrip];
      for (int y = 0; y < h; ++y) {
        const double cy = window_count(y, ry, h);
        for (int j = 0; j < cols; ++j) inv_count[j] = 1.0 / (cy * count_x[j]);
        const int add = y + ry + 1, sub = y - ry;
        for (int c = 0; c < count; ++c) {
          double* ac = acc + c * kStrip;
          float* o = out[c] + static_cast<std::size_t>(y) * w + x0;
          for (int j = 0; j < cols; ++j) o[j] = static_cast<float>(ac[j] * inv_count[j]);
          const float* hs = horizontal + plane * c + x0;
          if (add < h) {
            const float* ha = hs + static_cast<std::size_t>(add) * w;
            for (int j = 0; j < cols; ++j) ac[j] += ha[j];
          }
          if (sub >= 0) {
            const float* hb = hs + static_cast<std::size_t>(sub) * w;
            for (int j = 0; j < cols; ++j) ac[j] -= hb[j];
          }
        }
      }
    }
  }
}

}  // namespace

// mean_[0] = mean(a), mean_[1] = mean(b) for the guide/input pair (same size, any strides).
void GuidedFilter::coefficients(const PlaneF& guide, const PlaneF& input, int radius, float eps,
                                int threads) {
  const int w = guide.width, h = guide.height;
  const Source first[4] = {{guide.data, nullptr, guide.stride, 0},
                           {input.data, nullptr, input.stride, 0},
                           {guide.data, guide.data, guide.stride, guide.stride},
                           {guide.data, input.data, guide.stride, input.stride}};
  float* means[4] = {mean_[0].data(), mean_[1].data(), mean_[2].data(), mean_[3].data()};
  box_means_impl(first, 4, means, horizontal_.data(), scratch_.data(), w, h, radius, threads);

  // a -> mean_[2], b -> mean_[3].
  const std::size_t n = static_cast<std::size_t>(w) * h;
  const double e = eps;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
    const double mg = means[0][i], mp = means[1][i], mgg = means[2][i], mgp = means[3][i];
    const double var = std::max(0.0, mgg - mg * mg);
    const double a = (mgp - mg * mp) / (var + e);
    means[2][i] = static_cast<float>(a);
    means[3][i] = static_cast<float>(mp - a * mg);
  }
  const Source second[2] = {{means[2], nullptr, w, 0}, {means[3], nullptr, w, 0}};
  box_means_impl(second, 2, means, horizontal_.data(), scratch_.data(), w, h, radius, threads);
}

void GuidedFilter::apply(const PlaneF& guide, const PlaneF& input, const PlaneF& output,
                         int radius, float eps, int subsample, int threads) {
  const int w = guide.width, h = guide.height;
  dcp::check_guided_filter_args(w, h, input.width, input.height, output.width, output.height,
                                radius, eps, subsample);
  const int nt = resolve(threads);

  if (subsample == 1) {
    ensure(w, h, nt);
    coefficients(guide, input, radius, eps, nt);
    const float* ma = mean_[0].data();
    const float* mb = mean_[1].data();
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int y = 0; y < h; ++y) {
      const float* g = guide.row(y);
      float* q = output.row(y);
      const std::size_t o = static_cast<std::size_t>(y) * w;
      for (int x = 0; x < w; ++x) q[x] = ma[o + x] * g[x] + mb[o + x];
    }
    return;
  }

  const int s = subsample;
  const int ws = dcp::subsampled_size(w, s), hs = dcp::subsampled_size(h, s);
  const std::size_t small = static_cast<std::size_t>(ws) * hs;
  ensure(ws, hs, nt);
  if (guide_s_.size() < small) guide_s_.resize(small);
  if (input_s_.size() < small) input_s_.resize(small);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int i = 0; i < hs; ++i) {
    const int y0 = i * s, y1 = std::min(h, y0 + s);
    for (int j = 0; j < ws; ++j) {
      const int x0 = j * s, x1 = std::min(w, x0 + s);
      double sg = 0.0, sp = 0.0;
      for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
          sg += guide.row(y)[x];
          sp += input.row(y)[x];
        }
      const double n = static_cast<double>((y1 - y0) * (x1 - x0));
      guide_s_[static_cast<std::size_t>(i) * ws + j] = static_cast<float>(sg / n);
      input_s_[static_cast<std::size_t>(i) * ws + j] = static_cast<float>(sp / n);
    }
  }
  const PlaneF gs{guide_s_.data(), ws, hs, ws}, ps{input_s_.data(), ws, hs, ws};
  coefficients(gs, ps, dcp::subsampled_radius(radius, s), eps, nt);
  const float* ma = mean_[0].data();
  const float* mb = mean_[1].data();
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int y = 0; y < h; ++y) {
    const dcp::BilinearTap ty = dcp::bilinear_tap(y, s, hs);
    const float* a0 = ma + static_cast<std::size_t>(ty.i0) * ws;
    const float* a1 = ma + static_cast<std::size_t>(ty.i1) * ws;
    const float* b0 = mb + static_cast<std::size_t>(ty.i0) * ws;
    const float* b1 = mb + static_cast<std::size_t>(ty.i1) * ws;
    const float* g = guide.row(y);
    float* q = output.row(y);
    for (int x = 0; x < w; ++x) {
      const dcp::BilinearTap tx = dcp::bilinear_tap(x, s, ws);
      q[x] = dcp::bilinear(a0, a1, tx, ty.f) * g[x] + dcp::bilinear(b0, b1, tx, ty.f);
    }
  }
}

}  // namespace hazefree::cpu
