// The service's preset (GET /api/streams/NAME/preset.toml): written by toml++, it reads back as
// the options given, whatever their text holds.
#include <doctest/doctest.h>

#include <toml++/toml.h>

#include <string>

#include "common/toml_value.hpp"
#include "serve/http_service.hpp"

namespace {

// The options of a preset's text, as the service reads a [[stream]] table.
void read_options(const toml::table& table, const std::string& prefix, hazefree::Options& options) {
  for (const auto& [name, node] : table) {
    const std::string key = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (const toml::table* section = node.as_table()) {
      read_options(*section, key, options);
      continue;
    }
    const std::optional<std::string> text = hazefree::toml_value_text(node);
    REQUIRE_MESSAGE(text, key);
    options[key] = *text;
  }
}

}  // namespace

TEST_CASE("preset: a stream's options as TOML read back as given: quotes, backslashes, non-ASCII, fractions, words") {
  const hazefree::Options given = {
      {"mode", "dcp"},
      {"dcp.omega", "0.9"},
      {"dcp.a_top_fraction", "5/255"},
      {"dcp.patch_radius", "7"},
      {"dcp.auto_strength", "true"},
      {"he.roi", "10,20,300,200"},
      {"stats", "C:\\haze \"north\"\\frames 雾 é.jsonl"},
      {"input.reconnect", "unlimited"},
      {"input.framerate", "30000/1001"},
      {"output.tune", "it's \"zero\"\tlatency\x7f\n"},  // DEL: escaped in TOML, not in JSON
  };
  const std::string text = hazefree::serve::preset_text("cam-1", given);
  CAPTURE(text);
  CHECK(text.rfind("# hazefree preset of stream 'cam-1'\n", 0) == 0);
  const toml::table parsed = toml::parse(text);
  CHECK(parsed["dcp"]["patch_radius"].is_integer());
  CHECK(parsed["dcp"]["omega"].is_floating_point());
  CHECK(parsed["dcp"]["auto_strength"].is_boolean());
  CHECK(parsed["dcp"]["a_top_fraction"].is_string());

  hazefree::Options read;
  read_options(parsed, "", read);
  for (const auto& [key, value] : given) {
    CAPTURE(key);
    CHECK(read[key] == value);
  }
  // Every processor key, at its default where not given; the file run's keys only as given.
  for (const hazefree::ConfigKeyInfo& key : hazefree::configuration_keys()) {
    CAPTURE(key.name);
    if (given.count(key.name)) continue;
    CHECK(read.count(key.name) == (key.processor_key ? 1u : 0u));
    if (key.processor_key) CHECK(read[key.name] == key.default_value);
  }
  CHECK_NOTHROW(hazefree::validate_options(read));
}
