#!/usr/bin/env bash
# The live service's stream table (issue: many cameras in one process), on the 1-GPU machine from
# the repository root, with the binaries of .device/ (scripts/build-device.sh; .device/ffmpeg is
# a static ffmpeg): N 1080p30 H.264 live sources (ffmpeg -re looping a clip to UDP MPEG-TS on
# loopback) served by one `hazefree serve` process, then by N separate `hazefree --live`
# processes, in the same run, for each N. Per row: the slowest stream's fps, frames dropped, the
# median latency (decoded -> encoded), the GPU memory of the processes (nvidia-smi) in all and
# per stream. A stream holds real time when it runs at the source's 30 fps without drops.
#   scripts/serve-bench.sh [OUT_DIR]    writes OUT_DIR/serve-bench.txt (the table) and the logs
# NS ("4 8 12 16") the stream counts; SECONDS_PER_ROW (12) how long each row runs, the first
# WARMUP (4) seconds of it not counted for the service; DRY_RUN=1 prepares the clip, the
# configurations and the commands without a GPU and runs nothing else. About 4 minutes in all.
set -u
export LC_ALL=C  # one collation for sort and join
OUT=${1:-$PWD/serve-bench-out}
HF=${HF:-.device/hazefree}
FF=${FF:-.device/ffmpeg}
NS=${NS:-4 8 12 16}
ROW_SECONDS=${SECONDS_PER_ROW:-12}
WARMUP=${WARMUP:-4}
DRY=${DRY_RUN:-0}
[[ $DRY == 1 && ! -x $FF ]] && FF=$(command -v ffmpeg)
[[ $DRY == 1 && ! -x $HF ]] && HF=build/hazefree
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for n in $NS; do
  [[ $n =~ ^[1-9][0-9]*$ && $n -le 64 ]] || { echo "serve-bench: NS: '$n' is not a stream count in 1..64" >&2; exit 2; }
done
[[ $ROW_SECONDS =~ ^[0-9]+$ && $WARMUP =~ ^[0-9]+$ && $ROW_SECONDS -gt $((WARMUP + 2)) ]] ||
  { echo "serve-bench: SECONDS_PER_ROW must be a whole number above WARMUP + 2" >&2; exit 2; }
[[ -x $FF && -x $HF ]] || { echo "serve-bench: $HF and $FF are needed (scripts/build-device.sh)" >&2; exit 2; }
log=$OUT/serve-bench.log
: >"$log"

# The clip: the sample (100 frames) at 1080p30, 10 s, H.264 with a keyframe a second.
clip=$OUT/clip-1080p30.ts
"$FF" -v error -y -stream_loop 2 -i samples/hazy-street.mp4 -vf scale=1920:1080,fps=30 -frames:v 300 -an \
  -c:v libx264 -preset veryfast -g 30 -bf 0 -f mpegts "$clip" || exit 1

pids=()
running() {  # PID: not gone and not a zombie waiting to be reaped
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [[ -n $state && $state != Z ]]
}
stop_all() {  # signal, then wait for each of our pids (SIGKILL for one still there after 20 s)
  local sig=$1 pid i
  for pid in "${pids[@]}"; do kill "-$sig" "$pid" 2>/dev/null; done
  for ((i = 0; i < 200; i++)); do
    local left=0
    for pid in "${pids[@]}"; do running "$pid" && left=1; done
    ((left)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  pids=()
}
trap 'stop_all KILL' EXIT
start_sources() {  # N: sources on UDP ports 21001.. (ffmpeg -re loops the clip)
  local i
  for ((i = 1; i <= $1; i++)); do
    "$FF" -v error -re -stream_loop -1 -i "$clip" -c copy -f mpegts "udp://127.0.0.1:$((21000 + i))?pkt_size=1316" \
      >>"$log" 2>&1 &
    pids+=($!)
  done
}
gpu_mb() {  # the GPU memory (MiB) of the given pids
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
    awk -F', *' -v pids=" $* " 'index(pids, " " $1 " ") { sum += $2 } END { print sum + 0 }'
}
http_get() {  # PORT PATH: the body (bash's /dev/tcp; HTTP/1.0 closes after the answer)
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  sed '1,/^\r$/d' <&3
  exec 3>&-
}
metric() {  # TEXT NAME: per stream "stream value" lines of a metric
  awk -v name="$2" '$1 ~ "^" name "\\{stream=" { split($1, a, "\""); print a[2], $2 }' <<<"$1"
}

median_ms() {  # FIRST LAST: the median latency (ms) between two scrapes, interpolated in its histogram bucket
  awk 'FNR == 1 { file++ }
       /^hazefree_latency_seconds_bucket/ {
         match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
         if (!(le in seen)) { seen[le] = 1; order[++n] = le }
         count[file, le] += $2 }
       END {
         total = count[2, "+Inf"] - count[1, "+Inf"]
         if (total <= 0) { print 0; exit }
         lo = 0; below = 0
         for (i = 1; i <= n; i++) {
           le = order[i]; c = count[2, le] - count[1, le]
           if (c >= total / 2) {
             if (le == "+Inf") { print lo * 1000; exit }
             f = c > below ? (total / 2 - below) / (c - below) : 0
             print (lo + f * (le - lo)) * 1000; exit }
           below = c; lo = le }
       }' <(echo "$1") <(echo "$2")
}

rows=("$(printf '%-8s %3s  %10s  %8s  %10s  %10s  %12s' mode N 'min fps' dropped 'median ms' 'GPU MiB' 'MiB/stream')")
record() { rows+=("$(printf '%-8s %3d  %10.1f  %8d  %10.1f  %10d  %12.0f' "$@")"); }

serve_row() {  # N
  local n=$1 i port=18080 config=$OUT/serve-$1.toml
  : >"$config"
  for ((i = 1; i <= n; i++)); do
    printf '[[stream]]\nname = "cam%d"\ninput = "udp://127.0.0.1:%d"\noutput = "udp://127.0.0.1:%d?pkt_size=1316"\nformat = "mpegts"\nbackend = "cuda"\n\n' \
      "$i" $((21000 + i)) $((23000 + i)) >>"$config"
  done
  [[ $DRY == 1 ]] && { echo "serve-bench: would run $HF serve $config --listen 127.0.0.1:$port"; return; }
  start_sources "$n"
  "$HF" serve "$config" --listen "127.0.0.1:$port" >>"$log" 2>&1 &
  local server=$!
  pids+=("$server")
  sleep "$WARMUP"
  local first t0 last t1
  first=$(http_get $port /metrics); t0=$(date +%s.%N)
  sleep $((ROW_SECONDS - WARMUP - 1))
  local memory
  memory=$(gpu_mb "$server")
  sleep 1
  last=$(http_get $port /metrics); t1=$(date +%s.%N)
  stop_all INT
  # The slowest stream's rate and the drops between the two scrapes; the median latency from the
  # histogram's buckets between them (interpolated in its bucket).
  local fps dropped median
  fps=$(join <(metric "$first" hazefree_frames_total | sort -k1,1) <(metric "$last" hazefree_frames_total | sort -k1,1) |
    awk -v s="$(awk "BEGIN{print $t1 - $t0}")" '{ r = ($3 - $2) / s; if (min == "" || r < min) min = r } END { print min + 0 }')
  dropped=$(join <(metric "$first" hazefree_dropped_frames_total | sort -k1,1) <(metric "$last" hazefree_dropped_frames_total | sort -k1,1) |
    awk '{ d += $3 - $2 } END { print d + 0 }')
  median=$(median_ms "$first" "$last")
  record serve "$n" "$fps" "$dropped" "$median" "$memory" "$(awk "BEGIN{print $memory / $n}")"
}

separate_row() {  # N
  local n=$1 i
  [[ $DRY == 1 ]] && { echo "serve-bench: would run $n x $HF --live -b cuda -f mpegts udp://... udp://..."; return; }
  start_sources "$n"
  local runs=()
  for ((i = 1; i <= n; i++)); do
    "$HF" --live -b cuda --set output.format=mpegts "udp://127.0.0.1:$((21000 + i))" \
      "udp://127.0.0.1:$((23000 + i))?pkt_size=1316" 2>"$OUT/live-$n-$i.err" &
    runs+=($!)
    pids+=($!)
  done
  sleep $((ROW_SECONDS - 1))
  local memory
  memory=$(gpu_mb "${runs[@]}")
  sleep 1
  stop_all INT
  # Each process's summary: "N frames in S s (F fps), ... D frames dropped, latency mean X ms, median Y, ..."
  local fps dropped median
  fps=$(cat "$OUT"/live-"$n"-*.err | sed -n 's/.*frames in [0-9.]* s (\([0-9.]*\) fps).*/\1/p' |
    awk '{ if (min == "" || $1 < min) min = $1 } END { print min + 0 }')
  dropped=$(cat "$OUT"/live-"$n"-*.err | sed -n 's/.* \([0-9]*\) frames dropped.*/\1/p' | awk '{ d += $1 } END { print d + 0 }')
  median=$(cat "$OUT"/live-"$n"-*.err | sed -n 's/.*, median \([0-9.]*\),.*/\1/p' | sort -n |
    awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }')
  record separate "$n" "$fps" "$dropped" "$median" "$memory" "$(awk "BEGIN{print $memory / $n}")"
}

for n in $NS; do
  serve_row "$n"
  separate_row "$n"
done
[[ $DRY == 1 ]] && { echo "serve-bench: dry run: clip and configurations in $OUT"; exit 0; }
{
  echo "hazefree serve vs separate --live processes, $(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores"
  echo "1080p30 H.264 sources over UDP MPEG-TS on loopback; ${ROW_SECONDS} s a row (the service: the last $((ROW_SECONDS - WARMUP)) s; separate processes: their whole run)"
  printf '%s\n' "${rows[@]}"
} | tee "$OUT/serve-bench.txt"
