// The dark channel prior chain on the CPU (SPEC 3): the oracle of the CUDA backend.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/processor.hpp"

namespace hazefree::cpu {

class Dehazer {
 public:
  Dehazer(const DcpParams& params, int threads);
  ~Dehazer();
  Dehazer(Dehazer&&) noexcept;
  Dehazer& operator=(Dehazer&&) noexcept;
  // Dehazes one frame; frames of one stream must come in order (atmospheric-light state).
  // `out` is written with the matrix and range of `in` (the stream keeps its colour description),
  // at the depth of `in` (8 to 16 bits, SPEC 7), which `out` must have: the float chain is the
  // same at every depth, the codes are normalised and rounded at the frame's own.
  void process(const ImageView& in, ImageView& out);
  void reset();
  // A_n of the last frame (zeros before the first frame).
  std::array<float, 3> atmospheric_light() const;
  // The raw estimate A^_n of the last frame, before the inter-frame constraint.
  std::array<float, 3> atmospheric_estimate() const;
  // The estimate A^ of `in` (steps 1 to 3 only), the state untouched; haze_estimate() is then
  // its raw haze index h^ (SPEC 13).
  std::array<float, 3> estimate(const ImageView& in);
  float haze_estimate() const;
  // The haze index h_n of the last frame (0 before the first) and the omega it was dehazed with
  // (omega s(h_n) with auto strength, else omega).
  float haze_index() const;
  float omega_used() const;
  // The tracker's state (has a value, A_n, h_n) and, for jobs, a given one for the next frame.
  bool has_atmospheric_light() const;
  void set_atmospheric_light(bool has_value, const std::array<float, 3>& value, float haze = 0.f);
  // Steady-clock times of the stages of the last frame.
  std::vector<StageTime> stage_times() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hazefree::cpu
