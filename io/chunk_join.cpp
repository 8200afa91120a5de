#include "io/chunk_join.hpp"

#include <cstring>
#include <optional>

#include "io/av_error.hpp"
#include "io/packet_reader.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace hazefree::io {

using namespace detail;

namespace {

// `later` read from its header alone (its pixel format unknown where the header does not say it).
bool same_parameters(const AVCodecParameters& first, const AVCodecParameters& later) {
  return first.codec_id == later.codec_id && first.width == later.width && first.height == later.height &&
         (later.format < 0 || first.format == later.format) && first.extradata_size == later.extradata_size &&
         (first.extradata_size == 0 ||
          std::memcmp(first.extradata, later.extradata, static_cast<std::size_t>(first.extradata_size)) == 0);
}

std::int64_t time_of(const AVPacket& p) { return p.dts != AV_NOPTS_VALUE ? p.dts : p.pts; }

}  // namespace

std::int64_t join_chunks(const std::vector<std::string>& chunk_files, const InputOptions& source_input,
                         const OutputOptions& output, std::int64_t expected_frames,
                         const std::function<void(std::size_t)>& before_chunk) {
  if (chunk_files.empty()) throw_io(output.url, "no chunks to join");
  if (before_chunk) before_chunk(0);
  InputOptions source_options;
  source_options.url = source_input.url;
  source_options.trim = source_input.trim;
  source_options.other_streams_only = true;
  source_options.decoder_threads = 1;
  MediaReader source(source_options);
  PacketReader first(chunk_files.front());
  MediaWriter writer(output, source, first);

  // The chunks' video in order: the first, then each later one alone (however many chunks). The
  // first is probed: the output's stream takes its parameters. The later ones, the job's own MOV
  // files, are read from their headers: probing decoded a picture of each, which after the last
  // render cost the job 25 ms a chunk still to copy.
  PacketReader* chunk = &first;
  std::optional<PacketReader> later;
  std::size_t next_chunk = 1;
  auto next_video = [&]() -> Packet {
    for (;;) {
      if (Packet packet = chunk->next()) return packet;
      if (next_chunk >= chunk_files.size()) return nullptr;
      later.reset();
      if (before_chunk) before_chunk(next_chunk);
      later.emplace(chunk_files[next_chunk], PacketReader::Opening::header);
      if (!same_parameters(*first.codec_parameters(), *later->codec_parameters()))
        throw_io(chunk_files[next_chunk], "encoded with other codec parameters than " + chunk_files.front() +
                                              ": render both again");
      ++next_chunk;
      chunk = &*later;
    }
  };
  auto next_other = [&]() -> Packet {
    for (;;) {
      const MediaReader::Item item = source.read();
      if (item == MediaReader::Item::end) return nullptr;
      if (item == MediaReader::Item::packet) return source.take_packet();
    }
  };

  Packet video = next_video();
  Packet other = next_other();
  std::int64_t video_packets = 0;
  while (video || other) {
    bool take_video = video != nullptr;
    const Rational video_tb = chunk->time_base();
    if (video && other) {
      const AVRational other_tb = source.format_context()->streams[other->stream_index]->time_base;
      take_video = time_of(*other) == AV_NOPTS_VALUE ||
                   av_compare_ts(time_of(*video), AVRational{video_tb.num, video_tb.den}, time_of(*other), other_tb) <= 0;
    }
    if (take_video) {
      writer.write_video_packet(std::move(video), video_tb);
      ++video_packets;
      video = next_video();
    } else {
      writer.write_packet(std::move(other));
      other = next_other();
    }
  }
  if (video_packets != expected_frames)
    throw_io(output.url, "the chunks hold " + std::to_string(video_packets) + " frames where the input has " +
                             std::to_string(expected_frames));
  writer.finish();
  return video_packets;
}

}  // namespace hazefree::io
