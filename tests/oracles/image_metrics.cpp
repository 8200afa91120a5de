#include "oracles/image_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace hazefree::oracle {

double psnr(const RgbD& a, const RgbD& b) {
  double se = 0.0;
  std::size_t n = 0;
  for (int c = 0; c < 3; ++c)
    for (std::size_t i = 0; i < a[c].v.size(); ++i, ++n) {
      const double d = a[c].v[i] - b[c].v[i];
      se += d * d;
    }
  const double mse = se / static_cast<double>(n);
  return mse == 0.0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(1.0 / mse);
}

namespace {

// Normalised Gaussian-weighted local mean, separable, window clipped at the borders.
Grid<double> gaussian_mean(const Grid<double>& src) {
  constexpr int kR = 5;
  double k[2 * kR + 1];
  for (int i = -kR; i <= kR; ++i) k[i + kR] = std::exp(-(i * i) / (2.0 * 1.5 * 1.5));
  Grid<double> tmp(src.w, src.h), out(src.w, src.h);
  for (int y = 0; y < src.h; ++y)
    for (int x = 0; x < src.w; ++x) {
      double s = 0, wsum = 0;
      for (int i = -kR; i <= kR; ++i) {
        const int xx = x + i;
        if (xx < 0 || xx >= src.w) continue;
        s += k[i + kR] * src.at(xx, y);
        wsum += k[i + kR];
      }
      tmp.at(x, y) = s / wsum;
    }
  for (int y = 0; y < src.h; ++y)
    for (int x = 0; x < src.w; ++x) {
      double s = 0, wsum = 0;
      for (int i = -kR; i <= kR; ++i) {
        const int yy = y + i;
        if (yy < 0 || yy >= src.h) continue;
        s += k[i + kR] * tmp.at(x, yy);
        wsum += k[i + kR];
      }
      out.at(x, y) = s / wsum;
    }
  return out;
}

double ssim_plane(const Grid<double>& a, const Grid<double>& b) {
  const double c1 = 0.01 * 0.01, c2 = 0.03 * 0.03;
  Grid<double> aa(a.w, a.h), bb(a.w, a.h), ab(a.w, a.h);
  for (std::size_t i = 0; i < a.v.size(); ++i) {
    aa.v[i] = a.v[i] * a.v[i];
    bb.v[i] = b.v[i] * b.v[i];
    ab.v[i] = a.v[i] * b.v[i];
  }
  const Grid<double> ma = gaussian_mean(a), mb = gaussian_mean(b);
  const Grid<double> maa = gaussian_mean(aa), mbb = gaussian_mean(bb), mab = gaussian_mean(ab);
  double total = 0.0;
  for (std::size_t i = 0; i < a.v.size(); ++i) {
    const double va = maa.v[i] - ma.v[i] * ma.v[i], vb = mbb.v[i] - mb.v[i] * mb.v[i];
    const double cov = mab.v[i] - ma.v[i] * mb.v[i];
    total += ((2 * ma.v[i] * mb.v[i] + c1) * (2 * cov + c2)) /
             ((ma.v[i] * ma.v[i] + mb.v[i] * mb.v[i] + c1) * (va + vb + c2));
  }
  return total / static_cast<double>(a.v.size());
}

}  // namespace

double ssim(const RgbD& a, const RgbD& b) {
  return (ssim_plane(a[0], b[0]) + ssim_plane(a[1], b[1]) + ssim_plane(a[2], b[2])) / 3.0;
}

}  // namespace hazefree::oracle
