// One process, two CUDA contexts: the runtime's primary context and one a library makes for
// itself (GStreamer's CUDA memory comes in such a context). Settings that belong to a context,
// such as a kernel's raised shared-memory limit, must be made in each of them.
#include <doctest/doctest.h>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <memory>
#include <string>

#include "gpu/gpu_test_util.hpp"
#include "kernels/processor.hpp"

namespace hazefree {
namespace {

// The driver's context functions, found through the runtime (the tests do not link libcuda).
struct DriverContexts {
  PFN_cuCtxCreate_v3020 create = nullptr;
  PFN_cuCtxDestroy_v4000 destroy = nullptr;
  PFN_cuCtxPushCurrent_v4000 push = nullptr;
  PFN_cuCtxPopCurrent_v4000 pop = nullptr;
  PFN_cuDeviceGet_v2000 device = nullptr;

  DriverContexts() {
    find("cuCtxCreate", 3020, create);
    find("cuCtxDestroy", 4000, destroy);
    find("cuCtxPushCurrent", 4000, push);
    find("cuCtxPopCurrent", 4000, pop);
    find("cuDeviceGet", 2000, device);
  }
  template <typename F>
  static void find(const char* name, unsigned version, F& function) {
    void* pointer = nullptr;
    cudaDriverEntryPointQueryResult status{};
    REQUIRE_MESSAGE(cudaGetDriverEntryPointByVersion(name, &pointer, version, cudaEnableDefault, &status) ==
                        cudaSuccess,
                    name);
    REQUIRE_MESSAGE(status == cudaDriverEntryPointSuccess, name);
    function = reinterpret_cast<F>(pointer);
  }
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

}  // namespace

TEST_CASE("DCP runs in a second CUDA context of the same process and gives the primary context's frame") {
  std::string why;
  REQUIRE_MESSAGE(cuda_available(&why), why);
  Image in = gpu_test::make_image(PixelFormat::yuv420p, 320, 240);
  gpu_test::fill_smooth(in.view(), gpu_test::fresh_seed());

  // First in the primary context, so that a setting made once per process would be made there.
  const Image primary = dehaze(in.view());

  DriverContexts driver;
  int runtime_device = 0;
  REQUIRE(cudaGetDevice(&runtime_device) == cudaSuccess);
  CUdevice device{};
  REQUIRE(driver.device(&device, runtime_device) == CUDA_SUCCESS);
  CUcontext own = nullptr;
  REQUIRE(driver.create(&own, 0, device) == CUDA_SUCCESS);  // made current on this thread
  std::string failure;
  Image second;
  try {
    second = dehaze(in.view());
  } catch (const std::exception& e) {
    failure = e.what();
  }
  CUcontext popped = nullptr;
  CHECK(driver.pop(&popped) == CUDA_SUCCESS);
  CHECK(popped == own);
  CHECK(driver.destroy(own) == CUDA_SUCCESS);

  REQUIRE_MESSAGE(failure.empty(), failure);
  const gpu_test::FrameDiff diff = gpu_test::compare(primary.view(), second.view());
  CHECK_MESSAGE(diff.differing == 0, diff.text());
}

}  // namespace hazefree
