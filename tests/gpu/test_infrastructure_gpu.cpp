// The CUDA backend's plumbing: error reporting, availability, stage times, the device graph.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "gpu/gpu_test_util.hpp"
#include "kernels/cuda/cuda_bench.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_processor.hpp"
#include "kernels/cuda/dehaze_cuda.hpp"
#include "kernels/processor.hpp"

namespace hazefree {

TEST_CASE("CUDA errors name the expression, the place and the error") {
  std::string message;
  try {
    HAZEFREE_CUDA_CHECK(cudaSetDevice(100000));
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK(message.find("cudaSetDevice(100000)") != std::string::npos);
  CHECK(message.find("cudaErrorInvalidDevice") != std::string::npos);
  CHECK(message.find("test_infrastructure_gpu.cpp:") != std::string::npos);
  cudaGetLastError();
}

TEST_CASE("the backend reports itself and its stage times") {
  std::string why;
  REQUIRE(cuda_available(&why));
  for (const Mode mode : {Mode::dcp, Mode::he, Mode::ahe}) {
    ProcessingConfig c;
    c.mode = mode;
    auto p = make_cuda_processor(c);
    CHECK(p->description().rfind("cuda (", 0) == 0);
    Image in = gpu_test::make_image(PixelFormat::nv12, 64, 48);
    gpu_test::fill_smooth(in.view(), 3);
    Image out = gpu_test::make_image(PixelFormat::nv12, 64, 48);
    p->process(in.view(), out.view());
    const std::vector<StageTime> t = p->stage_times();
    REQUIRE(t.size() >= 3);
    CHECK(t.front().name == "upload");
    CHECK(t.back().name == "download");
    for (const StageTime& s : t) CHECK(s.ms >= 0.0);
  }
}

TEST_CASE("invalid parameters are refused at construction") {
  ProcessingConfig c;
  c.dcp.t0 = 0.f;
  CHECK_THROWS_AS(make_cuda_processor(c), std::invalid_argument);
  ProcessingConfig e;
  e.mode = Mode::ahe;
  e.color = ColorMode::rgb_bits;
  CHECK_THROWS_AS(make_cuda_processor(e), std::invalid_argument);
}

TEST_CASE("the graph replay of the device chain equals plain launches") {
  for (const Mode mode : {Mode::dcp, Mode::he, Mode::ahe}) {
    ProcessingConfig c;
    c.mode = mode;
    cuda::CudaProcessor a(c, 1), b(c, 1);
    const int w = 333, h = 197;
    Image host = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    gpu_test::fill_smooth(host.view(), 11);
    Image out_a = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    Image out_b = gpu_test::make_image(PixelFormat::yuv420p, w, h);
    for (cuda::CudaProcessor* p : {&a, &b}) {
      const ImageView d_in = p->device_input(0, PixelFormat::yuv420p, w, h, ColorMatrix::bt601, ColorRange::limited);
      for (int i = 0; i < d_in.plane_count; ++i)
        HAZEFREE_CUDA_CHECK(cudaMemcpy2D(d_in.planes[i].data, d_in.planes[i].stride, host.view().planes[i].data,
                                         host.view().planes[i].stride, d_in.planes[i].width, d_in.planes[i].height,
                                         cudaMemcpyHostToDevice));
    }
    for (int i = 0; i < 3; ++i) {
      a.enqueue_device(0);
      b.launch_device_graph(0);
    }
    HAZEFREE_CUDA_CHECK(cudaDeviceSynchronize());
    const ImageView da = a.device_output(0), db = b.device_output(0);
    for (int i = 0; i < da.plane_count; ++i) {
      HAZEFREE_CUDA_CHECK(cudaMemcpy2D(out_a.view().planes[i].data, out_a.view().planes[i].stride, da.planes[i].data,
                                       da.planes[i].stride, da.planes[i].width, da.planes[i].height,
                                       cudaMemcpyDeviceToHost));
      HAZEFREE_CUDA_CHECK(cudaMemcpy2D(out_b.view().planes[i].data, out_b.view().planes[i].stride, db.planes[i].data,
                                       db.planes[i].stride, db.planes[i].width, db.planes[i].height,
                                       cudaMemcpyDeviceToHost));
    }
    INFO(to_string(mode));
    CHECK(gpu_test::compare(out_a.view(), out_b.view()).differing == 0);
  }
}

TEST_CASE("the kernel benchmark runs and reports every stage") {
  ProcessingConfig c;
  const cuda::CudaBenchResult r = cuda::bench_cuda_chain(c, PixelFormat::yuv420p, 320, 240, 5, 2);
  CHECK(r.chain_ms > 0.0);
  CHECK(r.stream_ms > 0.0);
  CHECK(r.stages.size() == cuda::CudaDehazer::stage_names().size());
  CHECK(!r.gpu.empty());
}

}  // namespace hazefree
