#!/usr/bin/env python3
"""Grammar engines for structured output (issue 17): llguidance vs xgrammar on the default
model's vocabulary (SmolLM2, 49152 tokens), to choose the one pyvt.structured uses.

Both engines get the same JSON layout (json.dumps': ", " and ": ", no free whitespace; for
xgrammar strict_mode=False so that additionalProperties means what the schema says, as in
llguidance) and the same stop token. Measured, per engine:

1. setup: building the tokenizer info (once per model), compiling each schema (once per
   schema; per request without a cache);
2. per-token overhead: for each schema, a valid document (json.dumps of an instance) is
   tokenized with the model's tokenizer and fed token by token; each step is timed as the
   sampler pays it: fill the token bitmask, apply it to a float32 [49152] logits row (-inf on
   forbidden tokens, numpy: the same code for both engines, pyvt.structured's), consume the
   token. ``--reps`` fresh matchers per schema; every step of every rep is one sample;
   reported: median, p10 and p90 (µs), and the fill / apply / consume split (medians);
3. correctness: the two engines' masks compared at every step of the valid documents; and for each schema, valid and invalid documents (the validity decided by
   ``jsonschema``); an engine is right on a document when it accepts every token and then
   allows EOS exactly when the document is valid;
4. (``--model``) pyvt end to end with pyvt.structured (llguidance): generate's ms/token on
   the default model with and without a schema, same prompt, greedy, alternating runs.

    python bench/grammar.py [--reps 20] [--model] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

VOCAB = 49152
LAYOUT = (", ", ": ")

SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 40},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "role": {"enum": ["admin", "user", "guest"]},
            "active": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
            "home": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                     "required": ["city"], "additionalProperties": False},
        },
        "required": ["name", "age", "role", "active", "tags", "home"],
        "additionalProperties": False,
    },
    "order": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
            "items": {"type": "array", "minItems": 1, "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1},
                               "price": {"type": "number"}},
                "required": ["sku", "qty", "price"], "additionalProperties": False}},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["id", "items", "note"],
        "additionalProperties": False,
    },
    "any_object": {"type": "object"},
}

VALID = {
    "person": [{"name": "Ann Smith", "age": 31, "role": "admin", "active": True, "tags": ["x", "y z"],
                "home": {"city": "Oslo", "zip": "0150"}},
               {"name": "Bo", "age": 0, "role": "guest", "active": False, "tags": [], "home": {"city": "Rome"}}],
    "order": [{"id": "ABC-1234", "items": [{"sku": "p-1", "qty": 2, "price": 9.5},
                                           {"sku": "q", "qty": 10, "price": 0.25}], "note": None},
              {"id": "XYZ-0001", "items": [{"sku": "k", "qty": 1, "price": 100}], "note": "leave at door"}],
    "any_object": [{"a": [1, 2.5, {"b": None}], "c": "d\u00e9j\u00e0 vu", "e": True}, {}],
}

INVALID = {
    "person": [{"name": "Ann", "age": 31, "role": "root", "active": True, "tags": [], "home": {"city": "Oslo"}},
               {"name": "Ann", "age": 200, "role": "user", "active": True, "tags": [], "home": {"city": "Oslo"}},
               {"name": "Ann", "age": 31, "role": "user", "active": True, "tags": []},
               {"name": "Ann", "age": 31, "role": "user", "active": "yes", "tags": [], "home": {"city": "Oslo"}},
               {"name": "Ann", "age": 31, "role": "user", "active": True, "tags": [], "home": {"city": "Oslo"},
                "extra": 1}],
    "order": [{"id": "abc-1234", "items": [{"sku": "p", "qty": 1, "price": 1}], "note": None},
              {"id": "ABC-1234", "items": [], "note": None},
              {"id": "ABC-1234", "items": [{"sku": "p", "qty": 0, "price": 1}], "note": None},
              {"id": "ABC-1234", "items": [{"sku": "p", "qty": 1.5, "price": 1}], "note": None}],
    "any_object": [[1, 2], "text"],
}


def pct(xs, q):
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q))


def apply_mask(bits: np.ndarray, z: np.ndarray) -> np.ndarray:
    """pyvt.structured's apply: bitmask words -> -inf on forbidden tokens (a new row)."""
    from pyvt.structured import apply_allowed, bitmask_to_bool

    return apply_allowed(bitmask_to_bool(bits, VOCAB), z)


def bitmask_to_bool(bits: np.ndarray, vocab: int) -> np.ndarray:
    from pyvt.structured import bitmask_to_bool as f

    return f(bits, vocab)


def allowed(bits: np.ndarray, t: int) -> bool:
    return bool((int(bits[t >> 5]) >> (t & 31)) & 1)


# ---- engines: (setup, new matcher, fill bitmask, consume) --------------------------------------------

class Llg:
    name = "llguidance"

    def __init__(self, tok_json: str, eos: list[int]):
        import llguidance as llg
        from pyvt import structured

        self.llg, self.structured = llg, structured
        t = time.perf_counter()
        self.tok = llg.LLTokenizer(tok_json, n_vocab=VOCAB, eos_token=eos)
        self.setup_s = time.perf_counter() - t
        self.version = llg.__version__

    def compile(self, schema: str):
        return self.llg.LLMatcher.grammar_from_json_schema(schema, defaults=self.structured.JSON_LAYOUT)

    def matcher(self, grammar):
        m = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        assert not m.is_error(), m.get_error()
        return m

    @staticmethod
    def bitmask():
        return np.zeros((VOCAB + 31) // 32, dtype=np.int32)

    @staticmethod
    def fill(m, bits):
        m.unsafe_compute_mask_ptr(bits.ctypes.data, bits.nbytes)
        return bits

    @staticmethod
    def consume(m, t):
        return m.consume_token(t)


class Xgr:
    name = "xgrammar"

    def __init__(self, tok_dir: Path, eos: list[int]):
        import xgrammar as xgr
        from transformers import AutoTokenizer

        self.xgr = xgr
        hf = AutoTokenizer.from_pretrained(str(tok_dir))  # with tokenizer_config.json: its special tokens
        t = time.perf_counter()
        info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=VOCAB, stop_token_ids=eos)
        self.compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        self.setup_s = time.perf_counter() - t
        from importlib.metadata import version

        self.version = version("xgrammar")

    def compile(self, schema: str):
        return self.compiler.compile_json_schema(schema, any_whitespace=False, separators=LAYOUT, strict_mode=False)

    def matcher(self, grammar):
        return self.xgr.GrammarMatcher(grammar)

    def bitmask(self):
        self._t = self.xgr.allocate_token_bitmask(1, VOCAB)
        return self._t.numpy()[0]  # a view: fill writes the tensor, apply reads the array

    def fill(self, m, bits):
        m.fill_next_token_bitmask(self._t)
        return bits

    @staticmethod
    def consume(m, t):
        return m.accept_token(t)


# ---- measurements -----------------------------------------------------------------------------------

def per_token(engine, grammar, ids: list[int], reps: int, rng) -> dict:
    total, fill, appl, cons = [], [], [], []
    z = rng.standard_normal(VOCAB).astype(np.float32)
    for _ in range(reps):
        m = engine.matcher(grammar)
        bits = engine.bitmask()
        for t in ids:
            t0 = time.perf_counter_ns()
            engine.fill(m, bits)
            t1 = time.perf_counter_ns()
            zm = apply_mask(bits, z)
            t2 = time.perf_counter_ns()
            ok = engine.consume(m, t)
            t3 = time.perf_counter_ns()
            if not ok or not np.isfinite(zm[t]):
                raise RuntimeError(f"{engine.name} refused token {t} of a valid document")
            total.append((t3 - t0) / 1e3)
            fill.append((t1 - t0) / 1e3)
            appl.append((t2 - t1) / 1e3)
            cons.append((t3 - t2) / 1e3)
    return {"steps": len(total), "median_us": statistics.median(total), "p10_us": pct(total, 10),
            "p90_us": pct(total, 90), "max_us": max(total), "fill_median_us": statistics.median(fill),
            "apply_median_us": statistics.median(appl), "consume_median_us": statistics.median(cons)}


def judge(engine, grammar, ids: list[int], eos: list[int]) -> bool:
    """True when the engine accepts every token and then allows EOS (the document is valid
    in the engine's eyes)."""
    m = engine.matcher(grammar)
    bits = engine.bitmask()
    for t in ids:
        engine.fill(m, bits)
        if not allowed(bits, t) or not engine.consume(m, t):
            return False
    engine.fill(m, bits)
    return any(allowed(bits, e) for e in eos)


def end_to_end(reps: int) -> dict:
    import pyvt

    model = pyvt.load_model(progress=False)
    prompt = pyvt.apply_chat_template(model, [{"role": "user", "content": "Describe a person as JSON."}])
    schema = SCHEMAS["person"]
    con = pyvt.generate(model, prompt, json_schema=schema, max_new_tokens=200)
    n = len(con.tokens)
    rows = {"constrained": [], "free": []}
    for _ in range(reps):
        for kind in rows:
            kw = {"json_schema": schema} if kind == "constrained" else {"stop_on_eos": False}
            r = pyvt.generate(model, prompt, max_new_tokens=n, **kw)
            assert len(r.tokens) == n
            rows[kind].append(r.ms_per_token)
    out = {"tokens": n, "reps": reps, "text": con.text}
    for kind, v in rows.items():
        out[kind] = {"median_ms_per_token": statistics.median(v), "min": min(v), "max": max(v)}
    model.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=20, help="fresh matchers per schema (default 20)")
    ap.add_argument("--model", action="store_true", help="also pyvt generate with / without a schema")
    ap.add_argument("--model-reps", type=int, default=5)
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()

    import jsonschema
    import pyvt
    from pyvt import hub

    tok_dir = hub.pull(quiet=True)
    tok = pyvt.Tokenizer(tok_dir / "tokenizer.json")
    eos = [2]  # <|im_end|>: SmolLM2's EOS
    rng = np.random.default_rng(0)
    engines = [Llg(tok._tk.to_str(), eos), Xgr(tok_dir, eos)]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = "?"
    res: dict = {"machine": f"{platform.machine()} {platform.processor() or ''} {platform.node()}".strip(),
                 "python": platform.python_version(), "numpy": np.__version__, "commit": commit,
                 "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reps": args.reps, "engines": {}}
    res["loadavg_start"] = os.getloadavg()
    print(f"# python bench/grammar.py --reps {args.reps}{' --model' if args.model else ''}  "
          f"({res['date']}, commit {commit}, {res['machine']}, {os.cpu_count()} CPUs, Python {res['python']}, "
          f"numpy {res['numpy']}; load average at start {res['loadavg_start'][0]:.1f})")
    for e in engines:
        er: dict = {"version": e.version, "tokenizer_setup_ms": e.setup_s * 1e3, "schemas": {}}
        print(f"\n## {e.name} {e.version}: tokenizer info built in {e.setup_s * 1e3:.0f} ms")
        right = total = 0
        for name, schema in SCHEMAS.items():
            text = json.dumps(schema)
            ct = []
            for _ in range(5):
                t = time.perf_counter()
                g = e.compile(text)
                e.matcher(g)
                ct.append((time.perf_counter() - t) * 1e3)
            ids = tok.encode(json.dumps(VALID[name][0], ensure_ascii=False), add_special_tokens=False)
            pt = per_token(e, g, ids, args.reps, rng)
            docs = [(d, True) for d in VALID[name]] + [(d, False) for d in INVALID[name]]
            ok = 0
            for d, _ in docs:
                valid = jsonschema.Draft202012Validator(schema).is_valid(d)
                ok += judge(e, g, tok.encode(json.dumps(d, ensure_ascii=False), add_special_tokens=False), eos) == valid
            right += ok
            total += len(docs)
            er["schemas"][name] = {"compile_ms_median_of_5": statistics.median(ct), "per_token": pt,
                                   "correct": f"{ok}/{len(docs)}"}
            print(f"{name:11s} compile+matcher {statistics.median(ct):7.2f} ms | per token ({pt['steps']} steps): "
                  f"median {pt['median_us']:6.1f} µs  p10 {pt['p10_us']:6.1f}  p90 {pt['p90_us']:6.1f}  "
                  f"max {pt['max_us']:7.1f}  [fill {pt['fill_median_us']:.1f} + apply {pt['apply_median_us']:.1f} "
                  f"+ consume {pt['consume_median_us']:.1f}] | documents judged right {ok}/{len(docs)}")
        er["correct"] = f"{right}/{total}"
        res["engines"][e.name] = er
    # Mask agreement: both engines in lockstep over every valid document; at each step the
    # allowed sets are compared. Differences are counted by kind: special tokens (decoded
    # with skip_special_tokens they vanish from the text: allowing them inside a JSON string
    # breaks the output) and the rest (each engine's choices about non-canonical splits of
    # forced text and partial escapes), with an example of each.
    a, b = engines
    special = np.zeros(VOCAB, dtype=bool)
    special[sorted(tok.special_token_ids())] = True
    print("\n## mask agreement (llguidance vs xgrammar, every step of every valid document, then EOS)")
    agree: dict = {}
    for name, schema in SCHEMAS.items():
        text = json.dumps(schema)
        ga, gb = a.compile(text), b.compile(text)
        row = {"steps": 0, "identical": 0, "special_only_llguidance": 0, "special_only_xgrammar": 0,
               "other_only_llguidance": 0, "other_only_xgrammar": 0, "examples": []}
        for d in VALID[name]:
            ids = tok.encode(json.dumps(d, ensure_ascii=False), add_special_tokens=False) + eos[:1]
            ma, mb = a.matcher(ga), b.matcher(gb)
            ba, bb = a.bitmask(), b.bitmask()
            for k, t in enumerate(ids):
                oa = bitmask_to_bool(a.fill(ma, ba), VOCAB).copy()
                ob = bitmask_to_bool(b.fill(mb, bb), VOCAB).copy()
                row["steps"] += 1
                row["identical"] += bool(np.array_equal(oa, ob))
                for who, only in (("llguidance", oa & ~ob), ("xgrammar", ob & ~oa)):
                    if (only & special).any():
                        row[f"special_only_{who}"] += 1
                    if (only & ~special).any():
                        row[f"other_only_{who}"] += 1
                    if only.any() and len(row["examples"]) < 6:
                        row["examples"].append({"after": tok.decode(ids[:k])[-20:], "only": who,
                                                "tokens": [tok.decode([int(i)], skip_special_tokens=False)
                                                           for i in np.flatnonzero(only)[:4]]})
                if t in eos:
                    break
                a.consume(ma, t)
                b.consume(mb, t)
        agree[name] = row
        print(f"{name:11s} identical at {row['identical']}/{row['steps']} steps; steps where only one engine "
              f"allows special tokens: llguidance {row['special_only_llguidance']}, xgrammar "
              f"{row['special_only_xgrammar']}; other tokens: llguidance {row['other_only_llguidance']}, "
              f"xgrammar {row['other_only_xgrammar']}")
        for ex in row["examples"][:3]:
            print(f"    after {ex['after']!r}: only {ex['only']} allows {ex['tokens']}")
    res["mask_agreement"] = agree
    if args.model:
        r = end_to_end(args.model_reps)
        res["pyvt_generate"] = r
        print(f"\n## pyvt.generate, default model (int8), greedy, {r['tokens']} tokens, {r['reps']} alternating runs")
        for kind in ("free", "constrained"):
            v = r[kind]
            print(f"{kind:12s} {v['median_ms_per_token']:.2f} ms/token median (min {v['min']:.2f}, max {v['max']:.2f})")
        print(f"output: {r['text']}")
    res["loadavg_end"] = os.getloadavg()
    print(f"# load average at the end {res['loadavg_end'][0]:.1f} (1 min), {res['loadavg_end'][1]:.1f} (5 min)")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
