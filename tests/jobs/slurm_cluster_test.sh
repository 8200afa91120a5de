#!/usr/bin/env bash
# A job through a real Slurm cluster on localhost (SPEC 8): munged, slurmctld and two slurmd
# (-N node1 / node2 on their own ports: two nodes on one machine), all started here as root
# without systemd and stopped by their pids at the end. `hazefree job slurm` submits the analyze
# array, the render array and the join, held; the test releases them, lets one render task run a
# second time (a requeue), then the join, and compares the frames and audio with the single run.
# Exit 77 (skipped) without Slurm or root.
#   slurm_cluster_test.sh HAZEFREE_BINARY WORK_DIR
set -euo pipefail
hazefree=$1
work=$2
for program in munged slurmctld slurmd sbatch scontrol squeue ffmpeg; do
  command -v "$program" >/dev/null || { echo "skipped: $program is not installed (scripts/setup.sh installs it)"; exit 77; }
done
[[ $(id -u) -eq 0 ]] || { echo "skipped: the localhost cluster's daemons run as root"; exit 77; }

rm -rf "$work"
mkdir -p "$work"/{state,spool-node1,spool-node2,munge,log}
cluster=$work
pids=()
stop_all() {
  # Every daemon this test started, by its pid (pid files: the daemons fork into the background).
  for f in "$cluster"/slurmd-node1.pid "$cluster"/slurmd-node2.pid "$cluster"/slurmctld.pid "$cluster"/munge/munged.pid; do
    [[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for i in $(seq 1 50); do
    alive=0
    for f in "$cluster"/slurmd-node1.pid "$cluster"/slurmd-node2.pid "$cluster"/slurmctld.pid "$cluster"/munge/munged.pid; do
      [[ -s $f ]] && kill -0 "$(cat "$f")" 2>/dev/null && alive=1
    done
    ((alive)) || break
    sleep 0.1
  done
  for f in "$cluster"/slurmd-node1.pid "$cluster"/slurmd-node2.pid "$cluster"/slurmctld.pid "$cluster"/munge/munged.pid; do
    [[ -s $f ]] && kill -9 "$(cat "$f")" 2>/dev/null || true
  done
}
trap stop_all EXIT
fail() {
  echo "FAILED: $*"
  echo "--- job status"; "$hazefree" job status "$work/job" || true
  for f in "$cluster"/log/*.log "$work"/job/logs/*; do [[ -f $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done
  exit 1
}

# Ports of our own (two test runs on one machine must not meet).
base=$((20000 + ($$ % 2000) * 10))
dd if=/dev/urandom of="$cluster/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 700 "$cluster/munge"
chmod 400 "$cluster/munge/munge.key"
cat > "$cluster/slurm.conf" <<EOF
ClusterName=hazefree-test
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$cluster/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool-%n
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd-%n.pid
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
KillWait=2
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=1 RealMemory=500 State=UNKNOWN
NodeName=node2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 3)) CPUs=1 RealMemory=500 State=UNKNOWN
PartitionName=test Nodes=node1,node2 Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$cluster/slurm.conf
# No daemon keeps this test's output open: each gets /dev/null and writes its own log.
munged --force -S "$cluster/munge/munge.socket" --key-file="$cluster/munge/munge.key" \
  --log-file="$cluster/log/munged.log" --pid-file="$cluster/munge/munged.pid" \
  --seed-file="$cluster/munge/seed" </dev/null >/dev/null 2>&1 || fail "munged did not start"
slurmctld -c -f "$SLURM_CONF" </dev/null >/dev/null 2>&1 || fail "slurmctld did not start"
for node in node1 node2; do
  slurmd -N "$node" -f "$SLURM_CONF" </dev/null >/dev/null 2>&1 || fail "slurmd $node did not start"
done
for i in $(seq 1 100); do
  [[ $(sinfo -h -o '%T' 2>/dev/null | grep -c idle || true) -ge 1 ]] && [[ $(sinfo -h -N -o '%N %T' 2>/dev/null | grep -c idle || true) -eq 2 ]] && break
  sleep 0.2
done
[[ $(sinfo -h -N -o '%N %T' | grep -c idle) -eq 2 ]] || fail "the two nodes are not idle: $(sinfo -N 2>&1)"
echo "cluster up: $(sinfo -h -N -o '%N:%T' | tr '\n' ' ')"

# The clip (cuts, B-frames, open GOPs, audio), the single run, the job.
clip=$work/scenes.mp4
ffmpeg -v error -y -f lavfi -i 'testsrc2=s=160x120:r=25:d=1.2[a];smptebars=s=160x120:r=25:d=0.8[b];mandelbrot=s=160x120:r=25[m];[m]trim=duration=1.0[c];[a][b][c]concat=n=3:v=1:a=0' \
  -f lavfi -i 'sine=f=440:d=3' -c:v libx264 -preset veryfast -x264-params open-gop=1:bframes=3:keyint=12:min-keyint=1 \
  -c:a aac -shortest "$clip" </dev/null
"$hazefree" -q -y --backend cpu --encoder ffv1 "$clip" "$work/single.mkv" </dev/null
"$hazefree" job plan -q "$work/job" "$clip" "$work/out.mkv" --backend cpu --encoder ffv1 --chunks 4 </dev/null
"$hazefree" job slurm -q "$work/job" -- --hold </dev/null >/dev/null
ids=$work/job/slurm/submitted.json
analyze=$(sed -n 's/.*"analyze": "\([0-9]*\)".*/\1/p' "$ids")
render=$(sed -n 's/.*"render": "\([0-9]*\)".*/\1/p' "$ids")
join=$(sed -n 's/.*"join": "\([0-9]*\)".*/\1/p' "$ids")
[[ -n $analyze && -n $render && -n $join ]] || fail "no job ids in $ids"
grep -q -- '--requeue' "$work/job/slurm/render.sbatch" || fail "render.sbatch does not ask for --requeue"

# Wait until a job (all its array tasks) has left the queue.
wait_gone() {
  for i in $(seq 1 300); do
    [[ -z $(squeue -h -j "$1" 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  fail "job $1 still queued: $(squeue 2>&1)"
}
scontrol release "$analyze" "$render"
wait_gone "$analyze"
wait_gone "$render"
[[ -f $work/out.mkv ]] && fail "the join ran while held"
# Render task 1 a second time, as a requeue does; the join must still give the same frames.
before=$(md5sum < "$work/job/chunks/task-1.mov")
scontrol requeue "${render}_1" || fail "scontrol requeue ${render}_1"
# Slurm holds a requeued job back a while before it may start again; not here.
scontrol update JobId="${render}_1" StartTime=now || fail "scontrol update ${render}_1 StartTime=now"
wait_gone "$render"
grep -c "render 1 started" "$work/job/logs/render-1.log" | grep -q '^2$' || fail "render 1 did not run twice"
[[ $(md5sum < "$work/job/chunks/task-1.mov") == "$before" ]] || fail "render 1 gave another chunk the second time"
scontrol release "$join"
wait_gone "$join"
[[ -f $work/out.mkv ]] || fail "no output after the join"

frames() { ffmpeg -v error -i "$1" -map 0:v -f framemd5 - | grep -v '^#' | awk -F, '{print $2, $6}'; }
audio() { ffmpeg -v error -i "$1" -map 0:a -c copy -f framemd5 - | grep -v '^#'; }
[[ $(frames "$work/single.mkv" | wc -l) -eq 75 ]] || fail "the single run has $(frames "$work/single.mkv" | wc -l) frames"
diff <(frames "$work/single.mkv") <(frames "$work/out.mkv") >/dev/null || fail "frames differ from the single run"
diff <(audio "$work/single.mkv") <(audio "$work/out.mkv") >/dev/null || fail "audio differs from the single run"
"$hazefree" job status --json "$work/job" | grep -q '"state": "done"' || fail "job status does not say the join is done"
echo "a job through Slurm (2 nodes, a render task run twice) gave the single run's 75 frames and audio"
