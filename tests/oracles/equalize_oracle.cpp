#include "oracles/equalize_oracle.hpp"

#include <cmath>

namespace hazefree::oracle {

std::vector<int> he_lut(const std::vector<std::uint32_t>& hist, int max_code) {
  const int bins = static_cast<int>(hist.size());
  std::vector<int> lut(bins);
  std::uint64_t total = 0;
  for (std::uint32_t h : hist) total += h;
  int first = -1;
  for (int i = 0; i < bins && first < 0; ++i)
    if (hist[i] != 0) first = i;
  if (first < 0 || hist[first] == total) {
    for (int i = 0; i < bins; ++i) lut[i] = i;
    return lut;
  }
  const float scale = static_cast<float>(max_code) / static_cast<float>(total - hist[first]);
  for (int v = 0; v < bins; ++v) {
    if (v <= first) {
      lut[v] = 0;
      continue;
    }
    std::uint64_t sum = 0;
    for (int u = first + 1; u <= v; ++u) sum += hist[u];
    const float x = static_cast<float>(sum) * scale;
    long r = std::lrint(x);  // nearest, ties to even
    lut[v] = static_cast<int>(r < 0 ? 0 : (r > max_code ? max_code : r));
  }
  return lut;
}

std::vector<int> he_lut_float(const std::vector<float>& hist, int max_code) {
  const int bins = static_cast<int>(hist.size());
  std::vector<int> lut(bins);
  int first = -1;
  for (int i = 0; i < bins && first < 0; ++i)
    if (hist[i] > 0.f) first = i;
  float rest = 0.f;
  if (first >= 0)
    for (int u = first + 1; u < bins; ++u) rest += hist[u];
  if (first < 0 || rest <= 0.f) {
    for (int i = 0; i < bins; ++i) lut[i] = i;
    return lut;
  }
  const float scale = static_cast<float>(max_code) / rest;
  for (int v = 0; v < bins; ++v) {
    if (v <= first) {
      lut[v] = 0;
      continue;
    }
    float sum = 0.f;
    for (int u = first + 1; u <= v; ++u) sum += hist[u];
    const float x = sum * scale;
    long r = std::lrint(x);
    lut[v] = static_cast<int>(r < 0 ? 0 : (r > max_code ? max_code : r));
  }
  return lut;
}

std::vector<std::uint32_t> histogram(const Grey& img, int x0, int y0, int x1, int y1) {
  std::vector<std::uint32_t> h(256, 0);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) ++h[img.at(x, y)];
  return h;
}

Grey he(const Grey& img) {
  const std::vector<int> lut = he_lut(histogram(img, 0, 0, img.width, img.height), 255);
  Grey out = img;
  for (std::uint8_t& p : out.pixels) p = static_cast<std::uint8_t>(lut[p]);
  return out;
}

namespace {

// dcb|abcd|cba: the edge sample is not repeated.
int mirror(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
  }
  return i;
}

}  // namespace

int ahe_pixel(const Grey& img, int window, float clip, int x, int y) {
  int radius = window / 2;
  const int smaller = img.width < img.height ? img.width : img.height;
  if (radius >= smaller) radius = smaller - 1;
  const int side = 2 * radius + 1;
  const long long n = static_cast<long long>(side) * side;
  long long h[256] = {};
  for (int dy = -radius; dy <= radius; ++dy)
    for (int dx = -radius; dx <= radius; ++dx)
      ++h[img.at(mirror(x + dx, img.width), mirror(y + dy, img.height))];
  if (clip > 0.f) {  // OpenCV's clip limit and single-pass redistribution, literally
    long long limit = static_cast<long long>(static_cast<double>(clip) * static_cast<double>(n) / 256.0);
    if (limit < 1) limit = 1;
    long long clipped = 0;
    for (long long& c : h)
      if (c > limit) {
        clipped += c - limit;
        c = limit;
      }
    const long long batch = clipped / 256;
    long long residual = clipped - batch * 256;
    for (long long& c : h) c += batch;
    if (residual != 0) {
      const long long step = 256 / residual > 1 ? 256 / residual : 1;
      for (long long i = 0; i < 256 && residual > 0; i += step, --residual) ++h[i];
    }
  }
  const int v = img.at(x, y);
  long long cdf = 0;
  for (int u = 0; u <= v; ++u) cdf += h[u];
  return static_cast<int>((255 * cdf + n / 2) / n);
}

Grey ahe(const Grey& img, int window, float clip) {
  Grey out = img;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      out.pixels[static_cast<std::size_t>(y) * img.width + x] =
          static_cast<std::uint8_t>(ahe_pixel(img, window, clip, x, y));
  return out;
}

int limited_code(int e) { return 16 + (219 * e + 127) / 255; }

// ---- high bit depth ------------------------------------------------------------------------

std::vector<std::uint32_t> histogram_depth(const Wide& img, int depth, int x0, int y0, int x1,
                                           int y1) {
  std::vector<std::uint32_t> h(std::size_t{1} << depth, 0);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) ++h[static_cast<std::size_t>(img.at(x, y))];
  return h;
}

Wide he_depth(const Wide& img, int depth) {
  const int max_code = (1 << depth) - 1;
  const std::vector<int> lut = he_lut(histogram_depth(img, depth, 0, 0, img.width, img.height), max_code);
  Wide out = img;
  for (std::uint16_t& p : out.pixels) p = static_cast<std::uint16_t>(lut[p]);
  return out;
}

std::vector<Wide> he_temporal_depth(const std::vector<Wide>& frames, int depth, float a, int x0,
                                    int y0, int x1, int y1) {
  const int max_code = (1 << depth) - 1;
  std::vector<float> smoothed;
  std::vector<Wide> out;
  for (const Wide& f : frames) {
    const std::vector<std::uint32_t> h = histogram_depth(f, depth, x0, y0, x1, y1);
    if (smoothed.empty()) {
      smoothed.assign(h.begin(), h.end());
    } else {
      for (std::size_t i = 0; i < h.size(); ++i)
        smoothed[i] = std::fmaf(a, static_cast<float>(h[i]), (1.f - a) * smoothed[i]);
    }
    const std::vector<int> lut = he_lut_float(smoothed, max_code);
    Wide e = f;
    for (std::uint16_t& p : e.pixels) p = static_cast<std::uint16_t>(lut[p]);
    out.push_back(std::move(e));
  }
  return out;
}

int ahe_pixel_depth(const Wide& img, int depth, int window, float clip, int x, int y) {
  int radius = window / 2;
  const int smaller = img.width < img.height ? img.width : img.height;
  if (radius >= smaller) radius = smaller - 1;
  const int side = 2 * radius + 1;
  const long long n = static_cast<long long>(side) * side;
  const int bin_bits = depth < 12 ? depth : 12;
  const int drop = depth - bin_bits;
  const long long bins = 1LL << bin_bits;
  std::vector<long long> h(static_cast<std::size_t>(bins), 0);
  for (int dy = -radius; dy <= radius; ++dy)
    for (int dx = -radius; dx <= radius; ++dx)
      ++h[static_cast<std::size_t>(img.at(mirror(x + dx, img.width), mirror(y + dy, img.height)) >> drop)];
  if (clip > 0.f) {
    long long limit = static_cast<long long>(static_cast<double>(clip) * static_cast<double>(n) /
                                             static_cast<double>(bins));
    if (limit < 1) limit = 1;
    long long clipped = 0;
    for (long long& c : h)
      if (c > limit) {
        clipped += c - limit;
        c = limit;
      }
    const long long batch = clipped / bins;
    long long residual = clipped - batch * bins;
    for (long long& c : h) c += batch;
    if (residual != 0) {
      const long long step = bins / residual > 1 ? bins / residual : 1;
      for (long long i = 0; i < bins && residual > 0; i += step, --residual) ++h[static_cast<std::size_t>(i)];
    }
  }
  const long long v = img.at(x, y) >> drop;
  long long cdf = 0;
  for (long long u = 0; u <= v; ++u) cdf += h[static_cast<std::size_t>(u)];
  const long long max_code = (1LL << depth) - 1;
  return static_cast<int>((max_code * cdf + n / 2) / n);
}

Wide ahe_depth(const Wide& img, int depth, int window, float clip) {
  Wide out = img;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      out.pixels[static_cast<std::size_t>(y) * img.width + x] =
          static_cast<std::uint16_t>(ahe_pixel_depth(img, depth, window, clip, x, y));
  return out;
}

int limited_code_depth(int e, int depth) {
  const long long s = depth - 8;
  const long long max_code = (1LL << depth) - 1;
  return static_cast<int>((16LL << s) + ((219LL << s) * e + max_code / 2) / max_code);
}

}  // namespace hazefree::oracle
