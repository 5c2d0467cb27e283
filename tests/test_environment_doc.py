"""docs/environment.md lists every environment variable the product reads: pyvt, libvt, the
C example, the build backend, bench/ and tools/ (tests' own variables are listed too but not
required)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "environment.md"

SOURCES = [("pyvt", ("*.py", "*.pyx")), ("libvt", ("*.cpp", "*.cu", "*.h", "*.cuh")), ("examples", ("*.c",)),
           ("tools", ("*.py",)), ("bench", ("*.py",))]
READS = re.compile(r"""(?:\bgetenv|\benv_on|os\.environ\.get|os\.getenv)\(\s*["']([A-Z][A-Z0-9_]*)["']"""
                   r"""|os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]""")


def variables_read() -> dict[str, str]:
    """name -> the first file reading it."""
    found: dict[str, str] = {}
    for folder, globs in SOURCES:
        for g in globs:
            for f in sorted((ROOT / folder).rglob(g)):
                for m in READS.finditer(f.read_text(encoding="utf-8", errors="replace")):
                    found.setdefault(m.group(1) or m.group(2), str(f.relative_to(ROOT)))
    return found


def test_the_scan_finds_the_known_readers():
    found = variables_read()
    for name in ("VT_ISA", "VT_NUM_THREADS", "VT_CUDA_PDL", "VT_CUDA_GRAPHS", "PYVT_CACHE", "PYVT_PULL_SOURCE"):
        assert name in found, name


def test_every_variable_read_is_documented():
    doc = DOC.read_text(encoding="utf-8")
    missing = {n: f for n, f in variables_read().items() if f"`{n}`" not in doc}
    assert not missing, f"read but not in docs/environment.md: {missing}"


def test_the_page_is_linked():
    for page in ("README.md", "docs/cli.md"):
        assert "environment.md" in (ROOT / page).read_text(encoding="utf-8"), page
