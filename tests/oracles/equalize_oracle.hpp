// Naive references for global HE and sliding-window AHE/CLAHE (SPEC 4), written straight from the
// specification: a direct LUT build per histogram and, for AHE, a fresh window histogram per pixel
// with explicit reflect-101 indexing. Slow on purpose; no code shared with the product.
#pragma once

#include <cstdint>
#include <vector>

namespace hazefree::oracle {

// A single-channel 8-bit image, rows packed.
struct Grey {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;
  std::uint8_t at(int x, int y) const { return pixels[static_cast<std::size_t>(y) * width + x]; }
};

// equalizeHist's LUT for a histogram of `hist.size()` bins and codes 0..max_code
// (the identity for a single-valued histogram; 0 below the first non-empty bin).
std::vector<int> he_lut(const std::vector<std::uint32_t>& hist, int max_code);
// The same rule on a float histogram, sums taken left to right in float.
std::vector<int> he_lut_float(const std::vector<float>& hist, int max_code);

// Histogram of the pixels of `img` inside [x0, x1) x [y0, y1).
std::vector<std::uint32_t> histogram(const Grey& img, int x0, int y0, int x1, int y1);

// Global HE of a grey image with its own histogram.
Grey he(const Grey& img);

// Sliding-window AHE (clip 0) or CLAHE of a grey image, with the window reduction of SPEC 4.
Grey ahe(const Grey& img, int window, float clip);
// The same for the one pixel (x, y).
int ahe_pixel(const Grey& img, int window, float clip, int x, int y);

// The limited-range mapping of an equalized code.
int limited_code(int e);

// ---- high bit depth (SPEC 7) ----------------------------------------------------------------

// A single-channel image of depth 9..16, the value of each sample in the low bits, rows packed.
struct Wide {
  int width = 0, height = 0;
  std::vector<std::uint16_t> pixels;
  int at(int x, int y) const { return pixels[static_cast<std::size_t>(y) * width + x]; }
};

// 2^depth-bin histogram of the pixels inside [x0, x1) x [y0, y1).
std::vector<std::uint32_t> histogram_depth(const Wide& img, int depth, int x0, int y0, int x1,
                                           int y1);
// Global HE at depth: 2^depth bins, M = 2^depth - 1 for 255 (he_lut above with max_code M).
Wide he_depth(const Wide& img, int depth);
// he_temporal at depth over a sequence of frames (each frame's histogram inside [x0, x1) x
// [y0, y1), the smoothed histogram H_n = a h_n + (1 - a) H_{n-1}, H_1 = h_1, evaluated as
// fmaf(a, h_n, (1 - a) * H_{n-1}), the LUT from H_n by he_lut_float).
std::vector<Wide> he_temporal_depth(const std::vector<Wide>& frames, int depth, float a, int x0,
                                    int y0, int x1, int y1);

// Sliding-window AHE / CLAHE at depth: B = 2^min(depth, 12) bins, v in bin
// v >> (depth - min(depth, 12)), L = max(1, int(clip * n / B)), the excess spread over B bins,
// out = (M * cdf(bin(v)) + n / 2) / n. A fresh window histogram per pixel.
int ahe_pixel_depth(const Wide& img, int depth, int window, float clip, int x, int y);
Wide ahe_depth(const Wide& img, int depth, int window, float clip);

// The limited-range mapping at depth: (16 << s) + ((219 << s) e + M / 2) / M, s = depth - 8.
int limited_code_depth(int e, int depth);

}  // namespace hazefree::oracle
