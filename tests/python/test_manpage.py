"""The manual page hazefree(1) as scripts/make-manpage.py writes it from the built program and the
options table: its example commands read as a shell reads them when pasted, its options name their
values as --help does."""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def manual_page(hazefree_binary, tmp_path):
    page = tmp_path / "hazefree.1"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make-manpage.py"), hazefree_binary, str(page)],
                   check=True, timeout=120, env=dict(os.environ))
    return page.read_text(encoding="utf-8")


def test_files_section_quotes_the_frei0r_filter_for_the_shell(hazefree_binary, tmp_path):
    text = manual_page(hazefree_binary, tmp_path)
    files = text[text.index(".SH FILES"):text.index(".SH SEE ALSO")]
    # roff escapes the hyphens; the filter graph is one quoted shell word, its '|' no pipe.
    assert '\\-vf "frei0r=hazefree_clahe:127|2"' in files
    assert not re.search(r'(^|[^"])frei0r=hazefree_clahe:127\|2([^"]|$)', files)


def test_options_name_their_values_as_help_does(hazefree_binary, tmp_path):
    text = manual_page(hazefree_binary, tmp_path)
    options = text[text.index(".SH OPTIONS"):text.index(".SH CONFIGURATION KEYS")]
    tagged = re.findall(r"^\.TP\n\\fB(.*)\\fR\n(.*)$", options, re.MULTILINE)
    entries = {name: description for name, description in tagged}
    # A value's name beside its option, the description apart: after names that fill the help's
    # name column (one space before the description there) and after longer ones (a line of
    # their own) as after short ones.
    for name, description in [("\\-\\-threads N", "CPU threads"),
                              ("\\-\\-start TIME", "start here"),
                              ("\\-\\-progress\\-period SECONDS", "seconds between progress lines"),
                              ("\\-\\-color luma|rgb|grey|rgb\\-bits", "what he/ahe equalize"),
                              ("\\-\\-encoder\\-opt KEY=VALUE ...", "private options of the encoder")]:
        assert name in entries, (name, sorted(entries))
        assert entries[name].startswith(description), (name, entries[name])
    assert not [name for name in entries if re.search(r" (TEXT|INT|FLOAT)\b", name)]
