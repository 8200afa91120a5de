#!/usr/bin/python3
"""Measures the haze index and auto strength (SPEC 13) on photographs, with the program itself.

For each clear photograph: its haze index, and the PSNR against itself of DCP with the fixed
strength and with dcp.auto_strength. For each clear photograph with synthetic haze (the model of
samples/add-haze.py at several densities): the index, and the PSNR against the clear original
of the fixed and the auto strength. For each real hazy photograph (no ground truth): the index
and the omega used. Prints Markdown tables (docs/ALGORITHMS.md).

usage: haze-index-eval.py HAZEFREE CLEAR_DIR_OR_FILES... [--hazy DIR] [--max-width 800]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np

LIGHT = np.array([0.86, 0.87, 0.89])  # the samples' atmospheric light (R, G, B)


def load(path, max_width):
    image = cv2.imread(path, cv2.IMREAD_COLOR)
    if image is None:
        raise SystemExit(f"{path}: not a picture OpenCV reads")
    if image.shape[1] > max_width:
        scale = max_width / image.shape[1]
        image = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    # Even sizes: the program's yuv420p-free path takes any, but keep PNG round trips simple.
    return image[: image.shape[0] // 2 * 2, : image.shape[1] // 2 * 2]


def add_haze(bgr, t_near, t_far):
    """Koschmieder's model with t from t_near (bottom row) to t_far (top row)."""
    rgb = bgr[:, :, ::-1] / 255.0
    h = rgb.shape[0]
    t = np.linspace(t_far, t_near, h)[:, None, None]
    hazy = rgb * t + LIGHT * (1 - t)
    return np.clip(np.rint(hazy * 255), 0, 255).astype(np.uint8)[:, :, ::-1]


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def dehaze(program, bgr, work, auto):
    src = os.path.join(work, "in.png")
    dst = os.path.join(work, "out.png")
    stats = os.path.join(work, "stats.jsonl")
    cv2.imwrite(src, bgr)
    cmd = [program, "-y", "--backend", "cpu", "--stats", stats, src, dst]
    if auto:
        cmd.insert(1, "--auto-strength")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(stats) as f:
        line = json.loads(f.readline())
    return cv2.imread(dst, cv2.IMREAD_COLOR), line["haze_index"], line["omega"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("clear", nargs="+")
    ap.add_argument("--hazy", default="")
    ap.add_argument("--max-width", type=int, default=800)
    args = ap.parse_args()
    clear = []
    for c in args.clear:
        clear += sorted(glob.glob(os.path.join(c, "*"))) if os.path.isdir(c) else [c]
    densities = [("light", 0.95, 0.70), ("medium", 0.90, 0.22), ("dense", 0.50, 0.10)]
    with tempfile.TemporaryDirectory() as work:
        print("| clear photograph | h | PSNR fixed | PSNR auto |")
        print("| --- | ---: | ---: | ---: |")
        syn_rows = []
        for path in clear:
            image = load(path, args.max_width)
            fixed, h, _ = dehaze(args.program, image, work, False)
            auto, _, _ = dehaze(args.program, image, work, True)
            print(f"| {os.path.basename(path)} | {h:.3f} | {psnr(fixed, image):.1f} | {psnr(auto, image):.1f} |")
            sys.stdout.flush()
            for name, near, far in densities:
                hazy = add_haze(image, near, far)
                fixed, h, _ = dehaze(args.program, hazy, work, False)
                auto, _, w = dehaze(args.program, hazy, work, True)
                syn_rows.append((os.path.basename(path), name, h, w, psnr(hazy, image), psnr(fixed, image),
                                 psnr(auto, image)))
        print()
        print("| synthetic haze | density | h | omega used | PSNR hazy | PSNR fixed | PSNR auto | auto - fixed |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for n, d, h, w, ph, pf, pa in syn_rows:
            print(f"| {n} | {d} | {h:.3f} | {w:.3f} | {ph:.1f} | {pf:.1f} | {pa:.1f} | {pa - pf:+.2f} |")
        if args.hazy:
            print()
            print("| real hazy photograph | h | omega used |")
            print("| --- | ---: | ---: |")
            for path in sorted(glob.glob(os.path.join(args.hazy, "*.png"))):
                image = load(path, args.max_width)
                _, h, w = dehaze(args.program, image, work, True)
                print(f"| {os.path.basename(path)} | {h:.3f} | {w:.3f} |")


if __name__ == "__main__":
    main()
