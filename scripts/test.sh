#!/usr/bin/env bash
# The whole test suite: set up, build, run every test with ctest (GPU tests report "skipped"
# where no CUDA GPU is present and run for real where one is); the Debian package built, installed,
# used and removed (scripts/test-package.sh); then the same suite built with
# AddressSanitizer + UndefinedBehaviorSanitizer, the pipeline suite with ThreadSanitizer, and
# each libFuzzer target for a fixed time. Each build has its own tree: build/ (or BUILD_DIR),
# build-asan/, build-tsan/, build-fuzz/. FUZZ_SECONDS (default 60) sets the time per target.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-60}

section() { printf '\n== %s\n' "$*"; }

section "tests ($build)"
"$root/scripts/setup.sh"
ctest --test-dir "$build" --output-on-failure -j"$jobs" --timeout 600

# The Debian package: built (a release build of its own, no tests, in dist/src/), checked by
# lintian, installed with apt-get, used with no environment variables, removed (SPEC 11).
section "Debian package ($root/dist)"
"$root/scripts/test-package.sh"

# Sanitizer and fuzz trees leave CUDA out (nvcc does not take these flags; the kernels' CPU
# twins are what they check).
section "ASan + UBSan ($root/build-asan)"
cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHAZEFREE_CUDA=OFF -DHAZEFREE_SANITIZE=ON >/dev/null
cmake --build "$root/build-asan" -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
LSAN_OPTIONS=suppressions=$root/tests/lsan.supp \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j"$jobs" --timeout 900

# libgomp and FFmpeg are not built with TSan: one OpenMP thread, and tests/tsan.supp. A second
# signal ends the process with _exit() on purpose: thread leaks are not reported.
section "TSan, pipeline suite ($root/build-tsan)"
cmake -S "$root" -B "$root/build-tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHAZEFREE_CUDA=OFF -DHAZEFREE_TSAN=ON -DHAZEFREE_OPENCV_TESTS=OFF >/dev/null
cmake --build "$root/build-tsan" -j"$jobs" --target hazefree hazefree_pipeline_tests
OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_thread_leaks=0:suppressions=$root/tests/tsan.supp" \
  ctest --test-dir "$root/build-tsan" --output-on-failure -j"$jobs" --timeout 900 -R '^pipeline:' \
    -E 'unusual y4m layouts'
# 'unusual y4m layouts': 120 runs of pixel formats and sizes, nothing for TSan, minutes of time.

section "fuzzing, ${fuzz_seconds} s per target ($root/build-fuzz)"
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHAZEFREE_CUDA=OFF -DHAZEFREE_FUZZ=ON -DHAZEFREE_TESTS=OFF >/dev/null
cmake --build "$root/build-fuzz" -j"$jobs" --target fuzz_config fuzz_reader fuzz_serve
for target in config reader serve; do
  # New inputs go to the tree's own corpus; the committed seeds are only read. A crash leaves
  # its input in build-fuzz/ (add it to tests/fuzz/corpus/ with the fix) and fails the run.
  work="$root/build-fuzz/corpus-$target"
  mkdir -p "$work"
  echo "fuzz_$target:"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$root/build-fuzz/tests/fuzz/fuzz_$target" -max_total_time="$fuzz_seconds" -timeout=20 \
      -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$root/build-fuzz/crash-$target-" "$work" "$root/tests/fuzz/corpus/$target" \
      2> "$root/build-fuzz/fuzz-$target.log" ||
    { tail -n 60 "$root/build-fuzz/fuzz-$target.log"; exit 1; }
  grep -E '^Done [0-9]+ runs' "$root/build-fuzz/fuzz-$target.log" || tail -n 3 "$root/build-fuzz/fuzz-$target.log"
done
section "all suites passed"
