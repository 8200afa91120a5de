// Global HE and sliding-window AHE/CLAHE on the CPU (SPEC 4): the oracle of the CUDA backend.
#pragma once

#include <memory>

#include "kernels/image.hpp"
#include "kernels/params.hpp"

namespace hazefree::cpu {

class HistogramEqualizer {
 public:
  HistogramEqualizer(const HeParams& params, ColorMode color, int threads);
  ~HistogramEqualizer();
  HistogramEqualizer(HistogramEqualizer&&) noexcept;
  HistogramEqualizer& operator=(HistogramEqualizer&&) noexcept;
  void process(const ImageView& in, ImageView& out);
  void reset();  // forget the he_temporal history

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class AdaptiveEqualizer {
 public:
  AdaptiveEqualizer(const AheParams& params, ColorMode color, int threads);
  ~AdaptiveEqualizer();
  AdaptiveEqualizer(AdaptiveEqualizer&&) noexcept;
  AdaptiveEqualizer& operator=(AdaptiveEqualizer&&) noexcept;
  void process(const ImageView& in, ImageView& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hazefree::cpu
