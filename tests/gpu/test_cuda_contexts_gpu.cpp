// One process, two CUDA contexts: the runtime's primary context and one a library makes for
// itself (GStreamer's CUDA memory comes in such a context). Settings that belong to a context,
// such as a kernel's raised shared-memory limit (kernels/cuda/cuda_context.hpp), must be made
// in each of them: DCP (the fused tile kernel, and the atmospheric light's selection, which takes
// the raised limit from 4K on) and AHE at depth run in both, in turn, against the CPU backend.
#include <doctest/doctest.h>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "gpu/gpu_test_util.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/processor.hpp"
#include "support/sample_access.hpp"

namespace hazefree {
namespace {

// A context of the driver's on the runtime's current device, made current on this thread only
// while run() runs (the primary context stays current otherwise), destroyed at the end.
class CreatedContext {
 public:
  CreatedContext() {
    int runtime_device = 0;
    REQUIRE(cudaGetDevice(&runtime_device) == cudaSuccess);
    CUdevice device{};
    REQUIRE(device_get_(&device, runtime_device) == CUDA_SUCCESS);
    REQUIRE(create_(&context_, 0, device) == CUDA_SUCCESS);  // made current on this thread
    CUcontext popped = nullptr;
    REQUIRE(pop_(&popped) == CUDA_SUCCESS);
  }
  ~CreatedContext() { CHECK(destroy_(context_) == CUDA_SUCCESS); }
  CreatedContext(const CreatedContext&) = delete;
  CreatedContext& operator=(const CreatedContext&) = delete;

  // Runs `work` with this context current; the message of what it threw, empty if nothing.
  template <typename Work>
  std::string run(Work&& work) {
    REQUIRE(push_(context_) == CUDA_SUCCESS);
    std::string failure;
    try {
      work();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    CUcontext popped = nullptr;
    CHECK(pop_(&popped) == CUDA_SUCCESS);
    CHECK(popped == context_);
    return failure;
  }

 private:
  const PFN_cuCtxCreate_v3020 create_ = cuda::driver_function<PFN_cuCtxCreate_v3020>("cuCtxCreate", 3020);
  const PFN_cuCtxDestroy_v4000 destroy_ = cuda::driver_function<PFN_cuCtxDestroy_v4000>("cuCtxDestroy", 4000);
  const PFN_cuCtxPushCurrent_v4000 push_ = cuda::driver_function<PFN_cuCtxPushCurrent_v4000>("cuCtxPushCurrent", 4000);
  const PFN_cuCtxPopCurrent_v4000 pop_ = cuda::driver_function<PFN_cuCtxPopCurrent_v4000>("cuCtxPopCurrent", 4000);
  const PFN_cuDeviceGet_v2000 device_get_ = cuda::driver_function<PFN_cuDeviceGet_v2000>("cuDeviceGet", 2000);
  CUcontext context_ = nullptr;
};

// DCP of `in` by a processor made and run in whatever context is current.
Image dehaze(const ImageView& in) {
  ProcessingConfig config;
  config.mode = Mode::dcp;
  std::unique_ptr<FrameProcessor> processor = make_cuda_processor(config);
  Image out = gpu_test::make_image(in.format, in.width, in.height);
  processor->process(in, out.view());
  return out;
}

// Smooth haze-like codes at the frame's depth (a ramp, a bright region, mild noise).
void fill_at_depth(const ImageView& v, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const double scale = std::ldexp(1.0, v.depth - 8);
  for (int p = 0; p < v.plane_count; ++p)
    for (int y = 0; y < v.planes[p].height; ++y)
      for (int i = 0; i < samples::row_samples(v, p); ++i) {
        double value = 90.0 + 60.0 * std::sin(0.013 * i + 0.4 * p) * std::cos(0.011 * y);
        const double dx = i - v.planes[p].width * 0.7, dy = y - v.planes[p].height * 0.2;
        if (dx * dx + dy * dy < 0.02 * v.planes[p].width * v.planes[p].width) value += 80.0;
        value = value * scale + static_cast<int>(rng() % 9) - 4;
        samples::set_sample(v, p, i, y, std::clamp(static_cast<int>(value), 0, max_code(v.depth)));
      }
}

struct DepthFrames {
  Image dcp, ahe;
  std::array<float, 3> light{};
};

// DCP at 10 bits (4K) and CLAHE at 12 bits (1080p, window 63) by processors made and run in
// whatever context is current.
DepthFrames run_at_depth(const ImageView& dcp_in, const ImageView& ahe_in, bool on_gpu) {
  const ProcessingConfig dcp = gpu_test::dcp_config();
  const ProcessingConfig ahe = gpu_test::ahe_config(ColorMode::luma, 63, 2.f);
  DepthFrames out;
  out.dcp = Image(dcp_in.format, dcp_in.width, dcp_in.height, 64, dcp_in.depth);
  out.ahe = Image(ahe_in.format, ahe_in.width, ahe_in.height, 64, ahe_in.depth);
  std::unique_ptr<FrameProcessor> p = on_gpu ? make_cuda_processor(dcp) : make_cpu_processor(dcp);
  p->process(dcp_in, out.dcp.view());
  out.light = p->atmospheric_light();
  std::unique_ptr<FrameProcessor> q = on_gpu ? make_cuda_processor(ahe) : make_cpu_processor(ahe);
  q->process(ahe_in, out.ahe.view());
  return out;
}

// Samples more than one code apart, samples that differ at all, and the sum of differences.
struct CodeCount {
  long long over_one = 0, differing = 0, samples = 0, sum = 0;
};
CodeCount count_codes(const ImageView& a, const ImageView& b) {
  CodeCount c;
  for (int p = 0; p < a.plane_count; ++p)
    for (int y = 0; y < a.planes[p].height; ++y)
      for (int i = 0; i < samples::row_samples(a, p); ++i) {
        const int e = std::abs(samples::sample(a, p, i, y) - samples::sample(b, p, i, y));
        c.sum += e;
        c.over_one += e > 1;
        c.differing += e != 0;
        ++c.samples;
      }
  return c;
}

}  // namespace

TEST_CASE("DCP runs in a second CUDA context of the same process and gives the primary context's frame") {
  std::string why;
  REQUIRE_MESSAGE(cuda_available(&why), why);
  Image in = gpu_test::make_image(PixelFormat::yuv420p, 320, 240);
  gpu_test::fill_smooth(in.view(), gpu_test::fresh_seed());

  // First in the primary context, so that a setting made once per process would be made there.
  const Image primary = dehaze(in.view());

  CreatedContext created;
  Image second;
  const std::string failure = created.run([&] { second = dehaze(in.view()); });
  REQUIRE_MESSAGE(failure.empty(), failure);
  const gpu_test::FrameDiff diff = gpu_test::compare(primary.view(), second.view());
  CHECK_MESSAGE(diff.differing == 0, diff.text());
}

TEST_CASE("DCP and AHE at depth in two CUDA contexts in turn give the CPU backend's frames") {
  std::string why;
  REQUIRE_MESSAGE(cuda_available(&why), why);
  if (gpu_test::skip_large(3840, 2160)) return;
  const std::uint32_t seed = gpu_test::fresh_seed();
  INFO("seed ", seed);
  Image dcp_in(PixelFormat::yuv420p, 3840, 2160, 64, 10), ahe_in(PixelFormat::yuv420p, 1920, 1080, 64, 12);
  fill_at_depth(dcp_in.view(), seed);
  fill_at_depth(ahe_in.view(), seed + 1);
  dcp_in.view().matrix = default_matrix_for_height(2160);
  ahe_in.view().matrix = default_matrix_for_height(1080);
  const DepthFrames cpu = run_at_depth(dcp_in.view(), ahe_in.view(), false);

  // As the CPU's: AHE bit for bit; DCP within one code (the float guided filter's last bits,
  // as in test_dehaze_depth_gpu.cpp) with the same atmospheric light.
  auto check = [&](const DepthFrames& gpu, const char* context) {
    INFO("context: ", context);
    CHECK(gpu.light == cpu.light);
    const CodeCount d = count_codes(cpu.dcp.view(), gpu.dcp.view());
    CHECK(d.over_one <= d.samples / 1000);
    CHECK(2 * d.sum <= d.samples);  // a mean below half a code
    CHECK(count_codes(cpu.ahe.view(), gpu.ahe.view()).differing == 0);
  };

  // The primary context first (a setting made once per process would be made there), then a
  // context of the driver's made current on this thread, then the primary one again.
  const DepthFrames primary = run_at_depth(dcp_in.view(), ahe_in.view(), true);
  check(primary, "primary");

  CreatedContext created;
  DepthFrames second;
  const std::string failure = created.run([&] { second = run_at_depth(dcp_in.view(), ahe_in.view(), true); });
  REQUIRE_MESSAGE(failure.empty(), failure);
  check(second, "created");
  CHECK(count_codes(primary.dcp.view(), second.dcp.view()).differing == 0);

  // Back in the primary context, the created one still alive.
  const DepthFrames again = run_at_depth(dcp_in.view(), ahe_in.view(), true);
  check(again, "primary again");
}

}  // namespace hazefree
