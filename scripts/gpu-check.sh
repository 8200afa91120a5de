#!/usr/bin/env bash
# The whole GPU check of the CUDA backend in one call, run on the GPU machine from the repository
# root: the GPU tests (CUDA vs CPU backend), compute-sanitizer memcheck and racecheck on the small
# cases, and the kernel benchmark (ms per mode at 1080p/4K next to the targets).
# Binaries come from .device/ (scripts/build-device.sh puts them there). Results go to $OUT
# (or ./gpu-check-out); the last lines printed are the summary.
#   scripts/gpu-check.sh [tests|sanitize|bench|e2e|all]   (default all)
set -u
what=${1:-all}
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
BIN=${BIN:-.device/hazefree_gpu_tests}
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
summary=()

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >"$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

if [[ $what == all || $what == tests ]]; then
  start=$(date +%s)
  timeout "${TEST_TIMEOUT:-330}" "$BIN" --duration=true >"$OUT/tests.log" 2>&1
  rc=$?
  tail -n 4 "$OUT/tests.log"
  summary+=("tests: exit $rc in $(( $(date +%s) - start )) s ($(grep -E '^\[doctest\] (test cases|assertions)' "$OUT/tests.log" | tr '\n' ' '))")
  if [[ $rc -ne 0 ]]; then grep -B2 -A12 "ERROR\|FAILED" "$OUT/tests.log" | head -n 80; fi
fi

if [[ $what == all || $what == sanitize ]]; then
  export HAZEFREE_GPU_TESTS_SMALL=1
  cases='AHE colour modes*,HE with a region*,DCP parameters*,min filter*,HE temporal*,two lanes*,atmospheric light*'
  timeout "${SANITIZE_TIMEOUT:-120}" "$SANITIZER" --tool memcheck --error-exitcode 3 "$BIN" -tc="$cases" >"$OUT/memcheck.log" 2>&1
  summary+=("memcheck: exit $? ($(grep -c '========= Invalid\|========= Program hit' "$OUT/memcheck.log") reports)")
  timeout "${SANITIZE_TIMEOUT:-120}" "$SANITIZER" --tool racecheck --error-exitcode 3 "$BIN" -tc='AHE colour modes*,HE with a region*,DCP parameters*' \
    >"$OUT/racecheck.log" 2>&1
  summary+=("racecheck: exit $? ($(grep -c 'hazard' "$OUT/racecheck.log") hazard lines)")
  unset HAZEFREE_GPU_TESTS_SMALL
fi

if [[ $what == all || $what == bench ]]; then
  timeout "${BENCH_TIMEOUT:-150}" "$BIN" --bench "${BENCH_ITERATIONS:-200}" | tee "$OUT/bench.txt"
  summary+=("bench: $(grep -c meets "$OUT/bench.txt") targets met, $(grep -c MISSES "$OUT/bench.txt") missed")
fi

# End to end through the CLI, when the static hazefree binary is there: a real file through the
# CUDA and CPU backends (outputs kept small), and the pipeline's own benchmark.
if [[ ($what == all || $what == e2e) && -x .device/hazefree ]]; then
  for mode in dcp he ahe; do
    for backend in cuda cpu; do
      timeout 120 .device/hazefree -y -q -m $mode -b $backend samples/hazy-street.mp4 \
        "/tmp/e2e-$mode-$backend.mp4" >>"$OUT/e2e.log" 2>&1
      summary+=("e2e $mode $backend: exit $?")
    done
  done
  timeout 120 .device/hazefree bench --backend cuda --frames 200 >>"$OUT/e2e.log" 2>&1
  summary+=("hazefree bench cuda: exit $?")
  tail -n 30 "$OUT/e2e.log"
fi

printf '%s\n' "----- summary" "${summary[@]}" | tee "$OUT/summary.txt"
