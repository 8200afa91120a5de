// An ffmpeg user's first hour, end to end on a tiny clip: ffmpeg's spellings give what the long
// options give, the ffmpeg options without a meaning here are refused with one line naming what
// to use, the progress line and -progress as ffmpeg writes them, --help at 80 columns, -ss
// outputs starting at zero, and outputs that cannot be written refused before the first frame.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "jobs/job_test_support.hpp"
#include "run_command.hpp"
#include "support/test_support.hpp"
#include "test_robustness_support.hpp"
#include "test_robustness_support.hpp"

namespace fs = std::filesystem;

namespace hazefree::test {
namespace {

// One second of 96x64 pictures at 25 fps with AAC audio, made once.
const std::string& tiny_clip() {
  static const std::string path = [] {
    const std::string p = temp_dir("habits-clip-" + std::to_string(getpid())) + "/tiny.mp4";
    REQUIRE(run_program("ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=s=96x64:r=25:d=1 -f lavfi -i sine=f=440:d=1 "
                        "-c:v libx264 -preset ultrafast -g 10 -pix_fmt yuv420p -c:a aac -shortest " + q(p)) == 0);
    return p;
  }();
  return path;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> found;
  for (const std::string& line : lines_of(text))
    if (line.rfind(prefix, 0) == 0) found.push_back(line);
  return found;
}

// The key=value lines of a -progress report; every line must be one.
std::vector<std::pair<std::string, std::string>> report_pairs(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& line : lines_of(text)) {
    if (line.empty()) continue;
    const auto eq = line.find('=');
    CHECK_MESSAGE(eq != std::string::npos, line);
    CHECK_MESSAGE(eq > 0, line);
    if (eq == std::string::npos || eq == 0) continue;
    pairs.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return pairs;
}

void check_report(const std::string& text, int frames) {
  const auto pairs = report_pairs(text);
  REQUIRE(!pairs.empty());
  CHECK(pairs.back() == std::make_pair(std::string("progress"), std::string("end")));
  std::string last_frame;
  int ends = 0;
  for (const auto& [key, value] : pairs) {
    if (key == "frame") last_frame = value;
    if (key == "progress") {
      CHECK((value == "continue" || value == "end"));
      ends += value == "end";
    }
  }
  CHECK(ends == 1);
  CHECK(last_frame == std::to_string(frames));
  CHECK(text.find("out_time_us=") != std::string::npos);
  CHECK(text.find("speed=") != std::string::npos);
}

// The PSNR of the first picture of `a` against the first of `b`, in dB, by ffmpeg's psnr filter
// (100 for identical pictures, 0 when it cannot tell).
double first_picture_psnr(const std::string& a, const std::string& b) {
  const std::string text = output_of("ffmpeg -nostdin -hide_banner -i " + q(a) + " -i " + q(b) +
                                     " -lavfi psnr -frames:v 1 -f null - 2>&1 | grep -o 'average:[^ ]*' | cut -d: -f2");
  if (text == "inf") return 100.0;
  return text.empty() ? 0.0 : std::stod(text);
}

std::string probe_stream(const std::string& path, const std::string& fields) {
  // The first line: MPEG-TS lists its program's streams again.
  return output_of("ffprobe -v error -select_streams v:0 -show_entries stream=" + fields + " -of csv=p=0 " + q(path) +
                   " | head -1");
}

}  // namespace

TEST_CASE("ffmpeg habits: ffmpeg's spellings give the same output as the long options") {
  const std::string dir = temp_dir("habits-spellings");
  const std::string longs = dir + "/long.mkv", ffmpeg = dir + "/ffmpeg.mkv";
  CommandResult r = run_hazefree("-q -y -b cpu --mode he --encoder libx264 --crf 30 --preset ultrafast --tune film "
                                 "--maxrate 400k --bufsize 800k --frames 6 --pix-fmt yuv420p --no-audio " +
                                 q(tiny_clip()) + " " + q(longs));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  r = run_hazefree("-hide_banner -nostdin -loglevel error -y -b cpu --mode he -i " + q(tiny_clip()) +
                   " -c:v libx264 -crf 30 -preset ultrafast -tune film -maxrate 400k -bufsize 800k -vframes 6 "
                   "-pix_fmt yuv420p -an " + q(ffmpeg));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.empty());  // -loglevel error: no progress line, no summary
  const DecodedMedia a = decode_media(longs), b = decode_media(ffmpeg);
  CHECK(a.frame_hashes.size() == 6);
  CHECK(b.frame_hashes == a.frame_hashes);
  CHECK(a.audio_packets.empty());
  CHECK(b.audio_packets.empty());
  // -n refuses an output that exists; -c:a copy is what happens anyway.
  r = run_hazefree("-n -b cpu -i " + q(tiny_clip()) + " " + q(ffmpeg));
  CHECK(r.status == 1);
  CHECK(r.err.find("already exists") != std::string::npos);
  r = run_hazefree("-v quiet -y -b cpu --mode he -frames:v 3 -c:a copy -vcodec ffv1 -i " + q(tiny_clip()) + " " +
                   q(dir + "/copy.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.empty());
  CHECK(!decode_media(dir + "/copy.mkv").audio_packets.empty());
}

TEST_CASE("ffmpeg habits: the pipe that the -vf refusal names runs as written and keeps the audio") {
  const std::string dir = temp_dir("habits-vf-pipe");
  const std::string out = dir + "/piped.mp4";
  const CommandResult refused = run_hazefree("-b cpu -vf scale=64:48 " + q(tiny_clip()) + " " + q(out));
  REQUIRE(refused.status == 2);
  // The command between "pipe through ffmpeg (the audio kept): " and ", or use", with its words
  // IN, FILTERS and OUT filled in, and this build's hazefree on the CPU backend.
  const std::string lead = "pipe through ffmpeg (the audio kept): ";
  const std::size_t from = refused.err.find(lead);
  REQUIRE_MESSAGE(from != std::string::npos, refused.err);
  const std::size_t to = refused.err.find(", or use", from);
  REQUIRE(to != std::string::npos);
  std::string command = refused.err.substr(from + lead.size(), to - from - lead.size());
  const auto fill = [&command](const std::string& word, const std::string& with) {
    const std::size_t at = command.find(word);
    REQUIRE_MESSAGE(at != std::string::npos, command);
    command.replace(at, word.size(), with);
  };
  fill("ffmpeg -i IN ", "ffmpeg -v error -i " + q(tiny_clip()) + " ");
  fill("FILTERS ", "scale=64:48 ");
  fill("| hazefree - OUT", "| '" + std::string(HAZEFREE_BINARY) + "' -q -y -b cpu - " + q(out));
  REQUIRE_MESSAGE(run_program("{ " + command + "; }") == 0, command);
  const DecodedMedia piped = decode_media(out), source = decode_media(tiny_clip());
  CHECK(piped.frame_hashes.size() == source.frame_hashes.size());
  CHECK(!piped.audio_packets.empty());
  CHECK(piped.audio_packets.size() == source.audio_packets.size());
}

TEST_CASE("ffmpeg habits: an ffmpeg option without a meaning here is one line naming what to use, status 2, no file") {
  const std::string dir = temp_dir("habits-refused");
  const std::string out = dir + "/out.mp4";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"-vf scale=64:48", "hazefree is the filter"},
      {"-filter:v scale=64:48", "pipe through ffmpeg"},
      {"-filter_complex '[0:v]scale=64:48'", "frei0r=hazefree_dehaze"},
      {"-b 1M", "did you mean -b:v 1M"},
      {"-c:a aac", "copies audio"},
      {"-af volume=2", "copies audio"},
      {"-r 30", "-framerate"},
      {"-s 64x48", "-video_size"},
      {"-map 0", "-an and -sn"},
      {"-q 5", "-crf 5"},
      {"-c:v copy", "choose an encoder"},
      {"-threads 2", "--threads"},
      {"-hwaccel cuda", "--hwdec cuda"},
      {"-x264opts keyint=5", "-x264-params"},
      {"-loglevel chatty", "accepted quiet"},
      {"-y -n", "give one of them"},
      {"-progress tcp://127.0.0.1:9/", "pipe:1"},
      {"-tunes film", "unknown option -tunes"},
      {"-x264-params keyint=abc", "keyint=abc is not a number"},
      {"--profile nonsense", "its profiles are"}};
  for (const auto& [args, words] : cases) {
    CAPTURE(args);
    const CommandResult r = run_hazefree("-b cpu " + args + " " + q(tiny_clip()) + " " + q(out));
    CHECK(r.status == 2);
    CHECK(lines_of(r.err).size() == 1);  // FFmpeg's and x264's own lines do not leak
    CHECK(r.err.find(words) != std::string::npos);
    CHECK(folder_entries(dir).empty());
  }
}

TEST_CASE("ffmpeg habits: -vf says whether ffmpeg finds hazefree's frei0r filter, and how to install it if not") {
  const std::string dir = temp_dir("habits-frei0r");
  const std::string out = dir + "/out.mp4";
  fs::create_directories(dir + "/plugins");
  std::ofstream(dir + "/plugins/hazefree_dehaze.so") << "a plugin's name is all that is looked at";
  const std::string args = "-b cpu -vf scale=64:48 " + q(tiny_clip()) + " " + q(out);
  // In the second folder of FREI0R_PATH, as ffmpeg's frei0r filter looks: the hint alone.
  CommandResult r = run_hazefree(args, "FREI0R_PATH=" + q(dir + "/none:" + dir + "/plugins") + " HOME=" + q(dir));
  CHECK(r.status == 2);
  CHECK(lines_of(r.err).size() == 1);
  CHECK(r.err.find("frei0r=hazefree_dehaze,FILTERS") != std::string::npos);
  CHECK(r.err.find("not installed") == std::string::npos);
  // Nowhere ffmpeg looks (unless this host's own frei0r folders hold it): how to install it.
  bool on_this_host = false;
  for (const char* folder : {"/usr/local/lib/frei0r-1", "/usr/lib/frei0r-1", "/usr/local/lib64/frei0r-1", "/usr/lib64/frei0r-1"})
    on_this_host = on_this_host || fs::exists(fs::path(folder) / "hazefree_dehaze.so");
  r = run_hazefree(args, "-u FREI0R_PATH HOME=" + q(dir));
  CHECK(r.status == 2);
  CHECK(lines_of(r.err).size() == 1);
  CHECK((r.err.find("hazefree_dehaze.so is not installed where ffmpeg looks") != std::string::npos) == !on_this_host);
  CHECK((r.err.find("FREI0R_PATH=PREFIX/lib/frei0r-1") != std::string::npos) == !on_this_host);
  // A FREI0R_PATH given that holds no plugin is named.
  r = run_hazefree(args, "FREI0R_PATH=" + q(dir + "/none") + " HOME=" + q(dir));
  CHECK(r.status == 2);
  CHECK((r.err.find("is in none of FREI0R_PATH's folders (" + dir + "/none)") != std::string::npos) == !on_this_host);
  CHECK(folder_entries(dir).size() == 1);  // the plugins folder only: no output
}

TEST_CASE("ffmpeg habits: a run into a pipe prints ffmpeg's progress line, -nostats and -q leave it out") {
  const std::string dir = temp_dir("habits-stats");
  const std::string out = dir + "/out.mkv";
  const std::string common = "-y -b cpu --mode he --encoder ffv1 -frames:v 20 ";
  CommandResult r = run_hazefree(common + "-stats_period 0.01 " + q(tiny_clip()) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::vector<std::string> lines = lines_starting(r.err, "frame=");
  REQUIRE(!lines.empty());
  CHECK(lines.back().rfind("frame=   20/20 fps=", 0) == 0);
  CHECK(lines.back().find(" time=00:00:00.80 speed=") != std::string::npos);
  CHECK(r.err.find("\r") == std::string::npos);  // lines, not a line redrawn
  r = run_hazefree(common + "-nostats " + q(tiny_clip()) + " " + q(out));
  REQUIRE(r.status == 0);
  CHECK(lines_starting(r.err, "frame=").empty());
  CHECK(r.err.find("20 frames") != std::string::npos);  // the summary stays
  r = run_hazefree(common + "-q " + q(tiny_clip()) + " " + q(out));
  CHECK(r.err.empty());
  r = run_hazefree(common + "-q -stats " + q(tiny_clip()) + " " + q(out));
  CHECK(lines_starting(r.err, "frame=").size() == 1);
}

TEST_CASE("ffmpeg habits: the summary line counts the audio packets the output holds, none with -an or into y4m") {
  const std::string dir = temp_dir("habits-copied");
  const std::string common = "-y -b cpu --mode he ";
  CommandResult r = run_hazefree(common + "--encoder ffv1 " + q(tiny_clip()) + " " + q(dir + "/out.mkv"));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string held = output_of("ffprobe -v error -select_streams a -count_packets -show_entries "
                                     "stream=nb_read_packets -of csv=p=0 " + q(dir + "/out.mkv"));
  REQUIRE(!held.empty());
  CHECK(std::stoi(held) > 0);
  CHECK(r.err.find(", " + held + " packets copied") != std::string::npos);
  for (const std::string& arguments : {"-an --encoder ffv1 " + q(tiny_clip()) + " " + q(dir + "/out-an.mkv"),
                                       q(tiny_clip()) + " " + q(dir + "/out.y4m")}) {
    CAPTURE(arguments);
    r = run_hazefree(common + arguments);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(r.err.find("25 frames") != std::string::npos);
    CHECK(r.err.find("packets copied") == std::string::npos);
  }
}

TEST_CASE("ffmpeg habits: an x264 preset that does not exist is one line naming the presets, status 2, no file") {
  const std::string dir = temp_dir("habits-preset");
  const CommandResult r = run_hazefree("-b cpu --mode he --preset turbo " + q(tiny_clip()) + " " + q(dir + "/out.mp4"));
  CHECK(r.status == 2);
  const std::vector<std::string> own = own_lines(r.err);
  REQUIRE(own.size() == 1);
  CHECK(own[0].find("--preset turbo: libx264 has no such preset (ultrafast, superfast, veryfast,") != std::string::npos);
  CHECK(lines_of(r.err).size() == 1);  // no line of x264's own
  CHECK(folder_entries(dir).empty());
}

TEST_CASE("ffmpeg habits: a reader of stderr or of --stats - that goes away leaves the run to finish its output") {
  const std::string dir = temp_dir("habits-closed");
  for (const std::string& reading : {std::string("-stats_period 0.01 2>&1"), std::string("-nostats --stats - 2>/dev/null")}) {
    CAPTURE(reading);
    const std::string out = dir + "/out.mkv";
    std::filesystem::remove(out);
    // `head -1` reads one line and exits: later writes meet a closed pipe.
    const std::string status = output_of("bash -c " + q(std::string(HAZEFREE_BINARY) + " -y -b cpu --mode he --encoder ffv1 " +
                                                        q(tiny_clip()) + " " + q(out) + " " + reading +
                                                        " | head -1 >/dev/null; echo ${PIPESTATUS[0]}"));
    CHECK(status == "0");
    CHECK(probe_media(out).video_frames == 25);
  }
}

TEST_CASE("ffmpeg habits: a failure FFmpeg explains in its own log says why in our one line, without -v") {
  const std::string dir = temp_dir("habits-why");
  CommandResult r = run_hazefree("-y -b cpu --mode he " + q(tiny_clip()) + " -f mp4 - > /dev/null");
  CHECK(r.status == 1);
  REQUIRE(own_lines(r.err).size() == 1);
  CHECK(own_lines(r.err)[0] == "hazefree: -: cannot write the header: Invalid argument: muxer does not support non "
                               "seekable output");
  {
    std::ofstream(dir + "/raw.yuv", std::ios::binary) << std::string(4096, '\x10');
  }
  r = run_hazefree("-y -b cpu -f rawvideo " + q(dir + "/raw.yuv") + " " + q(dir + "/out.mp4"));
  CHECK(r.status == 1);
  REQUIRE(own_lines(r.err).size() == 1);
  CHECK(own_lines(r.err)[0] == "hazefree: " + dir + "/raw.yuv: Invalid argument: Picture size 0x0 is invalid");
  CHECK(lines_of(r.err).size() == 1);
}

TEST_CASE("ffmpeg habits: -progress writes key=value blocks to pipe:1, pipe:2 or a file, progress=end last") {
  const std::string dir = temp_dir("habits-progress");
  const std::string out = dir + "/out.mkv";
  const std::string common = "-y -b cpu --mode he --encoder ffv1 -frames:v 20 -nostats ";
  CommandResult r = run_hazefree(common + "-progress pipe:1 " + q(tiny_clip()) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_report(r.out, 20);
  const std::string file = dir + "/progress.txt";
  r = run_hazefree(common + "-q -progress " + q(file) + " " + q(tiny_clip()) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  std::ifstream in(file);
  check_report(std::string(std::istreambuf_iterator<char>(in), {}), 20);
  r = run_hazefree(common + "-q -progress pipe:2 " + q(tiny_clip()) + " " + q(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_report(r.err, 20);
  // Stdout holding the output is no place for the report.
  r = run_hazefree("-b cpu -progress pipe:1 " + q(tiny_clip()) + " -");
  CHECK(r.status == 2);
  CHECK(r.err.find("pipe:2") != std::string::npos);
  // Nor a missing folder: refused as --stats is, before anything runs.
  r = run_hazefree("-b cpu -progress " + q(dir + "/no-such-folder/p.txt") + " " + q(tiny_clip()) + " " + q(dir + "/x.mkv"));
  CHECK(r.status == 2);
  CHECK(r.err.find("folder " + dir + "/no-such-folder does not exist") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/x.mkv"));
}

TEST_CASE("ffmpeg habits: --help fits 80 columns and lists the ffmpeg spellings") {
  const CommandResult r = run_hazefree("--help");
  REQUIRE(r.status == 0);
  for (const std::string& line : lines_of(r.out)) {
    CAPTURE(line);
    CHECK(line.size() <= 80);
  }
  for (const char* spelling : {"-i INPUT", "-c:v/-vcodec", "-crf", "-tune", "-vframes", "-loglevel/-v LEVEL",
                               "-progress URL", "-nostats"})
    CHECK_MESSAGE(r.out.find(spelling) != std::string::npos, spelling);
}

TEST_CASE("ffmpeg habits: after -ss an MP4, an MKV and a MOV start at zero") {
  const std::string dir = temp_dir("habits-start");
  for (const std::string extension : {"mp4", "mkv", "mov"}) {
    CAPTURE(extension);
    const std::string out = dir + "/span." + extension;
    const CommandResult r = run_hazefree("-q -y -b cpu --mode he -ss 0.5 -t 0.3 " + q(tiny_clip()) + " " + q(out));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(output_of("ffprobe -v error -show_entries format=start_time -of csv=p=0 " + q(out)) == "0.000000");
    // The first picture at zero, the audio from its first packet at or after it (within 23 ms).
    CHECK(output_of("ffprobe -v error -select_streams v:0 -show_entries stream=start_time -of csv=p=0 " + q(out)) ==
          "0.000000");
    const std::string audio =
        output_of("ffprobe -v error -select_streams a:0 -show_entries stream=start_time -of csv=p=0 " + q(out));
    REQUIRE(!audio.empty());
    CHECK(std::stod(audio) >= 0.0);
    CHECK(std::stod(audio) < 0.024);
  }
}

TEST_CASE("ffmpeg habits: an output that cannot be written is refused before the first frame") {
  const std::string dir = temp_dir("habits-unwritable");
  // A file where a folder is expected.
  std::ofstream(dir + "/half.mp4") << "x";
  CommandResult r = run_hazefree("-y -b cpu " + q(tiny_clip()) + " " + q(dir + "/half.mp4/o.mp4"));
  CHECK(r.status == 1);
  CHECK(lines_of(r.err).size() == 1);
  CHECK(r.err.find("half.mp4 is not a folder") != std::string::npos);
  // An immutable file (root can replace anything else); a folder that cannot be written into.
  const std::string kept = dir + "/kept.mp4";
  std::ofstream(kept) << "the user's file";
  if (run_program("chattr +i " + q(kept) + " 2>/dev/null") == 0) {
    r = run_hazefree("-y -b cpu " + q(tiny_clip()) + " " + q(kept));
    run_program("chattr -i " + q(kept));
    CHECK(r.status == 1);
    CHECK(lines_of(r.err).size() == 1);  // no progress line: refused before encoding
    CHECK(r.err.find("immutable") != std::string::npos);
    CHECK(fs::file_size(kept) == std::string("the user's file").size());
  } else {
    MESSAGE("chattr +i is not available here: the immutable file is not tried");
  }
  const std::string locked = dir + "/locked";
  fs::create_directory(locked);
  const bool immutable = run_program("chattr +i " + q(locked) + " 2>/dev/null") == 0;
  if (!immutable) fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  r = run_hazefree("-y -b cpu " + q(tiny_clip()) + " " + q(locked + "/o.mp4"));
  if (immutable) run_program("chattr -i " + q(locked));
  else fs::permissions(locked, fs::perms::owner_all);
  if (immutable || geteuid() != 0) {
    CHECK(r.status == 1);
    CHECK(lines_of(r.err).size() == 1);
    CHECK(r.err.find("cannot write into the folder") != std::string::npos);
    CHECK(folder_entries(locked).empty());
  }
}

TEST_CASE("ffmpeg habits: -q and -loglevel error show errors only: hazefree's own warnings too") {
  const std::string dir = temp_dir("habits-quiet");
  // A still image from a clip with audio: two warnings (the picture converted for the PNG
  // encoder, the audio the format cannot hold).
  const std::string still = dir + "/still.png";
  CommandResult r = run_hazefree("-y -b cpu --mode he --frames 1 " + q(tiny_clip()) + " " + q(still));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(lines_starting(r.err, "hazefree: warning: ").size() == 2);
  for (const char* quiet : {"-q", "-loglevel error", "-v quiet"}) {
    CAPTURE(quiet);
    r = run_hazefree(std::string("-y -b cpu --mode he --frames 1 ") + quiet + " " + q(tiny_clip()) + " " + q(still));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(r.err.empty());
  }
  // An error still says what failed.
  r = run_hazefree("-q -y -b cpu " + q(dir + "/missing.mp4") + " " + q(dir + "/out.mp4"));
  CHECK(r.status == 1);
  CHECK(lines_of(r.err).size() == 1);
}

TEST_CASE("ffmpeg habits: a JPEG still and MJPEG in AVI and a JPEG sequence are written full range as ffmpeg writes them") {
  const std::string dir = temp_dir("habits-jpeg");
  // The processed first picture, losslessly (limited range, as the clip), then ffmpeg's own JPEG
  // of it: yuvj420p, the samples stretched to full range.
  const std::string processed = dir + "/first.y4m", expected = dir + "/expected.jpg";
  CommandResult r = run_hazefree("-q -y -b cpu --frames 1 " + q(tiny_clip()) + " " + q(processed));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  REQUIRE(run_program("ffmpeg -v error -nostdin -y -i " + q(processed) + " " + q(expected)) == 0);
  REQUIRE(probe_stream(expected, "pix_fmt,color_range") == "yuvj420p,pc");
  // A JPEG of the limited-range samples only tagged full range looks washed out: far from it.
  const std::string tagged = dir + "/tagged.jpg";
  REQUIRE(run_program("ffmpeg -v error -nostdin -y -i " + q(processed) +
                      " -vf setrange=full,format=yuv420p -strict -1 -c:v mjpeg " + q(tagged)) == 0);
  CHECK(first_picture_psnr(tagged, expected) < 35.0);
  struct Output {
    std::string flags, name, first;  // `first`: the file of the first picture
  };
  for (const Output& o : {Output{"", "still.jpg", "still.jpg"}, Output{"-frames:v 3 -c:v mjpeg", "clip.avi", "clip.avi"},
                          Output{"-frames:v 3", "seq%03d.jpg", "seq001.jpg"},
                          Output{"--pix-fmt yuv420p", "pixfmt.jpg", "pixfmt.jpg"}}) {
    CAPTURE(o.name);
    r = run_hazefree("-q -y -b cpu " + o.flags + " " + q(tiny_clip()) + " " + q(dir + "/" + o.name));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(probe_stream(dir + "/" + o.first, "codec_name,pix_fmt,color_range") == "mjpeg,yuvj420p,pc");
    CHECK(first_picture_psnr(dir + "/" + o.first, expected) > 40.0);
  }
  CHECK(fs::exists(dir + "/seq003.jpg"));
}

TEST_CASE("ffmpeg habits: GIF and WebP and Ogg outputs get their container's own encoder and video files libx264") {
  const std::string dir = temp_dir("habits-container-encoders");
  struct Case {
    std::string name, codec, encoder;
  };
  for (const Case& c : {Case{"o.gif", "gif", "gif"}, Case{"o.webp", "webp", "libwebp_anim"},
                        Case{"o.ogv", "theora", "libtheora"}, Case{"o.apng", "apng", "apng"},
                        Case{"o.mp4", "h264", "libx264"}, Case{"o.mkv", "h264", "libx264"},
                        Case{"o.mov", "h264", "libx264"}, Case{"o.ts", "h264", "libx264"},
                        Case{"o.webm", "vp9", "libvpx-vp9"}}) {
    CAPTURE(c.name);
    const std::string out = dir + "/" + c.name;
    const CommandResult r = run_hazefree("-q -y -b cpu -frames:v 5 " + q(tiny_clip()) + " " + q(out));
    if (output_of("ffmpeg -hide_banner -encoders | grep -cw -- " + c.encoder) == "0") {
      // An encoder this FFmpeg was built without (libtheora, libwebp): one line naming both.
      CHECK(r.status == 1);
      CHECK(lines_of(r.err).size() == 1);
      CHECK(r.err.find(c.name + ": this FFmpeg has no encoder for " + c.codec) != std::string::npos);
      continue;
    }
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(probe_stream(out, "codec_name") == c.codec);
  }
  // A container whose codec this FFmpeg cannot encode: one line naming the output and the codec.
  const CommandResult r = run_hazefree("-q -y -b cpu -frames:v 5 " + q(tiny_clip()) + " " + q(dir + "/o.vc1"));
  CHECK(r.status == 1);
  CHECK(lines_of(r.err).size() == 1);
  CHECK(r.err.find("o.vc1: this FFmpeg has no encoder for vc1") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/o.vc1"));
}

TEST_CASE("ffmpeg habits: a word too many after INPUT OUTPUT is one line pointing at --help with status 2") {
  const std::string dir = temp_dir("habits-extra");
  CommandResult r = run_hazefree(q(tiny_clip()) + " " + q(dir + "/a.mp4") + " " + q(dir + "/b.mp4"));
  CHECK(r.status == 2);
  CHECK(lines_of(r.err) == std::vector<std::string>{"hazefree: " + dir + "/b.mp4: an argument too many; hazefree "
                                                    "takes INPUT OUTPUT (hazefree --help shows the usage)"});
  CHECK(folder_entries(dir).empty());
}

}  // namespace hazefree::test
