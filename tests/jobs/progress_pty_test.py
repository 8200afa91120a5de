#!/usr/bin/env python3
"""A job's progress line on a pseudo-terminal: `hazefree --chunks N` run with its stderr on a
pty must redraw one line in place (carriage returns, no new line between) with frames done of
the total, an ETA and the chunks' counts, ending at all frames; with -q it prints nothing.

Usage: progress_pty_test.py HAZEFREE INPUT TMPDIR"""
import os
import pty
import re
import sys


def run_on_pty(binary, args):
    """Runs binary with args on a new pseudo-terminal; returns (exit status, what it printed)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(binary, [binary] + args)
    printed = b""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        printed += data
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), printed.decode(errors="replace")


def main():
    binary, source, tmp = sys.argv[1:4]
    os.makedirs(tmp, exist_ok=True)
    out = os.path.join(tmp, "progress.mkv")
    status, printed = run_on_pty(binary, ["-y", "--backend", "cpu", "--mode", "he", "--encoder", "ffv1",
                                          "--chunks", "3", source, out])
    assert status == 0, printed
    lines = [line.replace("\x1b[K", "") for line in re.findall(r"\rhazefree: (frame=\s*\d+/\d+ [^\r\n]*)", printed)]
    assert len(lines) >= 2, f"no progress line redrawn in place:\n{printed!r}"
    for line in lines:
        assert re.search(r"fps=\s*\d+(\.\d)? elapsed=\d+:\d\d:\d\d eta=(\d+:\d\d:\d\d|\?); "
                         r"chunks \d+ running, \d+ done, \d+ failed of \d+", line), line
    assert "eta=0:00:00" in lines[-1], lines[-1]
    total = re.search(r"frame=\s*\d+/(\d+)", lines[-1]).group(1)
    assert re.match(rf"frame=\s*{total}/{total} ", lines[-1]), lines[-1]
    chunks = re.search(r"of (\d+)$", lines[-1].replace("\x1b[K", "")).group(1)
    assert f"0 running, {chunks} done, 0 failed of {chunks}" in lines[-1], lines[-1]

    status, printed = run_on_pty(binary, ["-q", "-y", "--backend", "cpu", "--mode", "he", "--encoder", "ffv1",
                                          "--chunks", "3", source, out])
    assert status == 0, printed
    assert printed == "", f"-q printed:\n{printed!r}"
    os.remove(out)
    print(f"{len(lines)} progress lines; the last: {lines[-1]}")


if __name__ == "__main__":
    main()
