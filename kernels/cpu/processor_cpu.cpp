// The CPU backend: dispatches a frame to the algorithm chain of the configured mode.
#include <omp.h>

#include <fmt/format.h>

#include "kernels/dehaze.hpp"
#include "kernels/equalize.hpp"
#include "kernels/processor.hpp"
#include "kernels/rgb_output.hpp"

namespace hazefree {
namespace {

int resolve_threads(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

class CpuProcessor final : public FrameProcessor {
 public:
  explicit CpuProcessor(const ProcessingConfig& config)
      : config_(config), threads_(resolve_threads(config.threads)) {
    validate(config_);
    switch (config_.mode) {
      case Mode::dcp: dehazer_ = std::make_unique<cpu::Dehazer>(config_.dcp, threads_); break;
      case Mode::he:
        he_ = std::make_unique<cpu::HistogramEqualizer>(config_.he, config_.color, threads_);
        break;
      case Mode::ahe:
        ahe_ = std::make_unique<cpu::AdaptiveEqualizer>(config_.ahe, config_.color, threads_);
        break;
    }
  }

  void process(const ImageView& in, ImageView& out) override {
    if (dehazer_) dehazer_->process(in, out);
    else if (he_) he_->process(in, out);
    else ahe_->process(in, out);
  }

  void process_to_rgb(const ImageView& in, const ImageView& rgb) override {
    check_rgb_output(in, rgb);
    shape_scratch(in);
    ImageView processed = scratch_.view();
    process(in, processed);
    cpu::frame_to_interleaved_rgb(processed, rgb, threads_);
  }

  void reset() override {
    if (dehazer_) dehazer_->reset();
    if (he_) he_->reset();
  }

  std::string description() const override {
    return threads_ == 1 ? std::string("cpu (sequential)") : fmt::format("cpu ({} threads)", threads_);
  }

  std::array<float, 3> atmospheric_light() const override {
    return dehazer_ ? dehazer_->atmospheric_light() : std::array<float, 3>{0.f, 0.f, 0.f};
  }

  DehazeStats dehaze_stats(int) const override {
    if (!dehazer_ || !dehazer_->has_atmospheric_light()) return {};
    return {true, dehazer_->haze_index(), dehazer_->omega_used(), dehazer_->atmospheric_light()};
  }

  std::vector<StageTime> stage_times() const override {
    return dehazer_ ? dehazer_->stage_times() : std::vector<StageTime>{};
  }

  TemporalState temporal_state() const override {
    TemporalState state;
    if (dehazer_) {
      state.has_light = dehazer_->has_atmospheric_light();
      if (state.has_light) {
        state.light = dehazer_->atmospheric_light();
        state.haze = dehazer_->haze_index();
      }
    } else if (he_) {
      state = he_->history();
    }
    return state;
  }

  void set_temporal_state(const TemporalState& state) override {
    if (dehazer_) dehazer_->set_atmospheric_light(state.has_light, state.light, state.haze);
    else if (he_) he_->set_history(state);
  }

  // DCP: steps 1 to 3 only. HE: the frame is equalized into a scratch image for its histograms
  // (the cheap part of HE is the histogram itself); the history is put back as it was.
  FrameEstimate estimate(const ImageView& in) override {
    FrameEstimate e;
    if (dehazer_) {
      e.light = dehazer_->estimate(in);
      e.haze = dehazer_->haze_estimate();
    } else if (he_) {
      shape_scratch(in);
      const TemporalState before = he_->history();
      he_->process(in, scratch_.view());
      e = he_->last_histograms();
      he_->set_history(before);
    }
    return e;
  }

 private:
  // scratch_ shaped as `in`, with its matrix and range.
  void shape_scratch(const ImageView& in) {
    if (scratch_.view().format != in.format || scratch_.view().width != in.width ||
        scratch_.view().height != in.height || scratch_.view().depth != in.depth)
      scratch_ = Image(in.format, in.width, in.height, 64, in.depth);
    scratch_.view().matrix = in.matrix;
    scratch_.view().range = in.range;
  }

  ProcessingConfig config_;
  int threads_;
  std::unique_ptr<cpu::Dehazer> dehazer_;
  std::unique_ptr<cpu::HistogramEqualizer> he_;
  std::unique_ptr<cpu::AdaptiveEqualizer> ahe_;
  Image scratch_;
};

}  // namespace

std::unique_ptr<FrameProcessor> make_cpu_processor(const ProcessingConfig& config) {
  return std::make_unique<CpuProcessor>(config);
}

}  // namespace hazefree
