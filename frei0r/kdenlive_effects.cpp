// Writes the Kdenlive effect descriptions of the frei0r filters (one XML per filter) from the
// options table: each parameter with its natural range and default, since an editor that builds
// its controls from the plugin alone shows frei0r's [0, 1] sliders (SPEC 11).
//   hazefree-kdenlive-effects <folder> name|mode|title|description ...
//     -> <folder>/frei0r_<name>.xml for each filter (frei0r/CMakeLists.txt holds the list)
// A key without an upper bound gets a slider up to max(10 x default, 10); text keys that are not
// choices (he.roi) have no control: they keep the table's default in the editor.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "filter_keys.hpp"

namespace {

struct Filter {
  std::string name;
  std::string mode;
  std::string title;
  std::string description;
};

// "name|mode|title|description"; false when it has not four fields.
bool parse_filter(const std::string& text, Filter& filter) {
  std::vector<std::string> fields(1);
  for (const char c : text) {
    if (c == '|') fields.emplace_back();
    else fields.back() += c;
  }
  if (fields.size() != 4 || fields[0].empty() || fields[1].empty()) return false;
  filter = Filter{fields[0], fields[1], fields[2], fields[3]};
  return true;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

// "patch_radius" -> "Patch radius"
std::string title_of(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (c == '_') c = ' ';
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

// The choices the mode takes (color = rgb-bits is for he only).
std::vector<std::string> choices_of(const std::string& mode, const hazefree::ConfigKeyInfo& key) {
  std::vector<std::string> out;
  for (const std::string& c : key.choices) {
    try {
      hazefree::validate_options({{"mode", mode}, {key.name, c}});
      out.push_back(c);
    } catch (const hazefree::OptionError&) {
    }
  }
  return out;
}

void write_parameter(std::ostream& out, const std::string& mode, const hazefree_frei0r::FilterParam& p) {
  using Kind = hazefree::ConfigKeyInfo::Kind;
  const hazefree::ConfigKeyInfo& key = p.key;
  const std::string name = escaped(p.name);
  const std::string comment = "    <comment>" + escaped(key.help + " (" + key.name + ": " + key.range + ")") + "</comment>\n";
  if (key.kind == Kind::integer || key.kind == Kind::number) {
    const double value = hazefree_frei0r::number_of_text(p, key.default_value);
    double minimum = std::isfinite(key.minimum) ? key.minimum : 0.0;
    double maximum = std::isfinite(key.maximum) ? key.maximum : std::fmax(10.0 * value, 10.0);
    int decimals = 0;
    if (key.kind == Kind::number) {
      decimals = value != 0.0 && std::fabs(value) < 0.1 ? 6 : 3;
      // Kdenlive's spin boxes step by 10^-decimals: an open end moves in by one step.
      const double step = std::pow(10.0, -decimals);
      if (key.minimum_excluded && std::isfinite(key.minimum)) minimum += step;
      if (key.maximum_excluded && std::isfinite(key.maximum)) maximum -= step;
    }
    out << "  <parameter type=\"constant\" name=\"" << name << "\" default=\"" << escaped(key.default_value.find('/') == std::string::npos ? key.default_value : number(value))
        << "\" min=\"" << number(minimum) << "\" max=\"" << number(maximum) << "\" factor=\"1\" decimals=\""
        << decimals << "\">\n    <name>" << escaped(title_of(p.name)) << "</name>\n" << comment << "  </parameter>\n";
  } else if (key.kind == Kind::boolean) {
    out << "  <parameter type=\"bool\" name=\"" << name << "\" default=\"" << (key.default_value == "true" ? 1 : 0)
        << "\">\n    <name>" << escaped(title_of(p.name)) << "</name>\n" << comment << "  </parameter>\n";
  } else if (key.kind == Kind::choice) {
    std::string list;
    const std::vector<std::string> choices = choices_of(mode, key);
    for (const std::string& c : choices) list += (list.empty() ? "" : ";") + c;
    out << "  <parameter type=\"list\" name=\"" << name << "\" default=\"" << escaped(key.default_value)
        << "\" paramlist=\"" << escaped(list) << "\">\n    <paramlistdisplay>";
    std::string shown;
    for (const std::string& c : choices) shown += (shown.empty() ? "" : ",") + c;
    out << escaped(shown) << "</paramlistdisplay>\n    <name>" << escaped(title_of(p.name)) << "</name>\n" << comment
        << "  </parameter>\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Filter> filters(argc > 2 ? static_cast<std::size_t>(argc - 2) : 0);
  for (int i = 2; i < argc; ++i) {
    if (!parse_filter(argv[i], filters[static_cast<std::size_t>(i - 2)])) {
      std::cerr << "hazefree-kdenlive-effects: " << argv[i] << ": expected name|mode|title|description\n";
      return 2;
    }
  }
  if (filters.empty()) {
    std::cerr << "usage: hazefree-kdenlive-effects <folder> name|mode|title|description ...\n";
    return 2;
  }
  for (const Filter& f : filters) {
    const std::string path = std::string(argv[1]) + "/frei0r_" + f.name + ".xml";
    std::ofstream out(path);
    out << "<?xml version=\"1.0\"?>\n<!DOCTYPE kpartsgui>\n"
        << "<!-- Made from hazefree's options table by hazefree-kdenlive-effects: do not edit. -->\n"
        << "<effect tag=\"frei0r." << f.name << "\" id=\"frei0r." << f.name << "\">\n"
        << "  <name>" << escaped(f.title) << "</name>\n  <description>" << escaped(f.description) << " (hazefree "
        << HAZEFREE_VERSION_STRING << ")</description>\n  <author>hazefree</author>\n";
    for (const hazefree_frei0r::FilterParam& p : hazefree_frei0r::filter_params(f.mode)) write_parameter(out, f.mode, p);
    out << "</effect>\n";
    out.close();
    if (!out) {
      std::cerr << "hazefree-kdenlive-effects: cannot write " << path << "\n";
      return 1;
    }
  }
  return 0;
}
