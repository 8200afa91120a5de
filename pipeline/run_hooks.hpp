// The hooks of a run: what a program that runs the pipeline (a job's chunk, the library, the
// service) hands it besides the user's settings (RunOptions), to watch it, tune it, stop it, or
// start it from a state of its own. None is a setting: none is read from a preset or the command
// line, and a run without hooks (RunOptions::hooks left as it is) is the plain run.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/temporal_state.hpp"

namespace hazefree {

class BufferCache;
class FrameProcessor;
class StartStateGate;

// The counters of a run after a frame written (RunHooks::on_frame_written).
struct FrameWritten {
  std::int64_t frames = 0;           // frames written
  std::int64_t expected_frames = 0;  // from the container, 0 when unknown
  std::int64_t frames_dropped = 0;   // --live: dropped when processing fell behind
  int reconnects = 0;
  double seconds_lost = 0.0;
  double latency_seconds = 0.0;      // of this frame, decoded -> encoded
  std::array<float, 3> atmospheric_light{};  // DCP's, sampled about once a second (sample_atmospheric_light)
  // DCP (SPEC 13): the last frame's haze index and the omega it was dehazed with (-1 outside DCP).
  float haze_index = -1.f;
  float omega = -1.f;
};

struct RunHooks {
  // A job's chunk starts from this temporal state (the single run's at its first frame) instead
  // of a fresh stream's; applied once the backend is settled.
  std::optional<TemporalState> start_state;
  // A job's chunk run in the runner's own process (jobs/local_runner.cpp): its start state is
  // known only once the earlier chunks are analysed, so the first frame's processing waits at
  // this gate (pipeline/pipeline.hpp) while up to `hold_frames` decoded frames wait in memory.
  std::shared_ptr<StartStateGate> start_gate;
  std::int64_t hold_frames = 0;
  // The fused analysis: every decoded frame's estimate (FrameProcessor::estimate) is taken by
  // `estimator` (a processor of its own, in a thread of its own) before the frame is processed,
  // and all of them are handed to `publish_estimates` when the input ends, while the chunk may
  // still be waiting or encoding: each frame is decoded once for both.
  FrameProcessor* estimator = nullptr;
  std::function<void(std::vector<FrameEstimate>&&)> publish_estimates;
  // Where the frame pools' buffers come from and go back to, when they should outlive the run
  // (a job's worker, chunk after chunk): the held frames' plain memory, the lanes' page-locked.
  std::shared_ptr<BufferCache> held_buffers;
  std::shared_ptr<BufferCache> pinned_buffers;
  // For programs that run the pipeline through the library (include/hazefree): called by the
  // encoder thread after each frame written with the run's counters so far; and a flag that,
  // once true, stops the run as a stop request does (drain, flush, trailer).
  std::function<void(const FrameWritten&)> on_frame_written;
  // Whether FrameWritten carries DCP's atmospheric light: reading it waits for the GPU's lanes,
  // so only a run whose watcher shows it (the library's progress) samples it, once a second.
  bool sample_atmospheric_light = false;
  const std::atomic<bool>* stop = nullptr;
  // For programs that watch and tune a live run (the service): called by the processing stage
  // after each frame with its input (an empty view when the picture stays on the GPU) and its
  // result, both valid during the call only; and before each frame, where a configuration it
  // returns applies from that frame on (a new processor, whose temporal state starts afresh as
  // at a scene cut; input and output go on).
  std::function<void(const ImageView& input, const ImageView& output)> on_frame_processed;
  std::function<std::optional<ProcessingConfig>()> processing_change;
  // Called once, on the processing stage's thread, when every frame is processed and the run
  // will not use its processor or estimator again: only the encoder's last frames and the
  // output's trailer remain (a job's worker starts its next chunk, on the same processors, while
  // they finish). Not called when the run fails before that.
  std::function<void()> on_processing_done;
  // A job's chunk after -ss: the input pts (its video's own clock and time base) of the span's
  // first picture, where the joined output starts at zero, so that the chunk's --stats lines give
  // each frame's time in the joined output, as the single run's give it in its own (which
  // starts at its first frame).
  std::optional<std::int64_t> output_zero_pts;
};

}  // namespace hazefree
