#include "pipeline/processor_factory.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace hazefree {

std::unique_ptr<FrameProcessor> create_processor(const ProcessingConfig& config, bool verbose) {
  if (config.backend == Backend::cpu) return make_cpu_processor(config);
  std::string why;
  if (config.backend == Backend::cuda) {
    if (!cuda_available(&why)) throw std::runtime_error("--backend cuda: " + why);
    return make_cuda_processor(config);
  }
  if (cuda_available(&why)) {
    try {
      return make_cuda_processor(config);
    } catch (const std::exception& e) {
      fmt::print(stderr, "hazefree: warning: CUDA backend failed to start ({}); using the CPU backend\n", e.what());
      return make_cpu_processor(config);
    }
  }
  if (verbose) fmt::print(stderr, "hazefree: no usable GPU ({}); using the CPU backend\n", why);
  return make_cpu_processor(config);
}

}  // namespace hazefree
