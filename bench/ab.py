#!/usr/bin/env python3
"""A/B of two pyvt builds on this machine, rounds alternating between them.

A kernel change is judged against the build before it on the same machine in the same sitting:
this machine's memory bandwidth and neighbours drift from minute to minute, so the two builds
take turns, round by round (old then new, then new then old, ...), each measure in a fresh
process of that build's Python, and a speed-up is new ÷ old *within a round*, reported as the
median and range over the rounds. The measuring code is this file's (and bench/linear.py's)
for both builds: only the installed pyvt differs.

Measures (any number of each):

* ``--linear FMT[,FMT]``: ``bench/linear.py``'s timings of its shapes (``--linear-model``) in
  that format — the m = 1 GEMV and the m = 512 GEMM, ms per call (ratio: old ms ÷ new ms);
* ``--prefill LABEL=PATH:FORMAT:N``: a model loaded with ``weight_format=FORMAT``, a warm-up
  then ``--calls`` prefills of N tokens, the median tok/s (ratio: new ÷ old);
* ``--decode LABEL=PATH:FORMAT:N``: the same model, N greedy decode steps after an 8-token
  prompt, ``--calls`` times, the median tok/s.

The old build is another Python environment with pyvt installed (for example a git worktree of
the old commit, ``pip install --no-build-isolation -Csetup-args=-Dcuda=disabled /tmp/old`` in a
venv of its own). Results (markdown + JSON: machine, both builds' versions and commits, every
round's values) go under bench/results/ unless --no-save.

    python bench/ab.py --old /tmp/oldvenv/bin/python --linear mxfp4 \\
        --prefill tinyllama=~/.cache/pyvt/bench/tinyllama-1.1b:mxfp4:512 --rounds 3 --tag mxfp4-gemm
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


# ---- the worker: runs in the build's own Python, prints one JSON line ----------------------

def _pyvt_commit(pkg_dir: Path) -> str:
    """The commit of the tree pyvt was imported from, when that is a git checkout (an editable
    install); "unknown" for an installed copy (say which commit it was built from with
    --old-commit / --new-commit)."""
    r = subprocess.run(["git", "-C", str(pkg_dir), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if r.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", str(pkg_dir), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return r.stdout.strip() + ("+dirty" if dirty else "")


def _build_info() -> dict[str, Any]:
    import pyvt
    from pyvt import ops

    pkg = Path(pyvt.__file__).resolve().parent
    return {"pyvt": ops.version(), "path": str(pkg), "commit": _pyvt_commit(pkg), "isa": ops.cpu_isa(),
            "python": sys.executable}


def _model_ids(n: int, vocab: int) -> list[int]:
    import numpy as np

    return [int(t) for t in np.random.default_rng(1).integers(3, max(4, min(vocab, 32000)), n)]


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """One measure in this process (the build under test is this Python's pyvt)."""
    from pyvt import ops

    ops.set_num_threads(task["threads"])
    out: dict[str, Any] = {"build": _build_info()}
    if task["kind"] == "linear":
        import numpy as np

        import linear as LB  # bench/linear.py, beside this file

        reps, rounds = (5, 3) if task.get("quick") else (15, 5)
        rng = np.random.default_rng(0)
        vals = {}
        for name, out_f, in_f in LB.MODEL_SHAPES[task["model"]]:
            _, res = LB.bench_shape(out_f, in_f, [task["format"]], reps, rounds, rng)
            r = res[task["format"]]
            vals[f"{name} {out_f}x{in_f} m=1 ms"] = r["m1_ms"]
            vals[f"{name} {out_f}x{in_f} m=512 ms"] = r["m512_ms"]
        out["values"] = vals
        return out
    from pyvt import GenerateOpts, generate, load_model

    n, calls = task["n"], task["calls"]
    m = load_model(os.path.expanduser(task["path"]), weight_format=task["format"], device="cpu",
                   threads=task["threads"], max_seq_len=n + 16, progress=False)
    try:
        vocab = int(m.info.get("vocab_size") or 32000)
        opts = GenerateOpts(max_new_tokens=1, stop_on_eos=False)
        samples = []
        for c in range(calls + 1):  # the first a warm-up
            if task["kind"] == "prefill":
                r = generate(m, _model_ids(n, vocab), opts)
                rate = n / (r.prefill_ms / 1e3)
            else:
                r = generate(m, _model_ids(8, vocab), opts.replace(max_new_tokens=n + 1))
                rate = 1e3 / r.ms_per_token
            if c:
                samples.append(rate)
    finally:
        m.close()
    out["values"] = {f"{task['label']} {task['kind']} tok/s": statistics.median(samples)}
    out["samples"] = samples
    return out


# ---- the driver ------------------------------------------------------------------------------

def parse_model_spec(spec: str, kind: str) -> dict[str, Any]:
    """LABEL=PATH:FORMAT:N -> a task (PATH may hold colons: the last two fields are split off)."""
    label, sep, rest = spec.partition("=")
    parts = rest.rsplit(":", 2)
    if not sep or not label or len(parts) != 3 or not parts[0] or not parts[1]:
        raise ValueError(f"--{kind} {spec!r}: expected LABEL=PATH:FORMAT:N")
    try:
        n = int(parts[2])
    except ValueError:
        raise ValueError(f"--{kind} {spec!r}: N must be an integer, not {parts[2]!r}") from None
    if n < 1:
        raise ValueError(f"--{kind} {spec!r}: N must be at least 1")
    return {"kind": kind, "label": label, "path": parts[0], "format": parts[1], "n": n}


def higher_is_better(key: str) -> bool:
    return key.endswith("tok/s")


def summarize(rounds: list[dict[str, dict[str, float]]]) -> list[dict[str, Any]]:
    """Per measure: the old and new medians over rounds, and the speed-up of new over old in
    each round (tok/s: new ÷ old; ms: old ÷ new), its median and range."""
    keys: list[str] = []
    for r in rounds:
        for k in list(r.get("old", {})) + list(r.get("new", {})):
            if k not in keys:
                keys.append(k)
    rows = []
    for k in keys:
        pairs = [(r["old"][k], r["new"][k]) for r in rounds if k in r.get("old", {}) and k in r.get("new", {})]
        if not pairs:
            continue
        ups = [(n / o) if higher_is_better(k) else (o / n) for o, n in pairs]
        rows.append({"measure": k, "rounds": len(pairs), "old": statistics.median(o for o, _ in pairs),
                     "new": statistics.median(n for _, n in pairs), "speedup": statistics.median(ups),
                     "speedup_range": [min(ups), max(ups)], "per_round": ups})
    return rows


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| measure | rounds | old (median) | new (median) | speed-up, new over old: median (range) |",
           "|---|---:|---:|---:|---:|"]
    for r in rows:
        lo, hi = r["speedup_range"]
        out.append(f"| {r['measure']} | {r['rounds']} | {r['old']:.4g} | {r['new']:.4g} | "
                   f"**{r['speedup']:.2f}×** ({lo:.2f}-{hi:.2f}) |")
    return out


def run_worker(python: str, task: dict[str, Any], timeout: float) -> dict[str, Any]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # numpy's threads must not spin beside libvt's
    r = subprocess.run([python, str(Path(__file__).resolve()), "--worker", json.dumps(task)], capture_output=True,
                       text=True, timeout=timeout, env=env, cwd=str(HERE))
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output on stderr"])[-1]
        raise RuntimeError(f"{python}: {task['kind']} {task.get('label', task.get('format'))} failed "
                           f"(exit {r.returncode}): {last}")
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{python}: {task['kind']} printed no result")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--old", help="the old build's Python (with its pyvt installed)")
    ap.add_argument("--new", default=sys.executable, help="the new build's Python (default: this one)")
    ap.add_argument("--old-commit", default="", help="the old build's commit, when its pyvt is an installed copy")
    ap.add_argument("--new-commit", default="", help="likewise for the new build")
    ap.add_argument("--linear", default="", help="comma-separated formats for bench/linear.py's shapes")
    ap.add_argument("--linear-model", default="tinyllama-1.1b", help="whose shapes (bench/linear.py --model)")
    ap.add_argument("--prefill", action="append", default=[], metavar="LABEL=PATH:FORMAT:N")
    ap.add_argument("--decode", action="append", default=[], metavar="LABEL=PATH:FORMAT:N")
    ap.add_argument("--calls", type=int, default=3, help="timed calls per model measure (after a warm-up)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions in the linear measures")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per measure")
    ap.add_argument("--tag", default="", help="suffix of the results files")
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args(argv)
    if a.worker:
        sys.path.insert(0, str(HERE))
        print(json.dumps(run_task(json.loads(a.worker))), flush=True)
        return 0
    if not a.old:
        ap.error("--old PYTHON is required (the old build's interpreter)")
    if a.rounds < 1 or a.calls < 1 or a.threads < 1:
        ap.error("--rounds, --calls and --threads must be at least 1")
    tasks = []
    try:
        for fmt in filter(None, a.linear.split(",")):
            tasks.append({"kind": "linear", "format": fmt, "model": a.linear_model, "quick": a.quick})
        tasks += [parse_model_spec(s, "prefill") for s in a.prefill]
        tasks += [parse_model_spec(s, "decode") for s in a.decode]
    except ValueError as e:
        ap.error(str(e))
    if not tasks:
        ap.error("nothing to measure: give --linear, --prefill or --decode")
    for t in tasks:
        t.update(threads=a.threads, calls=a.calls)
        if t["kind"] != "linear" and not Path(os.path.expanduser(t["path"])).exists():
            ap.error(f"--{t['kind']} {t['label']}: no such model path {t['path']}")

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import decode as D  # bench/decode.py: machine and version records

    env = {"machine": D.machine_info("cpu"), "versions": D.versions(), "git": D.git_info(), "loadavg_start": D.loadavg(),
           "date": _dt.datetime.now().isoformat(timespec="seconds"), "argv": sys.argv[1:] if argv is None else argv}
    pythons = {"old": a.old, "new": a.new}
    builds: dict[str, Any] = {}
    rounds: list[dict[str, dict[str, float]]] = []
    log_lines: list[str] = []
    for r in range(a.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        vals: dict[str, dict[str, float]] = {"old": {}, "new": {}}
        for b in order:
            for t in tasks:
                try:
                    res = run_worker(pythons[b], t, a.timeout)
                except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                    print(f"ab.py: round {r}, {b} build: {e}", file=sys.stderr)
                    return 1
                builds.setdefault(b, res["build"])
                vals[b].update(res["values"])
                line = (f"{time.strftime('%H:%M:%S')} round {r} {b} " +
                        "; ".join(f"{k} {v:.4g}" for k, v in res["values"].items()) +
                        (" (calls: " + " ".join(f"{v:.1f}" for v in res["samples"]) + ")" if "samples" in res else ""))
                print(line, flush=True)
                log_lines.append(line)
        rounds.append(vals)
    for b, c in (("old", a.old_commit), ("new", a.new_commit)):
        if c:
            builds[b]["commit"] = c
    rows = summarize(rounds)
    print("\n".join(table(rows)))
    if a.no_save:
        return 0
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    host = re.sub(r"[^A-Za-z0-9_.-]+", "-", env["machine"]["host"])[:40]
    stem = f"ab-{host}-{_dt.datetime.now():%Y%m%d-%H%M}"
    stem += f"-{a.tag}" if a.tag else ""
    data = {"env": env, "builds": builds, "tasks": tasks, "rounds": rounds, "summary": rows, "log": log_lines}
    (out_dir / f"{stem}.json").write_text(json.dumps(data, indent=1))
    m = env["machine"]
    md = [f"# A/B of two pyvt builds, {env['date']}", "",
          f"* Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores; {a.threads} libvt threads; "
          f"load average at the start {env['loadavg_start']}; the rest in the JSON.",
          f"* Old: pyvt {builds['old']['pyvt']} at {builds['old']['commit']} ({builds['old']['path']}); "
          f"new: pyvt {builds['new']['pyvt']} at {builds['new']['commit']} ({builds['new']['path']}); "
          f"ISA {builds['new']['isa']}.",
          f"* Command: `python bench/ab.py {' '.join(shlex.quote(x) for x in env['argv'])}`",
          f"* {a.rounds} rounds, builds alternating (old first in even rounds), each measure in its own "
          "process; speed-up = new ÷ old within a round (ms: old ÷ new), median (range) over the rounds. "
          "The rounds ran one after another in one sitting.", "", "```", *log_lines, "```", "", *table(rows), ""]
    (out_dir / f"{stem}.md").write_text("\n".join(md))
    print(f"wrote {out_dir / stem}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
