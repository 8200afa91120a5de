#include "filter_keys.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace hazefree_frei0r {
namespace {

// mode, backend and threads choose the processor itself (each filter is one mode on the backend
// auto): no filter parameters.
bool chooses_the_processor(const std::string& key) { return key == "mode" || key == "backend" || key == "threads"; }

ParamType param_type(hazefree::ConfigKeyInfo::Kind kind) {
  switch (kind) {
    case hazefree::ConfigKeyInfo::Kind::integer:
    case hazefree::ConfigKeyInfo::Kind::number: return ParamType::number;
    case hazefree::ConfigKeyInfo::Kind::boolean: return ParamType::boolean;
    case hazefree::ConfigKeyInfo::Kind::choice:
    case hazefree::ConfigKeyInfo::Kind::text: break;
  }
  return ParamType::text;
}

}  // namespace

std::vector<FilterParam> filter_params(const std::string& mode) {
  std::vector<FilterParam> own;
  std::vector<FilterParam> common;
  const std::string prefix = mode + ".";
  for (const hazefree::ConfigKeyInfo& key : hazefree::configuration_keys()) {
    if (!key.processor_key) continue;
    FilterParam param;
    param.key = key;
    param.type = param_type(key.kind);
    if (key.name.rfind(prefix, 0) == 0) {
      param.name = key.name.substr(prefix.size());
      own.push_back(std::move(param));
    } else if (key.name.find('.') == std::string::npos && !chooses_the_processor(key.name) &&
               std::find(key.modes.begin(), key.modes.end(), mode) != key.modes.end()) {
      // A common key (color) that this mode's processor reads, as the options table says.
      param.name = key.name;
      common.push_back(std::move(param));
    }
  }
  own.insert(own.end(), common.begin(), common.end());
  return own;
}

std::optional<std::string> text_of_number(const FilterParam& param, double value, std::string& why) {
  if (!std::isfinite(value)) {
    why = "not a finite number";
    return std::nullopt;
  }
  switch (param.key.kind) {
    case hazefree::ConfigKeyInfo::Kind::boolean: return std::string(value >= 0.5 ? "true" : "false");
    case hazefree::ConfigKeyInfo::Kind::integer: {
      if (value != std::floor(value) || std::fabs(value) > 1e15) {
        why = "not a whole number";
        return std::nullopt;
      }
      char text[32];
      std::snprintf(text, sizeof text, "%.0f", value);
      return std::string(text);
    }
    case hazefree::ConfigKeyInfo::Kind::number: {
      // The shortest text that reads back as the same double.
      char text[32];
      for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, value);
        if (std::strtod(text, nullptr) == value) break;
      }
      return std::string(text);
    }
    case hazefree::ConfigKeyInfo::Kind::choice:
    case hazefree::ConfigKeyInfo::Kind::text: break;
  }
  why = "a number for a text parameter";
  return std::nullopt;
}

double number_of_text(const FilterParam& param, const std::string& text) {
  if (param.key.kind == hazefree::ConfigKeyInfo::Kind::boolean) return text == "true" ? 1.0 : 0.0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != nullptr && *end == '/') return value / std::strtod(end + 1, nullptr);
  return value;
}

}  // namespace hazefree_frei0r
