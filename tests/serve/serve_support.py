"""What the service's tests share: sources served by the real `ffmpeg` program on loopback, the
service started from a TOML file, HTTP requests with or without the token, and every process
stopped by its pid. ctest sets HAZEFREE_BINARY and HAZEFREE_TEST_TMP."""
import json
import os
import pathlib
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

BINARY = os.environ.get("HAZEFREE_BINARY", "")
TMP = pathlib.Path(os.environ.get("HAZEFREE_TEST_TMP", "/tmp/hazefree-serve-tests"))
TOKEN = "s3cret-token-for-tests"  # 16 characters at least (SPEC 12.1)


def folder(name, under="serve"):
    """An empty folder for one test's files under TMP (files an earlier run left are removed)."""
    path = TMP / under / name
    path.mkdir(parents=True, exist_ok=True)
    for old in path.iterdir():
        if old.is_file():
            old.unlink()
    return path


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tcp_listening(port):
    """Whether a TCP socket listens on the loopback port (read from /proc: connecting would take
    the one connection an `ffmpeg -listen` server accepts)."""
    wanted = ":%04X" % port
    for line in pathlib.Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[1].endswith(wanted):
            return True
    return False


def wait_until(seconds, condition, step=0.1):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()


class Process:
    """A program started by a test, stopped (SIGKILL unless told otherwise) and reaped by its pid."""

    def __init__(self, args, log, preexec_fn=None):
        self.log = pathlib.Path(log)
        self.log_file = open(self.log, "wb")
        self.popen = subprocess.Popen([str(a) for a in args], stdin=subprocess.DEVNULL, stdout=self.log_file,
                                      stderr=subprocess.STDOUT, preexec_fn=preexec_fn)

    def running(self):
        return self.popen.poll() is None

    def stop(self, sig=signal.SIGKILL, timeout=30):
        if self.running():
            os.kill(self.popen.pid, sig)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
            raise
        finally:
            self.log_file.close()

    def text(self):
        return self.log.read_text(errors="replace")


class Source:
    """An MPEG-TS source served by ffmpeg on loopback (UDP or a TCP server), small and short
    GOPs so that a client that comes back decodes at once; `picture` is a lavfi source."""

    def __init__(self, kind, folder, picture="testsrc2=size=160x120:rate=15"):
        self.kind, self.folder, self.picture = kind, pathlib.Path(folder), picture
        self.port = free_port(socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM)
        self.process, self.starts = None, 0

    @property
    def url(self):
        return f"{self.kind}://127.0.0.1:{self.port}"

    def start(self):
        self.starts += 1
        target = self.url + ("?listen=1" if self.kind == "tcp" else "?pkt_size=1316")
        self.process = Process(["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi",
                                "-i", self.picture, "-c:v", "mpeg2video", "-g", "5", "-f", "mpegts", target],
                               self.folder / f"source-{self.kind}-{self.starts}.log")
        if self.kind == "tcp":
            assert wait_until(15, lambda: tcp_listening(self.port)), self.process.text()
        return self

    def stop(self):
        if self.process:
            self.process.stop()
            self.process = None


class Service:
    """`hazefree serve CONFIG` on a free loopback port."""

    def __init__(self, folder, config_text, token=TOKEN, preexec_fn=None, options=()):
        self.folder = pathlib.Path(folder)
        self.port = free_port()
        self.token = token
        self.config = self.folder / "service.toml"
        self.config.write_text(config_text)
        self.process = Process([BINARY, "serve", self.config, "--listen", f"127.0.0.1:{self.port}", *options],
                               self.folder / "service.log", preexec_fn)
        assert wait_until(20, lambda: self.answers() or not self.process.running()), self.process.text()
        assert self.process.running(), self.process.text()

    def answers(self):
        try:
            return self.request("/metrics")[0] == 200
        except OSError:
            return False

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def request(self, path, method="GET", body=None, token=None, timeout=10):
        """(status, headers, body bytes); the service's token unless another is given ("" = none)."""
        token = self.token if token is None else token
        data = body.encode() if isinstance(body, str) else body
        req = urllib.request.Request(self.url(path), data=data, method=method)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def json(self, path, **kwargs):
        status, _, body = self.request(path, **kwargs)
        assert status == 200, (path, status, body)
        return json.loads(body)

    def streams(self):
        return {s["name"]: s for s in self.json("/api/streams")}

    def stop(self, sig=signal.SIGTERM):
        return self.process.stop(sig, timeout=60)


def stream_table(name, source_url, output="", extra=""):
    """One [[stream]] of a small, quick CPU configuration."""
    out = f'output = "{output}"\n' if output else ""
    # input and output are the stream's own: their keys are written whole, quoted.
    return (f'[[stream]]\nname = "{name}"\ninput = "{source_url}"\n{out}backend = "cpu"\nthreads = 1\n'
            f'"input.timeout" = 1\n"output.preset" = "ultrafast"\n{extra}\n')
