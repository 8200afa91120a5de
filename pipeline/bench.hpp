// `hazefree bench`: fps and per-stage timings of the processors on generated frames (decode
// excluded) or on the decoded frames of a file, warm-up excluded, as a table and as JSON; and
// the seed papers' tables reproduced on this machine (--seed-tables).
#pragma once

namespace hazefree {

int bench_main(int argc, char** argv);

}  // namespace hazefree
