#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_harness.hpp"
#include "serve/http_service.hpp"
#include "serve/service_config.hpp"
#include "serve/stream.hpp"

namespace hazefree::fuzz {
namespace {

// A service of one stream that is never started (its snapshots answer at once: no picture),
// with or without a token.
struct Service {
  serve::ServiceConfig config;
  std::vector<std::unique_ptr<serve::Stream>> streams;
  std::unique_ptr<serve::HttpService> http;

  explicit Service(const std::string& token) {
    config.token = token;
    config.hosts = {"cams.example"};
    serve::StreamConfig stream;
    stream.name = "gate";
    stream.input = "udp://127.0.0.1:9";
    stream.options = {{"backend", "cpu"}, {"mode", "dcp"}};
    config.streams.push_back(stream);
    streams.push_back(std::make_unique<serve::Stream>(stream, ""));
    streams.back()->request_stop();
    http = std::make_unique<serve::HttpService>(config, streams, false);
  }
};

}  // namespace

void serve_one_input(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  static Service open_service(""), token_service("fuzz-token-0123456789");
  Service& service = data[0] % 2 == 0 ? open_service : token_service;
  const std::string requests(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string answers = service.http->answer(requests);
  // Whatever came, what went back is HTTP answers (or nothing, for a head not complete).
  if (!answers.empty() && answers.rfind("HTTP/1.1 ", 0) != 0) std::abort();
}

}  // namespace hazefree::fuzz

#ifdef HAZEFREE_FUZZ_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hazefree::fuzz::serve_one_input(data, size);
  return 0;
}
#endif
