#include "serve/serve_command.hpp"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "serve/http_service.hpp"
#include "serve/service_config.hpp"
#include "serve/stream.hpp"

namespace hazefree::serve {
namespace {

namespace fs = std::filesystem;

// The folder of the "hls" outputs, removed when the service ends.
struct HlsFolder {
  std::string path;
  HlsFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hazefree-serve-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw ConfigError("cannot create a folder for the HLS outputs in " + pattern, 1);
    path = pattern;
  }
  ~HlsFolder() {
    std::error_code error;
    fs::remove_all(path, error);
  }
  HlsFolder(const HlsFolder&) = delete;
  HlsFolder& operator=(const HlsFolder&) = delete;
};

}  // namespace

int serve_main(int argc, char** argv) {
  CLI::App app{"hazefree serve: every [[stream]] of CONFIG.toml in one process, with Prometheus metrics at /metrics, "
               "a JSON API under /api/ and a page at / to watch and tune the streams live (docs/SERVE.md)",
               "hazefree serve"};
  app.footer("Exit status: 1 address in use, 2 bad usage or configuration, 130 stopped by SIGINT/SIGTERM.\n");
  std::string config_path, listen;
  app.add_option("CONFIG", config_path, "the service's TOML file: [server] and one [[stream]] per camera")
      ->required();
  app.add_option("--listen", listen, "ADDR:PORT to serve HTTP on (default [server] listen, else 127.0.0.1:8080); "
                                     "another address than loopback needs a token");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "hazefree serve: {} (see hazefree serve --help)\n", e.what());
    return 2;
  }

  // SIGINT/SIGTERM go to one thread that stops the service; every other thread blocks them. An
  // ignored signal would be discarded before sigwait() sees it (a shell starts background
  // programs with SIGINT ignored): both are blocked, then given their default action.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone is an error of its request, not the service's end

  try {
    const char* environment_token = std::getenv("HAZEFREE_TOKEN");
    const ServiceConfig config = load_service_config(config_path, listen, environment_token ? environment_token : "");
    HlsFolder hls;
    std::vector<std::unique_ptr<Stream>> streams;
    // The GPU's memory is read only where a stream may use the GPU (reading it starts a context).
    bool any_gpu_stream = false;
    for (const StreamConfig& stream : config.streams) {
      const fs::path dir = fs::path(hls.path) / stream.name;
      if (stream.output == "hls") fs::create_directories(dir);
      streams.push_back(std::make_unique<Stream>(stream, dir.string()));
      const auto backend = stream.options.find("backend");
      any_gpu_stream = any_gpu_stream || backend == stream.options.end() || backend->second != "cpu";
    }
    const bool gpu_metrics = any_gpu_stream && gpu_available();
    HttpService http(config, streams, gpu_metrics);
    http.bind();  // a port in use is found before any stream starts

    std::thread signals([&http, stop_signals] {
      int received = 0;
      for (int count = 0;; ++count) {
        if (sigwait(&stop_signals, &received) != 0) continue;
        if (count > 0) {
          static const char kMessage[] = "\nhazefree serve: aborted\n";
          (void)!write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
          _exit(130);
        }
        http.stop();
      }
    });
    signals.detach();
    for (auto& stream : streams) stream->start();
    fmt::print(stderr, "hazefree serve: {} stream{} on http://{}:{}/\n", streams.size(), streams.size() == 1 ? "" : "s",
               config.host.find(':') != std::string::npos ? "[" + config.host + "]" : config.host, config.port);
    http.serve();
    fmt::print(stderr, "hazefree serve: stopping: finishing every output\n");
    for (auto& stream : streams) stream->request_stop();  // all of them finish at once
    for (auto& stream : streams) stream->stop();
    return 130;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "hazefree serve: {}\n", e.what());
    return e.exit_status;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hazefree serve: {}\n", e.what());
    return 1;
  }
}

}  // namespace hazefree::serve
