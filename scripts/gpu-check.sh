#!/usr/bin/env bash
# The whole GPU check of the CUDA backend in one call, run on the GPU machine from the repository
# root: the GPU tests (CUDA vs CPU backend), compute-sanitizer memcheck and racecheck on the small
# cases, and the kernel benchmark (ms per mode at 1080p/4K next to the targets).
# Binaries come from .device/ (scripts/build-device.sh puts them there). Results go to $OUT
# (or ./gpu-check-out); the last lines printed are the summary.
#   scripts/gpu-check.sh [tests|sanitize|bench|e2e|pipeline|jobs|depth|ahe|all]   (default all)
# "pipeline" (not part of all: it needs .device/ffmpeg and .device/ffprobe from build-device.sh):
# the seed-paper tables on this machine's CPU and GPU, serial versus overlapped raw frames, a real
# 1080p file through decode + DCP + x264 against a bare ffmpeg transcode, and a live source.
# "jobs" (likewise): chunked runs on every GPU against the single run.
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
  cases='AHE colour modes*,both 8-bit*,HE with a region*,DCP parameters*,min filter*,fused*,HE temporal*,two lanes*,atmospheric light*'
  timeout "${SANITIZE_TIMEOUT:-120}" "$SANITIZER" --tool memcheck --error-exitcode 3 "$BIN" -tc="$cases" >"$OUT/memcheck.log" 2>&1
  summary+=("memcheck: exit $? ($(grep -c '========= Invalid\|========= Program hit' "$OUT/memcheck.log") reports)")
  timeout "${SANITIZE_TIMEOUT:-120}" "$SANITIZER" --tool racecheck --error-exitcode 3 "$BIN" -tc='AHE colour modes*,HE with a region*,DCP parameters*,fused*' \
    >"$OUT/racecheck.log" 2>&1
  summary+=("racecheck: exit $? ($(grep -c 'hazard' "$OUT/racecheck.log") hazard lines)")
  timeout "${SANITIZE_TIMEOUT:-120}" "$SANITIZER" --tool synccheck --error-exitcode 3 "$BIN" -tc="$cases" \
    >"$OUT/synccheck.log" 2>&1
  summary+=("synccheck: exit $? ($(grep -E 'ERROR SUMMARY' "$OUT/synccheck.log" | tail -n 1))")
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
  # The CUDA backend's output against the CPU backend's on the real clip, raw (y4m): the
  # integer modes byte for byte; DCP as PSNR (the float chain may differ by a level somewhere).
  for mode in dcp he ahe; do
    for backend in cuda cpu; do
      timeout 120 .device/hazefree -y -q -m $mode -b $backend samples/hazy-street.mp4 \
        "/tmp/e2e-$mode-$backend.y4m" >>"$OUT/e2e.log" 2>&1
    done
    if cmp -s "/tmp/e2e-$mode-cuda.y4m" "/tmp/e2e-$mode-cpu.y4m"; then same=identical; else same=different; fi
    psnr=""
    if [[ -x .device/ffmpeg ]]; then
      psnr=$(.device/ffmpeg -hide_banner -i "/tmp/e2e-$mode-cuda.y4m" -i "/tmp/e2e-$mode-cpu.y4m" \
        -lavfi psnr -f null - 2>&1 | grep -o 'average:[^ ]* min:[^ ]*' | tail -n 1)
    fi
    summary+=("e2e $mode cuda vs cpu (samples/hazy-street.mp4, y4m, $(.device/ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "/tmp/e2e-$mode-cuda.y4m" 2>/dev/null) frames): $same ${psnr:+PSNR $psnr}")
  done
  timeout 120 .device/hazefree bench --backend cuda --frames 200 >>"$OUT/e2e.log" 2>&1
  summary+=("hazefree bench cuda: exit $?")
  tail -n 30 "$OUT/e2e.log"
fi

# "depth" (not part of all): SPEC 7 on the GPU. A 10-bit HEVC file with audio through NVDEC and
# through CPU decoding on both backends (depth, frames and audio kept, CUDA against CPU), and the
# kernel benchmark at 8 bits and at depth (1080p, generated frames; CUDA and the CPU backend's
# OpenMP). The static FFmpeg has no HEVC encoder: make the clip here and carry depth-media/
# (ignored by git), or name another with DEPTH_CLIP=...:
#   mkdir -p depth-media && ffmpeg -y -stream_loop 1 -i samples/hazy-street.mp4 \
#     -vf scale=1920:1080,format=yuv420p10le -frames:v 30 -t 1.2 -c:v libx265 -preset ultrafast \
#     -crf 20 -c:a copy depth-media/hazy-1080p10.mp4
#   # its raw stream, for gpu-check-gst.sh's nvh265dec check (the static FFmpeg cannot write it):
#   ffmpeg -y -i depth-media/hazy-1080p10.mp4 -an -c:v copy -bsf:v hevc_mp4toannexb -f hevc depth-media/hazy-1080p10.h265
if [[ $what == depth && -x .device/hazefree ]]; then
  HF=.device/hazefree FP=.device/ffprobe FF=.device/ffmpeg
  clip=${DEPTH_CLIP:-depth-media/hazy-1080p10.mp4}
  [[ -f $clip ]] || summary+=("depth: no 10-bit clip $clip (see the top of this script): the file runs skipped")
  if [[ -f $clip ]]; then
    frames_of() { "$FP" -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1"; }
    audio_of() { "$FP" -v error -count_packets -select_streams a:0 -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
    pixfmt_of() { "$FP" -v error -select_streams v:0 -show_entries stream=pix_fmt -of csv=p=0 "$1"; }
    md5s() { "$FF" -v error -i "$1" -map 0:v -f framemd5 - | grep -v '^#'; }
    for mode in "dcp" "he" "he --set he.temporal=0.5" "ahe --window 63 --clip 2"; do
      name=${mode// /_}
      timeout 120 "$HF" -y -q -b cuda --hwdec cuda -m $mode --encoder ffv1 "$clip" "/tmp/d-hw-$name.mkv" >>"$OUT/depth.log" 2>&1
      rc_hw=$?
      timeout 120 "$HF" -y -q -b cuda -m $mode --encoder ffv1 "$clip" "/tmp/d-sw-$name.mkv" >>"$OUT/depth.log" 2>&1
      timeout 120 "$HF" -y -q -b cpu -m $mode --encoder ffv1 "$clip" "/tmp/d-cpu-$name.mkv" >>"$OUT/depth.log" 2>&1
      rc_cpu=$?
      if cmp -s <(md5s "/tmp/d-hw-$name.mkv") <(md5s "/tmp/d-sw-$name.mkv"); then hw=identical; else hw=DIFFERENT; fi
      differing=$(diff <(md5s "/tmp/d-sw-$name.mkv") <(md5s "/tmp/d-cpu-$name.mkv") | grep -c '^<')
      psnr=$("$FF" -hide_banner -i "/tmp/d-sw-$name.mkv" -i "/tmp/d-cpu-$name.mkv" -lavfi psnr -f null - 2>&1 |
        grep -o 'average:[^ ]* min:[^ ]*' | tail -n 1)
      summary+=("depth $mode: NVDEC exit $rc_hw, $(pixfmt_of "/tmp/d-hw-$name.mkv"), frames $(frames_of "$clip") -> $(frames_of "/tmp/d-hw-$name.mkv"), audio packets $(audio_of "$clip") -> $(audio_of "/tmp/d-hw-$name.mkv"); NVDEC vs CPU decoding: $hw; CUDA vs CPU backend (exit $rc_cpu): $differing frames differ, PSNR $psnr")
      echo "${summary[-1]}"
    done
  fi
  bench() { timeout 120 "$HF" bench --size 1920x1080 "$@" 2>/dev/null | grep -E '^(dcp|he|ahe|clahe)' | tee -a "$OUT/depth-bench.txt"; }
  for backend in cuda cpu; do
    frames=50
    [[ $backend == cpu ]] && frames=5
    for d in 8 10; do bench -b $backend -m dcp --depth $d --frames $frames --json "$OUT/dcp-$backend-$d.json"; done
    for d in 8 10; do bench -b $backend -m he --depth $d --frames $frames --json "$OUT/he-$backend-$d.json"; done
    warmup=1
    [[ $backend == cpu ]] && frames=1 warmup=0
    for clip in 0 2; do
      for d in 8 12; do
        bench -b $backend --ahe-windows --clip $clip --depth $d --frames $frames --warmup $warmup \
          --json "$OUT/ahe-$backend-$clip-$d.json"
      done
    done
  done
  summary+=("depth bench: $(grep -c . "$OUT/depth-bench.txt") rows in depth-bench.txt")
fi

# "ahe" (not part of all): the AHE/CLAHE table of docs/PERFORMANCE.md, 1080p, windows 31..511,
# 8 and 12 bits in one run: the kernels alone (hazefree_gpu_tests --ahe-kernels: the 8-bit column
# histograms' kernel and the sliding samples' kernel at 8 and 12 bits), then the CLI's chain
# (`hazefree bench --ahe-windows`), three rounds with the depths taking turns.
if [[ $what == ahe && -x .device/hazefree ]]; then
  "$BIN" --ahe-kernels "${AHE_ITERATIONS:-50}" | tee "$OUT/ahe-kernels.txt"
  for round in 1 2 3; do
    for clip in 0 2; do
      for d in 8 12; do
        echo "round $round clip $clip depth $d" >>"$OUT/ahe-table.txt"
        timeout 120 .device/hazefree bench --size 1920x1080 -b cuda --ahe-windows --clip $clip --depth $d \
          --frames "${AHE_ITERATIONS:-50}" --json "$OUT/ahe-$round-$clip-$d.json" 2>/dev/null |
          grep -E '^(ahe|clahe)' >>"$OUT/ahe-table.txt"
      done
    done
  done
  cat "$OUT/ahe-table.txt"
  summary+=("ahe: $(grep -c . "$OUT/ahe-kernels.txt") kernel rows, $(grep -cE '^(ahe|clahe)' "$OUT/ahe-table.txt") chain rows")
fi

if [[ $what == pipeline && -x .device/hazefree && -x .device/ffmpeg ]]; then
  HF=.device/hazefree FF=.device/ffmpeg FP=.device/ffprobe
  now() { date +%s.%N; }
  frames_of() { "$FP" -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1"; }
  packets_of() { "$FP" -v error -count_packets -select_streams a:0 -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
  lscpu | grep -E 'Model name|^CPU\(s\)' >"$OUT/pipeline.txt"

  # The seed papers' tables: sequential CPU, OpenMP CPU (all cores) and CUDA, beside the papers.
  timeout 240 "$HF" bench --seed-tables --frames 10 --json "$OUT/seed-tables.json" >>"$OUT/pipeline.txt" 2>/dev/null
  summary+=("seed tables: exit $?")
  timeout 120 "$HF" bench --ahe-windows --frames 10 --json "$OUT/ahe-1080p.json" >>"$OUT/pipeline.txt" 2>/dev/null
  summary+=("ahe windows 1080p: exit $?")

  # Raw frames host -> GPU -> host: one at a time versus two overlapped lanes, in one run.
  for args in "--mode dcp" "--mode dcp --set dcp.gf_subsample=4" "--mode he" "--mode ahe --window 63"; do
    # shellcheck disable=SC2086
    timeout 60 "$HF" bench --pipeline --backend cuda --frames 2000 --warmup 50 $args >>"$OUT/pipeline.txt" 2>&1
    summary+=("raw pipeline $args: exit $?")
  done
  # Per-frame stage times and A over a real clip, for the plot (drawn where matplotlib is).
  timeout 60 "$HF" bench --backend cuda --input samples/hazy-street.mp4 --frames 100 --json "$OUT/plot-cuda.json" \
    >>"$OUT/pipeline.txt" 2>&1

  # A real 1080p file (3000 frames, so start-up weighs little): decode + DCP + x264 veryfast
  # against a bare ffmpeg transcode of the hazy input, and of the dehazed result (the pictures
  # hazefree itself encodes: the encoder's cost depends on them).
  "$FF" -v error -y -stream_loop 29 -i samples/hazy-street.mp4 -vf scale=1920:1080 -c:v libx264 -preset ultrafast \
    -crf 18 -c:a copy /tmp/in1080.mp4
  t0=$(now); "$FF" -v error -y -i /tmp/in1080.mp4 -c:v libx264 -preset veryfast -c:a copy /tmp/bare.mp4; t1=$(now)
  bare=$(awk "BEGIN{print $t1 - $t0}")
  t0=$(now); timeout 200 "$HF" -y -v -b cuda --preset veryfast --crf 23 /tmp/in1080.mp4 /tmp/hf-cuda.mp4 \
    >>"$OUT/pipeline.txt" 2>&1; rc=$?; t1=$(now)
  took=$(awk "BEGIN{print $t1 - $t0}")
  timeout 200 "$HF" -y -q -b cuda --preset ultrafast --crf 18 /tmp/in1080.mp4 /tmp/dehazed-source.mp4
  t0=$(now); "$FF" -v error -y -i /tmp/dehazed-source.mp4 -c:v libx264 -preset veryfast -c:a copy /tmp/bare2.mp4; t1=$(now)
  bare2=$(awk "BEGIN{print $t1 - $t0}")
  summary+=("1080p file cuda: exit $rc, ${took} s; bare transcode of the hazy input ${bare} s (ratio $(awk "BEGIN{printf \"%.3f\", $took / $bare}")), of the dehazed pictures ${bare2} s (ratio $(awk "BEGIN{printf \"%.3f\", $took / $bare2}")); frames $(frames_of /tmp/in1080.mp4) -> $(frames_of /tmp/hf-cuda.mp4), audio packets $(packets_of /tmp/in1080.mp4) -> $(packets_of /tmp/hf-cuda.mp4)")

  # NVDEC (--hwdec cuda): pictures stay on the GPU. The same frames as software decoding (H.264
  # decoding is exact), so the raw y4m outputs must be identical byte for byte; and the 1080p speed.
  timeout 60 "$HF" -y -q -b cuda samples/hazy-street.mp4 /tmp/sw.y4m 2>/dev/null
  timeout 60 "$HF" -y -q -b cuda --hwdec cuda samples/hazy-street.mp4 /tmp/hw.y4m 2>/dev/null
  if [[ -s /tmp/sw.y4m ]] && cmp -s /tmp/sw.y4m /tmp/hw.y4m; then same=identical; else same=DIFFERENT; fi
  summary+=("hwdec cuda vs software decode: $same output ($(grep -c FRAME /tmp/hw.y4m) frames)")
  t0=$(now); timeout 200 "$HF" -y -v -b cuda --hwdec cuda --preset veryfast --crf 23 /tmp/in1080.mp4 /tmp/hf-hwdec.mp4 \
    >>"$OUT/pipeline.txt" 2>&1; rc=$?; t1=$(now)
  took=$(awk "BEGIN{print $t1 - $t0}")
  summary+=("1080p file cuda --hwdec cuda: exit $rc, ${took} s; frames $(frames_of /tmp/hf-hwdec.mp4)")
  for dec in "" "--hwdec cuda"; do
    # shellcheck disable=SC2086
    timeout 100 "$HF" bench --input /tmp/in1080.mp4 --end-to-end --backend cuda $dec >"$OUT/e2e-bench.txt" 2>&1
    summary+=("bench --end-to-end ${dec:-cpu decode}: $(tr '\n' ' ' <"$OUT/e2e-bench.txt")")
  done

  # A live source at 30 fps through --live: drops and latency are reported by the summary line.
  "$FF" -v error -re -f lavfi -i testsrc2=size=1920x1080:rate=30 -t 8 -pix_fmt yuv420p -f yuv4mpegpipe - |
    timeout 60 "$HF" --live -b cuda - /tmp/live.mkv >"$OUT/live.txt" 2>&1
  summary+=("live 1080p30 cuda: exit $? $(tail -n 1 "$OUT/live.txt")")
  # This GPU has no NVENC engine: the error must say so.
  timeout 30 "$HF" -y -b cuda --encoder h264_nvenc samples/hazy-street.mp4 /tmp/nvenc.mp4 >"$OUT/nvenc.txt" 2>&1
  summary+=("h264_nvenc: exit $? $(tail -n 1 "$OUT/nvenc.txt")")
  tail -n 40 "$OUT/pipeline.txt"
fi

# Jobs (SPEC 8) on this machine's GPUs: chunked runs give the single run's frames (FFV1 outputs
# compared picture by picture) and audio. The scaling table is scripts/jobs-scaling.sh.
if [[ $what == jobs && -x .device/hazefree && -x .device/ffmpeg ]]; then
  HF=.device/hazefree FF=.device/ffmpeg
  pictures() { "$FF" -v error -i "$1" -map 0:v -f framemd5 - | grep -v '^#' | awk -F, '{print $2, $6}'; }
  audio() { "$FF" -v error -i "$1" -map 0:a -c copy -f framemd5 - | grep -v '^#'; }
  # The sample clip twice (the loop point is a cut), re-encoded with B-frames and open GOPs; its audio.
  "$FF" -v error -y -stream_loop 1 -i samples/hazy-street.mp4 -c:v libx264 -preset veryfast \
    -x264-params open-gop=1:bframes=3:keyint=25 -c:a copy /tmp/jobs-clip.mp4
  # And the same with closed GOPs (IDR keyframes: a chunk's decoding starts at its own keyframe).
  "$FF" -v error -y -stream_loop 1 -i samples/hazy-street.mp4 -c:v libx264 -preset veryfast \
    -x264-params bframes=3:keyint=25 -c:a copy /tmp/jobs-closed.mp4
  # And with one keyframe: every chunk but the first starts between keyframes (its pre-roll).
  "$FF" -v error -y -stream_loop 1 -i samples/hazy-street.mp4 -c:v libx264 -preset veryfast \
    -x264-params bframes=3:keyint=1000:scenecut=0 -c:a copy /tmp/jobs-onekey.mp4
  for clip in ${JOB_CLIPS:-/tmp/jobs-clip.mp4 /tmp/jobs-closed.mp4 /tmp/jobs-onekey.mp4}; do
  for args in "-m dcp" "-m dcp --hwdec cuda" "-m he --set he.temporal=0.3"; do
    # shellcheck disable=SC2086
    timeout 120 "$HF" -y -q -b cuda $args --encoder ffv1 "$clip" /tmp/jobs-single.mkv >>"$OUT/jobs.log" 2>&1
    # 3 and 7 chunks: each frame decoded once (the fused analysis; on NVDEC with DCP the chunk held
    # on the GPU too, HE's renders there take the two-pass form); "3 two-pass": a memory budget
    # too small for any chunk; "auto": --chunks auto; the
    # --chunk-starts: cuts one frame after a keyframe, one before, and inside GOPs.
    for cut in "--chunks 3" "--chunks 7" "--chunks 3 --job-memory 0.01" "--chunks auto --workers-per-gpu 3" \
               "--chunk-starts 1,24,26,49,101,163 --workers-per-gpu 3"; do
      # shellcheck disable=SC2086
      timeout 120 "$HF" -y -q -b cuda $args --encoder ffv1 $cut --gpus all "$clip" /tmp/jobs-chunked.mkv \
        >>"$OUT/jobs.log" 2>&1
      rc=$?
      if [[ $rc -eq 0 ]] && diff <(pictures /tmp/jobs-single.mkv) <(pictures /tmp/jobs-chunked.mkv) >/dev/null &&
         diff <(audio /tmp/jobs-single.mkv) <(audio /tmp/jobs-chunked.mkv) >/dev/null; then same=identical; else same=DIFFERENT; fi
      summary+=("jobs $(basename $clip) cuda $args, $cut on all GPUs: exit $rc, $same to the single run ($(pictures /tmp/jobs-chunked.mkv | wc -l) frames)")
    done
  done
  done
  # --chunks auto with x264: the first chunk's encoder has the leading thread count (the line's
  # "the first chunk's with N") while the other workers decode; every other chunk the common one.
  timeout 120 "$HF" -y -v -b cuda --chunks auto --workers-per-gpu 6 --gpus all /tmp/jobs-onekey.mp4 /tmp/jobs-auto.mp4 \
    >"$OUT/jobs-auto.txt" 2>&1
  rc=$?
  lead=$(sed -n "s/.*the first chunk's with \([0-9]*\) while.*/\1/p" "$OUT/jobs-auto.txt" | head -n 1)
  common=$(sed -n 's/.* at once with \([0-9]*\) threads each.*/\1/p' "$OUT/jobs-auto.txt" | head -n 1)
  threads=$(sed -n 's/^hazefree: render [0-9]*: began.* (\([0-9]*\) encoder threads).*/\1/p' "$OUT/jobs-auto.txt")
  renders=$(grep -c '^hazefree: render [0-9]*: began' "$OUT/jobs-auto.txt")
  leading=$(grep -cx "${lead:-none}" <<<"$threads")
  others=$(grep -cx "${common:-none}" <<<"$threads")
  threads=$(sort -n <<<"$threads" | uniq -c | tr -s ' ' | tr '\n' ';')
  if [[ $rc -eq 0 && $renders -gt 1 && $leading -eq 1 && $((leading + others)) -eq $renders ]]; then ok=as-planned; else ok=NOT-AS-PLANNED; fi
  summary+=("jobs --chunks auto x264 threads: exit $rc, leading $lead, common $common, renders (count threads):$threads $ok")
fi

printf '%s\n' "----- summary" "${summary[@]}" | tee "$OUT/summary.txt"
# Few files come back from the GPU machine: pack the logs into one archive beside the summary.
if [[ -n ${PACK_RESULTS:-} ]]; then
  tar -C "$OUT" -czf /tmp/gpu-check-results.tgz --exclude summary.txt . && mv /tmp/gpu-check-results.tgz "$OUT/results.tgz"
  find "$OUT" -maxdepth 1 -type f ! -name results.tgz ! -name summary.txt -delete
fi
