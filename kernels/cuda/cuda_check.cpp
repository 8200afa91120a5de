#include "kernels/cuda/cuda_check.hpp"

#include <cstdio>
#include <stdexcept>

namespace hazefree::cuda {

namespace {
std::string describe(cudaError_t error, const char* expression, const char* file, int line) {
  std::string text = "CUDA error ";
  text += cudaGetErrorName(error);
  text += " (";
  text += cudaGetErrorString(error);
  text += ") in ";
  text += expression;
  text += " at ";
  text += file;
  text += ':';
  text += std::to_string(line);
  return text;
}
}  // namespace

void throw_cuda_error(cudaError_t error, const char* expression, const char* file, int line) {
  throw std::runtime_error(describe(error, expression, file, line));
}

void report_cuda_error(cudaError_t error, const char* expression, const char* file,
                       int line) noexcept {
  try {
    std::fprintf(stderr, "hazefree: %s\n", describe(error, expression, file, line).c_str());
  } catch (...) {
    std::fprintf(stderr, "hazefree: CUDA error %d at %s:%d\n", static_cast<int>(error), file, line);
  }
}

}  // namespace hazefree::cuda
