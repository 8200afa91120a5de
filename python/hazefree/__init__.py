"""hazefree: real-time dehazing (dark channel prior) and contrast equalization (HE, sliding
AHE/CLAHE) on numpy arrays, PyTorch and CuPy tensors, and whole video files.

    import hazefree
    dehaze = hazefree.Processor(mode="dcp", backend="auto", dcp_omega=0.9)
    result = dehaze.process(frame)            # numpy HxWx3 RGB / HxW grey uint8, or a CUDA tensor
    deep = dehaze.process(rgb48, depth=16)    # uint16 samples: 9 to 16 bits (16 when not given)
    hazefree.run("in.mp4", "out.mp4", mode="ahe", ahe_window=127, ahe_clip=2)
    for rgb in hazefree.frames("in.mp4", device="cpu"):
        ...

Configuration keys (``hazefree.config_keys()``, the same table as the command line's
``--print-config``) are keyword arguments with the dots written as underscores:
``dcp.patch_radius`` is ``dcp_patch_radius``, ``ahe.clip`` is ``ahe_clip``; the dotted name also
works through ``**{"dcp.omega": 0.9}``. Values may be numbers, booleans, strings or, for
``he_roi``, an ``(x, y, w, h)`` tuple; ``encoder_options`` (``output_encoder_options``) is a dict
of the encoder's options, ``{"x264-params": "keyint=48"}``.

Errors: a frame of the wrong type or dtype raises TypeError, a wrong shape, layout or device
ValueError, each naming the argument and what was expected; an unknown keyword TypeError, a value
of a type the key does not take TypeError (a boolean key takes a bool only), a bad value ValueError
naming the key; a GPU that is asked for but missing RuntimeError. dcp_auto_strength=True outside
mode="dcp" gives the command line's warning as a UserWarning.
"""

from collections import namedtuple as _namedtuple

# numpy before the extension module: with numpy loaded after it, PyTorch (which loads its
# libraries globally) crashed when imported next (H200 machine, 2026-11-22).
import numpy as _np

from . import _hazefree

__all__ = ["Processor", "run", "frames", "config_keys", "gpu_available", "ConfigKey",
           "__version__", "version_info"]

__version__ = _hazefree.__version__
version_info = _hazefree.version_info

ConfigKey = _namedtuple("ConfigKey", "name help range default kind minimum maximum minimum_excluded "
                                     "maximum_excluded choices modes")
ConfigKey.__doc__ = """One configuration key: name ('dcp.omega'), help, accepted range and default (text); kind
('integer', 'number', 'boolean', 'choice' or 'text'), for integer and number keys the interval
(minimum, maximum: floats, infinite where unbounded; an excluded end is itself refused), for
choice keys the accepted values, and the modes whose Processor uses the key (empty for the keys
of the file run only)."""

_KEYS = [ConfigKey(*k) for k in _hazefree.config_keys()]
# keyword name -> key: "dcp_patch_radius" -> "dcp.patch_radius" (and the dotted name itself)
_KEYWORDS = {k.name.replace(".", "_"): k.name for k in _KEYS}
_KEYWORDS.update({k.name: k.name for k in _KEYS})
_KEYWORDS["encoder_options"] = "output.encoder_options"  # as ffmpeg users name them

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


def _frame_depth(itemsize, depth):
    """The bits per sample of a frame of `itemsize`-byte samples: uint8 frames are 8-bit; uint16
    frames hold 9 to 16 bits in the low bits of each sample, 16 unless ``depth`` says less."""
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)):
        raise TypeError(f"depth: {type(depth).__name__}, expected an int (8 for uint8, 9 to 16 for uint16) or None")
    if itemsize == 1:
        if depth not in (None, 8):
            raise ValueError(f"depth: {depth} for a uint8 frame; uint8 frames are 8-bit "
                             f"(give uint16 samples for 9 to 16 bits)")
        return 8
    if depth is None:
        return 16
    if not 9 <= depth <= 16:
        raise ValueError(f"depth: {depth} for a uint16 frame; expected 9 to 16 (uint8 for 8 bits)")
    return depth


def _check_codes(frame, depth):
    """ValueError when a host frame holds a sample above 2^depth - 1 (the bits above the depth
    would be ignored by the processing, not refused)."""
    if depth in (8, 16) or frame.size == 0:
        return
    largest = int(frame.max())
    if largest > (1 << depth) - 1:
        raise ValueError(f"frame: a sample of {largest} is above {(1 << depth) - 1}, the largest code at "
                         f"depth={depth}; give the frame's own depth (16 for full 16-bit samples)")


def config_keys():
    """Every configuration key as ConfigKey(name, help, range, default, kind, ...), in the table's order.
    As keyword arguments the dots are written as underscores (``dcp.omega`` -> ``dcp_omega``)."""
    return list(_KEYS)


def gpu_available():
    """True when the CUDA backend can run here (this build has it and a usable GPU is present)."""
    return _hazefree.gpu_available()[0]


_KINDS = {k.name: k.kind for k in _KEYS}


def _check_type(name, key, value):
    """TypeError when `value` is not of a type the key takes: a bool for a boolean key, an int (or
    its text) for an integer key, a number (or a string: "5/255", a time) for a number key, a
    string (or a number that is one) for a choice; a bool is refused for every other key (True is not 1 here)."""
    kind = _KINDS.get(key)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"{name}: {type(value).__name__} value, expected a bool (True or False)")
    elif isinstance(value, bool):
        raise TypeError(f"{name}: bool value, expected {'a str' if kind in ('choice', 'text') else 'a number'}")
    elif kind == "integer" and not isinstance(value, (int, str)):
        raise TypeError(f"{name}: {type(value).__name__} value, expected an int")
    elif kind == "number" and not isinstance(value, (int, float, str)):
        raise TypeError(f"{name}: {type(value).__name__} value, expected a number")
    elif kind == "choice" and not isinstance(value, (str, int)):  # output_depth=10: a choice that is a number
        raise TypeError(f"{name}: {type(value).__name__} value, expected a str")


def _value_text(key, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict) and _KEYWORDS.get(key) == "output.encoder_options":  # a TOML inline table
        import json
        return "{" + ", ".join(f"{json.dumps(str(k))} = {json.dumps(_value_text(key, v))}"
                               for k, v in value.items()) + "}"
    raise TypeError(f"{key}: {type(value).__name__} value, expected a number, bool, string "
                    f"or a tuple of integers (a dict for encoder_options)")


def _options(caller, keywords):
    """Keyword arguments -> {key: text}; TypeError for an unknown keyword."""
    options = {}
    for name, value in keywords.items():
        key = _KEYWORDS.get(name)
        if key is None:
            raise TypeError(f"{caller}() got an unexpected keyword argument '{name}' "
                            f"(hazefree.config_keys() lists the keys; dots as underscores)")
        if value is None:
            continue
        _check_type(name, key, value)
        options[key] = _value_text(name, value)
    _warn_unused(options)
    return options


def _warn_unused(options):
    """The command line's warning for a key the mode does not use, through the warnings module:
    dcp.auto_strength follows DCP's haze index, and the he and ahe modes have no strength."""
    mode = options.get("mode", "dcp")
    if options.get("dcp.auto_strength") == "true" and mode != "dcp":
        import warnings
        warnings.warn(f"dcp.auto_strength (--auto-strength) follows the haze index with DCP's strength; "
                      f"--mode {mode} has none, and runs as without it", UserWarning, stacklevel=4)


# ---- GPU arrays ---------------------------------------------------------------------------------

def _stream_handle(stream, frame):
    """A cudaStream_t as an int from None (the frame's framework's current stream), an int, a
    torch.cuda.Stream, a cupy.cuda.Stream or any object with __cuda_stream__."""
    if stream is None:
        module = type(frame).__module__.split(".")[0]
        if module == "torch":
            import torch
            return torch.cuda.current_stream(frame.device).cuda_stream
        if module == "cupy":
            import cupy
            return cupy.cuda.get_current_stream().ptr
        return 0  # the legacy default stream
    if isinstance(stream, bool):
        raise TypeError("stream: bool, expected a CUDA stream (int handle, torch.cuda.Stream, cupy.cuda.Stream)")
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        return int(stream.cuda_stream)
    if hasattr(stream, "ptr"):  # cupy.cuda.Stream
        return int(stream.ptr)
    raise TypeError(f"stream: {type(stream).__name__}, expected a CUDA stream "
                    f"(int handle, torch.cuda.Stream, cupy.cuda.Stream or an object with __cuda_stream__)")


def _framework_view(array, what, stream, stream_is_current):
    """The direct view of a PyTorch or CuPy CUDA array (a few attribute reads) when `stream` is
    the framework's current stream, so no producer/consumer ordering is needed; else None."""
    module = type(array).__module__.split(".")[0]
    if module == "torch" and array.is_cuda:
        import torch
        if not stream_is_current and stream != torch.cuda.current_stream(array.device).cuda_stream:
            return None
        uint16 = getattr(torch, "uint16", None)  # PyTorch 2.3 and later
        if array.dtype == torch.uint8:
            itemsize = 1
        elif uint16 is not None and array.dtype == uint16:
            itemsize = 2
        else:
            raise TypeError(f"{what}: dtype {array.dtype}, expected torch.uint8"
                            f"{' or torch.uint16' if uint16 is not None else ''}")
        strides = tuple(step * itemsize for step in array.stride())  # elements -> bytes
        return array.data_ptr(), tuple(array.shape), strides, False, array.device.index, itemsize
    if module == "cupy":
        import cupy
        if not stream_is_current and stream != cupy.cuda.get_current_stream().ptr:
            return None
        if array.dtype not in (cupy.uint8, cupy.uint16):
            raise TypeError(f"{what}: dtype {array.dtype}, expected uint8 or uint16")
        return (array.data.ptr, tuple(array.shape), tuple(array.strides), False, array.device.id,
                array.dtype.itemsize)
    return None


def _device_view(array, what, stream, stream_is_current=False):
    """(ptr, shape, byte strides, readonly, device, bytes per sample) of a CUDA array (uint8 or
    uint16 samples): directly for PyTorch/CuPy on
    their current stream, else through __dlpack__ (which also makes `stream` wait for the
    producer's stream) or __cuda_array_interface__; None for host arrays."""
    direct = _framework_view(array, what, stream, stream_is_current)
    if direct is not None:
        return direct
    if hasattr(array, "__dlpack_device__"):
        device_type, device_id = array.__dlpack_device__()
        if device_type == _DL_CPU:
            return None
        if device_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
            raise ValueError(f"{what}: on DLPack device type {device_type}, expected a CUDA GPU or the CPU")
        if hasattr(array, "__dlpack__"):
            capsule = array.__dlpack__(stream=stream if stream != 0 else 1)
            info = _hazefree.dlpack_view(capsule, what)
            code, bits, lanes = info["dtype"]
            if (code, bits, lanes) not in ((1, 8, 1), (1, 16, 1)):
                raise TypeError(f"{what}: dtype code {code} bits {bits} lanes {lanes}, expected uint8 or uint16")
            itemsize = bits // 8
            strides = tuple(step * itemsize for step in info["strides"])  # elements -> bytes
            return info["ptr"], info["shape"], strides, False, device_id, itemsize
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        return None
    import sys
    native_u2 = ("<u2", "=u2") if sys.byteorder == "little" else (">u2", "=u2")
    if interface["typestr"] in ("|u1", "<u1", ">u1"):
        itemsize = 1
    elif interface["typestr"] in native_u2:
        itemsize = 2
    else:
        raise TypeError(f"{what}: dtype {interface['typestr']}, expected uint8 (|u1) or native-endian "
                        f"uint16 ({native_u2[0]})")
    ptr, readonly = interface["data"]
    shape = tuple(interface["shape"])
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides = tuple(itemsize * (shape[1] * (shape[2] if len(shape) == 3 else 1) if i == 0 else
                                    (shape[2] if len(shape) == 3 and i == 1 else 1)) for i in range(len(shape)))
    return ptr, shape, tuple(strides), readonly, None, itemsize


def _check_device_layout(what, shape, strides, itemsize):
    """Strides in bytes; `itemsize` the bytes of one sample (1 or 2)."""
    if not (len(shape) == 2 or (len(shape) == 3 and shape[2] == 3)):
        raise ValueError(f"{what}: shape {tuple(shape)}, expected (height, width, 3) RGB or (height, width) grey")
    if shape[0] <= 0 or shape[1] <= 0:
        raise ValueError(f"{what}: empty frame (height and width must be > 0)")
    pixel = (3 if len(shape) == 3 else 1) * itemsize
    if (len(shape) == 3 and strides[2] != itemsize) or strides[1] != pixel or strides[0] < shape[1] * pixel:
        raise ValueError(f"{what}: rows must be contiguous (strides {tuple(strides)} bytes, expected "
                         f"({shape[1] * pixel} or more, {pixel}{f', {itemsize}' if len(shape) == 3 else ''})); "
                         f"use .contiguous() / cupy.ascontiguousarray")


def _current_device(frame):
    """The framework's current CUDA device (where the kernels run), or None when unknown."""
    module = type(frame).__module__.split(".")[0]
    if module == "torch":
        import torch
        return torch.cuda.current_device()
    if module == "cupy":
        import cupy
        return cupy.cuda.runtime.getDevice()
    return None


def _empty_like(frame):
    module = type(frame).__module__.split(".")[0]
    if module == "torch":
        import torch
        return torch.empty_like(frame, memory_format=torch.contiguous_format)
    if module == "cupy":
        import cupy
        return cupy.empty_like(frame, order="C")
    raise TypeError(f"out: required for GPU arrays of type {type(frame).__name__} "
                    f"(results are allocated only for PyTorch and CuPy)")


class Processor:
    """A frame processor: one algorithm (``mode``: "dcp" dehazing, "he" global histogram
    equalization, "ahe" sliding-window AHE/CLAHE) with its parameters on one backend
    (``backend``: "auto" takes the GPU when one is usable, "cuda", "cpu").

    It keeps the temporal state of one video stream across calls (DCP's atmospheric light, HE's
    temporal histogram): feed frames in order, call ``reset()`` before another stream.

    Keyword arguments: any configuration key, dots as underscores, e.g.
    ``Processor(mode="ahe", ahe_window=127, ahe_clip=2.0, color="luma")``.
    """

    def __init__(self, mode="dcp", backend="auto", **keys):
        options = _options("Processor", dict(keys, mode=mode, backend=backend))
        self._core = _hazefree.Processor(options)

    def process(self, frame, out=None, stream=None, depth=None):
        """Processes one frame and returns the result (``out`` when given).

        frame: uint8 or uint16, (height, width, 3) RGB or (height, width) grey, rows contiguous.
          uint16 frames are processed at their own depth (SPEC 7: codes 0..2^depth - 1, HE over
          2^depth bins) and the result is uint16 of the same depth.
          - a numpy array (or any host array numpy can view without a copy): processed on the
            Processor's backend, the result a numpy array;
          - a CUDA array with ``__dlpack__`` or ``__cuda_array_interface__`` (PyTorch, CuPy):
            processed where it lies on the CUDA backend, on ``stream`` (default: the framework's
            current stream), with no host copy; the result is an array of the same framework on
            the same device (allocated unless ``out`` is given) and is ready when that stream
            reaches this point.
        out: an array like ``frame`` (same shape, dtype, kind and device), not overlapping it.
        stream: a CUDA stream (int handle, torch.cuda.Stream, cupy.cuda.Stream) for CUDA arrays.
        depth: bits per sample: 8 for uint8 (the only one), 9 to 16 for uint16 (default 16). A
          host frame with a sample above 2^depth - 1 raises ValueError; on the GPU the values
          are not checked (that would wait for the GPU) and the bits above the depth are ignored.
        """
        handle = None
        if not isinstance(frame, _np.ndarray):
            if hasattr(frame, "__dlpack_device__") or hasattr(frame, "__cuda_array_interface__"):
                handle = _stream_handle(stream, frame)
                # stream=None took the framework's current stream: no ordering to add.
                view = _device_view(frame, "frame", handle, stream is None)
                if view is not None:
                    return self._process_device(frame, view, out, handle, stream is None, depth)
            try:
                host = _np.asarray(frame)
            except Exception as error:  # noqa: BLE001 - any failure means: not an array
                raise TypeError(f"frame: {type(frame).__name__}, expected a numpy array or a CUDA array "
                                f"(__dlpack__ / __cuda_array_interface__)") from error
            if host.dtype == object:
                raise TypeError(f"frame: {type(frame).__name__}, expected a numpy array or a CUDA array "
                                f"(__dlpack__ / __cuda_array_interface__)")
            frame = host
        if stream is not None:
            raise ValueError("stream: given for a host frame; streams apply to CUDA arrays only")
        if frame.dtype not in (_np.uint8, _np.uint16) or not frame.dtype.isnative:
            raise TypeError(f"frame: dtype {frame.dtype}, expected uint8 or uint16")
        bits = _frame_depth(frame.dtype.itemsize, depth)
        if out is None:
            out = _np.empty(frame.shape, dtype=frame.dtype)
        elif not isinstance(out, _np.ndarray):
            raise TypeError(f"out: {type(out).__name__}, expected a numpy array like frame (host frame)")
        elif out.dtype != frame.dtype:
            raise TypeError(f"out: dtype {out.dtype}, expected frame's {frame.dtype}")
        if out.shape != frame.shape:
            raise ValueError(f"out: shape {out.shape}, expected frame's {frame.shape}")
        _check_codes(frame, bits)
        self._core.process_host(frame, out, bits)
        return out

    def _process_device(self, frame, view, out, stream, stream_is_current, depth):
        if not self._core.on_gpu():
            raise ValueError(f"frame: a CUDA array, but this Processor runs on {self._core.description()}; "
                             f"use backend='cuda' or 'auto' on a machine with a GPU, or a host array")
        ptr, shape, strides, _, device_id, itemsize = view
        bits = _frame_depth(itemsize, depth)
        _check_device_layout("frame", shape, strides, itemsize)
        current = _current_device(frame)
        if device_id is not None and current is not None and device_id != current:
            raise ValueError(f"frame: on CUDA device {device_id}, but the current device is {current}; "
                             f"make it current (torch.cuda.set_device / cupy.cuda.Device) where the Processor "
                             f"was made")
        if out is None:
            out = _empty_like(frame)
        same_framework = type(out).__module__.split(".")[0] == type(frame).__module__.split(".")[0]
        out_view = _device_view(out, "out", stream, stream_is_current and same_framework)
        if out_view is None:
            raise ValueError("out: a host array for a CUDA frame; expected a CUDA array on the frame's device")
        out_ptr, out_shape, out_strides, readonly, out_device, out_itemsize = out_view
        if out_itemsize != itemsize:
            raise TypeError(f"out: {8 * out_itemsize}-bit samples, expected the frame's {8 * itemsize}-bit "
                            f"(uint{8 * itemsize})")
        if tuple(out_shape) != tuple(shape):
            raise ValueError(f"out: shape {tuple(out_shape)}, expected frame's {tuple(shape)}")
        if device_id is not None and out_device is not None and device_id != out_device:
            raise ValueError(f"out: on device {out_device}, expected the frame's device {device_id}")
        if readonly:
            raise ValueError("out: read-only array")
        _check_device_layout("out", out_shape, out_strides, out_itemsize)
        self._core.process_device(len(shape) == 3, shape[1], shape[0], ptr, strides[0], out_ptr, out_strides[0],
                                  stream, bits)
        return out

    def reset(self):
        """Forgets the temporal state (the start of another stream)."""
        self._core.reset()

    @property
    def atmospheric_light(self):
        """DCP's atmospheric light (R, G, B in [0, 1]) used for the last frame; zeros before the
        first frame and in the he/ahe modes. Waits for GPU work in flight."""
        return self._core.atmospheric_light()

    def haze_index(self):
        """DCP's haze index of the last frame (SPEC 13): 0 on a clear scene, rising with haze, in
        [0, 1], smoothed over time as the atmospheric light; 0 before the first frame and in the
        he/ahe modes. Waits for GPU work in flight."""
        return self._core.haze_index()

    @property
    def backend(self):
        """The backend in words: 'cpu (8 threads)', 'cuda (NVIDIA H200)'."""
        return self._core.description()

    @property
    def on_gpu(self):
        """True when this Processor runs on the CUDA backend (CUDA arrays are accepted)."""
        return self._core.on_gpu()

    def option(self, key):
        """The effective value of a configuration key, as text ('dcp.omega' or 'dcp_omega')."""
        name = _KEYWORDS.get(key)
        if name is None:
            raise ValueError(f"key: unknown configuration key '{key}'")
        return self._core.option(name)

    def __repr__(self):
        return f"hazefree.Processor(mode={self.option('mode')!r}, backend={self.backend!r})"


def run(input, output, progress=None, overwrite=False, verbose=False, **options):  # noqa: A002
    """Runs the whole pipeline of the command-line tool on a file or stream: decodes ``input``
    (path, URL, '-'), processes every frame and writes ``output`` with audio, timestamps and
    metadata kept, as ``hazefree --set key=value ... input output`` does. The GIL is released
    while it runs.

    progress: called as ``progress(frames_written, frames_expected, seconds)`` after each frame
      (frames_expected is 0 when unknown); an exception it raises stops the run (the output is
      finished) and is raised again here. A callable that takes a fourth argument gets a dict
      of the live counters too: frames_dropped, reconnects, seconds_lost (``pipeline_live``
      runs), latency_seconds (this frame's, decoded to encoded), atmospheric_light (DCP's A
      as R, G, B in [0, 1], sampled about once a second; zeros in the he/ahe modes), and
      haze_index and omega (DCP's haze index of the last frame and the omega it was dehazed
      with, which ``dcp_auto_strength=True`` makes follow the index; None in the he/ahe modes).
    overwrite: replace an existing output (refused otherwise, as without ``-y``).
    verbose: the command line's ``-v`` lines on stderr, FFmpeg's and the encoders' (x264's
      statistics) among them; without it the run prints none of those, as the command line.
    Ctrl-C (on the main thread) stops reading, finishes the output as the CLI does, then raises
    KeyboardInterrupt. Returns a dict: frames_in, frames_out, frames_dropped, packets_copied,
    seconds, processor.
    """
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: {type(progress).__name__}, expected a callable or None")
    for name, value in (("input", input), ("output", output)):
        if not isinstance(value, (str, bytes)) and not hasattr(value, "__fspath__"):
            raise TypeError(f"{name}: {type(value).__name__}, expected a path or URL string")
    import os
    if progress is not None and not _takes_four_arguments(progress):
        three = progress

        def progress(frames, expected, seconds, live):
            return three(frames, expected, seconds)
    return _hazefree.run(os.fsdecode(input), os.fsdecode(output), _options("run", options), progress,
                         bool(overwrite), bool(verbose))


def _takes_four_arguments(function):
    """True when ``function`` can be called with four positional arguments (also with *args);
    a callable whose signature cannot be read is called with the three of earlier versions."""
    import inspect
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return (any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in parameters) or
            len(positional) >= 4)


def frames(input, device="cpu", **options):  # noqa: A002
    """Yields the processed video frames of ``input`` as (height, width, 3) RGB arrays, in order:
    decoded, processed on the stream's own pixel format and depth exactly as ``run()`` processes
    them, then converted to RGB with the stream's matrix and range. 8-bit streams give uint8
    arrays; deeper ones (10-bit HEVC, 12-bit FFV1, ...) uint16 arrays of codes at the stream's
    depth (0..1023 at 10 bits); ``output_depth=8`` gives uint8 frames of any stream, processed at
    8 bits.

    device: "cpu" yields numpy arrays; "cuda" yields CUDA tensors (PyTorch when importable,
      else CuPy), uploaded from the host after the conversion (uint16 frames need PyTorch 2.3 or
      later, which has torch.uint16).
    options: configuration keys as for Processor (``mode``, ``backend``, ``input_hwdec``...).
    """
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device: {device!r}, expected 'cpu' or 'cuda'")
    upload = None
    if device == "cuda":
        try:
            import torch
            if not torch.cuda.is_available():
                raise RuntimeError("device='cuda': PyTorch sees no CUDA GPU")

            def upload(array):
                return torch.from_numpy(array).to("cuda")
        except ImportError:
            try:
                import cupy
            except ImportError:
                raise RuntimeError("device='cuda' needs PyTorch or CuPy") from None

            def upload(array):
                return cupy.asarray(array)
    import os
    reader = _hazefree.FrameReader(os.fsdecode(input), _options("frames", options))
    return _frame_iterator(reader, upload)


def _frame_iterator(reader, upload):
    depth = reader.depth
    dtype = _np.uint8 if depth == 8 else _np.uint16
    while True:
        rgb = _np.empty((reader.height, reader.width, 3), dtype=dtype)
        if not reader.next(rgb, depth):
            return
        yield upload(rgb) if upload else rgb

