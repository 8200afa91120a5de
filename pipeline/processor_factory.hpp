// Chooses the backend: `cuda` must work or the run fails; `auto` takes CUDA when a usable GPU is
// present and falls back to the CPU with a warning when it cannot start.
#pragma once

#include <memory>

#include "kernels/processor.hpp"

namespace hazefree {

std::unique_ptr<FrameProcessor> create_processor(const ProcessingConfig& config, bool verbose);

}  // namespace hazefree
