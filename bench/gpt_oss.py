#!/usr/bin/env python3
"""gpt-oss-20b's shape on the CPU: its MXFP4 experts kept as ``mxfp4`` (weight_format "auto",
the default) against the same file loaded as ``int8`` (which also holds the experts exactly),
decode and prefill in the same run, with the memory each load holds.

The checkpoint is random but laid out as the Hub's gpt-oss-20b files are: hidden 2880, 64
query / 8 KV heads of 64 with biases and sinks, 32 experts of intermediate 2880 (top 4) as
MXFP4 ``*_blocks`` / ``*_scales`` with bf16 biases, the router, alternating sliding (128) /
full layers, YaRN (factor 32 over 4096 positions, theta 150000). Two things are smaller than
the real model: ``--layers`` (default 4 of 24) and the vocabulary (32000 of 201088, so that
lm_head does not dominate a 4-layer model); each row says how many bytes a token reads
(``weight_bytes``: attention, 4 experts a layer, lm_head) and the fraction of the bandwidth
floor (those bytes at the read bandwidth measured at the start of the run) it reached.

Both models are loaded at once; each round times one after the other (order alternating),
a --prompt-len prefill then --gen-len greedy decode steps through the session API; figures
are medians over rounds, and "mxfp4 vs int8" is the median of the per-round ratios. Results
(JSON + markdown, with machine, versions and commit) go under bench/results/ unless --no-save.

    python bench/gpt_oss.py                       # 4 layers, 2 threads, 5 rounds
    python bench/gpt_oss.py --layers 2 --rounds 3
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import decode as D  # noqa: E402  (bench/decode.py: machine info, versions, bandwidth)

import llama_ref as R  # noqa: E402  (safetensors writer)

# gpt-oss-20b: hidden, query heads, KV heads, head dim, expert intermediate, experts, top-k
GPT_OSS_20B = dict(hidden=2880, heads=64, kv=8, head_dim=64, inter=2880, experts=32, topk=4)


def config(layers: int, vocab: int, shape: dict | None = None) -> dict:
    s = shape or GPT_OSS_20B
    H, HEADS, KV, HD, I, E, TOPK = (s[k] for k in ("hidden", "heads", "kv", "head_dim", "inter", "experts", "topk"))
    return {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": H,
        "num_attention_heads": HEADS, "num_key_value_heads": KV, "head_dim": HD, "intermediate_size": I,
        "num_local_experts": E, "num_experts_per_tok": TOPK, "num_hidden_layers": layers, "vocab_size": vocab,
        "attention_bias": True, "hidden_act": "silu", "swiglu_limit": 7.0, "rms_norm_eps": 1e-5,
        "sliding_window": 128, "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention"
                                                for i in range(layers)],
        "max_position_embeddings": 131072, "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
        "rope_parameters": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                            "truncate": False, "original_max_position_embeddings": 4096, "rope_theta": 150000.0},
    }


def make_checkpoint(folder: Path, layers: int, vocab: int, seed: int = 0, shape: dict | None = None) -> Path:
    """The random gpt-oss-shaped folder (written once; reused while its config matches)."""
    cfg = config(layers, vocab, shape)
    H, HEADS, KV, HD, I, E = (cfg[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads",
                                                "head_dim", "intermediate_size", "num_local_experts"))
    if (folder / "config.json").exists() and json.loads((folder / "config.json").read_text()) == cfg \
            and (folder / "model.safetensors").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    def normal(*shape, std=0.02):
        return (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float32)

    entries = {}

    def bf16(name, a):
        entries[name] = ("BF16", tuple(a.shape), R.tensor_bytes(a, "BF16"))

    def mxfp4(name, rows, cols):
        # E2M1 codes, scales 2^-9 .. 2^-6 (values up to 0.09, as trained experts' magnitudes)
        blocks = rng.integers(0, 256, size=(E, rows, cols // 32, 16), dtype=np.uint8)
        scales = rng.integers(118, 122, size=(E, rows, cols // 32), dtype=np.uint8)
        entries[name + "_blocks"] = ("U8", blocks.shape, blocks.tobytes())
        entries[name + "_scales"] = ("U8", scales.shape, scales.tobytes())

    bf16("model.embed_tokens.weight", normal(vocab, H))
    for li in range(layers):
        p = f"model.layers.{li}."
        bf16(p + "input_layernorm.weight", 1 + normal(H))
        bf16(p + "post_attention_layernorm.weight", 1 + normal(H))
        for n, rows, cols in (("q", HEADS * HD, H), ("k", KV * HD, H), ("v", KV * HD, H), ("o", H, HEADS * HD)):
            bf16(p + f"self_attn.{n}_proj.weight", normal(rows, cols))
            bf16(p + f"self_attn.{n}_proj.bias", normal(rows))
        bf16(p + "self_attn.sinks", normal(HEADS, std=1.0))
        bf16(p + "mlp.router.weight", normal(E, H, std=0.1))
        bf16(p + "mlp.router.bias", normal(E))
        mxfp4(p + "mlp.experts.gate_up_proj", 2 * I, H)
        bf16(p + "mlp.experts.gate_up_proj_bias", normal(E, 2 * I))
        mxfp4(p + "mlp.experts.down_proj", H, I)
        bf16(p + "mlp.experts.down_proj_bias", normal(E, H))
    bf16("model.norm.weight", 1 + normal(H))
    bf16("lm_head.weight", normal(vocab, H))
    (folder / "model.safetensors").write_bytes(R.safetensors_bytes(entries, {"format": "pt"}))
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    return folder


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(model, ids: list[int], gen: int) -> tuple[float, float]:
    """(prefill seconds, decode seconds per token) of one greedy run."""
    with model.new_session() as s:
        t0 = time.perf_counter()
        tok, _ = s.prefill(ids)
        t1 = time.perf_counter()
        for _ in range(gen):
            tok, _ = s.decode(tok)
        t2 = time.perf_counter()
    return t1 - t0, (t2 - t1) / gen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=4, help="decoder layers (gpt-oss-20b has 24; default 4)")
    ap.add_argument("--vocab", type=int, default=32000, help="vocabulary (gpt-oss: 201088; default 32000)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--gen-len", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "pyvt-bench",
                    help="where the random checkpoint is written (default ~/.cache/pyvt-bench)")
    ap.add_argument("--tag", default="", help="suffix of the results files")
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args(argv)

    from pyvt import _model, ops

    ops.set_num_threads(a.threads)
    env = {"machine": D.machine_info("cpu"), "versions": D.versions(), "git": D.git_info(),
           "date": _dt.datetime.now().isoformat(timespec="seconds"), "args": {k: str(v) for k, v in vars(a).items()}}
    folder = make_checkpoint(a.cache / f"gpt-oss-20b-{a.layers}l-v{a.vocab}", a.layers, a.vocab)
    D.log(f"checkpoint {folder}")
    bw = D.measure_bandwidth_cpu(a.threads)
    D.log(f"read bandwidth {bw['gb_s']} GB/s")
    rng = np.random.default_rng(1)
    ids = [int(t) for t in rng.integers(3, a.vocab, a.prompt_len)]
    models, load = {}, {}
    for fmt in ("auto", "int8"):
        r0 = rss_mb()
        t0 = time.perf_counter()
        models[fmt] = _model.Model(str(folder), weight_format=fmt, device="cpu",
                                   max_seq_len=a.prompt_len + a.gen_len + 8)
        info = models[fmt].info
        load[fmt] = {"load_s": round(time.perf_counter() - t0, 1), "rss_added_mb": round(rss_mb() - r0),
                     "total_bytes": info["total_bytes"], "weight_bytes": info["weight_bytes"],
                     "features": info["features"]}
        D.log(f"{fmt}: loaded in {load[fmt]['load_s']} s, {info['total_bytes'] / 1e9:.2f} GB held, "
              f"{info['weight_bytes'] / 1e6:.0f} MB read a token")
        timed(models[fmt], ids[:8], 2)  # warm-up
    per = {f: {"prefill_s": [], "decode_s": []} for f in models}
    for r in range(a.rounds):
        for fmt in (("auto", "int8") if r % 2 == 0 else ("int8", "auto")):
            p, d = timed(models[fmt], ids, a.gen_len)
            per[fmt]["prefill_s"].append(p)
            per[fmt]["decode_s"].append(d)
        D.log(f"round {r + 1}: " + ", ".join(f"{f} {1 / per[f]['decode_s'][-1]:.1f} tok/s" for f in models))
    rows = []
    for fmt in models:
        d = statistics.median(per[fmt]["decode_s"])
        floor = load[fmt]["weight_bytes"] / (bw["gb_s"] * 1e9)
        rows.append({"format": fmt, **load[fmt], "decode_tok_s": round(1 / d, 2),
                     "decode_tok_s_range": [round(1 / max(per[fmt]["decode_s"]), 2), round(1 / min(per[fmt]["decode_s"]), 2)],
                     "prefill_tok_s": round(a.prompt_len / statistics.median(per[fmt]["prefill_s"]), 1),
                     "floor_fraction": round(floor / d, 3), "rounds": per[fmt]})
    ratio = [i / m for m, i in zip(per["auto"]["decode_s"], per["int8"]["decode_s"])]
    pratio = [i / m for m, i in zip(per["auto"]["prefill_s"], per["int8"]["prefill_s"])]
    summary = {"decode_mxfp4_vs_int8": round(statistics.median(ratio), 3),
               "decode_ratio_range": [round(min(ratio), 3), round(max(ratio), 3)],
               "prefill_mxfp4_vs_int8": round(statistics.median(pratio), 3),
               "held_mxfp4_vs_int8": round(load["auto"]["total_bytes"] / load["int8"]["total_bytes"], 3)}
    for m in models.values():
        m.close()
    lines = [f"# gpt-oss-20b shape ({a.layers} layers, vocab {a.vocab}), mxfp4 experts vs int8 — {env['date']}", "",
             f"{env['machine'].get('cpu', '')}, {a.threads} threads, read bandwidth {bw['gb_s']} GB/s at the start; "
             f"commit {str(env['git'].get('commit'))[:10]}; prompt {a.prompt_len}, {a.gen_len} decode steps, "
             f"{a.rounds} alternating rounds (medians, range over rounds).", "",
             "| load | held GB | read per token MB | decode tok/s | range | of floor | prefill tok/s | load s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = "auto (experts mxfp4)" if r["format"] == "auto" else "int8"
        lines.append(f"| {name} | {r['total_bytes'] / 1e9:.2f} | {r['weight_bytes'] / 1e6:.0f} | {r['decode_tok_s']} | "
                     f"{r['decode_tok_s_range'][0]}-{r['decode_tok_s_range'][1]} | {r['floor_fraction']} | "
                     f"{r['prefill_tok_s']} | {r['load_s']} |")
    lines += ["", f"mxfp4 vs int8, same rounds: decode {summary['decode_mxfp4_vs_int8']}x "
                  f"({summary['decode_ratio_range'][0]}-{summary['decode_ratio_range'][1]}), prefill "
                  f"{summary['prefill_mxfp4_vs_int8']}x; memory held {summary['held_mxfp4_vs_int8']}x."]
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_save:
        out = ROOT / "bench" / "results"
        stem = f"gpt-oss-vm-{_dt.datetime.now():%Y%m%d-%H%M}" + (f"-{a.tag}" if a.tag else "")
        (out / f"{stem}.json").write_text(json.dumps({"env": env, "bandwidth": bw, "rows": rows,
                                                     "summary": summary}, indent=1))
        (out / f"{stem}.md").write_text(text)
        D.log(f"saved bench/results/{stem}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
