// Helpers of the job tests: the test clip (made once with the ffmpeg program), decoding an
// output into per-frame hashes, timestamps and audio packets, reading a job's plan, and a job's
// output compared with the single run's.
#pragma once

extern "C" {
#include <libavformat/avformat.h>
}

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "io/media_reader.hpp"
#include "pipeline/run_command.hpp"
#include "support/test_support.hpp"

namespace hazefree::test {

inline int run_program(const std::string& command) {
  const int raw = std::system((command + " </dev/null").c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

inline CommandResult run_hazefree_with_env(const std::string& environment, const std::string& arguments) {
  return run_hazefree(arguments, environment);
}

// Lines of the product's own on stderr that are not warnings: a failure must say one.
inline int own_error_lines(const std::string& err) {
  int n = 0;
  std::size_t start = 0;
  while (start < err.size()) {
    std::size_t end = err.find('\n', start);
    if (end == std::string::npos) end = err.size();
    const std::string line = err.substr(start, end - start);
    if (line.rfind("hazefree: ", 0) == 0 && line.rfind("hazefree: warning", 0) != 0) ++n;
    start = end + 1;
  }
  return n;
}

// 160x120 at 25 fps, 75 frames in three scenes (cuts at frames 30 and 50), H.264 with B-frames
// and open GOPs, keyframes forced at and next to both cuts and two in a row (a GOP of one
// frame), AAC audio; an MP4 whose time base (1/12800) is not the frame period.
struct TestClip {
  std::string path;
  int frames = 75;
  std::vector<int> keyframes;  // presentation positions of the key packets
};

inline std::vector<int> keyframe_positions(const std::string& path) {
  AVFormatContext* context = nullptr;
  if (avformat_open_input(&context, path.c_str(), nullptr, nullptr) < 0) return {};
  avformat_find_stream_info(context, nullptr);
  const int video = av_find_best_stream(context, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  std::vector<std::int64_t> all, keys;
  AVPacket* packet = av_packet_alloc();
  while (av_read_frame(context, packet) >= 0) {
    if (packet->stream_index == video) {
      all.push_back(packet->pts);
      if (packet->flags & AV_PKT_FLAG_KEY) keys.push_back(packet->pts);
    }
    av_packet_unref(packet);
  }
  av_packet_free(&packet);
  avformat_close_input(&context);
  std::sort(all.begin(), all.end());
  std::vector<int> positions;
  for (const std::int64_t k : keys)
    positions.push_back(static_cast<int>(std::lower_bound(all.begin(), all.end(), k) - all.begin()));
  std::sort(positions.begin(), positions.end());
  return positions;
}

// A file's whole text (a job's log), empty if it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline const TestClip& test_clip() {
  static const TestClip clip = [] {
    TestClip c;
    c.path = temp_dir("jobs-clip-" + std::to_string(getpid())) + "/scenes.mp4";
    const std::string command =
        "ffmpeg -v error -y -f lavfi -i 'testsrc2=s=160x120:r=25:d=1.2[a];smptebars=s=160x120:r=25:d=0.8[b];"
        "mandelbrot=s=160x120:r=25[m];[m]trim=duration=1.0[c];[a][b][c]concat=n=3:v=1:a=0' "
        "-f lavfi -i 'sine=f=440:d=3' -c:v libx264 -preset veryfast -pix_fmt yuv420p "
        "-x264-params open-gop=1:bframes=3:b-pyramid=normal:keyint=12:min-keyint=1 "
        "-force_key_frames 'expr:eq(n,30)+eq(n,31)+eq(n,49)+eq(n,50)+eq(n,60)+eq(n,61)' "
        "-c:a aac -shortest '" + c.path + "'";
    REQUIRE_MESSAGE(run_program(command) == 0, "the ffmpeg program could not make the test clip");
    c.keyframes = keyframe_positions(c.path);
    return c;
  }();
  return clip;
}

struct DecodedMedia {
  std::vector<std::uint64_t> frame_hashes;  // of each decoded picture's planes
  std::vector<std::int64_t> pts_us;
  std::vector<std::tuple<std::int64_t, int, std::uint64_t>> audio_packets;  // pts (us), size, hash
};

inline std::uint64_t fnv(std::uint64_t h, const std::uint8_t* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 1099511628211ull;
  }
  return h;
}

inline DecodedMedia decode_media(const std::string& path) {
  io::InputOptions in;
  in.url = path;
  io::MediaReader reader(in);
  DecodedMedia d;
  const io::VideoInfo& info = reader.video();
  const AVRational tb{info.time_base.num, info.time_base.den};
  for (;;) {
    const auto item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item == io::MediaReader::Item::video_frame) {
      const ImageView& v = reader.frame().view;
      std::uint64_t h = 1469598103934665603ull;
      for (int p = 0; p < v.plane_count; ++p)
        for (int y = 0; y < v.planes[p].height; ++y)
          h = fnv(h, v.planes[p].data + static_cast<std::size_t>(y) * v.planes[p].stride,
                  static_cast<std::size_t>(v.planes[p].width));
      d.frame_hashes.push_back(h);
      d.pts_us.push_back(av_rescale_q(reader.frame().pts, tb, AVRational{1, 1000000}));
    } else {
      io::Packet packet = reader.take_packet();
      const AVStream* stream = reader.format_context()->streams[packet->stream_index];
      if (stream->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
      d.audio_packets.emplace_back(av_rescale_q(packet->pts, stream->time_base, AVRational{1, 1000000}), packet->size,
                                   fnv(1469598103934665603ull, packet->data, static_cast<std::size_t>(packet->size)));
    }
  }
  return d;
}

inline nlohmann::json read_plan(const std::string& dir) {
  std::ifstream file(dir + "/plan.json");
  return nlohmann::json::parse(file);
}

inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The single run's output of `clip` with `options`, made once per option set.
inline const std::string& single_run(const std::string& clip, const std::string& options) {
  // One single run per clip and options (test cases of one process share them).
  static std::map<std::string, std::string> made;
  const std::string key = clip + "\n" + options;
  auto it = made.find(key);
  if (it != made.end()) return it->second;
  // ctest runs test cases as parallel processes: the pid and the key keep their files apart.
  const std::string out = temp_dir("jobs-single-" + std::to_string(getpid()) + "-" +
                                   std::to_string(std::hash<std::string>{}(key))) + "/single.mkv";
  const CommandResult r = run_hazefree("-q -y " + options + " --encoder ffv1 " + quoted(clip) + " " + quoted(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return made.emplace(key, out).first->second;
}

inline void check_identical(const std::string& expected, const std::string& actual) {
  const DecodedMedia a = decode_media(expected), b = decode_media(actual);
  REQUIRE(a.frame_hashes.size() > 0);
  CHECK(b.frame_hashes.size() == a.frame_hashes.size());
  CHECK(b.frame_hashes == a.frame_hashes);
  CHECK(b.pts_us == a.pts_us);
  CHECK(b.audio_packets == a.audio_packets);
  CHECK(b.audio_packets.size() > 0);
}

// `--chunks`-style runs of the local runner, whose results must equal the single run's.
inline void check_local_job(const std::string& clip, const std::string& options, const std::string& cut) {
  CAPTURE(options);
  CAPTURE(cut);
  const std::string& single = single_run(clip, options);
  const std::string dir =
      temp_dir("jobs-local-" + std::to_string(getpid()) + "-" + std::to_string(std::hash<std::string>{}(options + cut)));
  const std::string out = dir + "/chunked.mkv";
  const CommandResult r = run_hazefree("-q -y " + options + " --encoder ffv1 " + cut + " " + quoted(clip) + " " + quoted(out));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  check_identical(single, out);
  // The default job directory is gone once the job succeeded.
  CHECK_FALSE(std::filesystem::exists(dir + "/.chunked.mkv.hazefree-job"));
}

inline int job_task_count(const std::string& dir) { return static_cast<int>(read_plan(dir).at("tasks").size()); }

inline long job_task_frames(const std::string& dir, int task) {
  return read_plan(dir).at("tasks").at(static_cast<std::size_t>(task)).at("frames").get<long>();
}

}  // namespace hazefree::test
