#include "common/config_key.hpp"

#include "common/option_rows.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace hazefree {

bool Bounds::contains(double value) const {
  if (std::isnan(value)) return false;
  if (minimum_excluded ? !(value > minimum) : !(value >= minimum)) return false;
  if (maximum_excluded ? !(value < maximum) : !(value <= maximum)) return false;
  if (odd && std::fmod(std::fabs(value), 2.0) != 1.0) return false;
  return true;
}

std::string Bounds::text() const {
  auto end = [](double v) {
    if (std::isinf(v)) return std::string(v < 0 ? "-inf" : "inf");
    return fmt::format("{}", v);
  };
  const std::string interval = fmt::format("{}{}, {}{}", minimum_excluded ? '(' : '[', end(minimum), end(maximum),
                                           maximum_excluded ? ')' : ']');
  return odd ? "odd numbers in " + interval : interval;
}

namespace {

// `first` (when not empty), then `words`, each after `separator`: "dcp, he, ahe", "N|auto".
std::string joined(std::string first, const std::vector<std::string>& words, const char* separator) {
  for (const std::string& w : words) first += (first.empty() ? "" : separator) + w;
  return first;
}

}  // namespace

std::string range_text(const KeySpec& spec) {
  switch (spec.kind) {
    case ConfigKind::boolean: return kBooleanWords;
    case ConfigKind::choice: return joined("", spec.choices, ", ");
    case ConfigKind::integer:
    case ConfigKind::number:
      return spec.choices.empty() ? spec.bounds.text() : joined("", spec.choices, ", ") + " or " + spec.bounds.text();
    case ConfigKind::text: break;
  }
  return spec.accepted;
}

std::string value_name(const KeySpec& spec) {
  if (!spec.value_name.empty()) return spec.value_name;
  switch (spec.kind) {
    case ConfigKind::boolean: return "";
    case ConfigKind::choice: return joined("", spec.choices, "|");
    case ConfigKind::integer: return joined("N", spec.choices, "|");
    case ConfigKind::number: return joined("X", spec.choices, "|");
    case ConfigKind::text: break;
  }
  return "VALUE";
}

void refuse_value(const KeySpec& spec, const std::string& text) {
  throw KeyError(spec.name, fmt::format("{}: invalid value '{}' (accepted: {})", spec.name, text, spec.range));
}

long long parse_integer(const KeySpec& spec, const std::string& text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) refuse_value(spec, text);
  return value;
}

double parse_number(const KeySpec& spec, const std::string& text) {
  // "5/255" as well as plain decimals: presets read better that way.
  const auto slash = text.find('/');
  double numerator = 0, denominator = 1;
  try {
    std::size_t used = 0;
    numerator = std::stod(text.substr(0, slash), &used);
    if (used != (slash == std::string::npos ? text.size() : slash)) refuse_value(spec, text);
    if (slash != std::string::npos) {
      const std::string rest = text.substr(slash + 1);
      denominator = std::stod(rest, &used);
      if (used != rest.size() || denominator == 0) refuse_value(spec, text);
    }
  } catch (const std::logic_error& e) {
    if (dynamic_cast<const KeyError*>(&e)) throw;
    refuse_value(spec, text);
  }
  const double value = numerator / denominator;
  if (!std::isfinite(value)) refuse_value(spec, text);
  return value;
}

bool parse_boolean(const KeySpec& spec, const std::string& text) {
  std::string word = text;
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (word == "true" || word == "1" || word == "yes" || word == "on") return true;
  if (word == "false" || word == "0" || word == "no" || word == "off") return false;
  refuse_value(spec, text);
}

void check_bounds(const KeySpec& spec, double value, const std::string& text) {
  if (!spec.bounds.contains(value))
    throw KeyError(spec.name, spec.choices.empty()
                                  ? fmt::format("{} = {} is outside {}", spec.name, text, spec.range)
                                  : fmt::format("{} = {} is outside {} (also accepted: {})", spec.name, text,
                                                spec.bounds.text(), fmt::join(spec.choices, ", ")));
}

namespace {

const std::vector<Mode> kAllModes = {Mode::dcp, Mode::he, Mode::ahe};

// The bounds are checked by validate(), over the whole configuration.
using Rows = OptionRows<ProcessingConfig, BoundsCheck::by_validate>;

Roi parse_roi(const KeySpec& spec, const std::string& text) {
  if (text.empty()) return Roi{};
  std::vector<int> v;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    int value = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || ptr != part.data() + part.size()) refuse_value(spec, text);
    v.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (v.size() != 4 || v[0] < 0 || v[1] < 0 || v[2] <= 0 || v[3] <= 0) refuse_value(spec, text);
  return Roi{v[0], v[1], v[2], v[3]};
}

std::vector<ProcessingKey> make_processing_keys() {
  using K = ConfigKind;
  const std::vector<Mode> dcp = {Mode::dcp}, he = {Mode::he}, ahe = {Mode::ahe}, equalize = {Mode::he, Mode::ahe};
  std::vector<ProcessingKey> k;
  k.push_back(Rows::choice<Mode>(
      spec_of("mode", "algorithm: dark channel prior dehazing, global HE, sliding-window AHE/CLAHE", K::choice, kAllModes,
              "-m,--mode"),
      {"dcp", "he", "ahe"}, parse_mode, [](auto& c) -> auto& { return c.mode; }));
  k.push_back(Rows::choice<ColorMode>(
      spec_of("color", "what he/ahe equalize: the Y plane, R,G,B each, a grey image, or the 12-bit BITS index (he only)",
              K::choice, equalize, "--color"),
      {"luma", "rgb", "grey", "rgb-bits"}, parse_color_mode, [](auto& c) -> auto& { return c.color; }));
  k.push_back(Rows::choice<Backend>(
      spec_of("backend", "where frames are processed (auto: CUDA when a usable GPU is present)", K::choice, kAllModes,
              "-b,--backend"),
      {"auto", "cuda", "cpu"}, parse_backend, [](auto& c) -> auto& { return c.backend; }));
  k.push_back(Rows::number<int>(spec_of("threads", "CPU threads for the CPU backend (0 = all cores, 1 = sequential)",
                                            K::integer, kAllModes, "--threads"),
                                    Bounds::closed(0, 1024), [](auto& c) -> auto& { return c.threads; }));

  k.push_back(Rows::number<int>(
      spec_of("dcp.patch_radius", "dark channel patch radius r (window 2r+1), pixels", K::integer, dcp),
      Bounds::closed(0, 1000), [](auto& c) -> auto& { return c.dcp.patch_radius; }));
  k.push_back(Rows::number<float>(spec_of("dcp.omega", "fraction of the haze removed", K::number, dcp),
                                      Bounds::open_closed(0, 1), [](auto& c) -> auto& { return c.dcp.omega; }));
  k.push_back(Rows::number<float>(
      spec_of("dcp.a_top_fraction", "fraction of 32x32 blocks averaged for the atmospheric light", K::number, dcp),
      Bounds::open_closed(0, 1), [](auto& c) -> auto& { return c.dcp.a_top_fraction; }));
  k.push_back(Rows::number<float>(
      spec_of("dcp.a_smoothing", "step of the atmospheric light towards each new estimate", K::number, dcp),
      Bounds::open_closed(0, 1), [](auto& c) -> auto& { return c.dcp.a_smoothing; }));
  k.push_back(Rows::number<float>(
      spec_of("dcp.a_max_step", "largest change of the atmospheric light per frame and channel (1 = full scale)",
              K::number, dcp),
      Bounds::at_least(0), [](auto& c) -> auto& { return c.dcp.a_max_step; }));
  k.push_back(Rows::number<float>(
      spec_of("dcp.a_scene_cut", "mean change of the estimate that counts as a scene cut (resets the light)", K::number,
              dcp),
      Bounds::at_least(0), [](auto& c) -> auto& { return c.dcp.a_scene_cut; }));
  k.push_back(Rows::number<int>(spec_of("dcp.gf_radius", "guided filter radius, pixels", K::integer, dcp),
                                    Bounds::closed(1, 4096), [](auto& c) -> auto& { return c.dcp.gf_radius; }));
  k.push_back(Rows::number<float>(
      spec_of("dcp.gf_eps", "guided filter regulariser (edge keeping: smaller keeps more)", K::number, dcp),
      Bounds::above(0), [](auto& c) -> auto& { return c.dcp.gf_eps; }));
  k.push_back(Rows::number<int>(
      spec_of("dcp.gf_subsample", "fast guided filter subsampling factor (1 = exact)", K::integer, dcp),
      Bounds::closed(1, 64), [](auto& c) -> auto& { return c.dcp.gf_subsample; }));
  k.push_back(Rows::number<float>(spec_of("dcp.k_tolerance", "bright-region tolerance K (0 = off)", K::number, dcp),
                                      Bounds::at_least(0), [](auto& c) -> auto& { return c.dcp.k_tolerance; }));
  k.push_back(Rows::number<float>(spec_of("dcp.t0", "lower bound of the transmission in the recovery", K::number, dcp),
                                      Bounds::open_closed(0, 1), [](auto& c) -> auto& { return c.dcp.t0; }));
  k.push_back(Rows::number<float>(spec_of("dcp.brightness", "brightness boost B of J + (1 - J) J B", K::number, dcp),
                                      Bounds::closed(0, 1), [](auto& c) -> auto& { return c.dcp.brightness; }));
  k.push_back(Rows::boolean(
      spec_of("dcp.auto_strength",
              "auto defog: omega and brightness follow the frame's haze index (none on a clear scene, the "
              "configured values in dense haze)",
              K::boolean, dcp, "--auto-strength"),
      [](auto& c) -> auto& { return c.dcp.auto_strength; }));

  k.push_back(Rows::number<float>(
      spec_of("he.temporal", "temporal smoothing of the histogram for video (1 = off)", K::number, he),
      Bounds::open_closed(0, 1), [](auto& c) -> auto& { return c.he.temporal; }));
  {
    KeySpec roi = spec_of("he.roi",
                          "histogram only inside this rectangle x,y,w,h (empty: whole frame); the LUT applies to the "
                          "whole frame",
                          K::text, he);
    roi.accepted = "x,y,w,h or empty";
    roi.list = true;
    KeySpec refused = roi;  // the message of a malformed rectangle says more than the range
    refused.range = "x,y,w,h with x,y >= 0 and w,h > 0 (or empty for the whole frame)";
    k.push_back(Rows::custom(
        roi,
        [refused](const KeySpec&, ProcessingConfig& c, const std::string& text) { c.he.roi = parse_roi(refused, text); },
        [](const ProcessingConfig& c) {
          const Roi& r = c.he.roi;
          return toml_string(r.empty() ? std::string() : fmt::format("{},{},{},{}", r.x, r.y, r.w, r.h));
        }));
  }
  {
    Bounds window = Bounds::closed(3, 8191);
    window.odd = true;
    k.push_back(Rows::number<int>(spec_of("ahe.window", "AHE window side, pixels", K::integer, ahe, "--window"), window,
                                      [](auto& c) -> auto& { return c.ahe.window; }));
  }
  k.push_back(Rows::number<float>(
      spec_of("ahe.clip", "CLAHE clip limit in OpenCV units (0 = plain AHE)", K::number, ahe, "--clip"),
      Bounds::at_least(0), [](auto& c) -> auto& { return c.ahe.clip; }));
  return k;
}

}  // namespace

const std::vector<ProcessingKey>& processing_keys() {
  static const std::vector<ProcessingKey> keys = make_processing_keys();
  return keys;
}

std::string unused_key_warning(const ProcessingConfig& config) {
  if (!config.dcp.auto_strength || config.mode == Mode::dcp) return {};
  return fmt::format("dcp.auto_strength (--auto-strength) follows the haze index with DCP's strength; --mode {} has "
                     "none, and runs as without it",
                     to_string(config.mode));
}

}  // namespace hazefree
