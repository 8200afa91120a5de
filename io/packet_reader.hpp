// Demuxing without decoding: the packets of a file's video stream, with their timestamps and
// keyframe flags. A job's plan indexes its inputs with it (reading packets is fast: no picture is
// decoded), and its join reads the encoded chunks with it for stream copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/media_reader.hpp"

struct AVCodecParameters;

namespace hazefree::io {

class PacketReader {
 public:
  // What opening reads: `probed`, for any file, also reads and decodes its first packets for what
  // the header leaves out (a transport stream's streams are known only that way); `header`, for
  // files whose header describes their video stream (a job's MOV chunks), reads no packet.
  enum class Opening { probed, header };
  explicit PacketReader(const std::string& url, Opening opening = Opening::probed);  // throws IoError naming the file
  ~PacketReader();
  PacketReader(const PacketReader&) = delete;
  PacketReader& operator=(const PacketReader&) = delete;

  // The next packet of the video stream in file (decode) order; null at the end. Throws IoError.
  Packet next();
  Rational time_base() const;      // of the video stream
  std::int64_t start_time_us() const;  // the container's start time (0 when unknown)
  Rational frame_rate() const;     // average (or guessed), 0/1 unknown
  const AVCodecParameters* codec_parameters() const;
  std::string codec_name() const;
  int other_stream_count() const;  // streams besides the video stream

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One video packet as a plan sees it.
struct VideoPacketInfo {
  std::int64_t pts = 0;       // in the video time base
  std::int64_t dts = 0;       // (its pts where the container stores none)
  bool keyframe = false;
  // Decoding can start here without any earlier picture, for every picture from this one on in
  // presentation order: an H.264 IDR or an HEVC IRAP picture. (An open GOP's I picture is a
  // keyframe but not clean: pictures after it in decode order may refer to the GOP before.)
  bool clean_start = false;
};

struct VideoIndex {
  Rational time_base;
  std::int64_t start_time_us = 0;  // the container's start time, where a trimmed span counts from
  Rational frame_rate;
  std::string codec_name;
  int other_streams = 0;
  std::vector<VideoPacketInfo> packets;  // in decode order
};

// Reads every video packet of `url` (no decoding). Throws IoError naming the file, also when a
// packet has no pts (such a stream cannot be cut by timestamps).
VideoIndex index_video_packets(const std::string& url);

}  // namespace hazefree::io
