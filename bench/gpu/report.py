"""The GPU runner's summary: parsers of the logs it collects and the summary.json / summary.md
writer (standard library only: it runs on the bare GPU machine before anything is built).

Parsers (each takes a log's text, never raises on odd input):

* :func:`parse_vt_cuda_test` -- ``vt_cuda_test``'s lines ``ok   <what> (<error>)`` /
  ``FAIL <what> (<error>)``, ``N passed, M failed``, ``skipped: <why>``; per kernel (the check's
  name without shapes, sizes and ``key=value`` parameters) the number of checks, failures and
  the largest measured error.
* :func:`parse_pytest` -- the counts of pytest's last summary line and its FAILED / ERROR lines.
* :func:`parse_meson_test` -- ``meson test``'s summary (the C test programs).
* :func:`parse_sanitizer` -- compute-sanitizer's ``ERROR SUMMARY``.
* :func:`parse_generate` -- ``vt_generate``'s timing line (the C decode benchmark).
* :func:`decode_rows` / :func:`gemm_rows` -- the rows of bench/decode.py's / bench/gemm.py's
  JSON results.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import statistics
from pathlib import Path
from typing import Any

SCHEMA = 1

# --------------------------------------------------------------------------------------------
# vt_cuda_test
# --------------------------------------------------------------------------------------------

_VT_LINE = re.compile(r"^(ok  |FAIL) (.*?)\s*$")
_VT_MEASURED = re.compile(r"^(.*) \(([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|inf|nan))\)$")
_C_SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed\s*$")


def kernel_key(what: str) -> str:
    """The kernel a check belongs to: its name without shapes (``[300 x 576]``), ``key=value``
    parameters, block sizes (``int8/32``), position ranges and model folders' parents.

    >>> kernel_key("gemv int8/32 [130 x 1024] m=1 store+bias+gelu vs CPU")
    'gemv int8 store+bias+gelu vs CPU'
    >>> kernel_key("/tmp/vt-gpu/tiny/gqa-hd64 bf16: prefill logits CPU vs CUDA, n=5")
    'gqa-hd64 bf16: prefill logits CPU vs CUDA'
    """
    t = re.sub(r"\[[^\]]*\]", " ", what)
    t = re.sub(r"\S+=\S+", " ", t)
    t = re.sub(r"\b\d+\.\.\d+\b", " ", t)
    words = []
    for w in t.split():
        if "/" in w and (w.startswith("/") or w.startswith(".")):
            w = w.rstrip("/").rsplit("/", 1)[-1]
        else:
            w = re.sub(r"(?<=[A-Za-z0-9])/\d+$", "", w)
        words.append(w)
    return re.sub(r"[\s,;]+$", "", " ".join(words)) or what.strip()


def parse_vt_cuda_test(text: str) -> dict[str, Any]:
    res: dict[str, Any] = {"passed": 0, "failed": 0, "skipped": None, "complete": False,
                           "backend": [], "kernels": {}, "failures": []}
    counted = [0, 0]
    for line in text.splitlines():
        if line.startswith(("cuda:", "cutlass:")):
            res["backend"].append(line.strip())
            continue
        if line.startswith("skipped: "):
            res["skipped"] = line[len("skipped: "):].strip()
            continue
        m = _C_SUMMARY.match(line)
        if m:
            res["passed"], res["failed"] = int(m.group(1)), int(m.group(2))
            res["complete"] = True
            continue
        m = _VT_LINE.match(line)
        if not m:
            continue
        ok = m.group(1) == "ok  "
        what, err = m.group(2), None
        mm = _VT_MEASURED.match(what)
        if mm:
            what, err = mm.group(1), float(mm.group(2))
        counted[0 if ok else 1] += 1
        if not ok and len(res["failures"]) < 40:
            res["failures"].append(line.strip())
        k = res["kernels"].setdefault(kernel_key(what), {"checks": 0, "failed": 0, "max_err": None, "worst": None})
        k["checks"] += 1
        k["failed"] += 0 if ok else 1
        if err is not None and (k["max_err"] is None or not err <= k["max_err"]):
            k["max_err"] = err
            k["worst"] = what
    if not res["complete"]:  # killed or crashed before its summary: count what it printed
        res["passed"], res["failed"] = counted
    return res


# --------------------------------------------------------------------------------------------
# pytest, compute-sanitizer, vt_generate
# --------------------------------------------------------------------------------------------

_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed|warnings?)\b")


def parse_pytest(text: str) -> dict[str, Any]:
    res: dict[str, Any] = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0, "deselected": 0,
                           "complete": False, "failures": []}
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("FAILED ", "ERROR ")) and len(res["failures"]) < 40:
            res["failures"].append(s[:300])
        if re.search(r"\bin [0-9.]+s\b", s) and _PYTEST_COUNT.search(s):
            res.update(passed=0, failed=0, skipped=0, errors=0, deselected=0, complete=True)
            for n, what in _PYTEST_COUNT.findall(s):
                key = {"error": "errors", "warning": "warnings"}.get(what, what)
                res[key] = int(n)
        elif re.search(r"\bno tests ran\b", s):
            res["complete"] = True
    return res


def parse_meson_test(text: str) -> dict[str, Any]:
    """meson test's summary block (Ok / Expected Fail / Fail / Unexpected Pass / Skipped /
    Timeout) and its failing tests' lines."""
    res: dict[str, Any] = {"passed": 0, "failed": 0, "skipped": 0, "complete": False, "failures": []}
    for line in text.splitlines():
        m = re.match(r"^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):\s+(\d+)\s*$", line.strip())
        if m:
            key = {"Ok": "passed", "Expected Fail": "passed", "Skipped": "skipped"}.get(m.group(1), "failed")
            if m.group(1) == "Ok":
                res.update(passed=0, failed=0, skipped=0)
            res[key] += int(m.group(2))
            res["complete"] = True
        elif re.search(r"\s(FAIL|TIMEOUT|ERROR)\s", line) and re.match(r"^\s*\d+/\d+ ", line) \
                and len(res["failures"]) < 40:
            res["failures"].append(line.strip())
    return res


def parse_sanitizer(text: str) -> dict[str, Any]:
    m = re.findall(r"ERROR SUMMARY: (\d+) errors?", text)
    leaks = re.findall(r"LEAK SUMMARY: (\d+) bytes leaked in (\d+) allocations?", text)
    return {"errors": int(m[-1]) if m else None,
            "leaked_bytes": int(leaks[-1][0]) if leaks else None,
            "complete": bool(m)}


def parse_generate(text: str) -> dict[str, Any]:
    m = re.findall(r"(\d+) prompt tokens, (\d+) generated \(([^)]*)\); prefill ([0-9.]+) ms, "
                   r"decode ([0-9.]+) ms/token", text)
    if not m:
        return {}
    p, g, why, pre, dec = m[-1]
    return {"prompt_tokens": int(p), "generated": int(g), "finish": why,
            "prefill_ms": float(pre), "decode_ms_per_token": float(dec)}


def parse_ab_env(text: str) -> dict[str, Any]:
    """bench/gpu/ab_env.sh's output: each run's line and the two medians (ms per token)."""
    med = re.findall(r"^(\w+)=(\S+) median ([0-9.]+) ms/token over (\d+) runs", text, re.M)
    runs = re.findall(r"^run (\d+) (\w+)=(\S+) decode ([0-9.]+) ms/token", text, re.M)
    if not med:
        return {"runs": len(runs)} if runs else {}
    medians = {v: float(ms) for _, v, ms, _ in med}
    out: dict[str, Any] = {"variable": med[0][0], "medians": medians, "pairs": int(med[0][3]),
                           "runs": {v: [float(ms) for _, _, vv, ms in runs if vv == v] for v in medians}}
    if medians.get("0") and "1" in medians:
        out["ratio"] = round(medians["1"] / medians["0"], 3)
    return out


def parse_engine_steps(text: str) -> dict[str, Any]:
    """bench/serve.py --step-only's lines: each row count's step time and tokens/s (the last
    run's, should the log hold more than one)."""
    rows = {int(n): {"rows": int(n), "step_ms": float(ms), "tok_per_s": float(tps)}
            for n, ms, tps in re.findall(r"engine step: (\d+) rows ([0-9.]+) ms -> ([0-9.]+) tok/s", text)}
    return {"rows": [rows[n] for n in sorted(rows)]} if rows else {}


# --------------------------------------------------------------------------------------------
# Benchmark results
# --------------------------------------------------------------------------------------------


def _round(v: Any, nd: int = 4) -> Any:
    return round(v, nd) if isinstance(v, float) and math.isfinite(v) else v


def decode_rows(path: Path) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text())
    keep = ("model", "engine", "format", "status", "ms_per_token", "decode_tok_s", "prefill_tok_s",
            "floor_ms", "floor_fraction", "weight_bytes", "load_s")
    return [{k: _round(r.get(k)) for k in keep if k in r} for r in data.get("rows", [])]


def gemm_rows(path: Path) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text())
    keep = ("shape", "M", "N", "K", "format", "status", "kernel_us", "host_us", "tflops", "nerr")
    return [{k: _round(r.get(k), 6) for k in keep if k in r} for r in data.get("rows", [])]


def _short_kernel(name: str) -> str:
    """`void vt::cudak::(anonymous namespace)::gemv_kernel<64, 1>(vt::cudak::GemvArgs)` ->
    `gemv_kernel<64, 1>`: the function and its template arguments, no namespaces or parameters."""
    n = name.strip()
    if n.startswith("void "):
        n = n[5:]
    n = re.sub(r"<?unnamed>::", "", n)  # ncu 2025's anonymous namespace (its CSV drops the '<')
    depth, cut = 0, len(n)
    for i, c in enumerate(n):  # the parameter list: the first '(' outside template brackets
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and not n.startswith("(anonymous", i):
            cut = i
            break
    n = n[:cut]
    n = re.sub(r"(\(anonymous namespace\)|[A-Za-z_][A-Za-z0-9_]*)::", "", n)
    return n or name


def _decode_period(names: list[str], steps: int, max_trail: int = 64) -> tuple[int, int, int]:
    """(K, d, j): the launch sequence ends, but for its last j launches (a trailing partial
    step, j < K and j <= max_trail), in d >= 2 repeats of the same K kernels (the decode step);
    d as large as possible up to steps, then K the longest such period (a step is made of
    layers that repeat too: the shortest period would be a layer's), then j the smallest;
    (0, 0, 0) if none."""
    n = len(names)
    for d in range(steps, 1, -1):
        best = (0, 0, 0)
        for j in range(0, min(max_trail, n) + 1):
            end = n - j
            for k in range(end // d, max(j, best[0]), -1):
                if names[end - k * d:end - k] == names[end - k * (d - 1):end]:
                    best = (k, d, j)
                    break
        if best[0]:
            return best
    return 0, 0, 0


def _layer_period(names: list[str]) -> tuple[int, int, int]:
    """(p, start, layers): the step's kernels hold `layers` >= 3 repeats of p kernels (a
    layer) from index start; the smallest such p whose repeats cover the most kernels; (0, 0, 0)
    if none."""
    best = (0, 0, 0)
    for p in range(1, len(names) // 3 + 1):
        i = 0
        while i + p < len(names):
            if names[i] != names[i + p]:
                i += 1
                continue
            j = i
            while j + p < len(names) and names[j] == names[j + p]:
                j += 1
            layers = (j - i) // p + 1  # names[i : j + p] repeats with period p
            if layers >= 3 and layers * p > best[0] * best[2]:
                best = (p, i, layers)
            i = j + 1
    return best


def step_slots(steps: list[list[tuple[str, float, float, float]]]) -> list[dict[str, Any]]:
    """One row per kernel slot of the decode step: the kernels before the layers ("pre i"),
    each slot of a layer ("layer slot j", medians over the layers and the steps), the kernels
    after them ("post i"); median µs, MB read, GB/s (read + written over the time)."""
    if not steps or not steps[0]:
        return []
    names = [x[0] for x in steps[0]]
    p, start, layers = _layer_period(names)
    groups: list[tuple[str, list[int]]] = []
    if p:
        groups += [(f"pre {i}", [i]) for i in range(start)]
        groups += [(f"layer slot {j} (x{layers})", [start + j + p * l for l in range(layers)]) for j in range(p)]
        groups += [(f"post {i}", [i]) for i in range(start + p * layers, len(names))]
    else:
        groups = [(f"kernel {i}", [i]) for i in range(len(names))]
    rows = []
    for label, idx in groups:
        ns = [s[i][1] for s in steps for i in idx]
        rd = [s[i][2] for s in steps for i in idx]
        wr = [s[i][3] for s in steps for i in idx]
        t, r, w = statistics.median(ns), statistics.median(rd), statistics.median(wr)
        rows.append({"slot": label, "kernel": names[idx[0]], "median_us": _round(t / 1e3, 2),
                     "read_MB": _round(r / 1e6, 3), "GB_s": _round((r + w) / t, 1) if t else None})
    return rows


def ncu_rows(text: str, decode_steps: int) -> dict[str, Any]:
    """ncu's `--csv --page raw --print-units base` output (metrics gpu__time_duration.sum and
    dram__bytes_read.sum / _write.sum) -> one row per kernel (launches, time, share, bytes,
    bandwidth), the biggest first; and the decode step: the launch sequence ends in
    decode_steps repeats of one step's kernels, whose summed time per step is held against the
    measured ms per token (what is left is launch gaps and host time)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return {"parse_error": "no CSV header (\"ID\", ...) in ncu's output"}
    table = list(csv.reader(lines[start:]))
    head = table[0]
    col = {h: i for i, h in enumerate(head)}
    need = ("ID", "Kernel Name", "gpu__time_duration.sum")
    if any(n not in col for n in need):
        return {"parse_error": f"ncu's CSV lacks {[n for n in need if n not in col]}"}

    def num(row: list[str], key: str) -> float:
        if key not in col:
            return 0.0
        try:
            return float(row[col[key]].replace(",", ""))
        except ValueError:
            return 0.0

    launches = []  # (kernel, ns, bytes read, bytes written) in launch order
    for row in table[1:]:
        if len(row) < len(head) or not row[col["ID"]].strip().isdigit():  # the units row, blanks
            continue
        launches.append((_short_kernel(row[col["Kernel Name"]]), num(row, "gpu__time_duration.sum"),
                         num(row, "dram__bytes_read.sum"), num(row, "dram__bytes_write.sum")))
    if not launches:
        return {"parse_error": "ncu's CSV holds no kernel"}
    k, d, j = _decode_period([x[0] for x in launches], decode_steps)
    last = len(launches) - j
    tail = launches[last - k * d:last] if k else []
    agg: dict[str, dict[str, Any]] = {}
    for i, (name, ns, rd, wr) in enumerate(launches):
        a = agg.setdefault(name, {"n": 0, "ns": [], "rd": 0.0, "wr": 0.0, "step_ns": 0.0, "step_n": 0})
        a["n"] += 1
        a["ns"].append(ns)
        a["rd"] += rd
        a["wr"] += wr
        if k and last - k * d <= i < last:
            a["step_ns"] += ns / d
            a["step_n"] += 1
    step_ns = sum(x[1] for x in tail) / d if k else 0.0
    rows = []
    # the decode step's biggest kernels first, then the rest (prefill's) by total time
    for name, a in sorted(agg.items(), key=lambda kv: (-kv[1]["step_ns"], -sum(kv[1]["ns"]))):
        t = sum(a["ns"])
        rows.append({"kernel": name, "launches": a["n"], "per_step": a["step_n"] // d if k else 0,
                     "step_us": _round(a["step_ns"] / 1e3, 2),
                     "step_share": _round(a["step_ns"] / step_ns, 3) if step_ns else None,
                     "median_us": _round(sorted(a["ns"])[len(a["ns"]) // 2] / 1e3, 2),
                     "read_MB_each": _round(a["rd"] / a["n"] / 1e6, 3),
                     "GB_s": _round((a["rd"] + a["wr"]) / t, 1) if t else None})
    steps = [launches[last - k * (i + 1):last - k * i] for i in range(d)] if k else []
    return {"rows": rows, "slots": step_slots(steps), "kernels_profiled": len(launches),
            "decode_steps_found": d, "kernels_per_decode_step": k, "trailing_kernels": j,
            "kernel_us_per_decode_step": _round(step_ns / 1e3, 1) if k else None}


# --------------------------------------------------------------------------------------------
# The summary files
# --------------------------------------------------------------------------------------------


def verdict(summary: dict[str, Any]) -> str:
    """pass: every step passed or was skipped for a stated reason; fail: one failed or timed out;
    incomplete: the run is in progress or was killed (a step is still 'running')."""
    st = [s.get("status") for s in summary.get("steps", [])]
    if any(x in ("fail", "timeout", "killed") for x in st):
        return "fail"
    if any(x in ("running", "pending") for x in st) or not summary.get("finished"):
        return "incomplete"
    return "pass"


def counts(summary: dict[str, Any]) -> dict[str, int]:
    c = {"steps_pass": 0, "steps_fail": 0, "steps_skip": 0, "steps_other": 0, "tests_passed": 0,
         "tests_failed": 0}
    for s in summary.get("steps", []):
        key = {"pass": "steps_pass", "fail": "steps_fail", "timeout": "steps_fail", "killed": "steps_fail",
               "skip": "steps_skip"}.get(s.get("status"), "steps_other")
        c[key] += 1
        r = s.get("results") or {}
        if "passed" in r:
            c["tests_passed"] += int(r.get("passed") or 0)
            c["tests_failed"] += int(r.get("failed") or 0) + int(r.get("errors") or 0)
    return c


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """summary.json and summary.md in ``out``, each replaced atomically (a run killed at any
    moment leaves the last complete pair)."""
    summary = dict(summary)
    summary["schema"] = SCHEMA
    summary["status"] = verdict(summary)
    summary["counts"] = counts(summary)
    out = Path(out)
    for name, text in (("summary.json", json.dumps(summary, indent=1, default=str) + "\n"),
                       ("summary.md", render_md(summary))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, out / name)


def _one_line(v: Any) -> str:
    return " ".join(str(v).split())


def _fmt_err(v: Any) -> str:
    return "-" if v is None else f"{v:.3g}"


def render_md(s: dict[str, Any]) -> str:
    c = s.get("counts") or counts(s)
    commit = s.get("commit") or {}
    lines = [f"# GPU check, phase `{s.get('phase')}`{' ' + ' '.join(s.get('args', [])) if s.get('args') else ''}: "
             f"**{s.get('status', verdict(s)).upper()}**", ""]
    lines.append(f"* started {s.get('started')}, {s.get('elapsed_s', '?')} s of a {s.get('budget_s')} s budget"
                 + ("" if s.get("finished") else " (not finished: killed or still running)"))
    lines.append(f"* commit {commit.get('commit') or '?'} ({commit.get('source', '?')})"
                 + (f", {commit['uncommitted']} uncommitted change(s)" if commit.get("uncommitted") else "")
                 + (f"; the carried wheels' stamp (tools/gpu_wheels.sh, {commit['stamp'].get('date')}) names "
                    f"{commit['stamp'].get('commit')} with {commit['stamp'].get('uncommitted')} uncommitted change(s): "
                    "the tree's commit when .git is older than the tree" if commit.get("stamp") else ""))
    mach = s.get("machine") or {}
    if mach:
        lines.append("* machine: " + "; ".join(f"{k} {_one_line(v)}" for k, v in mach.items() if v not in (None, "")))
    vers = s.get("versions") or {}
    if vers:
        lines.append("* versions: " + ", ".join(f"{k} {_one_line(v)}" for k, v in vers.items()))
    b = s.get("build") or {}
    if b:
        lines.append("* build: " + "; ".join(f"{k} {_one_line(v)}" for k, v in b.items() if v not in (None, "", [])))
    lines.append(f"* steps: {c['steps_pass']} passed, {c['steps_fail']} failed, {c['steps_skip']} skipped; "
                 f"tests: {c['tests_passed']} passed, {c['tests_failed']} failed")
    lines += ["", "| step | status | seconds | budget | detail |", "|---|---|---:|---:|---|"]
    for st in s.get("steps", []):
        detail = _one_line(st.get("detail") or "").replace("|", "\\|")
        lines.append(f"| {st.get('id')} | {st.get('status')} | {st.get('seconds', '')} | {st.get('timeout_s')} "
                     f"| {detail[:200]}{' (' + st['log'] + ')' if st.get('log') else ''} |")
    for st in s.get("steps", []):
        r = st.get("results") or {}
        if r.get("kernels"):
            lines += ["", f"## `{st['id']}`: largest error per kernel", "",
                      "| kernel | checks | failed | max error | worst case |", "|---|---:|---:|---:|---|"]
            for k, v in sorted(r["kernels"].items()):
                lines.append(f"| {k} | {v['checks']} | {v['failed']} | {_fmt_err(v['max_err'])} | {v['worst'] or ''} |")
        if r.get("failures"):
            lines += ["", f"## `{st['id']}`: failures (first {len(r['failures'])})", "", "```"]
            lines += r["failures"]
            lines.append("```")
        if r.get("slots"):
            lines += ["", f"## `{st['id']}`: one decode step, kernel by kernel (medians over its steps and layers)", "",
                      "| slot | kernel | median µs | read MB | GB/s |", "|---|---|---:|---:|---:|"]
            for row in r["slots"]:
                lines.append(f"| {row['slot']} | {row['kernel']} | {row['median_us']} | {row['read_MB']} | {row['GB_s']} |")
        if r.get("rows"):
            lines += ["", f"## `{st['id']}`: results", ""]
            keys = list(dict.fromkeys(k for row in r["rows"] for k in row))
            lines.append("| " + " | ".join(keys) + " |")
            lines.append("|" + "---|" * len(keys))
            for row in r["rows"]:
                lines.append("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")
    notes = s.get("notes") or []
    if notes:
        lines += ["", "## Notes", ""] + [f"* {n}" for n in notes]
    return "\n".join(lines) + "\n"
