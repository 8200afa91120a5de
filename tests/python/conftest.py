"""Shared fixtures of the Python tests: the samples, the hazefree program (for comparisons with
the command line) and a scratch folder per test. ctest sets HAZEFREE_BINARY, HAZEFREE_SAMPLES_DIR
and PYTHONPATH=<build>/python."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = pathlib.Path(os.environ.get("HAZEFREE_SAMPLES_DIR", ROOT / "samples"))


@pytest.fixture(scope="session")
def samples():
    return SAMPLES


@pytest.fixture(scope="session")
def hazefree_binary():
    path = os.environ.get("HAZEFREE_BINARY")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("HAZEFREE_BINARY must name the built hazefree program (ctest sets it)")
    return path


@pytest.fixture
def cli(hazefree_binary):
    """Runs the hazefree program; fails the test with its stderr when it fails."""
    def run(*args):
        done = subprocess.run([hazefree_binary, "-q", "-y", *map(str, args)], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"hazefree {' '.join(map(str, args))}: {done.stderr.strip()}"
        return done
    return run


def y4m_frames(path):
    """The frames of a YUV4MPEG2 file as raw bytes (planes of each frame, headers dropped)."""
    data = pathlib.Path(path).read_bytes()
    header_end = data.index(b"\n")
    header = data[:header_end].split()
    assert header[0] == b"YUV4MPEG2", f"{path}: not a y4m file"
    parts = data[header_end + 1:].split(b"FRAME")
    frames = []
    for part in parts[1:]:
        frames.append(part[part.index(b"\n") + 1:])
    return header, frames
