#include "pipeline/processor_factory.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "io/logging.hpp"
#include "io/media_reader.hpp"

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
      io::warning(fmt::format("CUDA backend failed to start ({}); using the CPU backend", e.what()));
      return make_cpu_processor(config);
    }
  }
  if (verbose) fmt::print(stderr, "hazefree: no usable GPU ({}); using the CPU backend\n", why);
  return make_cpu_processor(config);
}

namespace {

class Borrowed final : public FrameProcessor {
 public:
  explicit Borrowed(FrameProcessor& p) : p_(p) {}
  void process(const ImageView& in, ImageView& out) override { p_.process(in, out); }
  void reset() override { p_.reset(); }
  std::string description() const override { return p_.description(); }
  std::array<float, 3> atmospheric_light() const override { return p_.atmospheric_light(); }
  DehazeStats dehaze_stats(int lane) const override { return p_.dehaze_stats(lane); }
  std::vector<StageTime> stage_times() const override { return p_.stage_times(); }
  void process_to_rgb(const ImageView& in, const ImageView& rgb) override { p_.process_to_rgb(in, rgb); }
  int lanes() const override { return p_.lanes(); }
  void enqueue(int lane, const ImageView& in, const ImageView& out) override { p_.enqueue(lane, in, out); }
  void wait(int lane) override { p_.wait(lane); }
  TemporalState temporal_state() const override { return p_.temporal_state(); }
  void set_temporal_state(const TemporalState& state) override { p_.set_temporal_state(state); }
  FrameEstimate estimate(const ImageView& in) override { return p_.estimate(in); }
  std::shared_ptr<void> hold_on_device(const ImageView& frame, ImageView& device_view) override {
    return p_.hold_on_device(frame, device_view);
  }

 private:
  FrameProcessor& p_;
};

}  // namespace

void prepare_gpu_for_run(const RunOptions& options) {
  if (options.processing.backend == Backend::cpu) return;
  const char* wait = std::getenv("HAZEFREE_GPU_WAIT");
  const bool spin = wait && std::string(wait) == "spin";
  // FFmpeg's CUDA context for NVDEC is made with blocking synchronisation: it sets both.
  if (spin) return;
  if (options.input_options.hwdec == "cuda") {
    try {
      io::prepare_gpu_decoding(options.input_options.hwdec_device);
    } catch (const io::IoError&) {
      // The reader meets the same failure when it opens the input, and reports it naming it.
    }
  } else {
    use_blocking_gpu_waits();
  }
}

std::unique_ptr<FrameProcessor> borrow_processor(FrameProcessor& processor) {
  return std::make_unique<Borrowed>(processor);
}

}  // namespace hazefree
