#!/usr/bin/env python3
"""Prefill and decode speed of pyvt against the context length: where attention's share of a
step shows. Greedy, 64 new tokens after prompts of 16, 128, 512 and 1024 tokens, each timed
on a second run (the first warms up).

    python bench/context.py [MODEL] [--weight-format int8] [--threads 2]

MODEL defaults to the default model's BF16 copy (pyvt.hub.reference()). Prints one line per
prompt length and, with --save, writes them with machine, versions and commit to
bench/results/context-<host>-<time>.txt.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import socket
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import decode as _decode  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=None)
    ap.add_argument("--weight-format", default="int8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save", action="store_true")
    a = ap.parse_args(argv)
    import pyvt
    from pyvt import GenerateOpts, generate, hub

    path = a.model or hub.reference(quiet=True)
    lines = []
    with pyvt.load_model(path, weight_format=a.weight_format, threads=a.threads, progress=False) as m:
        for n in (16, 128, 512, 1024):
            ids = [1000 + (i * 7) % 20000 for i in range(n)]
            for _ in range(2):
                r = generate(m, ids, GenerateOpts(max_new_tokens=65, stop_on_eos=False))
            lines.append(f"prompt {n}: prefill {r.prefill_ms:.1f} ms ({n / r.prefill_ms * 1e3:.0f} tok/s), "
                         f"decode {r.ms_per_token:.2f} ms/token")
            print(lines[-1], flush=True)
    if a.save:
        head = [f"bench/context.py {' '.join(argv or sys.argv[1:])}", f"model: {path} ({a.weight_format}, "
                f"{a.threads} threads)", f"machine: {_decode.machine_info('cpu')}", f"versions: {_decode.versions()}",
                f"commit: {_decode.git_info()}", f"load average: {_decode.loadavg()}", ""]
        stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
        out = HERE / "results" / f"context-{socket.gethostname().split('.')[0]}-{stamp}.txt"
        out.write_text("\n".join(head + lines) + "\n")
        print(f"saved {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
