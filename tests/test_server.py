"""``pyvt serve`` against real clients: the official ``openai`` package and raw HTTP (httpx),
talking to live server processes on 127.0.0.1 serving the default model."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")

KEY = "sk-test-123"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, model_dir, tmp_path, *extra: str):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(tmp_path / f"server-{self.port}.log", "w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pyvt", "serve", "-m", str(model_dir), "--port", str(self.port), "--threads", "2",
             "--served-model-name", "smol", "--log-level", "warning", *extra],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=tmp_path)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pyvt serve exited {self.proc.returncode}: {self.output()}")
            try:
                if httpx.get(self.base + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"pyvt serve did not start: {self.output()}")

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-3000:]

    def client(self, key: str = KEY):
        return openai.OpenAI(base_url=self.base + "/v1", api_key=key, max_retries=0, timeout=120)

    def metric(self, name: str) -> float:
        text = httpx.get(self.base + "/metrics", timeout=10).text
        m = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+-]+)$", text, re.M)
        assert m, f"{name} not in /metrics"
        return float(m.group(1))

    def rss_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def server(default_model_dir, tmp_path_factory):
    s = Server(default_model_dir, tmp_path_factory.mktemp("serve"), "--api-key", KEY, "--max-batch", "16")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(server):
    c = server.client()
    yield c
    c.close()


def _chat(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Give me {i + 2} short tips for learning to cook."}]


def test_models_health_and_auth(server, client):
    c = client
    assert [m.id for m in c.models.list().data] == ["smol"]
    assert httpx.get(server.base + "/health").json() == {"status": "ok"}
    with pytest.raises(openai.AuthenticationError) as ei, server.client("wrong") as bad:
        bad.models.list()
    assert ei.value.status_code == 401 and ei.value.body["code"] == "invalid_api_key"
    r = httpx.post(server.base + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 401 and "API key" in r.json()["error"]["message"]


def test_chat_streamed_equals_non_streamed(server, client):
    c = client
    msgs = _chat(1)
    full = c.chat.completions.create(model="smol", messages=msgs, max_tokens=40, temperature=0)
    choice = full.choices[0]
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert full.usage.completion_tokens > 0 and full.usage.total_tokens == full.usage.prompt_tokens + \
        full.usage.completion_tokens
    parts, finish, usage = [], None, None
    for chunk in c.chat.completions.create(model="smol", messages=msgs, max_tokens=40, temperature=0, stream=True,
                                           stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage = chunk.usage
        for ch in chunk.choices:
            parts.append(ch.delta.content or "")
            finish = ch.finish_reason or finish
    assert "".join(parts) == choice.message.content
    assert finish == choice.finish_reason
    assert usage is not None and usage.completion_tokens == full.usage.completion_tokens


def test_completions_streamed_and_not(server, client):
    c = client
    r = c.completions.create(model="smol", prompt="The capital of France is", max_tokens=8, temperature=0)
    text = r.choices[0].text
    assert text and r.usage.prompt_tokens > 0
    streamed = "".join(ch.choices[0].text for ch in c.completions.create(
        model="smol", prompt="The capital of France is", max_tokens=8, temperature=0, stream=True) if ch.choices)
    assert streamed == text
    # A list of prompts and n > 1: one choice per (prompt, n), indexed in that order.
    r = c.completions.create(model="smol", prompt=["Hello", "Goodbye"], max_tokens=4, temperature=0, n=2)
    assert [ch.index for ch in r.choices] == [0, 1, 2, 3]
    assert r.choices[0].text == r.choices[1].text  # greedy: the same
    # Token-id prompts and logprobs.
    r = c.completions.create(model="smol", prompt=[1, 2, 3], max_tokens=3, temperature=0, logprobs=2)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == 3 and all(len(t) <= 2 for t in lp.top_logprobs)
    assert all(v <= 0 for v in lp.token_logprobs)


def test_chat_logprobs_and_seeded_sampling(server, client):
    c = client
    msgs = _chat(2)
    r = c.chat.completions.create(model="smol", messages=msgs, max_tokens=5, temperature=0, logprobs=True,
                                  top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    assert all(len(e.top_logprobs) == 3 and e.logprob <= 0 for e in content)
    a = c.chat.completions.create(model="smol", messages=msgs, max_tokens=12, temperature=1.0, seed=7)
    b = c.chat.completions.create(model="smol", messages=msgs, max_tokens=12, temperature=1.0, seed=7)
    assert a.choices[0].message.content == b.choices[0].message.content


def test_sixteen_concurrent_streams_equal_their_single_outputs(server, client):
    c = client
    singles = [c.chat.completions.create(model="smol", messages=_chat(i), max_tokens=32, temperature=0)
               .choices[0].message.content for i in range(16)]

    def stream(i: int) -> str:
        out = []
        with server.client() as cl:
            for chunk in cl.chat.completions.create(model="smol", messages=_chat(i), max_tokens=32, temperature=0,
                                                    stream=True):
                for ch in chunk.choices:
                    out.append(ch.delta.content or "")
        return "".join(out)

    with cf.ThreadPoolExecutor(16) as ex:
        streamed = list(ex.map(stream, range(16)))
    assert streamed == singles
    assert server.metric("pyvt_running_requests") == 0


def test_a_client_that_drops_mid_stream_frees_its_slot(server):
    before = server.metric("pyvt_engine_requests_cancelled_total")
    body = {"model": "smol", "messages": _chat(3), "max_tokens": 2000, "temperature": 0, "stream": True,
            "ignore_eos": True}
    with httpx.stream("POST", server.base + "/v1/chat/completions", json=body,
                      headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as r:
        assert r.status_code == 200
        n = 0
        for line in r.iter_lines():
            if line.startswith("data: "):
                n += 1
                if n == 4:
                    break
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if server.metric("pyvt_running_requests") == 0 and \
                server.metric("pyvt_engine_requests_cancelled_total") > before:
            break
        time.sleep(0.05)
    assert server.metric("pyvt_running_requests") == 0
    assert server.metric("pyvt_engine_requests_cancelled_total") == before + 1


@pytest.mark.parametrize("body, param", [
    ({"messages": []}, "messages"),
    ({}, "messages"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": 5}, "temperature"),
    ({"messages": [{"role": "user", "content": "x"}], "top_p": 0}, "top_p"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 100}, "n"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 10**7}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"1": 5}}, "logit_bias"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}, "tools"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3}, "top_logprobs"),
    ({"messages": [{"role": "user", "content": "x"}], "stop": ["a"] * 40}, "stop"),
    ({"messages": [{"role": "user", "content": "x"}], "seed": -4}, "seed"),
    ({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "yaml"}}, "response_format.type"),
])
def test_bad_chat_requests_get_400_naming_the_field(server, body, param):
    r = httpx.post(server.base + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param
    assert err["message"]


def test_bad_completion_requests_and_unknown_fields(server):
    h = {"Authorization": f"Bearer {KEY}"}
    for body, param in (({"prompt": [10**9]}, "prompt"), ({"prompt": ""}, "prompt"),
                        ({"prompt": "x", "suffix": "y"}, "suffix"), ({"prompt": "x", "logprobs": 9}, "logprobs")):
        r = httpx.post(server.base + "/v1/completions", json=body, headers=h)
        assert r.status_code == 400 and r.json()["error"]["param"] == param, (body, r.text)
    r = httpx.post(server.base + "/v1/completions", content=b"{not json", headers=h)
    assert r.status_code == 400 and "JSON object" in r.json()["error"]["message"]
    r = httpx.post(server.base + "/v1/completions", content=b"{not json",
                   headers={**h, "Content-Type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = httpx.post(server.base + "/v1/completions", headers=h,
                   json={"prompt": "Hi", "max_tokens": 2, "some_future_field": {"x": 1}, "user": "u1"})
    assert r.status_code == 200 and r.json()["object"] == "text_completion"
    r = httpx.post(server.base + "/v1/completions", headers=h, json={"prompt": "Hi", "model": "gpt-9"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"


def test_response_format_json_schema_and_json_object(server, client):
    pytest.importorskip("llguidance")
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 150}},
              "required": ["name", "age"], "additionalProperties": False}
    msgs = [{"role": "user", "content": "Invent a person. Reply with JSON."}]
    for stream in (False, True):
        for temperature in (0, 1.0):
            kw = dict(model="smol", messages=msgs, max_tokens=60, temperature=temperature, seed=3,
                      response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema}})
            if stream:
                text = "".join(ch.choices[0].delta.content or "" for ch in client.chat.completions.create(
                    stream=True, **kw) if ch.choices)
            else:
                r = client.chat.completions.create(**kw)
                text = r.choices[0].message.content
                assert r.choices[0].finish_reason == "stop"
            doc = json.loads(text)
            assert set(doc) == {"name", "age"} and isinstance(doc["name"], str) and len(doc["name"]) <= 20
            assert isinstance(doc["age"], int) and 0 <= doc["age"] <= 150
    r = client.chat.completions.create(model="smol", messages=msgs, max_tokens=60, temperature=0,
                                       response_format={"type": "json_object"})
    assert isinstance(json.loads(r.choices[0].message.content), dict)
    h = {"Authorization": f"Bearer {KEY}"}
    for rf in ({"type": "json_schema"}, {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 5}}}):
        r = httpx.post(server.base + "/v1/chat/completions", headers=h,
                       json={"model": "smol", "messages": msgs, "response_format": rf})
        assert r.status_code == 400 and r.json()["error"]["param"].startswith("response_format"), r.text


def test_metrics(server):
    text = httpx.get(server.base + "/metrics").text
    for name in ("pyvt_requests_total", "pyvt_queue_depth", "pyvt_running_requests", "pyvt_prompt_tokens_total",
                 "pyvt_generation_tokens_total", "pyvt_time_to_first_token_seconds_bucket",
                 "pyvt_inter_token_latency_seconds_bucket", "pyvt_prefix_cache_hit_rate",
                 "pyvt_speculative_draft_tokens_total", "pyvt_speculative_accepted_tokens_total"):
        assert name in text, name
    assert server.metric("pyvt_generation_tokens_total") > 0
    # Requests are counted by path and status, refused ones (401) included; /health is not.
    counted = dict(re.findall(r'^pyvt_requests_total\{([^}]*)\} ([0-9.e+-]+)$', text, re.M))
    assert float(counted['endpoint="/v1/models",status="200"']) >= 1, counted
    assert float(counted['endpoint="/v1/chat/completions",status="401"']) >= 1, counted
    assert not any("/health" in k for k in counted), counted


def test_prompt_lookup_server_answers_as_without(default_model_dir, tmp_path):
    """pyvt serve --prompt-lookup: a lone request's reply is the one a plain server gives (the
    model's own greedy choices), and the drafted / confirmed counters move."""
    msgs = [{"role": "user", "content": "Repeat this exactly: one two three four five six seven eight nine ten"}]
    replies = {}
    for extra in ((), ("--prompt-lookup", "5")):
        s = Server(default_model_dir, tmp_path, *extra)
        try:
            r = s.client().chat.completions.create(model="smol", messages=msgs, max_tokens=40, temperature=0)
            replies[extra] = r.choices[0].message.content
            if extra:
                assert s.metric("pyvt_speculative_accepted_tokens_total") > 0
                assert s.metric("pyvt_speculative_draft_tokens_total") >= \
                    s.metric("pyvt_speculative_accepted_tokens_total")
        finally:
            assert s.stop() == 0
    assert replies[()] == replies[("--prompt-lookup", "5")] and replies[()]

def test_full_queue_answers_429_then_recovers(default_model_dir, tmp_path):
    s = Server(default_model_dir, tmp_path, "--max-batch", "1", "--max-queue", "1")
    try:
        body = {"model": "smol", "prompt": "Once upon a time", "max_tokens": 60, "ignore_eos": True}

        def post(_):
            return httpx.post(s.base + "/v1/completions", json=body, timeout=120)

        with cf.ThreadPoolExecutor(6) as ex:
            rs = list(ex.map(post, range(6)))
        codes = sorted(r.status_code for r in rs)
        assert codes.count(200) >= 2 and 429 in codes, codes
        full = next(r for r in rs if r.status_code == 429)
        assert int(full.headers["Retry-After"]) >= 1 and full.json()["error"]["code"] == "queue_full"
        assert post(0).status_code == 200  # recovered
        # More sequences than the server can ever hold at once: 400, not an endless 429.
        r = httpx.post(s.base + "/v1/completions", json={**body, "n": 3}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] == "n"
    finally:
        assert s.stop() == 0


def test_sigterm_drains_a_stream_in_flight(default_model_dir, tmp_path):
    s = Server(default_model_dir, tmp_path)
    body = {"model": "smol", "prompt": "Once upon a time", "max_tokens": 40, "ignore_eos": True, "stream": True,
            "temperature": 0}
    events = []
    with httpx.stream("POST", s.base + "/v1/completions", json=body, timeout=60) as r:
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:])
                if len(events) == 2:
                    s.proc.send_signal(signal.SIGTERM)
    assert s.stop() == 0
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert sum(1 for c in chunks if c["choices"][0]["text"]) >= 30  # it ran to the end


@pytest.mark.slow
def test_soak_mixed_load_no_errors_flat_memory(default_model_dir, tmp_path):
    seconds = float(os.environ.get("PYVT_SOAK_SECONDS", "60"))
    s = Server(default_model_dir, tmp_path, "--max-batch", "8", "--prefix-cache-mb", "32")
    try:
        def one(i: int) -> str:
            with s.client() as c:
                return one_with(c, i)

        def one_with(c, i: int) -> str:
            kind = i % 4
            if kind == 0:
                r = c.chat.completions.create(model="smol", messages=_chat(i % 5), max_tokens=16, temperature=0.7,
                                              seed=i)
                return r.choices[0].finish_reason
            if kind == 1:
                out = [ch for ch in c.chat.completions.create(model="smol", messages=_chat(i % 7), max_tokens=16,
                                                              stream=True)]
                return out[-1].choices[0].finish_reason
            if kind == 2:
                return c.completions.create(model="smol", prompt=f"Item {i}:", max_tokens=12).choices[0].finish_reason
            with httpx.stream("POST", s.base + "/v1/completions", timeout=60,
                              json={"prompt": "Story:", "max_tokens": 200, "stream": True}) as r:
                for k, _ in enumerate(r.iter_lines()):
                    if k > 6:
                        break
            return "dropped"

        def run_for(t: float) -> list[str]:
            out: list[str] = []
            end = time.monotonic() + t
            with cf.ThreadPoolExecutor(6) as ex:
                i = 0
                while time.monotonic() < end:
                    out += list(ex.map(one, range(i, i + 12)))
                    i += 12
            return out

        run_for(min(10.0, seconds / 4))      # warm-up: allocator and prefix cache fill
        rss0 = s.rss_kb()
        out = run_for(seconds)
        rss1 = s.rss_kb()
        assert len(out) > 24 and all(x in ("stop", "length", "dropped") for x in out)
        assert rss1 - rss0 < 64 * 1024, f"RSS grew {rss0} -> {rss1} kB"
        deadline = time.monotonic() + 5
        while s.metric("pyvt_running_requests") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert s.metric("pyvt_running_requests") == 0
    finally:
        assert s.stop() == 0
