// The makers of an options table's rows (OptionRow of common/config_key.hpp), one set for every
// table: the processing parameters' (common/config_key.cpp) and the run's (pipeline/options.cpp).
// A row's field is reached by an accessor, `[](auto& target) -> auto& { return target.field; }`,
// which serves the setter and the getter alike.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/config_key.hpp"
#include "common/toml_value.hpp"

namespace hazefree {

// A key's description: name, help, kind, the modes whose processor uses it (none: the file run
// only), its command-line shortcut and what --help calls the shortcut's value (empty: made from
// the kind, see value_name()). The row's maker adds bounds, choices and the range text.
inline KeySpec spec_of(std::string name, std::string help, ConfigKind kind, std::vector<Mode> modes,
                       std::string flag = "", std::string value_name = "") {
  KeySpec s;
  s.name = std::move(name);
  s.help = std::move(help);
  s.kind = kind;
  s.modes = std::move(modes);
  s.flag = std::move(flag);
  s.value_name = std::move(value_name);
  return s;
}
inline KeySpec spec_of(std::string name, std::string help, ConfigKind kind, std::string flag = "",
                       std::string value_name = "") {
  return spec_of(std::move(name), std::move(help), kind, {}, std::move(flag), std::move(value_name));
}

// Words a numeric key takes besides a number, each with the value it sets ("auto" -> -1).
template <typename T>
using NumberWords = std::vector<std::pair<std::string, T>>;

// The rows of a table over `Target`, whose numeric bounds are checked as `check` says.
template <typename Target, BoundsCheck check>
struct OptionRows {
  using Row = OptionRow<Target>;

  // An integer or number field of type T; `words` are taken besides a number and written back as
  // themselves (a value with a word is refused as invalid, not as out of bounds, when outside).
  template <typename T, typename Access>
  static Row number(KeySpec spec, Bounds bounds, Access access, NumberWords<T> words = {}) {
    spec.bounds = bounds;
    for (const auto& w : words) spec.choices.push_back(w.first);
    spec.range = range_text(spec);
    Row row = with_spec(spec);
    row.set = [spec, access, words](Target& t, const std::string& text) {
      for (const auto& w : words) {
        if (text == w.first) {
          access(t) = w.second;
          return;
        }
      }
      T value{};
      if constexpr (std::is_integral_v<T>) {
        const long long n = parse_integer(spec, text);
        if (n < std::numeric_limits<T>::lowest() || n > std::numeric_limits<T>::max()) refuse_value(spec, text);
        value = static_cast<T>(n);
      } else {
        value = static_cast<T>(parse_number(spec, text));
        if (!std::isfinite(value)) refuse_value(spec, text);  // finite as a double, not as a float
      }
      if constexpr (check == BoundsCheck::when_set) {
        if (!words.empty() && !spec.bounds.contains(static_cast<double>(value))) refuse_value(spec, text);
        check_bounds(spec, static_cast<double>(value), text);
      }
      access(t) = value;
    };
    row.get = [access, words](const Target& t) {
      const T value = access(t);
      for (const auto& w : words)
        if (value == w.second) return toml_string(w.first);
      return fmt::format("{}", value);
    };
    row.number = [access](const Target& t) { return static_cast<double>(access(t)); };
    return row;
  }

  // An enumeration field: `parse` turns a choice's text into the value (nothing: refused), and
  // to_string() the value into its text.
  template <typename Enum, typename Parse, typename Access>
  static Row choice(KeySpec spec, std::vector<std::string> choices, Parse parse, Access access) {
    spec.choices = std::move(choices);
    spec.range = range_text(spec);
    Row row = with_spec(spec);
    row.set = [spec, parse, access](Target& t, const std::string& text) {
      const std::optional<Enum> value = parse(text);
      if (!value) refuse_value(spec, text);
      access(t) = *value;
    };
    row.get = [access](const Target& t) { return toml_string(to_string(access(t))); };
    return row;
  }

  template <typename Access>
  static Row boolean(KeySpec spec, Access access) {
    spec.range = range_text(spec);
    Row row = with_spec(spec);
    row.set = [spec, access](Target& t, const std::string& text) { access(t) = parse_boolean(spec, text); };
    row.get = [access](const Target& t) { return std::string(access(t) ? "true" : "false"); };
    return row;
  }

  // A string field taken as given; `accepted` says what it takes, in words.
  template <typename Access>
  static Row text(KeySpec spec, std::string accepted, Access access) {
    spec.accepted = std::move(accepted);
    spec.range = range_text(spec);
    Row row = with_spec(spec);
    row.set = [access](Target& t, const std::string& text) { access(t) = text; };
    row.get = [access](const Target& t) { return toml_string(access(t)); };
    return row;
  }

  // A row of its own kind: `set(spec, target, text)` parses the text (spec: the row's description,
  // range text included, for refuse_value), `get(target)` writes the value as TOML.
  template <typename Set, typename Get>
  static Row custom(KeySpec spec, Set set, Get get) {
    spec.range = range_text(spec);
    Row row = with_spec(spec);
    row.set = [spec, set](Target& t, const std::string& text) { set(spec, t, text); };
    row.get = std::move(get);
    return row;
  }

  // The row of a part of the target (the processing parameters of a run's options).
  template <typename Part, typename Access>
  static Row of_part(const OptionRow<Part>& part, Access access) {
    Row row = with_spec(part);
    row.table = part.table;
    row.set = [set = part.set, access](Target& t, const std::string& text) { set(access(t), text); };
    row.get = [get = part.get, access](const Target& t) { return get(access(t)); };
    if (part.number) row.number = [number = part.number, access](const Target& t) { return number(access(t)); };
    return row;
  }

  static Row with_spec(const KeySpec& spec) {
    Row row;
    static_cast<KeySpec&>(row) = spec;
    return row;
  }
};

}  // namespace hazefree
