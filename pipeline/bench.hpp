// `hazefree bench`: fps and per-stage timings of the processors on generated frames (decode
// excluded) or on the decoded frames of a file, warm-up excluded, as a table and as JSON; and
// the seed papers' tables reproduced on this machine (--seed-tables).
//
// Every mode's JSON (kernel cases, --input, --pipeline, --end-to-end, --seed-tables) carries the
// fields of SPEC 6 under the same names: at the top `gpu` (name or null), `peak_host_scope`
// ("row" or "process"); in each row of `results`: case, backend, width, height, frames, fps,
// stages_ms (decode, upload, the kernel groups, download, encode; null where a stage does not run
// in the mode or is not measured apart), overlap_efficiency, peak_host_bytes, peak_device_bytes.
#pragma once

namespace hazefree {

int bench_main(int argc, char** argv);

}  // namespace hazefree
