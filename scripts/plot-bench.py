#!/usr/bin/env python3
"""Draws a `hazefree bench --json` file: per-frame stage times (stacked) and the atmospheric
light over time, one panel pair per benchmark case. Usage: plot-bench.py BENCH.json OUT.png
Needs python3 with matplotlib (Debian: python3-matplotlib)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    cases = [r for r in doc.get("results", []) if r.get("per_frame")]
    if not cases:
        print(f"{sys.argv[1]}: no per-frame results to plot", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(cases), 2, figsize=(13, 3.2 * len(cases)), squeeze=False)
    for row, case in zip(axes, cases):
        frames = case["per_frame"]
        x = list(range(len(frames)))
        names = list(frames[0]["stages_ms"].keys())
        timeline, light = row
        if names:
            bottom = [0.0] * len(frames)
            for name in names:
                values = [f["stages_ms"].get(name, 0.0) for f in frames]
                timeline.bar(x, values, bottom=bottom, label=name, width=0.9)
                bottom = [b + v for b, v in zip(bottom, values)]
            timeline.legend(fontsize=7, ncol=2, loc="upper right")
        timeline.plot(x, [f["ms"] for f in frames], color="black", linewidth=1, label="wall")
        timeline.set_title(f'{case["case"]} on {case["backend"]}, {case["width"]}x{case["height"]}', fontsize=9)
        timeline.set_xlabel("frame")
        timeline.set_ylabel("ms")
        a = [f["atmospheric_light"] for f in frames]
        for channel, colour in enumerate(("red", "green", "blue")):
            light.plot(x, [v[channel] * 255 for v in a], color=colour, label="RGB"[channel])
        light.set_title("atmospheric light A (0-255)", fontsize=9)
        light.set_xlabel("frame")
        light.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=90)
    return 0


if __name__ == "__main__":
    sys.exit(main())
