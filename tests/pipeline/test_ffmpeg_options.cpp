// The options people bring from ffmpeg, end to end: trimming (-ss, -t, -to, --frames) checked
// against the ffmpeg program's own decode of the span, still-image outputs, encoder settings
// read back with ffprobe, and the help's groups. Outputs are decoded again, never trusted from
// the command's own counters.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "jobs/job_test_support.hpp"
#include "run_command.hpp"
#include "support/test_support.hpp"
#include "test_robustness_support.hpp"

namespace fs = std::filesystem;

namespace hazefree::test {
namespace {

// The presentation positions of the video's key packets, as ffprobe lists them.
std::vector<int> key_positions(const std::string& path) {
  const std::vector<std::string> flags =
      lines_of(output_of("ffprobe -v error -select_streams v:0 -show_entries packet=pts,flags -of csv=p=0 " + q(path) +
                         " | sort -t, -k1,1n | cut -d, -f2"));
  std::vector<int> keys;
  for (std::size_t i = 0; i < flags.size(); ++i)
    if (!flags[i].empty() && flags[i][0] == 'K') keys.push_back(static_cast<int>(i));
  return keys;
}

double probe_number(const std::string& path, const std::string& stream, const std::string& field) {
  const std::string text = output_of("ffprobe -v error -select_streams " + stream + " -show_entries stream=" + field +
                                     " -of default=noprint_wrappers=1:nokey=1 " + q(path));
  return text.empty() || text == "N/A" ? -1.0 : std::stod(text);
}

const std::string& street() {
  static const std::string path = sample_path("hazy-street.mp4");  // 100 frames at 25 fps, AAC audio
  return path;
}

}  // namespace

TEST_CASE("trim: -ss 1.5 -t 1 gives the frames of that span as processed from its first frame") {
  const std::string dir = temp_dir("trim-span");
  // The span as the ffmpeg program decodes it (from the start, its trim filter keeping the frames
  // from 1.5 s for 1 s), losslessly, then processed alone: DCP's temporal state starts at the
  // span's first frame in both. The clip's open GOPs put a keyframe's leading pictures inside
  // the span (the seek must start from the GOP before).
  const std::string& clip = test_clip().path;
  const std::string span = dir + "/span.mkv", expected = dir + "/expected.mkv", trimmed = dir + "/trimmed.mkv";
  REQUIRE(run_program("ffmpeg -v error -nostdin -y -i " + q(clip) +
                      " -an -vf trim=start=1.5:duration=1,setpts=PTS-STARTPTS -c:v ffv1 " + q(span)) == 0);
  CommandResult r = run_hazefree("-q -y -b cpu --mode dcp --encoder ffv1 " + q(span) + " " + q(expected));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  r = run_hazefree("-q -y -b cpu --mode dcp --encoder ffv1 -ss 1.5 -t 1 " + q(clip) + " " + q(trimmed));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const DecodedMedia a = decode_media(expected), b = decode_media(trimmed);
  CHECK(a.frame_hashes.size() == 25);  // 1.52 s .. 2.48 s at 25 fps
  CHECK(b.frame_hashes == a.frame_hashes);
  // Timestamps from zero: the first frame (0.02 s after -ss) at zero, then every 40 ms; the audio
  // from its first packet at or after that frame.
  REQUIRE(b.pts_us.size() == 25);
  REQUIRE(!b.audio_packets.empty());
  CHECK(b.pts_us.front() == 0);
  CHECK(std::get<0>(b.audio_packets.front()) >= 0);
  CHECK(b.pts_us.back() - b.pts_us.front() == 24 * 40000);
  // -to 2.5 is the same span; 00:00:01.5 is -ss 1.5.
  const std::string to = dir + "/to.mkv";
  r = run_hazefree("-q -y -b cpu --mode dcp --encoder ffv1 -ss 00:00:01.5 -to 2.5 " + q(clip) + " " + q(to));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(decode_media(to).frame_hashes == a.frame_hashes);
}

TEST_CASE("trim: on an MPEG-TS that starts at 1.46 s -ss -t and -to count from its start and keep every frame") {
  const std::string dir = temp_dir("trim-ts");
  // The sample remuxed: its clock starts at 1.458667 s (the AAC priming packet; the first picture
  // at 1.48 s), its GOPs are 2 s long, and MPEG-TS seeks by decoding time, not to a keyframe:
  // seeks land inside a GOP, once even past the first keyframe when aimed at the start time.
  const std::string ts = dir + "/street.ts";
  REQUIRE(run_program("ffmpeg -v error -nostdin -y -i " + q(street()) + " -c copy -f mpegts " + q(ts)) == 0);
  const double start = std::stod(output_of("ffprobe -v error -show_entries format=start_time -of csv=p=0 " + q(ts)));
  REQUIRE(start == doctest::Approx(1.458667).epsilon(1e-6));
  struct Span {
    std::string args;
    double from, to;  // on the input's clock, from its start
    std::size_t frames;
  };
  for (const Span& span : std::vector<Span>{{"-ss 1.5 -t 0.5", 1.5, 2.0, 13},
                                            {"-ss 0.5 -t 3", 0.5, 3.5, 75},  // 75 as on the MP4
                                            {"-ss 0.5 -to 2", 0.5, 2.0, 38},
                                            {"-ss 1.5", 1.5, 10.0, 63},
                                            {"-ss 3.95", 3.95, 10.0, 1}}) {  // the last picture only
    CAPTURE(span.args);
    // The span as the ffmpeg program decodes it from the start (no seek), on the input's own
    // clock (-copyts), losslessly, then processed alone.
    const std::string expected_span = dir + "/span.mkv", expected = dir + "/expected.mkv", trimmed = dir + "/trimmed.mkv";
    REQUIRE(run_program(fmt::format("ffmpeg -v error -nostdin -y -copyts -i {} -an -vf "
                                    "trim=start={:.6f}:end={:.6f},setpts=PTS-STARTPTS -c:v ffv1 {}",
                                    q(ts), start + span.from, start + span.to, q(expected_span))) == 0);
    CommandResult r = run_hazefree("-q -y -b cpu --mode he --encoder ffv1 " + q(expected_span) + " " + q(expected));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    r = run_hazefree("-q -y -b cpu --mode he --encoder ffv1 " + span.args + " " + q(ts) + " " + q(trimmed));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const DecodedMedia a = decode_media(expected), b = decode_media(trimmed);
    CHECK(a.frame_hashes.size() == span.frames);
    CHECK(b.frame_hashes == a.frame_hashes);
    REQUIRE(!b.pts_us.empty());
    CHECK(b.pts_us.front() == 0);
  }
  // Past the video's last picture (5.44 s on its clock): one line, the bad -ss named.
  const CommandResult r = run_hazefree("-y -b cpu -ss 4.0 " + q(ts) + " " + q(dir + "/none.mp4"));
  CHECK(r.status == 2);
  CHECK(own_lines(r.err).size() == 1);
  CHECK(r.err.find("-ss 4: no picture at or after it") != std::string::npos);
}

TEST_CASE("trim: the audio is cut to the same span and starts at zero with the video") {
  const std::string dir = temp_dir("trim-audio");
  const std::string out = dir + "/trimmed.mp4";
  const CommandResult r = run_hazefree("-q -y -b cpu --mode he -ss 1.5 -t 2 " + q(street()) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(probe_number(out, "v:0", "nb_frames") == 50);
  const double audio = probe_number(out, "a:0", "duration");
  CHECK(audio == doctest::Approx(2.0).epsilon(0.03));  // whole AAC packets of 21.3 ms
  const DecodedMedia d = decode_media(out);
  REQUIRE(!d.audio_packets.empty());
  CHECK(std::get<0>(d.audio_packets.front()) >= 0);
  CHECK(std::get<0>(d.audio_packets.front()) < 25000);
}

TEST_CASE("trim: a span from the start keeps the AAC priming packet as the whole run and ffmpeg keep it") {
  const std::string dir = temp_dir("trim-priming");
  // The sample's first audio packet lies before zero (-21.3 ms: the encoder's priming).
  auto audio_pts = [](const std::string& path) {
    return lines_of(output_of("ffprobe -v error -select_streams a:0 -show_entries packet=pts_time -of csv=p=0 " +
                              q(path)));
  };
  const std::string copied = dir + "/ffmpeg.mp4";
  REQUIRE(run_program("ffmpeg -v error -nostdin -y -ss 0 -i " + q(street()) + " -t 100 -c copy " + q(copied)) == 0);
  const std::vector<std::string> expected = audio_pts(copied);
  REQUIRE(!expected.empty());
  REQUIRE(std::stod(expected.front()) < 0);
  for (const std::string span : {"", "-t 100", "-to 100", "-ss 0 -t 100"}) {
    CAPTURE(span);
    const std::string out = dir + "/out.mp4";
    const CommandResult r = run_hazefree("-q -y -b cpu --mode he " + span + " " + q(street()) + " " + q(out));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(audio_pts(out) == expected);
  }
}

TEST_CASE("trim: -t with -to takes -t, as ffmpeg does, with one warning line (none with -q)") {
  const std::string dir = temp_dir("trim-t-to");
  const std::string out = dir + "/out.mp4";
  CommandResult r = run_hazefree("-y -b cpu --mode he -ss 1 -t 1 -to 3 " + q(street()) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(probe_number(out, "v:0", "nb_frames") == 25);  // -t 1 at 25 fps, not -to 3's two seconds
  CHECK(r.err.find("warning: -t (input.duration) and -to (input.to) cannot be used together; using -t") != std::string::npos);
  r = run_hazefree("-q -y -b cpu --mode he -ss 1 -t 1 -to 3 " + q(street()) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.empty());
  CHECK(probe_number(out, "v:0", "nb_frames") == 25);
}

TEST_CASE("trim: a span outside the input, a negative duration, -to before -ss: one line, status 2") {
  const std::string dir = temp_dir("trim-errors");
  const std::string out = dir + "/out.mp4";
  for (const auto& [args, words] : std::vector<std::pair<std::string, std::string>>{
           {"-ss 10", "past the end"},
           {"-t -1", "duration"},
           {"-ss 2 -to 1", "not after -ss"},
           {"-ss banana", "input.start"}}) {
    CAPTURE(args);
    const CommandResult r = run_hazefree("-y -b cpu " + args + " " + q(street()) + " " + q(out));
    CHECK(r.status == 2);
    CHECK(own_lines(r.err).size() == 1);
    CHECK(r.err.find(words) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("trim: --frames 1 writes one PNG, a plain still-image name takes the first frame and says so") {
  const std::string dir = temp_dir("trim-still");
  const std::string& clip = test_clip().path;
  const std::string png = dir + "/one.png";
  CommandResult r = run_hazefree("-q -y -b cpu --mode he -ss 2 --frames 1 " + q(clip) + " " + q(png));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(probe_media(png).video_frames == 1);
  // Without --frames: the first frame at -ss, said in one line.
  const std::string plain = dir + "/plain.png";
  r = run_hazefree("-y -b cpu --mode he -ss 2 " + q(clip) + " " + q(plain));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.find("a still image holds one picture") != std::string::npos);
  CHECK(r.err.find("1 frames") != std::string::npos);  // the summary: one frame processed, not 25
  // Several frames into one picture: refused, naming --frames 1 and the pattern form.
  r = run_hazefree("-y -b cpu --frames 5 " + q(clip) + " " + q(dir + "/five.png"));
  CHECK(r.status == 2);
  CHECK(r.err.find("--frames 1") != std::string::npos);
  CHECK(r.err.find("%04d") != std::string::npos);
  // A pattern writes a sequence; -frames:v is ffmpeg's spelling.
  r = run_hazefree("-q -y -b cpu --mode he -frames:v 3 " + q(clip) + " " + q(dir + "/seq%03d.png"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(fs::exists(dir + "/seq001.png"));
  CHECK(fs::exists(dir + "/seq003.png"));
  CHECK_FALSE(fs::exists(dir + "/seq004.png"));
}

TEST_CASE("encoder: a bitrate and a keyframe interval reach the stream") {
  const std::string dir = temp_dir("encoder-rate");
  const std::string out = dir + "/rate.mp4";
  const CommandResult r = run_hazefree("-q -y -b cpu --mode he -b:v 400k --maxrate 400k --bufsize 800k -g 10 " +
                                       q(street()) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::vector<int> keys = key_positions(out);
  REQUIRE(keys.size() >= 10);
  for (std::size_t i = 1; i < keys.size(); ++i) CHECK(keys[i] - keys[i - 1] <= 10);
  // Within x264's margin: at most the rate plus the VBV buffer spread over the 4 s clip.
  const double rate = probe_number(out, "v:0", "bit_rate");
  CAPTURE(rate);
  CHECK(rate > 400000 * 0.5);
  CHECK(rate < 400000 + 800000 / 4.0);
}

TEST_CASE("encoder: --encoder-opt x264-params and a TOML table [output.encoder_options] reach the encoder") {
  const std::string dir = temp_dir("encoder-options");
  const std::string& clip = test_clip().path;  // 75 frames
  const std::string flag_out = dir + "/flag.mp4";
  CommandResult r = run_hazefree("-q -y -b cpu --mode he --encoder-opt x264-params=keyint=25:min-keyint=25:scenecut=0 " +
                                 q(clip) + " " + q(flag_out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(key_positions(flag_out) == std::vector<int>{0, 25, 50});
  const std::string preset = dir + "/preset.toml", toml_out = dir + "/toml.mp4";
  std::ofstream(preset) << "mode = \"he\"\n[output.encoder_options]\nx264-params = \"keyint=20:min-keyint=20:scenecut=0\"\n";
  r = run_hazefree("-q -y -b cpu -c " + q(preset) + " " + q(clip) + " " + q(toml_out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(key_positions(toml_out) == std::vector<int>{0, 20, 40, 60});
  // --print-config writes the table back, and reading that back gives the same.
  r = run_hazefree("-c " + q(preset) + " --print-config");
  CHECK(r.out.find("encoder_options = { \"x264-params\" = \"keyint=20:min-keyint=20:scenecut=0\" }") != std::string::npos);
}

TEST_CASE("encoder: --pix-fmt (-pix_fmt) chooses the encoder's pixel format, one it does not take is refused") {
  const std::string dir = temp_dir("encoder-pix-fmt");
  const std::string out = dir + "/444.mp4";
  CommandResult r = run_hazefree("-q -y -b cpu --mode he --frames 10 -pix_fmt yuv444p " + q(test_clip().path) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(output_of("ffprobe -v error -select_streams v:0 -show_entries stream=pix_fmt -of csv=p=0 " + q(out)) == "yuv444p");
  r = run_hazefree("-y -b cpu --pix-fmt rgb24 " + q(street()) + " " + q(dir + "/rgb.mp4"));
  CHECK(r.status == 2);
  CHECK(r.err.find("libx264 takes yuv420p") != std::string::npos);
}

TEST_CASE("encoder: an option the encoder does not know is refused before encoding") {
  const std::string dir = temp_dir("encoder-unknown");
  const std::string out = dir + "/out.mp4";
  CommandResult r = run_hazefree("-y -b cpu --encoder-opt no-such-option=1 " + q(street()) + " " + q(out));
  CHECK(r.status == 2);
  CHECK(own_lines(r.err).size() == 1);
  CHECK(r.err.find("libx264 has no option 'no-such-option'") != std::string::npos);
  CHECK(folder_entries(dir).empty());  // nothing written, not even a partial file
  r = run_hazefree("-y -b cpu --tune nonsense " + q(street()) + " " + q(out));
  CHECK(r.status == 2);
  CHECK(r.err.find("refused these settings (tune=nonsense)") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  r = run_hazefree("-y -b cpu --encoder-opt novalue " + q(street()) + " " + q(out));
  CHECK(r.status == 2);
  CHECK(r.err.find("expected key=value") != std::string::npos);
}

TEST_CASE("help: the options in groups, in the order an ffmpeg user reads them, job --help keeps the job details") {
  const CommandResult r = run_hazefree("--help");
  REQUIRE(r.status == 0);
  std::size_t previous = 0;
  for (const char* group : {"Input:", "Processing:", "Output and encoder:", "Live sources:", "Jobs (hazefree job --help):",
                            "Other:"}) {
    CAPTURE(group);
    const std::size_t at = r.out.find(group);
    REQUIRE(at != std::string::npos);
    CHECK(at > previous);
    previous = at;
  }
  // The main ones first: the span before the demuxer, the mode before its parameters.
  CHECK(r.out.find("--start") < r.out.find("--input-format"));
  CHECK(r.out.find("--mode") < r.out.find("--window"));
  const CommandResult job = run_hazefree("job --help");
  CHECK(job.status == 0);
  CHECK(job.out.find("hazefree job plan DIR INPUT OUTPUT") != std::string::npos);
}

namespace {

// The names column of each option in a --help ("--start TIME", "-m,--mode dcp|he|ahe"): the
// option lines' text before the description column (where -h,--help's description starts); names
// that fill it stand before one space, longer ones on a line of their own.
std::vector<std::string> option_names(const std::string& help) {
  const std::vector<std::string> lines = lines_of(help);
  std::size_t column = 0;
  for (const std::string& line : lines)
    if (line.rfind("  -h,--help ", 0) == 0) column = line.find_first_not_of(' ', 11);
  REQUIRE(column != std::string::npos);
  REQUIRE(column > 0);
  std::vector<std::string> names;
  for (const std::string& line : lines) {
    if (line.rfind("  ", 0) != 0 || line.rfind("        ", 0) == 0) continue;
    const bool described = line.size() > column && line[column - 1] == ' ' && line[column] != ' ';
    std::string name = line.substr(2, described ? column - 2 : std::string::npos);
    name.erase(name.find_last_not_of(' ') + 1);
    names.push_back(name);
  }
  return names;
}

}  // namespace

TEST_CASE("help: each option names what its value takes in every command's help and none says TEXT") {
  struct Help {
    std::string command;
    std::vector<std::string> names;  // some of the options, each with its value's name
  };
  for (const Help& h :
       {Help{"--help",
             {"--start TIME", "-t,--duration TIME", "--input-format FORMAT", "--hwdec cuda", "-m,--mode dcp|he|ahe",
              "--color luma|rgb|grey|rgb-bits", "-b,--backend auto|cuda|cpu", "--threads N", "--stats FILE",
              "--window N", "--clip X", "-f,--format FORMAT", "--encoder ENCODER", "--output-depth auto|8|10|12|16",
              "--crf N", "--preset WORD", "--bitrate RATE", "--bufsize SIZE", "--pix-fmt FORMAT",
              "--encoder-opt KEY=VALUE ...", "--chunks N|auto", "--chunk-seconds SECONDS", "--chunk-starts F,F,...",
              "--gpus all|0,1,...", "--workers N", "--job-memory MIB", "--job-dir DIR", "-c,--config FILE",
              "--set KEY=VALUE ...", "--loglevel LEVEL", "--progress-period SECONDS", "--progress URL", "INPUT",
              "OUTPUT", "--live", "-y"}},
        Help{"job plan --help", {"DIR INPUT OUTPUT ...", "--chunks N", "--chunk-seconds SECONDS", "--window N"}},
        Help{"job render --help", {"DIR REQUIRED", "--chunk K"}},
        Help{"job join --help", {"--input I"}},
        Help{"job slurm --help", {"--gpus-per-task N", "SBATCH_OPTIONS ..."}},
        Help{"bench --help",
             {"--input FILE", "--size WxH", "--depth 8|10|12|16", "--frames N", "--warmup N", "--threads N",
              "-b,--backend all|cpu|cuda|auto", "--set KEY=VALUE ...", "--json FILE", "--plot FILE",
              "--encoder ENCODER", "--preset WORD", "--hwdec cuda"}},
        Help{"serve --help", {"CONFIG REQUIRED", "--listen ADDR:PORT"}}}) {
    CAPTURE(h.command);
    const CommandResult r = run_hazefree(h.command);
    REQUIRE(r.status == 0);
    const std::vector<std::string> names = option_names(r.out);
    for (const std::string& name : h.names)
      CHECK_MESSAGE(std::find(names.begin(), names.end(), name) != names.end(), name);
    // CLI11's names of the C++ types (and a validator's range glued to them) are gone.
    for (const std::string& name : names) {
      CAPTURE(name);
      for (const char* type : {" TEXT", " INT", " UINT", " FLOAT", ":[", ":(", ":{"})
        CHECK(name.find(type) == std::string::npos);
    }
  }
}

}  // namespace hazefree::test
