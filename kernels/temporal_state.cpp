#include "kernels/temporal_state.hpp"

#include <stdexcept>

#include "kernels/dcp_rules.hpp"
#include "kernels/equalize_rules.hpp"

namespace hazefree {
namespace {

// One histogram's step; a histogram missing from the estimate leaves its history as it is (the
// colour mode does not equalize that channel).
void step_history(float a, const std::vector<std::uint32_t>& histogram, std::vector<float>& history) {
  if (histogram.empty()) return;
  const bool has_previous = !history.empty();
  if (has_previous && history.size() != histogram.size())
    throw std::invalid_argument("temporal state: a histogram of " + std::to_string(histogram.size()) +
                                " bins after one of " + std::to_string(history.size()));
  history.resize(histogram.size());
  for (std::size_t i = 0; i < histogram.size(); ++i)
    history[i] = equalize_rules::he_history_step(has_previous, a, histogram[i], history[i]);
}

}  // namespace

bool carries_temporal_state(const ProcessingConfig& config) {
  return config.mode == Mode::dcp || (config.mode == Mode::he && config.he.temporal < 1.f);
}

void advance_temporal_state(const ProcessingConfig& config, const FrameEstimate& estimate, TemporalState& state) {
  if (config.mode == Mode::dcp) {
    const DcpParams& p = config.dcp;
    const bool cut = dcp::next_atmospheric_light(state.has_light, state.light.data(), estimate.light.data(),
                                                 p.a_smoothing, p.a_max_step, p.a_scene_cut);
    state.haze = dcp::next_haze_index(cut, state.haze, estimate.haze);  // a cut or the first frame
    state.has_light = true;
  } else if (config.mode == Mode::he && config.he.temporal < 1.f) {
    for (int c = 0; c < 3; ++c)
      step_history(config.he.temporal, estimate.channel_histograms[c], state.channel_history[c]);
    step_history(config.he.temporal, estimate.bits_histogram, state.bits_history);
  }
}

}  // namespace hazefree

// ---- FrameProcessor's defaults: backends that cannot start a stream part-way say so ----------

#include "kernels/processor.hpp"

namespace hazefree {

TemporalState FrameProcessor::temporal_state() const {
  throw std::logic_error(description() + ": cannot give its temporal state");
}

void FrameProcessor::set_temporal_state(const TemporalState&) {
  throw std::logic_error(description() + ": cannot start from a given temporal state");
}

FrameEstimate FrameProcessor::estimate(const ImageView&) {
  throw std::logic_error(description() + ": cannot estimate a frame's contribution to the temporal state");
}

void FrameProcessor::process_to_rgb(const ImageView&, const ImageView&) {
  throw std::logic_error(description() + ": has no RGB output");
}

}  // namespace hazefree
