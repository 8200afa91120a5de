"""The Python module on the CPU: results equal to the command line's and to independent oracles
(OpenCV's equalizeHist, a naive sliding-window AHE/CLAHE written from SPEC 4 here), every bad
input raising TypeError/ValueError with a message naming the argument, run() and frames() on the
samples, Ctrl-C finishing the output."""
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hazefree

from conftest import y4m_frames

cv2 = pytest.importorskip("cv2", reason="python3-opencv (test dependency) is not installed")


def rgb_image(path):
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert bgr is not None, f"{path}: cannot be read"
    return np.ascontiguousarray(bgr[:, :, ::-1])


def grey_image(path):
    grey = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert grey is not None and grey.ndim == 2, f"{path}: not a grey image"
    return grey


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


# ---- the package ------------------------------------------------------------------------------

def test_version_matches_the_program(cli):
    assert hazefree.__version__ == ".".join(map(str, hazefree.version_info))
    assert cli("--version").stdout.strip() == f"hazefree {hazefree.__version__}"


def test_config_keys_are_the_command_lines(cli):
    printed = cli("--print-config").stdout
    names, section = [], ""
    for line in printed.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif line and not line.startswith("#") and "=" in line:
            leaf = line.split("=")[0].strip()
            names.append(f"{section}.{leaf}" if section else leaf)
    keys = hazefree.config_keys()
    assert [k.name for k in keys] == names
    omega = next(k for k in keys if k.name == "dcp.omega")
    assert (omega.range, omega.default) == ("(0, 1]", "0.95")
    assert all(k.help for k in keys)


def test_keyword_names_and_effective_options():
    p = hazefree.Processor(mode="ahe", backend="cpu", ahe_window=31, **{"ahe.clip": 2.5}, color="rgb")
    assert p.option("mode") == "ahe"
    assert p.option("ahe_window") == "31"
    assert p.option("ahe.clip") == "2.5"
    assert p.option("color") == "rgb"
    assert "cpu" in p.backend and not p.on_gpu
    roi = hazefree.Processor(mode="he", backend="cpu", he_roi=(1, 2, 30, 40))
    assert roi.option("he.roi") == "1,2,30,40"


# ---- exactness --------------------------------------------------------------------------------

def test_he_grey_equals_opencv_equalizehist(samples):
    he = hazefree.Processor(mode="he", color="grey", backend="cpu")
    rng = np.random.default_rng(7)
    images = [grey_image(samples / "images" / "coffee-grey.png"),
              rng.integers(0, 256, (37, 53), dtype=np.uint8),
              rng.integers(90, 110, (3, 2), dtype=np.uint8),
              np.full((16, 9), 77, dtype=np.uint8),     # constant: unchanged
              np.array([[200]], dtype=np.uint8)]        # 1x1
    for image in images:
        expected = cv2.equalizeHist(image)
        result = he.process(image)
        assert result.dtype == np.uint8 and result.shape == image.shape
        np.testing.assert_array_equal(result, expected, err_msg=f"shape {image.shape}")


def test_he_grey_on_a_strided_view_and_into_out(samples):
    image = grey_image(samples / "images" / "coffee-grey.png")
    wide = np.zeros((image.shape[0], image.shape[1] + 19), dtype=np.uint8)
    wide[:, 7:7 + image.shape[1]] = image
    view = wide[:, 7:7 + image.shape[1]]          # rows 19 bytes apart more than their width
    out_storage = np.full((image.shape[0], image.shape[1] + 5), 1, dtype=np.uint8)
    out = out_storage[:, :image.shape[1]]
    result = hazefree.Processor(mode="he", color="grey", backend="cpu").process(view, out=out)
    assert result is out
    np.testing.assert_array_equal(out, cv2.equalizeHist(image))
    assert (out_storage[:, image.shape[1]:] == 1).all(), "bytes beyond the rows were written"


def naive_sliding_ahe(image, window, clip):
    """SPEC 4 written out per pixel (reflect-101 borders, OpenCV's clip redistribution)."""
    r = window // 2
    padded = np.pad(image, r, mode="reflect")
    n = window * window
    out = np.empty_like(image)
    for y in range(image.shape[0]):
        for x in range(image.shape[1]):
            hist = np.bincount(padded[y:y + window, x:x + window].ravel(), minlength=256).astype(np.int64)
            if clip > 0:
                limit = max(1, int(clip * n / 256))
                excess = int(np.maximum(hist - limit, 0).sum())
                hist = np.minimum(hist, limit) + excess // 256
                rest = excess % 256
                if rest:
                    step = max(256 // rest, 1)
                    for i in range(0, 256, step):
                        if rest == 0:
                            break
                        hist[i] += 1
                        rest -= 1
            cdf = int(hist[:int(image[y, x]) + 1].sum())
            out[y, x] = (255 * cdf + n // 2) // n
    return out


@pytest.mark.parametrize("window,clip", [(7, 0.0), (7, 2.0), (15, 4.0)])
def test_sliding_ahe_and_clahe_equal_the_naive_oracle(window, clip):
    rng = np.random.default_rng(window)
    image = np.clip(rng.normal(120, 30, (23, 31)), 0, 255).astype(np.uint8)
    result = hazefree.Processor(mode="ahe", color="grey", ahe_window=window, ahe_clip=clip,
                                backend="cpu").process(image)
    np.testing.assert_array_equal(result, naive_sliding_ahe(image, window, clip))


def test_dcp_on_photos_equals_the_command_line(cli, samples, tmp):
    for name in ("coffee-hazy.png", "astronaut-hazy.png"):
        source = samples / "images" / name
        cli("--backend", "cpu", source, tmp / name)
        expected = rgb_image(tmp / name)
        processor = hazefree.Processor(mode="dcp", backend="cpu")
        result = processor.process(rgb_image(source))
        np.testing.assert_array_equal(result, expected, err_msg=name)
        assert all(0.0 < a <= 1.0 for a in processor.atmospheric_light)


def test_equalization_on_photos_equals_the_command_line(cli, samples, tmp):
    grey = samples / "images" / "coffee-grey.png"
    cli("--backend", "cpu", "--mode", "ahe", "--window", "15", "--clip", "2", grey, tmp / "ahe.png")
    result = hazefree.Processor(mode="ahe", ahe_window=15, ahe_clip=2, backend="cpu").process(grey_image(grey))
    np.testing.assert_array_equal(result, grey_image(tmp / "ahe.png"))
    colour = samples / "images" / "astronaut.png"
    cli("--backend", "cpu", "--mode", "he", "--color", "rgb", colour, tmp / "he.png")
    result = hazefree.Processor(mode="he", color="rgb", backend="cpu").process(rgb_image(colour))
    np.testing.assert_array_equal(result, rgb_image(tmp / "he.png"))


def test_temporal_state_carries_over_and_resets(samples):
    first = rgb_image(samples / "images" / "coffee-hazy.png")
    second = np.ascontiguousarray(np.clip(first.astype(int) * 9 // 10 + 20, 0, 255).astype(np.uint8))
    video = hazefree.Processor(mode="dcp", backend="cpu")
    assert video.atmospheric_light == (0.0, 0.0, 0.0)
    video.process(first)
    after_first = video.atmospheric_light
    carried = video.process(second)
    fresh_processor = hazefree.Processor(mode="dcp", backend="cpu")
    fresh = fresh_processor.process(second)
    # The light moves towards the second frame's estimate by at most a_max_step per channel.
    assert video.atmospheric_light != fresh_processor.atmospheric_light
    assert max(abs(a - b) for a, b in zip(video.atmospheric_light, after_first)) <= 5 / 255 + 1e-6
    assert not np.array_equal(carried, fresh)
    video.reset()
    np.testing.assert_array_equal(video.process(second), fresh)


# ---- bad input --------------------------------------------------------------------------------

def raises(kind, fragment, call):
    with pytest.raises(kind) as error:
        call()
    assert fragment in str(error.value), f"message {str(error.value)!r} lacks {fragment!r}"


def test_bad_frames_raise_type_or_value_errors_naming_the_argument():
    p = hazefree.Processor(mode="he", color="grey", backend="cpu")
    grey = np.zeros((8, 8), dtype=np.uint8)
    raises(TypeError, "frame: dtype float32, expected uint8", lambda: p.process(grey.astype(np.float32)))
    raises(TypeError, "frame: dtype int16", lambda: p.process(grey.astype(np.int16)))
    raises(TypeError, "frame: dtype int64", lambda: p.process([[1, 2], [3, 4]]))
    raises(TypeError, "frame: NoneType", lambda: p.process(None))
    raises(TypeError, "frame: dtype", lambda: p.process("not an image"))
    raises(ValueError, "frame: shape (8, 8, 4)", lambda: p.process(np.zeros((8, 8, 4), np.uint8)))
    raises(ValueError, "frame: shape (8,)", lambda: p.process(np.zeros(8, np.uint8)))
    raises(ValueError, "frame: shape (2, 8, 8, 3)", lambda: p.process(np.zeros((2, 8, 8, 3), np.uint8)))
    raises(ValueError, "frame: empty frame", lambda: p.process(np.zeros((0, 8), np.uint8)))
    raises(ValueError, "frame: rows must be contiguous", lambda: p.process(np.zeros((8, 16), np.uint8)[:, ::2]))
    raises(ValueError, "frame: rows must be contiguous", lambda: p.process(np.zeros((8, 8), np.uint8).T[::-1]))
    raises(ValueError, "frame: rows must be contiguous",
           lambda: p.process(np.zeros((8, 8, 3), np.uint8).transpose(1, 0, 2)))
    raises(ValueError, "out: shape (8, 9), expected frame's (8, 8)", lambda: p.process(grey, out=np.zeros((8, 9), np.uint8)))
    raises(TypeError, "out: list", lambda: p.process(grey, out=[[0] * 8] * 8))
    raises(TypeError, "out: dtype int16", lambda: p.process(grey, out=np.zeros((8, 8), np.int16)))
    read_only = np.zeros((8, 8), np.uint8)
    read_only.flags.writeable = False
    raises(ValueError, "out: array is read-only", lambda: p.process(grey, out=read_only))
    raises(ValueError, "out: overlaps the input frame", lambda: p.process(grey, out=grey))
    raises(ValueError, "out: overlaps the input frame", lambda: p.process(grey[1:], out=grey[:-1]))
    raises(ValueError, "stream: given for a host frame", lambda: p.process(grey, stream=0))


def test_bad_options_raise_naming_the_key():
    raises(TypeError, "unexpected keyword argument 'dcp_omegaa'", lambda: hazefree.Processor(dcp_omegaa=0.5))
    raises(ValueError, "dcp.omega = 2 is outside (0, 1]", lambda: hazefree.Processor(dcp_omega=2))
    raises(ValueError, "mode: invalid value 'dehaze' (accepted: dcp, he, ahe)", lambda: hazefree.Processor(mode="dehaze"))
    raises(ValueError, "backend: invalid value 'gpu'", lambda: hazefree.Processor(backend="gpu"))
    raises(ValueError, "ahe.window", lambda: hazefree.Processor(mode="ahe", ahe_window=4))
    raises(ValueError, "dcp.patch_radius: invalid value 'seven'", lambda: hazefree.Processor(dcp_patch_radius="seven"))
    raises(TypeError, "dcp_omega: dict value", lambda: hazefree.Processor(dcp_omega={"a": 1}))
    raises(ValueError, "he.roi", lambda: hazefree.Processor(mode="he", he_roi=(1, 2, 3)))
    raises(ValueError, "key: unknown configuration key 'nope'", lambda: hazefree.Processor(backend="cpu").option("nope"))


def test_keywords_of_the_wrong_type_raise_type_error():
    raises(TypeError, "dcp_auto_strength: str value, expected a bool", lambda: hazefree.Processor(dcp_auto_strength="yes"))
    raises(TypeError, "dcp_auto_strength: int value, expected a bool", lambda: hazefree.Processor(dcp_auto_strength=1))
    raises(TypeError, "dcp_auto_strength: str value, expected a bool",
           lambda: hazefree.run("a.mp4", "b.mp4", dcp_auto_strength="yes"))
    raises(TypeError, "dcp_omega: bool value, expected a number", lambda: hazefree.Processor(dcp_omega=True))
    raises(TypeError, "mode: float value, expected a str", lambda: hazefree.Processor(mode=1.5))
    raises(TypeError, "stats: bool value, expected a str", lambda: hazefree.run("a.mp4", "b.mp4", stats=True))
    assert hazefree.Processor(backend="cpu", dcp_auto_strength=True, dcp_omega=1, dcp_a_max_step="5/255")


def test_auto_strength_outside_dcp_warns_as_the_command_line_does():
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hazefree.Processor(mode="he", backend="cpu", dcp_auto_strength=True)
        hazefree.Processor(mode="dcp", backend="cpu", dcp_auto_strength=True)
        hazefree.Processor(mode="ahe", backend="cpu", dcp_auto_strength=False)
    assert [str(w.message) for w in caught] == [
        "dcp.auto_strength (--auto-strength) follows the haze index with DCP's strength; --mode he has none, "
        "and runs as without it"]
    assert caught[0].filename == __file__


def test_missing_gpu_is_a_runtime_error():
    if hazefree.gpu_available():
        pytest.skip("a GPU is present: backend='cuda' works here")
    raises(RuntimeError, "backend=cuda", lambda: hazefree.Processor(backend="cuda"))
    auto = hazefree.Processor(backend="auto")
    assert not auto.on_gpu


def test_cpu_backend_refuses_gpu_arrays_by_kind():
    class FakeCudaArray:  # an object that claims to live on a CUDA device
        __cuda_array_interface__ = {"shape": (4, 4), "typestr": "|u1", "data": (1 << 40, False), "version": 3}
    p = hazefree.Processor(mode="he", backend="cpu")
    raises(ValueError, "frame: a CUDA array, but this Processor runs on cpu", lambda: p.process(FakeCudaArray()))
    raises(TypeError, "stream: str", lambda: p.process(FakeCudaArray(), stream="fast"))


# ---- run() and frames() ----------------------------------------------------------------------

def test_run_writes_the_clip_as_the_command_line_does(cli, samples, tmp):
    clip = samples / "hazy-street.mp4"
    options = dict(mode="he", he_temporal=0.5)
    cli("--backend", "cpu", "--mode", "he", "--set", "he.temporal=0.5", clip, tmp / "cli.y4m")
    calls = []
    summary = hazefree.run(clip, tmp / "python.y4m", backend="cpu",
                           progress=lambda done, expected, seconds: calls.append((done, expected, seconds)),
                           **options)
    assert summary["frames_in"] == summary["frames_out"] == 100
    assert "cpu" in summary["processor"]
    assert [c[0] for c in calls] == list(range(1, 101))
    assert all(c[1] == 100 for c in calls) and calls[-1][2] > 0
    expected_header, expected = y4m_frames(tmp / "cli.y4m")
    header, frames = y4m_frames(tmp / "python.y4m")
    assert header == expected_header and len(frames) == len(expected) == 100
    for i, (a, b) in enumerate(zip(frames, expected)):
        assert a == b, f"frame {i} differs from the command line's"


def test_run_progress_with_four_parameters_gets_the_live_counters(samples, tmp):
    clip = samples / "hazy-street.mp4"
    seen = []
    summary = hazefree.run(clip, tmp / "dcp.y4m", backend="cpu", mode="dcp",
                           progress=lambda done, expected, seconds, live: seen.append((done, dict(live))))
    assert summary["frames_out"] == 100 and len(seen) == 100
    for done, live in seen:
        assert set(live) == {"frames_dropped", "reconnects", "seconds_lost", "latency_seconds", "atmospheric_light",
                             "haze_index", "omega"}
        assert live["frames_dropped"] == 0 and live["reconnects"] == 0 and live["seconds_lost"] == 0.0
        assert live["latency_seconds"] >= 0.0
        # DCP's haze index of the last frame (the street is hazy) and the omega it was dehazed with.
        assert 0.0 < live["haze_index"] <= 1.0, live
        assert live["omega"] == pytest.approx(0.95), live
    # DCP's atmospheric light, sampled from the run: within (0, 1] for the hazy street once known.
    light = seen[-1][1]["atmospheric_light"]
    assert len(light) == 3 and all(0.0 < a <= 1.0 for a in light), light
    # *args callables get the fourth argument too; the he mode has no light, index or omega.
    calls = []
    hazefree.run(clip, tmp / "he.y4m", backend="cpu", mode="he", output_frames=5,
                 progress=lambda *args: calls.append(args))
    assert [len(args) for args in calls] == [4] * 5
    assert all(args[3]["haze_index"] is None and args[3]["omega"] is None for args in calls)


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def test_haze_index_and_auto_strength(samples):
    hazy = rgb_image(samples / "images" / "coffee-hazy.png")
    clear = rgb_image(samples / "images" / "coffee.png")
    dcp = hazefree.Processor(mode="dcp", backend="cpu")
    assert dcp.haze_index() == 0.0  # before the first frame
    dcp.process(hazy)
    assert 0.0 < dcp.haze_index() <= 1.0
    on_clear = hazefree.Processor(mode="dcp", backend="cpu")
    on_clear.process(clear)
    assert on_clear.haze_index() < dcp.haze_index()  # the veil is what the index sees
    he = hazefree.Processor(mode="he", backend="cpu")
    he.process(hazy)
    assert he.haze_index() == 0.0
    # dcp.auto_strength as a keyword (dots as underscores): a clear photo is left about as it is,
    # where the fixed strength changes it.
    auto = hazefree.Processor(mode="dcp", backend="cpu", dcp_auto_strength=True)
    assert auto.option("dcp_auto_strength") == "true"
    assert hazefree.Processor(mode="dcp", backend="cpu").option("dcp.auto_strength") == "false"
    assert psnr(auto.process(clear), clear) >= 30.0
    assert psnr(hazefree.Processor(mode="dcp", backend="cpu").process(clear), clear) < 30.0
    # On a hazy photo the auto strength dehazes as the fixed one (the index is past the response).
    np.testing.assert_array_equal(hazefree.Processor(mode="dcp", backend="cpu", dcp_auto_strength=True).process(hazy),
                                  hazefree.Processor(mode="dcp", backend="cpu").process(hazy))
    raises(TypeError, "dcp_auto_strength: str value, expected a bool", lambda: hazefree.Processor(dcp_auto_strength="maybe"))


def test_run_failures_name_the_input_or_output(samples, tmp):
    raises(RuntimeError, "missing.mp4", lambda: hazefree.run(tmp / "missing.mp4", tmp / "out.mp4"))
    (tmp / "exists.y4m").write_bytes(b"x")
    raises(RuntimeError, "exists.y4m", lambda: hazefree.run(samples / "images" / "coffee.png", tmp / "exists.y4m"))
    raises(TypeError, "unexpected keyword argument 'modee'", lambda: hazefree.run("a", "b", modee="he"))
    raises(ValueError, "output.crf", lambda: hazefree.run("a", "b", output_crf=99))
    raises(TypeError, "progress: int, expected a callable", lambda: hazefree.run("a", "b", progress=3))
    raises(TypeError, "input: int", lambda: hazefree.run(3, "b"))


def test_run_takes_encoder_options_and_a_span(samples, tmp):
    out = tmp / "options.mp4"
    summary = hazefree.run(samples / "hazy-street.mp4", out, mode="he", backend="cpu", overwrite=True,
                           input_start=1, output_frames=50,
                           encoder_options={"x264-params": "keyint=25:min-keyint=25:scenecut=0"})
    assert summary["frames_out"] == 50
    packets = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                              "packet=pts,flags", "-of", "csv=p=0", str(out)],
                             check=True, capture_output=True, text=True).stdout.split()
    flags = [flag for _, flag in sorted((int(p.split(",")[0]), p.split(",")[1]) for p in packets)]
    assert [i for i, flag in enumerate(flags) if flag.startswith("K")] == [0, 25]
    raises(ValueError, "no option 'no-such-option'",
           lambda: hazefree.run(samples / "hazy-street.mp4", tmp / "bad.mp4", backend="cpu",
                                encoder_options={"no-such-option": "1"}))
    assert not (tmp / "bad.mp4").exists()


def test_a_progress_callback_that_raises_stops_the_run_with_a_valid_output(samples, tmp):
    def stop_at_ten(done, expected, seconds):
        if done == 10:
            raise LookupError("enough")
    with pytest.raises(LookupError, match="enough"):
        hazefree.run(samples / "hazy-street.mp4", tmp / "short.y4m", mode="he", backend="cpu", progress=stop_at_ten)
    _, frames = y4m_frames(tmp / "short.y4m")
    assert 10 <= len(frames) < 100


def test_ctrl_c_finishes_the_output_then_raises_keyboardinterrupt(samples, tmp):
    script = textwrap.dedent(f"""
        import sys, hazefree
        def progress(done, expected, seconds):
            if done == 5:
                print("started", flush=True)
                sys.stdin.readline()  # the parent has sent SIGINT by then
        try:
            hazefree.run({str(samples / 'hazy-street.mp4')!r}, {str(tmp / 'interrupted.y4m')!r},
                         mode="dcp", backend="cpu", progress=progress)
            print("finished without interruption")
        except KeyboardInterrupt as error:
            print("interrupted:", error)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert child.stdout.readline().strip() == "started"
        child.send_signal(signal.SIGINT)
        child.stdin.write("\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    assert out.startswith("interrupted:"), out + err
    _, frames = y4m_frames(tmp / "interrupted.y4m")
    assert 5 <= len(frames) < 100
    assert all(len(f) == len(frames[0]) for f in frames), "a frame of the output is cut short"


def test_run_is_quiet_as_the_command_line_unless_verbose(samples, tmp):
    # The stderr of a python process of its own: FFmpeg's and x264's lines (its statistics at the
    # end of an encode) only with verbose=True, as the command line's -v; FFmpeg's level the host
    # set is back after each run (seen where the module shares the system's libavutil).
    script = textwrap.dedent(f"""
        import ctypes, ctypes.util, sys, hazefree
        found = ctypes.util.find_library("avutil")
        avutil = ctypes.CDLL(found) if found else None
        if avutil:
            avutil.av_log_set_level(40)  # AV_LOG_VERBOSE, the host's own choice
        clip = {str(samples / 'hazy-street.mp4')!r}
        for name, verbose in (("quiet", False), ("verbose", True), ("quiet again", False)):
            sys.stderr.write("== " + name + "\\n")
            sys.stderr.flush()
            hazefree.run(clip, {str(tmp / 'o.mp4')!r}, backend="cpu", overwrite=True, output_frames=10,
                         verbose=verbose)
            sys.stderr.flush()
            print(name, avutil.av_log_get_level() if avutil else 40, flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["quiet 40", "verbose 40", "quiet again 40"], done.stdout
    parts = done.stderr.split("== ")
    assert [p.split("\n")[0] for p in parts[1:]] == ["quiet", "verbose", "quiet again"], done.stderr
    quiet, verbose, quiet_again = (p.split("\n", 1)[1] for p in parts[1:])
    assert quiet == "" and quiet_again == "", done.stderr
    assert "libx264 @" in verbose and "frame I:" in verbose, done.stderr


def test_frames_yields_processed_rgb(samples, cli, tmp):
    still = samples / "images" / "coffee-hazy.png"
    got = list(hazefree.frames(still, mode="dcp", backend="cpu"))
    assert len(got) == 1 and got[0].shape == (300, 450, 3) and got[0].dtype == np.uint8
    np.testing.assert_array_equal(got[0], hazefree.Processor(mode="dcp", backend="cpu").process(rgb_image(still)))
    count = 0
    for frame in hazefree.frames(samples / "hazy-street.mp4", mode="he", backend="cpu"):
        assert frame.shape == (576, 768, 3)
        count += 1
    assert count == 100
    raises(ValueError, "device: 'tpu'", lambda: hazefree.frames(still, device="tpu"))
    raises(RuntimeError, "missing.mp4", lambda: hazefree.frames(tmp / "missing.mp4"))


def test_stub_names_every_public_name():
    stub = (pathlib.Path(hazefree.__file__).parent / "__init__.pyi").read_text()
    for name in hazefree.__all__:
        assert name in stub, f"{name} is missing from __init__.pyi"


def test_dlpack_capsules_are_read_and_consumed():
    array = np.zeros((5, 7, 3), np.uint8)[:, 1:6]
    info = hazefree._hazefree.dlpack_view(array.__dlpack__(), "frame")
    assert info["ptr"] == array.ctypes.data
    assert info["shape"] == (5, 5, 3) and info["strides"] == (21, 3, 1)
    assert info["dtype"] == (1, 8, 1) and info["device"] == (1, 0)
    compact = hazefree._hazefree.dlpack_view(np.zeros((4, 6), np.uint8).__dlpack__(), "frame")
    assert compact["strides"] == (6, 1)
    capsule = array.__dlpack__()
    hazefree._hazefree.dlpack_view(capsule, "frame")
    raises(TypeError, "frame: __dlpack__() did not return a 'dltensor' capsule",
           lambda: hazefree._hazefree.dlpack_view(capsule, "frame"))
