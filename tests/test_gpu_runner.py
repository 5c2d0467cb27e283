"""The GPU runner (bench/gpu_check.sh, bench/gpu/) without a GPU: the phases fit the device
tool's limits on paper, nothing waits on the network, the summary is written (valid JSON +
markdown) whatever happens to a phase, the logs parse, and bench/gemm.py's timing separates
kernel time from host time (against a simulated GPU). Fast, no torch, no build."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GPU_DIR = REPO / "bench" / "gpu"
SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def report():
    return _load("report", GPU_DIR / "report.py")


@pytest.fixture()
def runner(report, monkeypatch):
    monkeypatch.syspath_prepend(str(GPU_DIR))
    return _load("vt_gpu_runner", GPU_DIR / "runner.py")


@pytest.fixture(scope="module")
def plan():
    r = subprocess.run([sys.executable, str(GPU_DIR / "runner.py"), "--plan", "all", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ------------------------------------------------------------------------------------------
# The plan: limits, rebuilds, offline
# ------------------------------------------------------------------------------------------


def test_every_phase_is_planned(plan):
    names = [p["phase"] for p in plan]
    assert names == ["first", "kernels", "models", "gemm", "decode:tinyllama-1.1b", "decode:llama-3.2-1b",
                     "decode:llama-2-7b", "cpu", "profile", "prefill", "kvcache", "switches", "batch"]


def test_phases_fit_one_device_command(plan):
    for p in plan:
        assert p["budget_s"] <= 540, p["phase"]
        assert p["sum_timeouts_s"] == sum(s["timeout_s"] for s in p["steps"])
        assert p["sum_timeouts_s"] <= p["budget_s"] < 600, p["phase"]
        assert all(s["timeout_s"] > 0 for s in p["steps"])


def test_every_phase_rebuilds_first(plan):
    for p in plan:
        ids = [s["id"] for s in p["steps"]]
        assert ids[:2] == ["env", "build"], p["phase"]
        build = p["steps"][1]
        text = "\n".join(build["commands"])
        assert "-Dgpu_archs=90" in text and "-Dcuda=enabled" in text
        assert "--no-build-isolation" in text and "meson install" in text and "-Dpython=false" in text
        assert build["timeout_s"] >= 150  # 32-40 s on the H100 machine (2026-11-26), with room


def test_files_brought_back(plan):
    for p in plan:
        outs = p["outputs"]
        assert len(outs) <= 8, p["phase"]
        assert "summary.json" in outs and "summary.md" in outs
        for f in outs:
            assert SAFE_NAME.match(f.replace("HOST", "h").replace("DATE", "d")), f


def test_nothing_waits_on_the_network(plan):
    env = plan[0]["offline_env"]
    assert env["PIP_NO_INDEX"] == "1" and env["HF_HUB_OFFLINE"] == "1" and env["TRANSFORMERS_OFFLINE"] == "1"
    assert env["PYVT_TESTS_OFFLINE"] == "1"
    for p in plan:
        for s in p["steps"]:
            for c in s["commands"]:
                assert not re.search(r"\b(curl|wget|git clone|pip download|https?://)", c), c
                if re.search(r"\bpip install\b", c):
                    assert "--no-index" in c, c
                assert "hub.pull" not in c and "pyvt pull" not in c, c


def test_first_phase_leaves_room_for_a_rerun(plan):
    # 15 minutes of device time a session, machine start-up included: the first call's
    # timeouts stay near 6 minutes so that it can run again after a fix.
    first = {p["phase"]: p for p in plan}["first"]
    assert first["sum_timeouts_s"] <= 360
    steps = {s["id"]: s for s in first["steps"]}
    assert list(steps) == ["env", "build", "tiny_models", "cuda_first", "pytest_first"]
    assert steps["cuda_first"]["commands"][0].split()[0].endswith("build/libvt/vt_cuda_test")
    assert "gqa-hd64" in steps["cuda_first"]["commands"][0]  # ops, then the tiny models
    py = steps["pytest_first"]["commands"][0]
    assert "-m cuda" in py and "families" in py and "kv_cache_types" in py


def test_phase_contents(plan):
    by = {p["phase"]: {s["id"]: s for s in p["steps"]} for p in plan}
    k = by["kernels"]
    assert len(k["cuda_kernels"]["commands"]) == 1 and k["cuda_kernels"]["commands"][0].endswith("build/libvt/vt_cuda_test")
    assert "tinyllama-1.1b" in k["decode"]["commands"][0] and "--device cuda" in k["decode"]["commands"][0]
    assert "vt_generate" in k["decode"]["commands"][1]  # the C fallback
    assert "meson test" in k["c_tests"]["commands"][0] and "c_device_api" in k["c_tests"]["commands"][0]
    assert "c_hostile" in k["c_tests"]["commands"][0] and not k["c_tests"]["env"]  # the GPU visible
    m = by["models"]
    assert m["cuda_models_nopdl"]["env"] == {"VT_CUDA_PDL": "0"} and not m["cuda_models"]["env"]
    assert "gqa-hd64" in m["cuda_models"]["commands"][0] and "gqa-hd128" in m["cuda_models"]["commands"][0]
    assert "-m cuda" in m["pytest_cuda"]["commands"][0]
    assert "compute-sanitizer --tool memcheck" in m["memcheck"]["commands"][0]
    assert "bench/gemm.py" in by["gemm"]["gemm"]["commands"][0]
    assert "--time-budget" in by["gemm"]["gemm"]["commands"][0]
    l2 = by["decode:llama-2-7b"]
    assert "llama-2-7b" in l2["checkpoint"]["commands"][0] and "--models llama-2-7b" in l2["decode"]["commands"][0]
    cpu = by["cpu"]
    for sid in ("cpu_only", "pytest_cpu"):
        assert cpu[sid]["env"] == {"CUDA_VISIBLE_DEVICES": ""}  # device "auto" cannot reach the GPU
    c = cpu["pytest_cpu"]["commands"][0]
    assert "-W default" in c and "not cuda" in c  # the image's newer packages' warnings are no errors there
    kv = by["kvcache"]
    for sid, prompt in (("kv_1900", "1900"), ("kv_128", "128")):
        cmd = kv[sid]["commands"][0]
        assert "--formats int8,int8/kv-int8" in cmd and f"--prompt-len {prompt}" in cmd and "--device cuda" in cmd
    sw = by["switches"]
    assert list(sw) == ["env", "build", "checkpoint", "ab_int4_four_rows", "ab_feedback", "ab_l2_evict_first"]
    for sid, var, fmt in (("ab_int4_four_rows", "VT_CUDA_INT4_FOUR_ROWS", "int4"),
                          ("ab_feedback", "VT_CUDA_FEEDBACK", "int8"),
                          ("ab_l2_evict_first", "VT_CUDA_L2_EVICT_FIRST", "int8")):
        cmd = sw[sid]["commands"][0]
        assert cmd.startswith("bash ") and "bench/gpu/ab_env.sh" in cmd
        assert cmd.endswith(f"{var} 0 1 /tmp/vt-gpu/models/tinyllama-1.1b 128 4 {fmt}"), cmd
        assert sw[sid]["env"] == {"VT_GPU_WORK": "/tmp/vt-gpu"}  # where the build put vt_generate
    b = by["batch"]
    assert list(b) == ["env", "build", "checkpoint", "batch_on", "batch_off"]
    for sid, v in (("batch_on", "1"), ("batch_off", "0")):
        cmd = b[sid]["commands"][0]
        assert "bench/serve.py --step-only --device cuda" in cmd and "--concurrency 1,4,16,64" in cmd, cmd
        assert "/tmp/vt-gpu/models/tinyllama-1.1b" in cmd and f"--tag batch-{'on' if v == '1' else 'off'}" in cmd
        assert b[sid]["env"] == {"VT_CUDA_BATCH": v}


def test_inline_python_does_not_run_in_the_source_tree(plan):
    # python -c in the repository root imports ./pyvt (no extensions), not the built package
    for p in plan:
        for s in p["steps"]:
            if s["kind"] == "command" and any(re.search(r"python3?\S* -c .*import pyvt", c) for c in s["commands"]):
                assert s["cwd"] != str(REPO), (p["phase"], s["id"])


def test_plan_text_mode():
    r = subprocess.run([sys.executable, str(GPU_DIR / "runner.py"), "--plan", "gemm"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "== gemm: timeouts sum to" in r.stdout and "offline: PIP_NO_INDEX=1" in r.stdout


def test_shell_scripts_parse():
    scripts = [REPO / "bench" / "gpu_check.sh", REPO / "tools" / "gpu_wheels.sh"]
    for s in scripts:
        r = subprocess.run(["bash", "-n", str(s)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert os.access(s, os.X_OK), s
    if shutil.which("shellcheck"):
        r = subprocess.run(["shellcheck", "-S", "warning", *map(str, scripts)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("args,msg", [(["bogus", "out"], "unknown phase"), (["decode", "out"], "decode MODEL OUTDIR"),
                                      (["decode", "llama-9b", "out"], "decode MODEL OUTDIR"),
                                      (["kernels", "x", "out"], "usage: kernels OUTDIR")])
def test_bad_arguments_are_refused(args, msg, tmp_path):
    r = subprocess.run([sys.executable, str(GPU_DIR / "runner.py"), *args], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_wrapper_without_python_still_writes_a_summary(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run(["bash", str(REPO / "bench" / "gpu_check.sh"), "kernels", str(out)], capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, VT_GPU_PYTHON=str(tmp_path / "no-python")))
    assert r.returncode == 1
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "fail" and s["phase"] == "kernels" and "no Python" in s["notes"][0]
    assert "FAIL" in (out / "summary.md").read_text()


# ------------------------------------------------------------------------------------------
# Parsers
# ------------------------------------------------------------------------------------------

VT_LOG = """\
cuda: available (NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB, 132 SMs; driver 13.0)
cutlass: 2:4 sparse INT8/INT4 for sm_90; FP8 W8A8 for sm_90
ok   gemv int8/32 [300 x 576] m=1 store+bias+gelu vs CPU (1.2e-06)
ok   gemv int8/32 [300 x 576] m=1 residual add vs float64 (3e-07)
ok   gemv int8/64 [130 x 1024] m=1 store+bias+gelu vs CPU (4.5e-06)
FAIL gemm fp8/16 [300 x 576] m=64 store+bias+gelu vs CPU (0.0021)
ok   attention decode nh=8 nkv=2 hd=64 m=1 pos0=1000 splits=7 (2e-07)
ok   gemv argmax epilogue = argmax of its output
     /tmp/vt-gpu/tiny/gqa-hd64 bf16: 2.1 MiB on the device, upload 3 ms
ok   /tmp/vt-gpu/tiny/gqa-hd64 bf16: prefill logits CPU vs CUDA, n=5 (0.0004)
ok   /tmp/vt-gpu/tiny/gqa-hd64 bf16: greedy tokens CPU vs CUDA (near-ties aside)
FAIL /tmp/vt-gpu/tiny/gqa-hd64 int8: decode logits at positions 2050..2089 CPU vs CUDA (inf)
7 passed, 2 failed
"""


def test_kernel_keys(report):
    k = report.kernel_key
    assert k("gemv int8/32 [300 x 576] m=1 store+bias+gelu vs CPU") == "gemv int8 store+bias+gelu vs CPU"
    assert k("attention decode nh=8 nkv=2 hd=64 m=1 pos0=1000 splits=7") == "attention decode"
    assert k("/tmp/x/gqa-hd64 bf16: prefill logits CPU vs CUDA, n=5") == "gqa-hd64 bf16: prefill logits CPU vs CUDA"
    assert k("cutlass int8_sparse24 [64 x 4096] m=17 +bias vs CPU") == "cutlass int8_sparse24 +bias vs CPU"
    assert k("rmsnorm") == "rmsnorm"


def test_parse_vt_cuda_test(report):
    r = report.parse_vt_cuda_test(VT_LOG)
    assert (r["passed"], r["failed"], r["complete"], r["skipped"]) == (7, 2, True, None)
    assert r["backend"][0].startswith("cuda: available") and r["backend"][1].startswith("cutlass:")
    g = r["kernels"]["gemv int8 store+bias+gelu vs CPU"]
    assert g == {"checks": 2, "failed": 0, "max_err": 4.5e-06,
                 "worst": "gemv int8/64 [130 x 1024] m=1 store+bias+gelu vs CPU"}
    assert r["kernels"]["gemm fp8 store+bias+gelu vs CPU"]["failed"] == 1
    assert r["kernels"]["gemv argmax epilogue = argmax of its output"]["max_err"] is None
    assert r["kernels"]["gqa-hd64 int8: decode logits at positions CPU vs CUDA"]["max_err"] == float("inf")
    assert r["kernels"]["gqa-hd64 bf16: greedy tokens CPU vs CUDA (near-ties aside)"]["checks"] == 1
    assert len(r["failures"]) == 2 and r["failures"][0].startswith("FAIL gemm fp8/16")


def test_parse_vt_cuda_test_cut_short_and_skipped(report):
    cut = "\n".join(VT_LOG.splitlines()[:6])  # killed before its summary line
    r = report.parse_vt_cuda_test(cut)
    assert (r["passed"], r["failed"], r["complete"]) == (3, 1, False)
    s = report.parse_vt_cuda_test("skipped: no NVIDIA driver: libcuda.so.1 was not found\n")
    assert s["skipped"].startswith("no NVIDIA driver") and s["passed"] == 0


def test_parse_meson_test(report):
    log = ("1/3 pyvt:c_device_api OK              0.04s\n"
           "2/3 pyvt:c_hostile    FAIL            0.03s   exit status 1\n"
           "3/3 pyvt:c_abi        SKIP            0.17s   exit status 77\n\n"
           "Ok:                1   \nFail:              1   \nSkipped:           1   \n")
    m = report.parse_meson_test(log)
    assert (m["passed"], m["failed"], m["skipped"], m["complete"]) == (1, 1, 1, True)
    assert m["failures"] == ["2/3 pyvt:c_hostile    FAIL            0.03s   exit status 1"]
    assert report.parse_meson_test("1/3 pyvt:c_abi OK 0.1s\n")["complete"] is False


def test_parse_pytest_sanitizer_generate(report):
    log = ("tests/test_cuda.py ..F.s\nFAILED tests/test_cuda.py::test_x - AssertionError: 1 != 2\n"
           "ERROR tests/test_cuda.py::test_y - RuntimeError\n"
           "==== 1 failed, 3 passed, 1 skipped, 4 deselected, 1 error in 12.34s ====\n")
    p = report.parse_pytest(log)
    assert (p["passed"], p["failed"], p["skipped"], p["deselected"], p["errors"], p["complete"]) == (3, 1, 1, 4, 1, True)
    assert p["failures"][0].startswith("FAILED tests/test_cuda.py::test_x")
    assert report.parse_pytest("collecting ...")["complete"] is False
    q = report.parse_pytest("12 passed, 2 warnings in 3.00s\n")
    assert (q["passed"], q["warnings"], q["complete"]) == (12, 2, True)
    s = report.parse_sanitizer("========= COMPUTE-SANITIZER\n========= LEAK SUMMARY: 0 bytes leaked in 0 allocations\n"
                               "========= ERROR SUMMARY: 0 errors\n")
    assert s == {"errors": 0, "leaked_bytes": 0, "complete": True}
    assert report.parse_sanitizer("killed")["errors"] is None
    g = report.parse_generate("1 5 9\n3 prompt tokens, 24 generated (length); prefill 1.5 ms, decode 0.42 ms/token\n")
    assert g["decode_ms_per_token"] == 0.42 and g["generated"] == 24


# ------------------------------------------------------------------------------------------
# The summary, whatever happens
# ------------------------------------------------------------------------------------------


def test_summary_of_a_phase_failing_halfway(report, tmp_path):
    s = {"phase": "models", "args": [], "started": "2026-11-23T00:00:00+00:00", "finished": None, "budget_s": 540,
         "commit": {"commit": "abc", "source": "git"}, "machine": {"gpu": "H100"}, "versions": {"python": "3.12"},
         "steps": [
             {"id": "env", "status": "pass", "timeout_s": 20},
             {"id": "build", "status": "pass", "timeout_s": 210, "log": "build.log"},
             {"id": "cuda_models", "status": "fail", "timeout_s": 90, "log": "cuda_models.log",
              "results": report.parse_vt_cuda_test(VT_LOG), "detail": "7 passed, 2 failed"},
             {"id": "pytest_cuda", "status": "running", "timeout_s": 100},
             {"id": "memcheck", "status": "pending", "timeout_s": 50}]}
    report.write_summary(tmp_path, s)
    j = json.loads((tmp_path / "summary.json").read_text())
    assert j["status"] == "fail" and j["schema"] == report.SCHEMA
    assert j["counts"] == {"steps_pass": 2, "steps_fail": 1, "steps_skip": 0, "steps_other": 2, "tests_passed": 7,
                           "tests_failed": 2}
    md = (tmp_path / "summary.md").read_text()
    assert "**FAIL**" in md and "| cuda_models | fail |" in md and "not finished" in md
    assert "| gemv int8 store+bias+gelu vs CPU | 2 | 0 | 4.5e-06 |" in md
    assert "FAIL gemm fp8/16" in md
    assert not list(tmp_path.glob(".*.tmp"))
    s["steps"] = s["steps"][:2]
    report.write_summary(tmp_path, s)
    assert json.loads((tmp_path / "summary.json").read_text())["status"] == "incomplete"
    s["finished"] = "2026-11-23T00:05:00+00:00"
    report.write_summary(tmp_path, s)
    assert json.loads((tmp_path / "summary.json").read_text())["status"] == "pass"


def _fake_phase_code(out: Path, work: Path, steps: str) -> str:
    return f"""
import sys
sys.path.insert(0, {str(GPU_DIR)!r})
import runner
from pathlib import Path
py = sys.executable
runner.phase_steps = lambda ctx: [
    runner.Step("env", "environment", 20, func=lambda c, s: {{"status": "pass", "detail": "fake"}}),
{steps}
]
ctx = runner.Ctx(phase="kernels", arg=None, out=Path({str(out)!r}), work=Path({str(work)!r}), jobs=1, archs="90",
                 build=Path({str(work)!r}) / "build")
sys.exit(runner.run_phase(ctx))
"""


def test_runner_records_pass_fail_timeout_skip(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    steps = """
    runner.Step("ok", "passes", 20, argv=[py, "-c", "print('ok   rmsnorm (1e-07)'); print('1 passed, 0 failed')"],
                log="a.log", parser="vt_cuda_test"),
    runner.Step("bad", "fails", 20, argv=[py, "-c", "import sys; print('FAIL rmsnorm (0.5)'); sys.exit(1)"],
                log="a.log", parser="vt_cuda_test"),
    runner.Step("slow", "times out", 1, argv=[py, "-c", "import time; time.sleep(60)"], log="b.log"),
    runner.Step("needs_pyvt", "skipped", 20, argv=[py, "-c", "pass"], needs=("pyvt",)),
    runner.Step("missing", "a program that is not there", 20, argv=["/nonexistent/vt_cuda_test"], log="b.log"),
"""
    t0 = time.time()
    r = subprocess.run([sys.executable, "-c", _fake_phase_code(out, work, steps)], capture_output=True, text=True,
                       timeout=120)
    assert time.time() - t0 < 60
    assert r.returncode == 1, r.stderr
    s = json.loads((out / "summary.json").read_text())
    st = {x["id"]: x for x in s["steps"]}
    assert [x["status"] for x in s["steps"]] == ["pass", "pass", "fail", "timeout", "skip", "fail"]
    assert st["missing"]["rc"] == 127 and "cannot run /nonexistent/vt_cuda_test" in st["missing"]["detail"]
    assert st["ok"]["results"]["passed"] == 1 and st["ok"]["results"]["kernels"]["rmsnorm"]["max_err"] == 1e-07
    # a shared log: each step parses its own part
    assert st["bad"]["results"]["failed"] == 1 and st["bad"]["results"]["passed"] == 0
    assert "timed out after 1 s" in st["slow"]["detail"]
    assert "pyvt" in st["needs_pyvt"]["detail"]
    assert s["status"] == "fail" and s["finished"]
    assert set(s["files"]) == {"a.log", "b.log", "summary.json", "summary.md"}
    assert "| slow | timeout |" in (out / "summary.md").read_text()


def test_runner_killed_midway_leaves_a_summary(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    steps = """
    runner.Step("first", "passes", 20, argv=[py, "-c", "print('hello')"], log="a.log"),
    runner.Step("hang", "hangs", 300, argv=[py, "-c", "import time; time.sleep(300)"], log="a.log"),
    runner.Step("never", "never reached", 20, argv=[py, "-c", "pass"]),
"""
    p = subprocess.Popen([sys.executable, "-c", _fake_phase_code(out, work, steps)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                s = json.loads((out / "summary.json").read_text())
                if any(x["id"] == "hang" and x["status"] == "running" for x in s["steps"]):
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        else:
            pytest.fail("the runner never reached the hanging step")
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
    s = json.loads((out / "summary.json").read_text())
    assert [x["status"] for x in s["steps"]] == ["pass", "pass", "killed", "pending"]
    assert s["status"] == "fail" and s["finished"] and "SIGTERM" in s["notes"][-1]
    assert "**FAIL**" in (out / "summary.md").read_text()


# ------------------------------------------------------------------------------------------
# bench/gemm.py's timing against a simulated GPU
# ------------------------------------------------------------------------------------------


class _SimGPU:
    """One stream: a launch starts when both the host has issued it and the GPU is free;
    an event completes when the GPU reaches it. Host time is a simulated clock."""

    def __init__(self) -> None:
        self.host = 0.0
        self.free_at = 0.0

    def launch(self, dur: float) -> None:
        self.free_at = max(self.host, self.free_at) + dur


class _SimTorch:
    def __init__(self, gpu: _SimGPU) -> None:
        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = None

            def record(self) -> None:
                self.t = max(gpu.host, gpu.free_at)

            def query(self) -> bool:
                return gpu.host >= self.t

            def synchronize(self) -> None:
                gpu.host = max(gpu.host, self.t)

            def elapsed_time(self, other) -> float:
                return (other.t - self.t) * 1e3

        class Cuda:
            pass

        self.cuda = Cuda()
        self.cuda.Event = Event
        self.cuda.synchronize = lambda: setattr(gpu, "host", max(gpu.host, gpu.free_at))
        self.cuda._sleep = lambda cycles: gpu.launch(cycles / 1.5e9)


class _SimTime:
    def __init__(self, gpu: _SimGPU) -> None:
        self.gpu = gpu

    def perf_counter(self) -> float:
        return self.gpu.host

    def monotonic(self) -> float:
        return self.gpu.host


@pytest.fixture()
def gemm_bench(monkeypatch):
    mod = _load("vt_bench_gemm", REPO / "bench" / "gemm.py")
    mod._SPIN_CYCLES_PER_S.clear()
    return mod


@pytest.mark.parametrize("host_us,kernel_us", [(20.0, 5.0), (3.0, 40.0)])
def test_gemm_timing_separates_kernel_and_host(gemm_bench, monkeypatch, host_us, kernel_us):
    gpu = _SimGPU()
    monkeypatch.setattr(gemm_bench, "time", _SimTime(gpu))

    def fn():
        gpu.host += host_us * 1e-6
        gpu.launch(kernel_us * 1e-6)

    r = gemm_bench.time_call(_SimTorch(gpu), fn)
    assert r["kernel_s"] == pytest.approx(kernel_us * 1e-6, rel=1e-6)
    assert r["host_s"] == pytest.approx(host_us * 1e-6, rel=1e-6)
    # back to back, one call costs about the larger of the two
    assert r["call_s"] == pytest.approx(max(host_us, kernel_us) * 1e-6, rel=0.2)
    assert "timing_note" not in r


def test_gemm_timing_of_a_synchronizing_call(gemm_bench, monkeypatch):
    gpu = _SimGPU()
    monkeypatch.setattr(gemm_bench, "time", _SimTime(gpu))

    def fn():  # waits for the GPU at every call (e.g. a cudaMalloc / cudaFree inside)
        gpu.host = max(gpu.host, gpu.free_at) + 10e-6
        gpu.launch(5e-6)

    r = gemm_bench.time_call(_SimTorch(gpu), fn)
    assert r["kernel_s"] is None and r["host_s"] is None and "synchronizes" in r["timing_note"]
    assert r["call_s"] == pytest.approx(15e-6, rel=0.01)


def test_gemm_markdown_shows_kernel_and_host_time(gemm_bench, report, tmp_path):
    ok = dict(status="ok", kernel_us=4.2, host_us=18.5, call_us=19.0, iters=100, tflops=0.01, tflops_from="kernel",
              nerr=1e-3)
    rows = [dict(shape="tinyllama-1.1b q/o", M=1, N=2048, K=2048, format="fp8-w8a8", **ok),
            dict(shape="tinyllama-1.1b q/o", M=1, N=2048, K=2048, format="torch-fp8",
                 **dict(ok, kernel_us=None, host_us=None, tflops_from="call")),
            dict(shape="tinyllama-1.1b q/o", M=512, N=2048, K=2048, format="fp8-w8a8", status="not run: budget"),
            dict(shape="tinyllama-1.1b q/o", M=512, N=2048, K=2048, format="torch-fp8", status="error: x")]
    env = {"machine": {"gpu": "H100", "sm": "9.0", "sms": 132}, "date": "d", "git": {"commit": "c"},
           "versions": {"torch": "2", "torch_cuda": "13", "pyvt": "0.1"}, "backends": "cuda: available", "rows": rows}
    md = gemm_bench.render_md(env, ["fp8-w8a8", "torch-fp8"])
    assert "| tinyllama-1.1b q/o | 1 | 0.0 | 0.0* |" in md
    assert "| tinyllama-1.1b q/o | 512 | - | err |" in md
    assert "| tinyllama-1.1b q/o | 1 | 4.2 / 18.5 | n/a / n/a |" in md
    (tmp_path / "gemm-x.json").write_text(json.dumps(env))
    got = report.gemm_rows(tmp_path / "gemm-x.json")
    assert got[0]["kernel_us"] == 4.2 and got[0]["host_us"] == 18.5 and got[2]["status"] == "not run: budget"


def test_default_model_offline_skips_fast(tmp_path):
    # The GPU machine has no network: with the runner's environment the default-model fetch
    # fails at once (PIP_NO_INDEX) and the tests that need the model skip instead of failing.
    pytest.importorskip("pyvt._ops", reason="pyvt is not built")
    env = {k: v for k, v in os.environ.items() if k not in ("PYVT_PULL_SOURCE", "PIP_INDEX_URL", "PIP_FIND_LINKS")}
    env.update(PYVT_TESTS_OFFLINE="1", PIP_NO_INDEX="1", PIP_DEFAULT_TIMEOUT="5", PIP_CONFIG_FILE=os.devnull,
               PYVT_CACHE=str(tmp_path / "cache"))
    t0 = time.time()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-c",
                        str(REPO / "pyproject.toml"), "--rootdir", str(REPO),
                        str(REPO / "tests" / "test_api.py") + "::test_closed_handle"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 skipped" in r.stdout and "PYVT_TESTS_OFFLINE=1" in r.stdout, r.stdout
    assert time.time() - t0 < 120  # no network wait (pip gives up at once without an index)


def test_tiny_model_folders(tmp_path):
    r = subprocess.run([sys.executable, str(GPU_DIR / "tiny_models.py"), str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(tmp_path / "gqa-hd64"), str(tmp_path / "gqa-hd128")]
    c64 = json.loads((tmp_path / "gqa-hd64" / "config.json").read_text())
    c128 = json.loads((tmp_path / "gqa-hd128" / "config.json").read_text())
    assert c64["max_position_embeddings"] == 4096 and c64["hidden_size"] // c64["num_attention_heads"] == 64
    assert c128["head_dim"] == 128 and c128["num_key_value_heads"] == 1
    assert (tmp_path / "gqa-hd64" / "model.safetensors").stat().st_size > 100_000


# ------------------------------------------------------------------------------------------
# The profile phase: ncu's CSV
# ------------------------------------------------------------------------------------------


def _ncu_csv(launches: list[tuple[str, float, float]]) -> str:
    """ncu --csv --page raw --print-units base, as it prints: ==PROF== lines, the header, the
    units row, one row per launch (kernel, ns, bytes read)."""
    out = ["==PROF== Connected to process 123 (/tmp/vt-gpu/build/examples/vt_generate)",
           '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
           '"Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum"',
           '"","","","","","","","","","","","byte","byte","nsecond"']
    for i, (k, ns, rd) in enumerate(launches):
        out.append(f'"{i}","123","vt_generate","vm","{k}","1","7","(128, 1, 1)","(64, 1, 1)","0","9.0",'
                   f'"{rd:,.0f}","0","{ns:,.0f}"')
    return "\n".join(out) + "\n==PROF== Disconnected from process 123\n"


def test_short_kernel_names(report):
    assert report._short_kernel("void vt::cudak::(anonymous namespace)::gemv_kernel<64, (vt::cudak::Ep)1>"
                                "(vt::cudak::GemvArgs)") == "gemv_kernel<64, (Ep)1>"
    assert report._short_kernel("void vt::cudak::rmsnorm_kernel(const float *, float *, int)") == "rmsnorm_kernel"
    assert report._short_kernel("plain_kernel") == "plain_kernel"
    # ncu on the H200 (2026-11-26) wrote the anonymous namespace as "unnamed>::"
    assert report._short_kernel("void unnamed>::gemv_kernel<0, 1, 0>(unnamed>::GemvParams)") == "gemv_kernel<0, 1, 0>"
    assert report._short_kernel("void vt::<unnamed>::attn<64>(vt::<unnamed>::A)") == "attn<64>"


def test_ncu_step_slots_per_layer(report):
    # embed, 4 layers of (q, a, o), norm + head: the slots are the layer's three kernels with
    # their medians over layers and steps, and the kernels before and after the layers.
    emb, q, a, o, head = "embed(int)", "q(int)", "a(int)", "o(int)", "head(int)"
    step = [(emb, 1_000, 0)] + [(q, 2_000, 2e6), (a, 3_000, 0), (o, 1_000, 1e6)] * 4 + [(head, 5_000, 5e6)]
    r = report.ncu_rows(_ncu_csv(step * 3), 3)
    assert r["kernels_per_decode_step"] == 14
    slots = [(x["slot"], x["kernel"], x["median_us"], x["read_MB"]) for x in r["slots"]]
    assert slots == [("pre 0", "embed", 1.0, 0.0), ("layer slot 0 (x4)", "q", 2.0, 2.0),
                     ("layer slot 1 (x4)", "a", 3.0, 0.0), ("layer slot 2 (x4)", "o", 1.0, 1.0),
                     ("post 13", "head", 5.0, 5.0)]
    assert r["slots"][1]["GB_s"] == 1000.0  # 2 MB in 2 us


def test_ncu_rows_find_the_decode_step(report):
    gemv = "void vt::cudak::(anonymous namespace)::gemv_kernel<64>(vt::cudak::GemvArgs)"
    attn = "void vt::cudak::(anonymous namespace)::attn_decode_kernel<64, unsigned short>(vt::cudak::AttnArgs)"
    norm = "void vt::cudak::rmsnorm_kernel(const float *, float *, int)"
    prefill = [("void vt::cudak::gemm_kernel<1>(vt::cudak::GemmArgs)", 50_000, 1e6), (norm, 2_000, 1e4)]
    step = [(norm, 1_000, 1e4), (gemv, 4_000, 8e6), (attn, 3_000, 1e5), (gemv, 2_000, 4e6)]
    r = report.ncu_rows(_ncu_csv(prefill + step * 8), 8)
    assert r["kernels_profiled"] == 2 + 32
    assert r["decode_steps_found"] == 8 and r["kernels_per_decode_step"] == 4
    assert r["kernel_us_per_decode_step"] == 10.0  # 1 + 4 + 3 + 2 us
    by = {row["kernel"]: row for row in r["rows"]}
    assert by["gemv_kernel<64>"]["per_step"] == 2 and by["gemv_kernel<64>"]["step_us"] == 6.0
    assert by["gemv_kernel<64>"]["step_share"] == 0.6 and by["gemv_kernel<64>"]["GB_s"] == 2000.0  # 12 MB / 6 us
    assert by["rmsnorm_kernel"]["launches"] == 9 and by["rmsnorm_kernel"]["per_step"] == 1
    assert by["gemm_kernel<1>"]["per_step"] == 0 and by["gemm_kernel<1>"]["step_us"] == 0
    assert r["rows"][0]["kernel"] == "gemv_kernel<64>"  # the biggest share of the step first


def test_ncu_rows_step_made_of_layers_with_a_trailing_part(report):
    # The step (embed, 3 layers of q/a/o, head) repeats 8 times and is followed by a partial one
    # (embed and one layer) and a kernel of the shutdown: the period is the step's, not a layer's
    # (here a rotation of it, which sums to the same time), and the shutdown's kernel is left out.
    emb, q, a, o, head = "embed(int)", "q(int)", "a(int)", "o(int)", "head(int)"
    layer = [(q, 2_000, 0), (a, 3_000, 0), (o, 1_000, 0)]
    step = [(emb, 1_000, 0)] + layer * 3 + [(head, 5_000, 0)]
    r = report.ncu_rows(_ncu_csv([("gemm(int)", 9_000, 0)] + step * 8 + [(emb, 1_000, 0)] + layer + [("free(int)", 7_000, 0)]), 8)
    assert r["decode_steps_found"] == 8 and r["kernels_per_decode_step"] == 11
    assert r["trailing_kernels"] == 1
    assert r["kernel_us_per_decode_step"] == 24.0  # 1 + 3 * 6 + 5 us
    by = {row["kernel"]: row for row in r["rows"]}
    assert by["q"]["per_step"] == 3 and by["q"]["launches"] == 25 and by["head"]["per_step"] == 1


def test_ncu_rows_fewer_repeats_and_bad_output(report):
    a, b = "ka(int)", "kb(int)"
    r = report.ncu_rows(_ncu_csv([(a, 5, 0), (b, 7, 0), (b, 7, 0), (a, 1, 0), (b, 2, 0), (a, 1, 0), (b, 2, 0)]), 8)
    assert r["decode_steps_found"] == 2 and r["kernels_per_decode_step"] == 2
    assert r["kernel_us_per_decode_step"] == 0.0  # 3 ns rounds to 0.0 us
    assert "parse_error" in report.ncu_rows("==ERROR== the profiler could not start\n", 8)
    assert "parse_error" in report.ncu_rows('"ID","Process ID"\n"",""\n', 8)


def test_commit_names_the_wheels_stamp_when_git_is_older(runner, report, tmp_path, monkeypatch):
    # The device's copy of the tree carried an older .git than its files: the summary also
    # names the commit the wheels' stamp was written at.
    (tmp_path / "SOURCE").write_text("commit " + "b" * 40 + "\nuncommitted 0\ndate 2026-11-26T22:09:07Z\n")
    monkeypatch.setenv("VT_GPU_WHEELS", str(tmp_path))
    outs = {"rev-parse": "a" * 40, "status": " M libvt/src/cuda/gemv.cu\n M tests/dense4.py"}
    monkeypatch.setattr(runner, "_capture", lambda argv, *a, **k: outs[argv[3]])
    c = runner.commit_info()
    assert c["commit"] == "a" * 40 and c["uncommitted"] == 2
    assert c["stamp"] == {"commit": "b" * 40, "uncommitted": 0, "date": "2026-11-26T22:09:07Z"}
    outs["rev-parse"] = "b" * 40  # the same commit: nothing more to say
    assert "stamp" not in runner.commit_info()


def test_profile_brings_the_ncu_csv_back(runner, report, tmp_path):
    # The parsed summary and the raw CSV, gzipped, in OUTDIR (the device tool returns OUTDIR).
    import gzip

    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    work.mkdir()
    csv_text = _ncu_csv([("k(int)", 1_000, 0), ("k(int)", 1_000, 0), ("k(int)", 1_000, 0)])
    (work / "ncu.csv").write_text(csv_text)
    ctx = runner.Ctx(phase="profile", arg=None, out=out, work=work, jobs=1, archs="90")
    step = runner.Step("ncu", "ncu", 10, argv=["true"], parser="ncu")
    r = runner.parse_step(ctx, step)
    assert r["kernels_profiled"] == 3
    with gzip.open(out / "ncu.csv.gz", "rt") as f:
        assert f.read() == csv_text


def test_ab_env_alternates_and_reports_medians(tmp_path):
    # bench/gpu/ab_env.sh against a stand-in vt_generate that prints its setting's timing.
    work = tmp_path / "vt"
    (work / "build" / "examples").mkdir(parents=True)
    (work / "models" / "tinyllama-1.1b").mkdir(parents=True)
    gen = work / "build" / "examples" / "vt_generate"
    args = tmp_path / "args"
    gen.write_text(f'#!/bin/sh\necho "$@" >> {args}\necho "128 prompt tokens, 128 generated (length); prefill 5.0 ms, '
                   'decode 0.$((8 + ${VT_X:-0})) ms/token"\n')
    gen.chmod(0o755)
    ab = str(REPO / "bench" / "gpu" / "ab_env.sh")
    env = {**os.environ, "VT_GPU_WORK": str(work)}
    r = subprocess.run(["bash", ab, "VT_X", "0", "1", "", "128", "3"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    runs = [ln.split()[2] for ln in r.stdout.splitlines() if ln.startswith("run ")]
    assert runs == ["VT_X=0", "VT_X=1"] * 3  # alternating
    assert "VT_X=0 median 0.8 ms/token over 3 runs" in r.stdout
    assert "VT_X=1 median 0.9 ms/token over 3 runs" in r.stdout
    model = str(work / "models" / "tinyllama-1.1b")
    assert args.read_text().splitlines() == [f"--format auto {model} 128"] * 6
    # the weight format (7th argument) reaches vt_generate --format
    args.unlink()
    r = subprocess.run(["bash", ab, "VT_X", "0", "1", "", "64", "1", "int4"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert args.read_text().splitlines() == [f"--format int4 {model} 64"] * 2
    # Bad input: one line naming what is missing or wrong.
    gen.write_text("#!/bin/sh\necho no timing here\n")
    r = subprocess.run(["bash", ab, "VT_X", "0", "1"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1 and "no 'decode X ms/token' in: no timing here" in r.stderr
    r = subprocess.run(["bash", ab, "VT_X", "0", "1", str(tmp_path / "nope")], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 2 and f"no model folder {tmp_path / 'nope'}" in r.stderr
    r = subprocess.run(["bash", ab, "VT_X", "0", "1"], capture_output=True, text=True,
                       env={**os.environ, "VT_GPU_WORK": str(tmp_path / "empty")}, timeout=60)
    assert r.returncode == 2 and "run a phase first" in r.stderr
    r = subprocess.run(["bash", ab, "VT_X"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "ab_env.sh VAR A B" in r.stderr


def test_parse_ab_env(report):
    text = """run 1 VT_X=0 decode 0.91 ms/token
run 1 VT_X=1 decode 0.85 ms/token
run 2 VT_X=0 decode 0.93 ms/token
run 2 VT_X=1 decode 0.84 ms/token
VT_X=0 median 0.92 ms/token over 2 runs (0.91 0.93)
VT_X=1 median 0.845 ms/token over 2 runs (0.85 0.84)
"""
    r = report.parse_ab_env(text)
    assert r == {"variable": "VT_X", "medians": {"0": 0.92, "1": 0.845}, "pairs": 2,
                 "runs": {"0": [0.91, 0.93], "1": [0.85, 0.84]}, "ratio": 0.918}
    # cut short before the medians: the runs so far; nothing at all: nothing
    assert report.parse_ab_env(text.split("VT_X=0 median")[0]) == {"runs": 4}
    assert report.parse_ab_env("VT_X=1 run 1 failed: no GPU") == {}


def test_parse_engine_steps(report):
    text = ("[serve-bench 01:01:00] engine step: 1 rows 18.82 ms -> 53.1 tok/s\n"
            "[serve-bench 01:01:02] engine step: 16 rows 20.5 ms -> 780.4 tok/s\n"
            "[serve-bench 01:01:03] engine step: 4 rows 19.36 ms -> 206.6 tok/s\n")
    r = report.parse_engine_steps(text)
    assert r == {"rows": [{"rows": 1, "step_ms": 18.82, "tok_per_s": 53.1},
                          {"rows": 4, "step_ms": 19.36, "tok_per_s": 206.6},
                          {"rows": 16, "step_ms": 20.5, "tok_per_s": 780.4}]}
    assert report.parse_engine_steps("Traceback (most recent call last):\n") == {}


def test_serve_step_only_runs_without_servers(tmp_path, report):
    """bench/serve.py --step-only (the batch phase's command) on the CPU: the step's rows and the
    result files under --results-dir with --tag, no server started."""
    import family_models as F

    folder = tmp_path / "m"
    folder.mkdir()
    F.write_from_golden(folder, "llama-bias-hd24", F.load_golden())
    out = tmp_path / "res"
    r = subprocess.run([sys.executable, str(REPO / "bench" / "serve.py"), "--step-only", "--model", str(folder),
                        "--concurrency", "1,3", "--threads", "1", "--results-dir", str(out), "--tag", "batch-on"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = report.parse_engine_steps(r.stderr + r.stdout)["rows"]
    assert [x["rows"] for x in rows] == [1, 3] and all(x["tok_per_s"] > 0 for x in rows)
    saved = json.loads(next(out.glob("serve-*-batch-on.json")).read_text())
    assert [x["rows"] for x in saved["engine_steps"]] == [1, 3] and saved["rows"] == []
    assert saved["env"]["settings"]["step_only"] is True and saved["env"]["settings"]["device"] == "cpu"
    assert "| 3 |" in next(out.glob("serve-*-batch-on.md")).read_text()


def test_runner_summarizes_an_ab_step(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    steps = """
    runner.Step("ab_x", "an A/B", 20, argv=[py, "-c", "print('run 1 VT_X=0 decode 1.0 ms/token'); "
                "print('run 1 VT_X=1 decode 0.9 ms/token'); print('VT_X=0 median 1.0 ms/token over 1 runs (1.0)'); "
                "print('VT_X=1 median 0.9 ms/token over 1 runs (0.9)')"], log="switches.log", parser="ab_env"),
"""
    r = subprocess.run([sys.executable, "-c", _fake_phase_code(out, work, steps)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    st = {x["id"]: x for x in json.loads((out / "summary.json").read_text())["steps"]}
    assert st["ab_x"]["status"] == "pass"
    assert st["ab_x"]["detail"] == "VT_X=0: 1.0 ms/token; VT_X=1: 0.9 ms/token (=1 / =0: 0.9)"
    assert "VT_X=1: 0.9 ms/token" in (out / "summary.md").read_text()


def test_gpu_test_runs_pin_the_float_cpu_kernels(plan):
    """`pytest -m cuda` (the runner's pytest steps) compares the device with libvt's float CPU
    kernels (tests/conftest.py sets VT_ISA=generic); other runs keep the CPU's own level."""
    from conftest import cuda_run

    for expr in ("cuda", "cuda and not slow", "slow and cuda", "(cuda)"):
        assert cuda_run(expr), expr
    for expr in ("", "not cuda", "slow", "not slow and not cuda", "cudagraph"):
        assert not cuda_run(expr), expr
    steps = [c for p in plan for s in p["steps"] for c in s["commands"] if "-m pytest" in c]
    assert steps and all(" -m cuda " in c for c in steps if "tests/test_cuda" in c), steps
