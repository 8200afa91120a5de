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

}  // namespace hazefree::oracle
