#include "serve/service_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <toml++/toml.h>

#include "common/toml_value.hpp"
#include "io/url.hpp"

namespace hazefree::serve {
namespace {

bool valid_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// The configuration keys of a [[stream]] table: "dcp.omega" from [stream.dcp] omega.
void flatten(const toml::table& table, const std::string& prefix, Options& options) {
  for (const auto& [name, node] : table) {
    const std::string key = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (const auto* section = node.as_table()) {
      flatten(*section, key, options);
      continue;
    }
    // The options' text ("0.9", "true", "luma", "10,20,300,200").
    const std::optional<std::string> text = toml_value_text(node);
    if (!text) throw OptionError(key, fmt::format("{}: not a value a configuration key takes", key));
    options[key] = *text;
  }
}

std::string text_field(const toml::table& table, const std::string& key, const std::string& where) {
  const toml::node* node = table.get(key);
  if (!node) return {};
  if (!node->is_string()) throw ConfigError(fmt::format("{}: {} must be a string", where, key));
  return node->as_string()->get();
}

void parse_listen(const std::string& listen, const std::string& where, ServiceConfig& config) {
  const auto colon = listen.rfind(':');
  int port = -1;
  if (colon != std::string::npos && colon + 1 < listen.size() && colon <= listen.size() - 2) {
    try {
      std::size_t used = 0;
      port = std::stoi(listen.substr(colon + 1), &used);
      if (used != listen.size() - colon - 1) port = -1;
    } catch (const std::exception&) {
      port = -1;
    }
  }
  std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || port < 0 || port > 65535)
    throw ConfigError(fmt::format("{}: listen '{}' is not ADDR:PORT (e.g. 127.0.0.1:8080)", where, listen));
  config.host = host;
  config.port = port;
}

// [server] hosts = ["cams.example", "10.0.0.5", "[fd00::5]"]: names and addresses without a port.
void parse_hosts(const toml::node& node, const std::string& where, ServiceConfig& config) {
  const toml::array* hosts = node.as_array();
  if (!hosts) throw ConfigError(fmt::format("{}: expected a list of host names, e.g. [\"cams.example\"]", where));
  for (const toml::node& element : *hosts) {
    const auto* text = element.as_string();
    if (!text) throw ConfigError(fmt::format("{}: expected a list of host names (strings)", where));
    std::string host = text->get();
    const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
    if (bracketed) host = host.substr(1, host.size() - 2);
    const bool name_chars = !host.empty() && host.size() <= 253 && std::all_of(host.begin(), host.end(), [&](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
             (bracketed && c == ':');
    });
    if (!name_chars)
      throw ConfigError(fmt::format("{}: '{}' is not a host name or address without a port (e.g. cams.example, "
                                    "10.0.0.5, [fd00::5])", where, text->get()));
    std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    config.hosts.push_back(host);
  }
}

// A stream's `stats` file is its own: not another stream's (two runs writing one file interleave
// and overwrite each other's lines) and not any stream's input or output file (the run would
// write over it, or be refused and started again for ever). Names of one file however spelled
// (io/url.hpp); pipes, stdout and URLs name none.
void check_stats_files(const std::string& path, const ServiceConfig& config) {
  const auto stats_of = [](const StreamConfig& stream) {
    const auto found = stream.options.find("stats");
    return found == stream.options.end() ? std::string() : found->second;
  };
  for (std::size_t i = 0; i < config.streams.size(); ++i) {
    const StreamConfig& stream = config.streams[i];
    const std::string stats = stats_of(stream);
    if (stats.empty()) continue;
    const std::string named = fmt::format("{}: stream '{}': stats {}", path, stream.name, stats);
    for (std::size_t j = 0; j < config.streams.size(); ++j) {
      const StreamConfig& other = config.streams[j];
      const std::string whose = j == i ? std::string("the stream") : fmt::format("stream '{}'", other.name);
      if (io::same_local_file(stats, other.input))
        throw ConfigError(fmt::format("{}: is the input file of {}; choose another file for the statistics", named, whose));
      if (other.output != "hls" && io::same_local_file(stats, other.output))
        throw ConfigError(fmt::format("{}: is the output file of {}; choose another file for the statistics", named, whose));
      if (j < i && io::same_local_file(stats, stats_of(other)))
        throw ConfigError(fmt::format("{}: is also the stats file of stream '{}'; give each stream a file of its own",
                                      named, other.name));
    }
  }
}

}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

ServiceConfig load_service_config(const std::string& path, const std::string& listen,
                                  const std::string& environment_token) {
  toml::table file;
  try {
    file = read_toml_file(path);
  } catch (const std::runtime_error& e) {
    throw ConfigError(e.what());
  }
  ServiceConfig config;
  for (const auto& [name, node] : file) {
    if (name.str() != "server" && name.str() != "stream")
      throw ConfigError(fmt::format("{}: unknown section '{}' (expected [server] and [[stream]])", path, name.str()));
  }
  if (const toml::node* server_node = file.get("server")) {
    const toml::table* server = server_node->as_table();
    if (!server) throw ConfigError(fmt::format("{}: server must be a table ([server])", path));
    for (const auto& [name, node] : *server) {
      if (name.str() != "listen" && name.str() != "token" && name.str() != "hosts")
        throw ConfigError(fmt::format("{}: [server] has no key '{}' (listen, token, hosts)", path, name.str()));
    }
    if (const std::string text = text_field(*server, "listen", path + ": [server]"); !text.empty())
      parse_listen(text, path + ": [server]", config);
    config.token = text_field(*server, "token", path + ": [server]");
    if (const toml::node* hosts = server->get("hosts")) parse_hosts(*hosts, path + ": [server] hosts", config);
  }
  if (!listen.empty()) parse_listen(listen, "--listen", config);
  if (config.token.empty()) config.token = environment_token;
  if (!config.token.empty() && config.token.size() < kMinTokenLength)
    throw ConfigError(fmt::format("{}: the token has {} characters; at least {} are needed ([server] token or HAZEFREE_TOKEN)",
                                  path, config.token.size(), kMinTokenLength));
  if (!is_loopback(config.host) && config.token.empty())
    throw ConfigError(fmt::format("{}: listening on {} (not loopback) needs a token ([server] token or HAZEFREE_TOKEN)",
                                  path, config.host));

  const toml::node* streams_node = file.get("stream");
  const toml::array* streams = streams_node ? streams_node->as_array() : nullptr;
  if (streams_node && (!streams || !streams->is_array_of_tables()))
    throw ConfigError(fmt::format("{}: stream must be a list of tables ([[stream]])", path));
  if (!streams || streams->empty()) throw ConfigError(fmt::format("{}: no [[stream]]: nothing to serve", path));
  std::set<std::string> names;
  for (std::size_t i = 0; i < streams->size(); ++i) {
    const toml::table& table = *streams->get(i)->as_table();
    const std::string where = fmt::format("{}: stream {}", path, i + 1);
    StreamConfig stream;
    stream.name = text_field(table, "name", where);
    if (!valid_name(stream.name))
      throw ConfigError(fmt::format("{}: name '{}' must be letters, digits, _ or - (and not empty)", where, stream.name));
    const std::string named = fmt::format("{}: stream '{}'", path, stream.name);
    if (!names.insert(stream.name).second) throw ConfigError(fmt::format("{}: the name is used twice", named));
    stream.input = text_field(table, "input", named);
    if (stream.input.empty()) throw ConfigError(fmt::format("{}: no input", named));
    stream.output = text_field(table, "output", named);
    stream.format = text_field(table, "format", named);
    toml::table keys = table;
    for (const char* own : {"name", "input", "output", "format"}) keys.erase(own);
    try {
      flatten(keys, "", stream.options);
      validate_options(stream.options);
    } catch (const OptionError& e) {
      throw ConfigError(fmt::format("{}: {}", named, e.what()));
    }
    config.streams.push_back(std::move(stream));
  }
  check_stats_files(path, config);
  return config;
}

}  // namespace hazefree::serve
