// Chooses the backend: `cuda` must work or the run fails; `auto` takes CUDA when a usable GPU is
// present and falls back to the CPU with a warning when it cannot start.
#pragma once

#include <memory>

#include "kernels/processor.hpp"
#include "pipeline/options.hpp"

namespace hazefree {

std::unique_ptr<FrameProcessor> create_processor(const ProcessingConfig& config, bool verbose);

// A processor lent to run_pipeline(), which destroys what it is given: every call goes to
// `processor`, which outlives the run (the benchmark's, a job worker's taking chunk after chunk).
std::unique_ptr<FrameProcessor> borrow_processor(FrameProcessor& processor);

// Before a program's first CUDA work, for runs whose CPU is the limit (the encoders): threads
// waiting for the GPU sleep rather than spin (a spinning lane thread keeps a core from x264), and
// NVDEC (`--hwdec cuda`) gets the context flags it needs even when the processor starts first.
// HAZEFREE_GPU_WAIT=spin keeps CUDA's default (for measuring the difference). Throws
// nothing: where NVDEC cannot use the GPU, the reader says so when it opens the input.
void prepare_gpu_for_run(const RunOptions& options);

}  // namespace hazefree
