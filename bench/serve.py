#!/usr/bin/env python3
"""Serving throughput and latency: ``pyvt serve`` against llama-cpp-python's OpenAI server.

Both servers run the same weights on the CPU with the same thread count: pyvt the default
model's BF16 folder (``hub.reference()``) as int8, ``llama_cpp.server`` a Q8_0 GGUF of that folder's weights (like-for-like
bytes; ``flash_attn`` (``--llamacpp-flash-attn``, on by default), ``n_batch`` 512 — its own batching settings; it runs one request at a
time, queueing the others: ``--interrupt_requests false``, since its default cancels the running
stream whenever a new request arrives). One driver (asyncio + httpx, streamed chat completions, temperature 0, ``max_tokens``
fixed) sends the same requests to each: at each concurrency C, C clients each send requests
back to back until ``--requests`` (default max(C, 16)) have been sent. Per level:

* aggregate generated tokens/s (the texts re-tokenized with the model's tokenizer, so both
  servers are counted the same way; wall time from the first request to the last answer);
* time to first token (request sent -> first streamed content), p50 and p99;
* errors (any non-200, broken stream, or stream that ends without ``[DONE]``).

The same run also times pyvt's batched decode step without the server (``--engine-step``, on
by default): in this process, the model loaded as the server loads it, C sessions after a short
prompt decoding one token each per ``vt_session_decode_batch`` call (greedy), median of 5 rounds
of 10 steps, for each client count C <= the batch limit. Its "C rows / 1 row" ratio is what the
model's compute allows; the server's ratio at C clients is below it by what serving costs on
the same cores (HTTP, JSON, streaming, the clients themselves, prefill of new prompts).
``--engine-async`` (on by default) splits that cost: the same requests at each level through
``pyvt.engine.AsyncEngine`` in this process (the scheduler, prefill, prefix cache and streaming
the server uses, without HTTP, JSON or a client process), as the row "pyvt AsyncEngine".

Goals (issue 17): at 16 concurrent clients pyvt >= 3x its own single-stream throughput and
>= 2x llama-cpp-python's server, and p99 TTFT <= 2 s. Each server runs in its own process and
is stopped between engines. Results: a table on stdout and ``bench/results/serve-<host>-<date>.{json,md}``
with the machine, versions, git commit and command.

``--step-only`` times the batched step alone (no server, no AsyncEngine), on ``--device``: the GPU
runner's ``batch`` phase runs it on a TinyLlama-shape checkpoint with ``VT_CUDA_BATCH=1`` (the
batched step, the default) and ``=0`` (the sessions one after another), ``--tag`` naming the files.

    python bench/serve.py                                   # 1, 4, 16, 64 clients, both servers
    python bench/serve.py --concurrency 1,16 --engines pyvt --no-save
    python bench/serve.py --step-only --device cuda --model FOLDER --tag batch-on
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import decode as _decode  # noqa: E402  (machine_info, versions, git_info, model preparation)

TOPICS = ["the sea", "a lighthouse keeper", "mountains in winter", "a robot learning to paint", "an old library",
          "the first day of school", "a city at night", "a garden in spring", "a long train journey",
          "a lost umbrella", "the moon landing", "a bakery at dawn", "a chess tournament", "a storm at sea",
          "a quiet village", "an astronaut's letter home"]


def log(msg: str) -> None:
    print(f"[serve-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(cmd: list[str], port: int, log_path: Path, timeout: float = 300) -> subprocess.Popen:
    import httpx

    f = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=str(log_path.parent))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited {proc.returncode}: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"server did not start in {timeout} s: {log_path.read_text()[-2000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Write a story about {TOPICS[i % len(TOPICS)]}."}]


async def one_request(client: Any, url: str, model: str, i: int, max_tokens: int) -> dict[str, Any]:
    body = {"model": model, "messages": messages(i), "max_tokens": max_tokens, "temperature": 0, "stream": True}
    t0 = time.perf_counter()
    ttft = None
    parts: list[str] = []
    done = False
    try:
        async with client.stream("POST", url, json=body) as r:
            if r.status_code != 200:
                await r.aread()
                return {"error": f"HTTP {r.status_code}: {r.text[:200]}"}
            async for line in r.aiter_lines():
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    done = True
                    break
                ev = json.loads(data)
                if "error" in ev:
                    return {"error": str(ev["error"])[:200]}
                for ch in ev.get("choices", []):
                    text = (ch.get("delta") or {}).get("content") or ""
                    if text:
                        if ttft is None:
                            ttft = time.perf_counter() - t0
                        parts.append(text)
    except Exception as e:  # a broken connection is an error row, not a dead benchmark
        return {"error": f"{type(e).__name__}: {e}"[:200]}
    if not done:  # the server ended the stream early (its text is not a complete answer)
        return {"error": f"the stream ended without [DONE] after {len(parts)} piece(s)"}
    return {"ttft": ttft if ttft is not None else time.perf_counter() - t0, "text": "".join(parts),
            "end": time.perf_counter()}


async def level(base: str, model: str, conc: int, n_requests: int, max_tokens: int) -> dict[str, Any]:
    import httpx

    url = base + "/v1/chat/completions"
    limits = httpx.Limits(max_connections=conc + 4, max_keepalive_connections=conc + 4)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600), limits=limits) as client:
        return await drive(lambda i, n: one_request(client, url, model, i, n), conc, n_requests, max_tokens)


async def drive(one: Any, conc: int, n_requests: int, max_tokens: int) -> dict[str, Any]:
    """One warm-up request, then conc clients sending one(i, max_tokens) back to back until
    n_requests are sent: the results and the wall time of all but the warm-up."""
    results: list[dict[str, Any]] = []
    counter = iter(range(n_requests))
    await one(0, 4)

    async def worker() -> None:
        for i in counter:
            results.append(await one(i, max_tokens))

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    return {"wall": time.perf_counter() - t0, "results": results}


def summarize(raw: dict[str, Any], tokenizer: Any) -> dict[str, Any]:
    ok = [r for r in raw["results"] if "error" not in r]
    errors = [r["error"] for r in raw["results"] if "error" in r]
    tokens = sum(len(tokenizer.encode(r["text"], add_special_tokens=False).ids) for r in ok)
    ttfts = sorted(r["ttft"] for r in ok)

    def pct(p: float) -> float | None:
        if not ttfts:
            return None
        k = min(len(ttfts) - 1, max(0, int(round(p / 100 * (len(ttfts) - 1)))))
        return ttfts[k]

    return {"requests": len(raw["results"]), "errors": len(errors), "error_samples": errors[:3],
            "generated_tokens": tokens, "wall_s": raw["wall"], "tok_per_s": tokens / raw["wall"] if raw["wall"] else 0,
            "ttft_p50_s": pct(50), "ttft_p99_s": pct(99),
            "ttft_mean_s": statistics.fmean(ttfts) if ttfts else None}


def goals(rows: list[dict[str, Any]], weight_format: str = "int8") -> list[str]:
    def get(engine: str, c: int) -> dict[str, Any] | None:
        return next((r for r in rows if r["engine"] == engine and r["concurrency"] == c), None)

    out = []
    p1, p16, l16 = get("pyvt", 1), get("pyvt", 16), get("llama-cpp-python", 16)
    if p1 and p16:
        ratio = p16["tok_per_s"] / p1["tok_per_s"] if p1["tok_per_s"] else 0
        out.append(f"pyvt at 16 clients / pyvt single stream = {ratio:.2f}x (goal >= 3x): "
                   f"{'met' if ratio >= 3 else 'NOT met'}")
    if p16 and l16:
        ratio = p16["tok_per_s"] / l16["tok_per_s"] if l16["tok_per_s"] else float("inf")
        if weight_format == "int8":
            out.append(f"pyvt / llama-cpp-python server at 16 clients = {ratio:.2f}x (goal >= 2x): "
                       f"{'met' if ratio >= 2 else 'NOT met'}")
        else:  # llama.cpp serves the Q8_0 GGUF whatever pyvt's format
            out.append(f"pyvt {weight_format} / llama-cpp-python Q8_0 server at 16 clients = {ratio:.2f}x "
                       f"(not like for like: the 2x goal is judged with int8)")
    if p16 and p16["ttft_p99_s"] is not None:
        out.append(f"pyvt p99 TTFT at 16 clients = {p16['ttft_p99_s']:.2f} s (goal <= 2 s): "
                   f"{'met' if p16['ttft_p99_s'] <= 2 else 'NOT met'}")
    return out


def render(rows: list[dict[str, Any]], markdown: bool) -> str:
    head = ["engine", "clients", "requests", "errors", "gen tok/s", "TTFT p50 s", "TTFT p99 s", "wall s"]
    lines = []
    if markdown:
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    else:
        lines.append("  ".join(f"{h:>12}" for h in head))
    for r in rows:
        cells = [r["engine"], str(r["concurrency"]), str(r["requests"]), str(r["errors"]), f"{r['tok_per_s']:.1f}",
                 "-" if r["ttft_p50_s"] is None else f"{r['ttft_p50_s']:.3f}",
                 "-" if r["ttft_p99_s"] is None else f"{r['ttft_p99_s']:.3f}", f"{r['wall_s']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |" if markdown else "  ".join(f"{c:>12}" for c in cells))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", default="1,4,16,64", help="client counts (default 1,4,16,64)")
    p.add_argument("--requests", type=int, default=None, help="requests per level (default max(C, 16))")
    p.add_argument("--max-tokens", type=int, default=64, help="max_tokens per request (default 64)")
    p.add_argument("--threads", type=int, default=2, help="CPU threads of each server (default 2)")
    p.add_argument("--engines", default="pyvt,llama-cpp-python", help="pyvt, llama-cpp-python (default both)")
    p.add_argument("--max-batch", type=int, default=64, help="pyvt serve --max-batch (default 64)")
    p.add_argument("--model", default=None, help="pyvt model folder (default: the default model in BF16, "
                   "pyvt.hub.reference())")
    p.add_argument("--weight-format", default="int8", help="pyvt serve --weight-format (default int8: "
                   "the bit width of llama.cpp's Q8_0)")
    p.add_argument("--gguf", default=None, help="Q8_0 GGUF for llama-cpp-python (default: exported from --model)")
    p.add_argument("--llamacpp-flash-attn", choices=["on", "off"], default="on",
                   help="llama-cpp-python's flash attention (default on; at this bench's short chats the two "
                        "settings decoded within 7%% of each other on one Xeon VM, off faster: "
                        "bench/results/decode-vm-20261128-1846-s53-short.md)")
    p.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    p.add_argument("--results-dir", default=str(HERE / "results"), help="where results go (default bench/results)")
    p.add_argument("--tag", default="", help="added to the result files' names")
    p.add_argument("--device", default="cpu", help="the device pyvt runs on: cpu (default), cuda, cuda:N, auto")
    p.add_argument("--step-only", action="store_true",
                   help="time only pyvt's batched decode step (no servers, no AsyncEngine)")
    p.add_argument("--engine-step", action=argparse.BooleanOptionalAction, default=True,
                   help="also time pyvt's batched decode step without the server (default on)")
    p.add_argument("--engine-async", action=argparse.BooleanOptionalAction, default=True,
                   help="also run each level through pyvt's AsyncEngine in this process, without HTTP "
                        "(default on)")
    return p.parse_args(argv)


async def async_engine_level(engine: Any, conc: int, n_requests: int, max_tokens: int) -> dict[str, Any]:
    """level() through an in-process AsyncEngine: the same requests, streamed, without HTTP."""

    async def one(i: int, n: int) -> dict[str, Any]:
        t0 = time.perf_counter()
        ttft = None
        parts: list[str] = []
        try:
            async for piece in engine.chat_stream(messages(i), max_new_tokens=n, temperature=0):
                if piece.text:
                    if ttft is None:
                        ttft = time.perf_counter() - t0
                    parts.append(piece.text)
        except Exception as e:
            return {"error": f"{type(e).__name__}: {e}"[:200]}
        return {"ttft": ttft if ttft is not None else time.perf_counter() - t0, "text": "".join(parts),
                "end": time.perf_counter()}

    return await drive(one, conc, n_requests, max_tokens)


def async_engine_rows(folder: Path, levels: list[int], args: argparse.Namespace, tokenizer: Any) -> list[dict[str, Any]]:
    """Each level through pyvt.engine.AsyncEngine in this process, the model loaded as the server
    loads it (same threads, format and batch limit)."""
    import pyvt
    from pyvt.engine import AsyncEngine

    model = pyvt.load_model(str(folder), threads=args.threads, weight_format=args.weight_format)
    rows: list[dict[str, Any]] = []
    try:
        engine = AsyncEngine(model, max_batch=args.max_batch)
        try:
            for c in levels:
                n = args.requests or max(c, 16)
                raw = asyncio.run(async_engine_level(engine, c, n, args.max_tokens))
                row = {"engine": "pyvt AsyncEngine", "concurrency": c, **summarize(raw, tokenizer)}
                rows.append(row)
                log(f"AsyncEngine: {c} clients {row['tok_per_s']:.1f} tok/s, errors {row['errors']}")
        finally:
            engine.close()
    finally:
        model.close()
    return rows


def engine_steps(folder: Path, levels: list[int], threads: int, weight_format: str,
                 device: str = "cpu") -> list[dict[str, Any]]:
    """pyvt's batched decode step alone, in this process: tokens/s at each number of rows."""
    import pyvt
    from pyvt import _model

    model = pyvt.load_model(str(folder), threads=threads, weight_format=weight_format, device=device)
    rows: list[dict[str, Any]] = []
    try:
        for n in [c for c in levels if 1 <= c <= _model.MAX_BATCH]:
            # (40 prompt tokens and 53 steps; a model with fewer positions gets its own)
            sessions = [model._native.new_session(min(400, model.info["max_seq_len"])) for _ in range(n)]
            try:
                for i, s in enumerate(sessions):  # distinct 40-token prompts (ids any vocabulary has)
                    s.prefill([3 + (i * 7 + j) % 47 for j in range(40)], choose=False)
                toks, opts = [5] * n, [{} for _ in range(n)]
                for _ in range(3):
                    toks, _ = _model.decode_batch(sessions, list(toks), opts)
                times = []
                for _ in range(5):
                    t = time.perf_counter()
                    for _ in range(10):
                        toks, _ = _model.decode_batch(sessions, list(toks), opts)
                    times.append((time.perf_counter() - t) / 10)
                step = statistics.median(times)
                rows.append({"rows": n, "step_ms": round(step * 1e3, 3), "tok_per_s": round(n / step, 1),
                             "step_ms_all": [round(x * 1e3, 3) for x in times]})
                log(f"engine step: {n} rows {step * 1e3:.2f} ms -> {n / step:.1f} tok/s")
            finally:
                for s in sessions:
                    s.close()
    finally:
        model.close()
    return rows


def engine_step_lines(steps: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    """The native step's C rows / 1 row ratio beside the server's C clients / 1 client (and the
    in-process AsyncEngine's)."""
    one = next((r for r in steps if r["rows"] == 1), None)
    srv1 = next((r for r in rows if r["engine"] == "pyvt" and r["concurrency"] == 1), None)
    ae1 = next((r for r in rows if r["engine"] == "pyvt AsyncEngine" and r["concurrency"] == 1), None)
    out = []
    for r in rows:
        if r["engine"] != "pyvt AsyncEngine" or r["concurrency"] == 1 or ae1 is None or not ae1["tok_per_s"]:
            continue
        srv = next((x for x in rows if x["engine"] == "pyvt" and x["concurrency"] == r["concurrency"]), None)
        line = (f"pyvt AsyncEngine in this process (no HTTP) at {r['concurrency']} clients: "
                f"{r['tok_per_s'] / ae1['tok_per_s']:.2f}x its 1 client ({r['tok_per_s']:.1f} / "
                f"{ae1['tok_per_s']:.1f} tok/s)")
        if srv is not None and r["tok_per_s"]:
            line += f"; the server delivers {srv['tok_per_s'] / r['tok_per_s']:.2f} of it"
        out.append(line)
    for r in steps:
        if one is None or r["rows"] == 1:
            continue
        line = (f"pyvt batched decode step without the server: {r['rows']} rows {r['tok_per_s']:.1f} tok/s "
                f"= {r['tok_per_s'] / one['tok_per_s']:.2f}x 1 row ({one['tok_per_s']:.1f} tok/s)")
        srv = next((x for x in rows if x["engine"] == "pyvt" and x["concurrency"] == r["rows"]), None)
        if srv is not None and srv1 is not None and srv1["tok_per_s"] > 0:
            line += f"; the server at {r['rows']} clients: {srv['tok_per_s'] / srv1['tok_per_s']:.2f}x 1 client"
        out.append(line)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    levels = [int(x) for x in args.concurrency.split(",") if x]
    engines = [] if args.step_only else [e for e in args.engines.split(",") if e]
    from pyvt import hub
    from tokenizers import Tokenizer

    folder = Path(args.model) if args.model else Path(hub.reference(quiet=True))
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json")) if not args.step_only else None
    work = Path(os.environ.get("PYVT_CACHE", Path.home() / ".cache" / "pyvt")) / "bench"
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    env = {"machine": _decode.machine_info("cuda" if args.device.startswith("cuda") else "cpu"), "versions": _decode.versions(), "git": _decode.git_info(),
           "loadavg_start": _decode.loadavg(), "busy_processes_start": _decode.busy_processes(),
           "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
           "settings": {"levels": levels, "max_tokens": args.max_tokens, "threads": args.threads,
                        "pyvt_max_batch": args.max_batch, "requests": args.requests,
                        "pyvt_weight_format": args.weight_format, "device": args.device,
                        "vt_cuda_batch": os.environ.get("VT_CUDA_BATCH"), "step_only": args.step_only,
                        "llamacpp_flash_attn": args.llamacpp_flash_attn}}
    for engine in engines:
        port = free_port()
        logp = work / f"serve-bench-{engine}.log"
        if engine == "pyvt":
            cmd = [sys.executable, "-m", "pyvt", "serve", "-m", str(folder), "--port", str(port), "--threads",
                   str(args.threads), "--max-batch", str(args.max_batch), "--log-level", "warning",
                   "--weight-format", args.weight_format, "--device", args.device,
                   "--served-model-name", "m"]
        elif engine == "llama-cpp-python":
            gguf = Path(args.gguf) if args.gguf else _decode.export_q8_0(
                folder, work / "smollm2-135m.Q8_0.gguf", _decode.MODELS["smollm2-135m"]["pre"])
            cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "m",
                   "--port", str(port), "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads),
                   "--n_ctx", "8192", "--flash_attn", "true" if args.llamacpp_flash_attn == "on" else "false",
                   "--n_batch", "512", "--verbose", "false",
                   # Its default (true) cancels the running request's stream when a new one
                   # arrives: with C > 1 clients every answer but the last would be cut short.
                   "--interrupt_requests", "false"]
        else:
            raise SystemExit(f"unknown engine {engine!r} (pyvt, llama-cpp-python)")
        log(f"starting {engine}: {' '.join(cmd)}")
        proc = start_server(cmd, port, logp)
        try:
            for c in levels:
                n = args.requests or max(c, 16)
                log(f"{engine}: {c} clients, {n} requests")
                raw = asyncio.run(level(f"http://127.0.0.1:{port}", "m", c, n, args.max_tokens))
                row = {"engine": engine, "concurrency": c, **summarize(raw, tokenizer)}
                rows.append(row)
                log(f"  {row['tok_per_s']:.1f} tok/s, TTFT p50 {row['ttft_p50_s']}, p99 {row['ttft_p99_s']}, "
                    f"errors {row['errors']}")
        finally:
            stop_server(proc)
    steps = (engine_steps(folder, levels, args.threads, args.weight_format, args.device)
             if args.step_only or (args.engine_step and "pyvt" in engines) else [])
    if args.engine_async and "pyvt" in engines and not args.step_only:
        rows += async_engine_rows(folder, levels, args, tokenizer)
    env["loadavg_end"] = _decode.loadavg()
    g = goals(rows, args.weight_format) + engine_step_lines(steps, rows)
    if rows:
        print(render(rows, False))
    for line in g:
        print(line)
    if not args.no_save:
        out = Path(args.results_dir)
        out.mkdir(parents=True, exist_ok=True)
        stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
        host = socket.gethostname().split(".")[0]
        base = out / f"serve-{host}-{stamp}{'-' + args.tag if args.tag else ''}"
        base.with_suffix(".json").write_text(json.dumps({"env": env, "rows": rows, "engine_steps": steps, "goals": g},
                                                        indent=2) + "\n")
        md = [f"# Serving benchmark {stamp}", "", f"Command: `{env['command']}`", "",
              f"Machine: {env['machine']}", "", f"Versions: {env['versions']}", "", f"Commit: {env['git']}", "",
              f"Load average at start / end: {env['loadavg_start']} / {env['loadavg_end']}", "",
              *([render(rows, True), ""] if rows else []), *[f"* {x}" for x in g], "",
              *(["| rows | step ms (median of 5) | tok/s |", "|---:|---:|---:|"]
                + [f"| {r['rows']} | {r['step_ms']} | {r['tok_per_s']} |" for r in steps] + [""] if steps else [])]
        base.with_suffix(".md").write_text("\n".join(md))
        log(f"saved {base}.json / .md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
