"""`hazefree serve` end to end (SPEC 12): three sources served by ffmpeg on loopback (UDP, TCP,
and a UDP port nobody sends to) in one service; /metrics through the Prometheus client's own
parser; the JSON API with its token; live option changes seen in the pictures; refused
requests; a source killed and started again; the HLS output played by ffprobe from the
service; and the configurations refused before anything starts."""
import json
import os
import signal
import socket
import subprocess
import time

import cv2
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from serve_support import BINARY, TMP, TOKEN, Service, Source, folder, free_port, stream_table, wait_until


@pytest.fixture(scope="module")
def setup():
    base = folder("service")
    # A still, hazy picture (SMPTE bars of low contrast) for the stream whose options change: its output changes only
    # by the options; moving pictures for the others.
    udp = Source("udp", base, "smptebars=size=160x120:rate=15,eq=contrast=0.4:brightness=0.25").start()
    tcp = Source("tcp", base).start()
    dead = Source("udp", base)  # never started: nobody answers
    clip = base / "clip.ts"  # one second, for a preview-only stream that loops it
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=15", "-frames:v", "15",
                    "-c:v", "mpeg2video", str(clip)], check=True, timeout=60)
    output = base / "bars.ts"
    config = (f'[server]\ntoken = "{TOKEN}"\n\n' +
              stream_table("bars", udp.url, str(output), '[stream.dcp]\nomega = 0.95\n') +
              stream_table("moving", tcp.url, "hls") +
              stream_table("silent", dead.url) +
              stream_table("clip", str(clip)))
    service = Service(base, config)
    yield {"service": service, "udp": udp, "tcp": tcp, "output": output}
    for source in (udp, tcp):
        source.stop()
    if service.process.running():
        service.stop(signal.SIGKILL)


def running_with_frames(service, name, more_than=0):
    s = service.streams()[name]
    return s["state"] == "running" and s["frames"] > more_than


def test_two_streams_run_and_the_silent_one_is_reported(setup):
    service = setup["service"]
    assert wait_until(30, lambda: running_with_frames(service, "bars") and running_with_frames(service, "moving")), \
        service.process.text()
    streams = service.streams()
    silent = streams["silent"]
    assert silent["state"] in ("retrying", "starting") and silent["frames"] == 0
    assert wait_until(10, lambda: "input.timeout" in service.streams()["silent"]["error"]), service.streams()["silent"]
    assert streams["moving"]["output"] == "/streams/moving/index.m3u8"
    assert streams["bars"]["options"]["dcp.omega"] == "0.95"
    assert streams["bars"]["options"]["backend"] == "cpu"


def test_a_preview_only_file_loops_at_its_own_rate(setup):
    service = setup["service"]
    assert wait_until(20, lambda: running_with_frames(service, "clip", 5))
    start, first = time.monotonic(), service.streams()["clip"]["frames"]
    # The reported rate goes on over the loops (it read 0 for a second after each pass).
    rates = []
    assert wait_until(20, lambda: rates.append(service.streams()["clip"]["fps"]) or
                      service.streams()["clip"]["frames"] > first + 30, step=0.1)  # two loops more at least
    later = sorted(rates[10:])  # after the rate's first window
    assert later and later[0] > 0 and 4 < later[len(later) // 2] < 25, rates  # never 0, about 15
    clip = service.streams()["clip"]
    rate = (clip["frames"] - first) / (time.monotonic() - start)
    assert 8 < rate < 22, rate  # the file's 15 fps, not as fast as it decodes
    assert clip["state"] == "running" and clip["reconnects"] == 0 and clip["output"] == ""


def test_metrics_parse_with_the_prometheus_client(setup):
    service = setup["service"]
    assert wait_until(30, lambda: running_with_frames(service, "bars", 10) and running_with_frames(service, "moving", 10))
    status, headers, body = service.request("/metrics", token="")  # /metrics needs no token
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    # The parser names counters without their _total suffix.
    for name in ("hazefree_frames", "hazefree_dropped_frames", "hazefree_reconnects", "hazefree_lost_seconds",
                 "hazefree_fps", "hazefree_latency_seconds", "hazefree_atmospheric_light", "hazefree_streams_up",
                 "hazefree_gpu_memory_bytes"):
        assert name in families, name
    assert families["hazefree_frames"].type == "counter"
    assert families["hazefree_latency_seconds"].type == "histogram"
    frames = {s.labels["stream"]: s.value for s in families["hazefree_frames"].samples if s.name == "hazefree_frames_total"}
    assert frames["bars"] > 10 and frames["moving"] > 10 and frames["silent"] == 0
    up = [s.value for s in families["hazefree_streams_up"].samples]
    assert up == [3]
    counts = {s.labels["stream"]: s.value for s in families["hazefree_latency_seconds"].samples
              if s.name == "hazefree_latency_seconds_count"}
    assert counts["bars"] > 0
    light = {(s.labels["stream"], s.labels["channel"]): s.value for s in families["hazefree_atmospheric_light"].samples}
    assert 0 < light[("bars", "r")] <= 1 and ("silent", "g") not in light  # no DCP frame yet: no sample


def picture(service, name, view):
    status, headers, body = service.request(f"/api/streams/{name}/snapshot.jpg?view={view}")
    assert status == 200 and headers["Content-Type"] == "image/jpeg", body[:200]
    image = cv2.imdecode(np.frombuffer(body, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape[:2] == (120, 160)
    return image.astype(np.float64)


def test_a_good_option_changes_the_next_frames_and_a_bad_one_changes_nothing(setup):
    service = setup["service"]
    assert wait_until(30, lambda: running_with_frames(service, "bars"))
    before = picture(service, "bars", "output")
    source = picture(service, "bars", "input")
    status, _, body = service.request("/api/streams/bars/options", "PATCH", json.dumps({"dcp.omega": 0.2}))
    assert status == 200, body
    assert json.loads(body)["options"]["dcp.omega"] == "0.2"
    time.sleep(1.0)
    after = picture(service, "bars", "output")
    # Less haze removed: the output comes closer to the input, and far from what it was.
    assert np.abs(after - source).mean() < np.abs(before - source).mean() - 2
    assert np.abs(after - before).mean() > 2

    for bad, words in ((json.dumps({"dcp.omega": 2}), "dcp.omega"), (json.dumps({"dcp.nonsense": 1}), "dcp.nonsense"),
                       (json.dumps({"output.crf": 10}), "output.crf"), ("{not json", "JSON"), ("[1, 2]", "object"),
                       (json.dumps({"dcp.omega": 0.5, "ahe.window": 4}), "ahe.window")):
        status, _, body = service.request("/api/streams/bars/options", "PATCH", bad)
        assert status == 400, (bad, body)
        message = json.loads(body)["error"]
        assert words in message and "\n" not in message, message
        assert service.streams()["bars"]["options"]["dcp.omega"] == "0.2"  # nothing changed
    time.sleep(0.5)
    assert np.abs(picture(service, "bars", "output") - after).mean() < 2
    # The GPU backend only where there is a GPU.
    status, _, body = service.request("/api/streams/bars/options", "PATCH", json.dumps({"backend": "cuda"}))
    if status == 400:
        assert json.loads(body)["error"].startswith("backend = cuda: ")
        assert service.streams()["bars"]["options"]["backend"] == "cpu"
    else:
        assert status == 200
        assert service.request("/api/streams/bars/options", "PATCH", json.dumps({"backend": "cpu"}))[0] == 200


def test_auto_strength_outside_dcp_is_taken_with_the_command_lines_warning(setup):
    service = setup["service"]
    url = "/api/streams/bars/options"
    status, _, body = service.request(url, "PATCH", json.dumps({"mode": "he", "dcp.auto_strength": True}))
    assert status == 200, body
    answer = json.loads(body)
    assert answer["options"]["dcp.auto_strength"] == "true"
    assert answer["warnings"] == ["dcp.auto_strength (--auto-strength) follows the haze index with DCP's strength; "
                                  "--mode he has none, and runs as without it"]
    # Back to dcp (or auto defog off): nothing to warn of.
    status, _, body = service.request(url, "PATCH", json.dumps({"mode": "dcp", "dcp.auto_strength": False}))
    assert status == 200, body
    assert "warnings" not in json.loads(body)
    assert service.streams()["bars"]["options"]["mode"] == "dcp"


def test_token_404_413_and_the_service_still_serves(setup):
    service = setup["service"]
    for token in ("", "wrong"):
        status, headers, body = service.request("/api/streams", token=token)
        assert status == 401 and "token" in json.loads(body)["error"]
        assert service.request("/api/streams/bars/options", "PATCH", '{"dcp.omega": 0.5}', token=token)[0] == 401
    assert service.streams()["bars"]["options"]["dcp.omega"] != "0.5"
    # The page and pictures may carry the token in the address instead.
    assert service.request(f"/?token={TOKEN}", token="")[0] == 200
    for path in ("/nothing", "/api/streams/nobody", "/api/streams/nobody/snapshot.jpg", "/streams/bars/index.m3u8",
                 "/streams/moving/../../etc/passwd", "/streams/moving/service.toml", "/api/streams/bars/options"):
        status, _, body = service.request(path)
        assert status == 404, (path, status, body)
    status, _, _ = service.request("/api/streams/bars/options", "PATCH", json.dumps({"x": "y" * 100000}))
    assert status == 413
    for query in ("view=sideways", "width=wide", "width=-3"):
        status, _, body = service.request(f"/api/streams/bars/snapshot.jpg?{query}")
        assert status == 400 and query.split("=")[1] in json.loads(body)["error"], (query, body)
    assert service.request("/api/streams")[0] == 200
    assert service.process.running()


def test_mjpeg_preview_sends_jpeg_parts(setup):
    service = setup["service"]
    import urllib.request
    req = urllib.request.Request(service.url("/api/streams/moving/preview.mjpg?view=output"),
                                 headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(req, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("multipart/x-mixed-replace")
        data = b""
        while data.count(b"\xff\xd8") < 2 and len(data) < 2_000_000:
            data += response.read1(65536)
    assert data.startswith(b"--hazefreeframe\r\nContent-Type: image/jpeg")
    assert data.count(b"\xff\xd8") >= 2


def test_hls_output_plays_from_the_service(setup):
    service = setup["service"]
    assert wait_until(20, lambda: service.request("/streams/moving/index.m3u8")[0] == 200)
    playlist = service.request("/streams/moving/index.m3u8")[2].decode()
    assert "#EXTM3U" in playlist and ".ts" in playlist
    probe = subprocess.run(["ffprobe", "-v", "error", "-headers", f"Authorization: Bearer {TOKEN}\r\n",
                            "-read_intervals", "%+#10", "-count_frames", "-select_streams", "v:0", "-show_entries",
                            "stream=codec_type,width,height,nb_read_frames", "-of", "json",
                            service.url("/streams/moving/index.m3u8")], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    stream = json.loads(probe.stdout)["streams"][0]
    assert stream["codec_type"] == "video" and stream["width"] == 160 and int(stream["nb_read_frames"]) == 10


def test_a_source_killed_and_started_again_reconnects_only_its_stream(setup):
    service = setup["service"]
    tcp = setup["tcp"]
    assert wait_until(30, lambda: running_with_frames(service, "moving") and running_with_frames(service, "bars"))
    before = service.streams()
    tcp.stop()
    time.sleep(1.5)
    tcp.start()
    assert wait_until(30, lambda: service.streams()["moving"]["reconnects"] > before["moving"]["reconnects"]
                      and running_with_frames(service, "moving", service.streams()["moving"]["frames"] * 0)), \
        service.process.text()
    frames_back = service.streams()["moving"]["frames"]
    assert wait_until(15, lambda: service.streams()["moving"]["frames"] > frames_back + 5)
    after = service.streams()
    assert after["bars"]["reconnects"] == before["bars"]["reconnects"]
    assert after["bars"]["frames"] > before["bars"]["frames"]


def test_sigterm_finishes_every_output(setup):
    service = setup["service"]
    written = service.streams()["bars"]["frames"]
    assert service.stop(signal.SIGTERM) == 130, service.process.text()
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                            "stream=nb_read_frames", "-of", "csv=p=0", str(setup["output"])],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and probe.stderr == "", probe.stderr
    # Every frame the service counted, and those written until it stopped, are in the file.
    assert int(probe.stdout.split()[0]) >= written > 10


def test_sigint_stops_a_service_started_with_sigint_ignored():
    # As a shell starts a program in the background: SIGINT ignored.
    base = folder("sigint")
    service = Service(base, stream_table("waiting", f"udp://127.0.0.1:{free_port(socket.SOCK_DGRAM)}"),
                      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    started = time.monotonic()
    assert service.stop(signal.SIGINT) == 130, service.process.text()
    assert time.monotonic() - started < 15


def test_a_token_from_the_environment_opens_a_non_loopback_address():
    base = folder("environment-token")
    config = base / "service.toml"
    config.write_text(stream_table("waiting", f"udp://127.0.0.1:{free_port(socket.SOCK_DGRAM)}"))
    port = free_port()
    log = open(base / "service.log", "wb")
    process = subprocess.Popen([BINARY, "serve", str(config), "--listen", f"0.0.0.0:{port}"], stdout=log,
                               stderr=subprocess.STDOUT, env={"PATH": "/usr/bin:/bin", "HAZEFREE_TOKEN": "from-the-environment"})
    try:
        import urllib.request
        import urllib.error

        def status(token):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/streams",
                                         headers={"Authorization": f"Bearer {token}"})
            try:
                with urllib.request.urlopen(req, timeout=5) as response:
                    return response.status
            except urllib.error.HTTPError as e:
                return e.code
            except OSError:
                return None
        assert wait_until(20, lambda: status("from-the-environment") == 200), (base / "service.log").read_text()
        assert status("wrong") == 401
    finally:
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=30) == 130
        log.close()


# ---- configurations refused before anything starts ---------------------------------------------

def refused(config_text, *extra, env=None):
    base = folder("refused")
    path = base / "bad.toml"
    path.write_text(config_text)
    started = time.monotonic()
    done = subprocess.run([BINARY, "serve", str(path), *extra], capture_output=True, text=True, timeout=30, env=env)
    assert time.monotonic() - started < 10
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return done.returncode, lines[0]


def test_bad_configurations_are_one_line_before_anything_starts():
    listen = ["--listen", f"127.0.0.1:{free_port()}"]
    one = stream_table("a", "udp://127.0.0.1:9")
    code, line = refused("[server]\n", *listen)
    assert code == 2 and "no [[stream]]" in line
    code, line = refused(one + stream_table("a", "udp://127.0.0.1:10"), *listen)
    assert code == 2 and "'a'" in line and "twice" in line
    code, line = refused('[[stream]]\nname = "a"\ninput = "udp://127.0.0.1:9"\ncolour = 3\n', *listen)
    assert code == 2 and "colour" in line
    code, line = refused(stream_table("a", "udp://127.0.0.1:9", extra="[stream.dcp]\nomega = 2\n"), *listen)
    assert code == 2 and "dcp.omega" in line
    code, line = refused(one, "--listen", "0.0.0.0:8080", env={"PATH": "/usr/bin:/bin"})
    assert code == 2 and "token" in line
    done = subprocess.run([BINARY, "serve"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "CONFIG" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    code, line = refused("[[stream]\n", *listen)
    assert code == 2 and "bad.toml" in line
    code, line = refused('[[stream]]\nname = "a"\ninput = "udp://127.0.0.1:9"\ninput.timeout = 2\n', *listen)
    assert code == 2 and 'quoted in a table: "input.timeout" = 2' in line, line
    missing = folder("refused") / "missing.toml"
    for path, says in [(missing, f"{missing}: No such file or directory"), (missing.parent, "is a folder, not a TOML file")]:
        done = subprocess.run([BINARY, "serve", str(path), *listen], capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and done.stderr.strip().splitlines() == [f"hazefree serve: {path}: {says.split(': ')[-1]}"], done.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, line = refused(one, "--listen", f"127.0.0.1:{taken.getsockname()[1]}")
        assert code == 1 and "cannot listen" in line
