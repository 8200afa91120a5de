// The service's HTTP side (SPEC 12) over cpp-httplib: the Prometheus metrics, the JSON API
// (streams, option changes checked by the options table, snapshots, MJPEG previews, presets),
// the HLS files of "hls" outputs and the page; a token where one is set, bounded bodies and
// request rate.
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The Prometheus text of the streams (exposed for the tests of its format).
std::string metrics_text(const std::vector<std::unique_ptr<Stream>>& streams, std::size_t gpu_memory_bytes);

}  // namespace hazefree::serve
