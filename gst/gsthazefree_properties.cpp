#include "gsthazefree_properties.hpp"

#include <gst/gst.h>

#include <cmath>

namespace hazefree_gst {
namespace {

// "mode" -> "GstHazefreeMode", "color" -> "GstHazefreeColor".
std::string enum_type_name(const std::string& key) {
  std::string name = "GstHazefree";
  bool upper = true;
  for (char c : key) {
    if (c == '.' || c == '_' || c == '-') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(g_ascii_toupper(c)) : c;
    upper = false;
  }
  return name;
}

gint clamp_int(double value) {
  if (value <= G_MININT) return G_MININT;
  if (value >= G_MAXINT) return G_MAXINT;
  return static_cast<gint>(value);
}

}  // namespace

std::vector<Property>& properties() {
  static std::vector<Property> list;
  return list;
}

std::string property_name(const std::string& text) {
  std::string name;
  for (char c : text) name += (c == '_' || c == '.') ? '-' : c;
  return name;
}

GType register_choices(const hazefree::ConfigKeyInfo& info) {
  // GLib keeps the table for the life of the type: it is allocated once and never freed.
  auto* values = g_new0(GEnumValue, info.choices.size() + 1);
  for (std::size_t i = 0; i < info.choices.size(); ++i) {
    values[i].value = static_cast<gint>(i);
    values[i].value_name = g_strdup(info.choices[i].c_str());
    values[i].value_nick = g_strdup(info.choices[i].c_str());
  }
  return g_enum_register_static(g_intern_string(enum_type_name(info.name).c_str()), values);
}

GParamSpec* param_spec(const Property& p) {
  const hazefree::ConfigKeyInfo& info = p.info;
  const std::string blurb = info.help + " (" + info.range + "; key " + info.name + ")";
  const auto flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  const gchar* name = g_intern_string(p.name.c_str());
  const gchar* nick = g_intern_string(info.name.c_str());
  const gchar* text = g_intern_string(blurb.c_str());
  switch (info.kind) {
    case hazefree::ConfigKeyInfo::Kind::integer: {
      // An excluded end of an integer range is the next integer.
      const gint min = clamp_int(info.minimum_excluded ? std::floor(info.minimum) + 1 : std::ceil(info.minimum));
      const gint max = clamp_int(info.maximum_excluded ? std::ceil(info.maximum) - 1 : std::floor(info.maximum));
      return g_param_spec_int(name, nick, text, min, max, std::stoi(info.default_value), flags);
    }
    case hazefree::ConfigKeyInfo::Kind::number: {
      // An excluded end stays in the spec (GLib has no open interval): the library refuses it
      // with a message naming the key when the processor is made.
      const double min = std::isinf(info.minimum) ? -G_MAXDOUBLE : info.minimum;
      const double max = std::isinf(info.maximum) ? G_MAXDOUBLE : info.maximum;
      return g_param_spec_double(name, nick, text, min, max, g_ascii_strtod(info.default_value.c_str(), nullptr),
                                 flags);
    }
    case hazefree::ConfigKeyInfo::Kind::boolean:
      return g_param_spec_boolean(name, nick, text, info.default_value == "true", flags);
    case hazefree::ConfigKeyInfo::Kind::choice: {
      gint default_index = 0;
      for (std::size_t i = 0; i < info.choices.size(); ++i)
        if (info.choices[i] == info.default_value) default_index = static_cast<gint>(i);
      return g_param_spec_enum(name, nick, text, p.enum_type, default_index, flags);
    }
    case hazefree::ConfigKeyInfo::Kind::text:
      break;
  }
  return g_param_spec_string(name, nick, text, info.default_value.c_str(), flags);
}

}  // namespace hazefree_gst
