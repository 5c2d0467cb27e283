#!/usr/bin/env python3
"""Medians over several ``bench/decode.py`` runs, with their ranges.

One run of ``bench/decode.py`` is one sample: this machine's memory bandwidth drifts from minute
to minute, so a figure worth quoting is the median of runs made at different times, with the
spread. This reads the JSON files those runs saved and prints, per model, the median and
range over the runs of (llama.cpp at its faster flash-attention setting for each measure where
a run ran both):

* pyvt int8's fraction of the bandwidth floor (each run against its own bandwidth reading);
* int8 decode and prefill against llama.cpp Q8_0 in the same run;
* int4 decode against pyvt int8, and int4 decode and prefill against llama.cpp Q4_0, in the
  same run;
* pyvt loading llama.cpp's Q4_K_M file (``gguf-q4_k_m``) against llama.cpp running it, and its
  fraction of the floor; the same for a Q6_K file (``gguf-q6_k``) where a run has one;
* the read bandwidth measured at each run's start.

Only runs of the same workload are pooled: the prompt and generation lengths, thread count,
device and neighbour load (``--contention``) of the first file, or of the options given;
files that differ are named and left out, never mixed in.

    python bench/runs.py bench/results/decode-vm-20261127-*.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def load(path: Path) -> dict[str, Any]:
    """One results file: {"env": ..., "rows": [...]} as bench/decode.py writes it."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable JSON results file ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list) or not isinstance(data.get("env"), dict):
        raise ValueError(f"{path}: not a bench/decode.py results file (no 'env' and 'rows')")
    return data


def workload(data: dict[str, Any]) -> tuple[Any, ...]:
    s = data["env"].get("settings") or {}
    return (s.get("device", "cpu"), s.get("prompt_len"), s.get("gen_len"))


def _row(rows: list[dict[str, Any]], model: str, engine: str, fmt: str, threads: int,
         contention: str) -> dict[str, Any] | None:
    for r in rows:
        if (r.get("model") == model and r.get("engine") == engine and r.get("format") == fmt
                and r.get("threads") == threads and r.get("contention", "none") == contention
                and r.get("status") == "ok"):
            return r
    return None


def _llamacpp(rows: list[dict[str, Any]], model: str, quant: str, threads: int,
              contention: str) -> dict[str, float] | None:
    """llama.cpp's ``quant`` at its faster flash-attention setting for each measure (rows
    "Q8_0 fa=on" and "Q8_0 fa=off" where a run measured both; "Q8_0" where it ran one):
    {"decode_tok_s": best decode, "prefill_tok_s": best prefill}, or None."""
    c = [r for r in rows if r.get("model") == model and r.get("engine") == "llama.cpp"
         and str(r.get("format")).split(" ")[0] == quant and r.get("threads") == threads
         and r.get("contention", "none") == contention and r.get("status") == "ok"]
    if not c:
        return None
    return {k: max(float(r[k]) for r in c) for k in ("decode_tok_s", "prefill_tok_s")}


def samples(runs: list[dict[str, Any]], threads: int, contention: str) -> dict[str, dict[str, list[float]]]:
    """{model: {metric: [one value per run that has it]}}."""
    out: dict[str, dict[str, list[float]]] = {}
    for data in runs:
        rows = data["rows"]
        models = sorted({r.get("model") for r in rows if r.get("engine") == "pyvt"} - {None})
        bw = [b.get("gb_s") for b in data["env"].get("bandwidth") or [] if b.get("threads") == threads]
        for m in models:
            got = out.setdefault(m, {})
            i8 = _row(rows, m, "pyvt", "int8", threads, contention)
            i4 = _row(rows, m, "pyvt", "int4", threads, contention)
            q8 = _llamacpp(rows, m, "Q8_0", threads, contention)
            q4 = _llamacpp(rows, m, "Q4_0", threads, contention)

            def add(metric: str, value: float | None) -> None:
                if value is not None and value > 0:
                    got.setdefault(metric, []).append(float(value))

            if i8:
                add("int8 of floor", i8.get("floor_fraction"))
                if q8:
                    add("int8 decode vs llama.cpp Q8_0", i8["decode_tok_s"] / q8["decode_tok_s"])
                    add("int8 prefill vs llama.cpp Q8_0", i8["prefill_tok_s"] / q8["prefill_tok_s"])
                if i4:
                    add("int4 decode vs pyvt int8", i4["decode_tok_s"] / i8["decode_tok_s"])
            if i4 and q4:
                add("int4 decode vs llama.cpp Q4_0", i4["decode_tok_s"] / q4["decode_tok_s"])
                add("int4 prefill vs llama.cpp Q4_0", i4["prefill_tok_s"] / q4["prefill_tok_s"])
            # pyvt loading llama.cpp's own file against llama.cpp running it
            for quant in ("Q4_K_M", "Q6_K"):
                km = _row(rows, m, "pyvt", "gguf-" + quant.lower(), threads, contention)
                lkm = _llamacpp(rows, m, quant, threads, contention)
                if km and lkm:
                    add(f"{quant} file decode, pyvt vs llama.cpp", km["decode_tok_s"] / lkm["decode_tok_s"])
                    add(f"{quant} file prefill, pyvt vs llama.cpp", km["prefill_tok_s"] / lkm["prefill_tok_s"])
                if km:
                    add(f"{quant} file, pyvt of floor", km.get("floor_fraction"))
            if bw and (i8 or i4):
                add("read GB/s at the start", bw[0])
    return out


METRICS = ("int8 of floor", "int8 decode vs llama.cpp Q8_0", "int8 prefill vs llama.cpp Q8_0",
           "int4 decode vs pyvt int8", "int4 decode vs llama.cpp Q4_0", "int4 prefill vs llama.cpp Q4_0",
           "Q4_K_M file decode, pyvt vs llama.cpp", "Q4_K_M file prefill, pyvt vs llama.cpp",
           "Q4_K_M file, pyvt of floor", "Q6_K file decode, pyvt vs llama.cpp",
           "Q6_K file prefill, pyvt vs llama.cpp", "Q6_K file, pyvt of floor", "read GB/s at the start")


def table(stats: dict[str, dict[str, list[float]]]) -> list[str]:
    lines = ["| model | measure | runs | median | range |", "|---|---|---:|---:|---:|"]
    for model in sorted(stats):
        for metric in METRICS:
            v = stats[model].get(metric)
            if not v:
                continue
            d = 3 if metric.endswith("of floor") else 2  # 0.697 is not 0.70 against a goal of 0.70
            lines.append(f"| {model} | {metric} | {len(v)} | {statistics.median(v):.{d}f} | "
                         f"{min(v):.{d}f}-{max(v):.{d}f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Files of another workload than the first (or than the options) are left "
                                        "out with a line saying why.")
    ap.add_argument("files", nargs="+", type=Path, help="bench/decode.py JSON results files")
    ap.add_argument("--threads", type=int, default=2, help="thread count of the rows pooled (default 2)")
    ap.add_argument("--contention", default="none", help="neighbour load of the rows pooled (default none)")
    ap.add_argument("--prompt-len", type=int, default=None, help="pool only runs of this prompt length "
                                                                  "(default: the first file's)")
    ap.add_argument("--gen-len", type=int, default=None, help="likewise for the generated tokens")
    args = ap.parse_args(argv)

    runs, names, left = [], [], []
    want = None
    for f in args.files:
        try:
            data = load(f)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        w = workload(data)
        if want is None:
            want = (w[0], args.prompt_len if args.prompt_len is not None else w[1],
                    args.gen_len if args.gen_len is not None else w[2])
        if w != want:
            left.append(f"{f.name} (device {w[0]}, prompt {w[1]}, gen {w[2]})")
            continue
        runs.append(data)
        names.append(f.name)
    if not runs:
        print(f"error: no run of device {want[0]}, prompt {want[1]}, gen {want[2]} among the files", file=sys.stderr)
        return 2
    stats = samples(runs, args.threads, args.contention)
    print(f"{len(runs)} run(s), device {want[0]}, prompt {want[1]}, gen {want[2]}, {args.threads} thread(s), "
          f"beside {args.contention}: {', '.join(names)}")
    if left:
        print("left out (another workload): " + "; ".join(left))
    print()
    print("\n".join(table(stats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
