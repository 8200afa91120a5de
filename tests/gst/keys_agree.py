"""Every configuration key reads the same through the three outputs made from the options table:
`hazefree --print-config` (the range in each key's comment, the default as its value),
`hazefree.config_keys()` (Python) and `gst-inspect-1.0 hazefree` (the range in each property's
description, the default and the numeric range of its spec). Also: each range text says the
interval that the key's minimum and maximum give. One line per disagreement, exit status 1.

ctest runs it with HAZEFREE_BINARY, PYTHONPATH (the built module) and GST_PLUGIN_PATH (the
built element) set."""
import math
import os
import re
import subprocess
import sys

import hazefree

problems = []


def disagree(key, what):
    problems.append(f"key {key}: {what}")


def number(text):
    """A default as text ("5/255", "0.95", "inf") -> float."""
    if "/" in text:
        a, b = text.split("/")
        return float(a) / float(b)
    return float(text)


keys = hazefree.config_keys()
by_name = {k.name: k for k in keys}

# ---- --print-config ---------------------------------------------------------------------------
printed = subprocess.run([os.environ["HAZEFREE_BINARY"], "--print-config"], capture_output=True, text=True,
                         check=True).stdout
section, comment, seen = "", None, []
for line in printed.splitlines():
    if line.startswith("[") and line.endswith("]"):
        section = line[1:-1]
    elif line.startswith("# ") and not line.startswith("# hazefree"):
        comment = line[2:]
    elif "=" in line and not line.startswith("#"):
        leaf, value = (part.strip() for part in line.split("=", 1))
        name = f"{section}.{leaf}" if section else leaf
        seen.append(name)
        key = by_name.get(name)
        if key is None:
            disagree(name, "printed by --print-config, missing from hazefree.config_keys()")
            continue
        head = f"{key.help} ("
        if not (comment and comment.startswith(head) and comment.endswith(")")):
            disagree(name, f"--print-config comments it '{comment}', expected '{key.help} ({key.range})'")
        elif comment[len(head):-1] != key.range:
            disagree(name, f"range '{comment[len(head):-1]}' in --print-config, '{key.range}' in config_keys()")
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        if value != key.default:
            disagree(name, f"default '{value}' in --print-config, '{key.default}' in config_keys()")
        comment = None
if seen != [k.name for k in keys]:
    disagree("(all)", f"--print-config lists {seen}, config_keys() {[k.name for k in keys]}")

# ---- each range text against the key's numbers ------------------------------------------------
interval = re.compile(r"([\[(])(-?[\d.e+]+|-inf), (-?[\d.e+]+|inf)([\])])$")
for k in keys:
    if k.kind not in ("integer", "number"):
        continue
    m = interval.search(k.range)
    if not m:
        disagree(k.name, f"range '{k.range}' of a {k.kind} key names no interval")
        continue
    low, high = number(m.group(2)), number(m.group(3))
    if (low, high, m.group(1) == "(", m.group(4) == ")") != (k.minimum, k.maximum, k.minimum_excluded,
                                                            k.maximum_excluded):
        disagree(k.name, f"range '{k.range}', numbers {k.minimum_excluded and '(' or '['}{k.minimum}, "
                         f"{k.maximum}{k.maximum_excluded and ')' or ']'}")

# ---- gst-inspect-1.0 hazefree -----------------------------------------------------------------
inspect = subprocess.run(["gst-inspect-1.0", "hazefree"], capture_output=True, text=True)
if inspect.returncode != 0:
    print(f"gst-inspect-1.0 hazefree: status {inspect.returncode}: {inspect.stderr.strip()}")
    sys.exit(1)
lines = inspect.stdout.splitlines()
described = {}  # key -> (range text, type line)
blurb = re.compile(r"^\s+[a-z0-9-]+\s+: (.*) \((.*); key ([a-z0-9_.]+)\)$")
for i, line in enumerate(lines):
    m = blurb.match(line)
    if m:
        help_text, range_text, name = m.groups()
        type_line = next(l.strip() for l in lines[i + 1:i + 4] if not l.strip().startswith("flags:"))
        described[name] = (help_text, range_text, type_line)

processor_keys = [k.name for k in keys if k.modes]
if sorted(described) != sorted(processor_keys):
    disagree("(all)", f"gst-inspect-1.0 shows properties of {sorted(described)}, the Processor's keys are "
                      f"{sorted(processor_keys)}")
gst_range = re.compile(r"Range:\s*(\S+)\s*-\s*(\S+)\s*Default:\s*(\S+)")
for name, (help_text, range_text, type_line) in described.items():
    k = by_name.get(name)
    if k is None:
        continue
    if help_text != k.help:
        disagree(name, f"help '{help_text}' in gst-inspect-1.0, '{k.help}' in config_keys()")
    if range_text != k.range:
        disagree(name, f"range '{range_text}' in gst-inspect-1.0, '{k.range}' in config_keys()")
    if k.kind in ("integer", "number"):
        m = gst_range.search(type_line)
        if not m:
            disagree(name, f"gst-inspect-1.0 shows '{type_line}', expected a Range and a Default")
            continue
        low, high, default = (float(x) for x in m.groups())
        step = 1 if k.kind == "integer" else 0
        want_low = k.minimum + (step if k.minimum_excluded else 0)
        want_high = k.maximum - (step if k.maximum_excluded else 0)
        if not (low == want_low or (math.isinf(want_low) and low < -1e300)):
            disagree(name, f"minimum {low} in gst-inspect-1.0, {k.minimum} in config_keys()")
        if not (math.isclose(high, want_high, rel_tol=1e-6) or (math.isinf(want_high) and high > 1e300)):
            disagree(name, f"maximum {high} in gst-inspect-1.0, {k.maximum} in config_keys()")
        if not math.isclose(default, number(k.default), rel_tol=1e-6):
            disagree(name, f"default {default} in gst-inspect-1.0, '{k.default}' in config_keys()")
    elif k.kind == "choice":
        m = re.search(r'Default: \d+, "([^"]*)"', type_line)
        if not m or m.group(1) != k.default:
            disagree(name, f"gst-inspect-1.0 shows '{type_line}', default '{k.default}' in config_keys()")
    elif k.kind == "boolean":
        if f"Default: {k.default}" not in type_line:
            disagree(name, f"gst-inspect-1.0 shows '{type_line}', default '{k.default}' in config_keys()")
    else:
        m = re.search(r'Default: (null|"(.*)")', type_line)
        shown = "" if m and m.group(1) == "null" else (m.group(2) if m else None)
        if shown != k.default:
            disagree(name, f"gst-inspect-1.0 shows '{type_line}', default '{k.default}' in config_keys()")

for p in problems:
    print(p)
if not problems:
    print(f"{len(keys)} keys agree ({len(described)} of them GStreamer properties)")
sys.exit(1 if problems else 0)
