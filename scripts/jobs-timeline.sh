#!/usr/bin/env bash
# Where a chunked run spends its time: runs `hazefree --chunks ...` with a kept job directory and
# prints every task's start and end (seconds from the run's start) and the join, from the runner's
# "done" lines and the tasks' own durations (DIR/state/*.json). For docs/SCALING.md.
#   scripts/jobs-timeline.sh INPUT OUTPUT [hazefree options...]     e.g. --chunks 8 --gpus all
set -u
HF=${HF:-.device/hazefree}
input=$1 output=$2
shift 2
dir=$(mktemp -d /tmp/jobs-timeline.XXXXXX)
rm -rf "$dir"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s.%N)
"$HF" -y -b cuda --preset veryfast --crf 23 --job-dir "$dir" "$@" "$input" "$output" 2>&1 |
  while IFS= read -r line; do
    printf '%s %s\n' "$(awk -v t="$(date +%s.%N)" -v t0="$t0" 'BEGIN{printf "%.2f", t - t0}')" "$line"
  done >"$dir.lines"
t1=$(date +%s.%N)
echo "run: $* ($(awk -v a="$t1" -v b="$t0" 'BEGIN{printf "%.2f", a - b}') s)"
echo "stage task   start    end   seconds  frames"
# "T hazefree: render 3 done (...)" -> the end time; the state file has the task's own duration.
grep -E 'hazefree: (analyze|render) [0-9]+ done' "$dir.lines" | while read -r t _ stage task _; do
  state="$dir/state/$stage-$task.json"
  seconds=$(sed -n 's/.*"seconds": *\([0-9.e+-]*\).*/\1/p' "$state")
  frames=$(sed -n 's/.*"frames": *\([0-9]*\).*/\1/p' "$state")
  awk -v s="$stage" -v k="$task" -v t="$t" -v d="$seconds" -v f="$frames" \
    'BEGIN{printf "%-7s %4s %6.2f %6.2f %8.2f %7s\n", s, k, t - d, t, d, f}'
done | sort -k3 -n
grep -E 'frames in' "$dir.lines" | sed 's/^/end: /'
rm -rf "$dir" "$dir.lines"
