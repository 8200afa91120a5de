// Options of a run: one table of configuration keys (each row an OptionRow of
// common/config_key.hpp: a typed KeySpec with a setter and a getter) drives the TOML presets,
// --set key=value, the command-line shortcuts, --print-config, the range checks and the
// library's key list. RunOptions holds the user's settings; what a program hands a run besides
// (callbacks, a job's start state, a stop flag) is its RunHooks (pipeline/run_hooks.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/media_reader.hpp"
#include "io/media_writer.hpp"
#include "common/config_key.hpp"
#include "common/params.hpp"
#include "pipeline/progress.hpp"
#include "pipeline/run_hooks.hpp"

namespace CLI {
class App;
class Option;
class ParseError;
class Validator;
}  // namespace CLI

namespace hazefree {

// A usage or configuration error: one line naming the key (or option) and the accepted values;
// the command exits with status 2. key() is the configuration key it is about (empty when it is
// about none, e.g. a missing INPUT).
struct UsageError : std::runtime_error {
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
  UsageError(std::string key, const std::string& message) : std::runtime_error(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

struct RunOptions {
  std::string input;
  std::string output;
  ProcessingConfig processing;
  io::InputOptions input_options;
  io::OutputOptions output_options;
  bool side_by_side = false;
  std::string stats_path;  // --stats FILE: one JSON line per frame (pipeline/frame_stats.hpp)
  bool stats_append = false;  // added to an existing stats file (the library's RunControl::append_stats)
  // output.depth (SPEC 7): bits per sample of the output, 0 = the input's own (auto), else 8, 10,
  // 12 or 16; frames are converted to it as they are read, so they are processed at it too.
  int output_depth = 0;
  bool live = false;
  int queue_depth = 8;       // frames waiting between two stages (live: 1-2)
  bool quiet = false;
  bool verbose = false;
  // The progress line and ffmpeg's -progress report (pipeline/progress.hpp): -stats, -nostats,
  // -stats_period, -progress URL.
  ProgressOptions progress;
  std::string input_size;    // input.size "WxH" for rawvideo
  std::string input_rate;    // input.framerate
  std::string input_pixel_format;  // input.pixel_format
  // The span of the input (ffmpeg's -ss, -t, -to, -frames:v): input.start, input.duration and
  // input.to in seconds (kNone: not given), output.frames (0: all); resolved into
  // input_options.trim by finalize_options().
  static constexpr double kNone = -1.0;
  double trim_start = 0.0;
  double trim_duration = kNone;
  double trim_to = kNone;
  std::int64_t max_frames = 0;
  // A plain still-image output name took the first frame only (finalize_options): said once.
  bool one_picture_implied = false;
  // SPEC 9. input.timeout: seconds without a packet that count as a stall, kAutoTimeout = 5 with
  // --live for network and camera sources, else 0 (none); resolved into input_options by
  // finalize_options(). input.reconnect: reopening attempts after a loss (live only), kAuto =
  // unlimited with --live, else 0; kUnlimited = no limit.
  static constexpr double kAutoTimeout = -1.0;
  static constexpr int kAuto = -2;
  static constexpr int kUnlimited = -1;
  double input_timeout = kAutoTimeout;
  int input_reconnect = kAuto;
  // What a program that runs the pipeline hands it besides these settings (a job's start
  // state, the library's callbacks, a stop flag): pipeline/run_hooks.hpp.
  RunHooks hooks;
};

// One configuration key: its typed description (name, help, kind, bounds, choices, modes,
// shortcut flag, range text) and its value in the run's options (common/config_key.hpp); the
// setters of config_keys() throw UsageError naming the key.
using ConfigKey = OptionRow<RunOptions>;

// The table: the keys outside a section first (mode, color, backend, threads, side_by_side), then
// dcp.*, he.*, ahe.*, input.*, output.*, pipeline.*.
const std::vector<ConfigKey>& config_keys();
// The default of a key as written in TOML (its value in a fresh RunOptions).
std::string default_text(const ConfigKey& key);

// The command-line shortcuts of the table's keys (--mode, --window, --output-depth, ...): each
// row's `flag` added to a CLI11 app with its range and default in the help; apply() sets the keys
// whose flag was given, through the table's setters (after a preset, before --set).
class KeyFlags {
 public:
  // Adds the flag of each key that has one and for which `wanted` is true.
  KeyFlags(CLI::App& app, const std::function<bool(const ConfigKey&)>& wanted);
  KeyFlags() = default;
  ~KeyFlags();
  // Adds more flags, in the help's `group` (CLI11's option group; empty: the app's default).
  void add(CLI::App& app, const std::function<bool(const ConfigKey&)>& wanted, const std::string& group);
  void apply(RunOptions& options) const;
  // True when the flag of `key` was given.
  bool given(const std::string& key) const;

 private:
  struct Flag;
  std::vector<std::unique_ptr<Flag>> flags_;  // CLI11 keeps pointers to their values
};

// Sets one key from text ("0.9", "luma", "true"); throws UsageError naming the key.
void set_config_value(RunOptions& options, const std::string& key, const std::string& value);
// Applies one --set argument "key=value"; throws UsageError naming it when malformed.
void apply_set_argument(RunOptions& options, const std::string& assignment);
// What a preset file set: its keys, each with its text as the file left it. finalize_options()
// names the file in a refusal of one of them (out of its bounds, against another key) that a
// flag or --set did not change since, as the file's other errors name it.
struct PresetValues {
  std::string path;
  std::map<std::string, std::string> values;
};
// Applies a TOML file; throws UsageError naming the file, and the key or the parse position.
PresetValues apply_config_file(RunOptions& options, const std::string& path);
// The same from TOML text; `source` names it in messages.
void apply_config_text(RunOptions& options, const std::string& text, const std::string& source);
// The effective configuration as TOML (what --print-config prints).
std::string format_config(const RunOptions& options);
// Cross-key checks after everything is applied (ranges of the processing parameters...); an
// error about a value of `preset` names its file.
void finalize_options(RunOptions& options, const PresetValues& preset = {});
// The span of input.start, input.duration, input.to and output.frames; throws UsageError for
// -t with -to, or -to not after -ss.
io::InputOptions::Trim trim_of(const RunOptions& options);

// A CLI11 parse error of `app` as one line (the command line's, bench's): an unknown option with
// the flags and keys it may mean, or words too many, pointing at the app's --help; else CLI11's
// own text ("--frames: 0 is outside [1, 100000]").
UsageError usage_error_of(const CLI::ParseError& error, const CLI::App& app);
// The CLI11 check of a number flag outside the table (a job's --chunk-seconds) by the table's
// bounds, in its words: "--chunk-seconds: -1 must be greater than 0", "0 is outside [1, 64]".
CLI::Validator bounds_check(const Bounds& bounds);

// Parses the main command line (not `bench`). Returns false when the program should exit
// successfully right away (--help, --version, --print-config); `exit_message` holds its output.
// Throws UsageError on bad usage.
// With `positionals`, the command line of `job plan` instead: DIR and INPUT OUTPUT pairs go there
// and `usage` heads the help. `add_flags` adds the flags of a room above (the jobs') to the app.
bool parse_command_line(int argc, char** argv, RunOptions& options, std::string& exit_message,
                        std::vector<std::string>* positionals = nullptr, const std::string& usage = "",
                        const std::function<void(CLI::App&)>& add_flags = {});

}  // namespace hazefree
