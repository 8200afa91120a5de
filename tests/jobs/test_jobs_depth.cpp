// Jobs at high bit depth (SPEC 7 and 8): a 10-bit clip run in chunks gives every frame of the
// single run, sample for sample, the temporal state (the atmospheric light, HE's 2^d-bin
// history) carried across the chunk boundaries at depth.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "jobs/job_test_support.hpp"

namespace hazefree::test {
namespace {

std::string q(const std::string& s) { return "'" + s + "'"; }

// Each picture's samples hashed whole (two bytes a sample above 8 bits), its depth, and the
// audio packets.
struct DeepMedia {
  std::vector<std::uint64_t> hashes;
  std::vector<int> depths;
  std::vector<std::int64_t> pts_us;
  int audio_packets = 0;
};

DeepMedia decode_deep(const std::string& path) {
  io::InputOptions in;
  in.url = path;
  io::MediaReader reader(in);
  DeepMedia d;
  const AVRational tb{reader.video().time_base.num, reader.video().time_base.den};
  for (;;) {
    const auto item = reader.read();
    if (item == io::MediaReader::Item::end) break;
    if (item == io::MediaReader::Item::packet) {
      const io::Packet packet = reader.take_packet();
      d.audio_packets += reader.format_context()->streams[packet->stream_index]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO;
      continue;
    }
    const ImageView& v = reader.frame().view;
    std::uint64_t h = 1469598103934665603ull;
    for (int p = 0; p < v.plane_count; ++p) {
      const std::size_t row_bytes = static_cast<std::size_t>(v.planes[p].width) * bytes_per_sample(v.format, p, v.depth);
      for (int y = 0; y < v.planes[p].height; ++y)
        h = fnv(h, v.planes[p].data + static_cast<std::size_t>(y) * v.planes[p].stride, row_bytes);
    }
    d.hashes.push_back(h);
    d.depths.push_back(v.depth);
    d.pts_us.push_back(av_rescale_q(reader.frame().pts, tb, AVRational{1, 1000000}));
  }
  return d;
}

}  // namespace

TEST_CASE("job chunks at depth: a 10-bit HEVC clip in chunks gives the single run's 10-bit frames") {
  const std::string dir = temp_dir("jobs-depth-" + std::to_string(getpid()));
  const std::string clip = dir + "/in10.mkv";
  // Three scenes so that the chunks start in different states; a keyframe every 10 frames.
  REQUIRE(run_program("ffmpeg -v error -y -f lavfi -i 'testsrc2=s=128x72:r=25:d=1.2[a];smptebars=s=128x72:r=25:d=0.8[b];"
                      "[a][b]concat=n=2:v=1:a=0' -f lavfi -i sine=d=2 -pix_fmt yuv420p10le -c:v libx265 "
                      "-x265-params log-level=error:keyint=10:min-keyint=10:scenecut=0 -c:a aac -shortest " + q(clip)) == 0);
  for (const std::string options : {"--backend cpu --mode dcp", "--backend cpu --mode he --set he.temporal=0.4"}) {
    CAPTURE(options);
    const std::string single = dir + "/single.mkv", chunked = dir + "/chunked.mkv";
    CommandResult r = run_hazefree("-q -y " + options + " --encoder ffv1 " + q(clip) + " " + q(single));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    r = run_hazefree("-q -y " + options + " --encoder ffv1 --chunks 3 " + q(clip) + " " + q(chunked));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const DeepMedia a = decode_deep(single), b = decode_deep(chunked);
    CHECK(a.hashes.size() == 50);
    CHECK(a.depths == std::vector<int>(50, 10));
    CHECK(b.depths == a.depths);
    CHECK(b.hashes == a.hashes);
    CHECK(b.pts_us == a.pts_us);
    CHECK(b.audio_packets == a.audio_packets);
    CHECK(a.audio_packets > 0);
  }
}

}  // namespace hazefree::test
