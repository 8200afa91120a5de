// `hazefree bench --plot`: the plot of a JSON document, drawn by the project's script.
#pragma once

#include <string>

namespace hazefree::bench {

// Draws the plot with the project's script (next to the sources, or HAZEFREE_PLOT_SCRIPT).
void plot_results(const std::string& json_path, const std::string& png_path);

}  // namespace hazefree::bench
