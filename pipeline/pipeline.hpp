// The run of one input to one output: a decoder thread, the processing stage (this thread) and
// an encoder thread, joined by bounded queues over a fixed pool of frame buffers.
//
//   decoder thread --(input queue)--> process --(output queue)--> encoder thread
//        frames from the input pool        frames from the output pool
//        packets of other streams pass along the same queues, in input order
//
// An error in any stage closes every queue and pool (no thread stays blocked) and is rethrown
// here once all threads have ended; the partial output is removed.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <string>

#include "kernels/processor.hpp"
#include "pipeline/options.hpp"

namespace hazefree {

// The state a job's chunk starts from, known once its input's earlier chunks are analysed
// (jobs/local_runner.cpp). The run's processing waits for it before its first frame.
class StartStateGate {
 public:
  virtual ~StartStateGate() = default;
  // Blocks until the state is known; throws (one line) when it never will be: an earlier chunk
  // failed, the job was stopped, or cancel() was called.
  virtual TemporalState wait() = 0;
  // Makes a wait() in progress, or to come, throw: another stage of this run failed.
  virtual void cancel() = 0;
};

struct RunSummary {
  std::int64_t frames_in = 0;      // decoded video frames
  std::int64_t frames_out = 0;     // encoded video frames
  std::int64_t frames_dropped = 0; // --live: oldest frames dropped when processing fell behind
  // The video's frame count as its header gives it (MP4, MOV, MKV with statistics), estimated
  // from the span's length with -ss/-t; 0 when unknown.
  std::int64_t frames_announced = 0;
  std::int64_t packets_copied = 0; // packets of other streams copied
  int decode_errors = 0;
  std::int64_t pictures_dropped = 0;  // decoded before the span (-ss) or a job's chunk, not delivered
  double seconds = 0.0;
  bool interrupted = false;
  std::string processor;           // "cpu (2 threads)", "cuda (...)"
  double latency_mean_ms = 0.0;    // decode -> encoded, per frame (reported with --live)
  double latency_p50_ms = 0.0;     // median (1 ms resolution)
  double latency_p95_ms = 0.0;
  double latency_max_ms = 0.0;
  // Busy time of each stage per frame (ms): where a run spends its time. A stage whose busy time
  // is close to the wall time per frame is the one that limits the throughput.
  double decode_ms = 0.0;   // demux + decode + the copy into the frame pool
  double process_ms = 0.0;  // the backend (for lanes: enqueue + wait)
  double encode_ms = 0.0;   // encode + mux
  double estimate_ms = 0.0; // a job's fused analysis (RunHooks::estimator), per frame estimated
  // Live sources that stalled, failed or ended and were reopened (SPEC 9).
  int reconnects = 0;
  double seconds_lost = 0.0;  // wall time from the last picture before each loss to the first after
  // Set when a live source was lost for good (reconnection attempts used up): the output is
  // finished and valid, and this one line says why the input ended.
  std::string input_lost;
};

// Requests a graceful stop (drain, flush, trailer) of the running pipeline; safe from a signal
// handler (it only stores atomics).
void request_stop();
bool stop_requested();
// With a signal number (one whose handler does nothing and is installed without SA_RESTART),
// request_stop() also sends it to the thread reading the input, so that a read() blocked on a
// silent pipe or socket returns and the stop does not wait for more input. 0 (the default): off.
void set_stop_wake_signal(int signal_number);
// A descriptor that becomes readable at the first stop request (poll() it beside others, as the
// local job runner does to wake the chunks waiting for their start state).
int stop_request_fd();
// Names the calling thread (at most 15 characters shown) for top, ps and debuggers: the
// pipeline's decoder, estimator and encoder threads and a job's workers are named.
void name_this_thread(const char* name);

// Runs the whole job; throws io::IoError / std::runtime_error with a one-line message.
RunSummary run_pipeline(const RunOptions& options);
// The same with a given processor (tests; a backend chosen by the caller).
RunSummary run_pipeline(const RunOptions& options, std::unique_ptr<FrameProcessor> processor);
// The same with a processor still being made: the input opens (and decodes up to its first
// picture) meanwhile, and a held chunk (hooks.hold_frames) decodes into its held frames
// (hooks.held_buffers); the options' other hooks are read only once `processor` is ready.
RunSummary run_pipeline(const RunOptions& options, std::future<std::unique_ptr<FrameProcessor>> processor);

}  // namespace hazefree
