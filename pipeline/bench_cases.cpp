#include "pipeline/bench_cases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

namespace hazefree::bench {
namespace {

// A seed paper's figure for one row: sequential CPU, OpenMP CPU and GPU columns.
struct PaperFigures {
  double sequential, openmp, gpu;
  const char* unit;
  const char* source;
};

void attach_paper(BenchCase& c, const PaperFigures& p) {
  c.paper_unit = p.unit;
  c.paper_source = p.source;
  c.paper_sequential = p.sequential;
  c.paper_openmp = p.openmp;
  c.paper_gpu = p.gpu;
}

}  // namespace

Image generate_frame(PixelFormat format, int width, int height, int seed, int depth) {
  Image image(format, width, height, 64, depth);
  ImageView& v = image.view();
  const double scale = max_code(depth) / 255.0;
  std::mt19937 rng(static_cast<unsigned>(seed) * 7919u + 17u);
  std::uniform_int_distribution<int> noise(-12, 12);
  for (int p = 0; p < v.plane_count; ++p) {
    PlaneView& plane = v.planes[p];
    const int samples = plane.width * bytes_per_sample(format, p, depth) / sample_bytes(depth);
    for (int y = 0; y < plane.height; ++y) {
      std::uint8_t* row = plane.data + static_cast<std::size_t>(y) * plane.stride;
      const double haze = 1.0 - double(y) / std::max(1, plane.height - 1);  // 1 at the top
      for (int x = 0; x < samples; ++x) {
        double value;
        if (p == 0 || !is_yuv(format)) {
          const double scene = 40 + 120 * (0.5 + 0.5 * std::sin(x * 0.02 + seed) * std::cos(y * 0.015)) +
                               noise(rng);
          value = scene * (1 - 0.7 * haze) + 220 * 0.7 * haze;
        } else {
          value = 128 + 20 * std::sin(x * 0.05 + p + seed) * (1 - haze);
        }
        if (depth == 8) {
          row[x] = static_cast<std::uint8_t>(std::clamp(value, 0.0, 255.0));
        } else {
          const double code = std::clamp(value * scale, 0.0, double(max_code(depth)));
          reinterpret_cast<std::uint16_t*>(row)[x] = static_cast<std::uint16_t>(std::lround(code));
        }
      }
    }
  }
  return image;
}

std::string describe(const ProcessingConfig& c) {
  switch (c.mode) {
    case Mode::dcp: return "dcp";
    case Mode::he: return fmt::format("he {}", to_string(c.color));
    case Mode::ahe:
      return c.ahe.clip > 0 ? fmt::format("clahe w={} clip={}", c.ahe.window, c.ahe.clip)
                            : fmt::format("ahe w={}", c.ahe.window);
  }
  return "?";
}

std::vector<BenchCase> seed_table_cases(const ProcessingConfig& base) {
  std::vector<BenchCase> cases;
  // Wu et al. 2021, Table 3: DCP, one CPU thread and an RTX 2080 Ti (ms/frame).
  const struct { int w, h; double cpu, gpu; } wu[] = {{270, 193, 15, 0.353},
                                                      {332, 500, 62, 0.652},
                                                      {600, 400, 93, 0.722},
                                                      {800, 457, 141, 0.973},
                                                      {1920, 1080, 780, 3.569}};
  for (const auto& s : wu) {
    BenchCase c;
    c.config = base;
    c.config.mode = Mode::dcp;
    c.label = "dcp";
    c.width = s.w;
    c.height = s.h;
    attach_paper(c, {s.cpu, 0, s.gpu, "ms/frame", "Wu 2021 T3: 1 CPU thread / RTX 2080 Ti"});
    cases.push_back(c);
  }
  // Panconi 2023, Table 1: AHE, sequential, OpenMP (16 threads), CUDA bi-directional on a
  // GTX 1060 (ms/Mpixel, averaged over 1..16 Mpixel); here at 1 Mpixel and 4 Mpixel.
  const struct { int window; double seq, omp, gpu; } panconi[] = {{31, 138.4, 13.5, 24.9},
                                                                 {63, 259.4, 21.5, 25.9},
                                                                 {127, 460.7, 40.1, 27.0},
                                                                 {255, 982.1, 79.2, 30.6},
                                                                 {511, 1937.7, 158.9, 41.2}};
  for (int side : {1024, 2048}) {
    for (const auto& p : panconi) {
      BenchCase c;
      c.config = base;
      c.config.mode = Mode::ahe;
      c.config.color = ColorMode::grey;
      c.config.ahe.window = p.window;
      c.config.ahe.clip = 0;
      c.label = describe(c.config);
      c.width = side;
      c.height = side;
      attach_paper(c, {p.seq, p.omp, p.gpu, "ms/Mpixel", "Panconi 2023 T1: seq / OpenMP 16 thr / GTX 1060"});
      cases.push_back(c);
    }
  }
  // Bugetti 2025, Table 1: global HE, sequential C++ and CUDA Kogge-Stone (256 threads) on an
  // RTX 3060 Ti (ms/frame), grey images.
  const struct { int side; double seq, gpu; } bugetti[] = {
      {1024, 1.83429, 0.372956}, {2048, 8.67020, 0.987788}, {4096, 36.8264, 3.50452}, {8192, 141.328, 14.1078}};
  for (const auto& b : bugetti) {
    BenchCase c;
    c.config = base;
    c.config.mode = Mode::he;
    c.config.color = ColorMode::grey;
    c.label = describe(c.config);
    c.width = b.side;
    c.height = b.side;
    attach_paper(c, {b.seq, 0, b.gpu, "ms/frame", "Bugetti 2025 T1: sequential / RTX 3060 Ti"});
    cases.push_back(c);
  }
  return cases;
}

}  // namespace hazefree::bench
