"""pyvt's OpenAI server under Ray Serve: a local Ray cluster, two replicas, the official
``openai`` client. Skipped without ``ray[serve]`` (not a test dependency: it is large)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("ray.serve")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_build_app_checks_its_options():
    from pyvt.ray_serve import app_builder, build_app

    with pytest.raises(ValueError, match="unknown option.*max_batchh"):
        build_app("m", max_batchh=3)
    with pytest.raises(ValueError, match="num_replicas must be a positive integer"):
        build_app("m", num_replicas=0)
    with pytest.raises(ValueError, match="threads must be an integer, got 'two'"):
        app_builder({"model": "m", "threads": "two"})


@pytest.mark.slow
def test_two_replicas_on_a_local_ray_cluster(default_model_dir, tmp_path):
    port = _free_port()
    # Ray runs in its own process: its workers, signals and atexit hooks stay out of pytest's.
    script = textwrap.dedent(f"""
        import sys, time, ray
        from ray import serve
        from pyvt.ray_serve import build_app
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        serve.start(http_options={{"host": "127.0.0.1", "port": {port}}})
        serve.run(build_app({str(default_model_dir)!r}, num_replicas=2, threads=1, model_name="smol",
                            max_batch=8), route_prefix="/", name="pyvt")
        st = serve.status().applications["pyvt"]
        print("replicas", st.deployments["pyvt"].replica_states, flush=True)
        print("READY", flush=True)
        sys.stdin.read()   # until the test closes stdin
        serve.shutdown()
        ray.shutdown()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    lines = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.strip() == "READY":
                break
        assert lines and lines[-1].strip() == "READY", "".join(lines)[-3000:]
        replicas = next(x for x in lines if x.startswith("replicas"))
        assert "'RUNNING': 2" in replicas, replicas
        base = f"http://127.0.0.1:{port}"
        with openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=120) as c:
            assert [m.id for m in c.models.list().data] == ["smol"]
            msgs = [{"role": "user", "content": "Name three colours."}]
            full = c.chat.completions.create(model="smol", messages=msgs, max_tokens=16, temperature=0)
            streamed = "".join(ch.choices[0].delta.content or "" for ch in c.chat.completions.create(
                model="smol", messages=msgs, max_tokens=16, temperature=0, stream=True) if ch.choices)
            assert streamed == full.choices[0].message.content != ""
            # Enough concurrent requests that both replicas serve some: every one succeeds.
            import concurrent.futures as cf

            def one(i):
                return c.completions.create(model="smol", prompt=f"Item {i}:", max_tokens=8, temperature=0)

            with cf.ThreadPoolExecutor(8) as ex:
                outs = list(ex.map(one, range(16)))
            assert all(o.choices[0].finish_reason in ("stop", "length") for o in outs)
        r = httpx.post(base + "/v1/chat/completions", json={"messages": [], "model": "smol"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "messages"
    finally:
        try:
            proc.stdin.close()
            proc.wait(120)
        except Exception:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        os.environ.pop("RAY_ADDRESS", None)
