// Image quality metrics for the tests: PSNR and SSIM (Wang et al. 2004: 11x11 Gaussian window,
// sigma 1.5, K1 = 0.01, K2 = 0.03, borders by clipping the window), on [0,1] planes.
#pragma once

#include <array>

#include "oracles/dehaze_oracle.hpp"

namespace hazefree::oracle {

using RgbD = std::array<Grid<double>, 3>;

// PSNR in dB over the three channels (peak 1).
double psnr(const RgbD& a, const RgbD& b);
// Mean SSIM over the three channels.
double ssim(const RgbD& a, const RgbD& b);

}  // namespace hazefree::oracle
