"""The benchmark's mixture-of-experts tools: tools/make_checkpoint.py's Qwen3-MoE shapes
(qwen3-30b-a3b-4l for bench/decode.py, tiny-qwen3-moe here) and tools/gguf_export.py's
llama.cpp ``qwen3moe`` export, checked without llama.cpp (names, shapes, metadata, values,
bytes per token) and, where llama-cpp-python is installed (a bench-only dependency; CI has
none), against llama.cpp itself: its logits on the export against pyvt's on the folder.

Measured (2026-11-28, llama-cpp-python 0.3.36, tiny-qwen3-moe, 100 random ids): the F32 export
under llama.cpp (f32 KV cache) against pyvt bf16 (the same bfloat16-exact weights, f32 KV
cache): largest difference over the largest logit 3.4e-7, argmax equal everywhere. The Q8_0
export against pyvt int8 on the folder: 1.8e-2 (llama.cpp Q8_0 against its own F32: 1.9e-2;
pyvt int8 against its bf16: 0.9e-2), argmax on 94 of 100 rows, the others near-ties of logits
that span 0.75 (random weights at std 0.02).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import gguf_export as ge  # tools/, on pytest's pythonpath
import make_checkpoint as mc
from test_bench_tools import _bench_module, _llamacpp_logits, _pyvt_gguf, _read_st_header, _st_tensor

TINY = "tiny-qwen3-moe"
BIG = "qwen3-30b-a3b-4l"


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory) -> Path:
    return mc.make_checkpoint(TINY, tmp_path_factory.mktemp("moe"), quiet=True)


@pytest.fixture(scope="module")
def tiny_moe_q8(tiny_moe, tmp_path_factory) -> Path:
    return ge.export_gguf(tiny_moe, tmp_path_factory.mktemp("moe-gguf") / "m.Q8_0.gguf", quiet=True)


def _ids(n: int = 100, vocab: int = 512) -> list[int]:
    return [int(x) for x in np.random.default_rng(0).integers(3, vocab, n)]


# ------------------------------------------------------------------------------------------
# make_checkpoint
# ------------------------------------------------------------------------------------------


def test_qwen3_30b_a3b_4l_shape():
    """Qwen3-30B-A3B's config.json fields, 4 layers."""
    cfg = mc.llama_config(mc.SHAPES[BIG], BIG)
    want = dict(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", hidden_size=2048,
                num_hidden_layers=4, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
                num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768, intermediate_size=6144,
                norm_topk_prob=True, vocab_size=151936, rms_norm_eps=1e-6, rope_theta=1e6,
                max_position_embeddings=40960, tie_word_embeddings=False, decoder_sparse_step=1,
                mlp_only_layers=[], use_sliding_window=False)
    assert {k: cfg[k] for k in want} == want
    specs = {n: s for n, s, _ in mc.tensor_specs(cfg)}
    p = "model.layers.3."
    assert specs[p + "self_attn.q_proj.weight"] == (4096, 2048)
    assert specs[p + "self_attn.k_proj.weight"] == (512, 2048)
    assert specs[p + "self_attn.o_proj.weight"] == (2048, 4096)
    assert specs[p + "self_attn.q_norm.weight"] == specs[p + "self_attn.k_norm.weight"] == (128,)
    assert specs[p + "mlp.gate.weight"] == (128, 2048)
    assert specs[p + "mlp.experts.127.gate_proj.weight"] == specs[p + "mlp.experts.0.up_proj.weight"] == (768, 2048)
    assert specs[p + "mlp.experts.5.down_proj.weight"] == (2048, 768)
    assert not any(".mlp.gate_proj." in n or "mlp.experts.128." in n for n in specs)
    assert specs["lm_head.weight"] == (151936, 2048) and "model.layers.4.input_layernorm.weight" not in specs
    assert 3.10e9 < mc.param_count(cfg) < 3.13e9


def test_tiny_moe_checkpoint(tiny_moe):
    cfg = json.loads((tiny_moe / "config.json").read_text())
    assert cfg["model_type"] == "qwen3_moe" and cfg["architectures"] == ["Qwen3MoeForCausalLM"]
    assert (cfg["num_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"], cfg["head_dim"]) == (8, 2, 32, 16)
    header, _ = _read_st_header(tiny_moe / "model.safetensors")
    assert set(header) - {"__metadata__"} == {n for n, _, _ in mc.tensor_specs(cfg)}
    assert header["model.layers.1.mlp.experts.7.down_proj.weight"]["shape"] == [64, 32]
    assert header["model.layers.0.mlp.gate.weight"]["shape"] == [8, 64]
    st = tiny_moe / "model.safetensors"
    np.testing.assert_array_equal(_st_tensor(st, "model.layers.0.self_attn.q_norm.weight"), np.ones(16, np.float32))
    # The router has its own scale (1/sqrt(hidden)): logits ~ N(0, 1) for a unit-RMS input.
    router = np.concatenate([_st_tensor(st, f"model.layers.{i}.mlp.gate.weight").ravel() for i in range(2)])
    assert cfg["_pyvt_random_checkpoint"]["router_std"] == pytest.approx(1 / 8)
    assert 0.1 < router.std() < 0.15
    expert = _st_tensor(st, "model.layers.0.mlp.experts.3.up_proj.weight")
    assert 0.015 < expert.std() < 0.025
    # Routing is not degenerate: unit-RMS inputs (the post-attention norm's output) spread over
    # every expert, and the top-2 weights are neither uniform nor one-hot.
    x = np.random.default_rng(1).standard_normal((4096, 64)).astype(np.float32)
    logits = x @ _st_tensor(st, "model.layers.0.mlp.gate.weight").T
    top = np.argsort(-logits, axis=1)[:, :2]
    counts = np.bincount(top.ravel(), minlength=8)
    assert counts.min() > 0.3 * counts.mean()
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    share = np.sort(p, 1)[:, -1] / np.sort(p, 1)[:, -2:].sum(1)  # the top expert's renormalized weight
    assert 0.55 < np.median(share) < 0.85


def test_transformers_reads_the_tiny_moe_like_pyvt(tiny_moe):
    """The folder is a real Hugging Face Qwen3-MoE checkpoint: transformers loads it (no missing
    or unexpected tensors) and computes pyvt's logits."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from pyvt import _model

    ids = _ids(40)
    model, info = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_moe), dtype=torch.float32,
                                                                    output_loading_info=True)
    assert not any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0].double().numpy()
    with _model.Model(str(tiny_moe), device="cpu", weight_format="bf16", kv_cache="f32") as m:
        got = m.logits(ids).astype(np.float64)
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5


# ------------------------------------------------------------------------------------------
# gguf_export: qwen3moe (no llama.cpp needed)
# ------------------------------------------------------------------------------------------


def test_qwen3moe_export_names_shapes_metadata(tiny_moe, tiny_moe_q8):
    gguf = _pyvt_gguf()
    st = tiny_moe / "model.safetensors"
    with gguf.read_gguf(tiny_moe_q8) as g:
        md = g.metadata
        assert md["general.architecture"] == "qwen3moe"
        want = {"vocab_size": 512, "context_length": 1024, "embedding_length": 64, "block_count": 2,
                "feed_forward_length": 128, "expert_count": 8, "expert_used_count": 2,
                "expert_feed_forward_length": 32, "rope.dimension_count": 16, "attention.head_count": 4,
                "attention.head_count_kv": 2, "attention.key_length": 16, "attention.value_length": 16,
                "rope.freq_base": 1e6}
        assert {k: md[f"qwen3moe.{k}"] for k in want} == want
        assert abs(md["qwen3moe.attention.layer_norm_rms_epsilon"] - 1e-6) < 1e-12
        assert not any(k.startswith("llama.") for k in md)
        assert md["general.file_type"] == 7 and md[ge.EXPORT_KEY] == ge.EXPORT_VERSION

        per_block = {"attn_norm": ((64,), "F32"), "attn_q": ((64, 64), "Q8_0"), "attn_k": ((32, 64), "Q8_0"),
                     "attn_v": ((32, 64), "Q8_0"), "attn_output": ((64, 64), "Q8_0"),
                     "attn_q_norm": ((16,), "F32"), "attn_k_norm": ((16,), "F32"), "ffn_norm": ((64,), "F32"),
                     "ffn_gate_inp": ((8, 64), "F32"), "ffn_gate_exps": ((8, 32, 64), "Q8_0"),
                     "ffn_up_exps": ((8, 32, 64), "Q8_0"), "ffn_down_exps": ((8, 64, 32), "Q8_0")}
        want_t = {"token_embd.weight": ((512, 64), "Q8_0"), "output_norm.weight": ((64,), "F32"),
                  "output.weight": ((512, 64), "Q8_0")}
        for i in range(2):
            want_t.update({f"blk.{i}.{k}.weight": v for k, v in per_block.items()})
        assert {n: (t.shape, t.type_name) for n, t in g.tensors.items()} == want_t

        def close(got, ref, name):  # within Q8_0's rounding: half a step of each block's scale
            tol = np.abs(ref.reshape(-1, 32)).max(axis=1, keepdims=True) / 127 * 0.57 + 1e-6
            assert np.all(np.abs((got - ref).reshape(-1, 32)) <= tol), name

        # Q and K rows as they are (NEOX rope: no permutation, unlike llama).
        close(g.dequantize("blk.1.attn_q.weight"), _st_tensor(st, "model.layers.1.self_attn.q_proj.weight"), "q")
        close(g.dequantize("blk.0.attn_k.weight"), _st_tensor(st, "model.layers.0.self_attn.k_proj.weight"), "k")
        # The router exactly (F32 of BF16 values).
        np.testing.assert_array_equal(g.dequantize("blk.1.ffn_gate_inp.weight"),
                                      _st_tensor(st, "model.layers.1.mlp.gate.weight"))
        # The experts stacked in expert order.
        for gname, hf in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
            got = g.dequantize(f"blk.1.ffn_{gname}_exps.weight")
            for e in range(8):
                close(got[e], _st_tensor(st, f"model.layers.1.mlp.experts.{e}.{hf}.weight"), f"{gname} {e}")
        np.testing.assert_array_equal(g.dequantize("blk.0.attn_q_norm.weight"), np.ones(16, np.float32))

        # Bytes per decoded token: 2 of the 8 experts of every *_exps tensor, everything else
        # but the (untied) embedding table whole.
        exps = sum(t.nbytes for n, t in g.tensors.items() if n.endswith("_exps.weight"))
        rest = sum(t.nbytes for n, t in g.tensors.items() if not n.endswith("_exps.weight")
                   and n != "token_embd.weight")
        assert ge.decode_bytes_per_token(tiny_moe_q8) == rest + exps * 2 // 8


def test_qwen3moe_export_f32_values(tiny_moe, tmp_path):
    gguf = _pyvt_gguf()
    out = ge.export_gguf(tiny_moe, tmp_path / "m.f32.gguf", qtype="f32", quiet=True)
    st = tiny_moe / "model.safetensors"
    with gguf.read_gguf(out) as g:
        assert g.tensors["blk.0.ffn_down_exps.weight"].type_name == "F32"
        down = g.dequantize("blk.0.ffn_down_exps.weight")
        ref = np.stack([_st_tensor(st, f"model.layers.0.mlp.experts.{e}.down_proj.weight") for e in range(8)])
        np.testing.assert_array_equal(down, ref)
        np.testing.assert_array_equal(g.dequantize("blk.0.attn_k.weight"),
                                      _st_tensor(st, "model.layers.0.self_attn.k_proj.weight"))


def test_qwen3moe_export_refuses_what_llamacpp_would_compute_differently(tiny_moe, tmp_path):
    for change, what in ((dict(norm_topk_prob=False), "renormalizes"), (dict(mlp_only_layers=[1]), "every layer"),
                         (dict(decoder_sparse_step=2), "every layer"),
                         (dict(rope_scaling={"rope_type": "yarn", "factor": 4.0}), "rope scaling"),
                         (dict(model_type="mixtral", num_local_experts=8), "only qwen3_moe")):
        folder = tmp_path / f"bad{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        for f in tiny_moe.iterdir():
            (folder / f.name).symlink_to(f)
        (folder / "config.json").unlink()
        cfg = json.loads((tiny_moe / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**cfg, **change}))
        with pytest.raises(ValueError, match=what):
            ge.export_gguf(folder, tmp_path / "bad.gguf", quiet=True)


def test_pyvt_weight_bytes_beside_the_gguf(tiny_moe, tiny_moe_q8):
    """The two bandwidth-floor numerators count the same thing: pyvt int8's weight_bytes and the
    Q8_0 file's decode bytes both read k of E experts, the whole router and lm_head (Q8_0 adds a
    2-byte scale per 32 weights, pyvt keeps its router in float32 and its scales per row)."""
    from pyvt import _model

    with _model.Model(str(tiny_moe), device="cpu", weight_format="int8") as m:
        info = dict(m.info)
    dense = mc.tensor_specs(json.loads((tiny_moe / "config.json").read_text()))
    all_params = sum(math.prod(s) for n, s, _ in dense if n != "model.embed_tokens.weight")
    assert info["weight_bytes"] < info["total_bytes"] and info["weight_bytes"] < all_params
    assert 0.8 < ge.decode_bytes_per_token(tiny_moe_q8) / info["weight_bytes"] < 1.25


def test_decode_bench_prepares_the_moe_shape(tiny_moe, tmp_path):
    """bench/decode.py knows the MoE shapes and exports them through the same cached path."""
    mod = _bench_module("decode")
    assert mod.MODELS[BIG]["source"] == "random" and mod.MODELS[TINY]["source"] == "random"
    dst = mod.export_q8_0(tiny_moe, tmp_path / "m.Q8_0.gguf", "gpt-2")
    assert ge.read_metadata(dst)["general.architecture"] == "qwen3moe"


# ------------------------------------------------------------------------------------------
# Against llama.cpp (bench-only dependency: skipped where llama-cpp-python is not installed)
# ------------------------------------------------------------------------------------------


def test_llamacpp_f32_export_matches_pyvt_bf16(tiny_moe, tmp_path):
    """The export's layout, exactly: llama.cpp on the F32 export (f32 KV cache) computes pyvt
    bf16's logits on the folder (the same bfloat16-exact weights) to float32 rounding."""
    pytest.importorskip("llama_cpp")
    from pyvt import _model

    ids = _ids()
    out = ge.export_gguf(tiny_moe, tmp_path / "m.f32.gguf", qtype="f32", quiet=True)
    ref = _llamacpp_logits(out, ids, f32_kv=True)
    with _model.Model(str(tiny_moe), device="cpu", weight_format="bf16", kv_cache="f32") as m:
        got = m.logits(ids).astype(np.float64)
    assert np.abs(ref).max() > 0.3
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5  # measured 3.4e-7
    np.testing.assert_array_equal(got.argmax(-1), ref.argmax(-1))


def test_llamacpp_q8_0_export_agrees_with_pyvt_int8(tiny_moe, tiny_moe_q8):
    """What the benchmark compares: llama.cpp on the Q8_0 export against pyvt int8 on the folder.
    Both quantize (llama.cpp its activations too), so they agree to ~1e-2 of the largest logit;
    argmax differs only where the logits' top two are near-ties."""
    pytest.importorskip("llama_cpp")
    from pyvt import _model

    ids = _ids()
    ref = _llamacpp_logits(tiny_moe_q8, ids)
    with _model.Model(str(tiny_moe), device="cpu", weight_format="int8") as m:
        got = m.logits(ids).astype(np.float64)
    scale = np.abs(ref).max()
    err = np.abs(got - ref).max(-1) / scale
    assert err.max() < 5e-2, err.max()  # measured 1.8e-2
    assert np.median(err) < 1.5e-2  # measured 6.5e-3
    same = got.argmax(-1) == ref.argmax(-1)
    assert same.mean() >= 0.9, same.mean()  # measured 0.94
    top2 = np.sort(ref, -1)[:, -2:]
    gap = (top2[:, 1] - top2[:, 0]) / scale
    assert np.all(gap[~same] < 2 * err[~same] + 1e-3)  # a disagreement is a near-tie


def test_llamacpp_requantizes_the_moe_export_to_q4_0(tiny_moe_q8, tmp_path):
    """bench/decode.py's 4-bit baseline: llama.cpp's own quantizer makes a Q4_0 of the qwen3moe
    export (experts Q4_0, router left F32) and llama.cpp runs it close to the Q8_0."""
    pytest.importorskip("llama_cpp")
    out = ge.requantize_with_llamacpp(tiny_moe_q8, tmp_path / "m.Q4_0.gguf", "q4_0")
    tab = {t["name"]: t for t in ge.read_tensor_table(out)}
    assert tab["blk.0.ffn_up_exps.weight"]["type"] == "Q4_0" and tab["blk.0.ffn_up_exps.weight"]["shape"] == (8, 32, 64)
    assert tab["blk.1.ffn_down_exps.weight"]["type"] == "Q4_0"
    assert tab["blk.0.ffn_gate_inp.weight"]["type"] == "F32"
    meta = ge.read_metadata(out)
    assert meta["general.architecture"] == "qwen3moe" and meta["qwen3moe.expert_used_count"] == 2
    assert ge.decode_bytes_per_token(out) < ge.decode_bytes_per_token(tiny_moe_q8)
    ids = _ids()
    q4, q8 = _llamacpp_logits(out, ids), _llamacpp_logits(tiny_moe_q8, ids)
    assert np.corrcoef(q4.ravel(), q8.ravel())[0, 1] > 0.95  # measured 0.993
