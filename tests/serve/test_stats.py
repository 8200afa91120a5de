"""A stream's `stats` file in the service (SPEC 13): one JSON line a frame, added to over the
runs of the stream (a preview-only file looped: each pass is a run) and started afresh by a new
service, as the command line's -y replaces it; a file shared by two streams, or one that is a
stream's input or output, however spelled, refused with one line before anything starts."""
import json
import signal
import subprocess
import time

from serve_support import BINARY, TMP, TOKEN, Service, folder, free_port, stream_table, wait_until

CLIP_FRAMES = 15  # one second at 15 fps: a pass of the looped file


def make_clip(path):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=15", "-frames:v",
                    str(CLIP_FRAMES), "-c:v", "mpeg2video", str(path)], check=True, timeout=60)


def stats_lines(path):
    data = path.read_bytes()
    assert b"\0" not in data, "NUL bytes in the stats file"
    assert data.endswith(b"\n"), data[-200:]
    lines = [json.loads(line) for line in data.decode().splitlines()]
    for line in lines:
        assert set(line) == {"frame", "pts_time", "haze_index", "omega", "atmospheric_light"}, line
    return lines


def run_until(base, config, frames):
    """A service of `config` until its stream 'clip' has written more than `frames` frames; then
    stopped by SIGTERM (its runs finish, the stats file closed)."""
    service = Service(base, config)
    try:
        assert wait_until(60, lambda: service.streams()["clip"]["frames"] > frames), service.process.text()
    finally:
        assert service.stop(signal.SIGTERM) == 130, service.process.text()
    return service


def test_a_looping_file_adds_each_pass_and_a_new_service_starts_the_file_afresh():
    base = folder("stats")
    clip = base / "clip.ts"
    make_clip(clip)
    stats, other = base / "clip.jsonl", base / "other.jsonl"
    stats.write_text('{"left": "by an earlier service"}\n')
    config = (f'[server]\ntoken = "{TOKEN}"\n\n' +
              stream_table("clip", clip, extra=f'stats = "{stats}"\n') +
              stream_table("still", clip, extra=f'stats = "{other}"\nmode = "he"\n'))
    service = run_until(base, config, 3 * CLIP_FRAMES)
    lines = stats_lines(stats)
    assert len(lines) > 3 * CLIP_FRAMES, service.process.text()
    # Every pass from frame 0 to the clip's end, one after the other: none truncated away.
    assert [line["frame"] for line in lines] == [i % CLIP_FRAMES for i in range(len(lines))]
    assert all(line["haze_index"] is not None for line in lines)  # DCP's figures
    assert all(line["haze_index"] is None for line in stats_lines(other))  # the other stream's own (he)
    # A new service replaces the file (as -y): only its own lines, from frame 0.
    run_until(base, config, 2)
    again = stats_lines(stats)
    assert 2 < len(again) < len(lines)
    assert [line["frame"] for line in again] == [i % CLIP_FRAMES for i in range(len(again))]


def refused(base, config_text):
    path = base / "bad.toml"
    path.write_text(config_text)
    started = time.monotonic()
    # Relative names are the service's: it runs in `base`.
    done = subprocess.run([BINARY, "serve", str(path), "--listen", f"127.0.0.1:{free_port()}"], capture_output=True,
                          text=True, timeout=30, cwd=base)
    assert time.monotonic() - started < 10
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return done.returncode, lines[0]


def test_a_stats_file_shared_or_an_input_or_output_is_refused_before_anything_starts():
    base = folder("stats-refused")
    (base / "sub").mkdir(exist_ok=True)
    clip = base / "clip.ts"
    make_clip(clip)
    path = base / "bad.toml"
    cases = [
        # Two streams, one file (spelled three ways): their lines would interleave.
        (stream_table("a", clip, extra='stats = "shared.jsonl"\n') +
         stream_table("b", "udp://127.0.0.1:9", extra=f'stats = "{base}/sub/../shared.jsonl"\n'),
         f"stream 'b': stats {base}/sub/../shared.jsonl: is also the stats file of stream 'a'; "
         "give each stream a file of its own"),
        (stream_table("a", clip, extra='stats = "./shared.jsonl"\n') +
         stream_table("b", "udp://127.0.0.1:9", extra='stats = "file:shared.jsonl"\n'),
         "stream 'b': stats file:shared.jsonl: is also the stats file of stream 'a'; give each stream a file of its own"),
        # The stream's own output, another stream's output or input.
        (stream_table("a", "udp://127.0.0.1:9", output=str(base / "rec.ts"), extra='stats = "./rec.ts"\n'),
         "stream 'a': stats ./rec.ts: is the output file of the stream; choose another file for the statistics"),
        (stream_table("a", "udp://127.0.0.1:9", extra='stats = "sub/../rec.ts"\n') +
         stream_table("b", "udp://127.0.0.1:10", output="rec.ts"),
         "stream 'a': stats sub/../rec.ts: is the output file of stream 'b'; choose another file for the statistics"),
        (stream_table("a", "udp://127.0.0.1:9", extra='stats = "clip.ts"\n') + stream_table("b", clip),
         "stream 'a': stats clip.ts: is the input file of stream 'b'; choose another file for the statistics"),
    ]
    for config, says in cases:
        code, line = refused(base, config)
        assert code == 2 and line == f"hazefree serve: {path}: {says}", line
        assert not (base / "shared.jsonl").exists() and not (base / "rec.ts").exists()
    assert clip.stat().st_size > 0
