// hazefree: the program's entry, above the libraries it uses (as FFmpeg's fftools/ sits above
// its own): `hazefree INPUT OUTPUT` runs the pipeline, or a job in chunks with --chunks; a first
// word naming a subcommand (bench, job) hands the rest of the line to it.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "io/logging.hpp"
#include "io/url.hpp"
#include "jobs/job_command.hpp"
#include "jobs/job_options.hpp"
#include "pipeline/processor_factory.hpp"
#include "pipeline/bench.hpp"
#include "pipeline/options.hpp"
#include "pipeline/pipeline.hpp"
#if defined(HAZEFREE_HAVE_SERVE)
#include "serve/serve_command.hpp"
#endif

namespace {

// Atomic, not volatile sig_atomic_t: two signals can be handled at once on two threads, and a
// plain ++ could then count them as one.
std::atomic<int> g_signals{0};

// First signal: drain, flush and finish the output. Second: abort at once.
extern "C" void on_stop_signal(int) {
  if (g_signals.fetch_add(1) + 1 >= 2) {
    static const char kMessage[] = "\nhazefree: aborted\n";
    (void)!write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    _exit(130);
  }
  hazefree::request_stop();
}

// Its only effect is to make a blocking read() of the decoder thread return (EINTR).
extern "C" void on_wake_signal(int) {}

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked read returns and sees the stop request
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // SIGURG is ignored by default, so borrowing it to wake the reader changes nothing else.
  struct sigaction wake {};
  wake.sa_handler = on_wake_signal;
  sigemptyset(&wake.sa_mask);
  wake.sa_flags = 0;
  sigaction(SIGURG, &wake, nullptr);
  hazefree::set_stop_wake_signal(SIGURG);
  std::signal(SIGPIPE, SIG_IGN);  // a closed output pipe is an error message, not a silent death
}

int run_main(int argc, char** argv) {
  hazefree::RunOptions options;
  hazefree::jobs::JobOptions job;
  std::string exit_message;
  try {
    hazefree::jobs::JobFlags job_flags;
    if (!hazefree::parse_command_line(argc, argv, options, exit_message, nullptr, "",
                                      [&job_flags](CLI::App& app) { job_flags.add_to(app, false); })) {
      fmt::print("{}", exit_message);
      return 0;
    }
    job = job_flags.options();
    // After -ss the output starts at zero as ffmpeg's does (a job's chunks keep the span's clock;
    // its join moves them).
    if (!job.active() && options.trim_start > 0) options.output_options.start_at_zero = true;
    if (job.active() && !options.progress.url.empty())
      throw hazefree::UsageError("-progress: not offered for a run in chunks (its progress line is on stderr)");
    if (job.active() && (!options.output_options.audio || !options.output_options.subtitles))
      throw hazefree::UsageError("-an, -sn: not offered for a run in chunks; leave them out afterwards: ffmpeg -i "
                                 "OUT -c copy -an OUT2");
  } catch (const hazefree::UsageError& e) {
    fmt::print(stderr, "hazefree: {}\n", e.what());
    return 2;
  }

  install_signal_handlers();
  // Our own line says what failed; FFmpeg's libraries' lines only with -v (-loglevel verbose).
  hazefree::io::set_ffmpeg_log_level(options.verbose ? hazefree::io::LogLevel::verbose
                                                     : hazefree::io::LogLevel::silent);
  // -q (and -loglevel error and below): errors only, as ffmpeg's own -loglevel error.
  hazefree::io::show_warnings(!options.quiet);
  try {
    if (job.active()) return hazefree::jobs::run_local_job(options, job);  // readies the GPUs where its workers run
    if (const std::string unused = hazefree::unused_key_warning(options.processing); !unused.empty())
      hazefree::io::warning(unused);
    hazefree::prepare_gpu_for_run(options);
    const hazefree::RunSummary s = hazefree::run_pipeline(options);
    if (!options.quiet) {
      const double fps = s.seconds > 0 ? s.frames_out / s.seconds : 0.0;
      std::string line = fmt::format("hazefree: {} frames in {:.2f} s ({:.1f} fps), {} on {}",
                                     s.frames_out, s.seconds, fps, hazefree::to_string(options.processing.mode),
                                     s.processor);
      if (s.packets_copied) line += fmt::format(", {} packets copied", s.packets_copied);
      if (s.decode_errors) line += fmt::format(", {} damaged frames skipped", s.decode_errors);
      if (options.live)
        line += fmt::format(", {} frames dropped, latency mean {:.1f} ms, median {:.1f}, p95 {:.1f}, max {:.1f}",
                            s.frames_dropped, s.latency_mean_ms, s.latency_p50_ms, s.latency_p95_ms,
                            s.latency_max_ms);
      if (options.live || s.reconnects)
        line += fmt::format(", {} reconnects, {:.1f} seconds lost", s.reconnects, s.seconds_lost);
      if (s.interrupted) line += " (interrupted: output ends early)";
      fmt::print(stderr, "{}\n", line);
      if (options.verbose)
        fmt::print(stderr, "hazefree: busy per frame: decode {:.3f} ms, process {:.3f} ms, encode {:.3f} ms\n",
                   s.decode_ms, s.process_ms, s.encode_ms);
    }
    if (s.interrupted) return 130;
    // A file that ends before the frames its header announces (cut short in a copy or a
    // download): the frames there are are written, as ffmpeg does, and the user is told.
    const bool whole_file = !options.input_options.trim.active() && !options.live;
    if (whole_file && s.frames_announced > 0 && s.frames_in + s.decode_errors + 1 < s.frames_announced)
      hazefree::io::warning(fmt::format("{}: the input ended after {} of the {} frames its header announces (a truncated "
                                        "file?)", options.input, s.frames_in, s.frames_announced));
    if (!s.input_lost.empty()) {  // a live source lost for good: the output is kept, the run failed
      fmt::print(stderr, "hazefree: {}\n", s.input_lost);
      return 1;
    }
    return 0;
  } catch (const hazefree::UsageError& e) {
    fmt::print(stderr, "hazefree: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hazefree: {}\n", e.what());
    return 1;
  }
}

int job_command(int argc, char** argv) {
  install_signal_handlers();
  return hazefree::jobs::job_main(argc, argv);
}

// The subcommands: the first word of the command line, then the subcommand's own main with the
// line from that word on (argv[0] is the word).
struct Subcommand {
  const char* name;
  int (*main)(int argc, char** argv);
};
#if !defined(HAZEFREE_HAVE_SERVE)
// A build without cpp-httplib has no service (CMakeLists.txt, HAZEFREE_SERVE).
int serve_missing(int, char**) {
  fmt::print(stderr, "hazefree: serve: this hazefree was built without the service (no cpp-httplib when it was built)\n");
  return 2;
}
#endif

constexpr Subcommand kSubcommands[] = {
    {"bench", hazefree::bench_main},
    {"job", job_command},
#if defined(HAZEFREE_HAVE_SERVE)
    {"serve", hazefree::serve::serve_main},
#else
    {"serve", serve_missing},
#endif
};

// OpenMP's idle workers spin between parallel regions (libgomp: 300000 turns) on the cores the
// decoder and x264 need, which on a busy machine made the CPU backend slower than one thread;
// waiting passively is as fast on an idle machine (docs/PERFORMANCE.md, "OpenMP waiting").
// libgomp reads its environment as it loads, before main(): the program starts itself again,
// once, with OMP_WAIT_POLICY=passive, unless OMP_WAIT_POLICY or GOMP_SPINCOUNT says otherwise.
void wait_passively(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only when it failed: the run goes on spinning
}

// Messages to a stderr nobody reads any more (`hazefree ... 2>&1 | head -1`) are dropped instead
// of failing: a failed write threw from fmt::print (std::system_error) and aborted the run,
// its output deleted. stderr becomes a stream whose writes always succeed, unbuffered as before.
void keep_stderr_writes_from_failing() {
  cookie_io_functions_t functions{};
  functions.write = [](void*, const char* data, std::size_t size) -> ssize_t {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(STDERR_FILENO, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // closed or failing: the rest of this message is dropped
      done += static_cast<std::size_t>(n);
    }
    return static_cast<ssize_t>(size);
  };
  if (std::FILE* messages = fopencookie(nullptr, "w", functions)) {
    std::setvbuf(messages, nullptr, _IONBF, 0);
    stderr = messages;
  }
}

}  // namespace

int main(int argc, char** argv) {
  wait_passively(argv);
  keep_stderr_writes_from_failing();
  if (argc >= 2)
    for (const Subcommand& command : kSubcommands)
      if (std::strcmp(argv[1], command.name) == 0) return command.main(argc - 1, argv + 1);
  return run_main(argc, argv);
}
