#!/usr/bin/env python3
"""Load time and peak memory: a first load (packing, filling the packed-weight cache), a second
load (reading it), and a load without the cache, per model and weight format; beside them
llama-cpp-python loading a GGUF of the same weights (its resident memory is the comparison
issue 18 asks for). GGUF files load in pyvt too (``--gguf-quants``): the first load converts
the file into a fresh cache ($PYVT_CACHE) and packs it, the second reads the packed cache; two
ways, the cache's folder referring to the GGUF's blocks (``load_model(path.gguf)``) and, for
comparison, copying them (``convert_gguf(keep_blocks=True)`` then loading that folder, which is
what ``load_model(path.gguf)`` did before the references); a third load packs again from the
converted folder without the packed-weight cache (``packed_cache=False``). "cache MiB" is what the cache holds
afterwards (converted folder and packed weights). Each load runs in a fresh subprocess; peak RSS
is the process's VmHWM after the load, RSS its VmRSS.

    python bench/load.py                                  # SmolLM2 and the TinyLlama shape, int8 and int4, Q8_0 and Q4_K_M GGUFs
    python bench/load.py --models smollm2-135m --formats int8 --repeat 3 --no-save
    python bench/load.py --models tinyllama-1.1b --formats "" --gguf-quants Q8_0,Q4_0,Q4_K_M

Results: a table on stdout and ``bench/results/load-<host>-<date>.{json,md}`` (machine,
versions, commit, command). Median and range over ``--repeat`` runs per row.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import decode as _decode  # noqa: E402

# Each load script ends with report(seconds, **more): the process's peak and current RSS beside.
_REPORT = """
import json, re
def report(dt, **more):
    st = open("/proc/self/status").read()
    kb = lambda k: int(re.search(k + r":\\s+(\\d+)", st).group(1)) * 1024
    print(json.dumps({"load_s": dt, "peak_rss": kb("VmHWM"), "rss": kb("VmRSS"), **more}))
"""

PYVT_LOAD = _REPORT + """
import sys, time
import pyvt
path, fmt, cache = sys.argv[1], sys.argv[2], sys.argv[3]
t = time.perf_counter()
m = pyvt.load_model(path, weight_format=fmt, threads=2, packed_cache=(False if cache == "-" else cache), progress=False)
report(time.perf_counter() - t, packed=m.info["weight_bytes"], model=m.info["total_bytes"])
"""

PYVT_GGUF_LOAD = _REPORT + """
import importlib, os, sys, time
import pyvt
path, mode, cache = sys.argv[1], sys.argv[2], sys.argv[3]
packed = False if len(sys.argv) > 4 and sys.argv[4] == "nocache" else None
os.environ["PYVT_CACHE"] = cache
t = time.perf_counter()
if mode == "copy":  # what load_model(path.gguf) did before the references: a converted copy
    folder = os.path.join(cache, "copied")
    if not os.path.isdir(folder):
        importlib.import_module("pyvt.convert").convert_gguf(path, folder, keep_blocks=True)
    m = pyvt.load_model(folder, threads=2, progress=False, packed_cache=packed)
else:
    m = pyvt.load_model(path, threads=2, progress=False, packed_cache=packed)
dt = time.perf_counter() - t
disk = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(cache) for f in fs)
report(dt, packed=m.info["weight_bytes"], model=m.info["total_bytes"], cache_bytes=disk)
"""

LLAMA_LOAD = _REPORT + """
import sys, time
from llama_cpp import Llama
t = time.perf_counter()
m = Llama(model_path=sys.argv[1], n_threads=2, n_ctx=2048, verbose=False)
report(time.perf_counter() - t, packed=None)
"""


def run(code: str, *args: str) -> dict[str, Any]:
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def med(rows: list[dict[str, Any]], key: str) -> tuple[float | None, float | None, float | None]:
    vals = [r[key] for r in rows if "error" not in r and r.get(key) is not None]
    if not vals:
        return None, None, None
    return statistics.median(vals), min(vals), max(vals)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="smollm2-135m,tinyllama-1.1b")
    ap.add_argument("--formats", default="int8,int4", help="pyvt weight formats of the folder rows ('' for none)")
    ap.add_argument("--gguf-quants", default="Q8_0,Q4_K_M",
                    help="GGUF files (<model>.<quant>.gguf in ~/.cache/pyvt/bench, as bench/decode.py makes them, or "
                         "tools/gguf_export.py --requantize --type q6_k for Q6_K) that pyvt and llama.cpp load "
                         "('' for none)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    bench = Path.home() / ".cache" / "pyvt" / "bench"
    from pyvt import hub

    folders = {"smollm2-135m": Path(hub.reference(quiet=True)), "tinyllama-1.1b": bench / "tinyllama-1.1b"}
    rows = []
    for model in args.models.split(","):
        folder = folders[model]
        for fmt in [f for f in args.formats.split(",") if f]:
            runs: dict[str, list[dict[str, Any]]] = {"no cache": [], "first (fills cache)": [], "second (cache)": []}
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory() as cache:
                    runs["no cache"].append(run(PYVT_LOAD, str(folder), fmt, "-"))
                    runs["first (fills cache)"].append(run(PYVT_LOAD, str(folder), fmt, cache))
                    runs["second (cache)"].append(run(PYVT_LOAD, str(folder), fmt, cache))
            for kind, rs in runs.items():
                rows.append({"engine": "pyvt", "model": model, "format": fmt, "load": kind, "runs": rs})
        for quant in [q for q in args.gguf_quants.split(",") if q]:
            gguf = bench / f"{model}.{quant}.gguf"
            if not gguf.exists():
                print(f"(no {gguf}: bench/decode.py --llamacpp-quants {quant} makes it, or tools/gguf_export.py "
                      f"--requantize --type {quant.lower()} from the Q8_0)", file=sys.stderr)
                continue
            for mode in ("refs", "copy"):
                runs = {"first (converts)": [], "second (cache)": [], "converted, no packed cache": []}
                for _ in range(args.repeat):
                    with tempfile.TemporaryDirectory() as cache:
                        runs["first (converts)"].append(run(PYVT_GGUF_LOAD, str(gguf), mode, cache))
                        runs["second (cache)"].append(run(PYVT_GGUF_LOAD, str(gguf), mode, cache))
                        runs["converted, no packed cache"].append(run(PYVT_GGUF_LOAD, str(gguf), mode, cache,
                                                                      "nocache"))
                for kind, rs in runs.items():
                    rows.append({"engine": "pyvt", "model": model, "format": f"{quant} GGUF ({mode})", "load": kind,
                                 "runs": rs})
            rs = [run(LLAMA_LOAD, str(gguf)) for _ in range(args.repeat)]
            rows.append({"engine": "llama-cpp-python", "model": model, "format": quant, "load": "mmap", "runs": rs})
    lines = ["| engine | model | format | load | load s (median, range) | peak RSS MiB | RSS after MiB | packed MiB "
             "| model MiB | cache MiB |", "|---|---|---|---|---|---|---|---|---|---|"]
    goals = []
    for r in rows:
        ls, lo, hi = med(r["runs"], "load_s")
        pk, _, _ = med(r["runs"], "peak_rss")
        rss, _, _ = med(r["runs"], "rss")
        pb, _, _ = med(r["runs"], "packed")
        mb, _, _ = med(r["runs"], "model")
        cb, _, _ = med(r["runs"], "cache_bytes")
        errs = [x["error"] for x in r["runs"] if "error" in x]
        fmt_s = "-" if ls is None else f"{ls:.2f} ({lo:.2f}-{hi:.2f})"
        lines.append(f"| {r['engine']} | {r['model']} | {r['format']} | {r['load']} | {fmt_s} | "
                     f"{'-' if pk is None else f'{pk / 2**20:.0f}'} | {'-' if rss is None else f'{rss / 2**20:.0f}'} | "
                     f"{'-' if pb is None else f'{pb / 2**20:.0f}'} | {'-' if mb is None else f'{mb / 2**20:.0f}'} | "
                     f"{'-' if cb is None else f'{cb / 2**20:.0f}'} |"
                     + (f" errors: {errs[:1]}" if errs else ""))
        # Issue 18's goals: peak <= 1.2 x the model's packed size (weights + embedding
        # table: everything it holds) + 200 MB; a second (cached) TinyLlama load <= 1 s.
        if r["engine"] == "pyvt" and pk is not None and mb is not None:
            bound = 1.2 * mb + 200e6
            goals.append(f"{r['model']} {r['format']} {r['load']}: peak RSS {pk / 2**20:.0f} MiB vs 1.2 x "
                         f"{mb / 2**20:.0f} MiB + 200 MB = {bound / 2**20:.0f} MiB: "
                         + ("MET" if pk <= bound else "MISSED"))
        if r["engine"] == "pyvt" and r["load"].startswith("second") and r["model"] == "tinyllama-1.1b" and ls:
            goals.append(f"{r['model']} {r['format']} second load {ls:.2f} s (goal <= 1 s): "
                         + ("MET" if ls <= 1.0 else "MISSED"))
    table = "\n".join(lines) + "\n\n" + "\n".join(f"goal: {g}" for g in goals)
    print(table)
    if not args.no_save:
        env = {"machine": _decode.machine_info("cpu"), "versions": _decode.versions(), "git": _decode.git_info(),
               "loadavg": _decode.loadavg(), "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])}
        stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
        base = HERE / "results" / f"load-{socket.gethostname().split('.')[0]}-{stamp}"
        base.with_suffix(".json").write_text(json.dumps({"env": env, "rows": rows}, indent=2) + "\n")
        base.with_suffix(".md").write_text(f"# Load time and memory {stamp}\n\nCommand: `{env['command']}`\n\n"
                                           f"Machine: {env['machine']}\n\nVersions: {env['versions']}\n\n"
                                           f"Commit: {env['git']}\n\nLoad average: {env['loadavg']}\n\n{table}\n")
        print(f"saved {base}.json / .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
