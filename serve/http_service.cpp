#include "serve/http_service.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <httplib.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <toml++/toml.h>
#include <unordered_map>
#include <unordered_set>

#include "common/config_key.hpp"
#include "io/url.hpp"
#include "serve/page.hpp"

namespace hazefree::serve {
namespace {

using nlohmann::json;

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxBody = 64 * 1024;      // SPEC 12: larger bodies are refused (413)
// Per client address (an IPv6 client: its /64), 429 beyond. Served requests: the page of 16
// streams asks for about 100 pictures a second. Failed authentications have their own, small
// bucket, so that others' wrong tokens never refuse a right one (SPEC 12.1).
constexpr double kClientRate = 1000.0, kClientBurst = 2000.0;
constexpr double kFailureRate = 5.0, kFailureBurst = 20.0;
constexpr std::size_t kMaxClients = 4096;        // buckets kept; beyond, new clients share one
// Connections (SPEC 12.1): a worker thread serves a connection only while a complete request
// head is buffered; idle connections and partial heads wait in one epoll thread (a descriptor
// each, no thread), so idle or slow clients cannot hold the workers.
constexpr std::size_t kWorkers = 32;             // previews, snapshots' waits and requests
// Idle connections kept: at most this many and half the descriptor limit (accepting goes on);
// beyond, the longest idle one is closed.
constexpr std::size_t kMaxIdleConnections = 1000;
constexpr auto kIdleTimeout = std::chrono::seconds(10);   // keep-alive: closed after this idle
constexpr auto kRequestTime = std::chrono::seconds(10);   // a head, then its body, within this
constexpr auto kReadWait = std::chrono::seconds(5);       // a body's reads: each within this
constexpr auto kWriteWait = std::chrono::seconds(5);      // an answer's writes: each within this
// After an answer the worker waits this long for the keep-alive client's next request before
// handing the connection to the epoll thread (a hand-over wakes two threads).
constexpr auto kLinger = std::chrono::milliseconds(2);
constexpr std::size_t kMaxHead = 16 * 1024;      // a request line and headers (431 beyond)
constexpr std::size_t kMaxRequestsPerConnection = 10000;
constexpr int kMaxPreviews = 4;                   // MJPEG previews at once (each holds a thread)
constexpr int kPreviewWidth = 640;                // and their size and rate
constexpr auto kPreviewInterval = std::chrono::milliseconds(200);
constexpr int kMaxLogLinesPerSecond = 20;        // failures logged (a flood cannot fill the log)

// JSON text whatever the strings hold: bytes that are not UTF-8 (a path's %FF, a source's
// message) become U+FFFD instead of an exception.
std::string json_text(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json_text(json{{"error", message}}) + "\n", "application/json");
}

// Request text for a log line: control and non-ASCII bytes as \xNN, at most 200 bytes.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text.substr(0, 200)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) out += fmt::format("\\x{:02x}", byte);
    else out += c;
  }
  return text.size() > 200 ? out + "..." : out;
}

// A request's value for a configuration key as text: "0.9", "true", "luma".
std::string option_text(const json& value, const std::string& key) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number()) return fmt::format("{}", value.get<double>());
  throw OptionError(key, fmt::format("{}: expected a string, a number or a boolean", key));
}

// The warning of the command line for a key the options' mode does not use (dcp.auto_strength
// outside dcp), or empty. The options were checked already: a value that does not parse is left out.
std::string unused_key_warning_of(const Options& options) {
  ProcessingConfig config;
  for (const ProcessingKey& key : processing_keys()) {
    const auto given = options.find(key.name);
    if (given == options.end()) continue;
    try {
      key.set(config, given->second);
    } catch (const KeyError&) {
    }
  }
  return unused_key_warning(config);
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

// A float as its shortest text reads (0.95, not 0.949999988079071).
json float_json(float value) { return std::stod(fmt::format("{}", value)); }

// [[time, index], ...]: Unix seconds (to the millisecond) and the index, oldest first.
json haze_history_json(const Stream& stream) {
  json samples = json::array();
  for (const HazeSample& sample : stream.haze_history())
    samples.push_back(json::array({std::round(sample.time * 1e3) / 1e3, float_json(sample.haze_index)}));
  return samples;
}

json stream_json(const Stream& stream) {
  const StreamStatus s = stream.status();
  const StreamConfig& c = stream.config();
  const std::string output = c.output.empty() ? "" : c.output == "hls" ? "/streams/" + c.name + "/index.m3u8"
                                                                       : io::redact_urls(c.output);
  // URL secrets (passwords, query keys, RTMP stream keys) stay out of the API and the page.
  return json{{"name", c.name},
              {"state", s.state},
              {"error", io::redact_urls(s.error)},
              {"seconds_since_frame", s.seconds_since_frame},
              {"input", io::redact_urls(c.input)},
              {"output", output},
              {"fps", s.fps},
              {"frames", s.frames},
              {"dropped_frames", s.dropped},
              {"reconnects", s.reconnects},
              {"seconds_lost", s.seconds_lost},
              {"latency_ms", s.latency_seconds * 1000.0},
              {"atmospheric_light", s.haze_index >= 0.f ? json(s.atmospheric_light) : json(nullptr)},
              {"haze_index", s.haze_index >= 0.f ? float_json(s.haze_index) : json(nullptr)},
              {"omega", s.omega >= 0.f ? float_json(s.omega) : json(nullptr)},
              {"haze_history", haze_history_json(stream)},
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

// The address a client's limits are kept under: IPv4 as it is, an IPv6 address by its /64 (one
// host usually holds a whole /64), an IPv4-mapped one as IPv4.
std::string client_key(const std::string& address) {
  in6_addr v6{};
  if (address.find(':') == std::string::npos || inet_pton(AF_INET6, address.c_str(), &v6) != 1) return address;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &v6.s6_addr[12], text, sizeof text);
    return text;
  }
  std::fill(std::begin(v6.s6_addr) + 8, std::end(v6.s6_addr), 0);
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &v6, text, sizeof text);
  return std::string(text) + "/64";
}

// Token buckets per client, at most kMaxClients of them: a full map drops the buckets that are
// full again (their clients idle; dropping one gives its client nothing), and when every bucket
// is in use a new client takes the shared one.
class ClientLimits {
 public:
  ClientLimits(double rate, double burst) : rate_(rate), burst_(burst), shared_{burst, Clock::now()} {}

  bool take(const std::string& client) {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    auto found = buckets_.find(client);
    Bucket* bucket = &shared_;
    if (found != buckets_.end()) {
      bucket = &found->second;
    } else {
      if (buckets_.size() >= kMaxClients && now >= next_prune_) prune(now);
      if (buckets_.size() < kMaxClients) bucket = &buckets_.emplace(client, Bucket{burst_, now}).first->second;
    }
    refill(*bucket, now);
    if (bucket->tokens < 1.0) return false;
    bucket->tokens -= 1.0;
    return true;
  }

 private:
  struct Bucket {
    double tokens;
    Clock::time_point at;
  };
  void refill(Bucket& bucket, Clock::time_point now) const {
    bucket.tokens = std::min(burst_, bucket.tokens + std::chrono::duration<double>(now - bucket.at).count() * rate_);
    bucket.at = now;
  }
  void prune(Clock::time_point now) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      refill(it->second, now);
      it = it->second.tokens >= burst_ ? buckets_.erase(it) : std::next(it);
    }
    next_prune_ = now + std::chrono::milliseconds(100);  // a map full of busy clients is not scanned per request
  }

  const double rate_, burst_;
  std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
  Bucket shared_;
  Clock::time_point next_prune_{};
};

// "localhost:8080" -> "localhost", "[::1]:8080" -> "::1", lower case.
std::string host_name(const std::string& host_header) {
  std::string host = host_header;
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    host = close == std::string::npos ? host : host.substr(1, close - 1);
  } else if (const auto colon = host.find(':'); colon != std::string::npos && host.find(':', colon + 1) == std::string::npos) {
    host = host.substr(0, colon);
  }
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return host;
}

// What a worker needs to know of a buffered request head before httplib reads it.
struct Head {
  bool complete = false;
  std::size_t size = 0;         // bytes of the request line and headers, the blank line included
  bool has_length = false;      // Content-Length given
  std::uint64_t length = 0;     // its value (digits only; another text is httplib's to refuse)
  bool transfer_coding = false;  // Transfer-Encoding given
};

bool header_is(const char* line, std::size_t size, const char* name) {
  const std::size_t n = std::strlen(name);
  if (size <= n || line[n] != ':') return false;
  for (std::size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

Head scan_head(const char* data, std::size_t size) {
  Head head;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] != '\n') continue;
    std::size_t line_end = i > line_start && data[i - 1] == '\r' ? i - 1 : i;
    if (line_end == line_start && line_start > 0) {  // the blank line after the headers
      head.complete = true;
      head.size = i + 1;
      return head;
    }
    const char* line = data + line_start;
    const std::size_t length = line_end - line_start;
    if (line_start > 0 && header_is(line, length, "content-length")) {
      head.has_length = true;
      std::size_t at = 15;
      while (at < length && (line[at] == ' ' || line[at] == '\t')) ++at;
      head.length = 0;
      for (; at < length && line[at] >= '0' && line[at] <= '9'; ++at)
        head.length = std::min<std::uint64_t>(head.length * 10 + static_cast<std::uint64_t>(line[at] - '0'), 1ULL << 62);
    } else if (line_start > 0 && header_is(line, length, "transfer-encoding")) {
      head.transfer_coding = true;
    }
    line_start = i + 1;
  }
  return head;
}

// One client connection as httplib's Stream: what came from the socket is buffered here, so
// that the head is complete before a worker starts on it. fd -1: in memory (the fuzz target's
// requests, the answers collected in written()).
class Connection final : public httplib::Stream {
 public:
  Connection(int fd, std::string peer, int peer_port) : fd_(fd), peer_(std::move(peer)), peer_port_(peer_port) {}
  ~Connection() override {
    if (fd_ >= 0) {
      ::shutdown(fd_, SHUT_RDWR);
      ::close(fd_);
    }
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  void append(const std::string& bytes) { in_ += bytes; }
  const std::string& written() const { return out_; }
  Head head() const { return scan_head(in_.data() + pos_, in_.size() - pos_); }
  std::size_t buffered() const { return in_.size() - pos_; }
  std::size_t requests = 0;
  Clock::time_point since = Clock::now();  // idle since, or the head's first byte

  // Reads what the socket holds, waiting up to `wait` for the first bytes: 1 some came, 0 none
  // yet, -1 closed or failed.
  int fill(std::chrono::milliseconds wait) {
    if (fd_ < 0) return -1;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(wait.count()));
    if (ready == 0) return 0;
    if (ready < 0) return errno == EINTR ? 0 : -1;
    char chunk[16 * 1024];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n == 0) return -1;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    if (pos_ == in_.size()) in_.clear(), pos_ = 0;
    if (buffered() == 0) since = Clock::now();
    in_.append(chunk, static_cast<std::size_t>(n));
    return 1;
  }

  // Before httplib reads a request: its deadline, and where its bytes end. A request without
  // Content-Length has no body (RFC 9112; Transfer-Encoding is refused before): httplib would
  // otherwise read until the client closes.
  void begin_request(const Head& head) {
    deadline_ = Clock::now() + kRequestTime;
    end_ = taken_ + head.size + (head.has_length ? head.length : 0);
  }
  // After the answer: the body's bytes httplib left (a request refused before its body was
  // read: 401, 421, 429) are skipped, so that the next request starts where it starts. False
  // when they do not come.
  bool end_request() {
    char scratch[4096];
    while (taken_ < end_)
      if (read(scratch, sizeof scratch) <= 0) return false;
    if (pos_ == in_.size()) in_.clear(), pos_ = 0;
    since = Clock::now();
    return true;
  }

  bool is_readable() const override { return buffered() > 0; }
  bool is_writable() const override {
    if (fd_ < 0) return true;
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kWriteWait).count())) == 1 &&
           (p.revents & (POLLERR | POLLHUP)) == 0;
  }
  ssize_t read(char* ptr, std::size_t size) override {
    if (taken_ >= end_) return 0;  // the request's end
    if (pos_ == in_.size()) {
      in_.clear(), pos_ = 0;
      // A body's bytes: each read within kReadWait, all before the request's deadline.
      const auto until = std::min(deadline_, Clock::now() + std::chrono::duration_cast<Clock::duration>(kReadWait));
      for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        if (left.count() <= 0) return -1;
        const int got = fill(left);
        if (got < 0) return -1;
        if (got > 0) break;
      }
    }
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(std::min(size, in_.size() - pos_), end_ - taken_));
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    taken_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, std::size_t size) override {
    if (fd_ < 0) {
      out_.append(ptr, size);
      return static_cast<ssize_t>(size);
    }
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(kWriteWait);
    for (;;) {
      if (!is_writable()) return -1;
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || Clock::now() > until) return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_;
    port = peer_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip.clear();
    port = -1;
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (fd_ >= 0 && ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      if (address.ss_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
        inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
        port = ntohs(v4->sin_port);
      } else if (address.ss_family == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
        inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
        port = ntohs(v6->sin6_port);
      }
      ip = text;
    }
  }
  socket_t socket() const override { return fd_; }

 private:
  const int fd_;
  const std::string peer_;
  const int peer_port_;
  std::string in_;           // bytes received; those before pos_ read by httplib
  std::size_t pos_ = 0;
  std::uint64_t taken_ = 0;  // bytes read by httplib since the connection began
  std::uint64_t end_ = 0;    // where the request being read ends
  Clock::time_point deadline_ = Clock::now() + kRequestTime;
  std::string out_;          // in memory: the answers
};

std::pair<std::string, int> peer_of(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  char text[INET6_ADDRSTRLEN] = {};
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return {"", -1};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    return {text, ntohs(v4->sin_port)};
  }
  if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    return {text, ntohs(v6->sin6_port)};
  }
  return {"", -1};
}

// httplib's pool, which first closes the idle connections (on the service's stop).
class WorkerPool final : public httplib::ThreadPool {
 public:
  WorkerPool(std::size_t threads, std::function<void()> before_shutdown)
      : httplib::ThreadPool(threads), before_shutdown_(std::move(before_shutdown)) {}
  void shutdown() override {
    before_shutdown_();
    httplib::ThreadPool::shutdown();
  }

 private:
  std::function<void()> before_shutdown_;
};

// Failures on stderr, one line each, at most kMaxLogLinesPerSecond (the number left out said
// with the next).
class FailureLog {
 public:
  void line(const std::string& text) {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    if (now - window_ >= std::chrono::seconds(1)) {
      window_ = now;
      lines_ = 0;
    }
    if (++lines_ > kMaxLogLinesPerSecond) {
      ++left_out_;
      return;
    }
    if (left_out_ > 0) fmt::print(stderr, "hazefree serve: ({} more failed requests not logged)\n", left_out_);
    left_out_ = 0;
    fmt::print(stderr, "hazefree serve: {}\n", text);
  }

 private:
  std::mutex mutex_;
  Clock::time_point window_{};
  int lines_ = 0;
  std::int64_t left_out_ = 0;
};

// httplib's server with its own connection handling (SPEC 12.1): a worker answers the requests
// whose heads are complete, waits kLinger for the next, then hands the connection to the idle
// thread, which reads heads as they come (epoll, no thread per connection) and gives complete
// ones back to the workers. httplib parses and routes each request (process_request).
class HttpServer final : public httplib::Server {
 public:
  // An answer made here, before httplib (411, 413, 431): counted and logged by the service.
  std::function<void(const Connection&, int, const std::string&)> on_refusal;
  std::atomic<bool> stopping{false};

  HttpServer() {
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
      max_idle_ = std::max<std::size_t>(16, std::min<std::size_t>(kMaxIdleConnections, files.rlim_cur / 2));
    new_task_queue = [this] {
      start_idle_thread();
      pool_ = new WorkerPool(kWorkers, [this] { stop_idle_thread(); });
      return pool_;  // httplib owns it; the idle thread ends before it does
    };
  }
  ~HttpServer() override { stop_idle_thread(); }

  // httplib listens with a backlog of 5: a burst of connections would wait for SYN retries.
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }

  // Answers every complete request buffered in `connection`; false when it is to be closed.
  bool answer_buffered(Connection& connection) {
    for (;;) {
      const Head head = connection.head();
      if (!head.complete && connection.buffered() <= kMaxHead) return true;
      if (!head.complete || head.size > kMaxHead)
        return refuse(connection, 431, "Request Header Fields Too Large",
                      fmt::format("request line and headers over {} bytes", kMaxHead));
      if (head.transfer_coding)
        return refuse(connection, 411, "Length Required", "request bodies need a Content-Length (no Transfer-Encoding)");
      if (head.has_length && head.length > kMaxBody)
        return refuse(connection, 413, "Payload Too Large", fmt::format("request body over {} bytes", kMaxBody));
      const bool last = stopping.load() || ++connection.requests >= kMaxRequestsPerConnection;
      bool closed = false;
      connection.begin_request(head);
      bool ok = false;
      try {
        ok = process_request(connection, last, closed, nullptr);
      } catch (const std::exception& e) {  // outside httplib's own catch: an error or content handler's
        if (on_refusal) on_refusal(connection, 500, fmt::format("request failed: {}", e.what()));
        return false;
      } catch (...) {
        if (on_refusal) on_refusal(connection, 500, "request failed");
        return false;
      }
      if (!ok || closed || last || !connection.end_request()) return false;
    }
  }

 private:
  bool refuse(Connection& connection, int status, const char* reason, const std::string& message) {
    const std::string body = json_text(json{{"error", message}}) + "\n";
    const std::string answer = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", status,
        reason, body.size(), body);
    for (std::size_t sent = 0; sent < answer.size();) {
      const ssize_t n = connection.write(answer.data() + sent, answer.size() - sent);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    if (on_refusal) on_refusal(connection, status, message);
    return false;
  }

  // httplib calls this on a worker for each accepted socket.
  bool process_and_close_socket(socket_t sock) override {
    const int on = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // no 40 ms Nagle/delayed-ACK wait per answer
    auto [peer, port] = peer_of(sock);
    serve_connection(new Connection(sock, std::move(peer), port));
    return true;
  }

  // On a worker: the connection's requests while they come, then to the idle thread.
  void serve_connection(Connection* connection) {
    std::unique_ptr<Connection> owned(connection);
    for (;;) {
      if (!answer_buffered(*owned)) return;
      const int got = owned->fill(kLinger);
      if (got < 0) return;
      if (got > 0 && owned->head().complete) continue;
      break;
    }
    park(owned.release());
  }

  void park(Connection* connection) {
    std::unique_ptr<Connection> owned(connection);
    std::lock_guard lock(idle_mutex_);
    if (epoll_ < 0 || stopping.load()) return;
    if (idle_.size() >= max_idle_) {  // the longest waiting one goes
      auto oldest = std::min_element(idle_.begin(), idle_.end(),
                                     [](const Connection* a, const Connection* b) { return a->since < b->since; });
      forget(*oldest);
      idle_.erase(oldest);
    }
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    event.data.ptr = owned.get();
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, owned->fd(), &event) != 0) return;
    idle_.insert(owned.release());
  }

  void forget(Connection* connection) {  // with idle_mutex_ held
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, connection->fd(), nullptr);
    delete connection;
  }

  void start_idle_thread() {
    std::lock_guard lock(idle_mutex_);
    if (epoll_ >= 0) return;
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    idle_running_ = true;
    idle_thread_ = std::thread([this] { idle_loop(); });
  }

  void stop_idle_thread() {
    {
      std::lock_guard lock(idle_mutex_);
      if (epoll_ < 0) return;
      idle_running_ = false;
    }
    if (idle_thread_.joinable()) idle_thread_.join();
    std::lock_guard lock(idle_mutex_);
    for (Connection* connection : idle_) forget(connection);
    idle_.clear();
    ::close(epoll_);
    epoll_ = -1;
  }

  void idle_loop() {
    std::array<epoll_event, 64> events{};
    for (;;) {
      const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), 100);
      std::vector<Connection*> ready;
      {
        std::lock_guard lock(idle_mutex_);
        if (!idle_running_) return;
        for (int i = 0; i < n; ++i) {
          auto* connection = static_cast<Connection*>(events[static_cast<std::size_t>(i)].data.ptr);
          const auto found = idle_.find(connection);
          if (found == idle_.end()) continue;
          if (connection->fill(std::chrono::milliseconds(0)) < 0) {
            idle_.erase(found);
            forget(connection);
          } else if (connection->head().complete || connection->buffered() > kMaxHead) {
            idle_.erase(found);
            ::epoll_ctl(epoll_, EPOLL_CTL_DEL, connection->fd(), nullptr);
            ready.push_back(connection);
          } else {
            epoll_event again{};
            again.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
            again.data.ptr = connection;
            ::epoll_ctl(epoll_, EPOLL_CTL_MOD, connection->fd(), &again);
          }
        }
        // Idle past kIdleTimeout, or a head not complete within kRequestTime: closed.
        const auto now = Clock::now();
        for (auto it = idle_.begin(); it != idle_.end();) {
          Connection* connection = *it;
          const auto allowed = connection->buffered() > 0 ? Clock::duration(kRequestTime) : Clock::duration(kIdleTimeout);
          if (now - connection->since > allowed) {
            it = idle_.erase(it);
            forget(connection);
          } else {
            ++it;
          }
        }
      }
      for (Connection* connection : ready) dispatch(connection);
    }
  }

  void dispatch(Connection* connection) {
    pool_->enqueue([this, connection] { serve_connection(connection); });
  }

  WorkerPool* pool_ = nullptr;
  std::size_t max_idle_ = kMaxIdleConnections;
  std::mutex idle_mutex_;
  int epoll_ = -1;
  bool idle_running_ = false;
  std::thread idle_thread_;
  std::unordered_set<Connection*> idle_;
};

}  // namespace

namespace {

// A key's value in a preset: a TOML integer, float or boolean where the text is one plainly (as
// its kind wants), else the text as a string ("5/255", "auto", "luma"), which reads back the same.
// toml++ 3.3 built with GCC writes a float with 17 significant digits (0.9 as
// 0.90000000000000002): longer than the text given, but it reads back as the same number.
void insert_value(toml::table& section, const std::string& leaf, const ConfigKeyInfo& key, const std::string& text) {
  const char* const end = text.data() + text.size();
  if (key.kind == ConfigKeyInfo::Kind::integer) {
    std::int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec == std::errc() && ptr == end) {
      section.insert(leaf, value);
      return;
    }
  } else if (key.kind == ConfigKeyInfo::Kind::number) {
    double value = 0.0;
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec == std::errc() && ptr == end && std::isfinite(value)) {
      section.insert(leaf, value);
      return;
    }
  } else if (key.kind == ConfigKeyInfo::Kind::boolean && (text == "true" || text == "false")) {
    section.insert(leaf, text == "true");
    return;
  }
  section.insert(leaf, text);
}

}  // namespace

std::string preset_text(const std::string& stream_name, const Options& options) {
  toml::table preset;
  for (const ConfigKeyInfo& key : configuration_keys()) {
    const auto given = options.find(key.name);
    if (given == options.end() && !key.processor_key) continue;
    const std::string& value = given != options.end() ? given->second : key.default_value;
    const auto dot = key.name.find('.');
    if (dot == std::string::npos) {
      insert_value(preset, key.name, key, value);
      continue;
    }
    auto [section, added] = preset.emplace<toml::table>(key.name.substr(0, dot));
    insert_value(*section->second.as_table(), key.name.substr(dot + 1), key, value);
  }
  std::ostringstream out;
  // Basic strings, as --print-config writes them (toml++ would pick literal ones by default).
  out << "# hazefree preset of stream '" << stream_name << "'\n"
      << toml::toml_formatter{preset, toml::format_flags::allow_unicode_strings} << "\n";
  return out.str();
}

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
  // DCP (SPEC 13): a stream outside DCP, or before its first frame, has no sample (an absent
  // series, which every client parses, rather than NaN, which spoils sums and comparisons).
  family("hazefree_atmospheric_light", "gauge",
         "DCP's atmospheric light A of the stream, per channel, in [0, 1] (no sample outside DCP).");
  for (std::size_t i = 0; i < streams.size(); ++i)
    for (std::size_t c = 0; c < 3 && all[i].haze_index >= 0.f; ++c)
      out += fmt::format("hazefree_atmospheric_light{{stream=\"{}\",channel=\"{}\"}} {}\n", streams[i]->config().name,
                         "rgb"[c], all[i].atmospheric_light[c]);
  auto per_dcp_stream = [&](const char* name, const char* help, auto value) {
    family(name, "gauge", help);
    for (std::size_t i = 0; i < streams.size(); ++i)
      if (all[i].haze_index >= 0.f)
        out += fmt::format("{}{{stream=\"{}\"}} {}\n", name, streams[i]->config().name, value(all[i]));
  };
  per_dcp_stream("hazefree_haze_index",
                 "DCP's haze index of the stream's last frame, in [0, 1]: 0 clear, rising with the haze (no sample "
                 "outside DCP).",
                 [](const StreamStatus& s) { return s.haze_index; });
  per_dcp_stream("hazefree_dcp_omega",
                 "The omega DCP dehazed the stream's last frame with: the configured one, or less with "
                 "dcp.auto_strength on a clear scene (no sample outside DCP).",
                 [](const StreamStatus& s) { return s.omega; });
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
  HttpServer server;
  ClientLimits served{kClientRate, kClientBurst};
  ClientLimits failures{kFailureRate, kFailureBurst};
  std::array<std::atomic<std::int64_t>, 200> refused{};  // answers 400..599 by status
  FailureLog log;
  std::atomic<int> previews{0};
  std::atomic<bool> in_memory{false};  // answer() used: a preview ends after its first try

  Impl(const ServiceConfig& c, std::vector<std::unique_ptr<Stream>>& s, bool gpu) : config(c), streams(s), gpu_metrics(gpu) {}

  Stream* find(const std::string& name) {
    for (auto& stream : streams)
      if (stream->config().name == name) return stream.get();
    return nullptr;
  }

  // With a token, every request but /metrics carries it: "Authorization: Bearer TOKEN", or
  // ?token=TOKEN where a browser cannot set a header (the page, its pictures).
  bool authorized(const httplib::Request& req) const {
    if (config.token.empty() || req.path == "/metrics") return true;
    const std::string header = req.get_header_value("Authorization");
    if (header.rfind("Bearer ", 0) == 0 && same_text(header.substr(7), config.token)) return true;
    return req.has_param("token") && same_text(req.get_param_value("token"), config.token);
  }

  // Without a token, a page of another site could reach the service through a name of its own
  // resolved to 127.0.0.1 (DNS rebinding): only loopback names and [server] hosts are served.
  bool host_allowed(const httplib::Request& req) const {
    if (!config.token.empty()) return true;
    if (!req.has_header("Host")) return false;
    const std::string host = host_name(req.get_header_value("Host"));
    if (host == "localhost" || host == "::1") return true;
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) return true;
    return std::find(config.hosts.begin(), config.hosts.end(), host) != config.hosts.end();
  }

  void count(int status) {
    if (status >= 400 && status < 600) refused[static_cast<std::size_t>(status - 400)].fetch_add(1);
  }

  std::string refused_metrics() const {
    std::string out =
        "# HELP hazefree_http_refused_total HTTP requests answered with an error, by status (429: over a client's "
        "rate; 401: no or a wrong token; 421: a Host name not served).\n# TYPE hazefree_http_refused_total counter\n";
    for (std::size_t i = 0; i < refused.size(); ++i)
      if (const auto n = refused[i].load(); n > 0) out += fmt::format("hazefree_http_refused_total{{status=\"{}\"}} {}\n", 400 + i, n);
    return out;
  }

  void routes() {
    server.set_payload_max_length(kMaxBody);
    server.set_read_timeout(5, 0);
    server.set_write_timeout(5, 0);
    server.set_tcp_nodelay(true);
    // SO_REUSEADDR only (httplib adds SO_REUSEPORT, with which a second service would share the
    // port): a restart binds past TIME_WAIT, a second live listener on the port is refused.
    server.set_socket_options([](socket_t sock) {
      const int on = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    });
    server.on_refusal = [this](const Connection& connection, int status, const std::string& message) {
      count(status);
      std::string peer;
      int port = 0;
      connection.get_remote_ip_and_port(peer, port);
      log.line(fmt::format("request from {}: {} {}", printable(peer), status, printable(message)));
    };
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!host_allowed(req)) {
        send_error(res, 421, fmt::format("Host '{}' is not served here (without a token: localhost, 127.0.0.1, [::1] "
                                         "and [server] hosts)", req.get_header_value("Host").substr(0, 100)));
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.path == "/metrics") return httplib::Server::HandlerResponse::Unhandled;  // never limited
      const std::string client = client_key(req.remote_addr);
      if (!authorized(req)) {
        // Failed authentications are counted apart: a flood of wrong tokens from any address
        // never takes a right token's requests.
        if (!failures.take(client)) {
          res.set_header("Retry-After", "1");
          send_error(res, 429, "too many failed authentications; try again shortly");
          return httplib::Server::HandlerResponse::Handled;
        }
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, 401, "a valid token is needed (Authorization: Bearer TOKEN)");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (!served.take(client)) {
        res.set_header("Retry-After", "1");
        send_error(res, 429, "too many requests; try again shortly");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      try {
        if (res.status == 404) send_error(res, 404, fmt::format("{}: no such resource", req.path));
        else if (res.status == 413) send_error(res, 413, fmt::format("request body over {} bytes", kMaxBody));
        else send_error(res, res.status, fmt::format("{}: request refused", req.path));
      } catch (const std::exception&) {
        res.body.clear();
      }
    });
    // The last line of defence: whatever a handler throws is a 500 and a log line.
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
      std::string what = "unknown error";
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      res.headers.clear();
      send_error(res, 500, fmt::format("the request failed: {}", what));
    });
    // Every answer: errors counted for /metrics, and the failures (400, 5xx) logged.
    server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      count(res.status);
      if (res.status == 400 || res.status >= 500) {
        std::string body = res.body.substr(0, 300);
        while (!body.empty() && body.back() == '\n') body.pop_back();
        log.line(fmt::format("{} {} from {}: {} {}", printable(req.method), printable(req.path), printable(req.remote_addr),
                             res.status, printable(body)));
      }
    });

    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(page_html(), "text/html; charset=utf-8");
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_text(streams, gpu_metrics ? gpu_memory_used() : 0) + refused_metrics(),
                      "text/plain; version=0.0.4");
    });
    server.Get("/api/keys", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(json_text(keys_json()), "application/json");
    });
    server.Get("/api/streams", [this](const httplib::Request&, httplib::Response& res) {
      json all = json::array();
      for (const auto& stream : streams) all.push_back(stream_json(*stream));
      res.set_content(json_text(all), "application/json");
    });
    server.Get(R"(/api/streams/([A-Za-z0-9_-]+))", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) { res.set_content(json_text(stream_json(stream)), "application/json"); });
    });
    server.Patch(R"(/api/streams/([A-Za-z0-9_-]+)/options)", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) { patch_options(stream, req, res); });
    });
    server.Get(R"(/api/streams/([A-Za-z0-9_-]+)/preset\.toml)", [this](const httplib::Request& req, httplib::Response& res) {
      with_stream(req, res, [&](Stream& stream) { res.set_content(preset_text(stream.config().name, stream.options()), "application/toml"); });
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
    if (req.body.empty())
      return send_error(res, 400, "no body: send a JSON object of configuration keys, e.g. {\"dcp.omega\": 0.9}");
    json body;
    try {
      body = json::parse(req.body);  // text that is not UTF-8, a number beyond a double's range: refused here
    } catch (const json::exception& e) {
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
    json answer{{"name", stream.config().name}, {"options", effective_options(stream)}};
    // Taken, but not used by the stream's mode: said as the command line says it.
    const std::string unused = unused_key_warning_of(stream.options());
    if (!unused.empty()) answer["warnings"] = json::array({unused});
    res.set_content(json_text(answer), "application/json");
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

  // Pictures at kPreviewInterval against the clock (the encoding and the writing inside the
  // interval, not added to it); the first as soon as the stream has one.
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
    auto due = std::make_shared<std::optional<Clock::time_point>>();
    res.set_chunked_content_provider(
        "multipart/x-mixed-replace; boundary=hazefreeframe",
        [this, &stream, output, due](std::size_t, httplib::DataSink& sink) {
          if (in_memory && *due) return false;  // answer(): one try, then the preview ends
          if (*due) std::this_thread::sleep_until(**due);
          std::optional<std::vector<std::uint8_t>> jpeg;
          try {
            // The first picture may wait for the stream's first copy; later ones take the latest.
            jpeg = stream.snapshot(output, kPreviewWidth, std::chrono::milliseconds(*due ? 0 : 1000));
          } catch (const std::exception&) {
          }
          if (!sink.is_writable() || server.stopping.load()) return false;
          const auto now = Clock::now();
          // The next one an interval after this one's time; a preview fallen behind (a slow
          // client) starts again from now rather than sending a burst.
          *due = *due && now - **due < kPreviewInterval ? **due + kPreviewInterval : now + kPreviewInterval;
          if (!jpeg) return true;  // no picture yet: try again
          const std::string head = fmt::format("--hazefreeframe\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\n\r\n", jpeg->size());
          return sink.write(head.data(), head.size()) &&
                 sink.write(reinterpret_cast<const char*>(jpeg->data()), jpeg->size()) && sink.write("\r\n", 2);
        },
        [this](bool) { previews.fetch_sub(1); });
  }
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
  impl_->server.widen_backlog();
}

void HttpService::serve() { impl_->server.listen_after_bind(); }

void HttpService::stop() {
  impl_->server.stopping.store(true);
  impl_->server.stop();
}

std::string HttpService::answer(const std::string& requests) {
  impl_->in_memory.store(true);
  Connection connection(-1, "192.0.2.1", 50000);
  connection.append(requests);
  impl_->server.answer_buffered(connection);
  return connection.written();
}

}  // namespace hazefree::serve
