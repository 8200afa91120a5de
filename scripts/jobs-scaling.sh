#!/usr/bin/env bash
# The jobs' scaling table (docs/SCALING.md), on a GPU machine from the repository root, with the
# binaries of .device/ (scripts/build-device.sh): one 1080p H.264 file with audio through the
# single run, through `--chunks` on one GPU and on all GPUs with one or more workers per GPU, and,
# in the same run, concurrent bare `ffmpeg -c:v libx264 -preset veryfast` transcodes of the same
# dehazed pictures (1, 2, 4, 8 at once): the encoder's limit on this host.
#   scripts/jobs-scaling.sh OUT_DIR      writes OUT_DIR/scaling.txt and OUT_DIR/scaling.json
set -u
OUT=${1:-$PWD/scaling-out}
HF=${HF:-.device/hazefree}
FF=${FF:-.device/ffmpeg}
FP=${FP:-.device/ffprobe}
frames=${FRAMES:-3008}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
input=/tmp/scaling-in.mp4
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
cores=$(nproc)
now() { date +%s.%N; }
count_frames() { "$FP" -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }

# The input: the sample clip (100 frames) looped to $frames frames at 1080p (x264 ultrafast, keyframes every
# 250 frames as x264 places them), its audio kept.
"$FF" -v error -y -stream_loop $((frames / 100 + 1)) -i samples/hazy-street.mp4 -vf scale=1920:1080 -frames:v "$frames" \
  -c:v libx264 -preset ultrafast -crf 18 -c:a copy "$input" || exit 1
# The pictures hazefree encodes, for the bare transcodes.
"$HF" -y -q -b cuda --preset ultrafast --crf 18 "$input" /tmp/scaling-dehazed.mp4 || exit 1

rows=()
json=()
record() {  # name seconds frames exit
  local fps
  fps=$(awk "BEGIN{printf \"%.1f\", $3 / $2}")
  rows+=("$(printf '%-52s %8.2f s %9s fps  %s frames  exit %s' "$1" "$2" "$fps" "$3" "$4")")
  json+=("{\"run\": \"$1\", \"seconds\": $2, \"fps\": $fps, \"frames\": $3, \"exit\": $4}")
}
hazefree_run() {  # name, then hazefree arguments (the output is the last one)
  local name=$1
  shift
  local out="${*: -1}"
  rm -f "$out"
  local t0 t1 rc
  t0=$(now)
  timeout 300 "$HF" -y -q -b cuda --preset veryfast --crf 23 "$@" >>"$OUT/scaling.log" 2>&1
  rc=$?
  t1=$(now)
  record "$name" "$(awk "BEGIN{print $t1 - $t0}")" "$(count_frames "$out" 2>/dev/null || echo 0)" "$rc"
}

hazefree_run "single run, 1 GPU" "$input" /tmp/scaling-single.mp4
hazefree_run "--chunks 4 --gpus 0 (1 GPU, 1 worker)" --chunks 4 --gpus 0 "$input" /tmp/scaling-c4g0.mp4
hazefree_run "--chunks 4 --gpus 0, NVDEC" --chunks 4 --gpus 0 --hwdec cuda "$input" /tmp/scaling-c4g0-nvdec.mp4
if [[ $gpus -ge 2 ]]; then
  for w in 1 2 4; do
    hazefree_run "--chunks $((gpus * w * 2)) --gpus all ($gpus GPUs x $w worker$([[ $w -gt 1 ]] && echo s))" \
      --chunks $((gpus * w * 2)) --gpus all --workers-per-gpu $w "$input" "/tmp/scaling-all-w$w.mp4"
  done
  if [[ $gpus -ge 4 ]]; then
    hazefree_run "--chunks 4 --gpus 0,1 (2 GPUs x 1 worker)" --chunks 4 --gpus 0,1 "$input" /tmp/scaling-g01.mp4
  fi
  hazefree_run "--chunks $((gpus * 4)) --gpus all --workers-per-gpu 2, NVDEC" --chunks $((gpus * 4)) --gpus all \
    --workers-per-gpu 2 --hwdec cuda "$input" /tmp/scaling-all-w2-nvdec.mp4
fi

# Independent single runs at once, one per GPU, each the whole file: hazefree's own ceiling on
# this host without any chunking cost (the total fps of the $gpus runs).
t0=$(now)
for g in $(seq 0 $((gpus - 1))); do
  CUDA_VISIBLE_DEVICES=$g timeout 300 "$HF" -y -q -b cuda --preset veryfast --crf 23 "$input" "/tmp/scaling-each-$g.mp4" \
    >>"$OUT/scaling.log" 2>&1 &
done
wait
t1=$(now)
record "$gpus independent single runs at once, one per GPU" "$(awk "BEGIN{print $t1 - $t0}")" $((frames * gpus)) 0
rm -f /tmp/scaling-each-*.mp4

# The analysis pass alone (what --chunks adds on one GPU): plan + every analyze task in turn.
rm -rf /tmp/scaling-job
t0=$(now)
"$HF" job plan -q /tmp/scaling-job "$input" /tmp/scaling-job.mp4 -y -b cuda --chunks 4 >>"$OUT/scaling.log" 2>&1
t1=$(now)
record "job plan (packets only)" "$(awk "BEGIN{print $t1 - $t0}")" "$frames" 0
t0=$(now)
for k in 0 1 2 3; do CUDA_VISIBLE_DEVICES=0 "$HF" job analyze -q /tmp/scaling-job --chunk $k >>"$OUT/scaling.log" 2>&1; done
t1=$(now)
record "job analyze, 4 tasks in turn (3 of them decode)" "$(awk "BEGIN{print $t1 - $t0}")" "$frames" 0

# Bare x264 transcodes of the dehazed pictures, k at once: their total fps.
best=0
for k in 1 2 4 8; do
  t0=$(now)
  for i in $(seq 1 $k); do
    "$FF" -v error -y -i /tmp/scaling-dehazed.mp4 -c:v libx264 -preset veryfast -crf 23 -c:a copy "/tmp/scaling-bare-$i.mp4" &
  done
  wait
  t1=$(now)
  seconds=$(awk "BEGIN{print $t1 - $t0}")
  record "bare ffmpeg x264 veryfast of the dehazed pictures, $k at once" "$seconds" $((frames * k)) 0
  best=$(awk -v a="$best" -v b="$(awk "BEGIN{print $frames * $k / $seconds}")" 'BEGIN{print (b > a) ? b : a}')
done
rm -f /tmp/scaling-bare-*.mp4

{
  echo "host: $gpus x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), $cores cores, $(date -u +%Y-%m-%d)"
  echo "input: $frames frames 1920x1080 H.264 + AAC; x264 veryfast crf 23 for every output"
  printf '%s\n' "${rows[@]}"
  echo "best aggregate fps of the bare transcodes: $best"
} | tee "$OUT/scaling.txt"
printf '{"gpus": %s, "cores": %s, "frames": %s, "best_bare_fps": %s, "runs": [%s]}\n' "$gpus" "$cores" "$frames" "$best" \
  "$(IFS=,; echo "${json[*]}")" >"$OUT/scaling.json"
