"""The benchmark's LFM2 tools: tools/make_checkpoint.py's lfm2 shapes (lfm2-1.2b, LiquidAI/LFM2-1.2B's
config; tiny-lfm2 for these tests), tools/gguf_export.py's llama.cpp ``lfm2`` export, and
llama.cpp and pyvt (importing that GGUF) computing the same logits from it.

The llama.cpp tests are skipped where llama-cpp-python (a bench-only dependency) is missing.
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

TINY = "tiny-lfm2"
BIG = "lfm2-1.2b"
TINY_CONV = [0, 2, 4]  # tiny-lfm2's convolution blocks (1 and 3 attend)


@pytest.fixture(scope="module")
def tiny_lfm2(tmp_path_factory) -> Path:
    return mc.make_checkpoint(TINY, tmp_path_factory.mktemp("lfm2"), quiet=True)


@pytest.fixture(scope="module")
def tiny_lfm2_q8(tiny_lfm2, tmp_path_factory) -> Path:
    return ge.export_gguf(tiny_lfm2, tmp_path_factory.mktemp("lfm2-gguf") / "m.Q8_0.gguf", quiet=True)


def _ids(n: int = 60, vocab: int = 512) -> list[int]:
    return [int(x) for x in np.random.default_rng(1).integers(3, vocab, n)]


# ------------------------------------------------------------------------------------------
# make_checkpoint
# ------------------------------------------------------------------------------------------


def test_lfm2_1_2b_shape():
    """LiquidAI/LFM2-1.2B's config as Lfm2Config reads it; the MLP 8192 wide after the
    auto-adjustment, as llama.cpp's lfm2 sizes LLM_TYPE_1_2B. Nothing is generated."""
    cfg = mc.llama_config(mc.SHAPES[BIG], BIG)
    assert cfg["architectures"] == ["Lfm2ForCausalLM"] and cfg["model_type"] == "lfm2"
    assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
            cfg["vocab_size"], cfg["conv_L_cache"]) == (2048, 16, 32, 8, 65536, 3)
    assert cfg["full_attn_idxs"] == [2, 5, 8, 10, 12, 14]
    assert [i for i, t in enumerate(cfg["layer_types"]) if t == "conv"] == [0, 1, 3, 4, 6, 7, 9, 11, 13, 15]
    assert (cfg["block_ff_dim"], cfg["block_auto_adjust_ff_dim"], cfg["block_ffn_dim_multiplier"],
            cfg["block_multiple_of"]) == (12288, True, 1.0, 256)
    assert mc.mlp_width(cfg) == 8192
    assert cfg["norm_eps"] == 1e-5 and cfg["rope_theta"] == 1e6 and cfg["max_position_embeddings"] == 128000
    assert cfg["tie_embedding"] is cfg["tie_word_embeddings"] is True
    assert cfg["_pyvt_random_checkpoint"]["conv_std"] == pytest.approx(1 / math.sqrt(3))
    specs = {n: (s, init) for n, s, init in mc.tensor_specs(cfg)}
    assert specs["model.layers.0.conv.in_proj.weight"] == ((6144, 2048), "normal")
    assert specs["model.layers.0.conv.conv.weight"] == ((2048, 1, 3), "conv")
    assert specs["model.layers.2.self_attn.k_proj.weight"] == ((512, 2048), "normal")
    assert specs["model.layers.2.self_attn.q_layernorm.weight"] == ((64,), "ones")
    assert specs["model.layers.15.feed_forward.w2.weight"] == ((2048, 8192), "normal")
    assert "model.layers.2.conv.in_proj.weight" not in specs and "model.layers.0.self_attn.q_proj.weight" not in specs
    assert "lm_head.weight" not in specs and "model.embedding_norm.weight" in specs
    assert 1.16e9 < mc.param_count(cfg) < 1.18e9  # LFM2-1.2B: 1.17B


def test_mlp_width_follows_lfm2mlp():
    """Lfm2MLP's width: int(2 ff / 3), times the multiplier, up to the multiple; as it is
    without the adjustment; no rounding with a null multiplier."""
    base = dict(model_type="lfm2", block_ff_dim=1000, block_auto_adjust_ff_dim=True, block_multiple_of=64)
    assert mc.mlp_width(dict(base, block_ffn_dim_multiplier=1.0)) == 704  # int(666.67) = 666 -> 704
    assert mc.mlp_width(dict(base, block_ffn_dim_multiplier=1.5)) == 1024  # 999 -> 1024
    assert mc.mlp_width(dict(base, block_ffn_dim_multiplier=None)) == 666
    assert mc.mlp_width(dict(base, block_auto_adjust_ff_dim=False)) == 1000
    assert mc.mlp_width({"intermediate_size": 5632}) == 5632  # (a Llama)


def test_tiny_lfm2_checkpoint(tiny_lfm2):
    cfg = json.loads((tiny_lfm2 / "config.json").read_text())
    assert cfg["layer_types"] == ["conv", "full_attention", "conv", "full_attention", "conv"]
    header, _ = _read_st_header(tiny_lfm2 / "model.safetensors")
    names = [n for n in header if n != "__metadata__"]
    assert names == [n for n, _, _ in mc.tensor_specs(cfg)]
    assert all(header[n]["dtype"] == "BF16" for n in names)
    k = _st_tensor(tiny_lfm2 / "model.safetensors", "model.layers.0.conv.conv.weight")
    assert k.shape == (64, 1, 3) and 0.45 < k.std() < 0.7  # conv_std 1/sqrt(3) = 0.577
    w = _st_tensor(tiny_lfm2 / "model.safetensors", "model.layers.0.conv.in_proj.weight")
    assert w.shape == (192, 64) and 0.015 < w.std() < 0.025
    assert (_st_tensor(tiny_lfm2 / "model.safetensors", "model.embedding_norm.weight") == 1).all()
    # cached: the same folder comes back without rewriting
    mtime = (tiny_lfm2 / "model.safetensors").stat().st_mtime_ns
    assert mc.make_checkpoint(TINY, tiny_lfm2.parent, quiet=True) == tiny_lfm2
    assert (tiny_lfm2 / "model.safetensors").stat().st_mtime_ns == mtime


def test_transformers_reads_the_tiny_lfm2_like_pyvt(tiny_lfm2):
    """The folder is a real Hugging Face LFM2 checkpoint: transformers loads it (no missing or
    unexpected tensors) and computes pyvt's logits."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from pyvt import _model

    ids = _ids(40)
    model, info = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_lfm2), dtype=torch.float32,
                                                                    output_loading_info=True)
    assert type(model).__name__ == "Lfm2ForCausalLM"
    assert not any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0].double().numpy()
    with _model.Model(str(tiny_lfm2), device="cpu", weight_format="bf16", kv_cache="f32") as m:
        assert m.info["family"] == "Lfm2"
        got = m.logits(ids).astype(np.float64)
    assert np.abs(ref).max() > 0.3
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5  # measured 2.0e-7


# ------------------------------------------------------------------------------------------
# gguf_export: lfm2 (no llama.cpp needed)
# ------------------------------------------------------------------------------------------


def test_lfm2_export_names_shapes_metadata(tiny_lfm2, tiny_lfm2_q8):
    """What convert_hf_to_gguf.py's LFM2Model writes (an F32 export of tiny-lfm2 by llama.cpp's
    own converter had the same lfm2.* metadata and the same 48 tensors, bit for bit)."""
    gguf = _pyvt_gguf()
    st = tiny_lfm2 / "model.safetensors"
    with gguf.read_gguf(tiny_lfm2_q8) as g:
        md = g.metadata
        assert md["general.architecture"] == "lfm2"
        kv = md["lfm2.attention.head_count_kv"]
        assert kv.dtype == np.int32 and kv.tolist() == [0, 2, 0, 2, 0]
        assert md["lfm2.shortconv.l_cache"] == 3 and md["lfm2.feed_forward_length"] == 128
        assert md["lfm2.attention.head_count"] == 4 and md["lfm2.block_count"] == 5
        assert md["lfm2.attention.layer_norm_rms_epsilon"] == pytest.approx(1e-5)
        assert md["lfm2.rope.freq_base"] == 1e6 and md["lfm2.vocab_size"] == 512
        assert "lfm2.rope.dimension_count" not in md and "lfm2.attention.key_length" not in md
        t = g.tensors
        assert "output_norm.weight" not in t and "output.weight" not in t
        assert t["token_embd_norm.weight"].type_name == "F32"
        for i in range(5):
            b = f"blk.{i}."
            conv = i in TINY_CONV
            assert (b + "shortconv.in_proj.weight" in t) is conv and (b + "attn_q.weight" in t) is not conv
            for n in ("attn_norm", "ffn_norm"):
                assert t[b + n + ".weight"].type_name == "F32"
            for n in ("ffn_gate", "ffn_up", "ffn_down"):
                assert t[b + n + ".weight"].type_name == "Q8_0"
        assert tuple(t["blk.0.shortconv.in_proj.weight"].shape) == (192, 64)
        assert t["blk.0.shortconv.in_proj.weight"].type_name == "Q8_0"
        # the kernel: Conv1d's [64, 1, 3] squeezed, F32, exactly the folder's
        assert t["blk.2.shortconv.conv.weight"].type_name == "F32"
        k = g.dequantize("blk.2.shortconv.conv.weight")
        assert k.shape == (64, 3)
        np.testing.assert_array_equal(k, _st_tensor(st, "model.layers.2.conv.conv.weight").reshape(64, 3))
        # Q and K as they are (NEOX rope: no permutation), the q/k layernorms F32
        for gname, hf in (("attn_q", "q_proj"), ("attn_k", "k_proj")):
            want = ge.dequantize_q8_0(ge.quantize_q8_0(_st_tensor(st, f"model.layers.1.self_attn.{hf}.weight")))
            np.testing.assert_array_equal(g.dequantize(f"blk.1.{gname}.weight").ravel(), want.ravel())
        assert t["blk.3.attn_q_norm.weight"].type_name == "F32" and tuple(t["blk.3.attn_k_norm.weight"].shape) == (16,)
        np.testing.assert_array_equal(
            g.dequantize("blk.3.attn_output.weight").ravel(),
            ge.dequantize_q8_0(ge.quantize_q8_0(_st_tensor(st, "model.layers.3.self_attn.out_proj.weight"))).ravel())


def test_lfm2_export_refuses_what_llamacpp_would_compute_differently(tiny_lfm2, tmp_path):
    import shutil

    cases = [({"conv_bias": True}, "conv_bias"),
             ({"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6}}, "rope scaling"),
             ({"layer_types": ["conv"] * 5}, "no block attends"),
             ({"layer_types": ["conv", "sliding_attention", "conv", "full_attention", "conv"]}, "layer_types"),
             ({"block_ff_dim": 384}, "feed_forward.w1 has 128 rows")]
    for i, (change, msg) in enumerate(cases):
        d = tmp_path / f"c{i}"
        shutil.copytree(tiny_lfm2, d)
        cfg = json.loads((d / "config.json").read_text())
        cfg.update(change)
        (d / "config.json").write_text(json.dumps(cfg))
        with pytest.raises(ValueError, match=msg):
            ge.export_gguf(d, tmp_path / f"c{i}.gguf", quiet=True)
        assert not (tmp_path / f"c{i}.gguf").exists()


def test_decode_bench_knows_lfm2(tiny_lfm2, tmp_path):
    """bench/decode.py lists lfm2-1.2b as a random model and exports LFM2 through the same
    cached path as the Llama shapes."""
    mod = _bench_module("decode")
    assert mod.MODELS[BIG]["source"] == "random" and mod.MODELS[TINY]["source"] == "random"
    dst = mod.export_q8_0(tiny_lfm2, tmp_path / "m.Q8_0.gguf", "gpt-2")
    assert ge.read_metadata(dst)["general.architecture"] == "lfm2"


# ------------------------------------------------------------------------------------------
# Against llama.cpp (bench-only dependency: skipped where llama-cpp-python is not installed)
# ------------------------------------------------------------------------------------------


def _pyvt_logits(path: Path, ids: list[int], **kw) -> tuple[np.ndarray, dict]:
    """pyvt.load_model(path.gguf): pyvt's import of llama.cpp's lfm2."""
    import pyvt

    with pyvt.load_model(path, progress=False, kv_cache="f32", **kw) as m:
        return m.logits(ids).astype(np.float64), dict(m.info)


def test_llamacpp_and_pyvt_compute_the_f32_export_alike(tiny_lfm2, tmp_path, monkeypatch):
    """The export's layout, exactly: llama.cpp (f32 KV cache) and pyvt importing the same F32
    GGUF (bfloat16-exact weights, run as bf16) agree to float32 rounding on every position, and
    both compute what the folder computes."""
    pytest.importorskip("llama_cpp")
    from pyvt import _model

    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    ids = _ids()
    out = ge.export_gguf(tiny_lfm2, tmp_path / "m.f32.gguf", qtype="f32", quiet=True)
    ref = _llamacpp_logits(out, ids, f32_kv=True)
    got, info = _pyvt_logits(out, ids, weight_format="bf16")
    assert info["family"] == "Lfm2"
    assert np.abs(ref).max() > 0.3
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5  # measured 2.1e-7
    np.testing.assert_array_equal(got.argmax(-1), ref.argmax(-1))
    with _model.Model(str(tiny_lfm2), device="cpu", weight_format="bf16", kv_cache="f32") as m:
        folder = m.logits(ids).astype(np.float64)
    assert np.abs(folder - ref).max() / np.abs(ref).max() < 1e-5


def test_llamacpp_and_pyvt_agree_on_the_q8_0_export(tiny_lfm2_q8, tmp_path, monkeypatch):
    """What the benchmark compares: llama.cpp on the Q8_0 export against pyvt on the same
    blocks (load_model(path.gguf), weight_format auto: int8). Both quantize (llama.cpp its
    activations too), so they agree to ~1e-2 of the largest logit."""
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    ids = _ids()
    ref = _llamacpp_logits(tiny_lfm2_q8, ids)
    got, info = _pyvt_logits(tiny_lfm2_q8, ids)
    assert info["family"] == "Lfm2" and info["weight_format"] == "int8"
    scale = np.abs(ref).max()
    err = np.abs(got - ref).max(-1) / scale
    assert err.max() < 3e-2, err.max()
    assert np.median(err) < 1e-2, np.median(err)
    same = got.argmax(-1) == ref.argmax(-1)
    assert same.mean() >= 0.9, same.mean()
    top2 = np.sort(ref, -1)[:, -2:]
    gap = (top2[:, 1] - top2[:, 0]) / scale
    assert np.all(gap[~same] < 2 * err[~same] + 1e-3)  # a disagreement is a near-tie


def test_llamacpp_requantizes_the_lfm2_export_to_q4_0(tiny_lfm2_q8, tmp_path):
    """bench/decode.py's 4-bit baseline: llama.cpp's own quantizer makes a Q4_0 of the lfm2
    export (linears Q4_0, the convolution kernel left F32) and llama.cpp runs it close to the
    Q8_0."""
    pytest.importorskip("llama_cpp")
    out = ge.requantize_with_llamacpp(tiny_lfm2_q8, tmp_path / "m.Q4_0.gguf", "q4_0")
    tab = {t["name"]: t for t in ge.read_tensor_table(out)}
    assert tab["blk.0.shortconv.in_proj.weight"]["type"] == "Q4_0"
    assert tab["blk.1.attn_q.weight"]["type"] == "Q4_0"
    assert tab["blk.0.shortconv.conv.weight"]["type"] == "F32"
    assert ge.read_metadata(out)["general.architecture"] == "lfm2"
    assert ge.decode_bytes_per_token(out) < ge.decode_bytes_per_token(tiny_lfm2_q8)
    ids = _ids()
    q4, q8 = _llamacpp_logits(out, ids), _llamacpp_logits(tiny_lfm2_q8, ids)
    assert np.corrcoef(q4.ravel(), q8.ravel())[0, 1] > 0.95
