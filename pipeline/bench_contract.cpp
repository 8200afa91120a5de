#include "pipeline/bench_contract.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <fstream>
#include <stdexcept>

namespace hazefree::bench {

void put_contract(Json& row, const Contract& c) {
  Json stages = Json::object();
  stages["decode"] = or_null(c.decode);
  stages["upload"] = or_null(c.upload);
  for (const StageTime& st : c.kernels) stages[st.name] = st.ms;
  stages["download"] = or_null(c.download);
  stages["encode"] = or_null(c.encode);
  row["stages_ms"] = stages;
  row["overlap_efficiency"] = or_null(c.overlap_efficiency);
  row["peak_host_bytes"] = or_null(c.peak_host_bytes);
  row["peak_device_bytes"] = or_null(c.peak_device_bytes);
}

std::string megabytes(const std::optional<std::uint64_t>& bytes) {
  return bytes ? fmt::format("{:.1f} MB", *bytes / 1048576.0) : std::string("-");
}

void print_contract(const Contract& c, const std::string& stages_title) {
  std::string line = "    " + stages_title + ":";
  auto stage = [&line](const char* name, const std::optional<double>& ms) {
    if (ms) line += fmt::format(" {} {:.3f}", name, *ms);
  };
  stage("decode", c.decode);
  stage("upload", c.upload);
  for (const StageTime& st : c.kernels) line += fmt::format(" {} {:.3f}", st.name, st.ms);
  stage("download", c.download);
  stage("encode", c.encode);
  fmt::print("{}\n", line);
  fmt::print("    overlap efficiency {}, peak host {}, device added {}\n",
             c.overlap_efficiency ? fmt::format("{:.2f}", *c.overlap_efficiency) : std::string("-"),
             megabytes(c.peak_host_bytes), megabytes(c.peak_device_bytes));
}

Json document(const std::string& tool, const HostPeak& host_peak) {
  const std::string gpu = gpu_name();
  return Json{{"tool", tool},
              {"version", HAZEFREE_VERSION},
              {"gpu", gpu.empty() ? Json(nullptr) : Json(gpu)},
              {"cpu_threads", omp_get_max_threads()},
              {"peak_host_scope", host_peak.scope()}};
}

void write_json(const std::string& path, const Json& doc) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot write");
  out << doc.dump(2) << "\n";
  if (!out.flush()) throw std::runtime_error(path + ": cannot write");
}

}  // namespace hazefree::bench
