#include "pipeline/options.hpp"

#include "common/option_rows.hpp"
#include "common/toml_value.hpp"
#include "io/logging.hpp"
#include "pipeline/frame_stats.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

namespace hazefree {
namespace {

// A run's numeric keys are checked against their bounds as they are set; the processing rows
// (common/config_key.cpp) are checked by validate() in finalize_options().
using Rows = OptionRows<RunOptions, BoundsCheck::when_set>;

// A time key: seconds, or ffmpeg's [HH:]MM:SS[.m...]; `none` (RunOptions::kNone) where the key
// may be left unset.
template <typename Access>
ConfigKey time_key(KeySpec spec, Bounds bounds, bool unset_allowed, Access access) {
  spec.bounds = bounds;
  if (unset_allowed) spec.choices = {"none"};
  spec.help += "; seconds or [HH:]MM:SS[.frac]";
  spec.value_name = "TIME";
  return Rows::custom(
      spec,
      [unset_allowed, access](const KeySpec& spec, RunOptions& o, const std::string& v) {
        if (unset_allowed && v == "none") {
          access(o) = RunOptions::kNone;
          return;
        }
        double seconds = 0.0;
        if (!io::parse_time_text(v, &seconds)) refuse_value(spec, v);
        check_bounds(spec, seconds, v);
        access(o) = seconds;
      },
      [access](const RunOptions& o) {
        const double v = access(o);
        return v == RunOptions::kNone ? toml_string("none") : fmt::format("{}", v);
      });
}

// A demuxer option of raw input or a camera (input.format, input.size, input.framerate,
// input.pixel_format), checked by FFmpeg's own parser as it is set (`valid`, empty allowed): a
// value FFmpeg refuses is a usage error naming the option as given on the command line, its key
// and `cause` ("-pixel_format bogus (input.pixel_format): no such pixel format ..."), not the
// input's failure to open.
template <typename Access>
ConfigKey demuxer_option_key(KeySpec spec, std::string accepted, std::string spelling,
                             bool (*valid)(const std::string&), std::string cause, Access access) {
  spec.accepted = std::move(accepted);
  return Rows::custom(
      spec,
      [spelling, valid, cause, access](const KeySpec& spec, RunOptions& o, const std::string& v) {
        if (!v.empty() && !valid(v))
          throw KeyError(spec.name, fmt::format("{} {} ({}): {}", spelling, v, spec.name, cause));
        access(o) = v;
      },
      [access](const RunOptions& o) { return toml_string(access(o)); });
}

// One value of output.encoder_options.
void set_encoder_option(const KeySpec& spec, std::map<std::string, std::string>& options, const std::string& v) {
  if (v.empty()) {
    options.clear();
    return;
  }
  if (v.front() == '{') {
    toml::table parsed;
    try {
      parsed = toml::parse("t = " + v);
    } catch (const toml::parse_error& e) {
      throw KeyError(spec.name, fmt::format("{}: {} is not a TOML table ({})", spec.name, v, e.description()));
    }
    const toml::table* t = parsed["t"].as_table();
    if (!t) refuse_value(spec, v);
    options.clear();
    for (const auto& [name, node] : *t) {
      // An encoder option is a string or a number (FFmpeg's text form of either).
      const std::optional<std::string> value =
          node.is_boolean() || node.is_array() ? std::nullopt : toml_value_text(node);
      if (!value) refuse_value(spec, v);
      options[std::string(name.str())] = *value;
    }
    return;
  }
  const auto eq = v.find('=');
  if (eq == std::string::npos || eq == 0)
    throw KeyError(spec.name, fmt::format("{}: {}: expected key=value (e.g. x264-params=keyint=60)", spec.name, v));
  options[v.substr(0, eq)] = v.substr(eq + 1);
}

// The processing parameters (common/config_key.cpp) on the run's options, those outside a
// section first (TOML: before the first section), then the file run's own keys outside a
// section, then the sections dcp, he, ahe.
std::vector<ConfigKey> processing_and_run_keys() {
  using K = ConfigKind;
  const auto processing = [](auto& o) -> auto& { return o.processing; };
  const auto in_section = [](const ProcessingKey& p) { return p.name.find('.') != std::string::npos; };
  std::vector<ConfigKey> k;
  for (const ProcessingKey& p : processing_keys())
    if (!in_section(p)) k.push_back(Rows::of_part(p, processing));
  k.push_back(Rows::boolean(spec_of("side_by_side", "write the input and the result next to each other", K::boolean,
                                    "--side-by-side"),
                            [](auto& o) -> auto& { return o.side_by_side; }));
  k.push_back(Rows::text(spec_of("stats",
                                 "write one JSON line per frame to this file: frame, pts_time, haze_index, omega, "
                                 "atmospheric_light (DCP's figures; null in other modes); - or pipe:1 for stdout, "
                                 "pipe:2 for stderr",
                                 K::text, "--stats", "FILE"),
                         "a file name", [](auto& o) -> auto& { return o.stats_path; }));
  for (const ProcessingKey& p : processing_keys())
    if (in_section(p)) k.push_back(Rows::of_part(p, processing));
  return k;
}

// input.*: the span, the demuxer and decoder, and live sources' stalls and reconnections.
std::vector<ConfigKey> input_keys() {
  using K = ConfigKind;
  std::vector<ConfigKey> k;
  k.push_back(time_key(spec_of("input.start",
                               "start here (ffmpeg's -ss): seek to the keyframe at or before it, then drop the pictures "
                               "before it; the output's timestamps start at zero",
                               K::number, "--start"),
                       Bounds::at_least(0), false, [](auto& o) -> auto& { return o.trim_start; }));
  k.push_back(time_key(spec_of("input.duration", "process this long from the start (ffmpeg's -t); none = to the end",
                               K::number, "-t,--duration"),
                       Bounds::above(0), true, [](auto& o) -> auto& { return o.trim_duration; }));
  k.push_back(time_key(spec_of("input.to", "stop at this position of the input (ffmpeg's -to); none = the end",
                               K::number, "--to"),
                       Bounds::above(0), true, [](auto& o) -> auto& { return o.trim_to; }));
  k.push_back(demuxer_option_key(
      spec_of("input.format", "force the input format (v4l2, rawvideo, yuv4mpegpipe, ...); empty = probe", K::text,
              "--input-format", "FORMAT"),
      "a demuxer name", "--input-format", io::is_input_format, "no such input format (ffmpeg -demuxers lists them)",
      [](auto& o) -> auto& { return o.input_options.format; }));
  k.push_back(demuxer_option_key(spec_of("input.size", "frame size of raw input, WxH", K::text), "WxH", "-video_size",
                                 io::is_video_size, "not a frame size (WxH, both sides above 0, or a name such as hd720)",
                                 [](auto& o) -> auto& { return o.input_size; }));
  k.push_back(demuxer_option_key(spec_of("input.framerate", "frame rate of raw input or of a camera", K::text),
                                 "a rate such as 25 or 30000/1001", "-framerate", io::is_frame_rate,
                                 "not a frame rate above 0 (25, 30000/1001, ntsc, ...)",
                                 [](auto& o) -> auto& { return o.input_rate; }));
  k.push_back(demuxer_option_key(spec_of("input.pixel_format", "pixel format of raw input or of a camera (e.g. yuv420p)",
                                         K::text),
                                 "an FFmpeg pixel format", "-pixel_format", io::is_pixel_format,
                                 "no such pixel format (ffmpeg -pix_fmts lists them)",
                                 [](auto& o) -> auto& { return o.input_pixel_format; }));
  k.push_back(Rows::text(spec_of("input.hwdec", "decode on the GPU and keep the pictures there: cuda (NVDEC); empty = on the CPU",
                                 K::text, "--hwdec", "cuda"),
                         "cuda or empty", [](auto& o) -> auto& { return o.input_options.hwdec; }));
  k.push_back(Rows::number<int>(spec_of("input.threads", "decoder threads (0 = automatic)", K::integer),
                                Bounds::closed(0, 256), [](auto& o) -> auto& { return o.input_options.decoder_threads; }));
  k.push_back(Rows::number<double>(spec_of("input.timeout",
                                           "seconds without a packet that count as a stall (0 = never); auto: 5 with "
                                           "--live for network and camera sources, else 0",
                                           K::number),
                                   Bounds::closed(0, 86400), [](auto& o) -> auto& { return o.input_timeout; },
                                   {{"auto", RunOptions::kAutoTimeout}}));
  k.push_back(Rows::number<int>(spec_of("input.reconnect",
                                        "with --live, times a network or camera source that stalled, failed or ended is "
                                        "reopened (back-off 0.5 s doubling to 8 s); auto: unlimited with --live, else 0",
                                        K::integer),
                                Bounds::closed(0, 1000000), [](auto& o) -> auto& { return o.input_reconnect; },
                                {{"auto", RunOptions::kAuto}, {"unlimited", RunOptions::kUnlimited}}));
  return k;
}

// output.depth: auto or a number of bits, written as a number.
ConfigKey output_depth_key(KeySpec spec) {
  spec.choices = {"auto", "8", "10", "12", "16"};
  return Rows::custom(
      spec,
      [](const KeySpec& spec, RunOptions& o, const std::string& v) {
        if (std::find(spec.choices.begin(), spec.choices.end(), v) == spec.choices.end()) refuse_value(spec, v);
        o.output_depth = v == "auto" ? 0 : std::stoi(v);
      },
      [](const RunOptions& o) { return o.output_depth == 0 ? toml_string("auto") : std::to_string(o.output_depth); });
}

// output.encoder_options: a table of the encoder's private options (see OptionRow::table).
ConfigKey encoder_options_key(KeySpec spec) {
  spec.accepted = "key=value (repeatable), or a table";
  spec.value_name = "KEY=VALUE";
  ConfigKey row = Rows::custom(
      spec,
      [](const KeySpec& spec, RunOptions& o, const std::string& v) {
        set_encoder_option(spec, o.output_options.encoder_options, v);
      },
      [](const RunOptions& o) {
        std::string text;
        for (const auto& [name, value] : o.output_options.encoder_options)
          text += fmt::format("{}{} = {}", text.empty() ? "" : ", ", toml_string(name), toml_string(value));
        return "{" + (text.empty() ? text : " " + text + " ") + "}";
      });
  row.table = true;
  return row;
}

// output.*: the container, the encoder and its rate control, the depth, the frame count.
std::vector<ConfigKey> output_keys() {
  using K = ConfigKind;
  std::vector<ConfigKey> k;
  k.push_back(Rows::text(spec_of("output.format", "force the output container; empty = from the name (y4m on a pipe)",
                                 K::text, "-f,--format", "FORMAT"),
                         "a muxer name", [](auto& o) -> auto& { return o.output_options.format; }));
  k.push_back(Rows::text(spec_of("output.encoder",
                                 "video encoder; empty = libx264 for video files, the container's own for y4m, images, "
                                 "GIF, WebP or Ogg",
                                 K::text, "--encoder", "ENCODER"),
                         "an FFmpeg encoder name", [](auto& o) -> auto& { return o.output_options.encoder; }));
  k.push_back(output_depth_key(spec_of("output.depth",
                                        "bits per sample of the output (auto: the input's own); frames are converted "
                                        "to it before processing, so 8-bit input written at 10 bits is processed at "
                                        "10 bits",
                                        K::choice, "--output-depth")));
  k.push_back(Rows::number<int>(spec_of("output.crf", "constant rate factor of libx264/libx265 (lower = better quality)",
                                        K::integer, "--crf"),
                                Bounds::closed(0, 51), [](auto& o) -> auto& { return o.output_options.crf; }));
  k.push_back(Rows::text(spec_of("output.preset", "libx264/libx265 preset", K::text, "--preset", "WORD"), "ultrafast ... veryslow",
                         [](auto& o) -> auto& { return o.output_options.preset; }));
  k.push_back(Rows::number<std::int64_t>(
      spec_of("output.frames", "write at most this many frames (ffmpeg's -frames:v); 0 = all", K::integer,
              "--frames"),
      Bounds::at_least(0), [](auto& o) -> auto& { return o.max_frames; }));
  k.push_back(Rows::text(spec_of("output.bitrate", "target video bitrate (ffmpeg's -b:v), e.g. 4M or 2500k; empty = "
                                                   "the encoder's rate control (crf for libx264/libx265)",
                                 K::text, "--bitrate", "RATE"),
                         "bits per second, k and M suffixes", [](auto& o) -> auto& { return o.output_options.bitrate; }));
  k.push_back(Rows::text(spec_of("output.maxrate", "largest bitrate (VBV, with output.bufsize), e.g. 5M", K::text,
                                 "--maxrate", "RATE"),
                         "bits per second, k and M suffixes", [](auto& o) -> auto& { return o.output_options.maxrate; }));
  k.push_back(Rows::text(spec_of("output.bufsize", "rate-control buffer size (VBV), e.g. 10M", K::text, "--bufsize", "SIZE"),
                         "bits, k and M suffixes", [](auto& o) -> auto& { return o.output_options.bufsize; }));
  k.push_back(Rows::number<int>(spec_of("output.keyint",
                                        "largest distance between keyframes, in frames (ffmpeg's -g); 0 = the encoder's "
                                        "own; a job's chunks each start with one",
                                        K::integer, "-g,--keyint"),
                                Bounds::closed(0, 100000), [](auto& o) -> auto& { return o.output_options.keyint; }));
  k.push_back(Rows::text(spec_of("output.profile", "encoder profile (high, main, main10, ...); empty = the encoder's "
                                                   "choice",
                                 K::text, "--profile", "WORD"),
                         "a profile of the encoder", [](auto& o) -> auto& { return o.output_options.profile; }));
  k.push_back(Rows::text(spec_of("output.tune", "encoder tuning (film, grain, animation, ...); empty = none", K::text,
                                 "--tune", "WORD"),
                         "a tune of the encoder", [](auto& o) -> auto& { return o.output_options.tune; }));
  k.push_back(Rows::text(spec_of("output.pix_fmt",
                                 "the encoder's pixel format (ffmpeg's -pix_fmt: yuv444p, yuv420p10le, ...), converted "
                                 "to from the frames; it must hold their depth; empty = the nearest the encoder takes",
                                 K::text, "--pix-fmt", "FORMAT"),
                         "an FFmpeg pixel format the encoder takes",
                         [](auto& o) -> auto& { return o.output_options.pixel_format; }));
  k.push_back(encoder_options_key(spec_of("output.encoder_options",
                                          "private options of the encoder as key=value (x264-params, x265-params, "
                                          "svtav1-params, rc, ...); an option the encoder does not know is refused "
                                          "before encoding",
                                          K::text, "--encoder-opt")));
  return k;
}

// pipeline.*: how the stages run.
std::vector<ConfigKey> pipeline_keys() {
  using K = ConfigKind;
  std::vector<ConfigKey> k;
  k.push_back(Rows::boolean(spec_of("pipeline.live",
                                    "low-latency mode for live sources: short queues, drop the oldest frame when behind",
                                    K::boolean, "--live"),
                            [](auto& o) -> auto& { return o.live; }));
  k.push_back(Rows::number<int>(spec_of("pipeline.queue_depth", "frames waiting between two stages", K::integer),
                                Bounds::closed(1, 64), [](auto& o) -> auto& { return o.queue_depth; }));
  return k;
}

// The table in its order (config_keys()), every setter's error a usage error naming its key.
std::vector<ConfigKey> make_keys() {
  std::vector<ConfigKey> keys;
  for (const std::vector<ConfigKey>& part : {processing_and_run_keys(), input_keys(), output_keys(), pipeline_keys()})
    keys.insert(keys.end(), part.begin(), part.end());
  for (ConfigKey& key : keys) {
    key.set = [set = key.set](RunOptions& o, const std::string& v) {
      try {
        set(o, v);
      } catch (const KeyError& e) {
        throw UsageError(e.key(), e.what());
      }
    };
  }
  return keys;
}

// The configuration key named `name` ("dcp.omega"), or none.
const ConfigKey* key_named(const std::string& name) {
  const auto row = std::find_if(config_keys().begin(), config_keys().end(),
                                [&name](const ConfigKey& k) { return k.name == name; });
  return row == config_keys().end() ? nullptr : &*row;
}

// TOML value -> the text form the key setters parse.
std::string node_text(const std::string& key, const toml::node& node) {
  if (std::optional<std::string> text = toml_value_text(node)) return *text;
  throw UsageError(key, fmt::format("{}: unsupported value type", key));
}

void apply_table(RunOptions& options, const toml::table& table, const std::string& prefix,
                 const std::string& path, std::vector<std::string>* keys_set = nullptr) {
  for (const auto& [name, node] : table) {
    const std::string key = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (const toml::table* sub = node.as_table()) {
      const ConfigKey* row = key_named(key);
      if (!row || !row->table) {
        apply_table(options, *sub, key, path, keys_set);
        continue;
      }
      try {
        row->set(options, "");
        for (const auto& [name, item] : *sub)
          row->set(options, std::string(name.str()) + "=" + node_text(key + "." + std::string(name.str()), item));
      } catch (const UsageError& e) {
        throw UsageError(e.key(), fmt::format("{}: {}", path, e.what()));
      }
      if (keys_set) keys_set->push_back(key);
      continue;
    }
    try {
      // The value's TOML type is checked against the key's: `stats = 5` is not a file name.
      const ConfigKey* row = key_named(key);
      if (!row || row->table) {
        set_config_value(options, key, node_text(key, node));
      } else {
        std::string text;
        try {
          text = key_value_text(*row, node);
        } catch (const KeyError& e) {
          throw UsageError(e.key(), e.what());
        }
        row->set(options, text);
      }
    } catch (const UsageError& e) {
      throw UsageError(e.key(), fmt::format("{}: {}", path, e.what()));
    }
    if (keys_set) keys_set->push_back(key);
  }
}


// --- ffmpeg's spellings --------------------------------------------------------------------
// The command line is rewritten before CLI11 reads it (CLI11 would take -tune as -t une and -vf
// as -v -f): ffmpeg's options with one meaning here become the long option, those without one
// are refused with a line naming what to use instead.

// ffmpeg spelling -> the long option; "" drops it (nothing to do here).
const std::map<std::string, std::string>& ffmpeg_spellings() {
  static const std::map<std::string, std::string> spellings = {
      {"-ss", "--start"},         {"-to", "--to"},           {"-frames:v", "--frames"},
      {"-vframes", "--frames"},   {"-frames", "--frames"},   {"-b:v", "--bitrate"},
      {"-pix_fmt", "--pix-fmt"},  {"-c:v", "--encoder"},     {"-codec:v", "--encoder"},
      {"-vcodec", "--encoder"},   {"-crf", "--crf"},         {"-preset", "--preset"},
      {"-tune", "--tune"},        {"-profile:v", "--profile"}, {"-profile", "--profile"},
      {"-maxrate", "--maxrate"},  {"-bufsize", "--bufsize"}, {"-n", "--no-overwrite"},
      {"-an", "--no-audio"},      {"-sn", "--no-subtitles"}, {"-loglevel", "--loglevel"},
      {"-stats", "--progress-line"}, {"-nostats", "--no-progress-line"},
      {"-stats_period", "--progress-period"}, {"-progress", "--progress"},
      {"-help", "--help"},        {"-version", "--version"}, {"-hide_banner", ""},
      {"-nostdin", ""}};
  return spellings;
}

// ffmpeg spellings that set a key through --set, or an encoder option: option -> "key=".
const std::map<std::string, std::pair<std::string, std::string>>& ffmpeg_value_spellings() {
  static const std::map<std::string, std::pair<std::string, std::string>> spellings = {
      {"-framerate", {"--set", "input.framerate="}},
      {"-video_size", {"--set", "input.size="}},
      {"-pixel_format", {"--set", "input.pixel_format="}},
      {"-x264-params", {"--encoder-opt", "x264-params="}},
      {"-x265-params", {"--encoder-opt", "x265-params="}}};
  return spellings;
}

// The pipe carries the audio too (NUT holds raw video and the source's audio; hazefree copies the
// audio of its input as from a file).
const char* const kPipeFilters =
    "hazefree is the filter; for other filters pipe through ffmpeg (the audio kept): ffmpeg -i IN -vf FILTERS "
    "-c:v rawvideo -c:a copy -f nut - | hazefree - OUT, or use hazefree inside ffmpeg's graph: "
    "ffmpeg -i IN -vf frei0r=hazefree_dehaze,FILTERS OUT";

// Whether ffmpeg's frei0r filter finds hazefree's plugin, looking where FFmpeg looks: each folder
// of FREI0R_PATH, ~/.frei0r-1/lib, then the system's frei0r-1 folders.
bool frei0r_plugin_found() {
  std::vector<std::string> folders;
  if (const char* path = std::getenv("FREI0R_PATH")) {
    std::istringstream list(path);
    for (std::string folder; std::getline(list, folder, ':');)
      if (!folder.empty()) folders.push_back(folder);
  }
  if (const char* home = std::getenv("HOME")) folders.push_back(std::string(home) + "/.frei0r-1/lib");
  for (const char* system : {"/usr/local/lib/frei0r-1", "/usr/lib/frei0r-1", "/usr/local/lib64/frei0r-1", "/usr/lib64/frei0r-1"})
    folders.emplace_back(system);
  std::error_code error;
  for (const std::string& folder : folders)
    if (std::filesystem::is_regular_file(std::filesystem::path(folder) / "hazefree_dehaze.so", error)) return true;
  return false;
}

// -vf and the other filter options: the two ways to combine hazefree with ffmpeg's filters, and
// where the second needs the plugin installed first.
std::string pipe_filters_hint() {
  if (frei0r_plugin_found()) return kPipeFilters;
  const char* path = std::getenv("FREI0R_PATH");
  const std::string missing = path && *path ? fmt::format("is in none of FREI0R_PATH's folders ({}) nor where ffmpeg looks after them", path)
                                            : "is not installed where ffmpeg looks";
  return std::string(kPipeFilters) + fmt::format(" (hazefree_dehaze.so {}: the Debian package puts it in /usr/lib/frei0r-1; after "
                                                 "cmake --install, give FREI0R_PATH=PREFIX/lib/frei0r-1)", missing);
}

const char* const kAudioCopied =
    "hazefree copies audio and subtitles as they are (-an, -sn leave them out); to re-encode them afterwards: "
    "ffmpeg -i OUT -c:v copy -c:a aac OUT2";
const char* const kTimestampsKept =
    "hazefree keeps the input's timestamps (from zero after -ss); to change them afterwards: ffmpeg -i OUT -c copy "
    "... OUT2";

// ffmpeg's options that have no meaning here: option -> what to use instead.
const std::map<std::string, std::string>& ffmpeg_refusals() {
  static const std::map<std::string, std::string> refusals = {
      {"-vf", kPipeFilters}, {"-filter:v", kPipeFilters}, {"-filter", kPipeFilters},
      {"-filter_complex", kPipeFilters}, {"-lavfi", kPipeFilters},
      {"-af", kAudioCopied}, {"-filter:a", kAudioCopied}, {"-b:a", kAudioCopied}, {"-ab", kAudioCopied},
      {"-ar", kAudioCopied}, {"-ac", kAudioCopied}, {"-aq", kAudioCopied}, {"-q:a", kAudioCopied},
      {"-vn", "hazefree processes the video: without it there is nothing to do (ffmpeg -i IN -vn -c copy OUT "
              "keeps the rest)"},
      {"-r", "hazefree keeps the input's frames and timestamps; for raw input or a camera give -framerate R "
             "(input.framerate); to change the rate afterwards: ffmpeg -i OUT -r R OUT2"},
      {"-s", "hazefree keeps the picture size; for raw input or a camera give -video_size WxH (input.size); to "
             "scale, pipe through ffmpeg (-vf scale=W:H)"},
      {"-aspect", "hazefree keeps the input's sample aspect ratio; to change it afterwards: ffmpeg -i OUT -c copy "
                  "-aspect A OUT2"},
      {"-q:v", "for a constant quality give -crf N (libx264/libx265), or the encoder's own option with "
               "--encoder-opt"},
      {"-qscale:v", "for a constant quality give -crf N (libx264/libx265), or the encoder's own option with "
                    "--encoder-opt"},
      {"-qscale", "for a constant quality give -crf N (libx264/libx265), or the encoder's own option with "
                  "--encoder-opt"},
      {"-map", "hazefree writes the processed video and copies every audio and subtitle stream the container "
               "holds; -an and -sn leave those out"},
      {"-map_metadata", "the input's metadata is copied; to change it afterwards: ffmpeg -i OUT -c copy "
                        "-map_metadata ... OUT2"},
      {"-metadata", "to set metadata afterwards: ffmpeg -i OUT -c copy -metadata KEY=VALUE OUT2"},
      {"-movflags", "to change the MP4 layout afterwards: ffmpeg -i OUT -c copy -movflags +faststart OUT2"},
      {"-shortest", kTimestampsKept}, {"-copyts", kTimestampsKept}, {"-start_at_zero", kTimestampsKept},
      {"-itsoffset", kTimestampsKept}, {"-vsync", kTimestampsKept}, {"-fps_mode", kTimestampsKept},
      {"-async", kTimestampsKept},
      {"-stream_loop", "to loop the input, pipe through ffmpeg: ffmpeg -stream_loop N -i IN -f yuv4mpegpipe - | "
                       "hazefree - OUT"},
      {"-re", "hazefree reads as fast as it processes; a live source takes --live"},
      {"-threads", "give --threads N for the CPU backend, --set input.threads=N for the decoder, or "
                   "--encoder-opt threads=N for the encoder"},
      {"-hwaccel", "give --hwdec cuda (NVDEC; the pictures stay on the GPU)"},
      {"-hwaccel_output_format", "give --hwdec cuda (NVDEC; the pictures stay on the GPU)"},
      {"-fs", "give a duration (-t) or a frame count (-frames:v) instead"},
      {"-pass", "two-pass encoding is not offered: give -crf, or -b:v with -maxrate and -bufsize"},
      {"-passlogfile", "two-pass encoding is not offered: give -crf, or -b:v with -maxrate and -bufsize"},
      {"-x264opts", "give -x264-params key=value:key=value"},
      {"-level", "give -x264-params level=4.1 (or -x265-params level-idc=4.1)"},
      {"-dn", "data streams are not copied"},
      {"-formats", "hazefree uses FFmpeg's libraries: ffmpeg -formats lists them"},
      {"-codecs", "hazefree uses FFmpeg's libraries: ffmpeg -codecs lists them"},
      {"-encoders", "hazefree uses FFmpeg's libraries: ffmpeg -encoders lists them"},
      {"-decoders", "hazefree uses FFmpeg's libraries: ffmpeg -decoders lists them"},
      {"-filters", "hazefree uses FFmpeg's libraries: ffmpeg -filters lists them"},
      {"-pix_fmts", "hazefree uses FFmpeg's libraries: ffmpeg -pix_fmts lists them"},
      {"-muxers", "hazefree uses FFmpeg's libraries: ffmpeg -muxers lists them"},
      {"-demuxers", "hazefree uses FFmpeg's libraries: ffmpeg -demuxers lists them"},
      {"-protocols", "hazefree uses FFmpeg's libraries: ffmpeg -protocols lists them"}};
  return refusals;
}

// ffmpeg's audio and subtitle codec options: "copy" is what hazefree does anyway.
bool is_copied_stream_codec_option(const std::string& word) {
  return word == "-c:a" || word == "-acodec" || word == "-codec:a" || word == "-c:s" || word == "-scodec" ||
         word == "-codec:s";
}

// ffmpeg's log levels, by name or number, with its flags (repeat+level+info): -1 unknown.
int ffmpeg_log_level(const std::string& text) {
  static const std::map<std::string, int> levels = {{"quiet", -8},   {"panic", 0},    {"fatal", 8},
                                                    {"error", 16},   {"warning", 24}, {"info", 32},
                                                    {"verbose", 40}, {"debug", 48},   {"trace", 56}};
  int level = -1;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t plus = text.find('+', start);
    const std::string part = text.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    if (const auto named = levels.find(part); named != levels.end()) {
      level = named->second;
    } else if (!part.empty() && part != "repeat" && part != "level") {
      int number = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), number);
      if (ec != std::errc() || end != part.data() + part.size()) return -1;
      level = number;
    }
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return level;
}

// Rewrites ffmpeg's spellings in `words` (argv) into the options `app` knows, refusing the
// ones without a meaning here; an input given with -i becomes the first positional.
std::vector<std::string> rewrite_ffmpeg_spellings(const std::vector<std::string>& words, const CLI::App& app,
                                                  bool job_plan) {
  auto option_of = [&app](const std::string& word) -> const CLI::Option* {
    if (word.find('=') != std::string::npos) return nullptr;
    return app.get_option_no_throw(word);
  };
  auto takes_value = [&](const std::string& word) {
    const CLI::Option* option = option_of(word);
    return option && option->get_items_expected_min() > 0;
  };
  const bool input_given = std::find(words.begin(), words.end(), "-i") != words.end();
  std::vector<std::string> out;
  if (!words.empty()) out.push_back(words[0]);
  std::optional<std::size_t> first_positional;
  bool seen_input = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= words.size()) throw UsageError(fmt::format("{}: a value is expected after it", w));
      return words[++i];
    };
    auto refuse = [&w](const std::string& why) { throw UsageError(fmt::format("{}: {}", w, why)); };
    if (w == "--") {
      out.insert(out.end(), words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
      break;
    }
    if (w.size() < 2 || w[0] != '-') {  // a positional ("-" is stdin or stdout)
      if (!first_positional) first_positional = out.size();
      out.push_back(w);
      continue;
    }
    if (w.rfind("--", 0) == 0) {
      out.push_back(w);
      if (takes_value(w) && i + 1 < words.size()) out.push_back(words[++i]);
      continue;
    }
    if (w == "-i") {
      if (job_plan) refuse("job plan takes DIR, then INPUT OUTPUT pairs without -i");
      if (seen_input) refuse("hazefree takes one input; run it once per input, or plan a job over several");
      seen_input = true;
      const std::string input = value();
      out.insert(first_positional ? out.begin() + static_cast<std::ptrdiff_t>(*first_positional) : out.end(), input);
      if (!first_positional) first_positional = out.size() - 1;
      continue;
    }
    if (w == "-f" && input_given && !seen_input) {  // before -i, as in ffmpeg: the input's format
      out.push_back("--input-format");
      out.push_back(value());
      continue;
    }
    if (w == "-v" && i + 1 < words.size() && ffmpeg_log_level(words[i + 1]) != -1) {
      out.push_back("--loglevel");
      out.push_back(value());
      continue;
    }
    if (w == "-b") {
      const std::string v = value();
      if (v != "auto" && v != "cuda" && v != "cpu")
        refuse(fmt::format("did you mean -b:v {} (the video bitrate)? -b is --backend here (auto, cuda, cpu)", v));
      out.push_back(w);
      out.push_back(v);
      continue;
    }
    if (w == "-q" && i + 1 < words.size() && !words[i + 1].empty() &&
        words[i + 1].find_first_not_of("0123456789.") == std::string::npos) {
      refuse(fmt::format("is --quiet here; for a constant quality give -crf {} (libx264/libx265)", words[i + 1]));
    }
    if (w == "-c" && i + 1 < words.size() && words[i + 1] == "copy")
      refuse("-c is --config here; hazefree re-encodes the video it processes (-c:v ENCODER) and copies audio and "
             "subtitles as they are");
    if (is_copied_stream_codec_option(w)) {
      if (value() != "copy") refuse(kAudioCopied);
      continue;
    }
    if ((w == "-c:v" || w == "-vcodec" || w == "-codec:v") && i + 1 < words.size() && words[i + 1] == "copy")
      refuse("hazefree re-encodes the video it processes: choose an encoder (libx264, libx265, ffv1, ...)");
    if (const auto spelled = ffmpeg_spellings().find(w); spelled != ffmpeg_spellings().end()) {
      if (spelled->second.empty()) continue;
      out.push_back(spelled->second);
      if (takes_value(spelled->second)) out.push_back(value());
      continue;
    }
    if (const auto spelled = ffmpeg_value_spellings().find(w); spelled != ffmpeg_value_spellings().end()) {
      out.push_back(spelled->second.first);
      out.push_back(spelled->second.second + value());
      continue;
    }
    if (const auto refused = ffmpeg_refusals().find(w); refused != ffmpeg_refusals().end())
      refuse(refused->second == kPipeFilters ? pipe_filters_hint() : refused->second);
    if (option_of(w)) {  // one of ours (-t, -g, -m, -y, -q, -v, -c, -h)
      out.push_back(w);
      if (takes_value(w) && i + 1 < words.size()) out.push_back(words[++i]);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.') {  // a negative number
      out.push_back(w);
      continue;
    }
    // Flags of ours written together (-qy).
    const bool joined_flags = std::all_of(w.begin() + 1, w.end(), [&](char c) {
      const CLI::Option* option = option_of(std::string("-") + c);
      return option && option->get_items_expected_min() == 0;
    });
    if (!joined_flags) throw UsageError(fmt::format("unknown option {} (see --help, which lists the ffmpeg spellings "
                                                    "taken too)", w));
    out.push_back(w);
  }
  return out;
}

// Where --help starts an option's description.
constexpr std::size_t kHelpColumn = 28;

// --help at 80 columns: a line of an option's description wraps with the description's
// indent, other lines at their own indent.
std::string wrap_help(const std::string& text, std::size_t width, std::size_t description_column) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    const std::size_t leading = line.find_first_not_of(' ');
    std::size_t indent = leading == std::string::npos ? 0 : leading;
    if (leading == 2 && line.size() > description_column && line[description_column - 1] == ' ' &&
        line[description_column] != ' ')
      indent = description_column;
    bool first = true;
    while (line.size() > width) {
      std::size_t cut = line.rfind(' ', width);
      if (cut == std::string::npos || cut <= indent) cut = line.find(' ', width);
      if (cut == std::string::npos) break;
      out += line.substr(0, cut) + "\n";
      std::size_t next = line.find_first_not_of(' ', cut);
      if (next == std::string::npos) next = line.size();
      line = std::string(indent, ' ') + line.substr(next);
      first = false;
    }
    (void)first;
    out += line + "\n";
  }
  return out;
}

// The fewest insertions, deletions, substitutions and swaps of two neighbours from a to b (the
// optimal string alignment distance: "mdoe" is one swap from "mode").
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// A name close to `name` (a typo: at most 2 edits, fewer for short names) among `names`.
bool close_to(const std::string& name, const std::string& candidate) {
  const std::size_t allowed = name.size() <= 4 ? 1 : 2;
  return edit_distance(name, candidate) <= allowed;
}

// The configuration keys a name may mean: its whole name or its last part ("omega" for
// dcp.omega), exactly or with a typo.
std::vector<std::string> keys_meant(const std::string& name) {
  std::vector<std::string> exact, close;
  for (const ConfigKey& key : config_keys()) {
    const std::string& full = key.name;
    const std::string last = full.substr(full.rfind('.') + 1);
    if (full == name || last == name) exact.push_back(full);
    else if (close_to(name, full) || close_to(name, last)) close.push_back(full);
  }
  return exact.empty() ? close : exact;
}

// "--omega: unknown option; the configuration key is set with --set dcp.omega=VALUE (hazefree
// --help lists the options)", "--mdoe: unknown option; did you mean --mode? (...)": an option
// word that names no flag, with the flags and keys it may mean; `command` is the one whose --help.
std::string unknown_option_text(const std::string& word, const CLI::App& app, const std::string& command) {
  const std::size_t name_start = word.find_first_not_of('-');
  const std::string option = word.substr(0, word.find('='));
  const std::string name =
      name_start == std::string::npos ? std::string() : word.substr(name_start, word.find('=', name_start) - name_start);
  if (name.empty()) return fmt::format("{}: unknown option ({} --help lists the options)", word, command);
  std::vector<std::string> flags;
  for (const CLI::Option* known : app.get_options())
    for (const std::string& long_name : known->get_lnames())
      if (close_to(name, long_name)) flags.push_back("--" + long_name);
  if (!flags.empty())
    return fmt::format("{}: unknown option; did you mean {}? ({} --help lists the options)", option,
                       fmt::join(flags, " or "), command);
  const std::vector<std::string> keys = keys_meant(name);
  if (keys.empty()) return fmt::format("{}: unknown option ({} --help lists the options)", option, command);
  std::string sets;
  for (const std::string& key : keys) sets += (sets.empty() ? "--set " : " or --set ") + key + "=VALUE";
  return fmt::format("{}: unknown option; the configuration key is set with {} ({} --help lists the options)",
                     option, sets, command);
}

// The configuration key whose command-line shortcut is `name` ("--stats", "-m"), or none.
const ConfigKey* key_of_flag(const std::string& name) {
  for (const ConfigKey& key : config_keys()) {
    std::size_t start = 0;
    while (!key.flag.empty() && start <= key.flag.size()) {
      const auto comma = key.flag.find(',', start);
      if (key.flag.substr(start, comma == std::string::npos ? std::string::npos : comma - start) == name) return &key;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return nullptr;
}

}  // namespace

UsageError usage_error_of(const CLI::ParseError& error, const CLI::App& app) {
  const std::string command = app.get_name();
  if (dynamic_cast<const CLI::ExtrasError*>(&error)) {
    std::vector<std::string> extra;
    for (const std::string& word : app.remaining()) {
      if (word.size() > 1 && word[0] == '-' && word != "--") return UsageError(unknown_option_text(word, app, command));
      if (word != "--") extra.push_back(word);
    }
    if (!extra.empty()) {
      // "b.mp4: an argument too many; hazefree takes INPUT OUTPUT (hazefree --help shows the usage)"
      std::vector<std::string> positionals;
      for (const CLI::Option* option : app.get_options())
        if (option->get_positional()) positionals.push_back(option->get_name());
      const bool one = extra.size() == 1;
      return UsageError(
          positionals.empty()
              ? fmt::format("{}: {} ({} --help shows the usage)", fmt::join(extra, " "),
                            one ? "unexpected argument" : "unexpected arguments", command)
              : fmt::format("{}: {} too many; {} takes {} ({} --help shows the usage)", fmt::join(extra, " "),
                            one ? "an argument" : "arguments", command, fmt::join(positionals, " "), command));
    }
  }
  const std::string what = error.what();
  // "Could not convert: --auto-strength = maybe": the option, its value and what it takes.
  const std::string unconverted = "Could not convert: ";
  if (dynamic_cast<const CLI::ConversionError*>(&error) && what.rfind(unconverted, 0) == 0) {
    const std::string rest = what.substr(unconverted.size());
    const auto eq = rest.find(" = ");
    const std::string name = rest.substr(0, eq);
    const std::string value = eq == std::string::npos ? std::string() : rest.substr(eq + 3);
    const ConfigKey* key = key_of_flag(name);
    if (key)  // a boolean key's flag is also given without a value
      return UsageError(key->name, fmt::format("{}: invalid value '{}' (accepted: {}{}; key {})", name, value,
                                               key->kind == ConfigKind::boolean ? "no value, or " : "", key->range,
                                               key->name));
    return UsageError(fmt::format("{}: invalid value '{}' ({} --help says what it takes)", name, value, command));
  }
  // "--stats: At Most 1 required but received 2": an option of one value given more than once.
  const std::string at_most = ": At Most ";
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) && what.find(at_most) != std::string::npos) {
    const std::string name = what.substr(0, what.find(at_most));
    const ConfigKey* key = key_of_flag(name);
    if (key)
      return UsageError(key->name, fmt::format("{}: given more than once; it takes one value ({}; key {})", name,
                                               key->range, key->name));
    return UsageError(fmt::format("{}: given more than once; it takes one value", name));
  }
  return UsageError(what);
}

CLI::Validator bounds_check(const Bounds& bounds) {
  return CLI::Validator(
      [bounds](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return fmt::format("{} is not a number", text);
        if (bounds.contains(value)) return "";
        // An end at infinity is said in words, not as the largest double.
        if (std::isinf(bounds.maximum) && std::isfinite(bounds.minimum) && !bounds.odd)
          return fmt::format("{} must be {} {}", text, bounds.minimum_excluded ? "greater than" : "at least",
                             bounds.minimum);
        if (std::isinf(bounds.minimum) && std::isfinite(bounds.maximum) && !bounds.odd)
          return fmt::format("{} must be {} {}", text, bounds.maximum_excluded ? "less than" : "at most",
                             bounds.maximum);
        return fmt::format("{} is outside {}", text, bounds.text());
      },
      bounds.text());
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = make_keys();
  return keys;
}

std::string default_text(const ConfigKey& key) {
  static const RunOptions defaults;
  return key.get(defaults);
}

struct KeyFlags::Flag {
  const ConfigKey* key = nullptr;
  CLI::Option* option = nullptr;
  std::string value;  // as given, parsed by the key's setter
  std::vector<std::string> values;  // table keys: each "key=value" given
  bool on = false;    // boolean keys: a flag without a value
};

KeyFlags::KeyFlags(CLI::App& app, const std::function<bool(const ConfigKey&)>& wanted) { add(app, wanted, ""); }

void KeyFlags::add(CLI::App& app, const std::function<bool(const ConfigKey&)>& wanted, const std::string& group) {
  for (const ConfigKey& key : config_keys()) {
    if (key.flag.empty() || !wanted(key)) continue;
    auto flag = std::make_unique<Flag>();
    flag->key = &key;
    if (key.kind == ConfigKind::boolean) {
      flag->option = app.add_flag(key.flag, flag->on, fmt::format("{} (key {})", key.help, key.name));
    } else if (key.table) {
      flag->option = app.add_option(key.flag, flag->values, fmt::format("{}: {} (key {})", key.help, key.accepted, key.name))
                         ->allow_extra_args(false)
                         ->type_name(value_name(key));
    } else {
      std::string text = default_text(key);
      if (text.size() >= 2 && text.front() == '"') text = text.substr(1, text.size() - 2);
      // A choice's values are the flag's value name (--mode dcp|he|ahe); other keys' ranges are
      // said after the help.
      const std::string accepted = key.kind == ConfigKind::choice ? "" : ": " + key.range;
      flag->option = app.add_option(key.flag, flag->value,
                                    fmt::format("{}{} (default {}; key {})", key.help, accepted,
                                                text.empty() ? "empty" : text, key.name))
                         ->type_name(value_name(key));
    }
    if (!group.empty()) flag->option->group(group);
    flags_.push_back(std::move(flag));
  }
}

KeyFlags::~KeyFlags() = default;

void KeyFlags::apply(RunOptions& options) const {
  for (const auto& flag : flags_) {
    if (flag->key->kind == ConfigKind::boolean) {
      if (flag->on) flag->key->set(options, "true");
    } else if (flag->key->table) {
      for (const std::string& value : flag->values) flag->key->set(options, value);
    } else if (flag->option->count() > 0) {
      flag->key->set(options, flag->value);
    }
  }
}

bool KeyFlags::given(const std::string& key) const {
  for (const auto& flag : flags_)
    if (flag->key->name == key) return flag->option->count() > 0;
  return false;
}

void set_config_value(RunOptions& options, const std::string& key, const std::string& value) {
  if (const ConfigKey* row = key_named(key)) {
    row->set(options, value);
    return;
  }
  const std::vector<std::string> meant = keys_meant(key);
  throw UsageError(key, meant.empty()
                            ? fmt::format("unknown configuration key '{}' (--print-config lists the keys)", key)
                            : fmt::format("unknown configuration key '{}'; did you mean {}? (--print-config lists the "
                                          "keys)", key, fmt::join(meant, " or ")));
}

void apply_set_argument(RunOptions& options, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError(fmt::format("--set {}: expected key=value", assignment));
  set_config_value(options, assignment.substr(0, eq), assignment.substr(eq + 1));
}

PresetValues apply_config_file(RunOptions& options, const std::string& path) {
  toml::table table;
  try {
    table = read_toml_file(path);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  std::vector<std::string> keys_set;
  apply_table(options, table, "", path, &keys_set);
  PresetValues preset;
  preset.path = path;
  for (const ConfigKey& k : config_keys())
    if (std::find(keys_set.begin(), keys_set.end(), k.name) != keys_set.end()) preset.values[k.name] = k.get(options);
  return preset;
}

void apply_config_text(RunOptions& options, const std::string& text, const std::string& source) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw UsageError(fmt::format("{}: {}", source, e.description()));
  }
  apply_table(options, table, "", source);
}

std::string format_config(const RunOptions& options) {
  std::string out = "# hazefree effective configuration\n";
  std::string section;
  for (const ConfigKey& k : config_keys()) {
    const auto dot = k.name.find('.');
    const std::string key_section = dot == std::string::npos ? "" : k.name.substr(0, dot);
    const std::string leaf = dot == std::string::npos ? k.name : k.name.substr(dot + 1);
    if (key_section != section) {
      out += fmt::format("\n[{}]\n", key_section);
      section = key_section;
    }
    out += fmt::format("# {} ({})\n{} = {}\n", k.help, k.range, leaf, k.get(options));
  }
  return out;
}

namespace {

// The checks and completions of finalize_options().
void complete_options(RunOptions& options) {
  try {
    validate(options.processing);
  } catch (const KeyError& e) {
    throw UsageError(e.key(), e.what());
  }
  auto& fo = options.input_options.format_options;
  if (!options.input_size.empty()) fo["video_size"] = options.input_size;
  if (!options.input_rate.empty()) fo["framerate"] = options.input_rate;
  if (!options.input_pixel_format.empty()) fo["pixel_format"] = options.input_pixel_format;
  options.input_options.url = options.input;
  // SPEC 9: stalls are watched on live network and camera sources unless told otherwise.
  const bool reconnectable = io::is_network_or_camera(options.input_options);
  options.input_options.stall_timeout_seconds =
      options.input_timeout != RunOptions::kAutoTimeout ? options.input_timeout
      : options.live && reconnectable                    ? 5.0
                                                         : 0.0;
  if ((options.input_reconnect > 0 || options.input_reconnect == RunOptions::kUnlimited) && !options.live)
    throw UsageError("input.reconnect", "input.reconnect: reopening a lost source needs --live (pipeline.live = true)");
  if (!options.input_options.hwdec.empty() && options.input_options.hwdec != "cuda")
    throw UsageError("input.hwdec", fmt::format("input.hwdec: invalid value '{}' (accepted: cuda or empty)", options.input_options.hwdec));
  // GPU pictures wait in the queue and the lanes: the decoder's surface pool must hold them.
  options.input_options.hw_frames_in_flight = options.queue_depth + 8;
  options.output_options.url = options.output;
  check_stats_path(options.stats_path, options.output);
  options.input_options.depth = options.output_depth;
  if (options.live) {
    options.queue_depth = std::min(options.queue_depth, 2);
    options.input_options.low_delay = true;
    options.output_options.low_latency = true;
    // The reader starts the source's clock at its first picture; the writer starts the output at
    // the first picture written, which is later where the queue dropped the first ones (a burst
    // at the start: the packets read while the streams were probed).
    options.output_options.start_at_zero = true;
  }
  // ffmpeg's rule: -t wins over -to, said in one warning line.
  if (options.trim_duration != RunOptions::kNone && options.trim_to != RunOptions::kNone) {
    if (!options.quiet) io::warning("-t (input.duration) and -to (input.to) cannot be used together; using -t, as ffmpeg does");
    options.trim_to = RunOptions::kNone;
  }
  options.input_options.trim = trim_of(options);
  if (options.trim_start > 0 && options.live)
    throw UsageError("input.start", "-ss (input.start): a --live source cannot seek");
  // A still image with a plain name holds one picture: the first frame of the span, said so
  // unless --frames 1 asked for it; more is refused.
  if (!options.output.empty() && io::writes_one_picture(options.output_options)) {
    if (options.max_frames > 1)
      throw UsageError("output.frames", fmt::format("{}: a still image holds one picture: give --frames 1, or a name "
                                                    "with a frame number such as frame%04d.png for a sequence",
                                                    options.output));
    if (options.max_frames == 0) {
      options.input_options.trim.max_frames = 1;
      options.one_picture_implied = true;
    }
  }
}

}  // namespace

void finalize_options(RunOptions& options, const PresetValues& preset) {
  try {
    complete_options(options);
  } catch (const UsageError& e) {
    // A value the preset gave, still as it gave it: named with the file, as the file's other
    // errors are.
    const auto given = preset.values.find(e.key());
    if (given == preset.values.end()) throw;
    const ConfigKey* row = key_named(e.key());
    if (!row || row->get(options) != given->second) throw;
    throw UsageError(e.key(), fmt::format("{}: {}", preset.path, e.what()));
  }
}

io::InputOptions::Trim trim_of(const RunOptions& options) {
  if (options.trim_duration != RunOptions::kNone && options.trim_to != RunOptions::kNone)
    throw UsageError("input.to", "-t (input.duration) and -to (input.to): give one of them");
  if (options.trim_to != RunOptions::kNone && options.trim_to <= options.trim_start)
    throw UsageError("input.to", fmt::format("-to {} (input.to) is not after -ss {} (input.start)", options.trim_to,
                                             options.trim_start));
  io::InputOptions::Trim trim;
  trim.start_seconds = options.trim_start;
  if (options.trim_to != RunOptions::kNone) trim.end_seconds = options.trim_to;
  if (options.trim_duration != RunOptions::kNone) trim.end_seconds = options.trim_start + options.trim_duration;
  trim.max_frames = options.max_frames;
  return trim;
}

bool parse_command_line(int argc, char** argv, RunOptions& options, std::string& exit_message,
                        std::vector<std::string>* positionals, const std::string& usage,
                        const std::function<void(CLI::App&)>& add_flags) {
  CLI::App app{usage.empty() ? "hazefree: real-time video dehazing (dark channel prior) and contrast equalization (HE, AHE/CLAHE)"
                             : usage,
               positionals ? "hazefree job plan" : "hazefree"};
  app.get_formatter()->column_width(kHelpColumn);
  app.footer(
      "ffmpeg's spellings taken here: -i INPUT, -c:v/-vcodec ENCODER, -crf, -preset, -tune, -profile:v, -b:v, "
      "-maxrate, -bufsize, -g, -pix_fmt, -ss, -t, -to, -frames:v/-vframes, -f (before -i: the input's), -framerate, "
      "-video_size, -pixel_format, -x264-params, -x265-params, -an, -sn, -c:a copy, -y, -n, -loglevel/-v LEVEL, "
      "-stats, -nostats, -stats_period, -progress URL, -hide_banner, -nostdin. Any other ffmpeg option is refused "
      "with what to use instead (-vf: hazefree is the filter).\n"
      "Run `hazefree bench --help` for the benchmark, `hazefree serve --help` for the live service. Configuration "
      "keys: --print-config.\n"
      "Exit status: 0 success, 1 processing/I-O failure, 2 bad usage or configuration, 130 interrupted.");
  std::string input, output, config_file;
  bool print_config = false, overwrite = false, quiet = false, verbose = false;
  bool never_overwrite = false, no_audio = false, no_subtitles = false, progress_line = false,
       no_progress_line = false;
  std::string log_level;
  double progress_period = 0.0;
  std::vector<std::string> sets;

  // The help in groups, as an ffmpeg user reads a command line: input, processing,
  // output/encoder, live, jobs, the rest; the main options first in each (CLI11 lists the
  // groups in the order their first option was added).
  std::vector<std::string> files;
  if (positionals) {
    app.add_option("DIR INPUT OUTPUT", files, "the job's directory, then INPUT OUTPUT pairs")->type_name("");
  } else {
    // Positionals are named by what they are; their descriptions say what each takes.
    app.add_option("INPUT", input, "path, URL (rtsp://, udp://, ...), '-' for stdin, /dev/videoN, or a still image")
        ->type_name("");
    app.add_option("OUTPUT", output, "path, URL, '-' for stdout (y4m by default), or a still image")->type_name("");
  }
  auto section = [](const ConfigKey& k, const char* prefix) { return k.name.rfind(prefix, 0) == 0; };
  KeyFlags key_flags;
  key_flags.add(app, [&](const ConfigKey& k) { return section(k, "input."); }, "Input");
  key_flags.add(app, [&](const ConfigKey& k) { return !section(k, "input.") && !section(k, "output.") &&
                                                      !section(k, "pipeline."); }, "Processing");
  key_flags.add(app, [&](const ConfigKey& k) { return section(k, "output."); }, "Output and encoder");
  app.add_flag("-y", overwrite, "overwrite an existing output")->group("Output and encoder");
  app.add_flag("--no-overwrite", never_overwrite, "never overwrite an output (ffmpeg's -n; the default)")
      ->group("Output and encoder");
  app.add_flag("--no-audio", no_audio, "leave the input's audio out (ffmpeg's -an)")->group("Output and encoder");
  app.add_flag("--no-subtitles", no_subtitles, "leave the input's subtitles out (ffmpeg's -sn)")
      ->group("Output and encoder");
  key_flags.add(app, [&](const ConfigKey& k) { return section(k, "pipeline."); }, "Live sources");
  if (add_flags) {
    app.option_defaults()->group("Jobs (hazefree job --help)");
    add_flags(app);
  }
  app.option_defaults()->group("Other");
  app.add_option("-c,--config", config_file, "TOML preset (see configs/)")->type_name("FILE");
  app.add_option("--set", sets, "override one configuration key: key=value (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  app.add_flag("--print-config", print_config, "print the effective configuration and exit");
  app.add_flag("-q,--quiet", quiet, "errors only: no progress line, summary or warnings");
  app.add_flag("-v,--verbose", verbose, "more detail on stderr, FFmpeg's own messages too");
  app.add_option("--loglevel", log_level,
                 "ffmpeg's -loglevel/-v LEVEL: quiet, panic, fatal or error are -q; warning or info the "
                 "default; verbose, debug or trace are -v")
      ->type_name("LEVEL");
  app.add_flag("--progress-line", progress_line, "the progress line even with -q (ffmpeg's -stats)");
  app.add_flag("--no-progress-line", no_progress_line, "no progress line (ffmpeg's -nostats)");
  app.add_option("--progress-period", progress_period,
                 "seconds between progress lines and reports (ffmpeg's -stats_period; default 0.5 on a terminal "
                 "and for --progress, 5 otherwise)")
      ->type_name("SECONDS");
  app.add_option("--progress", options.progress.url,
                 "ffmpeg's -progress URL: key=value blocks (frame, fps, out_time_us, speed, ...) ending in "
                 "progress=continue, the last progress=end, to pipe:1, pipe:2 or a file")
      ->type_name("URL");
  app.set_help_flag("-h,--help", "print this help and exit");
  app.set_version_flag("--version", std::string("hazefree ") + HAZEFREE_VERSION);

  std::vector<std::string> words =
      rewrite_ffmpeg_spellings(std::vector<std::string>(argv, argv + argc), app, positionals != nullptr);
  std::vector<char*> word_pointers;
  for (std::string& w : words) word_pointers.push_back(w.data());

  try {
    app.parse(static_cast<int>(word_pointers.size()), word_pointers.data());
  } catch (const CLI::CallForHelp&) {
    exit_message = wrap_help(app.help(), 80, kHelpColumn);
    return false;
  } catch (const CLI::CallForVersion&) {
    exit_message = std::string("hazefree ") + HAZEFREE_VERSION + "\n";
    return false;
  } catch (const CLI::ParseError& e) {
    throw usage_error_of(e, app);
  }

  // Precedence: defaults < config file < command-line options < --set.
  PresetValues preset;
  if (!config_file.empty()) preset = apply_config_file(options, config_file);
  key_flags.apply(options);
  for (const std::string& s : sets) apply_set_argument(options, s);
  if (positionals) {
    *positionals = files;
  } else {
    options.input = input;
    options.output = output;
  }
  if (overwrite && never_overwrite) throw UsageError("-y and -n: give one of them");
  options.output_options.overwrite = overwrite;
  options.output_options.audio = !no_audio;
  options.output_options.subtitles = !no_subtitles;
  if (!log_level.empty()) {
    const int level = ffmpeg_log_level(log_level);
    if (level == -1)
      throw UsageError(fmt::format("-loglevel {}: accepted quiet, panic, fatal, error, warning, info, verbose, "
                                   "debug, trace or a number", log_level));
    if (level <= 16) quiet = true;
    if (level >= 40) verbose = true;
  }
  options.quiet = quiet;
  options.verbose = verbose;
  if (progress_line && no_progress_line) throw UsageError("-stats and -nostats: give one of them");
  options.progress.line = progress_line      ? ProgressOptions::Line::on
                          : no_progress_line ? ProgressOptions::Line::off
                                             : ProgressOptions::Line::automatic;
  if (progress_period < 0 || !std::isfinite(progress_period))
    throw UsageError(fmt::format("-stats_period {}: give a positive number of seconds", progress_period));
  options.progress.period_seconds = progress_period;
  if (!options.progress.url.empty()) {
    try {
      const std::string& url = options.progress.url;
      const int fd = standard_stream_of("-progress", url);
      if (fd == 1 && output == "-")
        throw UsageError(fmt::format("-progress {}: the output is written to stdout; give pipe:2 or a file", url));
      const std::filesystem::path folder =
          std::filesystem::path(url.rfind("file:", 0) == 0 ? url.substr(5) : url).parent_path();
      std::error_code ec;
      if (fd < 0 && !folder.empty() && !std::filesystem::is_directory(folder, ec))
        throw UsageError(fmt::format("-progress {}: folder {} does not exist", url, folder.string()));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  finalize_options(options, preset);

  if (print_config) {
    exit_message = format_config(options);
    return false;
  }
  if (positionals) {
    if (files.size() < 3 || files.size() % 2 != 1)
      throw UsageError("job plan: give DIR, then INPUT OUTPUT pairs (see --help)");
  } else if (input.empty() || output.empty()) {
    throw UsageError("INPUT and OUTPUT are required (see --help)");
  }
  return true;
}

}  // namespace hazefree
