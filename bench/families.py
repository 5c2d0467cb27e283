#!/usr/bin/env python3
"""CPU prefill and decode of each model family beside a Llama of the same shape, one run.

One random-weight Llama checkpoint of the chosen shape (tools/make_checkpoint.py; default the
Qwen2.5-0.5B shape: hidden 896, 24 layers, 14 heads, 2 KV heads, intermediate 4864, vocab
151936, tied) is reused by every family: a family's folder links the same model.safetensors and
adds a second file with its own tensors (Qwen2: q/k/v biases; Qwen3: q/k norms; Llama
"+bias": attention_bias and mlp_bias; Gemma 2 / 3: the pre- and post-feedforward norms, Gemma
3's q/k norms; StableLM: its LayerNorms' biases; Gemma 1 none), with an index naming both. Mistral and the Gemmas get a sliding_window larger
than the context (the window path runs, the keys are the same), so every row does the same
attention work and differs only by the family's features (Gemma: GeGLU, the extra norms,
Gemma 2's soft-caps).

All models are loaded at once; each repeat runs every family in turn (order rotated per
repeat), through vt_generate: a --prompt-len prompt, then --gen-len greedy tokens (EOS
ignored). Medians per family and the median over repeats of its ratio to the first family
(Llama) in the same repeat are printed as a markdown table, and saved under bench/results/
unless --no-save. The ratio is what matters on a shared machine: the rows of one repeat run
back to back.

    python bench/families.py                          # int8, 2 threads, 3 repeats
    python bench/families.py --formats int8,bf16 --repeat 5
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tools.make_checkpoint import make_checkpoint  # noqa: E402

import llama_ref as R  # noqa: E402

QWEN25_05B = dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                  intermediate_size=4864, vocab_size=151936, tie_word_embeddings=True, rope_theta=1000000.0,
                  rms_norm_eps=1e-6, max_position_embeddings=32768, bos_token_id=151643, eos_token_id=151645)


def family_folder(base: Path, out: Path, family: str) -> Path:
    """A folder running `family` over base's weights (linked) plus its own tensors."""
    cfg = json.loads((base / "config.json").read_text())
    H, L, NH, KV = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    HD, I = cfg["head_dim"], cfg["intermediate_size"]
    rng = np.random.default_rng(7)
    extra: dict[str, np.ndarray] = {}
    if family == "llama":
        return base
    if family == "llama+bias":
        cfg.update(attention_bias=True, mlp_bias=True)
        for l in range(L):
            p = f"model.layers.{l}."
            for n, size in (("self_attn.q_proj", NH * HD), ("self_attn.k_proj", KV * HD), ("self_attn.v_proj", KV * HD),
                            ("self_attn.o_proj", H), ("mlp.gate_proj", I), ("mlp.up_proj", I), ("mlp.down_proj", H)):
                extra[p + n + ".bias"] = 0.02 * rng.standard_normal(size).astype(np.float32)
    elif family == "qwen2":
        cfg.update(architectures=["Qwen2ForCausalLM"], model_type="qwen2", use_sliding_window=False)
        for l in range(L):
            p = f"model.layers.{l}.self_attn."
            for n, size in (("q_proj", NH * HD), ("k_proj", KV * HD), ("v_proj", KV * HD)):
                extra[p + n + ".bias"] = 0.02 * rng.standard_normal(size).astype(np.float32)
    elif family == "qwen3":
        cfg.update(architectures=["Qwen3ForCausalLM"], model_type="qwen3", use_sliding_window=False)
        for l in range(L):
            p = f"model.layers.{l}.self_attn."
            extra[p + "q_norm.weight"] = np.ones(HD, np.float32)
            extra[p + "k_norm.weight"] = np.ones(HD, np.float32)
    elif family == "mistral-window":
        cfg.update(architectures=["MistralForCausalLM"], model_type="mistral", sliding_window=1 << 20)
    elif family in ("gemma2", "gemma3"):
        # Gemma's block over the same matrices: the Llama's post_attention_layernorm becomes the
        # post-attention norm, pre-/post-feedforward norms are added (and Gemma 3's q/k norms);
        # GeGLU, the embedding scale, query_pre_attn_scalar = head_dim; windows wider than the
        # context (the window path runs, every layer attends to every key, as the Llama does);
        # Gemma 2's soft-caps at their defaults (50 / 30).
        cfg.update(hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=HD,
                   sliding_window=1 << 20)
        if family == "gemma2":
            cfg.update(architectures=["Gemma2ForCausalLM"], model_type="gemma2", attn_logit_softcapping=50.0,
                       final_logit_softcapping=30.0)
        else:
            cfg.update(architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", rope_local_base_freq=10000.0,
                       sliding_window_pattern=6)
        for l in range(L):
            p = f"model.layers.{l}."
            extra[p + "pre_feedforward_layernorm.weight"] = np.zeros(H, np.float32)  # (1 + w): ones
            extra[p + "post_feedforward_layernorm.weight"] = np.zeros(H, np.float32)
            if family == "gemma3":
                extra[p + "self_attn.q_norm.weight"] = np.zeros(HD, np.float32)
                extra[p + "self_attn.k_norm.weight"] = np.zeros(HD, np.float32)
    elif family == "gemma":
        # Gemma 1 over the same matrices: (1 + w) norms, the embedding scale, GeGLU.
        cfg.update(architectures=["GemmaForCausalLM"], model_type="gemma", hidden_act="gelu_pytorch_tanh")
    elif family == "stablelm":
        # StableLM over the same matrices: LayerNorms (the Llama's norm weights, zero biases),
        # StableLmConfig's default partial rotary (a quarter of head_dim rotates).
        cfg.update(architectures=["StableLmForCausalLM"], model_type="stablelm", layer_norm_eps=1e-5)
        extra["model.norm.bias"] = np.zeros(H, np.float32)
        for l in range(L):
            p = f"model.layers.{l}."
            extra[p + "input_layernorm.bias"] = np.zeros(H, np.float32)
            extra[p + "post_attention_layernorm.bias"] = np.zeros(H, np.float32)
    else:
        raise ValueError(f"unknown family {family!r}")
    folder = out / f"{base.name}-{family}"
    folder.mkdir(parents=True, exist_ok=True)
    for f in base.iterdir():
        if f.name in ("config.json", "model.safetensors.index.json") or f.name.startswith("."):
            continue
        link = folder / f.name
        if not link.exists():
            link.symlink_to(f.resolve())
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    weight_map = {}
    if extra:
        R.write_safetensors(folder / "extra.safetensors", extra, "F32")
        weight_map.update({k: "extra.safetensors" for k in extra})
        with open(base / "model.safetensors", "rb") as fh:
            header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
        weight_map.update({k: "model.safetensors" for k in header if k != "__metadata__"})
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default="llama,qwen2,qwen3,mistral-window,llama+bias,gemma2,gemma3,gemma,stablelm")
    ap.add_argument("--formats", default="int8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen-len", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(Path("~/.cache/pyvt/bench").expanduser()))
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    os.environ["VT_NUM_THREADS"] = str(args.threads)
    from pyvt import _model

    out = Path(args.out)
    base = make_checkpoint(QWEN25_05B, out=out, name="qwen2.5-0.5b-shape")
    families = args.families.split(",")
    folders = {f: family_folder(base, out, f) for f in families}
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, 32000, args.prompt_len).tolist()
    rows = []
    for fmt in args.formats.split(","):
        models = {f: _model.Model(str(folders[f]), device="cpu", weight_format=fmt) for f in families}
        for m in models.values():  # warm-up
            m.generate(prompt[:16], max_new_tokens=4, stop_on_eos=False)
        runs: dict[str, list[tuple[float, float]]] = {f: [] for f in families}
        for r in range(args.repeat):
            order = families[r % len(families):] + families[:r % len(families)]
            for f in order:
                _, st = models[f].generate(prompt, max_new_tokens=args.gen_len, stop_on_eos=False)
                runs[f].append((args.prompt_len / (st["prefill_ms"] / 1e3),
                                (st["generated_tokens"] - 1) / (st["decode_ms"] / 1e3)))
        first = runs[families[0]]
        for f in families:
            p = statistics.median(x for x, _ in runs[f])
            d = statistics.median(x for _, x in runs[f])
            # Ratios within a repeat (back-to-back runs), then their median: the machine's
            # load drifts between repeats far more than the families differ.
            rp = statistics.median(a[0] / b[0] for a, b in zip(runs[f], first))
            rd = statistics.median(a[1] / b[1] for a, b in zip(runs[f], first))
            rows.append(dict(format=fmt, family=f, features=models[f].info["features"], prefill_tok_s=round(p, 1),
                             decode_tok_s=round(d, 2), prefill_vs_first=round(rp, 3), decode_vs_first=round(rd, 3),
                             runs=[[round(a, 1), round(b, 2)] for a, b in runs[f]]))
        for m in models.values():
            m.close()
    lines = [f"families at the Qwen2.5-0.5B shape, {args.threads} threads, prompt {args.prompt_len}, "
             f"{args.gen_len} tokens, median of {args.repeat} (ratios: median of per-repeat ratios vs {families[0]})", "",
             "| format | family | features | prefill tok/s | decode tok/s | prefill ratio | decode ratio |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['format']} | {r['family']} | {', '.join(r['features']) or '-'} | {r['prefill_tok_s']} | "
                     f"{r['decode_tok_s']} | {r['prefill_vs_first']} | {r['decode_vs_first']} |")
    text = "\n".join(lines)
    print(text)
    if not args.no_save:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                    text=True).stdout.strip()
        except OSError:
            commit = "?"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        res = ROOT / "bench" / "results" / f"families-{platform.node()}-{stamp}"
        res.with_suffix(".md").write_text(text + f"\n\ncommit {commit}; `{' '.join(sys.argv)}`; "
                                          f"load average at the end {os.getloadavg()[0]:.1f}\n")
        res.with_suffix(".json").write_text(json.dumps(dict(args=vars(args), commit=commit, rows=rows), indent=2))
        print(f"saved {res}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
