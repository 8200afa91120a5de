#include "oracles/color_oracle.hpp"

#include <cmath>

namespace hazefree::oracle {
namespace {

void weights(Matrix m, double& kr, double& kb) {
  switch (m) {
    case Matrix::bt601: kr = 0.299; kb = 0.114; break;
    case Matrix::bt709: kr = 0.2126; kb = 0.0722; break;
    case Matrix::bt2020: kr = 0.2627; kb = 0.0593; break;
  }
}

}  // namespace

std::array<double, 3> rgb_to_ycbcr(double r, double g, double b, Matrix m, bool limited) {
  double kr, kb;
  weights(m, kr, kb);
  const double y = kr * r + (1 - kr - kb) * g + kb * b;
  const double pb = 0.5 * (b - y) / (1 - kb), pr = 0.5 * (r - y) / (1 - kr);
  if (limited) return {16 + 219 * y, 128 + 224 * pb, 128 + 224 * pr};
  return {255 * y, 128 + 255 * pb, 128 + 255 * pr};
}

std::array<double, 3> ycbcr_to_rgb(double y, double cb, double cr, Matrix m, bool limited) {
  double kr, kb;
  weights(m, kr, kb);
  const double yy = limited ? (y - 16) / 219 : y / 255;
  const double pb = (cb - 128) / (limited ? 224.0 : 255.0), pr = (cr - 128) / (limited ? 224.0 : 255.0);
  const double r = yy + 2 * (1 - kr) * pr;
  const double b = yy + 2 * (1 - kb) * pb;
  const double g = (yy - kr * r - kb * b) / (1 - kr - kb);
  return {r, g, b};
}

namespace {

struct DepthScales {
  double y_offset, y_scale, c_zero, c_scale;
};

DepthScales depth_scales(bool limited, int depth) {
  const double unit = std::ldexp(1.0, depth - 8);  // 2^s
  const double max = std::ldexp(1.0, depth) - 1.0;
  if (limited) return {16 * unit, 219 * unit, 128 * unit, 224 * unit};
  return {0.0, max, 128 * unit, max};
}

}  // namespace

std::array<double, 3> rgb_to_ycbcr_at(double r, double g, double b, Matrix m, bool limited,
                                      int depth) {
  double kr, kb;
  weights(m, kr, kb);
  const DepthScales s = depth_scales(limited, depth);
  const double y = kr * r + (1 - kr - kb) * g + kb * b;
  const double pb = 0.5 * (b - y) / (1 - kb), pr = 0.5 * (r - y) / (1 - kr);
  return {s.y_offset + s.y_scale * y, s.c_zero + s.c_scale * pb, s.c_zero + s.c_scale * pr};
}

std::array<double, 3> ycbcr_to_rgb_at(double y, double cb, double cr, Matrix m, bool limited,
                                      int depth) {
  double kr, kb;
  weights(m, kr, kb);
  const DepthScales s = depth_scales(limited, depth);
  const double yy = (y - s.y_offset) / s.y_scale;
  const double pb = (cb - s.c_zero) / s.c_scale, pr = (cr - s.c_zero) / s.c_scale;
  const double r = yy + 2 * (1 - kr) * pr;
  const double b = yy + 2 * (1 - kb) * pb;
  const double g = (yy - kr * r - kb * b) / (1 - kr - kb);
  return {r, g, b};
}

}  // namespace hazefree::oracle
