// The parameters of the frei0r filters (SPEC 11), derived from the public options table
// (hazefree::configuration_keys()): which keys a mode's processor uses, their order, their frei0r
// type, and the translation of a host's value into the key's text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <hazefree/hazefree.hpp>

namespace hazefree_frei0r {

// How a key's value travels through frei0r (the values of frei0r.h's F0R_PARAM_*).
enum class ParamType { boolean = 0, number = 1, text = 4 };

struct FilterParam {
  hazefree::ConfigKeyInfo key;  // the options table's entry
  std::string name;             // the key's last part: "window" for ahe.window
  ParamType type = ParamType::number;
};

// The keys the processor of `mode` (dcp, he, ahe) uses, in the table's order: the keys of its
// own section (dcp.*, he.*, ahe.*) first, then the common keys the table says that mode reads
// (ConfigKeyInfo::modes: color for he and ahe). mode, backend and threads are not parameters (the
// filter is one mode; backend auto).
std::vector<FilterParam> filter_params(const std::string& mode);

// A double from the host -> the key's text ("127", "0.9", "true"), or nullopt with `why` set
// when it is no value of that kind (a fraction for an integer key, NaN).
std::optional<std::string> text_of_number(const FilterParam& param, double value, std::string& why);

// The key's text -> the double a host reads back (booleans 0 or 1; "5/255" as a quotient).
double number_of_text(const FilterParam& param, const std::string& text);

}  // namespace hazefree_frei0r
