#!/usr/bin/env bash
# The jobs' scaling table (docs/SCALING.md), on a GPU machine from the repository root, with the
# binaries of .device/ (scripts/build-device.sh): one 1080p H.264 file with audio through the
# single run, through `--chunks` on one GPU and on all GPUs with one or more workers per GPU, and,
# in the same run, concurrent bare `ffmpeg -c:v libx264 -preset veryfast` transcodes of the same
# dehazed pictures (1, 2, 4, 8, 16 at once): the encoder's limit on this host.
#   scripts/jobs-scaling.sh OUT_DIR      writes OUT_DIR/scaling.txt and OUT_DIR/scaling.json
# Every row also gives the cores busy on average while it ran (from /proc/stat, the whole host),
# and OUT_DIR/timelines.txt the cores busy in each half second of it (where a run leaves cores idle:
# its start, its waits, its end).
# FRAMES (3008) sets the input's length; JOB_ROWS ("4x12 8x16 8x32") the `--chunks N --gpus all`
# rows as WORKERSxCHUNKS per GPU, and NVDEC_WORKERS ("4") the workers per GPU of the same rows on
# NVDEC (three chunks each); BARE ("1 2 4 8 16") the bare transcodes at once; SHORT=1 keeps only
# the single run, --chunks auto, --chunks 4 on one worker, the JOB_ROWS and the bare transcodes
# (for long inputs); an empty JOB_ROWS, NVDEC_WORKERS or BARE leaves those rows out, INDEPENDENT=0
# the independent single runs, ONE_WORKER=0 the one-worker row. AUTO_VARIANTS ("") adds `--chunks auto` rows with more arguments,
# one row per ';'-separated list (e.g. "--encoder-opt threads=6;--set input.threads=2"), and
# EXTRA_ROWS ("") rows of any job arguments the same way (e.g. "--chunks 12 --workers-per-gpu 12"). ROUNDS (1)
# runs the hazefree rows that many times, one round after another (rows of one host differ by up to
# a quarter from one run to the next: the rounds show it, and interleave the rows compared).
# BARE_FRAMES (all) gives the bare transcodes only the first that many of the dehazed pictures: on a
# long input, 16 whole-file transcodes take longer than the rest of the table (12032 frames: over
# eight minutes on 16 cores); their total fps, the host's limit, is a rate and needs no more.
# BARE_EACH_ROUND=1 runs the bare transcodes in every round, after its hazefree rows, so that each
# round's jobs compare with the host's limit of the same minutes (a host's speed drifts within a
# run); BARE_ARGS ("") adds ffmpeg output options to them (e.g. "-threads 4").
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
# Jiffies busy and in all, over every core (the first line of /proc/stat).
cpu_jiffies() { awk '/^cpu /{t=0; for (i = 2; i <= NF; ++i) t += $i; print t - $5 - $6, t; exit}' /proc/stat; }
busy_since() {  # "busy total" from cpu_jiffies: the cores busy on average since then
  local b0=${1% *} t0=${1#* } b1 t1
  read -r b1 t1 < <(cpu_jiffies)
  awk -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v c="$cores" 'BEGIN{printf "%.1f", (t > 0 ? b / t * c : 0)}'
}
# The cores busy in each half second, written to $timeline_file until timeline_stop.
timeline_start() {
  timeline_file=$(mktemp)
  (
    read -r b0 t0 < <(cpu_jiffies)
    while sleep 0.5; do
      read -r b1 t1 < <(cpu_jiffies)
      awk -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v c="$cores" 'BEGIN{printf "%.0f ", (t > 0 ? b / t * c : 0)}'
      b0=$b1 t0=$t1
    done
  ) >"$timeline_file" &
  timeline_pid=$!
}
timeline_stop() {  # name: one line of OUT/timelines.txt
  kill "$timeline_pid" 2>/dev/null
  wait "$timeline_pid" 2>/dev/null
  printf '%-60s %s\n' "$1" "$(cat "$timeline_file")" >>"$OUT/timelines.txt"
  rm -f "$timeline_file"
}
count_frames() { "$FP" -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }

# The input: the sample clip (100 frames) looped to $frames frames at 1080p (x264 ultrafast, keyframes every
# 250 frames as x264 places them), its audio kept.
"$FF" -v error -y -stream_loop $((frames / 100 + 1)) -i samples/hazy-street.mp4 -vf scale=1920:1080 -frames:v "$frames" \
  -c:v libx264 -preset ultrafast -crf 18 -c:a copy "$input" || exit 1
# The pictures hazefree encodes, for the bare transcodes.
bare_frames=${BARE_FRAMES:-$frames}
if [[ -n ${BARE-1 2 4 8 16} ]]; then
  "$HF" -y -q -b cuda --preset ultrafast --crf 18 --frames "$bare_frames" "$input" /tmp/scaling-dehazed.mp4 || exit 1
fi

rows=()
json=()
record() {  # name seconds frames exit busy-cores
  local fps
  fps=$(awk "BEGIN{printf \"%.1f\", $3 / $2}")
  rows+=("$(printf '%-60s %8.2f s %9s fps  %s frames  exit %s  %5s cores busy' "$1" "$2" "$fps" "$3" "$4" "$5")")
  echo "${rows[-1]}" >>"$OUT/rows.txt"  # as it comes, for a run cut short
  json+=("{\"run\": \"$1\", \"seconds\": $2, \"fps\": $fps, \"frames\": $3, \"exit\": $4, \"busy_cores\": $5}")
}
hazefree_run() {  # name, then hazefree arguments (the output is the last one)
  local name=$1
  [[ ${ROUNDS:-1} == 1 ]] || name="$name, round $round"
  shift
  local out="${*: -1}"
  rm -f "$out"
  local t0 t1 rc j0
  j0=$(cpu_jiffies)
  timeline_start
  t0=$(now)
  local env=()
  if [[ $1 == env=* ]]; then env=("${1#env=}"); shift; fi
  timeout 300 env "${env[@]}" "$HF" -y -q -b cuda --preset veryfast --crf 23 "$@" >>"$OUT/scaling.log" 2>&1
  rc=$?
  t1=$(now)
  local busy
  busy=$(busy_since "$j0")
  timeline_stop "$name"
  record "$name" "$(awk "BEGIN{print $t1 - $t0}")" "$(count_frames "$out" 2>/dev/null || echo 0)" "$rc" "$busy"
}

# Bare x264 transcodes of the dehazed pictures, k at once: their total fps.
best=0
bare_rows() {  # the BARE rows, each named with $1 ("" or ", round N")
  for k in ${BARE-1 2 4 8 16}; do
    j0=$(cpu_jiffies)
    timeline_start
    t0=$(now)
    # Waits for these transcodes only: a bare `wait` would also wait for the timeline's endless loop.
    bare_pids=()
    for i in $(seq 1 $k); do
      # shellcheck disable=SC2086
      "$FF" -v error -y -nostdin -i /tmp/scaling-dehazed.mp4 -c:v libx264 -preset veryfast -crf 23 ${BARE_ARGS:-} -c:a copy \
        "/tmp/scaling-bare-$i.mp4" &
      bare_pids+=($!)
    done
    wait "${bare_pids[@]}"
    t1=$(now)
    seconds=$(awk "BEGIN{print $t1 - $t0}")
    timeline_stop "bare x264${BARE_ARGS:+ $BARE_ARGS}, $k at once$1"
    record "bare ffmpeg x264 veryfast${BARE_ARGS:+ $BARE_ARGS} of the dehazed pictures${BARE_FRAMES:+ (the first $bare_frames)}, $k at once$1" \
      "$seconds" $((bare_frames * k)) 0 "$(busy_since "$j0")"
    best=$(awk -v a="$best" -v b="$(awk "BEGIN{print $bare_frames * $k / $seconds}")" 'BEGIN{print (b > a) ? b : a}')
  done
  rm -f /tmp/scaling-bare-*.mp4
}

for round in $(seq 1 "${ROUNDS:-1}"); do
hazefree_run "single run, 1 GPU" "$input" /tmp/scaling-single.mp4
[[ ${SHORT:-0} == 1 ]] || hazefree_run "single run, 1 GPU, GPU waits spinning (HAZEFREE_GPU_WAIT=spin)" env=HAZEFREE_GPU_WAIT=spin "$input" /tmp/scaling-single-spin.mp4
[[ ${SHORT:-0} == 1 ]] || hazefree_run "single run, NVDEC" --hwdec cuda "$input" /tmp/scaling-single-nvdec.mp4
hazefree_run "--chunks auto" --chunks auto "$input" /tmp/scaling-auto.mp4
IFS=';' read -r -a auto_variants <<<"${AUTO_VARIANTS:-}"
for variant in "${auto_variants[@]}"; do
  [[ -n $variant ]] || continue
  # shellcheck disable=SC2086
  hazefree_run "--chunks auto $variant" --chunks auto $variant "$input" /tmp/scaling-auto-variant.mp4
done
IFS=';' read -r -a extra_rows <<<"${EXTRA_ROWS:-}"
for extra in "${extra_rows[@]}"; do
  [[ -n $extra ]] || continue
  # shellcheck disable=SC2086
  hazefree_run "$extra" $extra "$input" /tmp/scaling-extra.mp4
done
[[ ${ONE_WORKER:-1} == 0 ]] || hazefree_run "--chunks 4 --gpus 0 (1 worker)" --chunks 4 --gpus 0 "$input" /tmp/scaling-c4g0.mp4
[[ ${SHORT:-0} == 1 ]] || hazefree_run "--chunks 4 --gpus 0 (1 worker), NVDEC" --chunks 4 --gpus 0 --hwdec cuda "$input" /tmp/scaling-c4g0-nvdec.mp4
[[ ${SHORT:-0} == 1 ]] || hazefree_run "--chunks 4 --gpus 0 (1 worker), two-pass (--job-memory 1)" --chunks 4 --gpus 0 --job-memory 1 "$input" /tmp/scaling-c4g0-2pass.mp4
for row in ${JOB_ROWS-4x12 8x16 8x32}; do
  w=${row%x*}
  n=$((gpus * ${row#*x}))
  hazefree_run "--chunks $n --gpus all ($gpus GPU x $w workers)" --chunks $n --gpus all --workers-per-gpu $w "$input" \
    "/tmp/scaling-all-w$w-c$n.mp4"
done
if [[ ${SHORT:-0} != 1 ]]; then
  for w in ${NVDEC_WORKERS-4}; do
    hazefree_run "--chunks $((gpus * w * 3)) --gpus all ($gpus GPU x $w workers), NVDEC" --chunks $((gpus * w * 3)) --gpus all \
      --workers-per-gpu $w --hwdec cuda "$input" "/tmp/scaling-all-nvdec-w$w.mp4"
  done
fi
if [[ $gpus -ge 4 ]]; then
  hazefree_run "--chunks 6 --gpus 0,1 (2 GPUs x 1 worker)" --chunks 6 --gpus 0,1 "$input" /tmp/scaling-g01.mp4
fi
[[ ${BARE_EACH_ROUND:-0} != 1 ]] || bare_rows ", round $round"
done

# Independent single runs at once, one per GPU, each the whole file: hazefree's own ceiling on
# this host without any chunking cost (the total fps of the $gpus runs).
if [[ $gpus -ge 2 && ${INDEPENDENT:-1} == 1 ]]; then
j0=$(cpu_jiffies)
t0=$(now)
each_pids=()
for g in $(seq 0 $((gpus - 1))); do
  CUDA_VISIBLE_DEVICES=$g timeout 300 "$HF" -y -q -b cuda --preset veryfast --crf 23 "$input" "/tmp/scaling-each-$g.mp4" \
    >>"$OUT/scaling.log" 2>&1 &
  each_pids+=($!)
done
wait "${each_pids[@]}"
t1=$(now)
record "$gpus independent single runs at once, one per GPU" "$(awk "BEGIN{print $t1 - $t0}")" $((frames * gpus)) 0 "$(busy_since "$j0")"
rm -f /tmp/scaling-each-*.mp4
fi

[[ ${BARE_EACH_ROUND:-0} == 1 ]] || bare_rows ""

{
  echo "host: $gpus x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), $cores cores, $(date -u +%Y-%m-%d)"
  echo "input: $frames frames 1920x1080 H.264 + AAC; x264 veryfast crf 23 for every output"
  printf '%s\n' "${rows[@]}"
  echo "best aggregate fps of the bare transcodes: $best"
} | tee "$OUT/scaling.txt"
printf '{"gpus": %s, "cores": %s, "frames": %s, "best_bare_fps": %s, "runs": [%s]}\n' "$gpus" "$cores" "$frames" "$best" \
  "$(IFS=,; echo "${json[*]}")" >"$OUT/scaling.json"
