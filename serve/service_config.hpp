// The service's configuration file (SPEC 12): [server] listen, token and hosts, and one
// [[stream]] per camera with its name, input, optional output and format, and any configuration
// keys, checked by the options table (through the public API) before anything starts.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "hazefree/hazefree.hpp"

namespace hazefree::serve {

// A configuration that cannot run: one line naming the file and the cause; `exit_status` is the
// command's (2 for a bad file or option, 1 for a port in use).
struct ConfigError : std::runtime_error {
  ConfigError(const std::string& message, int status = 2) : std::runtime_error(message), exit_status(status) {}
  int exit_status;
};

inline constexpr std::size_t kMinTokenLength = 16;

struct StreamConfig {
  std::string name;     // [A-Za-z0-9_-]+, unique
  std::string input;    // anything FFmpeg reads
  std::string output;   // empty: preview only; "hls": served at /streams/NAME/
  std::string format;   // the output container, as -f (empty: from the name)
  Options options;      // configuration keys, as in a preset
};

struct ServiceConfig {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string token;  // empty: none (loopback only); else at least kMinTokenLength characters
  // Host names served without a token besides the loopback ones (lower case, no port; an IPv6
  // address without its brackets).
  std::vector<std::string> hosts;
  std::vector<StreamConfig> streams;
};

// Reads and checks `path`; `listen` (ADDR:PORT, may be empty) overrides [server] listen and
// `environment_token` (HAZEFREE_TOKEN, may be empty) stands in for a missing [server] token.
// Throws ConfigError.
ServiceConfig load_service_config(const std::string& path, const std::string& listen,
                                  const std::string& environment_token);

// True for 127.0.0.0/8, ::1 and localhost.
bool is_loopback(const std::string& host);

}  // namespace hazefree::serve
