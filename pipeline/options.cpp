#include "pipeline/options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace hazefree {
namespace {

[[noreturn]] void bad_value(const std::string& key, const std::string& value, const std::string& range) {
  throw UsageError(fmt::format("{}: invalid value '{}' (accepted: {})", key, value, range));
}

template <typename T>
T parse_number(const std::string& key, const std::string& text, const std::string& range) {
  T value{};
  if constexpr (std::is_integral_v<T>) {
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end) bad_value(key, text, range);
  } else {
    // Accept "5/255" as well as plain decimals: presets read better that way.
    std::string t = text;
    double numerator = 0, denominator = 1;
    const auto slash = t.find('/');
    try {
      std::size_t used = 0;
      numerator = std::stod(t.substr(0, slash), &used);
      if (used != (slash == std::string::npos ? t.size() : slash)) bad_value(key, text, range);
      if (slash != std::string::npos) {
        const std::string rest = t.substr(slash + 1);
        denominator = std::stod(rest, &used);
        if (used != rest.size() || denominator == 0) bad_value(key, text, range);
      }
    } catch (const std::logic_error&) {
      bad_value(key, text, range);
    }
    value = static_cast<T>(numerator / denominator);
    if (!std::isfinite(value)) bad_value(key, text, range);
  }
  return value;
}

bool parse_bool(const std::string& key, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  bad_value(key, text, "true, false");
}

std::string quote(const std::string& s) { return fmt::format("\"{}\"", s); }

// A numeric key whose range is checked by validate() (processing parameters) or by `check`.
template <typename T, typename Access>
ConfigKey number_key(std::string name, std::string help, std::string range, Access access,
                     T min = std::numeric_limits<T>::lowest(), T max = std::numeric_limits<T>::max()) {
  ConfigKey key;
  key.name = name;
  key.help = std::move(help);
  key.range = range;
  key.set = [name, range, access, min, max](RunOptions& o, const std::string& v) {
    const T value = parse_number<T>(name, v, range);
    if (value < min || value > max)
      throw UsageError(fmt::format("{} = {} is outside {}", name, v, range));
    access(o) = value;
  };
  key.get = [access](const RunOptions& o) { return fmt::format("{}", access(o)); };
  key.kind = std::is_integral_v<T> ? ConfigKind::integer : ConfigKind::number;
  return key;
}

template <typename Access>
ConfigKey string_key(std::string name, std::string help, std::string range, Access access) {
  ConfigKey key;
  key.name = std::move(name);
  key.help = std::move(help);
  key.range = std::move(range);
  key.set = [access](RunOptions& o, const std::string& v) { access(o) = v; };
  key.get = [access](const RunOptions& o) { return quote(access(o)); };
  return key;
}

template <typename Access>
ConfigKey bool_key(std::string name, std::string help, Access access) {
  ConfigKey key;
  key.name = name;
  key.help = std::move(help);
  key.range = "true, false";
  key.set = [name, access](RunOptions& o, const std::string& v) { access(o) = parse_bool(name, v); };
  key.get = [access](const RunOptions& o) { return access(o) ? std::string("true") : std::string("false"); };
  key.kind = ConfigKind::boolean;
  return key;
}

template <typename Enum, typename Parse, typename Access>
ConfigKey enum_key(std::string name, std::string help, std::string range, Parse parse, Access access) {
  ConfigKey key;
  key.name = name;
  key.help = std::move(help);
  key.range = range;
  key.set = [name, range, parse, access](RunOptions& o, const std::string& v) {
    const std::optional<Enum> value = parse(v);
    if (!value) bad_value(name, v, range);
    access(o) = *value;
  };
  key.get = [access](const RunOptions& o) { return quote(to_string(access(o))); };
  key.kind = ConfigKind::choice;
  return key;
}

Roi parse_roi(const std::string& key, const std::string& text) {
  const std::string range = "x,y,w,h with x,y >= 0 and w,h > 0 (or empty for the whole frame)";
  if (text.empty()) return Roi{};
  std::vector<int> v;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    v.push_back(parse_number<int>(key, part, range));
  }
  if (v.size() != 4 || v[0] < 0 || v[1] < 0 || v[2] <= 0 || v[3] <= 0) bad_value(key, text, range);
  return Roi{v[0], v[1], v[2], v[3]};
}

std::vector<ConfigKey> make_keys() {
  std::vector<ConfigKey> k;
  k.push_back(enum_key<Mode>("mode", "algorithm: dark channel prior dehazing, global HE, sliding-window AHE/CLAHE",
                             "dcp, he, ahe", parse_mode, [](auto& o) -> auto& { return o.processing.mode; }));
  k.push_back(enum_key<ColorMode>("color", "what he/ahe equalize: the Y plane, R,G,B each, a grey image, or the 12-bit BITS index (he only)",
                                  "luma, rgb, grey, rgb-bits", parse_color_mode,
                                  [](auto& o) -> auto& { return o.processing.color; }));
  k.push_back(enum_key<Backend>("backend", "where frames are processed (auto: CUDA when a usable GPU is present)",
                                "auto, cuda, cpu", parse_backend, [](auto& o) -> auto& { return o.processing.backend; }));
  k.push_back(number_key<int>("threads", "CPU threads for the CPU backend (0 = all cores, 1 = sequential)", "[0, 1024]",
                              [](auto& o) -> auto& { return o.processing.threads; }, 0, 1024));
  k.push_back(bool_key("side_by_side", "write the input and the result next to each other",
                       [](auto& o) -> auto& { return o.side_by_side; }));

  k.push_back(number_key<int>("dcp.patch_radius", "dark channel patch radius r (window 2r+1), pixels", "[0, 1000]",
                              [](auto& o) -> auto& { return o.processing.dcp.patch_radius; }));
  k.push_back(number_key<float>("dcp.omega", "fraction of the haze removed", "(0, 1]",
                                [](auto& o) -> auto& { return o.processing.dcp.omega; }));
  k.push_back(number_key<float>("dcp.a_top_fraction", "fraction of 32x32 blocks averaged for the atmospheric light", "(0, 1]",
                                [](auto& o) -> auto& { return o.processing.dcp.a_top_fraction; }));
  k.push_back(number_key<float>("dcp.a_smoothing", "step of the atmospheric light towards each new estimate", "(0, 1]",
                                [](auto& o) -> auto& { return o.processing.dcp.a_smoothing; }));
  k.push_back(number_key<float>("dcp.a_max_step", "largest change of the atmospheric light per frame and channel (1 = full scale)", "[0, inf)",
                                [](auto& o) -> auto& { return o.processing.dcp.a_max_step; }));
  k.push_back(number_key<float>("dcp.a_scene_cut", "mean change of the estimate that counts as a scene cut (resets the light)", "[0, inf)",
                                [](auto& o) -> auto& { return o.processing.dcp.a_scene_cut; }));
  k.push_back(number_key<int>("dcp.gf_radius", "guided filter radius, pixels", "[1, 4096]",
                              [](auto& o) -> auto& { return o.processing.dcp.gf_radius; }));
  k.push_back(number_key<float>("dcp.gf_eps", "guided filter regulariser (edge keeping: smaller keeps more)", "(0, inf)",
                                [](auto& o) -> auto& { return o.processing.dcp.gf_eps; }));
  k.push_back(number_key<int>("dcp.gf_subsample", "fast guided filter subsampling factor (1 = exact)", "[1, 64]",
                              [](auto& o) -> auto& { return o.processing.dcp.gf_subsample; }));
  k.push_back(number_key<float>("dcp.k_tolerance", "bright-region tolerance K (0 = off)", "[0, inf)",
                                [](auto& o) -> auto& { return o.processing.dcp.k_tolerance; }));
  k.push_back(number_key<float>("dcp.t0", "lower bound of the transmission in the recovery", "(0, 1]",
                                [](auto& o) -> auto& { return o.processing.dcp.t0; }));
  k.push_back(number_key<float>("dcp.brightness", "brightness boost B of J + (1 - J) J B", "[0, 1]",
                                [](auto& o) -> auto& { return o.processing.dcp.brightness; }));

  k.push_back(number_key<float>("he.temporal", "temporal smoothing of the histogram for video (1 = off)", "(0, 1]",
                                [](auto& o) -> auto& { return o.processing.he.temporal; }));
  {
    ConfigKey roi;
    roi.name = "he.roi";
    roi.help = "histogram only inside this rectangle x,y,w,h (empty: whole frame); the LUT applies to the whole frame";
    roi.range = "x,y,w,h or empty";
    roi.set = [](RunOptions& o, const std::string& v) { o.processing.he.roi = parse_roi("he.roi", v); };
    roi.get = [](const RunOptions& o) {
      const Roi& r = o.processing.he.roi;
      return r.empty() ? std::string("\"\"") : fmt::format("\"{},{},{},{}\"", r.x, r.y, r.w, r.h);
    };
    k.push_back(roi);
  }
  k.push_back(number_key<int>("ahe.window", "AHE window side, pixels", "odd numbers in [3, 8191]",
                              [](auto& o) -> auto& { return o.processing.ahe.window; }));
  k.push_back(number_key<float>("ahe.clip", "CLAHE clip limit in OpenCV units (0 = plain AHE)", "[0, inf)",
                                [](auto& o) -> auto& { return o.processing.ahe.clip; }));

  k.push_back(string_key("input.format", "force the input format (v4l2, rawvideo, yuv4mpegpipe, ...); empty = probe", "a demuxer name",
                         [](auto& o) -> auto& { return o.input_options.format; }));
  k.push_back(string_key("input.size", "frame size of raw input, WxH", "WxH",
                         [](auto& o) -> auto& { return o.input_size; }));
  k.push_back(string_key("input.framerate", "frame rate of raw input or of a camera", "a rate such as 25 or 30000/1001",
                         [](auto& o) -> auto& { return o.input_rate; }));
  k.push_back(string_key("input.pixel_format", "pixel format of raw input or of a camera (e.g. yuv420p)", "an FFmpeg pixel format",
                         [](auto& o) -> auto& { return o.input_pixel_format; }));
  k.push_back(string_key("input.hwdec", "decode on the GPU and keep the pictures there: cuda (NVDEC); empty = on the CPU",
                         "cuda or empty", [](auto& o) -> auto& { return o.input_options.hwdec; }));
  k.push_back(number_key<int>("input.threads", "decoder threads (0 = automatic)", "[0, 256]",
                              [](auto& o) -> auto& { return o.input_options.decoder_threads; }, 0, 256));
  {
    ConfigKey timeout;
    timeout.name = "input.timeout";
    timeout.help = "seconds without a packet that count as a stall (0 = never); auto: 5 with --live for "
                   "network and camera sources, else 0";
    timeout.range = "auto or [0, 86400]";
    timeout.set = [range = timeout.range](RunOptions& o, const std::string& v) {
      if (v == "auto") {
        o.input_timeout = RunOptions::kAutoTimeout;
        return;
      }
      const double seconds = parse_number<double>("input.timeout", v, range);
      if (seconds < 0 || seconds > 86400) bad_value("input.timeout", v, range);
      o.input_timeout = seconds;
    };
    timeout.get = [](const RunOptions& o) {
      return o.input_timeout == RunOptions::kAutoTimeout ? quote("auto") : fmt::format("{}", o.input_timeout);
    };
    k.push_back(timeout);
  }
  {
    ConfigKey reconnect;
    reconnect.name = "input.reconnect";
    reconnect.help = "with --live, times a network or camera source that stalled, failed or ended is reopened "
                     "(back-off 0.5 s doubling to 8 s); auto: unlimited with --live, else 0";
    reconnect.range = "auto, unlimited or [0, 1000000]";
    reconnect.set = [range = reconnect.range](RunOptions& o, const std::string& v) {
      if (v == "auto" || v == "unlimited") {
        o.input_reconnect = v == "auto" ? RunOptions::kAuto : RunOptions::kUnlimited;
        return;
      }
      const int attempts = parse_number<int>("input.reconnect", v, range);
      if (attempts < 0 || attempts > 1000000) bad_value("input.reconnect", v, range);
      o.input_reconnect = attempts;
    };
    reconnect.get = [](const RunOptions& o) {
      if (o.input_reconnect == RunOptions::kAuto) return quote("auto");
      if (o.input_reconnect == RunOptions::kUnlimited) return quote("unlimited");
      return std::to_string(o.input_reconnect);
    };
    k.push_back(reconnect);
  }
  k.push_back(string_key("output.format", "force the output container; empty = from the name (y4m on a pipe)", "a muxer name",
                         [](auto& o) -> auto& { return o.output_options.format; }));
  k.push_back(string_key("output.encoder", "video encoder; empty = libx264 for video files, the container's own for y4m/images", "an FFmpeg encoder name",
                         [](auto& o) -> auto& { return o.output_options.encoder; }));
  {
    ConfigKey depth;
    depth.name = "output.depth";
    depth.help = "bits per sample of the output (auto: the input's own); frames are converted to it before "
                 "processing, so 8-bit input written at 10 bits is processed at 10 bits";
    depth.range = "auto, 8, 10, 12, 16";
    depth.kind = ConfigKind::choice;
    depth.set = [range = depth.range](RunOptions& o, const std::string& v) {
      if (v == "auto") {
        o.output_depth = 0;
        return;
      }
      if (v != "8" && v != "10" && v != "12" && v != "16") bad_value("output.depth", v, range);
      o.output_depth = std::stoi(v);
    };
    depth.get = [](const RunOptions& o) {
      return o.output_depth == 0 ? quote("auto") : std::to_string(o.output_depth);
    };
    k.push_back(depth);
  }
  k.push_back(number_key<int>("output.crf", "constant rate factor of libx264/libx265 (lower = better quality)", "[0, 51]",
                              [](auto& o) -> auto& { return o.output_options.crf; }, 0, 51));
  k.push_back(string_key("output.preset", "libx264/libx265 preset", "ultrafast ... veryslow",
                         [](auto& o) -> auto& { return o.output_options.preset; }));
  k.push_back(bool_key("pipeline.live", "low-latency mode for live sources: short queues, drop the oldest frame when behind",
                       [](auto& o) -> auto& { return o.live; }));
  k.push_back(number_key<int>("pipeline.queue_depth", "frames waiting between two stages", "[1, 64]",
                              [](auto& o) -> auto& { return o.queue_depth; }, 1, 64));
  return k;
}

// TOML value -> the text form the key setters parse.
std::string node_text(const std::string& key, const toml::node& node) {
  if (auto v = node.as_string()) return v->get();
  if (auto v = node.as_integer()) return std::to_string(v->get());
  if (auto v = node.as_floating_point()) return fmt::format("{}", v->get());
  if (auto v = node.as_boolean()) return v->get() ? "true" : "false";
  if (auto a = node.as_array()) {
    std::string joined;
    for (const toml::node& item : *a) {
      if (!joined.empty()) joined += ",";
      joined += node_text(key, item);
    }
    return joined;
  }
  throw UsageError(fmt::format("{}: unsupported value type", key));
}

void apply_table(RunOptions& options, const toml::table& table, const std::string& prefix,
                 const std::string& path) {
  for (const auto& [name, node] : table) {
    const std::string key = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (const toml::table* sub = node.as_table()) {
      apply_table(options, *sub, key, path);
      continue;
    }
    try {
      set_config_value(options, key, node_text(key, node));
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: {}", path, e.what()));
    }
  }
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = make_keys();
  return keys;
}

void set_config_value(RunOptions& options, const std::string& key, const std::string& value) {
  for (const ConfigKey& k : config_keys()) {
    if (k.name == key) {
      k.set(options, value);
      return;
    }
  }
  throw UsageError(fmt::format("unknown configuration key '{}' (--print-config lists the keys)", key));
}

void apply_set_argument(RunOptions& options, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError(fmt::format("--set {}: expected key=value", assignment));
  set_config_value(options, assignment.substr(0, eq), assignment.substr(eq + 1));
}

void apply_config_file(RunOptions& options, const std::string& path) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    if (where.line == 0) throw UsageError(fmt::format("{}: {}", path, e.description()));
    throw UsageError(fmt::format("{}:{}:{}: {}", path, where.line, where.column, e.description()));
  }
  apply_table(options, table, "", path);
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

void finalize_options(RunOptions& options) {
  try {
    validate(options.processing);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
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
    throw UsageError("input.reconnect: reopening a lost source needs --live (pipeline.live = true)");
  if (!options.input_options.hwdec.empty() && options.input_options.hwdec != "cuda")
    throw UsageError(fmt::format("input.hwdec: invalid value '{}' (accepted: cuda or empty)", options.input_options.hwdec));
  // GPU pictures wait in the queue and the lanes: the decoder's surface pool must hold them.
  options.input_options.hw_frames_in_flight = options.queue_depth + 8;
  options.output_options.url = options.output;
  options.input_options.depth = options.output_depth;
  if (options.live) {
    options.queue_depth = std::min(options.queue_depth, 2);
    options.input_options.low_delay = true;
    options.output_options.low_latency = true;
  }
}

bool parse_command_line(int argc, char** argv, RunOptions& options, std::string& exit_message,
                        std::vector<std::string>* positionals, const std::string& usage) {
  CLI::App app{usage.empty() ? "hazefree: real-time video dehazing (dark channel prior) and contrast equalization (HE, AHE/CLAHE)"
                             : usage,
               positionals ? "hazefree job plan" : "hazefree"};
  app.footer(
      "Run `hazefree bench --help` for the benchmark. Configuration keys: --print-config.\n"
      "Exit status: 0 success, 1 processing/I-O failure, 2 bad usage or configuration, 130 interrupted.");
  app.set_version_flag("--version", std::string("hazefree ") + HAZEFREE_VERSION);

  std::string input, output, mode, color, backend, config_file, format, input_format, encoder, preset, hwdec,
      output_depth;
  int window = 0, crf = -1, threads = -1;
  float clip = -1.f;
  bool print_config = false, overwrite = false, quiet = false, verbose = false, live = false,
       side_by_side = false;
  std::vector<std::string> sets;

  std::vector<std::string> files;
  if (positionals) {
    app.add_option("DIR INPUT OUTPUT", files, "the job's directory, then INPUT OUTPUT pairs");
  } else {
    app.add_option("INPUT", input, "path, URL (rtsp://, udp://, ...), '-' for stdin, /dev/videoN, or a still image");
    app.add_option("OUTPUT", output, "path, URL, '-' for stdout (y4m by default), or a still image");
  }
  // Jobs (SPEC 8): the input in chunks, run by workers on this machine (one per GPU).
  JobOptions& job = options.job;
  std::string chunks_text;
  app.add_option("--chunks", chunks_text, "split the input into about N chunks at keyframes, run in parallel with "
                                          "frames identical to one run (see `hazefree job --help`); auto: as many "
                                          "chunks, workers and encoder threads as this machine runs fastest");
  app.add_option("--chunk-seconds", job.chunk_seconds, "or chunks of about S seconds")->check(CLI::PositiveNumber);
  app.add_option("--chunk-starts", job.chunk_starts, "or chunks starting exactly at these frames (keyframes), e.g. 0,240,480");
  if (!positionals) {
    app.add_option("--gpus", job.gpus, "with --chunks: the GPUs whose workers run the chunks: all (default) or 0,1,...");
    app.add_option("--workers-per-gpu", job.workers_per_gpu, "with --chunks: workers on each GPU (default 1; auto chooses)")
        ->check(CLI::Range(1, 64));
    app.add_option("--workers", job.workers, "with --chunks and no GPU: workers sharing the cores (default 2)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--job-memory", job.memory_mb, "with --chunks: MiB of decoded frames the workers may hold so that "
                                                  "each frame is decoded once (default: half the available memory)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--job-dir", job.dir, "with --chunks: keep the job's plan, chunks and logs in this directory "
                                         "(default: a hidden one next to OUTPUT, removed when the job succeeds)");
  }
  app.add_option("-m,--mode", mode, "dcp | he | ahe (default dcp)");
  app.add_option("--color", color, "luma | rgb | grey | rgb-bits (he/ahe; default luma)");
  app.add_option("--window", window, "AHE window side, odd, >= 3 (default 63)");
  app.add_option("--clip", clip, "CLAHE clip limit, OpenCV units; 0 = plain AHE (default 0)");
  app.add_option("-b,--backend", backend, "auto | cuda | cpu (default auto)");
  app.add_option("-c,--config", config_file, "TOML preset (see configs/)");
  app.add_option("--set", sets, "override one configuration key: key=value (repeatable)")->allow_extra_args(false);
  app.add_option("-f,--format", format, "force the output container (y4m on a pipe by default)");
  app.add_option("--input-format", input_format, "force the input format (e.g. v4l2, rawvideo with --set input.size=WxH)");
  app.add_option("--encoder", encoder, "video encoder (default libx264)");
  app.add_option("--hwdec", hwdec, "decode on the GPU (cuda: NVDEC), pictures stay in GPU memory (CUDA backend)");
  app.add_option("--output-depth", output_depth,
                 "bits per sample of the output: 8 | 10 | 12 | 16 (default: the input's own); the frames are "
                 "converted before processing");
  app.add_option("--crf", crf, "libx264/libx265 constant rate factor (default 20)");
  app.add_option("--preset", preset, "libx264/libx265 preset (default veryfast)");
  app.add_option("--threads", threads, "CPU threads for the CPU backend (0 = all cores, 1 = sequential)");
  app.add_flag("--live", live, "low-latency mode for live sources");
  app.add_flag("--side-by-side", side_by_side, "write the input and the result next to each other");
  app.add_flag("--print-config", print_config, "print the effective configuration and exit");
  app.add_flag("-y", overwrite, "overwrite an existing output");
  app.add_flag("-q,--quiet", quiet, "no progress line and no summary");
  app.add_flag("-v,--verbose", verbose, "more detail on stderr");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    exit_message = app.help();
    return false;
  } catch (const CLI::CallForVersion&) {
    exit_message = std::string("hazefree ") + HAZEFREE_VERSION + "\n";
    return false;
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }

  // Precedence: defaults < config file < command-line options < --set.
  if (!config_file.empty()) apply_config_file(options, config_file);
  if (!mode.empty()) set_config_value(options, "mode", mode);
  if (!color.empty()) set_config_value(options, "color", color);
  if (app.count("--window")) set_config_value(options, "ahe.window", std::to_string(window));
  if (app.count("--clip")) set_config_value(options, "ahe.clip", fmt::format("{}", clip));
  if (!backend.empty()) set_config_value(options, "backend", backend);
  if (!format.empty()) set_config_value(options, "output.format", format);
  if (!input_format.empty()) set_config_value(options, "input.format", input_format);
  if (!encoder.empty()) set_config_value(options, "output.encoder", encoder);
  if (!hwdec.empty()) set_config_value(options, "input.hwdec", hwdec);
  if (!output_depth.empty()) {
    try {
      set_config_value(options, "output.depth", output_depth);
    } catch (const UsageError&) {
      throw UsageError(fmt::format("--output-depth {}: invalid value (accepted: 8, 10, 12, 16, auto)", output_depth));
    }
  }
  if (app.count("--crf")) set_config_value(options, "output.crf", std::to_string(crf));
  if (!preset.empty()) set_config_value(options, "output.preset", preset);
  if (app.count("--threads")) set_config_value(options, "threads", std::to_string(threads));
  if (live) options.live = true;
  if (side_by_side) options.side_by_side = true;
  for (const std::string& s : sets) apply_set_argument(options, s);
  if (positionals) {
    *positionals = files;
  } else {
    options.input = input;
    options.output = output;
  }
  options.output_options.overwrite = overwrite;
  options.quiet = quiet;
  options.verbose = verbose;
  finalize_options(options);

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
  if (chunks_text == "auto") {
    if (positionals)
      throw UsageError("job plan: --chunks auto chooses for this machine's workers; give --chunks N or --chunk-seconds S");
    job.auto_chunks = true;
  } else if (!chunks_text.empty()) {
    char* end = nullptr;
    const long n = std::strtol(chunks_text.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 100000)
      throw UsageError(fmt::format("--chunks {}: expected a number of chunks from 1 to 100000, or auto", chunks_text));
    job.chunks = static_cast<int>(n);
  }
  const int cut_ways = (job.chunks > 0 || job.auto_chunks) + (job.chunk_seconds > 0) + !job.chunk_starts.empty();
  if (cut_ways > 1) throw UsageError("--chunks, --chunk-seconds and --chunk-starts: give one of them");
  if (!positionals && cut_ways == 0 && (!job.gpus.empty() || !job.dir.empty()))
    throw UsageError("--gpus and --job-dir go with --chunks (or --chunk-seconds)");
  return true;
}

}  // namespace hazefree
