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

#include "kernels/cuda/cuda_bench.hpp"
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
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  return context.run();
}
