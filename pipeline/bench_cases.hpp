// `hazefree bench`'s cases: generated frames, a row's configuration and the seed papers' tables
// (--seed-tables) with their figures.
#pragma once

#include <string>
#include <vector>

#include "common/image.hpp"
#include "common/params.hpp"

namespace hazefree::bench {

// A deterministic hazy-looking test frame: smooth gradients and texture under a haze veil that
// thickens towards the top (so DCP has haze to remove and HE/AHE real histograms to work on).
// At `depth` > 8 the same picture is drawn with M / 255 times finer codes (its gradients use the
// extra bits, as a camera's would), in two-byte samples.
Image generate_frame(PixelFormat format, int width, int height, int seed, int depth = 8);

struct BenchCase {
  std::string label;            // "dcp", "ahe w=63 clip=0", ...
  ProcessingConfig config;
  int width = 0, height = 0;
  // The seed paper's figures for this row (0 = none), per kind of backend.
  double paper_sequential = 0.0, paper_openmp = 0.0, paper_gpu = 0.0;
  std::string paper_unit;       // "ms/frame" or "ms/Mpixel"
  std::string paper_source;
};

// "dcp", "he luma", "clahe w=63 clip=2", ...: a configuration in a row's words.
std::string describe(const ProcessingConfig& c);

// The rows of the seed papers' tables, each with its paper's figures.
std::vector<BenchCase> seed_table_cases(const ProcessingConfig& base);

}  // namespace hazefree::bench
