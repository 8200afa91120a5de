"""`hazefree serve` and its sources on a network (SPEC 12.1, the stream side): no URL secret (a
password in rtsp://, tcp://, http://, an SRT passphrase, an RTMP stream key, a ?token=) in any
response, the page or the log, FFmpeg's own lines included; SIGTERM with a source that accepts
and sends nothing and input.timeout = 0 ends every output within 2 s; a signal at any moment of
the start (from the first milliseconds) stops the service; a killed TCP source is reported `stalled` within its threshold; an
MP4 output starts at 0 s."""
import json
import os
import pathlib
import signal
import socket
import subprocess
import threading
import time

from serve_support import BINARY, TMP, Process, Service, Source, folder, free_port, stream_table, wait_until


def dead_port():
    """A loopback TCP port nothing listens on: a connection is refused at once."""
    return free_port()


class SilentListener:
    """A TCP server that accepts connections and never sends a byte (a frozen camera)."""

    def __init__(self):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(4)
        self.port = self.socket.getsockname()[1]
        self.accepted = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self):
        self.socket.close()
        for connection in self.accepted:
            connection.close()


def ffprobe_json(path, *entries):
    probe = subprocess.run(["ffprobe", "-v", "error", "-of", "json", *entries, str(path)],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and probe.stderr == "", probe.stderr
    return json.loads(probe.stdout)


SECRETS = ["RtspPa55word", "rtspuser", "TcpPa55word", "tcpuser", "SrtPassphrase1234", "RtmpStreamKey42",
           "RtmpOutKey77", "HttpTok3nValue", "HttpPa55word"]


def test_no_secret_in_responses_the_page_or_the_log():
    base = folder("secrets", "serve-network")
    rtsp, tcp, srt, rtmp, http = (dead_port() for _ in range(5))
    clip = base / "clip.ts"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=15",
                    "-frames:v", "15", "-c:v", "mpeg2video", str(clip)], check=True, timeout=60)
    config = (stream_table("rtsp", f"rtsp://rtspuser:RtspPa55word@127.0.0.1:{rtsp}/stream1") +
              stream_table("tcp", f"tcp://tcpuser:TcpPa55word@127.0.0.1:{tcp}") +
              stream_table("srt", f"srt://127.0.0.1:{srt}?mode=caller&passphrase=SrtPassphrase1234") +
              stream_table("rtmp_in", f"rtmp://127.0.0.1:{rtmp}/live/RtmpStreamKey42") +
              stream_table("http", f"http://u:HttpPa55word@127.0.0.1:{http}/cam.ts?token=HttpTok3nValue") +
              # A file to an RTMP server that is not there: the output's error names its URL.
              stream_table("rtmp_out", str(clip), f"rtmp://127.0.0.1:{rtmp}/live/RtmpOutKey77", 'format = "flv"\n'))
    service = Service(base, config, token="", options=["-v"])  # FFmpeg's own lines too
    try:
        names = ["rtsp", "tcp", "srt", "rtmp_in", "http", "rtmp_out"]
        # Every stream has failed at least once and says why.
        assert wait_until(20, lambda: all(s["error"] for s in service.streams().values())), service.streams()
        bodies = [service.request(path)[2].decode(errors="replace")
                  for path in ["/", "/metrics", "/api/streams", "/api/keys"] +
                  [f"/api/streams/{n}" for n in names] + [f"/api/streams/{n}/preset.toml" for n in names]]
        streams = service.streams()
    finally:
        assert service.stop(signal.SIGTERM) == 130, service.process.text()
    log = service.process.text()
    for text in bodies + [log]:
        for secret in SECRETS:
            assert secret not in text, (secret, text[:2000])
    # What the test looks at is there, the secrets hidden (a check that can fail).
    assert streams["rtsp"]["input"] == f"rtsp://***@127.0.0.1:{rtsp}/stream1"
    assert streams["srt"]["input"] == f"srt://127.0.0.1:{srt}?mode=caller&passphrase=***"
    assert streams["rtmp_out"]["output"] == f"rtmp://127.0.0.1:{rtmp}/live/***"
    assert f"tcp://***@127.0.0.1:{tcp}" in streams["tcp"]["error"], streams["tcp"]
    assert f"rtmp://127.0.0.1:{rtmp}/live/***" in streams["rtmp_out"]["error"], streams["rtmp_out"]
    # FFmpeg's own line, with its "[tcp @ 0x...]" prefix, passed through the redaction.
    assert any(line.startswith("[tcp @ 0x") and f"tcp://***@127.0.0.1:{tcp}" in line for line in log.splitlines()), log


def test_sigterm_with_a_silent_source_finishes_every_output_within_2_s():
    base = folder("silent", "serve-network")
    silent = SilentListener()
    source = Source("tcp", base).start()
    output = base / "recording.mp4"
    config = (stream_table("silent", f"tcp://127.0.0.1:{silent.port}").replace('"input.timeout" = 1', '"input.timeout" = 0') +
              stream_table("recorded", source.url, str(output)))
    try:
        service = Service(base, config, token="")
        assert wait_until(20, lambda: service.streams()["recorded"]["frames"] > 20 and silent.accepted), \
            service.process.text()
        time.sleep(0.3)  # the silent stream is now waiting in its opening
        assert service.streams()["silent"]["frames"] == 0
        started = time.monotonic()
        code = service.stop(signal.SIGTERM)
        took = time.monotonic() - started
    finally:
        source.stop()
        silent.close()
    assert code == 130, service.process.text()
    assert took < 2.0, (took, service.process.text())
    # Without -v the log holds the service's lines only: none of FFmpeg's or x264's "[... @ 0x...]".
    assert not [line for line in service.process.text().splitlines() if line.startswith("[")], service.process.text()
    info = ffprobe_json(output, "-show_entries", "format=start_time,duration:stream=codec_type,nb_frames")
    assert info["streams"][0]["codec_type"] == "video" and int(info["streams"][0]["nb_frames"]) > 20
    # The recording starts at 0 s, not at the source's clock.
    assert abs(float(info["format"]["start_time"])) < 0.2, info
    assert float(info["format"]["duration"]) < 30, info


def test_a_signal_at_any_moment_of_the_start_stops_the_service():
    base = folder("early", "serve-network")
    config = base / "service.toml"
    config.write_text(stream_table("early", f"tcp://127.0.0.1:{dead_port()}", "hls"))
    # The HLS folder of a service that was killed: removed by the next service to start.
    tmp = base / "tmp"
    tmp.mkdir(exist_ok=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = tmp / f"hazefree-serve-{gone.pid}-AbCdEf"
    (stale / "early").mkdir(parents=True, exist_ok=True)
    environment = dict(os.environ, TMPDIR=str(tmp))

    def start(attempt):
        log = base / f"service-{attempt}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([BINARY, "serve", str(config), "--listen", f"127.0.0.1:{free_port()}"],
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=environment)
        return process, log

    def stopped(process, sig, log):
        started = time.monotonic()
        process.send_signal(sig)
        try:
            code = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = None
        assert time.monotonic() - started < 3, log.read_text(errors="replace")
        return code

    # How long the program takes to serve here (loading its libraries is most of it).
    process, log = start("ready")
    began = time.monotonic()
    assert wait_until(20, lambda: b"stream on http" in log.read_bytes(), step=0.01), log.read_text()
    ready = time.monotonic() - began
    assert stopped(process, signal.SIGTERM, log) == 130
    assert not stale.exists()
    # Signals from the first milliseconds to just after the service is ready: before the program
    # handles signals (still loading) the signal's default action ends it; once it does, it
    # stops the service with status 130; never is a signal lost.
    for attempt, fraction in enumerate([0.0, 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.3]):
        sig = signal.SIGTERM if attempt % 2 == 0 else signal.SIGINT
        process, log = start(attempt)
        time.sleep(fraction * ready)
        code = stopped(process, sig, log)
        assert code in (130, -sig), (fraction * ready, code, log.read_text(errors="replace"))
    # The sweep's times are fractions of one start's time, and a loaded machine starts the next
    # ones slower: whatever the sweep reached, a signal once the service says it serves stops it
    # with status 130 (its handling began before that line).
    for attempt, sig in [("served-term", signal.SIGTERM), ("served-int", signal.SIGINT)]:
        process, log = start(attempt)
        assert wait_until(20, lambda: b"stream on http" in log.read_bytes(), step=0.01), log.read_text()
        assert stopped(process, sig, log) == 130, log.read_text(errors="replace")
    assert [p.name for p in tmp.iterdir()] == []  # each service removed its own folder


def test_a_killed_tcp_source_is_stalled_within_its_threshold():
    base = folder("stalled", "serve-network")
    source = Source("tcp", base).start()
    service = Service(base, stream_table("cam", source.url), token="")  # input.timeout = 1
    try:
        assert wait_until(20, lambda: service.streams()["cam"]["state"] == "running"
                          and service.streams()["cam"]["frames"] > 10), service.process.text()
        assert service.streams()["cam"]["seconds_since_frame"] < 1
        source.stop()
        killed = time.monotonic()
        assert wait_until(5, lambda: service.streams()["cam"]["state"] == "stalled", step=0.05), service.streams()
        seen = time.monotonic() - killed
        assert seen < 1.0 + 0.8, seen  # the threshold, and a frame period and a poll more
        cam = service.streams()["cam"]
        assert cam["seconds_since_frame"] >= 1.0 and cam["error"], cam
        metrics = service.request("/metrics")[2].decode()
        assert 'hazefree_stream_up{stream="cam"} 0' in metrics, metrics
        assert "hazefree_streams_up 0" in metrics
        # Back: not waited for with Source.start(), whose look for the listening socket can miss
        # it when the reconnecting service takes the one connection it accepts at once.
        source.process = Process(["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi",
                                  "-i", source.picture, "-c:v", "mpeg2video", "-g", "5", "-f", "mpegts",
                                  source.url + "?listen=1"], base / "source-back.log")
        assert wait_until(20, lambda: service.streams()["cam"]["state"] == "running"), service.streams()
        assert 'hazefree_stream_up{stream="cam"} 1' in service.request("/metrics")[2].decode()
    finally:
        source.stop()
        assert service.stop(signal.SIGTERM) == 130, service.process.text()


def test_a_stream_started_again_records_into_a_new_file_beside_the_first():
    base = folder("recordings", "serve-network")
    clip = base / "clip.ts"  # a file input with an output: run live, ended, started again
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=15",
                    "-frames:v", "15", "-c:v", "mpeg2video", str(clip)], check=True, timeout=60)
    first, second = base / "rec.mkv", base / "rec-2.mkv"
    for old in (first, second, base / "rec-3.mkv"):
        old.unlink(missing_ok=True)
    service = Service(base, stream_table("rec", str(clip), str(first)), token="")
    try:
        assert wait_until(30, lambda: (base / "rec-3.mkv").exists()), service.process.text()
    finally:
        assert service.stop(signal.SIGTERM) == 130, service.process.text()
    # Each run's recording is whole: none was written over.
    for path in (first, second):
        info = ffprobe_json(path, "-count_frames", "-show_entries", "stream=nb_read_frames")
        assert int(info["streams"][0]["nb_read_frames"]) > 0, (path, info)
