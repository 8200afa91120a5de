#!/usr/bin/env bash
# The whole test suite: set up, build, run every test with ctest. GPU tests report "skipped"
# where no CUDA GPU is present and run for real where one is.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 600
