#!/usr/bin/env bash
# The GStreamer element's cost per 1080p frame against the command line's processing time per
# frame on the same backend (docs/PERFORMANCE.md):
#   element: `videotestsrc ! video/x-raw,format=I420,1920x1080 ! hazefree ! fakesink sync=false`
#            minus the same pipeline without hazefree, both as the slope between a short and a
#            long run (start-up, e.g. the CUDA context, cancels out);
#   CLI:     `hazefree bench --size 1920x1080` (the backend on frames in memory, ms/frame).
# Each figure is the least of REPEAT measurements (default 3): on a shared machine the least is
# the one other work disturbed least.
#   scripts/bench-gst.sh [BACKEND [MODE [FRAMES]]]     defaults: cpu dcp 60
#   HAZEFREE=path/to/hazefree  GST_LAUNCH=path/to/gst-launch-1.0  (GST_PLUGIN_PATH must find hazefree)
#   THREADS=N  CPU threads of both (default 0: all cores; 1 is steadier on a busy machine)
#   LANES=1|2  the element's `lanes` property (default 2: on the CUDA backend one frame's copies
#              overlap the next one's processing; 1: frame by frame)
#   CUDA_MEMORY=1  frames in CUDA memory: `videotestsrc ! ... ! cudaupload ! [hazefree !]
#              cudadownload ! fakesink` (gst-plugins-bad's nvcodec), so the element processes them
#              where they are; the upload and download are in both runs and cancel out
#   FORMAT=I420|NV12  the frames' format (default I420)
set -euo pipefail
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }  # no bc needed
backend=${1:-cpu}
mode=${2:-dcp}
frames=${3:-60}
hazefree=${HAZEFREE:-hazefree}
launch=${GST_LAUNCH:-gst-launch-1.0}
short=$((frames / 4 > 0 ? frames / 4 : 1))
lanes=${LANES:-2}
format=${FORMAT:-I420}
upload="" download=""
if [[ ${CUDA_MEMORY:-0} == 1 ]]; then
  upload="cudaupload !"
  download="cudadownload !"
fi

seconds() {  # seconds one pipeline takes, with FRAMES buffers and ELEMENT between source and sink
  local n=$1 element=$2 start end
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$launch" -q videotestsrc num-buffers="$n" pattern=smpte ! \
    video/x-raw,format="$format",width=1920,height=1080,framerate=30/1 ! $upload $element $download \
    fakesink sync=false >/dev/null
  end=$(date +%s.%N)
  calc "$end - $start"
}
slope_ms() {  # ms per frame between the short and the long run
  local element=$1 t_short t_long
  t_short=$(seconds "$short" "$element")
  t_long=$(seconds "$frames" "$element")
  calc "($t_long - $t_short) * 1000 / ($frames - $short)"
}

least() { if [[ -z $1 ]] || awk "BEGIN { exit !($2 < $1) }"; then echo "$2"; else echo "$1"; fi; }
with="" without="" cli=""
for ((r = 0; r < ${REPEAT:-3}; ++r)); do
  with=$(least "$with" "$(slope_ms "hazefree backend=$backend mode=$mode threads=${THREADS:-0} lanes=$lanes !")")
  without=$(least "$without" "$(slope_ms "")")
  one=$("$hazefree" bench --size 1920x1080 --mode "$mode" --frames "$frames" --backend "$backend" \
          --threads "${THREADS:-0}" 2>/dev/null |
        awk -v m="$mode" '$1 == m {for (i = 1; i <= NF; ++i) if ($i ~ /^[0-9]+x[0-9]+$/) {print $(i + 1); exit}}')
  if [[ -z $one ]]; then
    echo "bench-gst: no ms/frame from '$hazefree bench'" >&2
    exit 1
  fi
  cli=$(least "$cli" "$one")
done
element=$(calc "$with - $without")
memory="system memory, lanes=$lanes"
[[ -n $upload ]] && memory="CUDA memory (cudaupload ! hazefree ! cudadownload)"
printf 'mode %s, backend %s (threads %s), 1920x1080 %s, %s, %d frames, least of %d\n' "$mode" "$backend" \
  "${THREADS:-0}" "$format" "$memory" "$frames" "${REPEAT:-3}"
printf '  pipeline without hazefree   %8.3f ms/frame\n' "$without"
printf '  element (with - without)    %8.3f ms/frame\n' "$element"
printf '  CLI (hazefree bench)        %8.3f ms/frame\n' "$cli"
printf '  element over CLI            %+8.1f %%\n' "$(calc "($element - $cli) * 100 / $cli")"
