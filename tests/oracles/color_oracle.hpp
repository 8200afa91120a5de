// Reference YCbCr <-> RGB in double, from the BT.601 / BT.709 / BT.2020 definitions (luma weights
// Kr, Kb; limited range Y 16..235, C 16..240; full range 0..255). Shares no code with the product.
#pragma once

#include <array>

namespace hazefree::oracle {

enum class Matrix { bt601, bt709, bt2020 };

// R, G, B in [0,1] -> Y, Cb, Cr codes (unrounded).
std::array<double, 3> rgb_to_ycbcr(double r, double g, double b, Matrix m, bool limited);
// Y, Cb, Cr codes -> R, G, B (unclamped, [0,1] scale).
std::array<double, 3> ycbcr_to_rgb(double y, double cb, double cr, Matrix m, bool limited);

// The same at depth d (SPEC 7), s = d - 8, M = 2^d - 1: limited range Y = (16 << s) +
// (219 << s) Y', C = (128 << s) + (224 << s) C'; full range Y = M Y', C = 2^(d - 1) + M C'.
std::array<double, 3> rgb_to_ycbcr_at(double r, double g, double b, Matrix m, bool limited,
                                      int depth);
std::array<double, 3> ycbcr_to_rgb_at(double y, double cb, double cr, Matrix m, bool limited,
                                      int depth);

}  // namespace hazefree::oracle
