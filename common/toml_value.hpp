// TOML values to and from the text the options' rows parse ("0.9", "true", "luma"), by toml++:
// the one place where a preset's values become text, for the run's options (pipeline/options),
// the encoder options' table and the service's [[stream]] tables (serve/service_config).
#pragma once

#include <optional>
#include <string>

#include <toml++/toml.h>

#include "common/config_key.hpp"

namespace hazefree {

// A TOML basic string by toml++'s own writer: quotes, backslashes and control characters escaped,
// UTF-8 kept as it is, so that the text parses back to the same value (--print-config, a job's
// settings). Text that is not UTF-8 has no TOML form: the writer escapes its bytes as the code
// points of the same numbers, which read back as other text.
std::string toml_string(const std::string& text);

// A TOML value as the text a row's setter parses: a string as it is, an integer, a float or a
// boolean as its shortest text ("0.9", "16", "true"), an array as its elements' texts joined by
// commas ("10,20,300,200"). Nothing (nullopt) for a table, a date or a time, or an array holding
// one.
std::optional<std::string> toml_value_text(const toml::node& node);

// A preset's value of the key `spec` as the text its setter parses (toml_value_text), when its
// TOML type is one the key takes: a boolean key a boolean; a choice or text key a string (a list
// key such as he.roi also an array of integers); an integer key an integer (a string where the
// key takes words: "auto"); a number key an integer or a float, or a string (fractions such as
// "5/255", times, words). Throws KeyError "stats = 5: a TOML integer; the key takes a string (a
// file name)" otherwise.
std::string key_value_text(const KeySpec& spec, const toml::node& node);

// A TOML file read by toml++, or one line naming it: "PATH: No such file or directory" (or the
// cause it could not be read), "PATH:LINE:COLUMN: what is wrong" for text that is not TOML.
// Throws std::runtime_error with that line.
toml::table read_toml_file(const std::string& path);

}  // namespace hazefree
