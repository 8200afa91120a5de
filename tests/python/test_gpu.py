"""The Python module on the GPU with PyTorch and CuPy arrays: the same results as the CPU backend
(bit-exact for HE/AHE; DCP within the C++ GPU tests' bounds, and bit-exact with the CUDA
backend's host path), processed where they lie (the output's device pointer is the one given in
`out`), on the caller's stream. Skipped, saying why, without a GPU, PyTorch or CuPy."""
import numpy as np
import subprocess
import sys

import pytest

import hazefree

cv2 = pytest.importorskip("cv2", reason="OpenCV (python3-opencv / opencv-python) is needed to read the samples")

_ok, _why = hazefree._hazefree.gpu_available()
pytestmark = pytest.mark.skipif(not _ok, reason=f"GPU tests skipped: {_why}")

CONFIGS = [
    dict(mode="dcp"),
    dict(mode="dcp", dcp_gf_subsample=4, dcp_patch_radius=20),
    dict(mode="he", color="rgb"),
    dict(mode="he", color="grey"),
    dict(mode="ahe", color="rgb", ahe_window=31, ahe_clip=2.0),
    dict(mode="ahe", color="grey", ahe_window=63),
]


def is_grey(config):
    return config.get("color") == "grey"


def images(samples, grey):
    bgr = cv2.imread(str(samples / "images" / "coffee-hazy.png"), cv2.IMREAD_COLOR)
    rgb = np.ascontiguousarray(bgr[:, :, ::-1])
    rng = np.random.default_rng(5)
    full_hd = np.ascontiguousarray(cv2.resize(rgb, (1920, 1080), interpolation=cv2.INTER_LINEAR))
    odd = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    tiny = rng.integers(0, 256, (2, 3, 3), dtype=np.uint8)
    out = [rgb, full_hd, odd, tiny]
    if grey:
        out = [np.ascontiguousarray(cv2.cvtColor(i, cv2.COLOR_RGB2GRAY)) if i.shape[0] > 2 else i[:, :, 0].copy()
               for i in out]
    return out


def check_like_cpu(config, result, expected, what):
    if config["mode"] != "dcp":
        np.testing.assert_array_equal(result, expected, err_msg=what)
        return
    diff = np.abs(result.astype(np.int32) - expected.astype(np.int32))
    assert diff.mean() <= 1.0, f"{what}: mean |GPU - CPU| {diff.mean():.3f}"
    assert (diff > 2).mean() <= 0.001, f"{what}: {(diff > 2).mean():.5f} of the samples differ by more than 2"


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the PyTorch GPU tests are skipped")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA GPU")
    return torch


@pytest.fixture(scope="module")
def cupy():
    return pytest.importorskip("cupy", reason="CuPy is not installed: the CuPy GPU tests are skipped")


# ---- PyTorch ----------------------------------------------------------------------------------

@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_torch_tensors_equal_the_cpu_backend(torch, samples, config):
    for image in images(samples, is_grey(config)):
        what = f"{config} {image.shape}"
        cpu = hazefree.Processor(backend="cpu", **config).process(image)
        host_path = hazefree.Processor(backend="cuda", **config).process(image)
        tensor = torch.from_numpy(image).cuda()
        result = hazefree.Processor(backend="cuda", **config).process(tensor)
        assert isinstance(result, torch.Tensor) and result.device == tensor.device
        assert result.shape == tensor.shape and result.dtype == torch.uint8
        result = result.cpu().numpy()
        np.testing.assert_array_equal(result, host_path, err_msg=f"{what}: device path vs host path")
        check_like_cpu(config, result, cpu, what)


def test_torch_output_is_written_where_out_lies(torch, samples):
    image = images(samples, False)[0]
    h, w, _ = image.shape
    frame = torch.from_numpy(image).cuda()
    out = torch.empty_like(frame)
    p = hazefree.Processor(mode="dcp", backend="cuda")
    result = p.process(frame, out=out)
    assert result is out and result.data_ptr() == out.data_ptr()
    # Rows of `out` inside a wider buffer: only the frame's bytes are written.
    storage = torch.full((h, w + 13, 3), 7, dtype=torch.uint8, device="cuda")
    view = storage[:, :w]
    p.reset()
    p.process(frame, out=view)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(view.cpu().numpy(), out.cpu().numpy())
    assert bool((storage[:, w:] == 7).all())


def test_torch_work_runs_on_the_callers_stream(torch, samples):
    image = images(samples, False)[1]  # 1080p
    source = torch.from_numpy(image).cuda()
    expected = hazefree.Processor(mode="dcp", backend="cuda").process(image)
    frame = torch.zeros_like(source)
    out = torch.zeros_like(source)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time queued ahead on `stream`
        frame.copy_(source)             # the frame is ready only on `stream`
    p = hazefree.Processor(mode="dcp", backend="cuda")
    p.process(frame, out=out, stream=stream)
    assert not stream.query(), "the processing did not queue behind the caller's stream"
    stream.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    # stream=None: the current stream of the frame's framework.
    frame2, out2 = torch.zeros_like(source), torch.zeros_like(source)
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(100_000_000)
        frame2.copy_(source)
        p.reset()
        p.process(frame2, out=out2)
    assert not stream.query()
    stream.synchronize()
    np.testing.assert_array_equal(out2.cpu().numpy(), expected)


def test_torch_video_state_equals_the_host_path(torch, samples):
    base = images(samples, False)[0].astype(np.int32)
    frames = [np.ascontiguousarray(np.clip(base * (10 - i) // 10 + 12 * i, 0, 255).astype(np.uint8)) for i in range(4)]
    device_p = hazefree.Processor(mode="dcp", backend="cuda")
    host_p = hazefree.Processor(mode="dcp", backend="cuda")
    for i, f in enumerate(frames):
        on_device = device_p.process(torch.from_numpy(f).cuda()).cpu().numpy()
        np.testing.assert_array_equal(on_device, host_p.process(f), err_msg=f"frame {i}")
        assert device_p.atmospheric_light == host_p.atmospheric_light


def test_torch_bad_inputs(torch):
    p = hazefree.Processor(mode="he", backend="cuda")
    frame = torch.zeros((8, 8, 3), dtype=torch.uint8, device="cuda")
    with pytest.raises(TypeError, match="frame: dtype"):
        p.process(frame.float())
    with pytest.raises(ValueError, match=r"frame: shape \(8, 8, 4\)"):
        p.process(torch.zeros((8, 8, 4), dtype=torch.uint8, device="cuda"))
    with pytest.raises(ValueError, match="frame: rows must be contiguous"):
        p.process(torch.zeros((8, 16, 3), dtype=torch.uint8, device="cuda")[:, ::2])
    with pytest.raises(ValueError, match="out: a host array for a CUDA frame"):
        p.process(frame, out=np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(ValueError, match=r"out: shape \(8, 9, 3\)"):
        p.process(frame, out=torch.zeros((8, 9, 3), dtype=torch.uint8, device="cuda"))
    with pytest.raises(ValueError, match="out: overlaps the input frame"):
        p.process(frame, out=frame)
    with pytest.raises(TypeError, match="stream: str"):
        p.process(frame, stream="default")
    with pytest.raises(ValueError, match="this Processor runs on cpu"):
        hazefree.Processor(mode="he", backend="cpu").process(frame)


def test_cuda_array_interface_only_objects(torch, samples):
    class Wrapped:  # exposes nothing but __cuda_array_interface__
        def __init__(self, tensor):
            self.tensor = tensor
            self.__cuda_array_interface__ = tensor.__cuda_array_interface__
    image = images(samples, True)[0]
    frame = torch.from_numpy(image).cuda()
    out = torch.empty_like(frame)
    p = hazefree.Processor(mode="he", color="grey", backend="cuda")
    with pytest.raises(TypeError, match="out: required for GPU arrays of type Wrapped"):
        p.process(Wrapped(frame))
    torch.cuda.synchronize()
    result = p.process(Wrapped(frame), out=Wrapped(out), stream=torch.cuda.current_stream().cuda_stream)
    assert result.tensor is out
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), cv2.equalizeHist(image))


def test_frames_on_the_gpu(torch, samples):
    still = samples / "images" / "coffee-hazy.png"
    on_gpu = list(hazefree.frames(still, device="cuda", mode="dcp", backend="cuda"))
    on_cpu = list(hazefree.frames(still, device="cpu", mode="dcp", backend="cuda"))
    assert len(on_gpu) == len(on_cpu) == 1 and on_gpu[0].is_cuda
    np.testing.assert_array_equal(on_gpu[0].cpu().numpy(), on_cpu[0])


def test_frames_decoded_by_nvdec(torch, samples):
    # NVDEC (FFmpeg) must start the GPU's CUDA context itself: in a fresh process, before
    # anything else uses CUDA, the frames it decodes equal the CPU decoder's.
    script = (
        "import sys, numpy as np, hazefree\n"
        "hw = list(hazefree.frames(sys.argv[1], device='cpu', mode='he', backend='cuda', input_hwdec='cuda'))\n"
        "sw = list(hazefree.frames(sys.argv[1], device='cpu', mode='he', backend='cuda'))\n"
        "assert len(hw) == len(sw) == 100, (len(hw), len(sw))\n"
        "assert all(np.array_equal(a, b) for a, b in zip(hw, sw))\n"
        "print('nvdec frames identical')\n")
    done = subprocess.run([sys.executable, "-c", script, str(samples / "hazy-street.mp4")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "nvdec frames identical" in done.stdout
    # Here PyTorch has started CUDA: either the context suits NVDEC, or a clear error, never a crash.
    torch.zeros(1, device="cuda")
    try:
        frames = list(hazefree.frames(samples / "hazy-street.mp4", device="cuda", mode="he", input_hwdec="cuda"))
        assert len(frames) == 100 and all(a.is_cuda for a in frames)
    except RuntimeError as error:
        assert "started before the decoder" in str(error)


def test_auto_takes_the_gpu():
    assert hazefree.Processor(backend="auto").on_gpu


# ---- CuPy -------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_cupy_arrays_equal_the_cpu_backend(cupy, samples, config):
    for image in images(samples, is_grey(config)):
        what = f"{config} {image.shape}"
        cpu = hazefree.Processor(backend="cpu", **config).process(image)
        host_path = hazefree.Processor(backend="cuda", **config).process(image)
        result = hazefree.Processor(backend="cuda", **config).process(cupy.asarray(image))
        assert isinstance(result, cupy.ndarray)
        result = cupy.asnumpy(result)
        np.testing.assert_array_equal(result, host_path, err_msg=f"{what}: device path vs host path")
        check_like_cpu(config, result, cpu, what)


def test_cupy_output_pointer_and_stream(cupy, samples):
    image = images(samples, False)[1]
    expected = hazefree.Processor(mode="ahe", ahe_clip=2, backend="cuda").process(image)
    source = cupy.asarray(image)
    frame = cupy.zeros_like(source)
    out = cupy.zeros_like(source)
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        try:  # a delay ahead on the stream, when PyTorch is there to provide one
            import torch
            with torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr)):
                torch.cuda._sleep(100_000_000)
            delayed = True
        except ImportError:
            delayed = False
        frame[...] = source
    p = hazefree.Processor(mode="ahe", ahe_clip=2, backend="cuda")
    result = p.process(frame, out=out, stream=stream)
    assert result is out and result.data.ptr == out.data.ptr
    if delayed:
        assert not stream.done, "the processing did not queue behind the caller's stream"
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(out), expected)


# ---- uint16 frames (high bit depth, SPEC 7) -----------------------------------------------------

DEPTH_CONFIGS = [
    (dict(mode="dcp"), 16),
    (dict(mode="he", color="rgb"), 10),
    (dict(mode="he", color="grey"), 16),
    (dict(mode="ahe", color="rgb", ahe_window=31, ahe_clip=2.0), 12),
]


def deep_images(samples, grey, depth):
    """The test images at `depth` bits: codes scaled from 8 bits plus low-bit noise."""
    rng = np.random.default_rng(depth)
    out = []
    for image in images(samples, grey)[:3]:
        scaled = image.astype(np.uint32) << (depth - 8)
        noise = rng.integers(0, 1 << (depth - 8), image.shape, dtype=np.uint32)
        out.append(np.ascontiguousarray((scaled | noise).astype(np.uint16)))
    return out


def check_deep_like_cpu(config, depth, result, expected, what):
    if config["mode"] != "dcp":
        np.testing.assert_array_equal(result, expected, err_msg=what)
        return
    diff = np.abs(result.astype(np.int64) - expected.astype(np.int64))
    step = 1 << (depth - 8)  # one 8-bit code at this depth: the 8-bit bounds, scaled
    assert diff.mean() <= step, f"{what}: mean |GPU - CPU| {diff.mean():.3f}"
    assert (diff > 2 * step).mean() <= 0.001, f"{what}: {(diff > 2 * step).mean():.5f} differ by more than 2 codes"


@pytest.mark.parametrize("config,depth", DEPTH_CONFIGS, ids=lambda c: str(c))
def test_cupy_uint16_arrays_equal_the_cpu_backend(cupy, samples, config, depth):
    for image in deep_images(samples, is_grey(config), depth):
        what = f"{config} depth {depth} {image.shape}"
        cpu = hazefree.Processor(backend="cpu", **config).process(image, depth=depth)
        host_path = hazefree.Processor(backend="cuda", **config).process(image, depth=depth)
        result = hazefree.Processor(backend="cuda", **config).process(cupy.asarray(image), depth=depth)
        assert isinstance(result, cupy.ndarray) and result.dtype == cupy.uint16
        result = cupy.asnumpy(result)
        np.testing.assert_array_equal(result, host_path, err_msg=f"{what}: device path vs host path")
        check_deep_like_cpu(config, depth, result, cpu, what)


@pytest.mark.parametrize("config,depth", DEPTH_CONFIGS, ids=lambda c: str(c))
def test_torch_uint16_tensors_equal_the_cpu_backend(torch, samples, config, depth):
    if not hasattr(torch, "uint16"):
        pytest.skip("this PyTorch has no torch.uint16 (PyTorch 2.3 and later)")
    for image in deep_images(samples, is_grey(config), depth):
        what = f"{config} depth {depth} {image.shape}"
        cpu = hazefree.Processor(backend="cpu", **config).process(image, depth=depth)
        tensor = torch.from_numpy(image).cuda()
        result = hazefree.Processor(backend="cuda", **config).process(tensor, depth=depth)
        assert result.dtype == torch.uint16 and result.shape == tensor.shape
        check_deep_like_cpu(config, depth, result.cpu().numpy(), cpu, what)


def test_uint16_strides_are_bytes_on_every_path(cupy, samples):
    """Rows of uint16 frames inside wider buffers through CuPy directly, through DLPack (another
    stream than the current one) and through __cuda_array_interface__ alone: the frame's samples
    only are read and written, as on the host."""
    class Wrapped:  # exposes nothing but __cuda_array_interface__
        def __init__(self, array):
            self.array = array
            self.__cuda_array_interface__ = array.__cuda_array_interface__
    image = deep_images(samples, False, 10)[0]
    h, w, _ = image.shape
    expected = hazefree.Processor(mode="he", color="rgb", backend="cpu").process(image, depth=10)
    frame_storage = cupy.zeros((h, w + 9, 3), cupy.uint16)
    frame_storage[:, :w] = cupy.asarray(image)
    frame = frame_storage[:, :w]
    stream = cupy.cuda.Stream(non_blocking=True)
    for name, call in (
            ("cupy", lambda p, out: p.process(frame, out=out, depth=10)),
            ("dlpack", lambda p, out: p.process(frame, out=out, depth=10, stream=stream)),
            ("cuda_array_interface", lambda p, out: p.process(Wrapped(frame), out=Wrapped(out), depth=10,
                                                              stream=cupy.cuda.get_current_stream().ptr))):
        storage = cupy.full((h, w + 5, 3), 7, cupy.uint16)
        out = storage[:, :w]
        cupy.cuda.Device().synchronize()
        call(hazefree.Processor(mode="he", color="rgb", backend="cuda"), out)
        cupy.cuda.Device().synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(out), expected, err_msg=name)
        assert bool((storage[:, w:] == 7).all()), f"{name}: wrote past the frame's rows"
    p = hazefree.Processor(mode="he", backend="cuda")
    with pytest.raises(TypeError, match="out: 8-bit samples, expected the frame's 16-bit"):
        p.process(frame, out=cupy.zeros((h, w, 3), cupy.uint8), depth=10)
    with pytest.raises(ValueError, match="depth: 8 for a uint16 frame"):
        p.process(frame, depth=8)
