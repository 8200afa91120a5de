#!/usr/bin/env bash
# Where a job's time goes on a CPU-bound GPU host: wall, user and system CPU seconds of the
# single run, of `--chunks` jobs in their variants, and of bare `ffmpeg` x264 transcodes of the
# same pictures, on the input scripts/jobs-scaling.sh makes. Run from the repository root on the
# GPU machine with the binaries of .device/ (scripts/build-device.sh).
#   scripts/jobs-cpu-profile.sh OUT_DIR       writes OUT_DIR/cpu-profile.txt
#   PARTS=1 scripts/jobs-cpu-profile.sh OUT_DIR   the single run's parts against ffmpeg's instead
set -u
OUT=${1:-$PWD/cpu-profile-out}
HF=${HF:-.device/hazefree}
FF=${FF:-.device/ffmpeg}
frames=${FRAMES:-3008}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
input=/tmp/scaling-in.mp4
if [[ ! -f $input ]]; then
  "$FF" -v error -y -stream_loop $((frames / 100 + 1)) -i samples/hazy-street.mp4 -vf scale=1920:1080 -frames:v "$frames" \
    -c:v libx264 -preset ultrafast -crf 18 -c:a copy "$input" || exit 1
fi
[[ -f /tmp/scaling-dehazed.mp4 ]] || "$HF" -y -q -b cuda --preset ultrafast --crf 18 "$input" /tmp/scaling-dehazed.mp4 || exit 1
TIMEFORMAT='%R %U %S'
row() {  # name, then a command; prints wall s, CPU s (user + system), cores busy on average, fps
  local name=$1
  shift
  local t
  t=$( { time "$@" >>"$OUT/cpu-profile.log" 2>&1; } 2>&1 | tail -n 1)
  read -r wall user sys <<<"$t"
  awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v f="$frames" -v k="${K:-1}" \
    'BEGIN{printf "%-62s wall %6.2f s  user %7.1f s  sys %6.1f s  cores busy %5.1f  %6.1f fps\n", n, w, u, s, (u+s)/w, f*k/w}' |
    tee -a "$OUT/cpu-profile.txt"
}
job() { "$HF" -y -q -b cuda --preset veryfast --crf 23 "$@"; }
bare() { for i in $(seq 1 "$1"); do "$FF" -v error -y -i /tmp/scaling-dehazed.mp4 -c:v libx264 -preset veryfast -crf 23 -c:a copy "/tmp/prof-bare-$i.mp4" & done; wait; }
echo "host: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), $(nproc) cores, $(date -u +%Y-%m-%d); $frames frames" | tee "$OUT/cpu-profile.txt"
if [[ ${PARTS:-0} == 1 ]]; then
  # The single run taken apart against ffmpeg doing the same parts: decoding alone, decoding and
  # processing into the null muxer, and x264 added (into the null muxer and into MP4).
  row "ffmpeg: decode the input (null muxer)" "$FF" -v error -y -i "$input" -f null -
  row "ffmpeg: decode the dehazed pictures (null muxer)" "$FF" -v error -y -i /tmp/scaling-dehazed.mp4 -f null -
  row "hazefree: decode + DCP, raw video into the null muxer" "$HF" -y -q -b cuda "$input" -f null /tmp/prof-null
  row "hazefree: decode + DCP + x264 into the null muxer" job --encoder libx264 "$input" -f null /tmp/prof-null
  row "ffmpeg: decode the dehazed pictures + x264 (null muxer)" "$FF" -v error -y -i /tmp/scaling-dehazed.mp4 \
    -c:v libx264 -preset veryfast -crf 23 -an -f null -
  row "hazefree: single run into MP4" job "$input" /tmp/prof-single.mp4
  row "ffmpeg: decode the dehazed pictures + x264 into MP4 (bare, 1 at once)" bare 1
  rm -f /tmp/prof-*.mp4 /tmp/prof-null
  exit 0
fi
row "single run" job "$input" /tmp/prof-single.mp4
row "--chunks auto" job --chunks auto "$input" /tmp/prof-auto.mp4
row "--chunks 24, 8 workers" job --chunks 24 --workers-per-gpu 8 "$input" /tmp/prof-w8.mp4
row "--chunks 24, 8 workers, two-pass (--job-memory 1)" job --chunks 24 --workers-per-gpu 8 --job-memory 1 "$input" /tmp/prof-w8-2pass.mp4
row "bare ffmpeg x264, 1 at once" bare 1
K=8 row "bare ffmpeg x264, 8 at once" bare 8
rm -f /tmp/prof-*.mp4
