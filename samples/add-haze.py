#!/usr/bin/python3
"""Adds synthetic haze to raw rgb24 frames read from stdin and writes them to stdout.

Koschmieder's haze model I = J t + A (1 - t), with transmission t = exp(-beta d) and a depth d
that grows linearly from the bottom row (near) to the top row (far), as in a street scene
filmed from above. Deterministic: no randomness, round half to even on output.

usage: add-haze.py WIDTH HEIGHT [--grey]   (--grey: frames are gray8 instead of rgb24)
"""
import sys

import numpy as np

ATMOSPHERIC_LIGHT = np.array([0.86, 0.87, 0.89])  # a slightly bluish white-grey sky
BETA = 1.0                                        # scattering coefficient (1 / depth unit)
DEPTH_NEAR, DEPTH_FAR = 0.1, 1.5                  # bottom row, top row -> t from 0.90 to 0.22


def transmission(height):
    row_from_top = np.arange(height, dtype=np.float64)
    depth = DEPTH_FAR + (DEPTH_NEAR - DEPTH_FAR) * row_from_top / max(height - 1, 1)
    return np.exp(-BETA * depth)[:, None, None]


def main():
    width, height = int(sys.argv[1]), int(sys.argv[2])
    channels = 1 if "--grey" in sys.argv[3:] else 3
    frame_bytes = width * height * channels
    t = transmission(height)
    light = ATMOSPHERIC_LIGHT[:channels] if channels == 3 else ATMOSPHERIC_LIGHT.mean(keepdims=True)
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        raw = source.read(frame_bytes)
        if len(raw) < frame_bytes:
            break
        clean = np.frombuffer(raw, np.uint8).reshape(height, width, channels) / 255.0
        hazy = clean * t + light * (1.0 - t)
        sink.write(np.clip(np.rint(hazy * 255.0), 0, 255).astype(np.uint8).tobytes())
    sink.flush()


if __name__ == "__main__":
    main()
