#!/usr/bin/env bash
# GPU check of the GStreamer element on the GPU machine (no GStreamer, no FFmpeg there). From the
# repository root, with .device/gst carried (made here by scripts/build-device-gst.sh):
#   1. the element loads (gst-inspect-1.0) and runs on the CUDA backend (its log names the GPU);
#      which of nvcodec's elements load there (cudaupload, cudadownload, nvh264dec);
#   2. system memory: the sample clip (decoded by the static ffmpeg) through `hazefree
#      backend=cuda` and `backend=cpu`: I420 in dcp, he and ahe, NV12 in dcp, GRAY8 in he; HE and
#      AHE identical, DCP within 1 code (SPEC 3), every frame there;
#   3. CUDA memory (memory:CUDAMemory, frames processed where they are):
#      a. `rawvideoparse ! cudaupload ! hazefree ! cudadownload` on the clip (I420 and NV12; dcp,
#         he, ahe) against the system-memory CUDA path and the CPU backend on the same frames;
#      b. when nvh264dec loads (NVDEC's libnvcuvid there): `h264parse ! nvh264dec ! hazefree !
#         cudadownload` on the clip's H.264 against `nvh264dec ! cudadownload ! hazefree` on the
#         CUDA and CPU backends (a SKIP line says so when it does not);
#      the element's log must say "CUDA memory, in place on the GPU" for a CUDA memory run to count;
#   3c. high bit depth (SPEC 7): the clip at 10 bits, I420_10LE and P010_10LE, he and ahe, CUDA
#      against CPU in system memory and (cudaupload) in CUDA memory, exact; when nvh265dec loads,
#      a 10-bit HEVC file (DEPTH_CLIP, default depth-media/hazy-1080p10.mp4: see gpu-check.sh for
#      how it is made; its raw stream CLIP.h265 beside it, see below; carry them) decoded to P010 in CUDA memory straight into the element, against
#      cudadownload ! hazefree backend=cpu;
#   4. the element's cost per 1080p frame against the CLI's processing time (scripts/bench-gst.sh,
#      dcp and he): CUDA backend with system memory lanes=1 and lanes=2, CUDA memory, and the
#      16 CPU cores;
#   5. the latency the element adds at 1080p30 (a live videotestsrc, 330 frames, the first 30 left
#      out), median and p95, measured between identity elements around it (hazefree-gst-latency):
#      CUDA system memory lanes=1 and lanes=2, CUDA memory, CPU.
# Logs and summary.txt go to $OUT (else .device/gst-results); the summary's "paths:" lines say
# which paths ran. Exit status: 0 when every check passed (a SKIP is not a failure).
#   GPU_BACKEND=cpu   a dry run of this script where there is no GPU (both sides on the CPU; the
#                     CUDA memory checks are skipped)
#   BENCH_FRAMES=300 LATENCY_FRAMES=330   frames of the benchmark and of the latency runs
#   PARTS="compare cuda-memory depth bench latency"   the parts after 1 to run (default: all; the whole
#                     script takes about 6-8 minutes there: split it over two calls if needed)
# Needs there: bash, awk, cmp, stat (nothing else: GStreamer and FFmpeg come in .device/gst).
set -uo pipefail
gpu=${GPU_BACKEND:-cuda}
bench_frames=${BENCH_FRAMES:-300}
latency_frames=${LATENCY_FRAMES:-330}
parts=" ${PARTS:-compare cuda-memory depth bench latency} "
want() { [[ $parts == *" $1 "* ]]; }
root=$(cd "$(dirname "$0")/.." && pwd)
gst=$root/.device/gst
results=${OUT:-$root/.device/gst-results}
mkdir -p "$results"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
summary=$results/summary.txt
: >"$summary"
failed=0
paths=()  # "name: ran" / "name: did not run (why)"
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
has_element() { "$gst/bin/gst-inspect-1.0" "$1" >/dev/null 2>&1; }
cuda_memory=0 nvdec=0
if [[ $gpu == cuda ]] && has_element cudaupload && has_element cudadownload; then cuda_memory=1; fi
if [[ $cuda_memory == 1 ]] && has_element nvh264dec && has_element h264parse; then nvdec=1; fi
say "nvcodec: cudaupload/cudadownload $([[ $cuda_memory == 1 ]] && echo loaded || echo 'NOT loaded'), nvh264dec \
$([[ $nvdec == 1 ]] && echo loaded || echo 'NOT loaded')"
if [[ $gpu == cuda && $cuda_memory == 0 ]]; then
  "$gst/bin/gst-inspect-1.0" nvcodec >"$results/nvcodec.log" 2>&1
  GST_DEBUG=nvcodec:5,cuda*:5 "$gst/bin/gst-inspect-1.0" cudaupload >>"$results/nvcodec.log" 2>&1
  say "FAIL nvcodec: cudaupload and cudadownload do not load, the CUDA memory path cannot run (see nvcodec.log)"
  failed=1
fi

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
if want compare; then
  check i420-dcp-cuda-vs-cpu compare I420 dcp 1
  check i420-he-cuda-vs-cpu compare I420 he 0
  check i420-ahe-cuda-vs-cpu compare I420 ahe 0
  check nv12-dcp-cuda-vs-cpu compare NV12 dcp 1
  check gray8-he-cuda-vs-cpu compare GRAY8 he 0
  for name in i420-dcp nv12-dcp; do grep -h "max difference" "$results/$name-cuda-vs-cpu.log" | sed "s/^/  $name: /" | tee -a "$summary"; done
  paths+=("system memory, backend=$gpu (rawvideoparse ! hazefree backend=$gpu), against backend=cpu: ran")
fi

# 3. CUDA memory: frames processed where they are.
# PASS only when the element's log says it took the CUDA memory path.
in_place() { grep -q "CUDA memory, in place on the GPU" "$1"; }
# cudaupload also offers system memory: the caps filters ask for CUDA memory on both sides.
run_cuda_memory() {  # run_cuda_memory FORMAT MODE OUT: cudaupload ! hazefree ! cudadownload
  local format=$1 mode=$2 out=$3 lower
  lower=$(echo "$format" | tr 'A-Z' 'a-z')
  GST_DEBUG=hazefree:4 GST_DEBUG_NO_COLOR=1 "$launch" -q filesrc location="$work/clip-$lower.yuv" ! \
    rawvideoparse format="$lower" width=$width height=$height framerate=25/1 colorimetry=bt601 ! cudaupload ! \
    "video/x-raw(memory:CUDAMemory)" ! hazefree backend=cuda mode="$mode" ! "video/x-raw(memory:CUDAMemory)" ! \
    cudadownload ! "video/x-raw,format=$format" ! filesink location="$out" \
    2>"$work/cuda-memory.log"
  local status=$?
  cat "$work/cuda-memory.log"
  [[ $status == 0 ]] && in_place "$work/cuda-memory.log"
}
differ() {  # differ A B TOLERANCE: every differing byte (cmp -l), how many and by how much
  local a=$1 b=$2 tolerance=$3 size_a size_b
  size_a=$(stat -c %s "$a")
  size_b=$(stat -c %s "$b")
  if [[ $size_a != "$size_b" || $size_a == 0 ]]; then
    echo "sizes differ: $size_a and $size_b bytes"
    return 1
  fi
  cmp -l "$a" "$b" | awk -v tolerance="$tolerance" -v total="$size_a" '
    function octal(text,   n, i) { n = 0; for (i = 1; i <= length(text); ++i) n = n * 8 + substr(text, i, 1); return n }
    { d = octal($2) - octal($3); if (d < 0) d = -d; if (d > worst) worst = d; ++count }
    END { printf "max difference %d codes, %d of %d samples differ\n", worst, count, total; exit worst > tolerance }'
}
compare_cuda_memory() {  # FORMAT MODE TOLERANCE: CUDA memory against system memory (CUDA) and the CPU
  local format=$1 mode=$2 tolerance=$3
  run_cuda_memory "$format" "$mode" "$work/cuda-memory.yuv" || { echo "the CUDA memory run failed or did not run in place"; return 1; }
  run_clip "$format" "$mode" cuda "$work/cuda.yuv" && run_clip "$format" "$mode" cpu "$work/cpu.yuv" || return 1
  local ok=0
  echo -n "CUDA memory vs system memory (CUDA backend): "
  differ "$work/cuda-memory.yuv" "$work/cuda.yuv" "$tolerance" || ok=1
  echo -n "CUDA memory vs CPU backend: "
  differ "$work/cuda-memory.yuv" "$work/cpu.yuv" "$tolerance" || ok=1
  return $ok
}
if ! want cuda-memory; then
  paths+=("CUDA memory: not asked for (PARTS)")
elif [[ $cuda_memory == 1 ]]; then
  check i420-dcp-cuda-memory compare_cuda_memory I420 dcp 1
  check i420-he-cuda-memory compare_cuda_memory I420 he 0
  check i420-ahe-cuda-memory compare_cuda_memory I420 ahe 0
  check nv12-dcp-cuda-memory compare_cuda_memory NV12 dcp 1
  check nv12-he-cuda-memory compare_cuda_memory NV12 he 0
  for name in i420-dcp nv12-dcp i420-he; do
    grep -h "max difference" "$results/$name-cuda-memory.log" | sed "s/^/  $name: /" | tee -a "$summary"
  done
  paths+=("CUDA memory (rawvideoparse ! cudaupload ! hazefree ! cudadownload): ran, see *-cuda-memory.log")
else
  say "SKIP CUDA memory through cudaupload: nvcodec's cudaupload/cudadownload are not there (GPU_BACKEND=$gpu)"
  paths+=("CUDA memory (cudaupload ! hazefree ! cudadownload): did NOT run")
fi

# 3b. NVDEC: nvh264dec's CUDA memory straight into the element.
nvdec_compare() {  # MODE TOLERANCE
  local mode=$1 tolerance=$2 decode="filesrc location=$work/clip.h264 ! h264parse ! nvh264dec"
  GST_DEBUG=hazefree:4 GST_DEBUG_NO_COLOR=1 "$launch" -q $decode ! hazefree backend=cuda mode="$mode" ! \
    cudadownload ! video/x-raw,format=NV12 ! filesink location="$work/nvdec-memory.yuv" 2>"$work/nvdec.log" &&
    in_place "$work/nvdec.log" || { cat "$work/nvdec.log"; echo "nvh264dec ! hazefree did not run in CUDA memory"; return 1; }
  cat "$work/nvdec.log"
  "$launch" -q $decode ! cudadownload ! video/x-raw,format=NV12 ! hazefree backend=cuda mode="$mode" ! \
    filesink location="$work/nvdec-cuda.yuv" &&
    "$launch" -q $decode ! cudadownload ! video/x-raw,format=NV12 ! hazefree backend=cpu mode="$mode" ! \
    filesink location="$work/nvdec-cpu.yuv" || return 1
  local ok=0
  echo -n "NVDEC CUDA memory vs system memory (CUDA backend): "
  differ "$work/nvdec-memory.yuv" "$work/nvdec-cuda.yuv" "$tolerance" || ok=1
  echo -n "NVDEC CUDA memory vs CPU backend: "
  differ "$work/nvdec-memory.yuv" "$work/nvdec-cpu.yuv" "$tolerance" || ok=1
  return $ok
}
if ! want cuda-memory; then
  :
elif [[ $nvdec == 1 ]] && "$gst/bin/ffmpeg" -v error -i "$root/samples/hazy-street.mp4" -frames:v $frames -an -c:v copy \
     -bsf:v h264_mp4toannexb -f h264 "$work/clip.h264"; then
  check nvdec-dcp-cuda-memory nvdec_compare dcp 1
  check nvdec-he-cuda-memory nvdec_compare he 0
  grep -h "max difference" "$results/nvdec-dcp-cuda-memory.log" | sed 's/^/  nvdec-dcp: /' | tee -a "$summary"
  paths+=("CUDA memory from NVDEC (h264parse ! nvh264dec ! hazefree ! cudadownload): ran, see nvdec-*.log")
else
  say "SKIP NVDEC: nvh264dec does not load here (NVDEC's libnvcuvid.so.1 missing?) or the clip's H.264 could not be extracted"
  paths+=("CUDA memory from NVDEC (nvh264dec ! hazefree): did NOT run")
fi

# 3c. High bit depth: 10-bit frames in system memory, in CUDA memory and from NVDEC (P010).
depth_clip=${DEPTH_CLIP:-$root/depth-media/hazy-1080p10.mp4}
run_depth() {  # run_depth CAPS_FORMAT MODE BACKEND OUT [cuda-memory]: the 10-bit clip through the element
  local format=$1 mode=$2 backend=$3 out=$4 nick up="" down=""
  nick=$(echo "$format" | tr 'A-Z_' 'a-z-')
  if [[ ${5:-} == cuda-memory ]]; then
    up="cudaupload ! video/x-raw(memory:CUDAMemory) !"
    down="video/x-raw(memory:CUDAMemory) ! cudadownload ! video/x-raw,format=$format !"
  fi
  GST_DEBUG=hazefree:4 GST_DEBUG_NO_COLOR=1 "$launch" -q filesrc location="$work/clip-$nick.yuv" ! \
    rawvideoparse format="$nick" width=$width height=$height framerate=25/1 colorimetry=bt709 ! $up \
    hazefree backend="$backend" mode="$mode" ! $down filesink location="$out" 2>"$work/depth-run.log"
  local status=$?
  cat "$work/depth-run.log"
  [[ $status == 0 ]] || return 1
  [[ ${5:-} != cuda-memory ]] || in_place "$work/depth-run.log"
}
compare_depth() {  # compare_depth CAPS_FORMAT MODE: CUDA (system memory, CUDA memory) against CPU
  local format=$1 mode=$2 ok=0
  run_depth "$format" "$mode" cpu "$work/depth-cpu.yuv" || return 1
  run_depth "$format" "$mode" "$gpu" "$work/depth-cuda.yuv" || return 1
  echo -n "system memory, $gpu vs CPU: "
  differ "$work/depth-cuda.yuv" "$work/depth-cpu.yuv" 0 || ok=1
  if [[ $cuda_memory == 1 ]]; then
    run_depth "$format" "$mode" cuda "$work/depth-cuda-memory.yuv" cuda-memory || { echo "the CUDA memory run failed or did not run in place"; return 1; }
    echo -n "CUDA memory vs CPU: "
    differ "$work/depth-cuda-memory.yuv" "$work/depth-cpu.yuv" 0 || ok=1
  fi
  return $ok
}
nvdec10_compare() {  # MODE: nvh265dec's P010 in CUDA memory into the element, against the CPU backend
  local mode=$1 decode="filesrc location=$work/clip10.h265 ! h265parse ! nvh265dec" ok=0
  GST_DEBUG=hazefree:4 GST_DEBUG_NO_COLOR=1 "$launch" -q $decode ! hazefree backend=cuda mode="$mode" ! \
    cudadownload ! video/x-raw,format=P010_10LE ! filesink location="$work/nvdec10-memory.yuv" 2>"$work/nvdec10.log" &&
    in_place "$work/nvdec10.log" || { cat "$work/nvdec10.log"; echo "nvh265dec ! hazefree did not run in CUDA memory"; return 1; }
  cat "$work/nvdec10.log"
  "$launch" -q $decode ! cudadownload ! video/x-raw,format=P010_10LE ! hazefree backend=cpu mode="$mode" ! \
    filesink location="$work/nvdec10-cpu.yuv" || return 1
  echo "output $(stat -c %s "$work/nvdec10-memory.yuv") bytes ($(stat -c %s "$work/nvdec10-memory.yuv" | awk '{print $1 / (1920 * 1080 * 3)}') P010 1080p frames)"
  echo -n "NVDEC P010 CUDA memory vs CPU backend: "
  differ "$work/nvdec10-memory.yuv" "$work/nvdec10-cpu.yuv" 0 || ok=1
  return $ok
}
if ! want depth; then
  paths+=("high bit depth: not asked for (PARTS)")
else
  "$gst/bin/ffmpeg" -v error -i "$root/samples/hazy-street.mp4" -frames:v $frames -f rawvideo -pix_fmt yuv420p10le \
    "$work/clip-i420-10le.yuv" && "$gst/bin/ffmpeg" -v error -i "$root/samples/hazy-street.mp4" -frames:v $frames \
    -f rawvideo -pix_fmt p010le "$work/clip-p010-10le.yuv" || { say "FAIL making the 10-bit clip"; failed=1; }
  for format in I420_10LE P010_10LE; do
    for mode in he ahe; do
      check "depth-$(echo "$format" | tr 'A-Z_' 'a-z-')-$mode" compare_depth $format $mode
    done
  done
  paths+=("high bit depth, I420_10LE and P010_10LE: system memory ran$([[ $cuda_memory == 1 ]] && echo ', CUDA memory (cudaupload) ran' || echo ', CUDA memory did NOT run')")
  # The static ffmpeg has no raw HEVC muxer: the stream comes ready beside the clip when it is
  # made here (ffmpeg -i CLIP.mp4 -an -c:v copy -bsf:v hevc_mp4toannexb -f hevc CLIP.h265).
  if [[ $cuda_memory == 1 ]] && has_element nvh265dec && has_element h265parse && [[ -f ${depth_clip%.*}.h265 ]] &&
     cp "${depth_clip%.*}.h265" "$work/clip10.h265"; then
    check nvdec10-he-cuda-memory nvdec10_compare he
    check nvdec10-ahe-cuda-memory nvdec10_compare ahe
    paths+=("10-bit HEVC from NVDEC (h265parse ! nvh265dec ! hazefree, P010 in CUDA memory): ran, see nvdec10-*.log")
  else
    say "SKIP NVDEC at 10 bits: nvh265dec does not load here, or no 10-bit stream (${depth_clip%.*}.h265)"
    paths+=("10-bit HEVC from NVDEC (nvh265dec ! hazefree): did NOT run")
  fi
fi

# 4. The element's cost over the CLI's per 1080p frame.
bench() {  # bench NAME ENV... : scripts/bench-gst.sh with those settings, its table in the summary
  local name=$1
  shift
  check "bench-$name" env HAZEFREE="$gst/bin/hazefree" GST_LAUNCH="$launch" "$@"
  sed 's/^/  /' "$results/bench-$name.log" | tee -a "$summary"
}
if ! want bench; then
  :
elif [[ -x $gst/bin/hazefree ]]; then
  for mode in dcp he; do
    bench "$gpu-$mode-lanes1" LANES=1 "$root/scripts/bench-gst.sh" "$gpu" $mode "$bench_frames"
    bench "$gpu-$mode-lanes2" LANES=2 "$root/scripts/bench-gst.sh" "$gpu" $mode "$bench_frames"
    if [[ $cuda_memory == 1 ]]; then
      bench "cuda-memory-$mode" CUDA_MEMORY=1 "$root/scripts/bench-gst.sh" cuda $mode "$bench_frames"
    fi
    frames=$bench_frames
    [[ $mode == dcp ]] && frames=$((bench_frames / 3 > 4 ? bench_frames / 3 : 4))
    bench "cpu-$mode" "$root/scripts/bench-gst.sh" cpu $mode "$frames"
  done
else
  say "SKIP bench: $gst/bin/hazefree missing"
fi

# 5. Added latency at 1080p30 through the element, between identity elements around it.
latency() {  # latency BACKEND LANES [cuda-memory]
  local upload="" download=""
  if [[ ${3:-} == cuda-memory ]]; then upload="cudaupload !"; download="cudadownload !"; fi
  "$gst/bin/hazefree-gst-latency" 30 "videotestsrc is-live=true num-buffers=$latency_frames pattern=smpte ! \
    video/x-raw,format=I420,width=1920,height=1080,framerate=30/1 ! $upload identity name=before ! \
    hazefree backend=$1 lanes=$2 ! identity name=after ! $download fakesink sync=false"
}
if ! want latency; then
  :
elif [[ -x $gst/bin/hazefree-gst-latency ]]; then
  for lanes in 1 2; do
    check "latency-$gpu-lanes$lanes" latency "$gpu" $lanes
    sed "s/^/  latency 1080p30 $gpu system memory lanes=$lanes: /" "$results/latency-$gpu-lanes$lanes.log" | tee -a "$summary"
  done
  if [[ $cuda_memory == 1 ]]; then
    check latency-cuda-memory latency cuda 1 cuda-memory
    sed "s/^/  latency 1080p30 cuda CUDA memory: /" "$results/latency-cuda-memory.log" | tee -a "$summary"
  fi
  check latency-cpu latency cpu 1
  sed "s/^/  latency 1080p30 cpu: /" "$results/latency-cpu.log" | tee -a "$summary"
else
  say "SKIP latency: $gst/bin/hazefree-gst-latency missing (rebuild .device/gst)"
fi

say "paths:"
for line in "${paths[@]}"; do say "  $line"; done
say "gpu-check-gst: $([[ $failed == 0 ]] && echo 'all checks passed' || echo 'some checks FAILED')"
exit $failed
