// The element's properties, generated from the options table (hazefree::configuration_keys()):
// one per configuration key a Processor uses, named after the key ("dcp.patch_radius" is
// `patch-radius`), choices as enums, ranges and defaults from the table.
#pragma once

#include <glib-object.h>

#include <hazefree/hazefree.hpp>

#include <string>
#include <vector>

namespace hazefree_gst {

// One property: the configuration key it sets and how its value is typed.
struct Property {
  std::string key;   // "dcp.patch_radius"
  std::string name;  // "patch-radius"
  hazefree::ConfigKeyInfo info;
  GType enum_type = G_TYPE_INVALID;  // choice keys
};

// Built once, in class_init, from the options table; property id i + 1 is properties()[i].
std::vector<Property>& properties();

// "dcp.patch_radius" -> "patch-radius".
std::string property_name(const std::string& text);
// The enum type of a choice key's values, registered once.
GType register_choices(const hazefree::ConfigKeyInfo& info);
// The property's spec: its kind, range, default and help from the table.
GParamSpec* param_spec(const Property& p);

}  // namespace hazefree_gst
