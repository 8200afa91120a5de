#include "serve/serve_command.hpp"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "io/logging.hpp"
#include "serve/http_service.hpp"
#include "serve/service_config.hpp"
#include "serve/stream.hpp"

namespace hazefree::serve {
namespace {

namespace fs = std::filesystem;

// The folder of the "hls" outputs, $TMPDIR/hazefree-serve-PID-XXXXXX, made only where a stream
// has one and removed when the service ends. A service that could not remove its own (killed,
// aborted) leaves it behind: the next service removes the folders of processes that are gone.
struct HlsFolder {
  std::string path;
  explicit HlsFolder(bool needed) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string folder = tmp && *tmp ? tmp : "/tmp";
    remove_stale(folder);
    if (!needed) return;
    std::string pattern = folder + "/hazefree-serve-" + std::to_string(getpid()) + "-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw ConfigError("cannot create a folder for the HLS outputs in " + pattern, 1);
    path = pattern;
  }
  ~HlsFolder() {
    std::error_code error;
    if (!path.empty()) fs::remove_all(path, error);
  }
  // hazefree-serve-PID-* of this user whose process no longer exists.
  static void remove_stale(const std::string& folder) {
    static const std::string kPrefix = "hazefree-serve-";
    std::error_code error;
    for (fs::directory_iterator entry(folder, error), end; !error && entry != end; entry.increment(error)) {
      const std::string name = entry->path().filename().string();
      if (name.rfind(kPrefix, 0) != 0) continue;
      const std::size_t digits = name.find('-', kPrefix.size());
      if (digits == std::string::npos || digits == kPrefix.size()) continue;
      const std::string pid_text = name.substr(kPrefix.size(), digits - kPrefix.size());
      if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
      struct stat info {};
      if (lstat(entry->path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != getuid()) continue;
      if (kill(static_cast<pid_t>(std::stol(pid_text)), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to see
      std::error_code ignored;
      fs::remove_all(entry->path(), ignored);
    }
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
      ->required()
      ->type_name("");
  app.add_option("--listen", listen,
                 "the address and port to serve HTTP on (default [server] listen, else 127.0.0.1:8080); another "
                 "address than loopback needs a token")
      ->type_name("ADDR:PORT");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "FFmpeg's and the encoders' own lines on stderr too (URL secrets hidden)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "hazefree serve: {} (see hazefree serve --help)\n", e.what());
    return 2;
  }

  // SIGINT/SIGTERM are blocked in every thread from here on, and this thread takes them with
  // sigwait() once the streams run: a signal that comes earlier (while the configuration is read,
  // the port bound, the streams started) stays pending and is taken then, so none is lost. An
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

  io::install_ffmpeg_log_callback();  // FFmpeg's lines too have their URL secrets hidden
  // The service's own lines say what failed; FFmpeg's (a decoder's complaints about a stream
  // joined between keyframes, x264's statistics) only with -v, as in a single run.
  io::set_ffmpeg_log_level(verbose ? io::LogLevel::verbose : io::LogLevel::silent);

  try {
    const char* environment_token = std::getenv("HAZEFREE_TOKEN");
    const ServiceConfig config = load_service_config(config_path, listen, environment_token ? environment_token : "");
    HlsFolder hls(std::any_of(config.streams.begin(), config.streams.end(),
                              [](const StreamConfig& stream) { return stream.output == "hls"; }));
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

    std::atomic<bool> http_ended{false};
    std::thread http_thread([&http, &http_ended] {
      http.serve();
      http_ended.store(true);
    });
    for (auto& stream : streams) stream->start();
    fmt::print(stderr, "hazefree serve: {} stream{} on http://{}:{}/\n", streams.size(), streams.size() == 1 ? "" : "s",
               config.host.find(':') != std::string::npos ? "[" + config.host + "]" : config.host, config.port);
    // Until a stop signal (pending since any moment after the start, or to come), or the HTTP
    // side's end.
    const timespec tick{0, 100 * 1000 * 1000};
    while (!http_ended.load())
      if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) break;
    // A second signal aborts at once.
    std::thread([stop_signals] {
      int received = 0;
      while (sigwait(&stop_signals, &received) != 0) {
      }
      static const char kMessage[] = "\nhazefree serve: aborted\n";
      (void)!write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
      _exit(130);
    }).detach();
    fmt::print(stderr, "hazefree serve: stopping: finishing every output\n");
    // Every run ends its opening or reading at once (its reader looks at the stream's stop
    // state), drains, flushes and writes its trailer; all of them finish at once.
    for (auto& stream : streams) stream->request_stop();
    // A stop asked before the server's loop began would be lost: asked again until it ended.
    while (!http_ended.load()) {
      http.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    http_thread.join();
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
