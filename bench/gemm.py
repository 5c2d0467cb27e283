"""GEMM throughput on the GPU: pyvt's CUTLASS formats against PyTorch, in the same run.

Shapes: M = N = K = 4096, and M in {1, 16, 128, 512, 2048} rows against the projection
shapes [N = out, K = in] of TinyLlama-1.1B and Llama-2-7B; inputs and outputs already in device
memory, weights packed once per shape. Per shape and format, from the same calls:

* kernel time (``kernel_us``, and TFLOPS / TOPS = 2·M·N·K / kernel time; dense-equivalent: a
  2:4 sparse GEMM is credited the dense work, as the vendors' sparse figures are): CUDA events
  around a batch of back-to-back calls enqueued behind a spin kernel (``torch.cuda._sleep``)
  long enough that the host has enqueued the whole batch before the GPU reaches it, so the GPU
  never waits for the host and the events time the GPU work alone. At M = 1 a call's host work
  (argument and pointer checks, a stream or workspace lookup) is larger than its kernel; timing
  calls one after another would time that instead.
* host time (``host_us``): wall-clock per call of enqueuing that batch (the GPU busy meanwhile):
  what one call costs the CPU.
* call time (``call_us``): events around back-to-back calls without the spin (what a loop of
  calls sees: about the larger of the two).

The same timing applies to pyvt and the PyTorch baselines. A call that synchronizes (or a host
slower than the spin) cannot be queued ahead: then ``kernel_us`` is null and the row says why.

pyvt (weights prepacked with device="cuda"; x a float32 CUDA tensor):
  fp8-w8a8      prepack_fp8 + linear_fp8        x quantized per row on the GPU, CUTLASS E4M3 GEMM
                (on sm_90 with M >= 16: the CUTLASS 3.x wgmma kernel, epilogue fused)
  fp8-w8a8-sm89 the same, uploaded with VT_CUDA_FP8_GEMM=sm89: the CUTLASS 2.x kernel (mma.sync)
  int8-2:4      prepack_int8_sparse24 + linear_int8_sparse   CUTLASS SparseGemm (mma.sp INT8)
  int4-2:4      prepack_int4_sparse24 + linear_int4_sparse   the same INT8 kernel (docs/cuda.md)
  fp8-w8a16     prepack_fp8 + linear_fp8_w8a16  the hand-written W8A16 GEMV / BF16-split GEMM
  int8-w8a16    prepack_int8_blocked + linear_int8_w8a16     (reference: the LLM default)
PyTorch (same shapes, same run):
  torch-bf16    x_bf16 @ w_bf16ᵀ (cuBLAS)
  torch-fp8     torch._scaled_mm (cuBLASLt FP8, per-tensor scales, bf16 out)
  torch-fp8-rowwise  torch._scaled_mm with per-row x and per-column w scales (pyvt's scaling), bf16 out
  torch-bf16-2:4  to_sparse_semi_structured (cuSPARSELt / CUTLASS) bf16, where the device has it
  torch-int8-2:4  to_sparse_semi_structured int8 + torch.mm, where available
A cell a backend cannot run (shape limits, missing kernels) is recorded with its error.

Needs a CUDA GPU, torch with CUDA, and a pyvt built with CUDA and the device API
(prepack_*(device="cuda")). Without them it says which is missing and exits 77 (skipped).

    python bench/gemm.py [--quick] [--formats fp8-w8a8,int8-2:4,...] [--results-dir DIR]

Prints a table and writes gemm-<time>.json + gemm-<time>.md (machine, versions, commit).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import math
import os
import platform
import shlex
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
SKIP = 77

MODELS = {  # name -> [(projection, N = out_features, K = in_features)]
    "tinyllama-1.1b": [("q/o", 2048, 2048), ("k/v", 256, 2048), ("gate/up", 5632, 2048), ("down", 2048, 5632)],
    "llama-2-7b": [("q/k/v/o", 4096, 4096), ("gate/up", 11008, 4096), ("down", 4096, 11008)],
}
MS = [1, 16, 128, 512, 2048]
PYVT_FORMATS = ["fp8-w8a8", "fp8-w8a8-sm89", "int8-2:4", "int4-2:4", "fp8-w8a16", "int8-w8a16"]
TORCH_FORMATS = ["torch-bf16", "torch-fp8", "torch-fp8-rowwise", "torch-bf16-2:4", "torch-int8-2:4"]
# The original's claims (RTX 4090), printed beside ours.
CLAIMS = {"fp8-w8a8": 588.0, "int8-2:4": 1320.0, "int4-2:4": 1854.0}


def log(msg: str) -> None:
    print(msg, flush=True)


def skip(why: str) -> int:
    log(f"bench/gemm.py: skipped: {why}")
    return SKIP


def git_info() -> dict[str, Any]:
    def git(*a: str) -> str:
        r = subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True, timeout=30)
        return r.stdout.strip()

    try:
        if not git("rev-parse", "HEAD") and os.environ.get("VT_GPU_COMMIT"):  # a tree copied without .git
            return {"commit": os.environ["VT_GPU_COMMIT"], "dirty": None, "source": "VT_GPU_COMMIT"}
        return {"commit": git("rev-parse", "HEAD") or None,
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
                "branch": git("rev-parse", "--abbrev-ref", "HEAD") or None}
    except Exception as e:  # noqa: BLE001
        return {"commit": None, "error": str(e)}


_SPIN_CYCLES_PER_S: list[float] = []


def _spin_rate(torch) -> float:
    """Clock cycles per second of torch.cuda._sleep (measured once)."""
    if not _SPIN_CYCLES_PER_S:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)
        a.record()
        torch.cuda._sleep(20_000_000)
        b.record()
        b.synchronize()
        _SPIN_CYCLES_PER_S.append(20_000_000 / max(a.elapsed_time(b) / 1e3, 1e-6))
    return _SPIN_CYCLES_PER_S[0]


def time_call(torch, fn: Callable[[], Any], min_s: float = 0.05, max_iters: int = 100,
              samples: int = 5) -> dict[str, Any]:
    """Kernel, host and call time per call of fn (enqueued on torch's current stream), medians
    of `samples` batches; see the module docstring. Batches stay under ~100 calls: the launch
    queue (about a thousand launches) must never fill, or the host would wait for the GPU."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    host_est = (time.perf_counter() - t0) / 3
    torch.cuda.synchronize()
    start.record()
    fn()
    end.record()
    end.synchronize()
    est = max(start.elapsed_time(end) / 1e3, 1e-6)
    iters = max(5, min(max_iters, int(math.ceil(min_s / est))))

    call = []
    for _ in range(samples):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        call.append(start.elapsed_time(end) / 1e3 / iters)
    res: dict[str, Any] = {"iters": iters, "call_s": statistics.median(call), "kernel_s": None, "host_s": None}
    if not hasattr(torch.cuda, "_sleep"):
        res["timing_note"] = "torch.cuda._sleep missing: no queued timing (kernel_us unknown)"
        return res
    rate = _spin_rate(torch)
    kern, host, starved, blocked = [], [], 0, False
    while len(kern) < samples and starved < 3:
        spin_s = min(1.0, 2e-3 + 1.5 * iters * max(host_est, 1e-6))
        torch.cuda._sleep(int(spin_s * rate))
        start.record()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        t1 = time.perf_counter()
        ahead = not start.query()  # the spin still running: the GPU reached no call before the host was done
        end.record()
        end.synchronize()
        if not ahead:
            starved += 1
            if t1 - t0 >= 0.9 * spin_s:  # the host waited out the spin: the call synchronizes
                blocked = True
                break
            host_est = 2 * max(host_est, (t1 - t0) / iters)
            continue
        kern.append(start.elapsed_time(end) / 1e3 / iters)
        host.append((t1 - t0) / iters)
    if kern:
        res["kernel_s"], res["host_s"] = statistics.median(kern), statistics.median(host)
    else:
        res["timing_note"] = ("the call synchronizes with the GPU: it cannot be queued ahead, kernel_us unknown "
                              "(see call_us)" if blocked else "the host could not enqueue ahead of the GPU in 3 tries "
                              "(spin too short): kernel_us unknown (see call_us)")
    return res


def _us(t: float | None) -> float | None:
    return None if t is None else round(t * 1e6, 2)


def _fmt_us(v: float | None) -> str:
    return f"{v:>9.1f}" if v is not None else "      n/a"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", default=",".join(PYVT_FORMATS + TORCH_FORMATS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--m", default=",".join(map(str, MS)))
    ap.add_argument("--no-square", action="store_true", help="skip M = N = K = 4096")
    ap.add_argument("--quick", action="store_true", help="M in {1, 512}, TinyLlama only, short timings")
    ap.add_argument("--results-dir", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds: start no new cell after this, record the rest as not run and write the results")
    a = ap.parse_args(argv)
    a.formats = [f for f in a.formats.split(",") if f]
    a.models = [m for m in a.models.split(",") if m]
    a.m = [int(v) for v in a.m.split(",") if v]
    if a.quick:
        a.m, a.models = [1, 512], ["tinyllama-1.1b"]
    bad = [f for f in a.formats if f not in PYVT_FORMATS + TORCH_FORMATS] + [m for m in a.models if m not in MODELS]
    if bad:
        ap.error(f"unknown format/model: {', '.join(bad)}")
    return a


def main(argv: list[str] | None = None) -> int:
    raw_argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if importlib.util.find_spec("torch") is None:
        return skip("PyTorch is not installed (it supplies the device buffers, the timers and the baselines)")
    import numpy as np
    import torch

    if not torch.cuda.is_available():
        return skip("torch sees no CUDA device")
    import pyvt
    from pyvt import ops

    if not ops.cuda_available():
        return skip(f"pyvt cannot use the GPU: {pyvt.backends()!r}")
    try:
        probe = ops.prepack_fp8(np.ones((16, 16), np.float32), device="cuda")
        probe.close()
    except TypeError:
        return skip("this pyvt has no device prepack (prepack_*(w, device='cuda')): the device API is not in this build")

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    started = _dt.datetime.now()
    env = {
        "machine": {"host": socket.gethostname(), "gpu": props.name, "sm": f"{props.major}.{props.minor}",
                    "sms": props.multi_processor_count, "gpu_memory_gib": round(props.total_memory / 2**30, 1),
                    "os": platform.platform(), "python": platform.python_version()},
        "versions": {"pyvt": getattr(pyvt, "__version__", "?"), "torch": torch.__version__,
                     "torch_cuda": torch.version.cuda, "numpy": np.__version__},
        "backends": pyvt.backends(),
        "git": git_info(),
        "command": " ".join(shlex.quote(x) for x in [sys.executable, "bench/gemm.py", *raw_argv]),
        "date": started.isoformat(timespec="seconds"),
    }
    log(f"{props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs), torch {torch.__version__}")
    log(pyvt.backends())

    shapes: list[tuple[str, int, int, list[int]]] = []  # (label, N, K, Ms)
    if not args.no_square and not args.quick:
        shapes.append(("4096^3", 4096, 4096, [4096]))
    for model in args.models:
        for proj, n, k in MODELS[model]:
            shapes.append((f"{model} {proj}", n, k, args.m))

    min_s = 0.02 if args.quick else 0.05
    rows: list[dict[str, Any]] = []
    gen = torch.Generator(device="cpu").manual_seed(0)
    t_start = time.monotonic()

    def out_of_time() -> bool:
        return args.time_budget is not None and time.monotonic() - t_start > args.time_budget

    for label, n, k, ms in shapes:
        if out_of_time():
            rows += [{"shape": label, "M": m, "N": n, "K": k, "format": fmt,
                      "status": f"not run: --time-budget {args.time_budget:.0f} s spent"} for m in ms for fmt in args.formats]
            continue
        w = (torch.randn(n, k, generator=gen) * 0.02).numpy()
        packed: dict[str, Any] = {}
        prep = {"fp8-w8a8": ops.prepack_fp8, "fp8-w8a8-sm89": ops.prepack_fp8, "fp8-w8a16": ops.prepack_fp8, "int8-2:4": ops.prepack_int8_sparse24,
                "int4-2:4": ops.prepack_int4_sparse24, "int8-w8a16": ops.prepack_int8_blocked}
        call = {"fp8-w8a8": ops.linear_fp8, "fp8-w8a8-sm89": ops.linear_fp8, "fp8-w8a16": ops.linear_fp8_w8a16, "int8-2:4": ops.linear_int8_sparse,
                "int4-2:4": ops.linear_int4_sparse, "int8-w8a16": ops.linear_int8_w8a16}
        wd = torch.from_numpy(w).to(dev)
        w_bf16 = wd.to(torch.bfloat16)
        torch_prep: dict[str, Any] = {}
        for m in ms:
            if out_of_time():
                rows += [{"shape": label, "M": m, "N": n, "K": k, "format": fmt,
                          "status": f"not run: --time-budget {args.time_budget:.0f} s spent"} for fmt in args.formats]
                continue
            x = torch.randn(m, k, generator=gen).to(dev)
            ref = x @ wd.t()
            flops = 2.0 * m * n * k
            for fmt in args.formats:
                row: dict[str, Any] = {"shape": label, "M": m, "N": n, "K": k, "format": fmt}
                try:
                    if fmt in PYVT_FORMATS:
                        if fmt not in packed:
                            packed[fmt] = upload(prep[fmt], w, fmt)
                        p, f = packed[fmt], call[fmt]
                        out = torch.empty(m, n, device=dev)
                        try:
                            f(x, p, out=out)
                            fn = lambda: f(x, p, out=out)  # noqa: E731
                        except TypeError:
                            fn = lambda: f(x, p)  # noqa: E731
                        y = torch.as_tensor(f(x, p), device=dev)
                    else:
                        fn, y = torch_case(torch, fmt, x, wd, w_bf16, torch_prep)
                    tm = time_call(torch, fn, min_s)
                    t = tm["kernel_s"] or tm["call_s"]
                    err = float((y.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))
                    row.update(status="ok", kernel_us=_us(tm["kernel_s"]), host_us=_us(tm["host_s"]),
                               call_us=_us(tm["call_s"]), iters=tm["iters"],
                               tflops=round(flops / t / 1e12, 2), tflops_from="kernel" if tm["kernel_s"] else "call",
                               nerr=err)
                    if tm.get("timing_note"):
                        row["timing_note"] = tm["timing_note"]
                except Exception as e:  # noqa: BLE001 - a backend that cannot run this cell
                    row.update(status=f"error: {type(e).__name__}: {e}"[:240])
                rows.append(row)
                log(f"{label:>26} M={m:<5} {fmt:<15} " + (
                    f"kernel {_fmt_us(row['kernel_us'])} us, host {_fmt_us(row['host_us'])} us, call "
                    f"{_fmt_us(row['call_us'])} us, {row['tflops']:>8.1f} T(FL)OPS  nerr {row['nerr']:.2e}"
                    if row["status"] == "ok" else row["status"]))
        for p in packed.values():
            p.close()
        del wd, w_bf16, torch_prep
        torch.cuda.empty_cache()

    env["rows"] = rows
    env["timing"] = ("kernel_us: CUDA events around back-to-back calls queued behind a spin kernel (GPU time alone); "
                     "host_us: wall-clock per call of enqueuing them; call_us: events around back-to-back calls "
                     "without the spin; tflops from kernel_us (call_us where a row's tflops_from says so)")
    env["time_budget_s"] = args.time_budget
    env["claims_rtx4090"] = CLAIMS
    out_dir = Path(args.results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = started.strftime("%Y%m%dT%H%M%S")
    (out_dir / f"gemm-{stamp}.json").write_text(json.dumps(env, indent=1) + "\n")
    md = render_md(env, args.formats)
    (out_dir / f"gemm-{stamp}.md").write_text(md)
    log("")
    log(md)
    log(f"wrote {out_dir / f'gemm-{stamp}.json'} and .md")
    return 0


def upload(prepack, w, fmt: str):
    """prepack(w, device="cuda"); for *-sm89, with VT_CUDA_FP8_GEMM=sm89 while the weight is
    uploaded (libvt reads it then), so one run times both FP8 kernels."""
    if not fmt.endswith("-sm89"):
        return prepack(w, device="cuda")
    old = os.environ.get("VT_CUDA_FP8_GEMM")
    os.environ["VT_CUDA_FP8_GEMM"] = "sm89"
    try:
        return prepack(w, device="cuda")
    finally:
        if old is None:
            os.environ.pop("VT_CUDA_FP8_GEMM", None)
        else:
            os.environ["VT_CUDA_FP8_GEMM"] = old


def torch_case(torch, fmt: str, x, wd, w_bf16, cache: dict[str, Any]):
    """(callable, result) for a PyTorch baseline; raises when the device or build lacks it."""
    m = x.shape[0]
    if fmt == "torch-bf16":
        xb = x.to(torch.bfloat16)
        return (lambda: xb @ w_bf16.t()), xb @ w_bf16.t()
    if fmt == "torch-fp8":
        if "fp8" not in cache:
            sw = wd.abs().max() / 448.0
            cache["fp8"] = ((wd / sw).to(torch.float8_e4m3fn), sw.float().reshape(()))
        wq, sw = cache["fp8"]
        sx = x.abs().max() / 448.0
        xq, sx = (x / sx).to(torch.float8_e4m3fn), sx.float().reshape(())
        fn = lambda: torch._scaled_mm(xq, wq.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)  # noqa: E731
        return fn, fn()
    if fmt == "torch-fp8-rowwise":
        if "fp8-rowwise" not in cache:
            sw = (wd.abs().amax(dim=1, keepdim=True) / 448.0).clamp_min(1e-12)  # [n, 1]
            cache["fp8-rowwise"] = ((wd / sw).to(torch.float8_e4m3fn), sw.float().reshape(1, -1))
        wq, sw = cache["fp8-rowwise"]
        sx = (x.abs().amax(dim=1, keepdim=True) / 448.0).clamp_min(1e-12)  # [m, 1]
        xq, sx = (x / sx).to(torch.float8_e4m3fn), sx.float()
        fn = lambda: torch._scaled_mm(xq, wq.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)  # noqa: E731
        return fn, fn()
    if fmt in ("torch-bf16-2:4", "torch-int8-2:4"):
        from torch.sparse import to_sparse_semi_structured

        if m < 32:
            raise ValueError("semi-structured sparse matmul needs at least 32 rows of input here")
        if fmt not in cache:
            # 2:4 magnitude pruning along K, as pyvt's prepack does.
            g = wd.reshape(wd.shape[0], -1, 4)
            keep = g.abs().topk(2, dim=-1).indices
            mask = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, keep, True).reshape(wd.shape)
            if fmt == "torch-bf16-2:4":
                cache[fmt] = to_sparse_semi_structured((wd * mask).to(torch.bfloat16))
            else:
                s = wd.abs().amax() / 127.0
                cache[fmt] = (to_sparse_semi_structured(((wd / s).round().clamp(-127, 127) * mask).to(torch.int8)), s)
        if fmt == "torch-bf16-2:4":
            ws = cache[fmt]
            xt = x.to(torch.bfloat16).t().contiguous()
            fn = lambda: torch.mm(ws, xt)  # noqa: E731  (yᵀ = W·xᵀ: the sparse operand first)
            return fn, fn().t()
        ws, s = cache[fmt]
        sx = x.abs().amax() / 127.0
        xq = (x / sx).round().clamp(-127, 127).to(torch.int8).t().contiguous()
        fn = lambda: torch.mm(ws, xq)  # noqa: E731
        return fn, fn().t().float() * (sx * s)
    raise ValueError(fmt)


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def render_md(env: dict[str, Any], formats: list[str]) -> str:
    m = env["machine"]
    lines = [f"# GEMM throughput, {m['gpu']} (sm_{m['sm'].replace('.', '')}, {m['sms']} SMs)", "",
             f"{env['date']}, commit {env['git'].get('commit')}{' (dirty)' if env['git'].get('dirty') else ''}, "
             f"torch {env['versions']['torch']} (CUDA {env['versions']['torch_cuda']}), pyvt {env['versions']['pyvt']}",
             "", "```", env["backends"], "```", "",
             "TFLOPS / TOPS = 2·M·N·K / median kernel time (GPU time alone: calls queued behind a spin kernel; "
             "dense-equivalent for 2:4 sparse); inputs and outputs in device memory; `-` = not run, `err` = the "
             "backend refused (see the JSON).", ""]
    cells: dict[tuple[str, int], dict[str, Any]] = {}
    for r in env["rows"]:
        cells.setdefault((r["shape"], r["M"]), {})[r["format"]] = r
    lines.append("| shape | M | " + " | ".join(formats) + " |")
    lines.append("|---|---:|" + "---:|" * len(formats))
    for (shape, mm), fm in cells.items():
        vals = []
        for f in formats:
            r = fm.get(f)
            vals.append("-" if r is None else (f"{r['tflops']:.1f}" + ("*" if r.get("tflops_from") == "call" else ""))
                        if r["status"] == "ok" else "-" if r["status"].startswith("not run") else "err")
        lines.append(f"| {shape} | {mm} | " + " | ".join(vals) + " |")
    lines += ["", "`*`: from the call time (the call could not be queued ahead of the GPU: kernel time unknown).",
              "", "Small M, per call in µs: kernel (GPU time alone) / host (CPU time to enqueue one call):", "",
              "| shape | M | " + " | ".join(formats) + " |", "|---|---:|" + "---:|" * len(formats)]
    for (shape, mm), fm in cells.items():
        if mm > 16:
            continue
        vals = []
        for f in formats:
            r = fm.get(f)
            ok = r is not None and r["status"] == "ok"
            vals.append(f"{_num(r.get('kernel_us'))} / {_num(r.get('host_us'))}" if ok else "-")
        lines.append(f"| {shape} | {mm} | " + " | ".join(vals) + " |")
    sq = cells.get(("4096^3", 4096), {})
    if sq:
        lines += ["", "At 4096³ beside the original's RTX 4090 claims (TFLOPS / TOPS):", ""]
        for f, claim in CLAIMS.items():
            r = sq.get(f)
            ours = f"{r['tflops']:.1f}" if r and r["status"] == "ok" else "n/a"
            lines.append(f"* {f}: ours {ours} on {m['gpu']}; claimed {claim:.0f} on an RTX 4090")
        fp8 = sq.get("fp8-w8a8")
        for base, what in (("torch-fp8-rowwise", "row-wise scales"), ("torch-fp8", "per-tensor scales")):
            cub = sq.get(base)
            if fp8 and cub and fp8["status"] == cub["status"] == "ok":
                lines.append(f"* FP8 dense vs cuBLASLt FP8 ({what}): {100 * fp8['tflops'] / cub['tflops']:.0f} % "
                             "(goal ≥ 90 %)")
        old = sq.get("fp8-w8a8-sm89")
        if fp8 and old and fp8["status"] == old["status"] == "ok":
            lines.append(f"* FP8 dense, the sm_90a kernel vs the CUTLASS 2.x one: {fp8['tflops'] / old['tflops']:.2f}×")
        sp = sq.get("int8-2:4")
        if sp and fp8 and sp["status"] == fp8["status"] == "ok":
            lines.append(f"* INT8 2:4 vs our FP8 dense: {sp['tflops'] / fp8['tflops']:.2f}× (goal ≥ 1.4×)")
        i4 = sq.get("int4-2:4")
        if sp and i4 and sp["status"] == i4["status"] == "ok":
            lines.append(f"* INT4 2:4 vs INT8 2:4: {i4['tflops'] / sp['tflops']:.2f}× (INT4 runs on the INT8 kernel)")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
