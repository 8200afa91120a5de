// `hazefree bench` end to end: every mode that runs without a GPU writes the fields of SPEC 6
// (the benchmark contract) under the same names and types, null exactly where a stage does not
// run in the mode; the table on stdout shows them too.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/processor.hpp"
#include "run_command.hpp"
#include "support/test_support.hpp"
#include "test_robustness_support.hpp"

using namespace hazefree;
using nlohmann::json;

namespace {

using test::q;

test::CommandResult run_bench(const std::string& arguments) { return test::run_hazefree("bench " + arguments); }

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), path << ": not written");
  return json::parse(in);
}

// What a row's four stages around the kernels must be in the mode: measured (a number) or null.
struct Expect {
  bool decode = false, upload = false, download = false, encode = false;
  bool efficiency = true;  // overlap_efficiency a number (else null)
};

void check_stage(const json& stages, const char* name, bool measured) {
  INFO("stage " << name);
  REQUIRE(stages.contains(name));
  if (measured) {
    CHECK(stages[name].is_number());
    CHECK(stages[name].get<double>() >= 0.0);
  } else {
    CHECK(stages[name].is_null());
  }
}

// The top of the document and every row's contract fields; returns the rows.
json check_document(const json& doc, const std::string& tool, const Expect& expect) {
  REQUIRE(doc.is_object());
  CHECK(doc.value("tool", "") == tool);
  REQUIRE(doc.contains("gpu"));
  const std::string gpu = gpu_name();
  if (gpu.empty()) CHECK(doc["gpu"].is_null());
  else CHECK(doc["gpu"] == gpu);
  REQUIRE(doc.contains("peak_host_scope"));
  CHECK(std::set<std::string>{"row", "process"}.count(doc["peak_host_scope"].get<std::string>()) == 1);
  REQUIRE(doc.contains("results"));
  REQUIRE(doc["results"].is_array());
  REQUIRE_FALSE(doc["results"].empty());
  for (const json& row : doc["results"]) {
    INFO(row.dump());
    CHECK(row.at("case").is_string());
    CHECK(row.at("backend").is_string());
    CHECK(row.at("width").is_number_integer());
    CHECK(row.at("height").is_number_integer());
    CHECK(row.at("frames").is_number_integer());
    CHECK(row.at("frames").get<int>() > 0);
    REQUIRE(row.at("fps").is_number());
    CHECK(row.at("fps").get<double>() > 0.0);
    REQUIRE(row.at("stages_ms").is_object());
    const json& stages = row.at("stages_ms");
    check_stage(stages, "decode", expect.decode);
    check_stage(stages, "upload", expect.upload);
    check_stage(stages, "download", expect.download);
    check_stage(stages, "encode", expect.encode);
    CHECK(stages.size() > 4);  // at least one kernel group
    for (const auto& [name, ms] : stages.items())
      if (name != "decode" && name != "upload" && name != "download" && name != "encode") {
        INFO("kernel stage " << name);
        CHECK(ms.is_number());
      }
    REQUIRE(row.contains("overlap_efficiency"));
    if (expect.efficiency) {
      REQUIRE(row.at("overlap_efficiency").is_number());
      CHECK(row.at("overlap_efficiency").get<double>() > 0.0);
    } else {
      CHECK(row.at("overlap_efficiency").is_null());
    }
    // Linux has VmHWM: the peak resident size is measured, and is more than the program alone.
    REQUIRE(row.contains("peak_host_bytes"));
    REQUIRE(row.at("peak_host_bytes").is_number_unsigned());
    CHECK(row.at("peak_host_bytes").get<std::uint64_t>() > 1024u * 1024u);
    // These tests run the CPU backend, which adds no device memory: not measured, null.
    REQUIRE(row.contains("peak_device_bytes"));
    CHECK(row.at("peak_device_bytes").is_null());
  }
  return doc["results"];
}

void check_table(const test::CommandResult& r) {
  CHECK(r.out.find("overlap efficiency") != std::string::npos);
  CHECK(r.out.find("peak host") != std::string::npos);
  CHECK(r.out.find("device added -") != std::string::npos);
}

}  // namespace

TEST_CASE("bench: kernel cases on generated frames carry the contract (decode, copies, encode null)") {
  const std::string dir = test::temp_dir("bench-kernels");
  const test::CommandResult r =
      run_bench("--backend cpu --mode dcp --size 96x64 --frames 3 --warmup 1 --json " + q(dir + "/k.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  check_table(r);
  const json rows = check_document(read_json(dir + "/k.json"), "hazefree bench", {});
  for (const json& row : rows) {
    CHECK(row.at("width") == 96);
    CHECK(row.at("height") == 64);
    CHECK(row.at("frames") == 3);
    // One frame at a time: the CPU DCP's timed stages over the same loop's wall time.
    CHECK(row.at("overlap_efficiency").get<double>() <= 1.05);
    CHECK_FALSE(row.at("per_frame").empty());
  }
}

TEST_CASE("bench: a mode whose backend times no stages has one process stage and no efficiency") {
  const std::string dir = test::temp_dir("bench-he");
  const test::CommandResult r =
      run_bench("--backend cpu --mode he --size 96x64 --frames 2 --warmup 1 --json " + q(dir + "/he.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  Expect expect;
  expect.efficiency = false;
  for (const json& row : check_document(read_json(dir + "/he.json"), "hazefree bench", expect)) {
    REQUIRE(row.at("stages_ms").contains("process"));
    CHECK(row.at("stages_ms").size() == 5);
  }
}

TEST_CASE("bench: every AHE window is a row of the table and of the JSON") {
  const std::string dir = test::temp_dir("bench-ahe");
  const test::CommandResult r =
      run_bench("--backend cpu --size 96x64 --frames 2 --warmup 1 --ahe-windows --json " + q(dir + "/bench.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  for (const char* label : {"ahe w=31", "ahe w=63", "ahe w=127", "ahe w=255", "ahe w=511"})
    CHECK(r.out.find(label) != std::string::npos);
  Expect expect;
  expect.efficiency = false;
  const json rows = check_document(read_json(dir + "/bench.json"), "hazefree bench", expect);
  CHECK(rows.size() >= 5);
  for (const json& row : rows) CHECK(row.at("ms_per_mpixel").is_number());
}

TEST_CASE("bench --input: the decoded frames' decode time is in every row") {
  const std::string dir = test::temp_dir("bench-input");
  const test::CommandResult r = run_bench("--input " + q(test::sample_path("hazy-street.mp4")) +
                                          " --backend cpu --frames 2 --warmup 1 --json " + q(dir + "/i.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  check_table(r);
  CHECK(r.out.find("decode:") != std::string::npos);
  Expect expect;
  expect.decode = true;
  const json doc = read_json(dir + "/i.json");
  for (const json& row : check_document(doc, "hazefree bench", expect)) {
    CHECK(row.at("width") == 768);
    CHECK(row.at("height") == 576);
    CHECK(row.at("stages_ms").at("decode") == doc.at("decode_ms_per_frame"));
  }
}

TEST_CASE("bench --pipeline: serial and overlapped runs, the same output, the contract fields") {
  const std::string dir = test::temp_dir("bench-pipeline");
  const test::CommandResult r =
      run_bench("--pipeline --backend cpu --size 80x48 --frames 6 --warmup 2 --json " + q(dir + "/p.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("overlapped fps") != std::string::npos);
  check_table(r);
  for (const json& row : check_document(read_json(dir + "/p.json"), "hazefree bench --pipeline", {})) {
    CHECK(row.at("same_output") == true);
    CHECK(row.at("width") == 80);
    CHECK(row.at("fps") == row.at("overlapped_fps"));
    CHECK(row.at("overlap_efficiency").get<double>() > 0.0);
  }
}

TEST_CASE("bench --end-to-end: decode, process and encode measured, the copies null on the CPU") {
  const std::string dir = test::temp_dir("bench-e2e");
  const test::CommandResult r = run_bench("--input " + q(test::sample_path("hazy-street.mp4")) +
                                          " --end-to-end --backend cpu --mode he --preset ultrafast --json " +
                                          q(dir + "/e2e.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("end to end: 100 frames") != std::string::npos);
  CHECK(r.out.find("busy ms/frame: decode") != std::string::npos);
  CHECK(r.out.find("peak host") != std::string::npos);
  Expect expect;
  expect.decode = true;
  expect.encode = true;
  const json rows = check_document(read_json(dir + "/e2e.json"), "hazefree bench --end-to-end", expect);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("frames") == 100);
  CHECK(rows[0].at("width") == 768);
  CHECK(rows[0].at("height") == 576);
  CHECK(rows[0].at("stages_ms").at("process").is_number());
  CHECK(run_bench("--end-to-end").status == 2);  // needs --input
}

TEST_CASE("bench: a bad flag value or an unknown option is one line with status 2") {
  struct Case {
    std::string arguments, line;
  };
  for (const Case& c : {Case{"--frames 0 --size 64x64", "hazefree bench: --frames: 0 is outside [1, 100000]"},
                        Case{"--frames abc", "hazefree bench: --frames: abc is not a number"},
                        Case{"--warmup -1", "hazefree bench: --warmup: -1 is outside [0, 1000]"},
                        Case{"--bogus", "hazefree bench: --bogus: unknown option (hazefree bench --help lists the options)"},
                        Case{"--size 64x64 extra",
                             "hazefree bench: extra: unexpected argument (hazefree bench --help shows the usage)"}}) {
    CAPTURE(c.arguments);
    const test::CommandResult r = run_bench(c.arguments);
    CHECK(r.status == 2);
    CHECK(test::lines_of(r.err) == std::vector<std::string>{c.line});
    CHECK(r.out.empty());
  }
}

TEST_CASE("bench: a bad size is refused with status 2") {
  const test::CommandResult r = run_bench("--size 0x10");
  CHECK(r.status == 2);
  CHECK(r.err.find("--size 0x10") != std::string::npos);
}

TEST_CASE("bench: a preset, the flags and --set combine as in the main command (flags given win)") {
  const std::string dir = test::temp_dir("bench-preset");
  const std::string preset = q(std::string(HAZEFREE_SAMPLES_DIR) + "/../configs/clahe.toml");
  struct Case {
    std::string arguments, expected;
  };
  const Case cases[] = {
      {"-c " + preset, "clahe w=127 clip=2"},                                   // the preset's mode, window, clip
      {"-c " + preset + " --window 31", "clahe w=31 clip=2"},                   // a flag given wins
      {"-c " + preset + " --window 31 --set ahe.window=15", "clahe w=15 clip=2"},  // --set last
      {"-c " + preset + " --mode he --color grey", "he grey"},
      {"--set mode=ahe --clip 3", "clahe w=63 clip=3"},                         // the table's defaults
  };
  for (const Case& c : cases) {
    CAPTURE(c.arguments);
    const std::string json_path = dir + "/bench.json";
    const test::CommandResult r =
        run_bench(c.arguments + " --backend cpu --size 48x32 --frames 1 --warmup 0 --json " + q(json_path));
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json rows = read_json(json_path).at("results");
    REQUIRE(rows.size() >= 1);
    for (const json& row : rows) CHECK(row.at("case") == c.expected);
    CHECK(r.out.find(c.expected) != std::string::npos);
  }
  // A bad value of a flag names its key, as in the main command.
  const test::CommandResult bad = run_bench("--window 4 --backend cpu --size 48x32 --frames 1");
  CHECK(bad.status == 2);
  CHECK(test::lines_of(bad.err).size() == 1);
  CHECK(bad.err.find("ahe.window") != std::string::npos);
}
