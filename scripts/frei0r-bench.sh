#!/usr/bin/env bash
# The frei0r filter against the program (issue 25's figure, for docs/PERFORMANCE.md): a 1080p
# file dehazed (DCP) by `hazefree` and by `ffmpeg -vf frei0r=hazefree_dehaze`, both encoding with
# libx264 crf 20 veryfast (hazefree's default), and the filter's own cost per frame (its
# conversion to and from RGBA included) next to the processing cost of the program.
#   scripts/frei0r-bench.sh [build folder (default build)] [frames (default 300)]
# Uses the build's plugins (FREI0R_PATH=<build>/frei0r) and program; the filter and the program
# take the GPU when one is usable (backend auto). Prints the machine, GPU, date and the table.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
frames=${2:-300}
work=$(mktemp -d /tmp/hazefree-frei0r-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export FREI0R_PATH=$build/frei0r
[[ -x $build/hazefree && -f $FREI0R_PATH/hazefree_dehaze.so ]] ||
  { echo "frei0r-bench: $build has no hazefree program or frei0r/hazefree_dehaze.so: build it first" >&2; exit 1; }

# Seconds of wall time of a command (its output discarded; a failure stops the script).
seconds() {
  local start end
  start=$(date +%s.%N)
  "$@" >"$work/last.log" 2>&1 || { tail -n 20 "$work/last.log"; echo "frei0r-bench: failed: $*" >&2; exit 1; }
  end=$(date +%s.%N)
  awk "BEGIN{print $end - $start}"
}
per_frame() { awk "BEGIN{printf \"%.2f\", 1000 * ($1) / $frames}"; }

input=$work/hazy-1080p.mp4
ffmpeg -nostdin -v error -stream_loop -1 -i "$root/samples/hazy-street.mp4" -frames:v "$frames" -an \
  -vf scale=1920:1080:flags=bicubic -c:v libx264 -crf 16 -preset veryfast -pix_fmt yuv420p "$input"
encoder=(-c:v libx264 -crf 20 -preset veryfast)

echo "machine: $(uname -n), $(nproc) CPU threads, $(lscpu | sed -nE 's/^Model name: +//p')"
command -v nvidia-smi >/dev/null && echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
echo "date: $(date -u +%Y-%m-%d), $("$build/hazefree" --version 2>/dev/null | head -n 1), $(ffmpeg -version | head -n 1)"
echo "input: 1920x1080, $frames frames, H.264 yuv420p; output: libx264 crf 20 veryfast"

# Warm-up: the GPU context, the page cache.
seconds "$build/hazefree" -q -y "$input" "$work/warm.mp4" >/dev/null

t_cli=$(seconds "$build/hazefree" -q -y "$input" "$work/cli.mp4")
t_frei0r=$(seconds ffmpeg -nostdin -v error -y -i "$input" -vf frei0r=hazefree_dehaze "${encoder[@]}" "$work/frei0r.mp4")
# The filter's own cost: the same graph into the null muxer, less the graph without the filter
# (decoding, and FFmpeg's conversion to RGBA and back, stay in the difference's two terms alike
# only when the filter is there: the conversions are charged to the filter).
t_decode=$(seconds ffmpeg -nostdin -v error -i "$input" -f null -)
t_filter=$(seconds ffmpeg -nostdin -v error -i "$input" -vf "format=rgba,frei0r=hazefree_dehaze,format=yuv420p" -f null -)
# The program's processing alone, on the same decoded frames.
"$build/hazefree" bench --input "$input" --frames "$((frames > 100 ? 100 : frames))" -m dcp -b auto >"$work/bench.txt" 2>&1 ||
  { cat "$work/bench.txt"; echo "frei0r-bench: hazefree bench failed" >&2; exit 1; }

printf '\n%-58s %10s %12s\n' "case" "seconds" "ms/frame"
printf '%-58s %10.2f %12s\n' "hazefree in.mp4 out.mp4" "$t_cli" "$(per_frame "$t_cli")"
printf '%-58s %10.2f %12s\n' "ffmpeg -vf frei0r=hazefree_dehaze (same encoder)" "$t_frei0r" "$(per_frame "$t_frei0r")"
printf '%-58s %10s\n' "ratio frei0r / hazefree (target <= 1.2)" "$(awk "BEGIN{printf \"%.3f\", $t_frei0r / $t_cli}")"
printf '%-58s %10.2f %12s\n' "ffmpeg decode only (-f null)" "$t_decode" "$(per_frame "$t_decode")"
printf '%-58s %10.2f %12s\n' "ffmpeg decode + rgba + frei0r + yuv420p (-f null)" "$t_filter" "$(per_frame "$t_filter")"
printf '%-58s %10s %12s\n' "frei0r filter's own cost (RGBA conversions included)" "" \
  "$(per_frame "$t_filter - $t_decode")"
echo
echo "hazefree bench (the program's processing per frame, decode excluded):"
cat "$work/bench.txt"
