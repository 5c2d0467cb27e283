"""Writes the fuzzing data and the seed corpus (deterministic; run from anywhere):

    fuzz/data/config.json, fuzz/data/model.safetensors   a tiny Llama (hidden 16, 1 layer,
                                                          vocab 8) the C++ targets load
    fuzz/corpus/safetensors/*   model.safetensors files (valid ones and broken ones)
    fuzz/corpus/config/*        config.json [+ "\\n//GEN\\n" + generation_config.json]
    fuzz/corpus/gguf/*          small GGUF files (a convertible tiny llama, metadata of every type)
    fuzz/corpus/text/*          raw inputs of fuzz_text.py (text, ids, stop strings, dialogs)

Each seed is a few KB. Files found by fuzzing are added by tools/fuzz.sh (crashers go to
fuzz/crashers/<target>/ and are replayed by tests/test_fuzz_corpus.py)."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import gguf_writer as gw  # noqa: E402
import llama_ref as R  # noqa: E402

TINY = R.TinyConfig(hidden=16, intermediate=16, layers=1, heads=2, kv_heads=1, head_dim=8, vocab=8,
                    max_pos=64, bos=1, eos=2)


def tiny_config() -> dict:
    c = TINY.config_json()
    c.pop("tie_word_embeddings")  # tied or not follows from lm_head's presence
    c.pop("rope_scaling")
    return c


def st_bytes(weights: dict, dtype: str, metadata=None, pad=True) -> bytes:
    tensors = {k: (dtype, tuple(v.shape), R.tensor_bytes(v, dtype)) for k, v in weights.items()}
    b = R.safetensors_bytes(tensors, metadata)
    if not pad:  # re-encode the header without the alignment padding (unaligned data)
        n = struct.unpack("<Q", b[:8])[0]
        h = b[8:8 + n].rstrip(b" ")
        b = struct.pack("<Q", len(h)) + h + b[8 + n:]
    return b


def write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def safetensors_seeds(out: Path) -> None:
    w = R.random_weights(TINY, seed=1)
    write(out / "valid-bf16", st_bytes(w, "BF16"))
    tied = {k: v for k, v in w.items() if k != "lm_head.weight"}
    write(out / "tied-f16-metadata", st_bytes(tied, "F16", {"format": "pt", "note": "tied"}))
    write(out / "unaligned-f16", st_bytes(w, "F16", pad=False))
    extra = dict(w)
    extra["model.layers.0.self_attn.rotary_emb.inv_freq"] = np.ones(4, np.float32)
    write(out / "inv-freq-f32-norms", st_bytes({k: v for k, v in extra.items() if v.ndim == 1}, "F32"))
    write(out / "empty-header", struct.pack("<Q", 2) + b"{}")
    write(out / "one-tensor", R.safetensors_bytes({"x": ("F32", (2,), b"\0" * 8)}))
    write(out / "truncated", st_bytes(w, "BF16")[:1500])


def config_seeds(out: Path) -> None:
    c = tiny_config()
    write(out / "tiny", json.dumps(c, indent=1))
    l3 = dict(c, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 32})
    gen = {"bos_token_id": 1, "eos_token_id": [2, 3, 7], "do_sample": True}
    write(out / "llama3-rope-with-generation-config", json.dumps(l3) + "\n//GEN\n" + json.dumps(gen))
    lin = dict(c, rope_scaling={"type": "linear", "factor": 2.0}, head_dim=8, eos_token_id=None,
               num_key_value_heads=1.0, tie_word_embeddings=False)
    write(out / "linear-rope", json.dumps(lin))
    rp = {k: v for k, v in c.items() if k != "rope_theta"}
    rp["rope_parameters"] = {"rope_type": "default", "rope_theta": 5e5}
    write(out / "rope-parameters", json.dumps(rp))
    write(out / "empty-object", "{}")
    odd = dict(c, architectures=["Llama\u00e9ForCausalLM", "LlamaForCausalLM"], model_type="llama",
               hidden_act="silu", rms_norm_eps=1e-6, max_position_embeddings=1 << 40)
    write(out / "bom-escapes", b"\xef\xbb\xbf" + json.dumps(odd, ensure_ascii=True).encode())
    # Issue 20: values valid as doubles that leave float32's range (NaN logits before the check).
    write(out / "rope-theta-1e-300", json.dumps(dict(c, rope_theta=1e-300)))
    write(out / "rms-norm-eps-1e300", json.dumps(dict(c, rms_norm_eps=1e300)))
    write(out / "rope-factor-1e-300", json.dumps(dict(c, rope_scaling={"rope_type": "linear", "factor": 1e-300})))


def tiny_gguf(path: Path, patch: dict | None = None, drop=()) -> None:
    """A convertible tiny llama: hidden 32, 1 block, the byte-level BPE vocabulary (265);
    metadata keys in ``drop`` left out and ``patch`` applied (the hand-made crashers)."""
    rng = np.random.default_rng(0)
    table = {}
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, k = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + k)
            k += 1
    table = {b: chr(c) for b, c in zip(bs, cs)}
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    merges = ["Ġ t", "h e", "Ġt he"]
    tokens = specials + [table[b] for b in range(256)] + [m.replace(" ", "") for m in merges]
    V, h, ffn = len(tokens), 32, 32

    def q(x):
        return (gw.Q4_0, x.shape, gw.quant_q4_0(x)) if x.ndim == 2 else (gw.F32, x.shape, gw.quant_f32(x))

    def w(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    ts = {"token_embd.weight": w(V, h), "output_norm.weight": 1 + w(h), "blk.0.attn_norm.weight": 1 + w(h),
          "blk.0.ffn_norm.weight": 1 + w(h), "blk.0.attn_q.weight": w(h, h), "blk.0.attn_k.weight": w(16, h),
          "blk.0.attn_v.weight": w(16, h), "blk.0.attn_output.weight": w(h, h), "blk.0.ffn_gate.weight": w(ffn, h),
          "blk.0.ffn_up.weight": w(ffn, h), "blk.0.ffn_down.weight": w(h, ffn)}
    meta = {
        "general.architecture": "llama", "general.name": "tiny",
        "llama.block_count": gw.Val(gw.UINT32, 1), "llama.context_length": gw.Val(gw.UINT32, 64),
        "llama.embedding_length": gw.Val(gw.UINT32, h), "llama.feed_forward_length": gw.Val(gw.UINT32, ffn),
        "llama.attention.head_count": gw.Val(gw.UINT32, 2), "llama.attention.head_count_kv": gw.Val(gw.UINT32, 1),
        "llama.rope.freq_base": 10000.0, "llama.attention.layer_norm_rms_epsilon": 1e-5,
        "llama.rope.dimension_count": gw.Val(gw.UINT32, 16), "llama.vocab_size": gw.Val(gw.UINT32, V),
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm", "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": gw.Val(gw.ARRAY, [3] * 3 + [1] * (V - 3), gw.INT32),
        "tokenizer.ggml.merges": merges, "tokenizer.ggml.bos_token_id": gw.Val(gw.UINT32, 1),
        "tokenizer.ggml.eos_token_id": gw.Val(gw.UINT32, 2), "tokenizer.ggml.add_bos_token": False,
        "tokenizer.chat_template": "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}",
    }
    meta = {k: v for k, v in {**meta, **(patch or {})}.items() if k not in drop}
    gw.write_gguf(path, meta, [(n, *q(x)) for n, x in ts.items()])


def gguf_seeds(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tiny_gguf(out / "tiny-llama-q4_0")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    k = rng.standard_normal((1, 256)).astype(np.float32)
    meta = {"general.architecture": "llama", "k.str": "hello", "k.arr": ["a", "bc"],
            "k.u8": gw.Val(gw.UINT8, 7), "k.i16": gw.Val(gw.INT16, -3), "k.u64": gw.Val(gw.UINT64, 2**40),
            "k.f64": gw.Val(gw.FLOAT64, 0.5), "k.bool": True, "k.nested": gw.Val(gw.ARRAY, [[1, 2], [3]], gw.ARRAY)}
    tensors = [("a", gw.Q8_0, x.shape, gw.quant_q8_0(x)), ("b", gw.F32, (3,), gw.quant_f32([1, 2, 3])),
               ("c", gw.Q4_1, x.shape, gw.quant_q4_1(x)), ("d", gw.Q5_0, x.shape, gw.quant_q5_0(x)),
               ("e", gw.F16, (2, 2), gw.quant_f16(np.ones((2, 2)))), ("f", gw.BF16, (4,), gw.quant_bf16(np.ones(4)))]
    if gw.Q6_K in gw.QUANTIZERS:
        tensors.append(("k", gw.Q6_K, k.shape, gw.QUANTIZERS[gw.Q6_K](k)))
    gw.write_gguf(out / "all-value-types", meta, tensors, alignment=64)
    gw.write_gguf(out / "v2-empty", {}, [], version=2)


def text_seeds(out: Path) -> None:
    samples = {
        "ascii": "The capital of France is Paris.",
        "emoji-cjk": "héllo 🌍 世界 – ok",
        "chatml": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        "stop": "one\n\ntwo\n\nthree END",
        "template": "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}",
        "bytes": "\x00\x01\x7f\xff\xfe",
    }
    for name, s in samples.items():
        write(out / name, s.encode("utf-8", "surrogatepass"))
    for mode in range(6):
        write(out / f"mode{mode}-random", bytes([mode]) + np.random.default_rng(mode).bytes(200))


def main() -> None:
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    (data / "config.json").write_text(json.dumps(tiny_config(), indent=1) + "\n")
    (data / "model.safetensors").write_bytes(st_bytes(R.random_weights(TINY, seed=0), "BF16"))
    corpus = HERE / "corpus"
    safetensors_seeds(corpus / "safetensors")
    config_seeds(corpus / "config")
    gguf_seeds(corpus / "gguf")
    text_seeds(corpus / "text")
    for d in sorted(corpus.iterdir()):
        files = list(d.iterdir())
        print(f"{d.name}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
