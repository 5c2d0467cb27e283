#!/usr/bin/env python3
"""gpt-oss-20b's shape on the CPU: its MXFP4 experts kept as ``mxfp4`` (weight_format "auto",
the default) against the same file loaded as ``int8`` (which also holds the experts exactly),
decode and prefill in the same run, with the memory each load holds — and, where
llama-cpp-python is installed, llama.cpp on a GGUF of the same weights as its converter writes
gpt-oss (Q8_0 attention / embedding / output, the experts in MXFP4 with the file's own codes),
with flash attention on and off (the ratio divides by its faster setting in each round).

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
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import decode as D  # noqa: E402  (bench/decode.py: machine info, versions, bandwidth, llama.cpp worker)

import gguf_writer as gw  # noqa: E402  (tests/: GGUF writer and ggml quantizers)
import llama_ref as R  # noqa: E402  (safetensors writer)
from pyvt.gguf_tokenizer import _bytes_to_unicode  # noqa: E402

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


def _bf16_tensor(st: bytes, header: dict, name: str) -> np.ndarray:
    """A BF16 tensor of the checkpoint as float32."""
    e = header[name]
    b0, b1 = e["data_offsets"]
    base = 8 + int.from_bytes(st[:8], "little")
    raw = np.frombuffer(st, np.uint16, (b1 - b0) // 2, base + b0)
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(e["shape"])


def _u8_tensor(st: bytes, header: dict, name: str) -> np.ndarray:
    e = header[name]
    b0, b1 = e["data_offsets"]
    base = 8 + int.from_bytes(st[:8], "little")
    return np.frombuffer(st, np.uint8, b1 - b0, base + b0).reshape(e["shape"])


def _hub_to_ggml_mxfp4(blocks: np.ndarray, scales: np.ndarray) -> bytes:
    """The Hub's MXFP4 (blocks [..., n, 16]: k = 2j low nibble, 2j + 1 high; scales [..., n])
    as ggml's MXFP4 blocks (e8m0 | qs[16]: element j < 16 low nibble of qs[j], j + 16 high):
    the same codes and exponents, reordered (the inverse of pyvt/convert.py's)."""
    codes = np.stack([blocks & 15, blocks >> 4], axis=-1).reshape(*blocks.shape[:-1], 32)
    qs = codes[..., :16] | (codes[..., 16:] << 4)
    return np.concatenate([scales[..., None], qs], axis=-1).astype(np.uint8).tobytes()


_E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def export_gguf(folder: Path, out: Path, f32: bool = False) -> Path:
    """The checkpoint as llama.cpp's converter writes gpt-oss: attention, embedding and output
    in Q8_0 (as pyvt's int8), norms, biases, sinks and the router in F32, the experts in MXFP4
    with the file's own codes and exponents (gate and up apart, [E, I, H]); a byte-level
    vocabulary padded with control tokens to the checkpoint's size (ids are fed directly).
    f32: every matrix in F32, the experts decoded (a check of the layout, small shapes only)."""
    cfg = json.loads((folder / "config.json").read_text())
    if out.exists() and out.stat().st_mtime >= (folder / "model.safetensors").stat().st_mtime:
        return out
    st = (folder / "model.safetensors").read_bytes()
    header = json.loads(st[8:8 + int.from_bytes(st[:8], "little")])
    L, E, I = cfg["num_hidden_layers"], cfg["num_local_experts"], cfg["intermediate_size"]
    tensors = []
    Q = gw.F32 if f32 else gw.Q8_0

    def add(name, x, ty):
        tensors.append((name, ty, x.shape, gw.QUANTIZERS[ty](x)))

    def experts(name, b, sc):  # [E, rows, n, 16] blocks, [E, rows, n] scales
        if not f32:
            tensors.append((name, gw.MXFP4, (E, b.shape[1], b.shape[2] * 32), _hub_to_ggml_mxfp4(b, sc)))
            return
        codes = np.stack([b & 15, b >> 4], axis=-1).reshape(*b.shape[:-1], 32)
        v = _E2M1[codes] * np.exp2(sc.astype(np.float32) - 127)[..., None]
        add(name, v.reshape(E, b.shape[1], b.shape[2] * 32), gw.F32)

    add("token_embd.weight", _bf16_tensor(st, header, "model.embed_tokens.weight"), Q)
    add("output_norm.weight", _bf16_tensor(st, header, "model.norm.weight"), gw.F32)
    add("output.weight", _bf16_tensor(st, header, "lm_head.weight"), Q)
    for i in range(L):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        for hf, gg, ty in (("input_layernorm.weight", "attn_norm.weight", gw.F32),
                           ("post_attention_layernorm.weight", "post_attention_norm.weight", gw.F32),
                           ("self_attn.sinks", "attn_sinks.weight", gw.F32),
                           ("mlp.router.weight", "ffn_gate_inp.weight", gw.F32),
                           ("mlp.router.bias", "ffn_gate_inp.bias", gw.F32)):
            add(g + gg, _bf16_tensor(st, header, p + hf), ty)
        for n, gg in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v"), ("o", "attn_output")):
            add(f"{g}{gg}.weight", _bf16_tensor(st, header, f"{p}self_attn.{n}_proj.weight"), Q)
            add(f"{g}{gg}.bias", _bf16_tensor(st, header, f"{p}self_attn.{n}_proj.bias"), gw.F32)
        gub = _bf16_tensor(st, header, p + "mlp.experts.gate_up_proj_bias")
        blocks = _u8_tensor(st, header, p + "mlp.experts.gate_up_proj_blocks")  # [E, 2I, H/32, 16]
        scales = _u8_tensor(st, header, p + "mlp.experts.gate_up_proj_scales")
        for k, gg in ((0, "ffn_gate_exps"), (1, "ffn_up_exps")):  # rows interleaved gate, up
            experts(f"{g}{gg}.weight", blocks[:, k::2], scales[:, k::2])
            add(f"{g}{gg}.bias", np.ascontiguousarray(gub[:, k::2]), gw.F32)
        b = _u8_tensor(st, header, p + "mlp.experts.down_proj_blocks")  # [E, H, I/32, 16]
        sc = _u8_tensor(st, header, p + "mlp.experts.down_proj_scales")
        experts(f"{g}ffn_down_exps.weight", b, sc)
        add(f"{g}ffn_down_exps.bias", _bf16_tensor(st, header, p + "mlp.experts.down_proj_bias"), gw.F32)
    del st
    table = _bytes_to_unicode()  # GPT-2's byte-level alphabet
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens = specials + [table[b] for b in range(256)]
    tokens += [f"<|pad_{j}|>" for j in range(cfg["vocab_size"] - len(tokens))]
    types = [3] * len(specials) + [1] * 256 + [3] * (len(tokens) - len(specials) - 256)
    rp, U = cfg["rope_parameters"], gw.UINT32
    a = "gpt-oss"
    md = {
        "general.architecture": a,
        f"{a}.block_count": gw.Val(U, L), f"{a}.context_length": gw.Val(U, cfg["max_position_embeddings"]),
        f"{a}.embedding_length": gw.Val(U, cfg["hidden_size"]), f"{a}.feed_forward_length": gw.Val(U, I),
        f"{a}.attention.head_count": gw.Val(U, cfg["num_attention_heads"]),
        f"{a}.attention.head_count_kv": gw.Val(U, cfg["num_key_value_heads"]),
        f"{a}.attention.layer_norm_rms_epsilon": float(cfg["rms_norm_eps"]),
        f"{a}.attention.key_length": gw.Val(U, cfg["head_dim"]), f"{a}.attention.value_length": gw.Val(U, cfg["head_dim"]),
        f"{a}.expert_count": gw.Val(U, E), f"{a}.expert_used_count": gw.Val(U, cfg["num_experts_per_tok"]),
        f"{a}.expert_feed_forward_length": gw.Val(U, I),
        f"{a}.attention.sliding_window": gw.Val(U, cfg["sliding_window"]),
        f"{a}.rope.freq_base": float(rp["rope_theta"]), f"{a}.rope.scaling.type": "yarn",
        f"{a}.rope.scaling.factor": float(rp["factor"]),
        f"{a}.rope.scaling.original_context_length": gw.Val(U, rp["original_max_position_embeddings"]),
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2", "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": gw.Val(gw.ARRAY, types, gw.INT32), "tokenizer.ggml.merges": ["Ġ t"],
        "tokenizer.ggml.bos_token_id": gw.Val(U, 1), "tokenizer.ggml.eos_token_id": gw.Val(U, 2),
        "tokenizer.ggml.padding_token_id": gw.Val(U, 0),
    }
    tmp = out.with_suffix(".tmp")
    gw.write_gguf(tmp, md, tensors)
    tmp.replace(out)
    return out


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
    ap.add_argument("--no-llamacpp", action="store_true", help="skip llama.cpp (run when llama-cpp-python imports)")
    ap.add_argument("--tag", default="", help="suffix of the results files")
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args(argv)

    from pyvt import _model, ops

    ops.set_num_threads(a.threads)
    env = {"machine": D.machine_info("cpu"), "versions": D.versions(), "git": D.git_info(),
           "date": _dt.datetime.now().isoformat(timespec="seconds"), "args": {k: str(v) for k, v in vars(a).items()}}
    folder = make_checkpoint(a.cache / f"gpt-oss-20b-{a.layers}l-v{a.vocab}", a.layers, a.vocab)
    D.log(f"checkpoint {folder}")
    gguf = None
    if not a.no_llamacpp:
        try:
            import llama_cpp  # noqa: F401

            gguf = export_gguf(folder, folder.parent / (folder.name + ".gguf"))
            D.log(f"llama.cpp's file {gguf}")
        except ImportError:
            D.log("llama-cpp-python is not installed: pyvt only")
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
    # llama.cpp with flash attention on and off: the ratios divide by its faster setting for
    # each measure in each round (which is faster depends on the CPU, as bench/decode.py says).
    LC = ("llama.cpp fa=on", "llama.cpp fa=off")
    names = list(models) + (list(LC) if gguf else [])
    per = {f: {"prefill_s": [], "decode_s": []} for f in names}
    lc_rows: dict = {}
    for r in range(a.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for fmt in order:
            if fmt in LC:  # its own process, as bench/decode.py runs it (one warm-up, one timed run)
                row = D.run_worker({"engine": "llama.cpp", "path": str(gguf), "ids": ids, "gen_len": a.gen_len,
                                    "threads": [a.threads], "repeat": 1, "warm": [8, 2], "device": "cpu",
                                    "flash_attn": fmt.endswith("on")}, timeout=1200, retries=0)[0]
                if row.get("status") != "ok":
                    raise SystemExit(f"{fmt} failed: {row.get('status')}\n{row.get('stderr_tail', '')}")
                lc_rows[fmt] = row
                p, d = row["prefill_s"][0], row["decode_s_per_tok"][0]
            else:
                p, d = timed(models[fmt], ids, a.gen_len)
            per[fmt]["prefill_s"].append(p)
            per[fmt]["decode_s"].append(d)
        D.log(f"round {r + 1}: " + ", ".join(f"{f} {1 / per[f]['decode_s'][-1]:.1f} tok/s" for f in names))
    for fmt, row in lc_rows.items():
        load[fmt] = {"load_s": row.get("load_s"), "total_bytes": gguf.stat().st_size,
                     "weight_bytes": row["weight_bytes"], "info": row.get("info")}
    rows = []
    for fmt in names:
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
    if gguf:  # pyvt auto against llama.cpp (Q8_0 attention, MXFP4 experts) at its faster setting, same rounds
        lc = {k: [min(v) for v in zip(*(per[f][k] for f in LC))] for k in ("decode_s", "prefill_s")}
        lr = [c / m for m, c in zip(per["auto"]["decode_s"], lc["decode_s"])]
        lp = [c / m for m, c in zip(per["auto"]["prefill_s"], lc["prefill_s"])]
        summary.update(decode_vs_llamacpp=round(statistics.median(lr), 3),
                       decode_vs_llamacpp_range=[round(min(lr), 3), round(max(lr), 3)],
                       prefill_vs_llamacpp=round(statistics.median(lp), 3),
                       prefill_vs_llamacpp_range=[round(min(lp), 3), round(max(lp), 3)])
    for m in models.values():
        m.close()
    lines = [f"# gpt-oss-20b shape ({a.layers} layers, vocab {a.vocab}), mxfp4 experts vs int8"
             + (" and llama.cpp" if gguf else "") + f" — {env['date']}", "",
             f"{env['machine'].get('cpu', '')}, {a.threads} threads, read bandwidth {bw['gb_s']} GB/s at the start; "
             f"commit {str(env['git'].get('commit'))[:10]}; prompt {a.prompt_len}, {a.gen_len} decode steps, "
             f"{a.rounds} alternating rounds (medians, range over rounds).", "",
             "| load | held GB | read per token MB | decode tok/s | range | of floor | prefill tok/s | load s |",
             "|---|---|---|---|---|---|---|---|"]
    labels = {"auto": "pyvt auto (experts mxfp4)", "int8": "pyvt int8",
              **{f: f"{f} (Q8_0, experts MXFP4; file size held)" for f in LC}}
    for r in rows:
        name = labels[r["format"]]
        lines.append(f"| {name} | {r['total_bytes'] / 1e9:.2f} | {r['weight_bytes'] / 1e6:.0f} | {r['decode_tok_s']} | "
                     f"{r['decode_tok_s_range'][0]}-{r['decode_tok_s_range'][1]} | {r['floor_fraction']} | "
                     f"{r['prefill_tok_s']} | {r['load_s']} |")
    lines += ["", f"mxfp4 vs int8, same rounds: decode {summary['decode_mxfp4_vs_int8']}x "
                  f"({summary['decode_ratio_range'][0]}-{summary['decode_ratio_range'][1]}), prefill "
                  f"{summary['prefill_mxfp4_vs_int8']}x; memory held {summary['held_mxfp4_vs_int8']}x."]
    if gguf:
        lines += [f"pyvt auto vs llama.cpp, same rounds: decode {summary['decode_vs_llamacpp']}x "
                  f"({summary['decode_vs_llamacpp_range'][0]}-{summary['decode_vs_llamacpp_range'][1]}), prefill "
                  f"{summary['prefill_vs_llamacpp']}x ({summary['prefill_vs_llamacpp_range'][0]}-"
                  f"{summary['prefill_vs_llamacpp_range'][1]}); llama-cpp-python "
                  f"{(load[LC[0]].get('info') or {}).get('llama_cpp_python', '?')}, each round's ratio against "
                  "its faster flash-attention setting for the measure."]
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
