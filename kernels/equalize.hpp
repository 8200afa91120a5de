// Global HE and sliding-window AHE/CLAHE on the CPU (SPEC 4): the oracle of the CUDA backend.
#pragma once

#include <memory>

#include "common/image.hpp"
#include "common/params.hpp"
#include "kernels/temporal_state.hpp"

namespace hazefree::cpu {

class HistogramEqualizer {
 public:
  HistogramEqualizer(const HeParams& params, ColorMode color, int threads);
  ~HistogramEqualizer();
  HistogramEqualizer(HistogramEqualizer&&) noexcept;
  HistogramEqualizer& operator=(HistogramEqualizer&&) noexcept;
  void process(const ImageView& in, ImageView& out);
  void reset();  // forget the he_temporal history
  // The histograms of the last processed frame (he_temporal < 1 only; kernels/temporal_state.hpp).
  FrameEstimate last_histograms() const;
  // The he_temporal history, and for jobs a given one for the next frame.
  TemporalState history() const;
  void set_history(const TemporalState& state);

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
