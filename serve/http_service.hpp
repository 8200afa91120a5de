// The service's HTTP side (SPEC 12) over cpp-httplib: the Prometheus metrics, the JSON API
// (streams, option changes checked by the options table, snapshots, MJPEG previews, presets),
// the HLS files of "hls" outputs and the page; a token where one is set, Host names checked
// without one, bounded bodies, per-client request rates, and connections that idle or slow
// clients cannot hold (SPEC 12.1).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "serve/service_config.hpp"
#include "serve/stream.hpp"

namespace hazefree::serve {

class HttpService {
 public:
  HttpService(const ServiceConfig& config, std::vector<std::unique_ptr<Stream>>& streams, bool gpu_metrics);
  ~HttpService();
  HttpService(const HttpService&) = delete;
  HttpService& operator=(const HttpService&) = delete;

  // Binds the listening socket; throws ConfigError (exit status 1) when it cannot.
  void bind();
  // Serves until stop() (from another thread).
  void serve();
  void stop();
  // Answers raw request bytes as one connection's (in memory, no socket; for the fuzz target):
  // the answers' bytes. A preview answers its first try only.
  std::string answer(const std::string& requests);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A stream's options as a TOML preset, by toml++'s writer (strings with quotes, backslashes or
// non-ASCII read back as given): every processor key at its value (given, else its default) and
// the other keys given, in sections (toml++ writes a table's keys in name order).
std::string preset_text(const std::string& stream_name, const Options& options);

// The Prometheus text of the streams (exposed for the tests of its format).
std::string metrics_text(const std::vector<std::unique_ptr<Stream>>& streams, std::size_t gpu_memory_bytes);

}  // namespace hazefree::serve
