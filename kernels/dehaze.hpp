// The dark channel prior chain on the CPU (SPEC 3): the oracle of the CUDA backend.
#pragma once

#include <array>
#include <memory>

#include "kernels/image.hpp"
#include "kernels/params.hpp"

namespace hazefree::cpu {

class Dehazer {
 public:
  Dehazer(const DcpParams& params, int threads);
  ~Dehazer();
  Dehazer(Dehazer&&) noexcept;
  Dehazer& operator=(Dehazer&&) noexcept;
  // Dehazes one frame; frames of one stream must come in order (atmospheric-light state).
  void process(const ImageView& in, ImageView& out);
  void reset();
  std::array<float, 3> atmospheric_light() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hazefree::cpu
