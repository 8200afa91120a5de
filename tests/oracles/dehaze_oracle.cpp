#include "oracles/dehaze_oracle.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hazefree::oracle {

namespace {

// The minimum over the (2r+1)^2 window clipped at the border, directly, in T's precision.
template <typename T>
Grid<T> patch_min_of(const Grid<T>& src, int r) {
  Grid<T> out(src.w, src.h);
  for (int y = 0; y < src.h; ++y)
    for (int x = 0; x < src.w; ++x) {
      T m = src.at(x, y);
      for (int yy = std::max(0, y - r); yy <= std::min(src.h - 1, y + r); ++yy)
        for (int xx = std::max(0, x - r); xx <= std::min(src.w - 1, x + r); ++xx)
          m = std::min(m, src.at(xx, yy));
      out.at(x, y) = m;
    }
  return out;
}

}  // namespace

Grid<float> patch_min(const Grid<float>& src, int r) { return patch_min_of(src, r); }

Grid<double> box_mean(const Grid<double>& src, int r) {
  // Direct sums, one direction after the other (each O(r) per pixel), then the true count.
  Grid<double> rows(src.w, src.h), out(src.w, src.h);
  for (int y = 0; y < src.h; ++y)
    for (int x = 0; x < src.w; ++x) {
      double s = 0.0;
      for (int xx = std::max(0, x - r); xx <= std::min(src.w - 1, x + r); ++xx) s += src.at(xx, y);
      rows.at(x, y) = s;
    }
  for (int y = 0; y < src.h; ++y)
    for (int x = 0; x < src.w; ++x) {
      double s = 0.0;
      for (int yy = std::max(0, y - r); yy <= std::min(src.h - 1, y + r); ++yy) s += rows.at(x, yy);
      const int nx = std::min(src.w - 1, x + r) - std::max(0, x - r) + 1;
      const int ny = std::min(src.h - 1, y + r) - std::max(0, y - r) + 1;
      out.at(x, y) = s / (static_cast<double>(nx) * ny);
    }
  return out;
}

namespace {

Grid<double> multiply(const Grid<double>& a, const Grid<double>& b) {
  Grid<double> out(a.w, a.h);
  for (std::size_t i = 0; i < a.v.size(); ++i) out.v[i] = a.v[i] * b.v[i];
  return out;
}

void coefficients(const Grid<double>& g, const Grid<double>& p, int r, double eps,
                  Grid<double>& mean_a, Grid<double>& mean_b) {
  const Grid<double> mg = box_mean(g, r), mp = box_mean(p, r);
  const Grid<double> mgg = box_mean(multiply(g, g), r), mgp = box_mean(multiply(g, p), r);
  Grid<double> a(g.w, g.h), b(g.w, g.h);
  for (std::size_t i = 0; i < g.v.size(); ++i) {
    const double var = std::max(0.0, mgg.v[i] - mg.v[i] * mg.v[i]);
    a.v[i] = (mgp.v[i] - mg.v[i] * mp.v[i]) / (var + eps);
    b.v[i] = mp.v[i] - a.v[i] * mg.v[i];
  }
  mean_a = box_mean(a, r);
  mean_b = box_mean(b, r);
}

}  // namespace

Grid<double> guided_filter(const Grid<double>& guide, const Grid<double>& input, int r, double eps) {
  Grid<double> ma, mb;
  coefficients(guide, input, r, eps, ma, mb);
  Grid<double> out(guide.w, guide.h);
  for (std::size_t i = 0; i < out.v.size(); ++i) out.v[i] = ma.v[i] * guide.v[i] + mb.v[i];
  return out;
}

Grid<double> fast_guided_filter(const Grid<double>& guide, const Grid<double>& input, int r,
                                double eps, int s) {
  const int ws = (guide.w + s - 1) / s, hs = (guide.h + s - 1) / s;
  Grid<double> gs(ws, hs), ps(ws, hs);
  for (int i = 0; i < hs; ++i)
    for (int j = 0; j < ws; ++j) {
      double sg = 0, sp = 0;
      int n = 0;
      for (int y = i * s; y < std::min(guide.h, i * s + s); ++y)
        for (int x = j * s; x < std::min(guide.w, j * s + s); ++x, ++n) {
          sg += guide.at(x, y);
          sp += input.at(x, y);
        }
      gs.at(j, i) = sg / n;
      ps.at(j, i) = sp / n;
    }
  const int radius = std::max(1, (r + s / 2) / s);  // r / s rounded half up
  Grid<double> ma, mb;
  coefficients(gs, ps, radius, eps, ma, mb);
  // Sample centres of block j: j s + (s - 1) / 2; clamp outside the first and last centres.
  auto tap = [s](int x, int n, int& i0, int& i1, double& f) {
    const double u = (x + 0.5) / s - 0.5;
    if (u <= 0.0) { i0 = 0; i1 = std::min(1, n - 1); f = 0.0; return; }
    i0 = static_cast<int>(std::floor(u));
    if (i0 >= n - 1) { i0 = i1 = n - 1; f = 0.0; return; }
    i1 = i0 + 1;
    f = u - i0;
  };
  Grid<double> out(guide.w, guide.h);
  for (int y = 0; y < guide.h; ++y) {
    int y0, y1;
    double fy;
    tap(y, hs, y0, y1, fy);
    for (int x = 0; x < guide.w; ++x) {
      int x0, x1;
      double fx;
      tap(x, ws, x0, x1, fx);
      auto lerp2 = [&](const Grid<double>& m) {
        const double top = (1 - fx) * m.at(x0, y0) + fx * m.at(x1, y0);
        const double bot = (1 - fx) * m.at(x0, y1) + fx * m.at(x1, y1);
        return (1 - fy) * top + fy * bot;
      };
      out.at(x, y) = lerp2(ma) * guide.at(x, y) + lerp2(mb);
    }
  }
  return out;
}

namespace {

template <typename T>
struct BlockWinner {
  T d, g;
  int x, y, block;
};

// SPEC 3 step 3 in T's precision: each 32x32 block's largest dark-channel value and its pixel
// (ties: larger grey, then first in raster order), the blocks ranked by it (ties: larger grey,
// then block index).
template <typename T>
std::vector<BlockWinner<T>> ranked_block_winners(const Grid<T>& dark, const Grid<T>& grey) {
  const int bw = (dark.w + 31) / 32, bh = (dark.h + 31) / 32;
  std::vector<BlockWinner<T>> winners;
  for (int by = 0; by < bh; ++by)
    for (int bx = 0; bx < bw; ++bx) {
      std::vector<BlockWinner<T>> all;
      for (int y = by * 32; y < std::min(dark.h, by * 32 + 32); ++y)
        for (int x = bx * 32; x < std::min(dark.w, bx * 32 + 32); ++x)
          all.push_back({dark.at(x, y), grey.at(x, y), x, y, by * bw + bx});
      std::stable_sort(all.begin(), all.end(), [](const BlockWinner<T>& a, const BlockWinner<T>& b) {
        if (a.d != b.d) return a.d > b.d;
        return a.g > b.g;  // stable: raster order among full ties
      });
      winners.push_back(all.front());
    }
  std::sort(winners.begin(), winners.end(), [](const BlockWinner<T>& a, const BlockWinner<T>& b) {
    if (a.d != b.d) return a.d > b.d;
    if (a.g != b.g) return a.g > b.g;
    return a.block < b.block;
  });
  return winners;
}

}  // namespace

AtmosphereResult atmosphere(const Grid<float>& dark, const Grid<float>& grey,
                            const std::array<Grid<float>, 3>& rgb, float fraction) {
  const std::vector<BlockWinner<float>> winners = ranked_block_winners(dark, grey);
  const int blocks = static_cast<int>(winners.size());
  int top = static_cast<int>(std::ceil(fraction * static_cast<float>(blocks)));
  top = std::min(blocks, std::max(1, top));
  AtmosphereResult out;
  for (const BlockWinner<float>& c : winners) out.block_order.push_back(c.block);
  for (int c = 0; c < 3; ++c) {
    double s = 0.0;
    for (int k = 0; k < top; ++k) s += rgb[c].at(winners[k].x, winners[k].y);
    out.a[c] = std::max(s / top, static_cast<double>(1.0f / 255.0f));
  }
  for (int k = 0; k < top; ++k) out.positions.push_back({winners[k].x, winners[k].y});
  return out;
}

Grid<float> grey_of(const std::array<Grid<float>, 3>& rgb) {
  Grid<float> g(rgb[0].w, rgb[0].h);
  for (std::size_t i = 0; i < g.v.size(); ++i)
    g.v[i] = 0.299f * rgb[0].v[i] + 0.587f * rgb[1].v[i] + 0.114f * rgb[2].v[i];
  return g;
}

Grid<float> channel_min(const std::array<Grid<float>, 3>& rgb) {
  Grid<float> m(rgb[0].w, rgb[0].h);
  for (std::size_t i = 0; i < m.v.size(); ++i)
    m.v[i] = std::min({rgb[0].v[i], rgb[1].v[i], rgb[2].v[i]});
  return m;
}

std::array<Grid<double>, 3> recover_with(const std::array<Grid<float>, 3>& rgb,
                                         const std::array<double, 3>& a, const Params& p) {
  const int w = rgb[0].w, h = rgb[0].h;
  // Raw transmission: direct patch minimum of min_c I_c / A_c, in double.
  Grid<double> raw(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double m = 1e300;
      for (int yy = std::max(0, y - p.patch_radius); yy <= std::min(h - 1, y + p.patch_radius); ++yy)
        for (int xx = std::max(0, x - p.patch_radius); xx <= std::min(w - 1, x + p.patch_radius); ++xx)
          for (int c = 0; c < 3; ++c) m = std::min(m, rgb[c].at(xx, yy) / a[c]);
      raw.at(x, y) = 1.0 - p.omega * m;
    }
  Grid<double> guide(w, h);
  for (std::size_t i = 0; i < guide.v.size(); ++i)
    guide.v[i] = 0.299 * rgb[0].v[i] + 0.587 * rgb[1].v[i] + 0.114 * rgb[2].v[i];
  const Grid<double> t = p.gf_subsample > 1
                             ? fast_guided_filter(guide, raw, p.gf_radius, p.gf_eps, p.gf_subsample)
                             : guided_filter(guide, raw, p.gf_radius, p.gf_eps);
  const double mean_a = (a[0] + a[1] + a[2]) / 3.0;
  std::array<Grid<double>, 3> out{Grid<double>(w, h), Grid<double>(w, h), Grid<double>(w, h)};
  for (std::size_t i = 0; i < guide.v.size(); ++i) {
    double ti = t.v[i];
    const double d = std::fabs((rgb[0].v[i] + rgb[1].v[i] + rgb[2].v[i]) / 3.0 - mean_a);
    if (p.k_tolerance > 0 && d <= p.k_tolerance) ti = std::min(1.0, ti * p.k_tolerance / std::max(d, 1e-6));
    for (int c = 0; c < 3; ++c) {
      double j = (rgb[c].v[i] - a[c]) / std::max(ti, p.t0) + a[c];
      j = std::clamp(j, 0.0, 1.0);
      out[c].v[i] = j + (1.0 - j) * j * p.brightness;
    }
  }
  return out;
}

// ---- the whole chain in double ----------------------------------------------------------------

namespace {

// Steps 5 to 9 with A given, in double from double RGB.
std::array<Grid<double>, 3> recover_double(const std::array<Grid<double>, 3>& rgb,
                                           const std::array<double, 3>& a, const Params& p) {
  const int w = rgb[0].w, h = rgb[0].h;
  Grid<double> normalised(w, h), guide(w, h);
  for (std::size_t i = 0; i < guide.v.size(); ++i) {
    normalised.v[i] = std::min({rgb[0].v[i] / a[0], rgb[1].v[i] / a[1], rgb[2].v[i] / a[2]});
    guide.v[i] = 0.299 * rgb[0].v[i] + 0.587 * rgb[1].v[i] + 0.114 * rgb[2].v[i];
  }
  Grid<double> raw = patch_min_of(normalised, p.patch_radius);
  for (double& v : raw.v) v = 1.0 - p.omega * v;
  const Grid<double> t = p.gf_subsample > 1
                             ? fast_guided_filter(guide, raw, p.gf_radius, p.gf_eps, p.gf_subsample)
                             : guided_filter(guide, raw, p.gf_radius, p.gf_eps);
  const double mean_a = (a[0] + a[1] + a[2]) / 3.0;
  std::array<Grid<double>, 3> out{Grid<double>(w, h), Grid<double>(w, h), Grid<double>(w, h)};
  for (std::size_t i = 0; i < guide.v.size(); ++i) {
    double ti = t.v[i];
    const double d = std::fabs((rgb[0].v[i] + rgb[1].v[i] + rgb[2].v[i]) / 3.0 - mean_a);
    if (p.k_tolerance > 0 && d <= p.k_tolerance)
      ti = std::min(1.0, ti * p.k_tolerance / std::max(d, 1e-6));
    for (int c = 0; c < 3; ++c) {
      double j = (rgb[c].v[i] - a[c]) / std::max(ti, p.t0) + a[c];
      j = std::clamp(j, 0.0, 1.0);
      out[c].v[i] = j + (1.0 - j) * j * p.brightness;
    }
  }
  return out;
}

}  // namespace

std::array<double, 3> atmosphere_double(const std::array<Grid<double>, 3>& rgb, int patch_radius,
                                        double top_fraction) {
  const int w = rgb[0].w, h = rgb[0].h;
  Grid<double> minimum(w, h), grey(w, h);
  for (std::size_t i = 0; i < grey.v.size(); ++i) {
    minimum.v[i] = std::min({rgb[0].v[i], rgb[1].v[i], rgb[2].v[i]});
    grey.v[i] = 0.299 * rgb[0].v[i] + 0.587 * rgb[1].v[i] + 0.114 * rgb[2].v[i];
  }
  const Grid<double> dark = patch_min_of(minimum, patch_radius);
  const std::vector<BlockWinner<double>> winners = ranked_block_winners(dark, grey);
  const int blocks = static_cast<int>(winners.size());
  const int top = std::min(blocks, std::max(1, static_cast<int>(std::ceil(top_fraction * blocks))));
  std::array<double, 3> a{};
  for (int c = 0; c < 3; ++c) {
    double s = 0.0;
    for (int k = 0; k < top; ++k) s += rgb[c].at(winners[k].x, winners[k].y);
    a[c] = std::max(s / top, 1.0 / 255.0);
  }
  return a;
}

ChainResult dehaze_double(const std::array<Grid<double>, 3>& rgb, const Params& p,
                          double top_fraction) {
  ChainResult out;
  out.a = atmosphere_double(rgb, p.patch_radius, top_fraction);
  out.j = recover_double(rgb, out.a, p);
  return out;
}

}  // namespace hazefree::oracle
