// The CPU backend: dispatches a frame to the algorithm chain of the configured mode.
#include <omp.h>

#include <fmt/format.h>

#include "kernels/dehaze.hpp"
#include "kernels/equalize.hpp"
#include "kernels/processor.hpp"

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

  std::vector<StageTime> stage_times() const override {
    return dehazer_ ? dehazer_->stage_times() : std::vector<StageTime>{};
  }

 private:
  ProcessingConfig config_;
  int threads_;
  std::unique_ptr<cpu::Dehazer> dehazer_;
  std::unique_ptr<cpu::HistogramEqualizer> he_;
  std::unique_ptr<cpu::AdaptiveEqualizer> ahe_;
};

}  // namespace

std::unique_ptr<FrameProcessor> make_cpu_processor(const ProcessingConfig& config) {
  return std::make_unique<CpuProcessor>(config);
}

}  // namespace hazefree
