"""The manual page hazefree(1) as scripts/make-manpage.py writes it from the built program and the
options table: its example commands read as a shell reads them when pasted."""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_files_section_quotes_the_frei0r_filter_for_the_shell(hazefree_binary, tmp_path):
    page = tmp_path / "hazefree.1"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make-manpage.py"), hazefree_binary, str(page)],
                   check=True, timeout=120, env=dict(os.environ))
    text = page.read_text(encoding="utf-8")
    files = text[text.index(".SH FILES"):text.index(".SH SEE ALSO")]
    # roff escapes the hyphens; the filter graph is one quoted shell word, its '|' no pipe.
    assert '\\-vf "frei0r=hazefree_clahe:127|2"' in files
    assert not re.search(r'(^|[^"])frei0r=hazefree_clahe:127\|2([^"]|$)', files)
