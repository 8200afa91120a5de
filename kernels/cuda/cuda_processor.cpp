// The CUDA frame processor: lanes (stream + device frames + chain workspaces), the shared
// temporal state, host <-> device copies, stage events and the graph of the device chain.
#include "kernels/cuda/cuda_processor.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"
#include "kernels/cuda/device_frame.hpp"
#include "kernels/cuda/equalize_cuda.hpp"
#include "kernels/cuda/rgb_output_cuda.hpp"
#include "kernels/rgb_output.hpp"

namespace hazefree {
namespace cuda {

struct CudaProcessor::State {
  DeviceBuffer<AtmosphereState> tracker{1};
  DeviceBuffer<AtmosphereState> saved_tracker{1};  // estimate(): the state put back after the frame
  PinnedBuffer<AtmosphereState> read_back{1};      // estimate(): the frame's A^ on the host
  DeviceBuffer<HeHistory> history{1};
  DeviceFrame rgb;    // process_to_rgb(): the interleaved RGB before its download
  Event done{false};  // the last frame's state step (A update, he_temporal history)
  bool recorded = false;
};

struct CudaProcessor::Lane {
  Stream stream;
  DeviceFrame in, out;
  std::unique_ptr<CudaDehazer> dehazer;
  std::unique_ptr<CudaEqualizer> equalizer;
  std::vector<Event> events;           // start, after upload, chain markers..., after download
  std::vector<cudaEvent_t> markers;    // raw handles of the chain markers
  Event finished{false};
  GraphExec graph;
  bool graph_stale = true;
  bool timed = false;                  // the last frame recorded every event
  bool pending = false;
  bool on_caller_stream = false;       // the last frame ran on a caller's stream (process_device)
  PinnedBuffer<AtmosphereState> stats{1};  // DCP: the frame's state (A, h, s), read after wait()
  bool has_stats = false;
  // A pageable host frame is copied here first, then uploaded from page-locked memory: see
  // stage_pageable(). Refused (no page-locked memory to be had): CUDA's own pageable upload.
  PinnedBuffer<std::uint8_t> staging;
  bool staging_refused = false;
};

struct CudaProcessor::Holding {
  int device = 0;
  Stream stream;  // the uploads, and the frees of the frames (stream-ordered)
  std::mutex mutex;  // the staging buffer: one upload at a time
  PinnedBuffer<std::uint8_t> staging;
  bool staging_refused = false;
};

namespace {

// A pageable host frame's upload, made from page-locked memory: the frame is copied into the
// lane's staging buffer on the calling thread (one memcpy per plane), whose upload is then a DMA
// that needs no CPU. CUDA's own upload of pageable memory also goes through page-locked buffers
// of its own, but the calling thread waits on each piece of the copy, and threads uploading at
// once wait on each other: a job's eight workers, each estimating its held (pageable) chunk on
// one GPU, took 5-7 ms per 1080p frame that way (docs/SCALING.md). Returns the staged view, or
// nothing when the staging buffer cannot be allocated; `staging` stays in use until the lane's
// upload has completed (the lane's next enqueue comes after its wait).
std::optional<ImageView> stage_pageable(const ImageView& in, PinnedBuffer<std::uint8_t>& staging) {
  std::array<std::size_t, 3> offset{};
  std::size_t total = 0;
  for (int i = 0; i < in.plane_count; ++i) {
    offset[static_cast<std::size_t>(i)] = total;
    const std::size_t bytes = static_cast<std::size_t>(in.planes[i].stride) * static_cast<std::size_t>(in.planes[i].height - 1) +
                              plane_row_bytes(in, i);
    total += (bytes + 255) / 256 * 256;
  }
  try {
    staging.reserve(total);
  } catch (const std::runtime_error&) {
    (void)cudaGetLastError();  // a refused allocation leaves no lasting error
    return std::nullopt;
  }
  ImageView staged = in;
  for (int i = 0; i < in.plane_count; ++i) {
    const std::size_t bytes = static_cast<std::size_t>(in.planes[i].stride) * static_cast<std::size_t>(in.planes[i].height - 1) +
                              plane_row_bytes(in, i);
    staged.planes[i].data = staging.get() + offset[static_cast<std::size_t>(i)];
    std::memcpy(staged.planes[i].data, in.planes[i].data, bytes);
  }
  return staged;
}

}  // namespace

CudaProcessor::CudaProcessor(const ProcessingConfig& config, int lanes) : config_(config) {
  validate(config_);
  std::string why;
  if (!cuda_available(&why)) throw std::runtime_error("the CUDA backend is not available: " + why);
  if (lanes < 1) throw std::invalid_argument("CudaProcessor: at least one lane");
  HAZEFREE_CUDA_CHECK(cudaGetDevice(&device_));
  cudaDeviceProp prop{};
  HAZEFREE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  device_name_ = prop.name;
  state_ = std::make_unique<State>();
  HAZEFREE_CUDA_CHECK(cudaMemset(state_->tracker.get(), 0, sizeof(AtmosphereState)));
  HAZEFREE_CUDA_CHECK(cudaMemset(state_->history.get(), 0, sizeof(HeHistory)));
  const std::size_t chain_markers = config_.mode == Mode::dcp ? CudaDehazer::stage_names().size() + 1 : 2;
  for (int i = 0; i < lanes; ++i) {
    auto lane = std::make_unique<Lane>();
    if (config_.mode == Mode::dcp) lane->dehazer = std::make_unique<CudaDehazer>(config_.dcp);
    else lane->equalizer = std::make_unique<CudaEqualizer>(config_);
    // start, [chain markers], after download
    for (std::size_t e = 0; e < chain_markers + 2; ++e) lane->events.emplace_back(true);
    for (std::size_t e = 1; e <= chain_markers; ++e) lane->markers.push_back(lane->events[e].get());
    lanes_.push_back(std::move(lane));
  }
  HAZEFREE_CUDA_CHECK(cudaDeviceSynchronize());
}

CudaProcessor::~CudaProcessor() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != device_) HAZEFREE_CUDA_CHECK_NOTHROW(cudaSetDevice(device_));
  for (auto& lane : lanes_) HAZEFREE_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(lane->stream.get()));
}

int CudaProcessor::lanes() const { return static_cast<int>(lanes_.size()); }

void CudaProcessor::select_device() const {
  // Only when another GPU is current: setting the same device would replace a context the caller
  // made current on this thread (GStreamer's own) with the runtime's primary one.
  int current = -1;
  HAZEFREE_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_) HAZEFREE_CUDA_CHECK(cudaSetDevice(device_));
}

CudaProcessor::Lane& CudaProcessor::lane_at(int lane) const {
  if (lane < 0 || lane >= static_cast<int>(lanes_.size()))
    throw std::out_of_range("CudaProcessor: no lane " + std::to_string(lane));
  return *lanes_[lane];
}

cudaStream_t CudaProcessor::stream(int lane) const { return lane_at(lane).stream.get(); }

std::string CudaProcessor::description() const { return "cuda (" + device_name_ + ")"; }

void CudaProcessor::shape(Lane& lane, PixelFormat format, int width, int height, int depth) {
  if (width <= 0 || height <= 0) throw std::invalid_argument("cuda: empty frame");
  if (!valid_depth(depth))
    throw std::invalid_argument("cuda: a depth of " + std::to_string(depth) +
                                " bits (8 to 16 expected)");
  const ImageView& v = lane.in.view();
  if (v.format != format || v.width != width || v.height != height || v.depth != depth) {
    lane.in.shape(format, width, height, depth);
    lane.out.shape(format, width, height, depth);
    lane.graph_stale = true;
  }
  track_geometry(format, width, height, depth);
}

void CudaProcessor::track_geometry(PixelFormat format, int width, int height, int depth) {
  // A new frame size is a new stream configuration for he_temporal (as on the CPU).
  if (format_ != format || width_ != width || height_ != height || depth_ != depth) {
    if (width_ != 0 && config_.mode == Mode::he) {
      for (auto& l : lanes_) {
        l->stream.synchronize();
        l->finished.synchronize();
      }
      HAZEFREE_CUDA_CHECK(cudaMemset(state_->history.get(), 0, sizeof(HeHistory)));
      handed_bins_ = {};
    }
    format_ = format;
    width_ = width;
    height_ = height;
    depth_ = depth;
  }
  // A history handed over for this stream must have the frame's 2^depth bins (used only under
  // he_temporal, as on the CPU).
  for (std::size_t& bins : handed_bins_) {
    const std::size_t need = std::size_t{1} << depth;
    if (bins != 0 && bins != need && config_.he.temporal < 1.f)
      throw std::invalid_argument("he: the he_temporal history has " + std::to_string(bins) + " bins; this " +
                                  std::to_string(depth) + "-bit frame needs " + std::to_string(need));
    bins = 0;
  }
}

void CudaProcessor::run_chain(Lane& lane, const ImageView& d_in, const ImageView& d_out,
                              cudaStream_t s, bool markers, ChainPart part) {
  // The state step of this frame waits for the previous frame's, on whichever lane it ran.
  StateOrder order;
  if (lanes_.size() > 1) {
    order.wait = state_->recorded ? state_->done.get() : nullptr;
    order.done = state_->done.get();
    state_->recorded = true;
  }
  if (lane.dehazer) {
    lane.dehazer->set_markers(markers ? &lane.markers : nullptr);
    if (part == ChainPart::light) lane.dehazer->enqueue_light(d_in, state_->tracker.get(), order, s);
    else lane.dehazer->enqueue(d_in, d_out, state_->tracker.get(), order, s);
  } else {
    if (markers) HAZEFREE_CUDA_CHECK(cudaEventRecord(lane.markers[0], s));
    lane.equalizer->enqueue(d_in, d_out, state_->history.get(), order, s);
    if (markers) HAZEFREE_CUDA_CHECK(cudaEventRecord(lane.markers[1], s));
  }
}

void CudaProcessor::enqueue(int index, const ImageView& h_in, const ImageView& h_out) {
  if (h_in.format != h_out.format || h_in.width != h_out.width || h_in.height != h_out.height ||
      h_in.depth != h_out.depth)
    throw std::invalid_argument("cuda: output frame differs from the input in format, depth or size");
  enqueue_chain(index, h_in, &h_out);
}

void CudaProcessor::enqueue_chain(int index, const ImageView& h_in, const ImageView* h_out, ChainPart part) {
  select_device();  // the thread calling may have another GPU current (a job's workers)
  Lane& lane = lane_at(index);
  shape(lane, h_in.format, h_in.width, h_in.height, h_in.depth);
  ImageView& d_in = lane.in.view();
  d_in.matrix = h_in.matrix;
  d_in.range = h_in.range;
  lane.out.view().matrix = h_in.matrix;
  lane.out.view().range = h_in.range;
  const cudaStream_t s = lane.stream.get();
  if (lane.on_caller_stream) {
    HAZEFREE_CUDA_CHECK(cudaStreamWaitEvent(s, lane.finished.get(), 0));
    lane.on_caller_stream = false;
  }
  const bool timed = stage_timing_ && part == ChainPart::whole;  // the stage times are the whole chain's
  if (timed) lane.events.front().record(s);
  cudaPointerAttributes where{};
  HAZEFREE_CUDA_CHECK(cudaPointerGetAttributes(&where, h_in.planes[0].data));
  if (where.type == cudaMemoryTypeDevice) {
    // A GPU-decoded picture (--hwdec): the decoder copied it out on the legacy default stream,
    // which our non-blocking streams do not wait for by themselves.
    HAZEFREE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  }
  // cudaMemcpyDefault: host frames are uploaded, GPU-decoded frames copied on the device.
  std::optional<ImageView> staged;
  if (where.type == cudaMemoryTypeUnregistered && !lane.staging_refused && h_in.width > 0 && h_in.height > 0) {
    staged = stage_pageable(h_in, lane.staging);
    lane.staging_refused = !staged;
  }
  copy_frame_async(staged ? *staged : h_in, d_in, staged ? cudaMemcpyHostToDevice : cudaMemcpyDefault, s);
  run_chain(lane, d_in, lane.out.view(), s, timed, part);
  if (lane.dehazer) {
    // SPEC 13: the frame's A, h and strength come back with the frame (a few bytes, no wait).
    HAZEFREE_CUDA_CHECK(cudaMemcpyAsync(lane.stats.get(), lane.dehazer->frame_state(), sizeof(AtmosphereState),
                                        cudaMemcpyDeviceToHost, s));
    lane.has_stats = true;
  }
  if (h_out) copy_frame_async(lane.out.view(), *h_out, cudaMemcpyDeviceToHost, s);
  if (timed) lane.events.back().record(s);
  lane.finished.record(s);
  lane.timed = timed;
  lane.pending = true;
  last_lane_ = index;
}

void CudaProcessor::wait(int index) {
  select_device();
  Lane& lane = lane_at(index);
  lane.finished.synchronize();
  lane.pending = false;
}

void CudaProcessor::process(const ImageView& in, ImageView& out) {
  enqueue(0, in, out);
  wait(0);
  out.matrix = in.matrix;
  out.range = in.range;
}

void CudaProcessor::process_to_rgb(const ImageView& in, const ImageView& rgb) {
  check_rgb_output(in, rgb);
  enqueue_chain(0, in, nullptr);
  Lane& lane = lane_at(0);
  const cudaStream_t s = lane.stream.get();
  state_->rgb.shape(PixelFormat::rgb24, in.width, in.height, rgb.depth);
  launch_frame_to_interleaved_rgb(lane.out.view(), state_->rgb.view(), s);
  copy_frame_async(state_->rgb.view(), rgb, cudaMemcpyDeviceToHost, s);
  lane.finished.record(s);
  wait(0);
}

ImageView CudaProcessor::device_input(int index, PixelFormat format, int width, int height,
                                      ColorMatrix matrix, ColorRange range, int depth) {
  Lane& lane = lane_at(index);
  shape(lane, format, width, height, depth);
  if (lane.in.view().matrix != matrix || lane.in.view().range != range) lane.graph_stale = true;
  lane.in.view().matrix = lane.out.view().matrix = matrix;
  lane.in.view().range = lane.out.view().range = range;
  return lane.in.view();
}

ImageView CudaProcessor::device_output(int index) { return lane_at(index).out.view(); }

void CudaProcessor::enqueue_device(int index) {
  select_device();
  Lane& lane = lane_at(index);
  const cudaStream_t s = lane.stream.get();
  const bool timed = stage_timing_;
  if (timed) lane.events.front().record(s);
  run_chain(lane, lane.in.view(), lane.out.view(), s, timed);
  if (timed) lane.events.back().record(s);
  lane.finished.record(s);
  lane.timed = timed;
  last_lane_ = index;
}

void CudaProcessor::process_device(const ImageView& d_in, const ImageView& d_out, void* stream) {
  select_device();
  if (d_in.format != d_out.format || d_in.width != d_out.width || d_in.height != d_out.height ||
      d_in.depth != d_out.depth)
    throw std::invalid_argument("cuda: output frame differs from the input in format, depth or size");
  if (d_in.width <= 0 || d_in.height <= 0) throw std::invalid_argument("cuda: empty frame");
  if (!valid_depth(d_in.depth))
    throw std::invalid_argument("cuda: a depth of " + std::to_string(d_in.depth) +
                                " bits (8 to 16 expected)");
  // The kernels address U and V with one chroma stride (FrameRef::s1), as the lanes' own frames
  // are laid out; a caller's frame must be too (host frames are copied into that layout).
  for (const ImageView* f : {&d_in, &d_out}) {
    if (f->plane_count == 3 && is_yuv(f->format) && f->planes[1].stride != f->planes[2].stride)
      throw std::invalid_argument("cuda: device frames need the same stride for U and V (got " +
                                  std::to_string(f->planes[1].stride) + " and " +
                                  std::to_string(f->planes[2].stride) + ")");
  }
  Lane& lane = *lanes_.front();
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  track_geometry(d_in.format, d_in.width, d_in.height, d_in.depth);
  // Lane 0's workspaces may still be in use by its previous frame on another stream.
  HAZEFREE_CUDA_CHECK(cudaStreamWaitEvent(s, lane.finished.get(), 0));
  run_chain(lane, d_in, d_out, s, false);
  lane.finished.record(s);
  lane.timed = false;
  lane.pending = true;
  lane.on_caller_stream = true;
  last_lane_ = 0;
}

void CudaProcessor::launch_device_graph(int index) {
  select_device();
  Lane& lane = lane_at(index);
  const cudaStream_t s = lane.stream.get();
  if (lane.graph_stale || !lane.graph.valid()) {
    lane.stream.synchronize();
    // One lane only: the state step needs no cross-lane event inside the graph.
    if (lanes_.size() > 1 && state_->recorded)
      HAZEFREE_CUDA_CHECK(cudaStreamWaitEvent(s, state_->done.get(), 0));
    lane.stream.synchronize();
    HAZEFREE_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    try {
      const StateOrder none;
      if (lane.dehazer) {
        lane.dehazer->set_markers(nullptr);
        lane.dehazer->enqueue(lane.in.view(), lane.out.view(), state_->tracker.get(), none, s);
      } else {
        lane.equalizer->enqueue(lane.in.view(), lane.out.view(), state_->history.get(), none, s);
      }
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(s, &broken);
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    lane.graph.end_capture(s);
    lane.graph_stale = false;
  }
  lane.graph.launch(s);
  lane.finished.record(s);
  lane.timed = false;
  last_lane_ = index;
}

std::vector<std::string> CudaProcessor::stage_names() const {
  std::vector<std::string> names{"upload"};
  if (config_.mode == Mode::dcp) {
    for (const std::string& n : CudaDehazer::stage_names()) names.push_back(n);
  } else {
    names.push_back(config_.mode == Mode::he ? "equalize_he" : "equalize_ahe");
  }
  names.push_back("download");
  return names;
}

std::vector<StageTime> CudaProcessor::stage_times() const {
  if (last_lane_ < 0) return {};
  const Lane& lane = *lanes_[last_lane_];
  if (!lane.timed) return {};
  lane.finished.synchronize();
  const std::vector<std::string> names = stage_names();
  std::vector<StageTime> times;
  for (std::size_t i = 0; i + 1 < lane.events.size() && i < names.size(); ++i)
    times.push_back({names[i], elapsed_ms(lane.events[i], lane.events[i + 1])});
  return times;
}

void CudaProcessor::reset() {
  select_device();
  for (auto& lane : lanes_) {
    lane->stream.synchronize();
    lane->finished.synchronize();  // a frame on a caller's stream (process_device)
  }
  HAZEFREE_CUDA_CHECK(cudaMemset(state_->tracker.get(), 0, sizeof(AtmosphereState)));
  HAZEFREE_CUDA_CHECK(cudaMemset(state_->history.get(), 0, sizeof(HeHistory)));
  handed_bins_ = {};
  HAZEFREE_CUDA_CHECK(cudaDeviceSynchronize());
}

std::array<float, 3> CudaProcessor::atmospheric_light() const {
  select_device();
  if (config_.mode != Mode::dcp) return {0.f, 0.f, 0.f};
  for (auto& lane : lanes_) {
    lane->stream.synchronize();
    lane->finished.synchronize();  // a frame on a caller's stream (process_device)
  }
  AtmosphereState s{};
  HAZEFREE_CUDA_CHECK(cudaMemcpy(&s, state_->tracker.get(), sizeof(s), cudaMemcpyDeviceToHost));
  if (!s.has_value) return {0.f, 0.f, 0.f};
  return {s.value[0], s.value[1], s.value[2]};
}

void CudaProcessor::set_haze_index(bool on) {
  for (auto& lane : lanes_) {
    lane->stream.synchronize();
    if (lane->dehazer) lane->dehazer->set_haze_index(on);
    lane->graph_stale = true;
  }
}

DehazeStats CudaProcessor::dehaze_stats(int index) const {
  if (config_.mode != Mode::dcp || index < 0 || index >= static_cast<int>(lanes_.size())) return {};
  const Lane& lane = *lanes_[static_cast<std::size_t>(index)];
  if (!lane.has_stats) return {};
  const AtmosphereState& s = *lane.stats.get();
  if (!s.has_value) return {};
  return {true, s.haze, config_.dcp.omega * s.strength, {s.value[0], s.value[1], s.value[2]}};
}

TemporalState CudaProcessor::temporal_state() const {
  select_device();
  for (auto& lane : lanes_) lane->stream.synchronize();
  TemporalState state;
  if (config_.mode == Mode::dcp) {
    AtmosphereState s{};
    HAZEFREE_CUDA_CHECK(cudaMemcpy(&s, state_->tracker.get(), sizeof(s), cudaMemcpyDeviceToHost));
    state.has_light = s.has_value != 0;
    if (state.has_light) {
      state.light = {s.value[0], s.value[1], s.value[2]};
      state.haze = s.haze;
    }
  } else if (config_.mode == Mode::he) {
    auto h = std::make_unique<HeHistory>();
    HAZEFREE_CUDA_CHECK(cudaMemcpy(h.get(), state_->history.get(), sizeof(HeHistory), cudaMemcpyDeviceToHost));
    for (int c = 0; c < 3; ++c) {
      if (h->has_channel[c]) state.channel_history[c].assign(h->channel[c], h->channel[c] + 256);
      else if (h->has_wide[c]) state.channel_history[c].assign(h->wide[c], h->wide[c] + h->wide_bins[c]);
    }
    if (h->has_bits) state.bits_history.assign(h->bits, h->bits + 4096);
  }
  return state;
}

void CudaProcessor::set_temporal_state(const TemporalState& state) {
  select_device();
  for (auto& lane : lanes_) lane->stream.synchronize();
  if (config_.mode == Mode::dcp) {
    AtmosphereState s{};
    for (int c = 0; c < 3; ++c) s.value[c] = s.estimate[c] = state.light[c];
    s.haze = state.haze;
    s.has_value = state.has_light ? 1 : 0;
    HAZEFREE_CUDA_CHECK(cudaMemcpy(state_->tracker.get(), &s, sizeof(s), cudaMemcpyHostToDevice));
  } else if (config_.mode == Mode::he) {
    auto h = std::make_unique<HeHistory>();
    std::memset(h.get(), 0, sizeof(HeHistory));
    handed_bins_ = {};
    for (int c = 0; c < 3; ++c) {
      const std::vector<float>& v = state.channel_history[c];
      if (v.empty()) continue;
      // 256 bins at 8 bits, 2^d at depth d = 9..16 (SPEC 7).
      const std::size_t bins = v.size();
      if (bins < 256 || bins > 65536 || (bins & (bins - 1)) != 0)
        throw std::invalid_argument("cuda: a channel history of " + std::to_string(bins) +
                                    " bins (2^d expected for a depth d of 8 to 16: 256, 1024, ...)");
      if (bins == 256) {
        std::copy(v.begin(), v.end(), h->channel[c]);
        h->has_channel[c] = 1;
      } else {
        std::copy(v.begin(), v.end(), h->wide[c]);
        h->has_wide[c] = 1;
        h->wide_bins[c] = static_cast<int>(bins);
      }
      handed_bins_[static_cast<std::size_t>(c)] = bins;
    }
    if (!state.bits_history.empty()) {
      if (state.bits_history.size() != 4096)
        throw std::invalid_argument("cuda: a BITS history of " + std::to_string(state.bits_history.size()) + " bins (4096 expected)");
      std::copy(state.bits_history.begin(), state.bits_history.end(), h->bits);
      h->has_bits = 1;
    }
    HAZEFREE_CUDA_CHECK(cudaMemcpy(state_->history.get(), h.get(), sizeof(HeHistory), cudaMemcpyHostToDevice));
  }
  HAZEFREE_CUDA_CHECK(cudaDeviceSynchronize());
}

FrameEstimate CudaProcessor::estimate(const ImageView& in) {
  if (config_.mode != Mode::dcp)
    throw std::logic_error(description() + ": histograms for the temporal state come from the CPU backend");
  select_device();
  // The lanes share the state: the frames in flight finish first.
  for (auto& lane : lanes_) lane->stream.synchronize();
  Lane& lane = lane_at(0);
  const cudaStream_t s = lane.stream.get();
  // The frame's A^ comes out of the chain's state step; the state is saved and put back on the
  // device, in the lane's stream order, rather than through the host with a device-wide
  // synchronisation, which would also wait for every other processor's frames on this GPU (a
  // job's workers estimate and render side by side in one process).
  HAZEFREE_CUDA_CHECK(cudaMemcpyAsync(state_->saved_tracker.get(), state_->tracker.get(), sizeof(AtmosphereState),
                                      cudaMemcpyDeviceToDevice, s));
  // Steps 1 and 2 only: the frame stays on the device, only A^ and h^ come back.
  enqueue_chain(0, in, nullptr, ChainPart::light);
  HAZEFREE_CUDA_CHECK(cudaMemcpyAsync(state_->read_back.get(), state_->tracker.get(), sizeof(AtmosphereState),
                                      cudaMemcpyDeviceToHost, s));
  HAZEFREE_CUDA_CHECK(cudaMemcpyAsync(state_->tracker.get(), state_->saved_tracker.get(), sizeof(AtmosphereState),
                                      cudaMemcpyDeviceToDevice, s));
  lane.stream.synchronize();
  lane.pending = false;
  const AtmosphereState& read = *state_->read_back.get();
  FrameEstimate e;
  e.light = {read.estimate[0], read.estimate[1], read.estimate[2]};
  e.haze = read.haze_estimate;
  return e;
}

// A job's held chunk keeps its decoded frames here until its start state comes, rather than in
// host memory: the frame is staged and uploaded once, where a host-held frame was staged and
// uploaded twice (for its estimate, then for its render) after being copied into freshly faulted
// host pages (docs/SCALING.md). An NVDEC picture of this GPU is copied on the device, out of the
// decoder's few surfaces. The memory comes from the GPU's default pool in stream order, so
// neither taking nor freeing it waits for the other workers' frames on this GPU (cudaFree
// would wait for the whole device).
std::shared_ptr<void> CudaProcessor::hold_on_device(const ImageView& frame, ImageView& device_view) {
  if (frame.width <= 0 || frame.height <= 0 || frame.plane_count <= 0) return nullptr;
  select_device();
  if (!holding_) {
    int pools = 0;
    HAZEFREE_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device_));
    if (pools == 0) return nullptr;
    holding_ = std::make_shared<Holding>();
    holding_->device = device_;
  }
  Holding& holding = *holding_;
  cudaPointerAttributes where{};
  HAZEFREE_CUDA_CHECK(cudaPointerGetAttributes(&where, frame.planes[0].data));
  const bool decoded_on_device = where.type == cudaMemoryTypeDevice;
  if (where.type == cudaMemoryTypeManaged || (decoded_on_device && where.device != device_)) return nullptr;
  // Held frames leave an eighth of the GPU's memory (at least 1 GiB) free: the lanes take their
  // frames and workspaces on their first frame, after the chunk has been held, and the GPU's
  // other workers and programs need theirs.
  const std::size_t bytes = frame_bytes(frame.format, frame.width, frame.height, kDeviceRowAlign, frame.depth);
  std::size_t free = 0, total = 0;
  HAZEFREE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (free < bytes + std::max<std::size_t>(std::size_t{1} << 30, total / 8)) return nullptr;
  std::lock_guard lock(holding.mutex);
  const cudaStream_t s = holding.stream.get();
  void* memory = nullptr;
  if (cudaMallocAsync(&memory, bytes, s) != cudaSuccess) {
    (void)cudaGetLastError();  // the GPU's memory is taken: this frame stays on the host
    return nullptr;
  }
  std::shared_ptr<void> owner(memory, [keep = holding_](void* p) {
    int current = -1;
    const bool other = cudaGetDevice(&current) == cudaSuccess && current != keep->device;
    if (other) HAZEFREE_CUDA_CHECK_NOTHROW(cudaSetDevice(keep->device));
    HAZEFREE_CUDA_CHECK_NOTHROW(cudaFreeAsync(p, keep->stream.get()));
    if (other) HAZEFREE_CUDA_CHECK_NOTHROW(cudaSetDevice(current));
  });
  ImageView held = make_view(frame.format, frame.width, frame.height, static_cast<std::uint8_t*>(memory), kDeviceRowAlign, frame.depth);
  held.matrix = frame.matrix;
  held.range = frame.range;
  std::optional<ImageView> staged;
  if (where.type == cudaMemoryTypeUnregistered && !holding.staging_refused) {
    staged = stage_pageable(frame, holding.staging);
    holding.staging_refused = !staged;
  }
  // An NVDEC picture was copied out on the legacy default stream, which ours do not wait for.
  if (decoded_on_device) HAZEFREE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  copy_frame_async(staged ? *staged : frame, held, staged ? cudaMemcpyHostToDevice : cudaMemcpyDefault, s);
  holding.stream.synchronize();  // complete for every stream, and the staging buffer free again
  device_view = held;
  return owner;
}

std::array<float, 3> CudaProcessor::atmospheric_estimate() const {
  select_device();
  if (config_.mode != Mode::dcp) return {0.f, 0.f, 0.f};
  for (auto& lane : lanes_) lane->stream.synchronize();
  AtmosphereState s{};
  HAZEFREE_CUDA_CHECK(cudaMemcpy(&s, state_->tracker.get(), sizeof(s), cudaMemcpyDeviceToHost));
  return {s.estimate[0], s.estimate[1], s.estimate[2]};
}

}  // namespace cuda

bool cuda_available(std::string* why_not) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    if (why_not)
      *why_not = error != cudaSuccess ? std::string("no usable CUDA driver or GPU (") +
                                            cudaGetErrorName(error) + ")"
                                      : std::string("no CUDA GPU found");
    cudaGetLastError();
    return false;
  }
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    if (why_not) *why_not = "cannot query the CUDA device";
    cudaGetLastError();
    return false;
  }
  // The kernels are built for compute capability 9.0 (with PTX for later GPUs).
  if (prop.major < 9) {
    if (why_not)
      *why_not = std::string(prop.name) + " has compute capability " + std::to_string(prop.major) +
                 "." + std::to_string(prop.minor) + "; this build needs 9.0 or later";
    return false;
  }
  return true;
}

std::string gpu_name() {
  int count = 0;
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return prop.name;
}

std::unique_ptr<FrameProcessor> make_cuda_processor(const ProcessingConfig& config) {
  return std::make_unique<cuda::CudaProcessor>(config, 2);
}

}  // namespace hazefree
