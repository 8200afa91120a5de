#include "pipeline/bench_plot.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace hazefree::bench {

void plot_results(const std::string& json_path, const std::string& png_path) {
  const char* from_env = std::getenv("HAZEFREE_PLOT_SCRIPT");
  const std::string script = from_env ? from_env : std::string(HAZEFREE_SOURCE_DIR) + "/scripts/plot-bench.py";
  if (!std::ifstream(script)) throw std::runtime_error(script + ": plot script not found (set HAZEFREE_PLOT_SCRIPT)");
  auto quoted = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string command = "python3 " + quoted(script) + " " + quoted(json_path) + " " + quoted(png_path);
  if (std::system(command.c_str()) != 0) throw std::runtime_error(png_path + ": the plot script failed");
  fmt::print(stderr, "bench: plot written to {}\n", png_path);
}

}  // namespace hazefree::bench
