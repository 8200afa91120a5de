#!/usr/bin/env bash
# The main job on the bundled sample: set up, build, and dehaze samples/hazy-street.mp4 into
# samples/hazy-street-dehazed.mp4 (audio and timestamps kept), plus a side-by-side comparison.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
bin=${BUILD_DIR:-$root/build}/hazefree
"$bin" -y "$root/samples/hazy-street.mp4" "$root/samples/hazy-street-dehazed.mp4"
"$bin" -y -q --side-by-side "$root/samples/hazy-street.mp4" "$root/samples/hazy-street-side-by-side.mp4"
echo "demo: wrote samples/hazy-street-dehazed.mp4 and samples/hazy-street-side-by-side.mp4"
