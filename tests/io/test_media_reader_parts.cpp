// The reader's parts on their own: the span filter (which pictures and packets a span or a chunk
// keeps), the stall watch (input.timeout) and the picture conversion (layout and depth), on
// hand-made FFmpeg objects; the reader as a whole is tested on real media in test_media_reader.
#include <doctest/doctest.h>

#include <chrono>
#include <deque>
#include <thread>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
}

#include "io/av_owners.hpp"
#include "io/picture_conversion.hpp"
#include "io/span_filter.hpp"
#include "io/stall_watch.hpp"
#include "tests/io/io_test_support.hpp"

using namespace hazefree;
using io::detail::PictureConversion;
using io::detail::SpanFilter;
using io::detail::StallWatch;
using Picture = SpanFilter::PictureVerdict;
using PacketFate = SpanFilter::PacketVerdict;

namespace {

// An input's streams without a file: video at 25 fps, audio in milliseconds, starting at zero.
struct TwoStreams {
  AVFormatContext* context = avformat_alloc_context();
  TwoStreams() {
    avformat_new_stream(context, nullptr)->time_base = AVRational{1, 25};
    avformat_new_stream(context, nullptr)->time_base = AVRational{1, 1000};
  }
  ~TwoStreams() { avformat_free_context(context); }
  static constexpr int kVideo = 0, kAudio = 1;
};

// An audio packet at `ms` milliseconds.
io::Packet audio_at(std::int64_t ms) {
  io::Packet packet(av_packet_alloc());
  packet->stream_index = TwoStreams::kAudio;
  packet->pts = packet->dts = ms;
  return packet;
}

constexpr AVRational kMilliseconds{1, 1000};

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A picture of `format` with every sample of plane p set to values[p].
io::detail::FramePtr picture(AVPixelFormat format, int width, int height, std::initializer_list<int> values) {
  io::detail::FramePtr frame(av_frame_alloc());
  frame->format = format;
  frame->width = width;
  frame->height = height;
  REQUIRE(av_frame_get_buffer(frame.get(), 0) == 0);
  int plane = 0;
  for (const int value : values) {
    for (int y = 0; y < (plane == 0 ? height : (height + 1) / 2); ++y)
      for (int x = 0; x < frame->linesize[plane]; ++x) frame->data[plane][y * frame->linesize[plane] + x] = std::uint8_t(value);
    ++plane;
  }
  return frame;
}

}  // namespace

TEST_CASE("reader parts: a span with an end keeps the pictures before it and the other streams' packets up to it") {
  TwoStreams input;
  io::InputOptions options;
  options.trim.end_seconds = 0.2;  // -to 0.2: pictures 0 to 4 at 25 fps
  SpanFilter span(options, "in.mp4");
  span.start(*input.context, TwoStreams::kVideo, {TwoStreams::kAudio});
  CHECK(span.trimmed());
  std::deque<io::Packet> released;
  for (int pts = 0; pts < 5; ++pts) CHECK(span.judge_picture(pts, true, released) == Picture::keep);
  CHECK_FALSE(span.video_ended());
  CHECK(span.judge_picture(5, true, released) == Picture::video_ended);
  CHECK(span.video_ended());
  CHECK_FALSE(span.others_ended(true));
  io::Packet inside = audio_at(150), past = audio_at(200);
  CHECK(span.judge_packet(*inside, kMilliseconds, true) == PacketFate::hand_out);
  CHECK(inside->pts == 150);  // the span starts at the input's start
  CHECK(span.judge_packet(*past, kMilliseconds, true) == PacketFate::left_out);
  CHECK(span.others_ended(true));
  CHECK(released.empty());
  CHECK(span.on_span_clock(3, true) == 3);

  io::VideoInfo info;
  info.frame_rate = io::Rational{25, 1};
  info.duration_seconds = 4.0;
  span.describe(info);
  CHECK(info.duration_seconds == doctest::Approx(0.2));
  CHECK(info.frame_count == 5);
}

TEST_CASE("reader parts: a span from the input's start keeps the packets before it as the whole input does") {
  // -t 0.2 (or -ss 0 -t 0.2): an AAC priming packet at -21 ms is kept with its time, as ffmpeg
  // keeps it; with --frames it waits for the first picture like the others.
  for (const int frames : {0, 2}) {
    CAPTURE(frames);
    TwoStreams input;
    io::InputOptions options;
    options.trim.end_seconds = 0.2;
    options.trim.max_frames = frames;
    SpanFilter span(options, "in.mp4");
    span.start(*input.context, TwoStreams::kVideo, {TwoStreams::kAudio});
    std::deque<io::Packet> released;
    io::Packet priming = audio_at(-21);
    const PacketFate fate = span.judge_packet(*priming, kMilliseconds, true);
    if (frames == 0) {
      CHECK(fate == PacketFate::hand_out);
      CHECK(priming->pts == -21);
    } else {
      CHECK(fate == PacketFate::held);
      CHECK(span.judge_picture(0, true, released) == Picture::keep);
      REQUIRE(released.size() == 1);
      CHECK(released.front()->pts == -21);
    }
  }
}

TEST_CASE("reader parts: with --frames the packets after the last picture kept wait until a later one or the end") {
  TwoStreams input;
  io::InputOptions options;
  options.trim.max_frames = 2;
  SpanFilter span(options, "in.mp4");
  span.start(*input.context, TwoStreams::kVideo, {TwoStreams::kAudio});
  std::deque<io::Packet> released;
  CHECK(span.judge_picture(0, true, released) == Picture::keep);
  io::Packet early = audio_at(10);  // at picture 0: the span may end before the next picture
  CHECK(span.judge_packet(*early, kMilliseconds, true) == PacketFate::held);
  CHECK(released.empty());
  CHECK(span.judge_picture(1, true, released) == Picture::keep);
  REQUIRE(released.size() == 1);  // picture 1 is kept: the packet before it goes out
  CHECK(released.front()->pts == 10);
  io::Packet late = audio_at(60);  // after picture 1, at the third one's time (after rounding)
  CHECK(span.judge_packet(*late, kMilliseconds, true) == PacketFate::held);
  CHECK(span.judge_picture(2, true, released) == Picture::video_ended);  // the third: the span ends at its time
  CHECK(released.size() == 1);  // the packet at or after the span's end is dropped
  io::Packet before_end = audio_at(70), at_end = audio_at(80);
  CHECK(span.judge_packet(*before_end, kMilliseconds, true) == PacketFate::hand_out);
  CHECK_FALSE(span.others_ended(true));
  CHECK(span.judge_packet(*at_end, kMilliseconds, true) == PacketFate::left_out);
  CHECK(span.others_ended(true));
}

TEST_CASE("reader parts: a chunk keeps its range of presentation times, a reconnected source is not trimmed") {
  TwoStreams input;
  std::deque<io::Packet> released;
  io::InputOptions chunk_options;
  chunk_options.chunk.active = true;
  chunk_options.chunk.first_pts = 3;
  chunk_options.chunk.end_pts = 6;
  SpanFilter chunk(chunk_options, "in.mp4");
  chunk.start(*input.context, TwoStreams::kVideo, {});
  CHECK_FALSE(chunk.trimmed());
  CHECK(chunk.judge_picture(2, true, released) == Picture::drop);
  for (int pts = 3; pts < 6; ++pts) CHECK(chunk.judge_picture(pts, true, released) == Picture::keep);
  CHECK(chunk.judge_picture(6, true, released) == Picture::end);
  CHECK(chunk.on_span_clock(4, true) == 4);

  io::InputOptions trimmed;
  trimmed.trim.end_seconds = 0.2;
  SpanFilter span(trimmed, "rtsp://camera/stream");
  span.start(*input.context, TwoStreams::kVideo, {TwoStreams::kAudio});
  io::Packet late = audio_at(5000);
  CHECK(span.judge_picture(100, false, released) == Picture::keep);  // another connection's clock
  CHECK(span.judge_packet(*late, kMilliseconds, false) == PacketFate::hand_out);
  CHECK(span.on_span_clock(100, false) == 100);
  CHECK(released.empty());
}

TEST_CASE("reader parts: -ss past the input's end is refused in one line naming it") {
  TwoStreams input;
  input.context->duration = 500000;  // 0.5 s
  io::InputOptions options;
  options.trim.start_seconds = 1;
  SpanFilter span(options, "rtsp://user:secret@camera/stream");
  CHECK_THROWS_WITH_AS(span.start(*input.context, TwoStreams::kVideo, {}),
                       "rtsp://***@camera/stream: -ss 1: past the end of the input (0.500 s)", io::TrimError);
}

TEST_CASE("reader parts: the stall watch ends a wait only after input.timeout without progress") {
  StallWatch never(0);
  never.watch_from_now();
  sleep_ms(30);
  CHECK_FALSE(never.expired());

  StallWatch watch(0.05);
  watch.watch_from_now();
  CHECK_FALSE(watch.expired());
  sleep_ms(80);
  CHECK(watch.expired());
  CHECK(watch.stalled());
  CHECK(watch.expired());  // until the next wait begins
  CHECK_THROWS_WITH_AS(watch.throw_stall("udp://127.0.0.1:1234"),
                       "udp://127.0.0.1:1234: no data for 0.05 s (input.timeout)", io::StallError);

  // A run of EAGAIN answers is one wait, from its first answer.
  watch.watch_from_now();
  CHECK_FALSE(watch.stalled());
  watch.before_read();
  CHECK(watch.answered_again(AVERROR(EAGAIN)));
  sleep_ms(80);
  watch.before_read();
  CHECK(watch.expired());

  // A packet (or a closed connection) ends the run: the next read's wait starts when it does.
  watch.watch_from_now();
  CHECK_FALSE(watch.answered_again(0));
  sleep_ms(80);
  watch.before_read();
  CHECK_FALSE(watch.expired());
  CHECK(watch.answered_again(AVERROR(EAGAIN)));
  watch.forget_reads();
  sleep_ms(80);
  watch.before_read();
  CHECK_FALSE(watch.expired());
}

TEST_CASE("reader parts: while an input opens, every byte read counts as progress") {
  AVFormatContext* context = avformat_alloc_context();
  REQUIRE(context != nullptr);
  context->pb = avio_alloc_context(nullptr, 0, 0, nullptr, nullptr, nullptr, nullptr);
  REQUIRE(context->pb != nullptr);
  StallWatch watch(0.05);
  watch.watch_from_now();
  watch.watch_opening(context);
  CHECK_FALSE(watch.expired());  // the bytes read so far noted
  sleep_ms(80);
  context->pb->bytes_read = 100;  // bytes came in, no packet yet
  CHECK_FALSE(watch.expired());
  sleep_ms(80);
  CHECK(watch.expired());  // none since
  watch.watch_opening(nullptr);
  avio_context_free(&context->pb);
  avformat_free_context(context);
}

TEST_CASE("reader parts: a picture in its layout is delivered as it is, another converted once") {
  io::VideoInfo info;
  info.width = 4;
  info.height = 2;
  PictureConversion conversion("in.y4m");
  conversion.choose_layout(AV_PIX_FMT_YUV420P, info);
  conversion.choose_depth(0, info);
  CHECK(info.format == PixelFormat::yuv420p);
  CHECK(info.depth == 8);
  CHECK(conversion.layout_depth() == 8);
  io::detail::FramePtr own = picture(AV_PIX_FMT_YUV420P, 4, 2, {100, 128, 128});
  ImageView view = conversion.convert(*own, info);
  CHECK(view.planes[0].data == own->data[0]);  // no copy
  CHECK(view.planes[0].data[3] == 100);

  io::VideoInfo rgb;
  rgb.width = 2;
  rgb.height = 2;
  rgb.source_pixel_format = "bgr24";
  PictureConversion swap("in.bmp");
  swap.choose_layout(AV_PIX_FMT_BGR24, rgb);
  swap.choose_depth(0, rgb);
  rgb.range = ColorRange::full;
  CHECK(rgb.format == PixelFormat::rgb24);
  io::detail::FramePtr bgr = picture(AV_PIX_FMT_BGR24, 2, 2, {});
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x) {
      std::uint8_t* sample = bgr->data[0] + y * bgr->linesize[0] + 3 * x;
      sample[0] = 10, sample[1] = 20, sample[2] = 30;  // blue, green, red
    }
  const ImageView converted = swap.convert(*bgr, rgb);
  CHECK(converted.planes[0].data != bgr->data[0]);
  CHECK(converted.format == PixelFormat::rgb24);
  CHECK(converted.planes[0].data[0] == 30);
  CHECK(converted.planes[0].data[1] == 20);
  CHECK(converted.planes[0].data[2] == 10);
}

TEST_CASE("reader parts: the depth asked for converts each picture, one that cannot be delivered is refused") {
  io::VideoInfo info;
  info.width = 4;
  info.height = 2;
  PictureConversion conversion("in.y4m");
  conversion.choose_layout(AV_PIX_FMT_YUV420P, info);
  conversion.choose_depth(10, info);
  CHECK(info.depth == 10);
  CHECK(conversion.layout_depth() == 8);
  io::detail::FramePtr frame = picture(AV_PIX_FMT_YUV420P, 4, 2, {100, 128, 128});
  const ImageView view = conversion.convert(*frame, info);
  CHECK(view.depth == 10);
  const auto* luma = reinterpret_cast<const std::uint16_t*>(view.planes[0].data);
  CHECK(luma[0] == 400);  // limited range: shifted up

  io::VideoInfo semi_planar;
  PictureConversion nv12("in.mkv");
  nv12.choose_layout(AV_PIX_FMT_NV12, semi_planar);
  nv12.choose_depth(12, semi_planar);  // no nv12 layout at 12 bits
  CHECK(semi_planar.format == PixelFormat::yuv420p);
  CHECK(semi_planar.depth == 12);

  io::VideoInfo rgb;
  PictureConversion packed("in.png");
  packed.choose_layout(AV_PIX_FMT_RGB24, rgb);
  CHECK_THROWS_WITH_AS(packed.choose_depth(10, rgb),
                       "in.png: output.depth = 10: RGB pictures are processed at 8 or 16 bits (rgb24, rgb48)",
                       io::IoError);
  io::VideoInfo device;
  device.on_device = true;
  PictureConversion gpu("in.mp4");
  gpu.choose_device_layout(10, device);
  CHECK(device.format == PixelFormat::nv12);
  CHECK_THROWS_AS(gpu.choose_depth(8, device), io::IoError);
  CHECK_NOTHROW(gpu.choose_depth(0, device));
  CHECK(device.depth == 10);
}
