#!/usr/bin/env python3
"""Cores used by each kind of thread of a running process, per interval, until it ends.

    scripts/jobs-thread-profile.py PID OUTFILE [INTERVAL_S]    (default 0.2 s)

Reads /proc/PID/task/*/stat (utime + stime) every interval and sums the cores used by the threads
of each name (and, as "(ended)", by threads that ended within the interval): a job's `hf-decode`, `hf-estimate`, `hf-encode`, `hf-worker` and
`hf-render` (every render's thread, `hf-render-TASK`; its encoder's and decoder's threads take its name), FFmpeg's own. Where a chunked run's idle cores are: its start,
while the held chunks decode, its end (docs/SCALING.md). Start it right after the process:
    .device/hazefree --chunks auto IN OUT & scripts/jobs-thread-profile.py $! prof.txt
"""
import collections
import os
import sys
import time


def jiffies_of(stat):
    """utime + stime of a /proc stat line."""
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def sample(pid):
    """({thread id: (name, jiffies)}, the process's jiffies, its ended threads' included) of the
    process, or None once it has ended (a zombie, not yet reaped by the shell that started it and
    this script, has ended too)."""
    threads = {}
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        if stat[stat.rindex(")") + 2] in "ZX":
            return None
        process = jiffies_of(stat)
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name.startswith("hf-render-"):
            name = "hf-render"  # every render's threads as one (each is named for its task)
        threads[tid] = (name, jiffies_of(stat))
    return threads, process


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: jobs-thread-profile.py PID OUTFILE [INTERVAL_S]")
    pid, out_path = int(sys.argv[1]), sys.argv[2]
    interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.2
    hz = os.sysconf("SC_CLK_TCK")
    start = time.time()
    previous = sample(pid)
    if previous is None:
        sys.exit(f"jobs-thread-profile.py: process {pid} not found")
    rows, names = [], set()
    while True:
        time.sleep(interval)
        current = sample(pid)
        if current is None:
            break
        used = collections.Counter()
        for tid, (name, jiffies) in current[0].items():
            used[name] += jiffies - previous[0].get(tid, (name, 0))[1]
        # What threads that ended within the interval used (a chunk's encoder and decoder
        # threads end with it): the process's count keeps it, the threads' counts are gone.
        used["(ended)"] = max(0, current[1] - previous[1] - sum(used.values()))
        previous = current
        names.update(used)
        rows.append((time.time() - start, {n: j / hz / interval for n, j in used.items()}))
    names = sorted(names)
    with open(out_path, "w") as out:
        out.write("seconds " + " ".join(names) + " all\n")
        for t, cores in rows:
            out.write(f"{t:.2f} " + " ".join(f"{cores.get(n, 0):.1f}" for n in names) + f" {sum(cores.values()):.1f}\n")


if __name__ == "__main__":
    main()
