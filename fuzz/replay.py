"""Replays inputs through a Python fuzz target's check() without atheris:

    python fuzz/replay.py gguf|text [FILES or FOLDERS...]   (default: fuzz/corpus/T, fuzz/crashers/T)

Prints one line per input that raises, then "N passed, M failed"; exit status 1 on any
failure. tools/fuzz.sh runs it under coverage.py for the line-coverage report."""

from __future__ import annotations

import sys
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("gguf", "text"):
        print(__doc__, file=sys.stderr)
        return 2
    target = argv[0]
    mod = __import__(f"fuzz_{target}")
    paths = [Path(a) for a in argv[1:]] or [HERE / "corpus" / target, HERE / "crashers" / target]
    files = []
    for p in paths:
        files += sorted(f for f in p.iterdir() if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
    ok = bad = 0
    warnings.simplefilter("ignore")
    for f in files:
        try:
            mod.check(f.read_bytes())
            ok += 1
        except Exception:  # noqa: BLE001 - each failure is reported
            bad += 1
            print(f"{f}: {traceback.format_exc().splitlines()[-1]}")
    print(f"{ok} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
