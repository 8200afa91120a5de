#!/usr/bin/env python3
"""The Python benchmark of issue 11's performance section, on one machine in one run:

- 1080p DCP through hazefree.Processor.process on a CUDA PyTorch tensor (median per call, target
  <= 0.25 ms) beside a plain PyTorch DCP written with standard operations (max_pool2d minimum
  filter, topk atmospheric light, cumsum box filters for the guided filter): the ratio (target
  >= 10x);
- HE through Python beside torchvision's equalize on the same GPU tensor;
- CLAHE: hazefree's exact sliding CLAHE (GPU and CPU) beside OpenCV's tiled createCLAHE and
  scikit-image's sliding rank.equalize on the CPU.

Each figure: median (and min, p90) over timed calls after warm-up calls; GPU calls are timed
host-side around a synchronised call (what a Python caller waits for) and with CUDA events on the
stream (the GPU time). A library that is not installed is recorded as unavailable, never faked.

    PYTHONPATH=build/python python3 python/bench_hazefree.py --json bench-python.json
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

# This folder holds the package's Python sources without the compiled extension: import the
# built package (PYTHONPATH=<build>/python) or the installed one instead.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import hazefree  # noqa: E402


def summary(samples_ms):
    ordered = sorted(samples_ms)
    return {"median_ms": statistics.median(ordered), "min_ms": ordered[0],
            "p90_ms": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], "calls": len(ordered)}


def time_host(call, warmup, calls, sync=None):
    for _ in range(warmup):
        call()
    if sync:
        sync()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        if sync:
            sync()
        samples.append((time.perf_counter() - start) * 1e3)
    return summary(samples)


def time_cuda_events(torch, call, warmup, calls):
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    samples = []
    stream = torch.cuda.current_stream()
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        call()
        end.record(stream)
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return summary(samples)


def hazy_frame(width, height, seed=3):
    """A smooth hazy-looking 8-bit RGB frame (the benchmark's input; content does not change the
    work of either implementation)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack([0.5 + 0.3 * np.sin(x / 97 + c) * np.cos(y / 61 - c) for c in range(3)], axis=-1)
    noise = rng.normal(0, 0.03, (height, width, 3)).astype(np.float32)
    haze = 0.55 * base + 0.4 + noise
    return np.ascontiguousarray(np.clip(haze * 255, 0, 255).astype(np.uint8))


# ---- a plain PyTorch DCP (He et al., the same parameters as hazefree's defaults) --------------

def torch_dcp(torch, frame, patch_radius=7, omega=0.95, top=0.001, gf_radius=32, gf_eps=1e-3, t0=0.1):
    F = torch.nn.functional
    image = frame.permute(2, 0, 1).unsqueeze(0).float() / 255.0           # 1x3xHxW
    k = 2 * patch_radius + 1

    def min_filter(x):
        return -F.max_pool2d(-x, k, stride=1, padding=patch_radius)

    dark = min_filter(image.amin(dim=1, keepdim=True))                    # 1x1xHxW
    count = max(1, int(top * dark.numel()))
    index = torch.topk(dark.flatten(), count).indices
    light = image.flatten(2)[0][:, index].mean(dim=1).clamp(min=1 / 255)  # 3
    raw = 1 - omega * min_filter((image / light.view(1, 3, 1, 1)).amin(dim=1, keepdim=True))
    grey = (0.299 * image[:, 0:1] + 0.587 * image[:, 1:2] + 0.114 * image[:, 2:3])

    def box_mean(x, r):
        # Integral image by cumsum; windows clipped at the borders, divided by the true count.
        h, w = x.shape[-2:]
        c = F.pad(x, (1, 0, 1, 0)).cumsum(-1).cumsum(-2)
        ys = torch.arange(h, device=x.device)
        xs = torch.arange(w, device=x.device)
        y0, y1 = (ys - r).clamp(0, h), (ys + r + 1).clamp(0, h)
        x0, x1 = (xs - r).clamp(0, w), (xs + r + 1).clamp(0, w)
        s = (c[..., y1[:, None], x1[None, :]] - c[..., y0[:, None], x1[None, :]]
             - c[..., y1[:, None], x0[None, :]] + c[..., y0[:, None], x0[None, :]])
        n = ((y1 - y0)[:, None] * (x1 - x0)[None, :]).to(x.dtype)
        return s / n

    mean_i, mean_p = box_mean(grey, gf_radius), box_mean(raw, gf_radius)
    cov = box_mean(grey * raw, gf_radius) - mean_i * mean_p
    var = (box_mean(grey * grey, gf_radius) - mean_i * mean_i).clamp(min=0)
    a = cov / (var + gf_eps)
    b = mean_p - a * mean_i
    t = box_mean(a, gf_radius) * grey + box_mean(b, gf_radius)
    a3 = light.view(1, 3, 1, 1)
    recovered = ((image - a3) / t.clamp(min=t0) + a3).clamp(0, 1)
    return (recovered[0].permute(1, 2, 0) * 255 + 0.5).to(torch.uint8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--size", default="1920x1080", help="frame size WxH (default 1920x1080)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per GPU measurement")
    parser.add_argument("--cpu-calls", type=int, default=5, help="timed calls per CPU measurement")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    frame = hazy_frame(width, height)
    grey = np.ascontiguousarray(frame[:, :, 1])

    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hazefree": hazefree.__version__, "python": platform.python_version(), "machine": platform.node(),
        "size": [width, height], "targets": {"dcp_process_median_ms": 0.25, "dcp_speedup_over_plain_torch": 10.0},
        "gpu": None, "measurements": {}, "unavailable": {},
    }
    m = results["measurements"]

    # ---- GPU: PyTorch tensors ----
    torch = None
    try:
        import torch  # noqa: F811
        if not torch.cuda.is_available():
            results["unavailable"]["gpu"] = "PyTorch sees no CUDA GPU"
            torch = None
    except ImportError:
        results["unavailable"]["gpu"] = "PyTorch is not installed"
    if torch is not None and not hazefree.gpu_available():
        results["unavailable"]["gpu"] = "hazefree has no usable CUDA backend: " + hazefree._hazefree.gpu_available()[1]
        torch = None
    if torch is not None:
        results["gpu"] = torch.cuda.get_device_name()
        results["torch"] = torch.__version__
        sync = torch.cuda.synchronize
        tensor = torch.from_numpy(frame).cuda()
        out = torch.empty_like(tensor)

        dcp = hazefree.Processor(mode="dcp", backend="cuda")
        m["dcp_hazefree_process_torch"] = {
            "what": "hazefree.Processor(mode='dcp').process(cuda uint8 HxWx3 tensor, out=...)",
            "per_call_synchronised": time_host(lambda: dcp.process(tensor, out=out), 20, args.calls, sync),
            "gpu_events": time_cuda_events(torch, lambda: dcp.process(tensor, out=out), 20, args.calls),
        }
        m["dcp_plain_torch"] = {
            "what": "PyTorch DCP with standard operations (max_pool2d minimum filter, topk light, cumsum guided filter)",
            "per_call_synchronised": time_host(lambda: torch_dcp(torch, tensor), 5, max(20, args.calls // 4), sync),
            "gpu_events": time_cuda_events(torch, lambda: torch_dcp(torch, tensor), 5, max(20, args.calls // 4)),
        }
        ours = m["dcp_hazefree_process_torch"]["per_call_synchronised"]["median_ms"]
        plain = m["dcp_plain_torch"]["per_call_synchronised"]["median_ms"]
        results["dcp_speedup_over_plain_torch"] = plain / ours
        results["dcp_process_median_ms"] = ours
        results["targets_met"] = {"dcp_process_median_ms": ours <= 0.25,
                                  "dcp_speedup_over_plain_torch": plain / ours >= 10.0}

        he = hazefree.Processor(mode="he", color="rgb", backend="cuda")
        m["he_hazefree_process_torch"] = {
            "what": "hazefree.Processor(mode='he', color='rgb').process(cuda tensor, out=...)",
            "per_call_synchronised": time_host(lambda: he.process(tensor, out=out), 20, args.calls, sync),
        }
        try:
            from torchvision.transforms.v2 import functional as tvf
        except ImportError:
            try:
                from torchvision.transforms import functional as tvf
            except ImportError:
                tvf = None
        if tvf is None:
            results["unavailable"]["torchvision"] = "torchvision is not installed"
        else:
            chw = tensor.permute(2, 0, 1).contiguous()
            m["he_torchvision_equalize"] = {
                "what": "torchvision equalize on the same frame as a 3xHxW cuda uint8 tensor (per channel)",
                "per_call_synchronised": time_host(lambda: tvf.equalize(chw), 10, args.calls, sync),
            }
        ahe_gpu = hazefree.Processor(mode="ahe", color="grey", ahe_window=63, ahe_clip=2.0, backend="cuda")
        grey_tensor = torch.from_numpy(grey).cuda()
        grey_out = torch.empty_like(grey_tensor)
        m["clahe_hazefree_cuda"] = {
            "what": "hazefree exact sliding CLAHE, window 63, clip 2, grey, cuda tensor",
            "per_call_synchronised": time_host(lambda: ahe_gpu.process(grey_tensor, out=grey_out), 5,
                                               max(20, args.calls // 4), sync),
        }

    # ---- CPU: CLAHE ----
    ahe_cpu = hazefree.Processor(mode="ahe", color="grey", ahe_window=63, ahe_clip=2.0, backend="cpu")
    grey_result = np.empty_like(grey)
    m["clahe_hazefree_cpu"] = {
        "what": "hazefree exact sliding CLAHE, window 63, clip 2, grey, numpy, " + ahe_cpu.backend,
        "per_call": time_host(lambda: ahe_cpu.process(grey, out=grey_result), 1, args.cpu_calls),
    }
    try:
        import cv2
        clahe = cv2.createCLAHE(clipLimit=2.0, tileGridSize=(8, 8))
        m["clahe_opencv_tiled"] = {
            "what": f"OpenCV {cv2.__version__} createCLAHE(clipLimit=2, tileGridSize=8x8) (tiled, interpolated), "
                    f"{cv2.getNumThreads()} threads",
            "per_call": time_host(lambda: clahe.apply(grey), 3, max(20, args.cpu_calls)),
        }
    except ImportError:
        results["unavailable"]["opencv"] = "OpenCV (cv2) is not installed"
    try:
        import skimage
        from skimage.filters import rank
        try:
            footprint = np.ones((63, 63), dtype=bool)
            call = lambda: rank.equalize(grey, footprint=footprint)  # noqa: E731
            call()
        except TypeError:  # older scikit-image: selem=
            call = lambda: rank.equalize(grey, selem=footprint)  # noqa: E731
        m["ahe_skimage_rank_equalize"] = {
            "what": f"scikit-image {skimage.__version__} filters.rank.equalize, 63x63 square footprint "
                    f"(sliding, no clip), one thread",
            "per_call": time_host(call, 0, max(1, min(args.cpu_calls, 3))),
        }
    except ImportError:
        results["unavailable"]["skimage"] = "scikit-image is not installed"

    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
