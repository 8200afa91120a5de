#!/usr/bin/env bash
# GPU check of the GStreamer element on the GPU machine (no GStreamer, no FFmpeg there). From the
# repository root, with .device/gst carried (made here by scripts/build-device-gst.sh):
#   1. the element loads (gst-inspect-1.0) and runs on the CUDA backend (its log names the GPU);
#   2. the sample clip (decoded by the static ffmpeg) through `hazefree backend=cuda` and
#      `backend=cpu`: I420 in dcp, he and ahe, NV12 in dcp, GRAY8 in he; HE and AHE identical,
#      DCP within 1 code (SPEC 3), every frame there;
#   3. the element's cost per 1080p frame against the CLI's processing time (scripts/bench-gst.sh,
#      dcp and he, on the CUDA backend and on the 16 CPU cores);
#   4. the latency the element adds at 1080p30 (a live videotestsrc, 300 frames): median and p95
#      from GStreamer's latency tracer, CUDA and CPU backends.
# What ran is system memory in and out on the CUDA backend; CUDA memory (memory:CUDAMemory) is
# not implemented by the element. Logs and summary.txt go to $OUT (else .device/gst-results).
# Exit status: 0 when every check passed.
#   GPU_BACKEND=cpu   a dry run of this script where there is no GPU (both sides on the CPU)
#   BENCH_FRAMES=300 LATENCY_FRAMES=300   frames of the benchmark and of the latency run
# Needs there: bash, awk, cmp, stat (nothing else: GStreamer and FFmpeg come in .device/gst).
set -uo pipefail
gpu=${GPU_BACKEND:-cuda}
bench_frames=${BENCH_FRAMES:-300}
latency_frames=${LATENCY_FRAMES:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
gst=$root/.device/gst
results=${OUT:-$root/.device/gst-results}
mkdir -p "$results"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
summary=$results/summary.txt
: >"$summary"
failed=0
say() { echo "$*" | tee -a "$summary"; }
check() {  # check NAME COMMAND...: runs it, its output into NAME.log, one line in the summary
  local name=$1
  shift
  if "$@" >"$results/$name.log" 2>&1; then
    say "PASS $name"
  else
    say "FAIL $name (see $name.log)"
    failed=1
  fi
}

if [[ ! -x $gst/bin/gst-launch-1.0 || ! -f $gst/plugins/libgsthazefree.so ]]; then
  echo "gpu-check-gst: $gst is missing or incomplete: run scripts/build-device-gst.sh and carry .device/gst" >&2
  exit 1
fi
export LD_LIBRARY_PATH=$gst/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GST_PLUGIN_SYSTEM_PATH_1_0=$gst/plugins  # only the carried plugins
export GST_PLUGIN_PATH_1_0=
export GST_REGISTRY_1_0=$work/registry.bin
export GST_REGISTRY_FORK=no  # scan in process: no gst-plugin-scanner needed
launch=$gst/bin/gst-launch-1.0
say "gpu-check-gst: $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /' | tee -a "$summary"

# 1. The element and the CUDA backend.
check inspect "$gst/bin/gst-inspect-1.0" hazefree
cuda_runs() {
  local log
  log=$(GST_DEBUG=hazefree:4 GST_DEBUG_NO_COLOR=1 "$launch" videotestsrc num-buffers=3 ! \
        video/x-raw,format=I420,width=640,height=360 ! hazefree backend="$gpu" ! fakesink 2>&1)
  echo "$log"
  grep -q "processing on $gpu" <<<"$log"
}
check cuda-backend cuda_runs

# 2. CUDA against CPU on the sample clip.
width=768 height=576 frames=60
"$gst/bin/ffmpeg" -v error -i "$root/samples/hazy-street.mp4" -frames:v $frames -f rawvideo -pix_fmt yuv420p \
  "$work/clip-i420.yuv" && "$gst/bin/ffmpeg" -v error -i "$root/samples/hazy-street.mp4" -frames:v $frames \
  -f rawvideo -pix_fmt nv12 "$work/clip-nv12.yuv" && "$gst/bin/ffmpeg" -v error -i "$root/samples/hazy-street.mp4" \
  -frames:v $frames -f rawvideo -pix_fmt gray "$work/clip-gray8.yuv" || { say "FAIL decoding the sample clip"; failed=1; }
run_clip() {  # run_clip FORMAT MODE BACKEND OUT
  local format=$1 mode=$2 backend=$3 out=$4 file
  file=$work/clip-$(echo "$format" | tr 'A-Z' 'a-z').yuv
  "$launch" -q filesrc location="$file" ! rawvideoparse format="$(echo "$format" | tr 'A-Z' 'a-z')" width=$width \
    height=$height framerate=25/1 colorimetry=bt601 ! hazefree backend="$backend" mode="$mode" ! \
    filesink location="$out"
}
compare() {  # compare FORMAT MODE TOLERANCE: the CUDA run against the CPU run
  local format=$1 mode=$2 tolerance=$3
  run_clip "$format" "$mode" "$gpu" "$work/cuda.yuv" && run_clip "$format" "$mode" cpu "$work/cpu.yuv" || return 1
  local expected cuda_size cpu_size
  expected=$(stat -c %s "$work/clip-$(echo "$format" | tr 'A-Z' 'a-z').yuv")
  cuda_size=$(stat -c %s "$work/cuda.yuv")
  cpu_size=$(stat -c %s "$work/cpu.yuv")
  echo "sizes: $gpu $cuda_size, cpu $cpu_size, input $expected bytes"
  [[ $cuda_size == "$expected" && $cpu_size == "$expected" ]] || return 1
  # Every differing byte (cmp -l: position, both values in octal): how many, and by how much.
  cmp -l "$work/cuda.yuv" "$work/cpu.yuv" | awk -v tolerance="$tolerance" -v total="$expected" '
    function octal(text,   n, i) { n = 0; for (i = 1; i <= length(text); ++i) n = n * 8 + substr(text, i, 1); return n }
    { d = octal($2) - octal($3); if (d < 0) d = -d; if (d > worst) worst = d; ++count }
    END { printf "max difference %d codes, %d of %d samples differ\n", worst, count, total; exit worst > tolerance }'
}
check i420-dcp-cuda-vs-cpu compare I420 dcp 1
check i420-he-cuda-vs-cpu compare I420 he 0
check i420-ahe-cuda-vs-cpu compare I420 ahe 0
check nv12-dcp-cuda-vs-cpu compare NV12 dcp 1
check gray8-he-cuda-vs-cpu compare GRAY8 he 0
for name in i420-dcp nv12-dcp; do grep -h "max difference" "$results/$name-cuda-vs-cpu.log" | sed "s/^/  $name: /" | tee -a "$summary"; done

# 3. The element's cost over the CLI's per 1080p frame (CUDA backend, then the CPU's cores).
if [[ -x $gst/bin/hazefree ]]; then
  for backend in "$gpu" cpu; do
    for mode in dcp he; do
      frames=$bench_frames
      [[ $backend == cpu && $mode == dcp ]] && frames=$((bench_frames / 3 > 4 ? bench_frames / 3 : 4))
      check "bench-$backend-$mode" env HAZEFREE="$gst/bin/hazefree" GST_LAUNCH="$launch" \
        "$root/scripts/bench-gst.sh" "$backend" $mode "$frames"
      sed 's/^/  /' "$results/bench-$backend-$mode.log" | tee -a "$summary"
    done
  done
else
  say "SKIP bench: $gst/bin/hazefree missing"
fi

# 4. Added latency at 1080p30 through the element (GStreamer's latency tracer, per buffer).
latency() {  # latency BACKEND: median and p95 of the element's latency in ms
  GST_DEBUG_NO_COLOR=1 GST_TRACERS="latency(flags=element)" GST_DEBUG="GST_TRACER:7" \
    "$launch" -q videotestsrc is-live=true num-buffers="$latency_frames" pattern=smpte ! \
    video/x-raw,format=I420,width=1920,height=1080,framerate=30/1 ! hazefree name=filter backend="$1" ! \
    fakesink sync=false 2>&1 >/dev/null |
    grep -o 'element=(string)filter, src=(string)src, time=(guint64)[0-9]*' | sed 's/.*)//' |
    tail -n +31 | sort -n |  # the first second (start-up, the first frame's allocations) left out
    awk '{v[NR] = $1 / 1e6} END {if (NR < 1) exit 1;
         printf "%d frames: median %.3f ms, p95 %.3f ms, max %.3f ms\n", NR, v[int(NR * 0.5) + 1], v[int(NR * 0.95) + 1], v[NR]}'
}
for backend in "$gpu" cpu; do
  check "latency-$backend" latency $backend
  sed "s/^/  latency 1080p30 $backend: /" "$results/latency-$backend.log" | tee -a "$summary"
done

say "gpu-check-gst: $([[ $failed == 0 ]] && echo 'all checks passed' || echo 'some checks FAILED')"
exit $failed
