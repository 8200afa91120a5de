#include "common/params.hpp"

#include "common/config_key.hpp"

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

void validate(const ProcessingConfig& c) {
  // Each key's bounds, as the options table shows them (common/config_key).
  for (const ProcessingKey& key : processing_keys())
    if (key.number) check_bounds(key, key.number(c), key.get(c));
  const Roi& r = c.he.roi;
  if (r.x < 0 || r.y < 0 || r.w < 0 || r.h < 0)
    throw KeyError("he.roi", "he.roi must have x, y >= 0 and w, h >= 0");
  if (c.color == ColorMode::rgb_bits && c.mode != Mode::he)
    throw KeyError("color", "color = rgb-bits is only available with mode = he");
}

}  // namespace hazefree
