// The state one frame of a stream hands to the next (SPEC 3 step 4: the atmospheric light; SPEC 4:
// the he_temporal histograms), and what each frame contributes to it. A job starts a stream
// part-way through (SPEC 8): its analysis records each frame's contribution, and a chunk's render
// scans all earlier ones with advance_temporal_state(), which applies the very rule functions the
// backends apply per frame (dcp::next_atmospheric_light, rules::he_history_step), so a chunk
// starts from exactly the state the single run has there.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/params.hpp"

namespace hazefree {

// One frame's contribution to the state; it does not depend on the state.
struct FrameEstimate {
  std::array<float, 3> light{0.f, 0.f, 0.f};  // DCP: the estimate A^_n of step 3
  float haze = 0.f;                           // DCP: the raw haze index h^_n (SPEC 13)
  // HE with he_temporal < 1: the integer histogram of each equalized channel (2^d bins at depth
  // d: 256 at 8 bits, 1024 at 10, ...; empty for a channel the colour mode does not equalize), or
  // of the BITS index (4096 bins, 8-bit frames only).
  std::array<std::vector<std::uint32_t>, 3> channel_histograms;
  std::vector<std::uint32_t> bits_histogram;
};

// The state after a frame: what the next frame starts from.
struct TemporalState {
  bool has_light = false;                     // false: the next frame is a stream's first
  std::array<float, 3> light{0.f, 0.f, 0.f};  // DCP: A_n
  float haze = 0.f;                           // DCP: the haze index h_n (SPEC 13)
  std::array<std::vector<float>, 3> channel_history;  // HE: H_n per channel, 2^d bins (empty: none yet)
  std::vector<float> bits_history;                    // HE rgb-bits: H_n (empty: none yet)
};

// Whether frames of this configuration carry state to the next (DCP always; HE with
// he_temporal < 1; AHE never): only then does a job need the analysis pass.
bool carries_temporal_state(const ProcessingConfig& config);

// The state after a frame with `estimate`, from the state before it.
void advance_temporal_state(const ProcessingConfig& config, const FrameEstimate& estimate, TemporalState& state);

}  // namespace hazefree
