#!/usr/bin/env python3
"""Writes the manual page hazefree(1) from the built program and the options table: the
program's --help as OPTIONS (a tagged paragraph per option, filled to the reader's width), and every configuration key (name, accepted values, default, help)
from hazefree.config_keys() (the Python module over the same table) as CONFIGURATION KEYS.

    PYTHONPATH=<build>/python scripts/make-manpage.py <build>/hazefree hazefree.1

The date is SOURCE_DATE_EPOCH's where it is set (Debian sets it from debian/changelog)."""
import datetime
import os
import subprocess
import sys

import hazefree


def roff(text):
    """Plain text -> roff text: backslashes and hyphens escaped, no line starting a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line for line in text.split("\n"))


DESCRIPTION_COLUMN = 28  # where --help starts an option's description (kHelpColumn)


def option_line(line):
    """An option's first line of --help -> (its names with the value's name, its description): the
    description starts at DESCRIPTION_COLUMN, after one space only where the names fill the column
    ("--progress-period SECONDS seconds between ..."), or on the next line after longer names."""
    if len(line) > DESCRIPTION_COLUMN and line[DESCRIPTION_COLUMN - 1] == " " and line[DESCRIPTION_COLUMN] != " ":
        return line[:DESCRIPTION_COLUMN].strip(), line[DESCRIPTION_COLUMN:].strip()
    name, _, description = line.strip().partition("  ")
    return name.strip(), description.strip()


def options_section(help_text):
    """The program's --help (wrapped at 80 columns, descriptions from column 28) as roff: a
    subsection per group, a tagged paragraph per option (man fills it to the reader's width),
    and the closing notes as paragraphs."""
    out, footer, current = [], [], None
    started = False

    def flush():
        nonlocal current
        if current:
            out.extend([".TP", "\\fB" + roff(current[0]) + "\\fR", roff(" ".join(current[1]))])
        current = None

    for line in help_text.split("\n"):
        if not line.strip():
            continue
        if not line.startswith(" ") and line.endswith(":") and not line.startswith("Usage"):
            flush()
            started = True
            out.extend([".SS " + roff(line[:-1])])
            continue
        if not started:
            continue
        if line.startswith(" " * 8):  # a description going on
            if current:
                current[1].append(line.strip())
            continue
        if line.startswith("  "):
            flush()
            name, description = option_line(line)
            current = (name, [description] if description else [])
            continue
        flush()
        if footer and not footer[-1][-1].endswith("."):
            footer[-1].append(line.strip())
        else:
            footer.append([line.strip()])
    flush()
    for paragraph in footer:
        out.extend([".PP", roff(" ".join(paragraph))])
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make-manpage.py <hazefree program> <output .1 file>")
    program, output = sys.argv[1], sys.argv[2]
    done = subprocess.run([program, "--help"], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        sys.exit(f"make-manpage.py: {program} --help failed (exit {done.returncode}): {done.stderr.strip()}")
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", datetime.datetime.now(datetime.timezone.utc).timestamp()))
    date = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        f'.TH HAZEFREE 1 "{date}" "hazefree {hazefree.__version__}" "User Commands"',
        ".SH NAME",
        "hazefree \\- video dehazing and contrast equalization on the CPU and CUDA GPUs",
        ".SH SYNOPSIS",
        ".B hazefree",
        "[\\fIoptions\\fR] [\\fB\\-\\-set\\fR \\fIkey\\fR=\\fIvalue\\fR ...] \\fIinput\\fR \\fIoutput\\fR",
        ".SH DESCRIPTION",
        roff("hazefree reads anything FFmpeg reads (files, pipes, network streams, V4L2 cameras, still "
             "images), removes haze with the dark channel prior (mode dcp) or equalizes contrast with "
             "global histogram equalization (mode he) or sliding-window AHE/CLAHE (mode ahe), and writes "
             "anything FFmpeg writes, keeping audio, timestamps and colour metadata. Every algorithm runs "
             "on the CPU and on CUDA GPUs with the same results; the backend auto takes the GPU when one "
             "is usable."),
        ".PP",
        roff("Every setting is a configuration key (below): set it in a TOML preset given with -c, or "
             "with --set key=value; the options below are shortcuts for the common ones."),
        ".SH OPTIONS",
        *options_section(done.stdout),
        ".SH CONFIGURATION KEYS",
        roff("Each key with its accepted values and its default (the same table drives presets, --set, "
             "--print-config, the library, the Python module, the GStreamer element and the frei0r "
             "filters)."),
    ]
    for key in hazefree.config_keys():
        default = key.default if key.default != "" else '""'
        lines += [".TP", f"\\fB{roff(key.name)}\\fR = {roff(default)}",
                  roff(f"{key.help}. Accepted: {key.range}.")]
    lines += [
        ".SH FILES",
        ".TP",
        ".I /usr/share/hazefree/configs/",
        roff("presets (TOML) for hazefree -c"),
        ".TP",
        ".I /usr/lib/frei0r\\-1/hazefree_dehaze.so, hazefree_clahe.so, hazefree_histeq.so",
        roff("the frei0r filters: ffmpeg -vf \"frei0r=hazefree_clahe:127|2\" (window 127, clip 2); "
             "melt ... -filter frei0r.hazefree_dehaze omega=0.9"),
        ".SH SEE ALSO",
        ".BR ffmpeg (1),",
        ".BR melt (1),",
        ".BR gst\\-inspect\\-1.0 (1)",
    ]
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
