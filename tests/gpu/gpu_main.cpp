// The GPU test runner: doctest, except that without a usable GPU it reports one line and exits
// with 77 (ctest's SKIP_RETURN_CODE). Listing and help run without a GPU, so that ctest can
// discover the test cases on any machine.
#define DOCTEST_CONFIG_IMPLEMENT
#include <algorithm>
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.hpp"
#include "kernels/cuda/cuda_bench.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/equalize_cuda.hpp"
#include "kernels/processor.hpp"

namespace {

bool only_lists(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    while (!a.empty() && a.front() == '-') a.erase(0, 1);
    if (a.rfind("dt-", 0) == 0) a.erase(0, 3);
    for (const char* flag : {"list-test-cases", "ltc", "list-test-suites", "lts", "list-reporters",
                             "lr", "help", "h", "?", "version", "v", "count", "c"})
      if (a == flag || a.rfind(std::string(flag) + "=", 0) == 0) return true;
  }
  return false;
}

struct BenchCase {
  const char* label;
  hazefree::ProcessingConfig config;
  hazefree::PixelFormat format;
  int width, height;
  double target_ms;  // 0: no target
};

hazefree::ProcessingConfig config_of(hazefree::Mode mode, hazefree::ColorMode color, int window = 63,
                                     float clip = 0.f, int subsample = 1) {
  hazefree::ProcessingConfig c;
  c.mode = mode;
  c.color = color;
  c.ahe.window = window;
  c.ahe.clip = clip;
  c.dcp.gf_subsample = subsample;
  return c;
}

// `--bench [iterations [filter]]`: the device-resident chain of each mode at 1080p and 4K, next to the
// targets. Prints a table; exit status 0 (the figures are information, not a test).
int run_bench(int iterations, const std::string& filter) {
  using hazefree::ColorMode;
  using hazefree::Mode;
  using hazefree::PixelFormat;
  std::vector<BenchCase> cases = {
      {"dcp", config_of(Mode::dcp, ColorMode::luma), PixelFormat::yuv420p, 1920, 1080, 0.2},
      {"dcp gf_subsample=4", config_of(Mode::dcp, ColorMode::luma, 63, 0.f, 4), PixelFormat::yuv420p, 1920, 1080, 0.2},
      {"dcp", config_of(Mode::dcp, ColorMode::luma), PixelFormat::yuv420p, 3840, 2160, 0.8},
      {"dcp rgb24", config_of(Mode::dcp, ColorMode::luma), PixelFormat::rgb24, 1920, 1080, 0},
      {"he luma", config_of(Mode::he, ColorMode::luma), PixelFormat::yuv420p, 1920, 1080, 0.015},
      {"he luma", config_of(Mode::he, ColorMode::luma), PixelFormat::yuv420p, 3840, 2160, 0},
      {"he luma 8192x8192 gray", config_of(Mode::he, ColorMode::luma), PixelFormat::gray8, 8192, 8192, 0.07},
      {"he rgb", config_of(Mode::he, ColorMode::rgb), PixelFormat::yuv420p, 1920, 1080, 0},
      {"he rgb-bits", config_of(Mode::he, ColorMode::rgb_bits), PixelFormat::yuv420p, 1920, 1080, 0},
  };
  for (const int window : {31, 63, 127, 255, 511}) {
    cases.push_back({"ahe", config_of(Mode::ahe, ColorMode::luma, window), PixelFormat::yuv420p, 1920, 1080, 2.0});
    cases.push_back({"clahe clip=2", config_of(Mode::ahe, ColorMode::luma, window, 2.f), PixelFormat::yuv420p, 1920, 1080, 4.0});
  }
  cases.push_back({"ahe", config_of(Mode::ahe, ColorMode::luma, 63), PixelFormat::yuv420p, 3840, 2160, 0});
  cases.push_back({"clahe clip=2", config_of(Mode::ahe, ColorMode::luma, 511, 2.f), PixelFormat::yuv420p, 3840, 2160, 0});

  std::string gpu;
  const double gbps = hazefree::cuda::measure_device_bandwidth_gbps();
  std::printf("device copy bandwidth: %.0f GB/s (read + write); floor_ms = one frame read and one written at "
              "that rate; lane_MB = device memory of one lane (target <= 64 MB at 1080p)\n", gbps);
  std::printf("%-24s %-10s %6s %10s %10s %10s %10s %10s %9s %8s  %s\n", "case", "size", "window", "graph_ms",
              "min_ms", "stream_ms", "upload_ms", "target_ms", "floor_ms", "lane_MB", "verdict");
  for (const BenchCase& b : cases) {
    const std::string name = std::string(b.label) + " " + std::to_string(b.width) + "x" + std::to_string(b.height);
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    const hazefree::cuda::CudaBenchResult r =
        hazefree::cuda::bench_cuda_chain(b.config, b.format, b.width, b.height, iterations, 10);
    gpu = r.gpu;
    const std::string size = std::to_string(b.width) + "x" + std::to_string(b.height);
    const int window = b.config.mode == Mode::ahe ? b.config.ahe.window : 0;
    const double floor_ms = 2.0 * r.frame_bytes / (gbps * 1e9) * 1e3;
    std::printf("%-24s %-10s %6d %10.4f %10.4f %10.4f %10.4f %10.3f %9.4f %8.1f  %s\n", b.label, size.c_str(), window,
                r.chain_ms, r.chain_min_ms, r.stream_ms, r.upload_ms, b.target_ms, floor_ms,
                r.device_bytes / 1048576.0, b.target_ms <= 0 ? "-" : (r.chain_ms <= b.target_ms ? "meets" : "MISSES"));
    if (b.config.mode == Mode::dcp && b.format == PixelFormat::yuv420p && b.config.dcp.gf_subsample == 1) {
      // SPEC 13's cost: the same chain without the haze index, alternated with it so that both
      // see the same clocks; the medians of three runs each.
      std::vector<double> with, without;
      for (int k = 0; k < 3; ++k) {
        with.push_back(hazefree::cuda::bench_cuda_chain(b.config, b.format, b.width, b.height, iterations, 10).chain_ms);
        without.push_back(
            hazefree::cuda::bench_cuda_chain(b.config, b.format, b.width, b.height, iterations, 10, false).chain_ms);
      }
      std::sort(with.begin(), with.end());
      std::sort(without.begin(), without.end());
      std::printf("    haze index: graph_ms %.4f with, %.4f without: %.3fx\n", with[1], without[1], with[1] / without[1]);
    }
    if (b.config.mode == Mode::dcp)
      for (const hazefree::StageTime& st : r.stages)
        std::printf("    stage %-22s %10.4f ms (plain launches, events between stages)\n", st.name.c_str(), st.ms);
    std::fflush(stdout);
  }
  std::printf("gpu: %s; median of %d frames after 10 warm-up frames; graph = captured chain replayed\n",
              gpu.c_str(), iterations);
  return 0;
}

// `--ahe-kernels [iterations]`: the AHE/CLAHE kernels alone on one 1080p plane of smooth content
// with noise, windows 31..511: the 8-bit column histograms' kernel (AheCuda), the sliding
// samples' kernel at 8 bits and at 12 bits (AheDepthCuda); median ms of the launches, timed with
// events. The figures that choose the 8-bit kernel by window (EqualizeKernels in
// kernels/cuda/equalize_cuda.cu).
int run_ahe_kernels(int iterations) {
  using namespace hazefree;
  const int w = 1920, h = 1080, stride = 2048;
  Image frame = gpu_test::make_image(PixelFormat::gray8, w, h);
  gpu_test::fill_smooth(frame.view(), 1234);
  const PlaneView& y = frame.view().planes[0];
  std::vector<std::uint16_t> twelve(static_cast<std::size_t>(stride) * h);
  for (int row = 0; row < h; ++row)
    for (int x = 0; x < w; ++x)  // the 8-bit picture with four more bits of noise below
      twelve[static_cast<std::size_t>(row) * stride + x] =
          static_cast<std::uint16_t>(y.data[static_cast<std::size_t>(row) * y.stride + x] * 16 + (x * 7 + row * 13) % 16);
  const std::size_t n = static_cast<std::size_t>(stride) * h;
  cuda::DeviceBuffer<std::uint8_t> src8(n), dst8(n);
  cuda::DeviceBuffer<std::uint16_t> src16(n), dst16(n);
  HAZEFREE_CUDA_CHECK(cudaMemcpy2D(src8.get(), stride, y.data, y.stride, w, h, cudaMemcpyHostToDevice));
  HAZEFREE_CUDA_CHECK(cudaMemcpy(src16.get(), twelve.data(), n * 2, cudaMemcpyHostToDevice));
  const cuda::DevicePlaneU8 s8{src8.get(), w, h, stride}, d8{dst8.get(), w, h, stride};
  const cuda::DevicePlaneU16 s16{src16.get(), w, h, stride, 0}, d16{dst16.get(), w, h, stride, 0};
  cuda::AheCuda columns;
  cuda::AheDepthCuda samples;
  cudaEvent_t start, stop;
  HAZEFREE_CUDA_CHECK(cudaEventCreate(&start));
  HAZEFREE_CUDA_CHECK(cudaEventCreate(&stop));
  auto median_ms = [&](const auto& launch) {
    for (int i = 0; i < 5; ++i) launch();
    std::vector<float> ms;
    for (int i = 0; i < iterations; ++i) {
      HAZEFREE_CUDA_CHECK(cudaEventRecord(start));
      launch();
      HAZEFREE_CUDA_CHECK(cudaEventRecord(stop));
      HAZEFREE_CUDA_CHECK(cudaEventSynchronize(stop));
      float t = 0;
      HAZEFREE_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  std::printf("%-6s %6s %6s %14s %14s %14s\n", "mode", "window", "clip", "columns8_ms", "samples8_ms", "samples12_ms");
  for (const float clip : {0.f, 2.f})
    for (const int window : {31, 63, 127, 255, 511}) {
      AheParams p;
      p.window = window;
      p.clip = clip;
      const double c8 = median_ms([&] { columns.apply(&s8, &d8, 1, p, true, nullptr); });
      const double s8ms = median_ms([&] { samples.apply(&s8, &d8, 1, p, true, nullptr); });
      const double s12 = median_ms([&] { samples.apply(&s16, &d16, 1, 12, p, true, nullptr); });
      std::printf("%-6s %6d %6.1f %14.4f %14.4f %14.4f\n", clip > 0 ? "clahe" : "ahe", window, clip, c8, s8ms, s12);
      std::fflush(stdout);
    }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!only_lists(argc, argv)) {
    std::string why;
    if (!hazefree::cuda_available(&why)) {
      std::printf("no CUDA GPU: GPU tests skipped (%s)\n", why.c_str());
      return 77;
    }
  }
  if (argc >= 2 && std::strcmp(argv[1], "--bench") == 0)
    return run_bench(argc >= 3 ? std::atoi(argv[2]) : 200, argc >= 4 ? argv[3] : "");
  if (argc >= 2 && std::strcmp(argv[1], "--ahe-kernels") == 0)
    return run_ahe_kernels(argc >= 3 ? std::atoi(argv[2]) : 100);
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  return context.run();
}
