#include "serve/http_service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <httplib.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "serve/page.hpp"

namespace hazefree::serve {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxBody = 64 * 1024;      // SPEC 12: larger bodies are refused (413)
// Sustained over all clients (429 beyond): the page of 16 streams asks for about 100 pictures a
// second.
constexpr double kRequestsPerSecond = 300.0;
constexpr double kRequestBurst = 600.0;
constexpr int kMaxPreviews = 4;                   // MJPEG previews at once (each holds a thread)
constexpr int kPreviewWidth = 640;                // and their size and rate
constexpr auto kPreviewInterval = std::chrono::milliseconds(200);

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json{{"error", message}}.dump() + "\n", "application/json");
}

// "rtsp://user:secret@cam/x" -> "rtsp://***@cam/x": credentials stay out of the API.
std::string without_credentials(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto host = scheme + 3;
  const auto at = url.find('@', host);
  const auto slash = url.find('/', host);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return url;
  return url.substr(0, host) + "***" + url.substr(at);
}

// A request's value for a configuration key as text: "0.9", "true", "luma".
std::string option_text(const json& value, const std::string& key) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number()) return fmt::format("{}", value.get<double>());
  throw OptionError(key, fmt::format("{}: expected a string, a number or a boolean", key));
}

// The stream's options as a preset: every processor key at its value (given or default), the
// other keys given in the file, in the table's order and sections.
std::string preset_text(const Stream& stream) {
  const Options options = stream.options();
  std::string out = fmt::format("# hazefree preset of stream '{}'\n", stream.config().name);
  std::string section;
  for (const ConfigKeyInfo& key : configuration_keys()) {
    const auto given = options.find(key.name);
    if (given == options.end() && !key.processor_key) continue;
    const std::string value = given != options.end() ? given->second : key.default_value;
    const auto dot = key.name.find('.');
    const std::string key_section = dot == std::string::npos ? "" : key.name.substr(0, dot);
    if (key_section != section) {
      out += fmt::format("\n[{}]\n", key_section);
      section = key_section;
    }
    const bool quoted = key.kind == ConfigKeyInfo::Kind::choice || key.kind == ConfigKeyInfo::Kind::text;
    out += fmt::format("{} = {}\n", dot == std::string::npos ? key.name : key.name.substr(dot + 1),
                       quoted ? json(value).dump() : value);
  }
  return out;
}

json effective_options(const Stream& stream) {
  const Options options = stream.options();
  json out = json::object();
  for (const ConfigKeyInfo& key : configuration_keys()) {
    const auto given = options.find(key.name);
    if (given != options.end()) out[key.name] = given->second;
    else if (key.processor_key) out[key.name] = key.default_value;
  }
  return out;
}

json stream_json(const Stream& stream) {
  const StreamStatus s = stream.status();
  const StreamConfig& c = stream.config();
  const std::string output = c.output.empty() ? "" : c.output == "hls" ? "/streams/" + c.name + "/index.m3u8"
                                                                       : without_credentials(c.output);
  return json{{"name", c.name},
              {"state", s.state},
              {"error", s.error},
              {"input", without_credentials(c.input)},
              {"output", output},
              {"fps", s.fps},
              {"frames", s.frames},
              {"dropped_frames", s.dropped},
              {"reconnects", s.reconnects},
              {"seconds_lost", s.seconds_lost},
              {"latency_ms", s.latency_seconds * 1000.0},
              {"atmospheric_light", s.atmospheric_light},
              {"options", effective_options(stream)}};
}

json keys_json() {
  json keys = json::array();
  for (const ConfigKeyInfo& key : configuration_keys()) {
    if (!key.processor_key) continue;
    static const char* const kKinds[] = {"integer", "number", "boolean", "choice", "text"};
    json row{{"name", key.name},
             {"help", key.help},
             {"range", key.range},
             {"default", key.default_value},
             {"kind", kKinds[static_cast<int>(key.kind)]},
             {"choices", key.choices},
             {"modes", key.modes},
             {"odd_only", key.odd_only}};
    // JSON has no infinity: an open end is null.
    row["minimum"] = std::isfinite(key.minimum) ? json(key.minimum) : json(nullptr);
    row["maximum"] = std::isfinite(key.maximum) ? json(key.maximum) : json(nullptr);
    row["minimum_excluded"] = key.minimum_excluded;
    row["maximum_excluded"] = key.maximum_excluded;
    keys.push_back(row);
  }
  return keys;
}

bool same_text(const std::string& a, const std::string& b) {  // in a time that does not tell where they differ
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ b[i % std::max<std::size_t>(1, b.size())]);
  return differ == 0;
}

std::string read_file(const std::string& path, bool& found) {
  std::ifstream in(path, std::ios::binary);
  found = static_cast<bool>(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string metrics_text(const std::vector<std::unique_ptr<Stream>>& streams, std::size_t gpu_memory_bytes) {
  std::vector<StreamStatus> all;
  for (const auto& stream : streams) all.push_back(stream->status());
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto per_stream = [&](const char* name, const char* type, const char* help, auto value) {
    family(name, type, help);
    for (std::size_t i = 0; i < streams.size(); ++i)
      out += fmt::format("{}{{stream=\"{}\"}} {}\n", name, streams[i]->config().name, value(all[i]));
  };
  per_stream("hazefree_frames_total", "counter", "Frames processed and written.", [](const StreamStatus& s) { return s.frames; });
  per_stream("hazefree_dropped_frames_total", "counter", "Frames dropped because processing fell behind.",
             [](const StreamStatus& s) { return s.dropped; });
  per_stream("hazefree_reconnects_total", "counter", "Times the source was reconnected.",
             [](const StreamStatus& s) { return s.reconnects; });
  per_stream("hazefree_lost_seconds_total", "counter", "Seconds of the source lost to reconnections.",
             [](const StreamStatus& s) { return s.seconds_lost; });
  per_stream("hazefree_fps", "gauge", "Frames written per second, over the last second or so.",
             [](const StreamStatus& s) { return s.fps; });
  per_stream("hazefree_stream_up", "gauge", "1 while the stream runs, else 0.",
             [](const StreamStatus& s) { return s.state == "running" ? 1 : 0; });
  family("hazefree_latency_seconds", "histogram", "Latency of a frame from decoded to encoded.");
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const std::string& name = streams[i]->config().name;
    std::int64_t cumulative = 0;
    for (std::size_t b = 0; b < kLatencyBuckets.size(); ++b) {
      cumulative += all[i].latency_counts[b];
      out += fmt::format("hazefree_latency_seconds_bucket{{stream=\"{}\",le=\"{}\"}} {}\n", name, kLatencyBuckets[b], cumulative);
    }
    cumulative += all[i].latency_counts.back();
    out += fmt::format("hazefree_latency_seconds_bucket{{stream=\"{}\",le=\"+Inf\"}} {}\n", name, cumulative);
    out += fmt::format("hazefree_latency_seconds_sum{{stream=\"{}\"}} {}\n", name, all[i].latency_sum);
    out += fmt::format("hazefree_latency_seconds_count{{stream=\"{}\"}} {}\n", name, all[i].latency_count);
  }
  family("hazefree_atmospheric_light", "gauge", "DCP's atmospheric light A of the stream, per channel, in [0, 1].");
  for (std::size_t i = 0; i < streams.size(); ++i)
    for (std::size_t c = 0; c < 3; ++c)
      out += fmt::format("hazefree_atmospheric_light{{stream=\"{}\",channel=\"{}\"}} {}\n", streams[i]->config().name,
                         "rgb"[c], all[i].atmospheric_light[c]);
  family("hazefree_streams_up", "gauge", "Streams running.");
  out += fmt::format("hazefree_streams_up {}\n",
                     std::count_if(all.begin(), all.end(), [](const StreamStatus& s) { return s.state == "running"; }));
  family("hazefree_gpu_memory_bytes", "gauge", "GPU memory in use on the service's GPU (0 without one).");
  out += fmt::format("hazefree_gpu_memory_bytes {}\n", gpu_memory_bytes);
  return out;
}

struct HttpService::Impl {
  const ServiceConfig& config;
  std::vector<std::unique_ptr<Stream>>& streams;
  bool gpu_metrics;
  httplib::Server server;
  std::mutex rate_mutex;
  double tokens = kRequestBurst;
  std::chrono::steady_clock::time_point refilled = std::chrono::steady_clock::now();
  std::atomic<int> previews{0};

  Impl(const ServiceConfig& c, std::vector<std::unique_ptr<Stream>>& s, bool gpu) : config(c), streams(s), gpu_metrics(gpu) {}

  Stream* find(const std::string& name) {
    for (auto& stream : streams)
      if (stream->config().name == name) return stream.get();
    return nullptr;
  }

  bool within_rate() {
    std::lock_guard lock(rate_mutex);
    const auto now = std::chrono::steady_clock::now();
    tokens = std::min(kRequestBurst, tokens + std::chrono::duration<double>(now - refilled).count() * kRequestsPerSecond);
    refilled = now;
    if (tokens < 1.0) return false;
    tokens -= 1.0;
    return true;
  }

  // With a token, every request but /metrics carries it: "Authorization: Bearer TOKEN", or
  // ?token=TOKEN where a browser cannot set a header (the page, its pictures).
  bool authorized(const httplib::Request& req) const {
    if (config.token.empty() || req.path == "/metrics") return true;
    const std::string header = req.get_header_value("Authorization");
    if (header.rfind("Bearer ", 0) == 0 && same_text(header.substr(7), config.token)) return true;
    return req.has_param("token") && same_text(req.get_param_value("token"), config.token);
  }

  void routes() {
    server.set_payload_max_length(kMaxBody);
    server.set_read_timeout(5, 0);
    server.set_write_timeout(5, 0);
    server.set_keep_alive_max_count(100);
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!within_rate()) {
        send_error(res, 429, "too many requests; try again shortly");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (!authorized(req)) {
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, 401, "a valid token is needed (Authorization: Bearer TOKEN)");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404) send_error(res, 404, fmt::format("{}: no such resource", req.path));
      else if (res.status == 413) send_error(res, 413, fmt::format("request body over {} bytes", kMaxBody));
      else send_error(res, res.status, fmt::format("{}: request refused", req.path));
    });

    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(page_html(), "text/html; charset=utf-8");
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_text(streams, gpu_metrics ? gpu_memory_used() : 0), "text/plain; version=0.0.4");
    });
    server.Get("/api/keys", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(keys_json().dump(), "application/json");
    });
    server.Get("/api/streams", [this](const httplib::Request&, httplib::Response& res) {
      json all = json::array();
      for (const auto& stream : streams) all.push_back(stream_json(*stream));
      res.set_content(all.dump(), "application/json");
    });
    server.Get(R"(/api/streams/([A-Za-z0-9_-]+))", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) { res.set_content(stream_json(stream).dump(), "application/json"); });
    });
    server.Patch(R"(/api/streams/([A-Za-z0-9_-]+)/options)", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) { patch_options(stream, req, res); });
    });
    server.Get(R"(/api/streams/([A-Za-z0-9_-]+)/preset\.toml)", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) { res.set_content(preset_text(stream), "application/toml"); });
    });
    server.Get(R"(/api/streams/([A-Za-z0-9_-]+)/snapshot\.jpg)", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) { snapshot(stream, req, res); });
    });
    server.Get(R"(/api/streams/([A-Za-z0-9_-]+)/preview\.mjpg)", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) { preview(stream, req, res); });
    });
    // HLS: only the playlist and the segments of an "hls" output, by their exact names.
    server.Get(R"(/streams/([A-Za-z0-9_-]+)/(index\.m3u8|index[0-9]+\.ts))", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) {
        bool found = false;
        const std::string name = req.matches[2];
        const std::string body = stream.hls_dir().empty() ? "" : read_file(stream.hls_dir() + "/" + name, found);
        if (!found) return send_error(res, 404, fmt::format("{}: no such HLS file (yet)", req.path));
        const bool playlist = name == "index.m3u8";
        res.set_header("Cache-Control", "no-cache");
        res.set_content(body, playlist ? "application/vnd.apple.mpegurl" : "video/mp2t");
      });
    });
  }

  template <typename Handler>
  void with_stream(const httplib::Request& req, httplib::Response& res, Handler handler) {
    const std::string name = req.matches[1];
    Stream* stream = find(name);
    if (!stream) return send_error(res, 404, fmt::format("no stream '{}'", name));
    handler(*stream);
  }

  // ?view=input|output (default output); std::invalid_argument for another.
  static bool wants_output(const httplib::Request& req) {
    const std::string view = req.has_param("view") ? req.get_param_value("view") : "output";
    if (view != "input" && view != "output") throw std::invalid_argument(fmt::format("view '{}': expected input or output", view));
    return view == "output";
  }

  void patch_options(Stream& stream, const httplib::Request& req, httplib::Response& res) {
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::parse_error& e) {
      return send_error(res, 400, fmt::format("the body is not JSON: {}", e.what()));
    }
    if (!body.is_object() || body.empty())
      return send_error(res, 400, "the body must be a JSON object of configuration keys, e.g. {\"dcp.omega\": 0.9}");
    try {
      Options changes;
      for (const auto& [key, value] : body.items()) changes[key] = option_text(value, key);
      stream.change_options(changes);
    } catch (const OptionError& e) {
      return send_error(res, 400, e.what());
    }
    res.set_content(json{{"name", stream.config().name}, {"options", effective_options(stream)}}.dump(), "application/json");
  }

  void snapshot(Stream& stream, const httplib::Request& req, httplib::Response& res) {
    bool output = true;
    int width = 0;
    try {
      output = wants_output(req);
    } catch (const std::exception& e) {
      return send_error(res, 400, e.what());
    }
    if (req.has_param("width")) {
      const std::string text = req.get_param_value("width");
      if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos)
        return send_error(res, 400, fmt::format("width '{}': expected a number of pixels (0: the frame's own)", text));
      width = std::stoi(text);
    }
    std::optional<std::vector<std::uint8_t>> jpeg;
    try {
      jpeg = stream.snapshot(output, std::max(0, width), std::chrono::milliseconds(2000));
    } catch (const std::exception& e) {
      return send_error(res, 500, fmt::format("stream '{}': {}", stream.config().name, e.what()));
    }
    if (!jpeg) return send_error(res, 503, fmt::format("stream '{}' has no picture yet", stream.config().name));
    res.set_header("Cache-Control", "no-store");
    res.set_content(reinterpret_cast<const char*>(jpeg->data()), jpeg->size(), "image/jpeg");
  }

  void preview(Stream& stream, const httplib::Request& req, httplib::Response& res) {
    bool output = true;
    try {
      output = wants_output(req);
    } catch (const std::exception& e) {
      return send_error(res, 400, e.what());
    }
    if (previews.fetch_add(1) >= kMaxPreviews) {
      previews.fetch_sub(1);
      return send_error(res, 503, fmt::format("{} previews already open; close one", kMaxPreviews));
    }
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider(
        "multipart/x-mixed-replace; boundary=hazefreeframe",
        [this, &stream, output](std::size_t, httplib::DataSink& sink) {
          std::this_thread::sleep_for(kPreviewInterval);
          std::optional<std::vector<std::uint8_t>> jpeg;
          try {
            jpeg = stream.snapshot(output, kPreviewWidth, std::chrono::milliseconds(1000));
          } catch (const std::exception&) {
          }
          if (!sink.is_writable() || stopping.load()) return false;
          if (!jpeg) return true;  // no picture now: try again
          const std::string head = fmt::format("--hazefreeframe\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\n\r\n", jpeg->size());
          return sink.write(head.data(), head.size()) &&
                 sink.write(reinterpret_cast<const char*>(jpeg->data()), jpeg->size()) && sink.write("\r\n", 2);
        },
        [this](bool) { previews.fetch_sub(1); });
  }

  std::atomic<bool> stopping{false};
};

HttpService::HttpService(const ServiceConfig& config, std::vector<std::unique_ptr<Stream>>& streams, bool gpu_metrics)
    : impl_(std::make_unique<Impl>(config, streams, gpu_metrics)) {
  impl_->routes();
}

HttpService::~HttpService() = default;

void HttpService::bind() {
  if (!impl_->server.bind_to_port(impl_->config.host, impl_->config.port)) {
    throw ConfigError(fmt::format("cannot listen on {}:{} ({})", impl_->config.host, impl_->config.port,
                                  errno ? std::strerror(errno) : "address in use or not available"),
                      1);
  }
}

void HttpService::serve() { impl_->server.listen_after_bind(); }

void HttpService::stop() {
  impl_->stopping.store(true);
  impl_->server.stop();
}

}  // namespace hazefree::serve
