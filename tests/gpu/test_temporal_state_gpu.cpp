// The temporal state on the CUDA backend (SPEC 8): its per-frame estimates equal the CPU's, and a
// stream started part-way from the state scanned out of the earlier frames' estimates gives the
// frames of the whole run, bit for bit, through process() and through the two lanes.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "gpu_test_util.hpp"
#include "kernels/cuda/device_frame.hpp"
#include "kernels/processor.hpp"
#include "kernels/temporal_state.hpp"

namespace hazefree {
namespace {

using gpu_test::fresh_seed;

bool same_pixels(const ImageView& a, const ImageView& b) {
  for (int i = 0; i < a.plane_count; ++i)
    for (int y = 0; y < a.planes[i].height; ++y)
      if (std::memcmp(a.planes[i].data + static_cast<std::size_t>(y) * a.planes[i].stride,
                      b.planes[i].data + static_cast<std::size_t>(y) * b.planes[i].stride,
                      static_cast<std::size_t>(a.planes[i].width * bytes_per_sample(a.format, i))) != 0)
        return false;
  return true;
}

// Twelve frames: a slow drift, a cut at frame 5 (other content), the drift again.
std::vector<Image> clip_frames(PixelFormat format, int w, int h) {
  std::vector<Image> frames;
  for (int i = 0; i < 12; ++i) {
    Image in = gpu_test::make_image(format, w, h);
    if (i == 5) gpu_test::fill_random(in.view(), fresh_seed(), 0, 255);
    else gpu_test::fill_smooth(in.view(), 1000 + (i < 5 ? i : 40 + i));
    frames.push_back(std::move(in));
  }
  return frames;
}

void check_started_part_way(const ProcessingConfig& config, PixelFormat format, int w, int h) {
  const std::vector<Image> frames = clip_frames(format, w, h);
  auto cpu = make_cpu_processor(config);
  auto whole = make_cuda_processor(config);
  std::vector<Image> expected;
  std::vector<FrameEstimate> estimates;
  std::vector<TemporalState> states;  // after each frame, as the whole run has it
  for (const Image& f : frames) {
    // HE's histograms come from the CPU in a job; DCP's A^ from the rendering backend: both
    // must equal the CPU's.
    const FrameEstimate cpu_estimate = cpu->estimate(f.view());
    if (config.mode == Mode::dcp) {
      const FrameEstimate gpu_estimate = whole->estimate(f.view());
      CHECK(gpu_estimate.light == cpu_estimate.light);
    }
    estimates.push_back(cpu_estimate);
    Image out = gpu_test::make_image(format, w, h);
    whole->process(f.view(), out.view());
    expected.push_back(std::move(out));
    states.push_back(whole->temporal_state());
  }
  for (const int start : {1, 5, 6, 11}) {
    INFO("start at frame ", start);
    TemporalState state;
    for (int i = 0; i < start; ++i) advance_temporal_state(config, estimates[static_cast<std::size_t>(i)], state);
    // The scan gives the state the whole run had before `start`.
    const TemporalState& truth = states[static_cast<std::size_t>(start - 1)];
    CHECK(state.has_light == truth.has_light);
    CHECK(state.light == truth.light);
    for (int c = 0; c < 3; ++c) CHECK(state.channel_history[c] == truth.channel_history[c]);
    CHECK(state.bits_history == truth.bits_history);
    // process(), one frame at a time.
    auto part = make_cuda_processor(config);
    part->set_temporal_state(state);
    for (int i = start; i < 12; ++i) {
      Image out = gpu_test::make_image(format, w, h);
      part->process(frames[static_cast<std::size_t>(i)].view(), out.view());
      CHECK_MESSAGE(same_pixels(out.view(), expected[static_cast<std::size_t>(i)].view()), "frame ", i);
    }
    // The lanes, from pinned memory, frames in flight on both.
    auto laned = make_cuda_processor(config);
    REQUIRE(laned->lanes() >= 2);
    laned->set_temporal_state(state);
    std::vector<Image> outs;
    outs.reserve(12);
    for (int i = start; i < 12; ++i) {
      const int lane = (i - start) % 2;
      if (i - start >= 2) laned->wait(lane);  // the lane's previous frame
      outs.push_back(gpu_test::make_image(format, w, h));
      laned->enqueue(lane, frames[static_cast<std::size_t>(i)].view(), outs.back().view());
    }
    for (int lane = 0; lane < 2; ++lane) laned->wait(lane);
    for (int i = start; i < 12; ++i)
      CHECK_MESSAGE(same_pixels(outs[static_cast<std::size_t>(i - start)].view(), expected[static_cast<std::size_t>(i)].view()),
                    "laned frame ", i);
    const TemporalState after = laned->temporal_state();
    CHECK(after.light == states.back().light);
  }
}

// A job's held chunk keeps its frames on the GPU (hold_on_device): each frame's estimate taken
// from its device copy equals the host frame's, and the chunk rendered from the device copies
// through the two lanes, started from the scanned state, gives the whole run's frames. The
// copies outlive the processor that made them (the frames are freed after it has gone).
// `from_device`: each frame comes as an NVDEC picture would, in one device buffer of the
// decoder's, reused (overwritten) for the next frame as soon as the hold returns.
void check_held_on_device(const ProcessingConfig& config, PixelFormat format, int w, int h, bool from_device = false) {
  INFO(format_name(format, 8), " ", w, "x", h, from_device ? ", from a device picture" : ", from host frames");
  const std::vector<Image> frames = clip_frames(format, w, h);
  cuda::DeviceFrame surface;  // the "decoder's" one surface
  surface.shape(format, w, h);
  auto whole = make_cuda_processor(config);
  std::vector<Image> expected;
  std::vector<FrameEstimate> estimates;
  for (const Image& f : frames) {
    estimates.push_back(whole->estimate(f.view()));
    Image out = gpu_test::make_image(format, w, h);
    whole->process(f.view(), out.view());
    expected.push_back(std::move(out));
  }
  const int start = 6;
  TemporalState state;
  for (int i = 0; i < start; ++i) advance_temporal_state(config, estimates[static_cast<std::size_t>(i)], state);
  auto estimator = make_cuda_processor(config);
  auto render = make_cuda_processor(config);
  std::vector<std::shared_ptr<void>> held;
  std::vector<ImageView> views;
  for (int i = start; i < 12; ++i) {
    ImageView view;
    if (from_device) {
      cuda::copy_frame_async(frames[static_cast<std::size_t>(i)].view(), surface.view(), cudaMemcpyHostToDevice, cudaStreamLegacy);
      held.push_back(render->hold_on_device(surface.view(), view));
      CHECK(view.planes[0].data != surface.view().planes[0].data);
    } else {
      held.push_back(render->hold_on_device(frames[static_cast<std::size_t>(i)].view(), view));
    }
    REQUIRE(static_cast<bool>(held.back()));
    CHECK(view.width == w);
    CHECK(view.format == format);
    views.push_back(view);
    CHECK_MESSAGE(estimator->estimate(view).light == estimates[static_cast<std::size_t>(i)].light, "frame ", i);
  }
  render->set_temporal_state(state);
  std::vector<Image> outs;
  outs.reserve(12);
  for (int i = start; i < 12; ++i) {
    const int lane = (i - start) % 2;
    if (i - start >= 2) {
      render->wait(lane);
      held[static_cast<std::size_t>(i - start - 2)].reset();  // freed once processed, as a job does
    }
    outs.push_back(gpu_test::make_image(format, w, h));
    render->enqueue(lane, views[static_cast<std::size_t>(i - start)], outs.back().view());
  }
  for (int lane = 0; lane < 2; ++lane) render->wait(lane);
  for (int i = start; i < 12; ++i)
    CHECK_MESSAGE(same_pixels(outs[static_cast<std::size_t>(i - start)].view(), expected[static_cast<std::size_t>(i)].view()),
                  "frame ", i, " held on the device");
  render.reset();
  held.clear();  // after their processor: freed on the stream they keep alive
  ImageView again;
  CHECK(static_cast<bool>(estimator->hold_on_device(frames[0].view(), again)));
  CHECK_FALSE(static_cast<bool>(make_cpu_processor(config)->hold_on_device(frames[0].view(), again)));
}

}  // namespace

TEST_CASE("held frames on the device: estimates and the chunk's render equal the host frames'") {
  check_held_on_device(gpu_test::dcp_config(), PixelFormat::yuv420p, 640, 360);
  check_held_on_device(gpu_test::dcp_config(), PixelFormat::rgb24, 333, 201);
  check_held_on_device(gpu_test::dcp_config(), PixelFormat::nv12, 321, 241);
  // A job's chunk decoded on NVDEC: its pictures copied out of the decoder's surface on the GPU.
  check_held_on_device(gpu_test::dcp_config(), PixelFormat::nv12, 321, 241, true);
  check_held_on_device(gpu_test::dcp_config(), PixelFormat::yuv420p, 640, 360, true);
}

TEST_CASE("temporal state: DCP started part-way from the scanned estimates equals the whole run") {
  ProcessingConfig c;
  c.mode = Mode::dcp;
  check_started_part_way(c, PixelFormat::yuv420p, 640, 360);
  check_started_part_way(c, PixelFormat::rgb24, 333, 201);
}

TEST_CASE("temporal state: HE temporal started part-way from the CPU's histograms equals the whole run") {
  for (const ColorMode color : {ColorMode::luma, ColorMode::rgb, ColorMode::grey, ColorMode::rgb_bits}) {
    INFO("colour mode ", to_string(color));
    ProcessingConfig c;
    c.mode = Mode::he;
    c.color = color;
    c.he.temporal = 0.3f;
    check_started_part_way(c, color == ColorMode::luma ? PixelFormat::yuv420p : PixelFormat::rgb24, 320, 180);
  }
}

}  // namespace hazefree
