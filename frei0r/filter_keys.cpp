#include "filter_keys.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace hazefree_frei0r {
namespace {

// Common processing keys (no section prefix) and the modes whose processor reads them. mode,
// backend and threads choose the processor itself and are no filter parameters.
const std::pair<const char*, const char*> kModeCommonKeys[] = {
    {"color", "he ahe"},
};

bool reads_common_key(const std::string& mode, const std::string& key) {
  for (const auto& [name, modes] : kModeCommonKeys) {
    if (key != name) continue;
    const std::string list = std::string(" ") + modes + " ";
    return list.find(" " + mode + " ") != std::string::npos;
  }
  return false;
}

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
    } else if (key.name.find('.') == std::string::npos && reads_common_key(mode, key.name)) {
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
