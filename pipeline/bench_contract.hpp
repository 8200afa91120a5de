// `hazefree bench`'s JSON contract (SPEC 6): the fields every result row carries in every mode,
// their lines in the table, and the top of every document.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/processor.hpp"
#include "pipeline/bench_memory.hpp"

namespace hazefree::bench {

// Keys in the order they are set: a row's stages read in the order they run.
using Json = nlohmann::ordered_json;

// ---- SPEC 6: the fields every result row carries, in every mode ----
//
// stages_ms: ms/frame of decode, upload, each kernel group, download and encode. The four stages
// around the kernels are always present, null where the stage does not run in the mode (decode
// and encode on generated frames and between the kernel cases, upload and download on the CPU
// backend) or is not measured apart (said where it is set).
// overlap_efficiency: sum of the stage times / wall time per frame, null where it has no meaning.
// peak_host_bytes: see HostPeak. peak_device_bytes: see DeviceMemory.
struct Contract {
  std::optional<double> decode, upload, download, encode;
  std::vector<StageTime> kernels;  // the kernel groups, in the order they ran
  std::optional<double> overlap_efficiency;
  std::optional<std::uint64_t> peak_host_bytes, peak_device_bytes;

  // A backend's stage times: the CUDA backend's copies ("upload", "download") and its kernel groups.
  void take_stages(const std::vector<StageTime>& stages) {
    for (const StageTime& st : stages) {
      if (st.name == "upload") upload = st.ms;
      else if (st.name == "download") download = st.ms;
      else kernels.push_back(st);
    }
  }
};

template <typename T>
Json or_null(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

void put_contract(Json& row, const Contract& c);
std::string megabytes(const std::optional<std::uint64_t>& bytes);
// The table's lines under a row: the stages that ran, then the efficiency and the memory.
void print_contract(const Contract& c, const std::string& stages_title);
// The top of every JSON document.
Json document(const std::string& tool, const HostPeak& host_peak);
void write_json(const std::string& path, const Json& doc);

}  // namespace hazefree::bench
