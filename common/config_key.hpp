// The typed description of one configuration key: its kind, numeric bounds (open or closed
// ends), choices, help, the modes whose processor uses it and its command-line shortcut; and
// OptionRow, that description with a setter and a getter over a target. The options table
// (pipeline/options) is a list of rows; from a row come the range text, the checks, the shortcut
// flags, --print-config, the library's ConfigKeyInfo and, through it, the Python keywords and the
// GStreamer properties. The rows of the processing parameters are here, beside their structs, so
// that validate() checks the very bounds the table shows.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/params.hpp"

namespace hazefree {

// The type of a key's value.
enum class ConfigKind : std::uint8_t { integer, number, boolean, choice, text };

// The interval of an integer or number key; an excluded end is itself refused.
struct Bounds {
  double minimum = -std::numeric_limits<double>::infinity();
  double maximum = std::numeric_limits<double>::infinity();
  bool minimum_excluded = false;
  bool maximum_excluded = false;
  bool odd = false;  // integers: odd values only

  bool contains(double value) const;  // false for NaN
  // "[0, 1000]", "(0, inf)", "odd numbers in [3, 8191]".
  std::string text() const;

  static Bounds closed(double minimum, double maximum) { return {minimum, maximum, false, false, false}; }
  static Bounds open_closed(double minimum, double maximum) { return {minimum, maximum, true, false, false}; }
  static Bounds at_least(double minimum) {
    return {minimum, std::numeric_limits<double>::infinity(), false, true, false};
  }
  static Bounds above(double minimum) { return {minimum, std::numeric_limits<double>::infinity(), true, true, false}; }
};

// A bad value of one key (out of its bounds, malformed, or against another key): what() is one
// line naming the key and the accepted values, key() the key.
class KeyError : public std::invalid_argument {
 public:
  KeyError(std::string key, const std::string& message) : std::invalid_argument(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

struct KeySpec {
  std::string name;  // "dcp.omega"
  std::string help;  // effect and unit
  ConfigKind kind = ConfigKind::text;
  Bounds bounds;     // integer and number keys
  // Choice keys: the accepted values. Integer and number keys: words taken besides a number
  // ("auto", "unlimited"); the key's ConfigKeyInfo is then of kind text.
  std::vector<std::string> choices;
  std::string accepted;     // text keys: the accepted values in words ("WxH")
  std::vector<Mode> modes;  // the modes whose processor uses the key; empty: the file run only
  std::string flag;         // command-line shortcut ("-m,--mode", "--window"); empty: none
  // What the shortcut's value is called in --help ("FILE", "TIME"); empty: made from the kind by
  // value_name() (text keys with a shortcut name theirs).
  std::string value_name;
  std::string range;        // the accepted values as text, made from the above by range_text()
  bool list = false;        // text keys: a TOML array of integers is taken too, joined by commas (he.roi)
};

// What a boolean key accepts, as --print-config, the man page and /api/keys say it: the one list
// parse_boolean() takes.
inline constexpr const char* kBooleanWords = "true, false, yes, no, on, off, 1, 0 in any letter case";

// "(0, 1]", "dcp, he, ahe", kBooleanWords, "auto, unlimited or [0, 1000000]", "WxH".
std::string range_text(const KeySpec& spec);
// The value of the key's shortcut as --help names it: the row's own value_name ("FILE", "TIME"),
// else from its kind: "N" for an integer, "X" for a number (with the words taken besides a number,
// "N|auto|unlimited"), the choices ("dcp|he|ahe"), "VALUE" for text; empty for a boolean (a flag
// takes none).
std::string value_name(const KeySpec& spec);

// Text -> value for a key, as TOML, --set, the library and the properties give it; each throws
// KeyError naming the key and the accepted values when the text is not one. Numbers take
// fractions ("5/255"). The bounds are not checked here (check_bounds).
long long parse_integer(const KeySpec& spec, const std::string& text);
double parse_number(const KeySpec& spec, const std::string& text);
bool parse_boolean(const KeySpec& spec, const std::string& text);
// Throws KeyError "key = text is outside range" when `value` is not in the key's bounds.
void check_bounds(const KeySpec& spec, double value, const std::string& text);
[[noreturn]] void refuse_value(const KeySpec& spec, const std::string& text);

// BoundsCheck says when a numeric row's bounds are checked: as its value is set (a run's
// options), or later over the whole target (the processing parameters: validate(), so that a
// preset's value may be replaced by a flag before anything is refused).
enum class BoundsCheck : std::uint8_t { when_set, by_validate };

// One row of an options table over `Target` (ProcessingConfig here, a run's options in
// pipeline/options.hpp, as FFmpeg's AVOption rows over a context): the key's description, its
// value as text (the TOML form) and as a number. The rows are made by common/option_rows.hpp.
template <typename Target>
struct OptionRow : KeySpec {
  // A table of key = value pairs (output.encoder_options): each setter call adds one "key=value"
  // (an empty text clears them, "{ k = "v", ... }" replaces them); TOML writes it as a table,
  // the command line's flag is repeatable.
  bool table = false;
  std::function<void(Target&, const std::string&)> set;  // parses; throws KeyError naming the key
  std::function<std::string(const Target&)> get;         // as written in TOML
  std::function<double(const Target&)> number;           // integer and number keys
};

// A key of ProcessingConfig; its bounds are checked by validate().
using ProcessingKey = OptionRow<ProcessingConfig>;

// mode, color, backend, threads, dcp.*, he.*, ahe.*, in the table's order.
const std::vector<ProcessingKey>& processing_keys();

// The warning for a key that the configuration's mode does not use (dcp.auto_strength outside
// dcp), one line as the command line prints it, the service's PATCH answers it and Python warns
// it; empty where there is none.
std::string unused_key_warning(const ProcessingConfig& config);

}  // namespace hazefree
