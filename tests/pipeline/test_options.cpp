#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "pipeline/options.hpp"
#include "support/test_support.hpp"

using namespace hazefree;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = test::temp_dir("options-" + name) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// Parses a command line given as words (argv[0] added).
RunOptions parse(std::vector<std::string> words, std::string* message = nullptr, bool* proceed = nullptr) {
  words.insert(words.begin(), "hazefree");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  RunOptions options;
  std::string exit_message;
  const bool go = parse_command_line(static_cast<int>(argv.size()), argv.data(), options, exit_message);
  if (message) *message = exit_message;
  if (proceed) *proceed = go;
  return options;
}

std::string usage_error(std::vector<std::string> words) {
  try {
    parse(std::move(words));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("options: defaults are the specification's") {
  const RunOptions o = parse({"in.mp4", "out.mp4"});
  const ProcessingConfig& c = o.processing;
  CHECK(c.mode == Mode::dcp);
  CHECK(c.color == ColorMode::luma);
  CHECK(c.backend == Backend::automatic);
  CHECK(c.ahe.window == 63);
  CHECK(c.ahe.clip == 0.f);
  CHECK(c.dcp.patch_radius == 7);
  CHECK(c.dcp.omega == doctest::Approx(0.95));
  CHECK(c.dcp.a_top_fraction == doctest::Approx(0.01));
  CHECK(c.dcp.a_smoothing == doctest::Approx(0.8));
  CHECK(c.dcp.a_max_step == doctest::Approx(5.0 / 255));
  CHECK(c.dcp.a_scene_cut == doctest::Approx(0.2));
  CHECK(c.dcp.gf_radius == 32);
  CHECK(c.dcp.gf_eps == doctest::Approx(1e-3));
  CHECK(c.dcp.gf_subsample == 1);
  CHECK(c.dcp.k_tolerance == doctest::Approx(80.0 / 255));
  CHECK(c.dcp.t0 == doctest::Approx(0.1));
  CHECK(c.dcp.brightness == doctest::Approx(0.2));
  CHECK(c.he.temporal == 1.f);
  CHECK(o.input_options.url == "in.mp4");
  CHECK(o.output_options.url == "out.mp4");
  CHECK(o.output_options.overwrite == false);
}

TEST_CASE("options: command-line flags set their keys") {
  const RunOptions o = parse({"--mode", "ahe", "--color", "rgb", "--window", "127", "--clip", "2", "-b", "cpu",
                              "--encoder", "mpeg4", "--crf", "30", "--preset", "fast", "-f", "matroska",
                              "--input-format", "v4l2", "-y", "-q", "--threads", "1", "in", "out"});
  CHECK(o.processing.mode == Mode::ahe);
  CHECK(o.processing.color == ColorMode::rgb);
  CHECK(o.processing.ahe.window == 127);
  CHECK(o.processing.ahe.clip == 2.f);
  CHECK(o.processing.backend == Backend::cpu);
  CHECK(o.processing.threads == 1);
  CHECK(o.output_options.encoder == "mpeg4");
  CHECK(o.output_options.crf == 30);
  CHECK(o.output_options.preset == "fast");
  CHECK(o.output_options.format == "matroska");
  CHECK(o.input_options.format == "v4l2");
  CHECK(o.output_options.overwrite);
  CHECK(o.quiet);
}

TEST_CASE("options: config file, then flags, then --set, in that order of precedence") {
  const std::string path = write_file("preset.toml",
                                      "mode = \"ahe\"\n[ahe]\nwindow = 31\nclip = 3.5\n[dcp]\nomega = 0.5\n");
  RunOptions o = parse({"-c", path, "in", "out"});
  CHECK(o.processing.mode == Mode::ahe);
  CHECK(o.processing.ahe.window == 31);
  CHECK(o.processing.ahe.clip == 3.5f);
  CHECK(o.processing.dcp.omega == 0.5f);
  o = parse({"-c", path, "--window", "63", "in", "out"});
  CHECK(o.processing.ahe.window == 63);
  o = parse({"-c", path, "--window", "63", "--set", "ahe.window=255", "in", "out"});
  CHECK(o.processing.ahe.window == 255);
}

TEST_CASE("options: fractions such as 5/255 are accepted for float keys") {
  const RunOptions o = parse({"--set", "dcp.a_max_step=10/255", "in", "out"});
  CHECK(o.processing.dcp.a_max_step == doctest::Approx(10.0 / 255));
}

TEST_CASE("options: every preset in configs/ loads and validates") {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(HAZEFREE_SAMPLES_DIR) + "/../configs")) {
    if (entry.path().extension() != ".toml") continue;
    CAPTURE(entry.path().string());
    RunOptions o;
    CHECK_NOTHROW(apply_config_file(o, entry.path().string()));
    CHECK_NOTHROW(finalize_options(o));
    ++count;
  }
  CHECK(count >= 7);
}

TEST_CASE("options: --print-config output reads back as the same configuration") {
  std::string text;
  bool proceed = true;
  const RunOptions a = parse({"--print-config", "--mode", "he", "--set", "dcp.omega=0.7", "--set",
                              "he.roi=1,2,30,40", "--set", "output.crf=31"},
                             &text, &proceed);
  CHECK_FALSE(proceed);
  CHECK(text.find("omega = 0.7") != std::string::npos);
  const std::string path = write_file("printed.toml", text);
  RunOptions b;
  apply_config_file(b, path);
  CHECK(format_config(b) == format_config(a));
  CHECK(b.processing.he.roi.w == 30);
  CHECK(b.output_options.crf == 31);
}

TEST_CASE("options: out-of-range values name the key and the accepted range") {
  CHECK(usage_error({"--set", "dcp.t0=0", "in", "out"}) == "dcp.t0 = 0 is outside (0, 1]");
  CHECK(usage_error({"--set", "dcp.t0=1.5", "in", "out"}).find("(0, 1]") != std::string::npos);
  CHECK(usage_error({"--window", "64", "in", "out"}).find("ahe.window") != std::string::npos);
  CHECK(usage_error({"--window", "1", "in", "out"}).find("odd") != std::string::npos);
  CHECK(usage_error({"--set", "dcp.patch_radius=-1", "in", "out"}).find("dcp.patch_radius") != std::string::npos);
  CHECK(usage_error({"--set", "dcp.gf_radius=0", "in", "out"}).find("dcp.gf_radius") != std::string::npos);
  CHECK(usage_error({"--clip", "-1", "in", "out"}).find("ahe.clip") != std::string::npos);
  CHECK(usage_error({"--set", "output.crf=99", "in", "out"}).find("[0, 51]") != std::string::npos);
  CHECK(usage_error({"--set", "he.temporal=0", "in", "out"}).find("he.temporal") != std::string::npos);
  CHECK(usage_error({"--color", "rgb-bits", "--mode", "ahe", "in", "out"}).find("rgb-bits") != std::string::npos);
}

TEST_CASE("options: malformed values, unknown keys and unknown names are refused") {
  CHECK(usage_error({"--set", "dcp.omega=abc", "in", "out"}).find("dcp.omega: invalid value 'abc'") != std::string::npos);
  CHECK(usage_error({"--set", "dcp.nothing=1", "in", "out"}).find("unknown configuration key 'dcp.nothing'") !=
        std::string::npos);
  CHECK(usage_error({"--set", "noequals", "in", "out"}).find("key=value") != std::string::npos);
  CHECK(usage_error({"--mode", "sharpen", "in", "out"}).find("dcp, he, ahe") != std::string::npos);
  CHECK(usage_error({"--backend", "tpu", "in", "out"}).find("auto, cuda, cpu") != std::string::npos);
  CHECK(usage_error({"--set", "he.roi=1,2,3", "in", "out"}).find("he.roi") != std::string::npos);
  CHECK(usage_error({"--set", "pipeline.live=maybe", "in", "out"}).find("pipeline.live") != std::string::npos);
  CHECK(usage_error({"in"}).find("required") != std::string::npos);
  CHECK(usage_error({"--no-such-flag", "in", "out"}) == "--no-such-flag: unknown option (hazefree --help lists the options)");
  // Words of dashes alone (or a name left empty before '=') name no option and no key.
  // A word of dashes, or a name left empty before '=': an unknown option or a surplus argument.
  CHECK(usage_error({"--=x", "in", "out"}) == "--=x: unknown option (hazefree --help lists the options)");
  CHECK(usage_error({"in", "out", "--", "x", "---"}) == "---: unknown option (hazefree --help lists the options)");
  CHECK(usage_error({"in", "out", "--", "x"}) ==
        "x: an argument too many; hazefree takes INPUT OUTPUT (hazefree --help shows the usage)");
  CHECK(usage_error({"in", "out", "x", "y"}) ==
        "x y: arguments too many; hazefree takes INPUT OUTPUT (hazefree --help shows the usage)");
  CHECK(!usage_error({"--mode", "he", "--", "grey", "--set", "--set", "h", "-:y"}).empty());
  // A key's last part as a flag: the --set that sets it (-t's key takes a word besides numbers).
  CHECK(usage_error({"--omega", "0.5", "in", "out"}) ==
        "--omega: unknown option; the configuration key is set with --set dcp.omega=VALUE (hazefree --help lists "
        "the options)");
  CHECK(usage_error({"--gf_eps=0.01", "in", "out"}).find("--gf_eps: unknown option; the configuration key is set with "
                                                         "--set dcp.gf_eps=VALUE") == 0);
  CHECK(usage_error({"-t", "-5", "in", "out"}) == "input.duration = -5 is outside (0, inf) (also accepted: none)");
  // Typos: a flag or a key one or two edits away (a swap of neighbours is one).
  CHECK(usage_error({"--mdoe", "he", "in", "out"}) ==
        "--mdoe: unknown option; did you mean --mode? (hazefree --help lists the options)");
  CHECK(usage_error({"--omgea", "0.5", "in", "out"}).find("--set dcp.omega=VALUE") != std::string::npos);
  CHECK(usage_error({"--set", "omega=0.8", "in", "out"}) ==
        "unknown configuration key 'omega'; did you mean dcp.omega? (--print-config lists the keys)");
  CHECK(usage_error({"--set", "ahe.windo=5", "in", "out"}).find("did you mean ahe.window?") != std::string::npos);
}

TEST_CASE("options: raw input's -video_size -framerate -pixel_format and -f are checked as given and named in one line") {
  const auto raw = [](const std::string& option, const std::string& value) {
    return usage_error({"-f", "rawvideo", option, value, "-i", "in.yuv", "out.mkv"});
  };
  CHECK(raw("-pixel_format", "bogus") ==
        "-pixel_format bogus (input.pixel_format): no such pixel format (ffmpeg -pix_fmts lists them)");
  for (const char* rate : {"abc", "0", "-5", "25/0"}) {
    CAPTURE(rate);
    CHECK(raw("-framerate", rate) ==
          fmt::format("-framerate {} (input.framerate): not a frame rate above 0 (25, 30000/1001, ntsc, ...)", rate));
  }
  for (const char* size : {"bogus", "64x", "0x0", "64x-48", "12"}) {
    CAPTURE(size);
    CHECK(raw("-video_size", size) ==
          fmt::format("-video_size {} (input.size): not a frame size (WxH, both sides above 0, or a name such as hd720)",
                      size));
  }
  CHECK(usage_error({"-f", "bogus", "-i", "in", "out"}) ==
        "--input-format bogus (input.format): no such input format (ffmpeg -demuxers lists them)");
  // The same words through --set and a preset (which names its file).
  CHECK(usage_error({"--set", "input.framerate=abc", "in", "out"}).rfind("-framerate abc (input.framerate): ", 0) == 0);
  const std::string preset = write_file("raw.toml", "[input]\npixel_format = \"yuv42p\"\n");
  CHECK(usage_error({"-c", preset, "in", "out"}) ==
        preset + ": -pixel_format yuv42p (input.pixel_format): no such pixel format (ffmpeg -pix_fmts lists them)");
  // What FFmpeg takes is taken, as given: names, fractions, formats above 8 bits, a device.
  const RunOptions o = parse({"-f", "rawvideo", "-video_size", "hd720", "-framerate", "ntsc", "-pixel_format",
                              "yuv420p10le", "-i", "in.yuv", "out.mkv"});
  CHECK(o.input_options.format == "rawvideo");
  CHECK(o.input_options.format_options.at("video_size") == "hd720");
  CHECK(o.input_options.format_options.at("framerate") == "ntsc");
  CHECK(o.input_options.format_options.at("pixel_format") == "yuv420p10le");
  CHECK(parse({"-video_size", "640x480", "-framerate", "30000/1001", "--input-format", "v4l2", "/dev/video0", "o.mkv"})
            .input_options.format_options.at("framerate") == "30000/1001");
  CHECK(parse({"--set", "input.size=", "in", "out"}).input_options.format_options.count("video_size") == 0);
}

TEST_CASE("options: config file errors name the file and the key or the line") {
  const std::string unknown = write_file("unknown.toml", "[dcp]\nomegaa = 0.9\n");
  const std::string e1 = usage_error({"-c", unknown, "in", "out"});
  CHECK(e1.find(unknown) != std::string::npos);
  CHECK(e1.find("dcp.omegaa") != std::string::npos);
  const std::string malformed = write_file("malformed.toml", "mode = \"dcp\"\n[dcp\nomega = 0.9\n");
  const std::string e2 = usage_error({"-c", malformed, "in", "out"});
  CHECK(e2.find(malformed + ":2:") != std::string::npos);
  const std::string range = write_file("range.toml", "[dcp]\nomega = 2.0\n");
  CHECK(usage_error({"-c", range, "in", "out"}).find("dcp.omega = 2 is outside (0, 1]") != std::string::npos);
  CHECK(usage_error({"-c", "/nonexistent/preset.toml", "in", "out"}) ==
        "/nonexistent/preset.toml: No such file or directory");
  const std::string folder = std::filesystem::path(unknown).parent_path().string();
  CHECK(usage_error({"-c", folder, "in", "out"}) == folder + ": is a folder, not a TOML file");
}

TEST_CASE("options: a preset's value refused by the checks names the preset unless a flag or --set replaced it") {
  const std::string range = write_file("bad.toml", "[dcp]\nomega = 2\n");
  CHECK(usage_error({"-c", range, "in", "out"}) == range + ": dcp.omega = 2 is outside (0, 1]");
  // An even window (the key's bounds are odd numbers): named with its file as well.
  const std::string windows = write_file("windows.toml", "[ahe]\nwindow = 4\n");
  CHECK(usage_error({"-c", windows, "in", "out"}).rfind(windows + ": ahe.window", 0) == 0);
  // Replaced on the command line: the file is right, the flag's value is the one refused or kept.
  CHECK(usage_error({"-c", range, "--set", "dcp.omega=3", "in", "out"}) == "dcp.omega = 3 is outside (0, 1]");
  CHECK(usage_error({"-c", range, "--set", "dcp.omega=0.8", "in", "out"}).empty());
  // A value the file did not set is not the file's.
  const std::string other = write_file("other.toml", "mode = \"ahe\"\n");
  CHECK(usage_error({"-c", other, "--set", "dcp.omega=3", "in", "out"}) == "dcp.omega = 3 is outside (0, 1]");
}

TEST_CASE("options: a number flag outside the table says its bounds in words") {
  CLI::App app{"test", "hazefree test"};
  double seconds = 0, memory = 0;
  int frames = 0;
  app.add_option("--seconds", seconds)->check(bounds_check(Bounds::above(0)));
  app.add_option("--memory", memory)->check(bounds_check(Bounds::at_least(0)));
  app.add_option("--frames", frames)->check(bounds_check(Bounds::closed(1, 100)));
  auto refusal = [&app](const std::string& line) -> std::string {
    try {
      app.parse(line);
    } catch (const CLI::ParseError& e) {
      return usage_error_of(e, app).what();
    }
    return "";
  };
  CHECK(refusal("--seconds -1") == "--seconds: -1 must be greater than 0");
  CHECK(refusal("--seconds 0") == "--seconds: 0 must be greater than 0");
  CHECK(refusal("--memory -5") == "--memory: -5 must be at least 0");
  CHECK(refusal("--frames 0") == "--frames: 0 is outside [1, 100]");
  CHECK(refusal("--frames abc") == "--frames: abc is not a number");
  CHECK(refusal("--seconds 2.5 --memory 0 --frames 100").empty());
  CHECK(seconds == 2.5);
  CHECK(refusal("--bogus") == "--bogus: unknown option (hazefree test --help lists the options)");
  CHECK(refusal("extra") == "extra: unexpected argument (hazefree test --help shows the usage)");
}

TEST_CASE("options: --live shortens the queues and asks for low latency") {
  const RunOptions o = parse({"--live", "--set", "pipeline.queue_depth=8", "in", "out"});
  CHECK(o.live);
  CHECK(o.queue_depth <= 2);
  CHECK(o.output_options.low_latency);
  CHECK(o.input_options.low_delay);
}

TEST_CASE("options: raw input size, rate and pixel format reach the demuxer options") {
  const RunOptions o = parse({"--input-format", "rawvideo", "--set", "input.size=64x48", "--set",
                              "input.framerate=25", "--set", "input.pixel_format=gray", "-", "out.y4m"});
  CHECK(o.input_options.format == "rawvideo");
  CHECK(o.input_options.format_options.at("video_size") == "64x48");
  CHECK(o.input_options.format_options.at("framerate") == "25");
  CHECK(o.input_options.format_options.at("pixel_format") == "gray");
}

TEST_CASE("options: boolean keys take the spellings their range text lists") {
  for (const char* on : {"true", "TRUE", "Yes", "on", "1"})
    CHECK(parse({"--set", fmt::format("dcp.auto_strength={}", on), "in", "out"}).processing.dcp.auto_strength);
  for (const char* off : {"false", "False", "NO", "off", "0"})
    CHECK(!parse({"--auto-strength", "--set", fmt::format("dcp.auto_strength={}", off), "in", "out"})
               .processing.dcp.auto_strength);
  const std::string range = "true, false, yes, no, on, off, 1, 0 in any letter case";
  CHECK(usage_error({"--set", "dcp.auto_strength=maybe", "in", "out"}) ==
        "dcp.auto_strength: invalid value 'maybe' (accepted: " + range + ")");
  for (const ConfigKey& key : config_keys())
    if (key.kind == ConfigKind::boolean) CHECK(key.range == range);
}

TEST_CASE("options: a preset's value of another TOML type than its key's is refused naming the file and the key") {
  const std::string quoted = write_file("quoted-boolean.toml", "[dcp]\nauto_strength = \"yes\"\n");
  CHECK(usage_error({"-c", quoted, "in", "out"}) ==
        quoted + ": dcp.auto_strength = \"yes\": a TOML string; the key takes a boolean (true or false)");
  const std::string number = write_file("number-stats.toml", "stats = 5\n");
  CHECK(usage_error({"-c", number, "in", "out"}) ==
        number + ": stats = 5: a TOML integer; the key takes a string (a file name)");
  const std::string mode = write_file("number-mode.toml", "mode = 1\n");
  CHECK(usage_error({"-c", mode, "in", "out"}) == mode + ": mode = 1: a TOML integer; the key takes a string: dcp, he, ahe");
  const std::string window = write_file("float-window.toml", "[ahe]\nwindow = 31.0\n");
  CHECK(usage_error({"-c", window, "in", "out"}).rfind(window + ": ahe.window = 31: a TOML float; the key takes an integer", 0) == 0);
  const std::string omega = write_file("boolean-omega.toml", "[dcp]\nomega = true\n");
  CHECK(usage_error({"-c", omega, "in", "out"}).rfind(omega + ": dcp.omega = true: a TOML boolean; the key takes a number", 0) == 0);
  // What each key's type takes still loads: fractions and times as strings, he.roi as an array.
  const std::string good = write_file("typed.toml",
                                      "stats = \"s.jsonl\"\n[dcp]\nauto_strength = true\na_max_step = \"5/255\"\n"
                                      "[he]\nroi = [0, 10, 20, 30]\n[input]\nstart = \"00:00:01\"\n");
  const RunOptions o = parse({"-c", good, "in", "out.mp4"});
  CHECK(o.processing.dcp.auto_strength);
  CHECK(o.stats_path == "s.jsonl");
  CHECK(o.processing.he.roi.w == 20);
  CHECK(o.trim_start == 1.0);
}

TEST_CASE("options: a flag's bad value or a second value is one line naming the option and what it takes") {
  CHECK(usage_error({"--auto-strength=maybe", "in", "out"}) ==
        "--auto-strength: invalid value 'maybe' (accepted: no value, or true, false, yes, no, on, off, 1, 0 in any "
        "letter case; key dcp.auto_strength)");
  CHECK(usage_error({"--stats", "a", "--stats", "b", "in", "out"}) ==
        "--stats: given more than once; it takes one value (a file name; key stats)");
}

TEST_CASE("options: --set wins over the flag of its key whatever their order") {
  CHECK(!parse({"--set", "dcp.auto_strength=false", "--auto-strength", "in", "out"}).processing.dcp.auto_strength);
  CHECK(!parse({"--auto-strength", "--set", "dcp.auto_strength=false", "in", "out"}).processing.dcp.auto_strength);
  CHECK(parse({"--stats", "a", "--set", "stats=b", "in", "out"}).stats_path == "b");
  CHECK(parse({"--set", "stats=b", "--stats", "a", "in", "out"}).stats_path == "b");
}

TEST_CASE("options: the warning for dcp.auto_strength outside dcp is one line naming the mode") {
  ProcessingConfig config;
  config.dcp.auto_strength = true;
  CHECK(unused_key_warning(config).empty());
  config.mode = Mode::he;
  CHECK(unused_key_warning(config) ==
        "dcp.auto_strength (--auto-strength) follows the haze index with DCP's strength; --mode he has none, and runs "
        "as without it");
  config.dcp.auto_strength = false;
  CHECK(unused_key_warning(config).empty());
}
