#include "common/params.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace hazefree {

std::string to_string(Mode mode) {
  switch (mode) {
    case Mode::dcp: return "dcp";
    case Mode::he: return "he";
    case Mode::ahe: return "ahe";
  }
  return "?";
}

std::string to_string(ColorMode mode) {
  switch (mode) {
    case ColorMode::luma: return "luma";
    case ColorMode::rgb: return "rgb";
    case ColorMode::grey: return "grey";
    case ColorMode::rgb_bits: return "rgb-bits";
  }
  return "?";
}

std::string to_string(Backend backend) {
  switch (backend) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

std::optional<Mode> parse_mode(const std::string& text) {
  if (text == "dcp") return Mode::dcp;
  if (text == "he") return Mode::he;
  if (text == "ahe") return Mode::ahe;
  return std::nullopt;
}

std::optional<ColorMode> parse_color_mode(const std::string& text) {
  if (text == "luma") return ColorMode::luma;
  if (text == "rgb") return ColorMode::rgb;
  if (text == "grey" || text == "gray") return ColorMode::grey;
  if (text == "rgb-bits") return ColorMode::rgb_bits;
  return std::nullopt;
}

std::optional<Backend> parse_backend(const std::string& text) {
  if (text == "auto") return Backend::automatic;
  if (text == "cpu") return Backend::cpu;
  if (text == "cuda") return Backend::cuda;
  return std::nullopt;
}

namespace {

template <typename T>
[[noreturn]] void out_of_range(const char* key, T value, const char* range) {
  std::ostringstream os;
  os << key << " = " << value << " is outside " << range;
  throw std::invalid_argument(os.str());
}

void check_unit_open_closed(const char* key, float v) {  // (0, 1]
  if (!(v > 0.f && v <= 1.f)) out_of_range(key, v, "(0, 1]");
}

void check_non_negative(const char* key, float v) {
  if (!(v >= 0.f) || !std::isfinite(v)) out_of_range(key, v, "[0, inf)");
}

}  // namespace

void validate(const ProcessingConfig& c) {
  const DcpParams& d = c.dcp;
  if (d.patch_radius < 0 || d.patch_radius > 1000)
    out_of_range("dcp.patch_radius", d.patch_radius, "[0, 1000]");
  check_unit_open_closed("dcp.omega", d.omega);
  check_unit_open_closed("dcp.a_top_fraction", d.a_top_fraction);
  check_unit_open_closed("dcp.a_smoothing", d.a_smoothing);
  check_non_negative("dcp.a_max_step", d.a_max_step);
  check_non_negative("dcp.a_scene_cut", d.a_scene_cut);
  if (d.gf_radius < 1 || d.gf_radius > 4096) out_of_range("dcp.gf_radius", d.gf_radius, "[1, 4096]");
  if (!(d.gf_eps > 0.f) || !std::isfinite(d.gf_eps)) out_of_range("dcp.gf_eps", d.gf_eps, "(0, inf)");
  if (d.gf_subsample < 1 || d.gf_subsample > 64)
    out_of_range("dcp.gf_subsample", d.gf_subsample, "[1, 64]");
  check_non_negative("dcp.k_tolerance", d.k_tolerance);
  check_unit_open_closed("dcp.t0", d.t0);
  if (!(d.brightness >= 0.f && d.brightness <= 1.f))
    out_of_range("dcp.brightness", d.brightness, "[0, 1]");

  check_unit_open_closed("he.temporal", c.he.temporal);
  const Roi& r = c.he.roi;
  if (r.x < 0 || r.y < 0 || r.w < 0 || r.h < 0)
    throw std::invalid_argument("he.roi must have x, y >= 0 and w, h >= 0");

  if (c.ahe.window < 3 || c.ahe.window % 2 == 0 || c.ahe.window > 8191)
    out_of_range("ahe.window", c.ahe.window, "odd numbers in [3, 8191]");
  if (!(c.ahe.clip >= 0.f) || !std::isfinite(c.ahe.clip)) out_of_range("ahe.clip", c.ahe.clip, "[0, inf)");
  if (c.color == ColorMode::rgb_bits && c.mode != Mode::he)
    throw std::invalid_argument("color = rgb-bits is only available with mode = he");
  if (c.threads < 0 || c.threads > 1024) out_of_range("threads", c.threads, "[0, 1024]");
}

}  // namespace hazefree
