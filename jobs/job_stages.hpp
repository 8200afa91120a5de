// The stages of a job (SPEC 8) as functions: each is one task a scheduler can run, reads the plan
// from DIR and writes only its own results there (under temporary names, renamed at the end).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jobs/job_plan.hpp"
#include "kernels/processor.hpp"
#include "pipeline/pipeline.hpp"

namespace hazefree::jobs {

struct StageOptions {
  bool quiet = false;
  bool verbose = false;
};

// Per-frame estimates of task `task` (only what the mode's temporal state needs; nothing for
// modes without state or for an input's last chunk, which no later chunk depends on).
void analyze_task(const std::string& dir, int task, const StageOptions& options);

// Task `task`'s chunk, encoded, from the temporal state the single run has at its first frame
// (scanned from the earlier chunks' estimates with advance_temporal_state()).
void render_task(const std::string& dir, int task, const StageOptions& options);

// Joins the chunks of input `input` (-1: every input) into its output: video stream-copied in
// order, the source's other streams copied once. Refuses missing, failed or stale chunks.
// `rendered(task)`, where given, is called before each chunk is read and returns once its render
// is done (the local runner joins beside the renders still running); JobInterrupted from it
// stops the join, recorded as interrupted.
void join_outputs(const std::string& dir, int input, const StageOptions& options,
                  const std::function<void(int task)>& rendered = {});

// ---- the pieces of the stages, for the local runner's workers (jobs/local_runner.cpp) ----

// DIR/analysis/task-K.bin: task K's per-frame estimates (empty: nothing depends on them), and
// reading them back (checked against this plan and chunk; JobError naming the fix otherwise).
void save_analysis(const std::string& dir, const Plan& plan, int task, const std::vector<FrameEstimate>& estimates);
std::vector<FrameEstimate> load_analysis(const std::string& dir, const Plan& plan, int task);
// The processor whose estimate() gives the mode's per-frame estimates: the rendering backend
// for DCP's A^, the CPU for HE's integer histograms.
std::unique_ptr<FrameProcessor> make_estimator(const ProcessingConfig& processing, bool verbose);
// Task `task`'s estimates from a decoding pass of its own (on the CPU); stops at `stop`.
std::vector<FrameEstimate> estimate_chunk(const std::string& dir, const Plan& plan, int task, FrameProcessor& estimator,
                                          const std::atomic<bool>* stop);
// The state at task's first frame, scanned from the analysis files of its input's earlier chunks.
TemporalState start_state_from_files(const std::string& dir, const Plan& plan, int task);
// The run of task `task`'s chunk (its frames, its output file in DIR, the run's settings).
RunOptions chunk_render_options(const std::string& dir, const Plan& plan, int task, bool verbose);
// Throws (and removes the chunk file) when the run was interrupted or gave other frames.
void check_chunk_rendered(const std::string& dir, const Plan& plan, int task, const RunSummary& summary);
// JobError when the input changed since the plan (its size or modification time): its frames
// may be others.
void check_input_unchanged(const std::string& dir, const InputPlan& in);

// Done / running / failed / missing per task and stage, as text or JSON.
std::string job_status(const std::string& dir, bool as_json);

// True when every task and join of the plan is done for this plan.
bool job_complete(const std::string& dir);

}  // namespace hazefree::jobs
