#!/usr/bin/env python3
"""Speculative decoding by prompt lookup, side by side: pyvt's ``prompt_lookup_num_tokens``
against plain decoding, and llama.cpp (llama-cpp-python's ``LlamaPromptLookupDecoding``, its
prompt-lookup draft model) against its own plain decoding, on the same chat prompts.

    python bench/speculative.py [--rounds 3] [--repeat 3] [--gen-len 128] [--tag TAG]

The default model on both engines: pyvt loads the shipped Q4_1 GGUF as ``int4-min`` (the
same blocks), llama.cpp runs that file. Each prompt is the model's chat template applied
(by pyvt) to one user message; both engines get the same token ids, decode greedily and
stop at EOS or after ``--gen-len`` tokens. Tasks range from copying (repeat a paragraph,
rename a variable in code) to free writing (a poem, an explanation), where drafts rarely
match. Decode speed = (generated - 1) tokens over the time after the first token; each engine
runs in its own process per round (rounds alternate the engines), each task ``--repeat``
times per mode, plain and lookup alternating; the median per round, then the median over the
rounds with the range. Writes bench/results/speculative-<host>-<time>.{md,json} with machine,
versions and commit.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import decode as _decode  # noqa: E402

CODE = '''def fibonacci(n):
    """Return the n-th Fibonacci number."""
    if n < 2:
        return n
    a, b = 0, 1
    for _ in range(n - 1):
        a, b = b, a + b
    return b


def factorial(n):
    """Return n factorial."""
    result = 1
    for i in range(2, n + 1):
        result *= i
    return result
'''
PARAGRAPH = ("The Industrial Revolution began in Great Britain in the late 18th century and spread to "
             "continental Europe and North America. It marked a shift from hand production methods to "
             "machines, new chemical manufacturing and iron production processes, the increasing use of "
             "steam power and water power, and the rise of the mechanized factory system.")
TASKS = {
    "code-rename": "Rewrite this Python code, renaming the variable `result` to `product` and changing "
                   "nothing else:\n\n" + CODE,
    "repeat": "Repeat the following text exactly:\n\n" + PARAGRAPH,
    "quote": "Answer with a quotation from the text: what did the Industrial Revolution mark?\n\n" + PARAGRAPH,
    "poem": "Write a short poem about the sea.",
    "explain": "What is the capital of France? Explain its history in detail.",
    "list": "List ten fruits, one per line, each with its colour.",
}
LOOKUP_TOKENS = 5      # pyvt: prompt_lookup_num_tokens
LLAMACPP_PRED = 10     # llama-cpp-python's LlamaPromptLookupDecoding defaults: num_pred_tokens 10,
LLAMACPP_NGRAM = 2     # max_ngram_size 2


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


# ---- workers (one process each) ------------------------------------------------------------------

def worker_pyvt(spec: dict[str, Any]) -> dict[str, Any]:
    import pyvt

    model = pyvt.load_model(spec["gguf"], threads=spec["threads"], progress=False)
    out: dict[str, Any] = {"info": {"weight_format": model.info["weight_format"]}, "tasks": {}}
    opts = pyvt.GenerateOpts(max_new_tokens=spec["gen_len"])
    pyvt.generate(model, spec["ids"]["poem"][:16], opts.replace(max_new_tokens=8))  # warm up
    for name, ids in spec["ids"].items():
        rec: dict[str, Any] = {"plain": [], "lookup": []}
        for _ in range(spec["repeat"]):
            for mode, k in (("plain", 0), ("lookup", spec["lookup_tokens"])):
                r = pyvt.generate(model, ids, opts.replace(prompt_lookup_num_tokens=k))
                rec[mode].append(1e3 / r.ms_per_token if r.ms_per_token > 0 else None)
                rec[f"{mode}_tokens"] = list(r.tokens)
                if k:
                    rec["drafted"], rec["accepted"] = r.draft_tokens, r.accepted_draft_tokens
        out["tasks"][name] = rec
    model.close()
    return out


def worker_llamacpp(spec: dict[str, Any]) -> dict[str, Any]:
    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    n_ctx = max(len(v) for v in spec["ids"].values()) + spec["gen_len"] + 16
    common = dict(model_path=spec["gguf"], n_ctx=n_ctx, n_threads=spec["threads"],
                  n_threads_batch=spec["threads"], n_gpu_layers=0, verbose=False, flash_attn=True)
    plain = llama_cpp.Llama(**common)
    # The draft model's verify needs every position's logits (logits_all), as its docs say.
    lookup = llama_cpp.Llama(**common, logits_all=True,
                             draft_model=LlamaPromptLookupDecoding(max_ngram_size=spec["llamacpp_ngram"],
                                                                   num_pred_tokens=spec["llamacpp_pred"]))
    eos = plain.token_eos()

    def run(llm: Any, ids: list[int]) -> tuple[float | None, list[int]]:
        llm.reset()
        toks: list[int] = []
        t_first = t_last = 0.0
        for tok in llm.generate(ids, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0, reset=True):
            now = time.perf_counter()
            if not toks:
                t_first = now
            t_last = now
            toks.append(int(tok))
            if tok == eos or len(toks) >= spec["gen_len"]:
                break
        rate = (len(toks) - 1) / (t_last - t_first) if len(toks) > 1 and t_last > t_first else None
        return rate, toks

    run(plain, spec["ids"]["poem"][:16])
    run(lookup, spec["ids"]["poem"][:16])
    out: dict[str, Any] = {"info": {"llama_cpp_python": llama_cpp.__version__, "flash_attn": True}, "tasks": {}}
    for name, ids in spec["ids"].items():
        rec: dict[str, Any] = {"plain": [], "lookup": []}
        for _ in range(spec["repeat"]):
            for mode, llm in (("plain", plain), ("lookup", lookup)):
                rate, toks = run(llm, ids)
                rec[mode].append(rate)
                rec[f"{mode}_tokens"] = toks
        out["tasks"][name] = rec
    return out


WORKERS = {"pyvt": worker_pyvt, "llama.cpp": worker_llamacpp}


def _run_worker(engine: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        sp = Path(d) / "spec.json"
        sp.write_text(json.dumps(dict(spec, engine=engine)))
        p = subprocess.run([sys.executable, __file__, "--worker", str(sp)], capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            return {"error": (p.stderr or p.stdout)[-2000:]}
        return json.loads(p.stdout.strip().splitlines()[-1])


# ---- main ------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="runs per task and mode in each round (median)")
    ap.add_argument("--gen-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lookup-tokens", type=int, default=LOOKUP_TOKENS)
    ap.add_argument("--engines", default="pyvt,llama.cpp")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--gguf", default=None, help="the Q4_1 GGUF (default: the shipped one, cached)")
    ap.add_argument("--tag", default="")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        spec = json.loads(Path(a.worker).read_text())
        print(json.dumps(WORKERS[spec["engine"]](spec)))
        return 0

    import pyvt
    from pyvt.chat import _chat_prompt

    engines = [e for e in a.engines.split(",") if e]
    for e in engines:
        if e not in WORKERS:
            ap.error(f"--engines: unknown engine {e!r} (pyvt, llama.cpp)")
    tasks = [t for t in a.tasks.split(",") if t]
    for t in tasks:
        if t not in TASKS:
            ap.error(f"--tasks: unknown task {t!r} ({', '.join(TASKS)})")
    gguf = _decode.smollm2_q4_1(Path.home() / ".cache" / "pyvt" / "bench", a.gguf)
    with pyvt.load_model(gguf, threads=a.threads, progress=False) as m:
        ids = {t: [int(x) for x in _chat_prompt(m, [{"role": "user", "content": TASKS[t]}], None)]
               for t in tasks}
    spec = dict(gguf=str(gguf), ids=ids, gen_len=a.gen_len, threads=a.threads, repeat=a.repeat,
                lookup_tokens=a.lookup_tokens, llamacpp_pred=LLAMACPP_PRED, llamacpp_ngram=LLAMACPP_NGRAM)
    started = _dt.datetime.now()
    meta = {"started": started.isoformat(timespec="seconds"), "machine": _decode.machine_info("cpu"),
            "versions": _decode.versions(), "git": _decode.git_info(), "loadavg_start": _decode.loadavg(),
            "args": vars(a), "lookup": {"pyvt_prompt_lookup_num_tokens": a.lookup_tokens,
                                        "llamacpp_num_pred_tokens": LLAMACPP_PRED,
                                        "llamacpp_max_ngram_size": LLAMACPP_NGRAM}}
    rounds: list[dict[str, Any]] = []
    for r in range(a.rounds):
        order = engines if r % 2 == 0 else engines[::-1]
        res = {}
        for e in order:
            _decode.log(f"round {r + 1}/{a.rounds}: {e}")
            res[e] = _run_worker(e, spec, a.timeout)
            if "error" in res[e]:
                _decode.log(f"{e} failed: {res[e]['error']}")
        rounds.append(res)

    # per engine, task, mode: median over a round's repeats, then median and range over rounds
    def per_round(e: str, t: str, mode: str) -> list[float]:
        vals = []
        for res in rounds:
            rec = res.get(e, {}).get("tasks", {}).get(t)
            if rec:
                xs = [x for x in rec[mode] if x]
                if xs:
                    vals.append(_median(xs))
        return vals

    summary: dict[str, Any] = {}
    lines = [f"# Speculative decoding by prompt lookup — {socket.gethostname()} {started:%Y-%m-%d %H:%M}", "",
             f"* machine: {meta['machine'].get('cpu')}, {a.threads} threads; commit {meta['git'].get('commit')}"
             f" (dirty: {meta['git'].get('dirty')}); pyvt {meta['versions'].get('pyvt')}, llama-cpp-python "
             f"{meta['versions'].get('llama_cpp')}",
             f"* the default model (shipped Q4_1 GGUF; pyvt as int4-min), greedy, up to {a.gen_len} tokens, stop at "
             f"EOS; {a.rounds} rounds (engines alternate, one process each), {a.repeat} runs per task and mode per "
             f"round; pyvt `prompt_lookup_num_tokens={a.lookup_tokens}`, llama.cpp `LlamaPromptLookupDecoding("
             f"num_pred_tokens={LLAMACPP_PRED}, max_ngram_size={LLAMACPP_NGRAM})` (its Python loop, logits_all)",
             f"* load average at the start: {meta['loadavg_start']}", "",
             "Decode tok/s: median over rounds (range); speedup = lookup / plain of the same engine, per round.", "",
             "| task | engine | plain | lookup | speedup | accepted / drafted (pyvt, last run) | tokens (plain) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for t in tasks:
        for e in engines:
            p, q = per_round(e, t, "plain"), per_round(e, t, "lookup")
            if not p or not q:
                lines.append(f"| {t} | {e} | failed | | | | |")
                continue
            sp = [y / x for x, y in zip(p, q)]
            last = rounds[-1].get(e, {}).get("tasks", {}).get(t, {})
            acc = f"{last.get('accepted')} / {last.get('drafted')}" if "drafted" in last else ""
            summary.setdefault(t, {})[e] = {"plain": p, "lookup": q, "speedup": sp}
            lines.append(f"| {t} | {e} | {_median(p):.1f} ({min(p):.1f}-{max(p):.1f}) | {_median(q):.1f} "
                         f"({min(q):.1f}-{max(q):.1f}) | **{_median(sp):.2f}×** ({min(sp):.2f}-{max(sp):.2f}) | "
                         f"{acc} | {len(last.get('plain_tokens', []))} |")
        same = [rounds[-1].get("pyvt", {}).get("tasks", {}).get(t, {}).get(k) for k in ("plain_tokens", "lookup_tokens")]
        if all(same):
            lines.append(f"| {t} | pyvt: lookup's tokens = plain's | {same[0] == same[1]} | | | | |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_save:
        stamp = f"{started:%Y%m%dT%H%M%S}" + (f"-{a.tag}" if a.tag else "")
        out = HERE / "results" / f"speculative-{socket.gethostname().split('.')[0]}-{stamp}"
        out.with_suffix(".md").write_text(text)
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, "summary": summary, "rounds": rounds},
                                                       indent=1, default=str))
        print(f"wrote {out}.md and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
