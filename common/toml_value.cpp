#include "common/toml_value.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace hazefree {

std::string toml_string(const std::string& text) {
  std::ostringstream out;
  out << toml::toml_formatter{toml::value<std::string>{text}, toml::format_flags::allow_unicode_strings};
  return out.str();
}

std::optional<std::string> toml_value_text(const toml::node& node) {
  if (const toml::array* array = node.as_array()) {
    std::string joined;
    for (const toml::node& element : *array) {
      const std::optional<std::string> text = toml_value_text(element);
      if (!text) return std::nullopt;
      joined += (joined.empty() ? "" : ",") + *text;
    }
    return joined;
  }
  // Numbers by fmt's shortest form, not toml++'s writer: that one writes 0.9 as
  // 0.90000000000000002 (toml++ 3.3 with GCC) and keeps 0x10 as written, which the setters refuse.
  return node.visit([](const auto& value) -> std::optional<std::string> {
    using Value = std::decay_t<decltype(value)>;
    if constexpr (toml::is_string<Value>) return value.get();
    else if constexpr (toml::is_number<Value> || toml::is_boolean<Value>) return fmt::format("{}", value.get());
    else return std::nullopt;  // a table, a date, a time
  });
}

namespace {

const char* toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::array: return "array";
    case toml::node_type::table: return "table";
    default: return "date or time";
  }
}

}  // namespace

std::string key_value_text(const KeySpec& spec, const toml::node& node) {
  bool taken = false;
  std::string takes;
  switch (spec.kind) {
    case ConfigKind::boolean:
      taken = node.is_boolean();
      takes = "a boolean (true or false)";
      break;
    case ConfigKind::integer:
      taken = node.is_integer() || (node.is_string() && !spec.choices.empty());
      takes = spec.choices.empty() ? "an integer: " + spec.range : "an integer or a string: " + spec.range;
      break;
    case ConfigKind::number:
      taken = node.is_number() || node.is_string();
      takes = "a number: " + spec.range;
      break;
    case ConfigKind::choice: {
      // A choice that is a number (output.depth's 10) may be written as one.
      const std::optional<std::string> number = node.is_integer() ? toml_value_text(node) : std::nullopt;
      taken = node.is_string() ||
              (number && std::find(spec.choices.begin(), spec.choices.end(), *number) != spec.choices.end());
      takes = "a string: " + spec.range;
      break;
    }
    case ConfigKind::text:
      taken = node.is_string() || (spec.list && node.is_array());
      takes = spec.list ? "a string or an array of integers: " + spec.range : "a string (" + spec.range + ")";
      break;
  }
  const std::optional<std::string> text = taken ? toml_value_text(node) : std::nullopt;
  if (text) return *text;
  std::optional<std::string> shown = toml_value_text(node);
  if (shown && node.is_string()) shown = toml_string(*shown);
  const std::string given = shown && !node.is_array() ? fmt::format("{} = {}", spec.name, *shown) : spec.name;
  throw KeyError(spec.name, fmt::format("{}: a TOML {}; the key takes {}", given, toml_type_name(node), takes));
}

toml::table read_toml_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(fmt::format("{}: is a folder, not a TOML file", path));
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(fmt::format("{}: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw std::runtime_error(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  try {
    return toml::parse(text.str(), path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    const std::string description(e.description());
    // `input = "..."` then `input.timeout = 2` in one table: the second is TOML's dotted key.
    const char* hint = description.find("dotted key") != std::string::npos
                           ? " (a configuration key with a dot is quoted in a table: \"input.timeout\" = 2)"
                           : "";
    throw std::runtime_error(fmt::format("{}:{}:{}: {}{}", path, where.line, where.column, description, hint));
  }
}

}  // namespace hazefree
