// The stages of a job (SPEC 8) as functions: each is one task a scheduler can run, reads the plan
// from DIR and writes only its own results there (under temporary names, renamed at the end).
#pragma once

#include <string>

#include "jobs/job_plan.hpp"

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
void join_outputs(const std::string& dir, int input, const StageOptions& options);

// Done / running / failed / missing per task and stage, as text or JSON.
std::string job_status(const std::string& dir, bool as_json);

// True when every task and join of the plan is done for this plan.
bool job_complete(const std::string& dir);

}  // namespace hazefree::jobs
