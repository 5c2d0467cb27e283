"""The benchmark's tools: tools/make_checkpoint.py (random-weight checkpoints) and
tools/gguf_export.py (HF folder -> llama.cpp GGUF). Fast, no torch."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
import gguf_export as ge  # tools/, on pytest's pythonpath
import make_checkpoint as mc


def _pyvt_gguf():
    """pyvt.gguf (the converter's reader); from the source tree when pyvt is not built."""
    try:
        from pyvt import gguf

        return gguf
    except Exception:  # noqa: BLE001 - an unbuilt pyvt fails in its native import
        pass
    path = REPO / "pyvt" / "gguf.py"
    if not path.is_file():
        pytest.skip("pyvt/gguf.py not there yet")
    name = "_pyvt_gguf_from_source"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _llamacpp_logits(path: Path, ids: list[int], f32_kv: bool = False) -> np.ndarray:
    """llama.cpp's logits of every position of `ids` on the GGUF at `path` (2 threads, context 256;
    f32_kv: F32 keys and values). Skipped where llama-cpp-python is not installed (bench-only)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    kw = dict(type_k=0, type_v=0) if f32_kv else {}  # GGML_TYPE_F32 keys and values
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=256, n_batch=256, logits_all=True, verbose=False,
                          n_threads=2, **kw)
    try:
        llm.eval(ids)
        return np.array(llm.scores[: len(ids)], np.float64)
    finally:
        llm.close()


def _bench_module(name: str):
    """bench/<name>.py as a fresh module (bench/ on sys.path while it loads: it imports its
    neighbours)."""
    spec = importlib.util.spec_from_file_location(f"_{name}_bench", REPO / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REPO / "bench"))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(REPO / "bench"))
    return mod


def _read_st_header(path: Path) -> tuple[dict, int]:
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8 : 8 + n]), 8 + n


def _st_tensor(path: Path, name: str) -> np.ndarray:
    header, base = _read_st_header(path)
    m = header[name]
    a, b = m["data_offsets"]
    u = np.frombuffer(path.read_bytes()[base + a : base + b], "<u2").astype(np.uint32) << 16
    return u.view(np.float32).reshape(m["shape"])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return mc.make_checkpoint("tiny", tmp_path_factory.mktemp("ckpt"), quiet=True)


TINY_TIED_LLAMA3 = dict(
    hidden_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
    intermediate_size=96, vocab_size=400, tie_word_embeddings=True, rope_theta=500000.0,
    rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=64),
    max_position_embeddings=512,
)


# ------------------------------------------------------------------------------------------
# make_checkpoint
# ------------------------------------------------------------------------------------------


def test_named_shapes_are_exact():
    t = mc.llama_config(mc.SHAPES["tinyllama-1.1b"])
    assert (t["hidden_size"], t["num_hidden_layers"], t["num_attention_heads"], t["num_key_value_heads"],
            t["intermediate_size"], t["vocab_size"], t["tie_word_embeddings"], t["rope_theta"],
            t["rms_norm_eps"], t["head_dim"]) == (2048, 22, 32, 4, 5632, 32000, False, 10000.0, 1e-5, 64)
    assert 1.09e9 < mc.param_count(t) < 1.11e9
    l3 = mc.llama_config(mc.SHAPES["llama-3.2-1b"])
    assert (l3["hidden_size"], l3["num_hidden_layers"], l3["num_attention_heads"], l3["num_key_value_heads"],
            l3["head_dim"], l3["intermediate_size"], l3["vocab_size"], l3["tie_word_embeddings"],
            l3["rope_theta"]) == (2048, 16, 32, 8, 64, 8192, 128256, True, 500000.0)
    assert l3["rope_scaling"] == dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                      original_max_position_embeddings=8192)
    assert "lm_head.weight" not in {n for n, _, _ in mc.tensor_specs(l3)}
    l2 = mc.llama_config(mc.SHAPES["llama-2-7b"])
    assert (l2["hidden_size"], l2["num_hidden_layers"], l2["num_attention_heads"], l2["num_key_value_heads"],
            l2["intermediate_size"], l2["vocab_size"]) == (4096, 32, 32, 32, 11008, 32000)
    assert 6.7e9 < mc.param_count(l2) < 6.8e9


def test_checkpoint_files_and_config(tiny):
    for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
              "generation_config.json"):
        assert (tiny / f).is_file(), f
    cfg = json.loads((tiny / "config.json").read_text())
    s = mc.SHAPES["tiny"]
    for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
              "intermediate_size", "vocab_size", "tie_word_embeddings", "rope_theta", "rms_norm_eps"):
        assert cfg[k] == s[k], k
    assert cfg["head_dim"] == 16 and cfg["architectures"] == ["LlamaForCausalLM"]
    assert cfg["model_type"] == "llama" and cfg["torch_dtype"] == "bfloat16"
    assert (tiny / "model.safetensors").stat().st_size < 2 * 2**20


def test_safetensors_layout(tiny):
    path = tiny / "model.safetensors"
    header, base = _read_st_header(path)
    assert base % 8 == 0
    cfg = json.loads((tiny / "config.json").read_text())
    specs = mc.tensor_specs(cfg)
    assert set(header) - {"__metadata__"} == {n for n, _, _ in specs}
    spans = sorted(tuple(v["data_offsets"]) for k, v in header.items() if k != "__metadata__")
    assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert base + spans[-1][1] == path.stat().st_size
    for name, shape, init in specs:
        m = header[name]
        assert m["dtype"] == "BF16" and tuple(m["shape"]) == shape
        assert m["data_offsets"][1] - m["data_offsets"][0] == 2 * int(np.prod(shape))
    assert np.all(_st_tensor(path, "model.norm.weight") == 1.0)
    emb = _st_tensor(path, "model.embed_tokens.weight")
    assert abs(float(emb.mean())) < 1e-3 and 0.019 < float(emb.std()) < 0.021


def test_safetensors_library_reads_it(tiny):
    safetensors = pytest.importorskip("safetensors")
    with safetensors.safe_open(str(tiny / "model.safetensors"), "numpy") as f:
        keys = set(f.keys())
        assert "model.layers.1.mlp.down_proj.weight" in keys and "lm_head.weight" in keys
        sl = f.get_slice("model.layers.0.self_attn.k_proj.weight")
        assert sl.get_shape() == [32, 64] and sl.get_dtype() == "BF16"


def test_deterministic_and_cached(tiny, tmp_path):
    again = mc.make_checkpoint("tiny", tmp_path, quiet=True)
    assert (again / "model.safetensors").read_bytes() == (tiny / "model.safetensors").read_bytes()
    mtime = (again / "model.safetensors").stat().st_mtime_ns
    assert mc.make_checkpoint("tiny", tmp_path, quiet=True) == again
    assert (again / "model.safetensors").stat().st_mtime_ns == mtime  # reused, not rewritten
    other = mc.make_checkpoint("tiny", tmp_path / "s1", seed=1, quiet=True)
    assert (other / "model.safetensors").read_bytes() != (tiny / "model.safetensors").read_bytes()


def test_threads_do_not_change_the_bytes(tmp_path):
    # jobs > 1 computes tensors ahead in threads; every tensor has its own generator
    one = mc.make_checkpoint("tiny", tmp_path / "j1", jobs=1, quiet=True)
    three = mc.make_checkpoint("tiny", tmp_path / "j3", jobs=3, quiet=True)
    assert (three / "model.safetensors").read_bytes() == (one / "model.safetensors").read_bytes()


def test_bf16_rounding():
    x = np.array([1.0, -2.5, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, 3.0e-3, -7.7e4], np.float32)
    got = mc.bf16_bits(x)
    # 1 + 2^-8 is a tie -> even (1.0); 1 + 3*2^-8 is a tie -> even (1 + 2^-6); just above a tie rounds up
    assert got[0] == 0x3F80 and got[1] == 0xC020 and got[2] == 0x3F80 and got[3] == 0x3F82 and got[4] == 0x3F81
    ml = pytest.importorskip("ml_dtypes")
    y = np.random.default_rng(0).standard_normal(10000).astype(np.float32)
    np.testing.assert_array_equal(mc.bf16_bits(y), y.astype(ml.bfloat16).view(np.uint16))


def test_tokenizer(tiny):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tiny / "tokenizer.json"))
    assert tok.get_vocab_size() <= mc.SHAPES["tiny"]["vocab_size"]
    ids = tok.encode("Hello, world!").ids
    assert ids[0] == 1 and tok.decode(ids[1:]) == "Hello, world!"


# ------------------------------------------------------------------------------------------
# gguf_export
# ------------------------------------------------------------------------------------------


def _q8_0_reference(x: np.ndarray) -> np.ndarray:
    """ggml quantize_row_q8_0_ref, one block at a time, scalar float32 arithmetic."""
    out = []
    for blk in x.reshape(-1, 32):
        amax = np.float32(np.abs(blk).max())
        d = np.float32(amax / np.float32(127))
        idv = np.float32(1) / d if d else np.float32(0)
        qs = []
        for v in blk:
            y = np.float32(v * idv)
            a = abs(y)
            q = np.floor(a) + (1 if a - np.floor(a) >= 0.5 else 0)  # roundf: half away from zero
            qs.append(int(np.sign(y) * q))
        out.append(np.concatenate([np.array([d], np.float16).view(np.uint8), np.array(qs, np.int8).view(np.uint8)]))
    return np.stack(out)


def test_q8_0_matches_ggml_reference():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 64)) * 0.05).astype(np.float32)
    x[0, :32] = 0.0  # an all-zero block: d = 0, q = 0
    x[1, :32] = np.linspace(-1, 1, 32, dtype=np.float32)
    x[2, :32] = np.float32(0.5) / np.float32(127) * np.arange(-16, 16, dtype=np.float32)  # exact halves
    x[2, 0] = 1.0
    got = ge.quantize_q8_0(x)
    np.testing.assert_array_equal(got, _q8_0_reference(x))
    gg = pytest.importorskip("gguf")
    if hasattr(gg, "quants"):
        ref = gg.quants.quantize(x, gg.GGMLQuantizationType.Q8_0).reshape(-1, 34)
        np.testing.assert_array_equal(got, ref)


def test_roundf_rounds_half_away_from_zero_exactly():
    """pyvt.gguf._roundf (Q8_0's rounding) is C roundf on float32: ties away from zero, and the
    float32 just below 0.5 rounds down (a float32 x + 0.5 would round it up)."""
    from pyvt.gguf import _roundf

    below = np.nextafter(np.float32(0.5), np.float32(0))
    x = np.array([0.5, -0.5, 1.5, -1.5, 2.5, 126.5, -126.5, below, -below, 0.0, -0.0, 3.2, -3.7], np.float32)
    want = [math.copysign(math.floor(abs(float(v)) + 0.5), float(v)) for v in x]  # exact in float64
    np.testing.assert_array_equal(_roundf(x), np.array(want))


def test_q8_0_roundtrip_error():
    x = (np.random.default_rng(4).standard_normal((8, 256)) * 0.02).astype(np.float32)
    y = ge.dequantize_q8_0(ge.quantize_q8_0(x), x.shape)
    amax = np.abs(x.reshape(-1, 32)).max(axis=1, keepdims=True)
    err = np.abs((y - x).reshape(-1, 32))
    # half a step from rounding, plus the f16 scale's error times |q| <= 127 (~0.06 step)
    assert np.all(err <= amax / 127 * 0.57 + 1e-7)


def test_qk_permutation():
    hd, nh = 8, 3
    w = np.arange(nh * hd, dtype=np.float32)[:, None] * np.ones((1, 4), np.float32)
    p = ge.permute_qk(w, nh)
    for h in range(nh):
        for i in range(hd // 2):
            # GGUF interleaves the rotary pairs: (i, i + hd/2) of HF -> rows (2i, 2i+1)
            assert p[h * hd + 2 * i, 0] == h * hd + i
            assert p[h * hd + 2 * i + 1, 0] == h * hd + hd // 2 + i
    np.testing.assert_array_equal(ge.unpermute_qk(p, nh), w)


def test_gguf_export_roundtrip(tiny, tmp_path):
    gguf = _pyvt_gguf()
    out = ge.export_gguf(tiny, tmp_path / "tiny.gguf", quiet=True)
    cfg = json.loads((tiny / "config.json").read_text())
    with gguf.read_gguf(out) as g:
        md = g.metadata
        assert g.version == 3
        assert md["general.architecture"] == "llama"
        assert md["llama.embedding_length"] == 64 and md["llama.block_count"] == 2
        assert md["llama.feed_forward_length"] == 128 and md["llama.context_length"] == 1024
        assert md["llama.attention.head_count"] == 4 and md["llama.attention.head_count_kv"] == 2
        assert md["llama.rope.dimension_count"] == 16
        assert md["llama.rope.freq_base"] == 10000.0
        assert abs(md["llama.attention.layer_norm_rms_epsilon"] - 1e-5) < 1e-10
        assert md["general.file_type"] == 7
        assert md["tokenizer.ggml.model"] == "gpt2"
        assert len(md["tokenizer.ggml.tokens"]) == cfg["vocab_size"] == len(md["tokenizer.ggml.token_type"])
        assert md["tokenizer.ggml.bos_token_id"] == 1 and md["tokenizer.ggml.eos_token_id"] == 2
        assert len(md["tokenizer.ggml.merges"]) > 0
        assert "tokenizer.chat_template" not in md  # the folder has none

    # With a template in tokenizer_config.json, the file carries it (llama.cpp uses it for chat).
    folder = tmp_path / "chat"
    shutil.copytree(tiny, folder)
    template = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    tc = json.loads((folder / "tokenizer_config.json").read_text()) if (folder / "tokenizer_config.json").is_file() else {}
    (folder / "tokenizer_config.json").write_text(json.dumps({**tc, "chat_template": template}))
    with gguf.read_gguf(ge.export_gguf(folder, tmp_path / "chat.gguf", quiet=True)) as g:
        assert g.metadata["tokenizer.chat_template"] == template
    meta = ge.read_metadata(tmp_path / "chat.gguf")  # the exporter's own header reader agrees
    assert meta["tokenizer.chat_template"] == template and meta["llama.block_count"] == 2
    assert meta[ge.EXPORT_KEY] == ge.EXPORT_VERSION and "tokenizer.ggml.tokens" not in meta  # no arrays
    with gguf.read_gguf(out) as g:

        names = set(g.tensors)
        assert {"token_embd.weight", "output_norm.weight", "output.weight", "blk.1.ffn_down.weight"} <= names
        assert len(names) == 2 + 2 * 9 + 1
        assert g.tensors["blk.0.attn_norm.weight"].type_name == "F32"
        assert g.tensors["blk.0.attn_q.weight"].type_name == "Q8_0"
        assert g.tensors["blk.0.ffn_up.weight"].shape == (128, 64)

        st = tiny / "model.safetensors"
        pairs = [("token_embd.weight", "model.embed_tokens.weight", None),
                 ("output.weight", "lm_head.weight", None),
                 ("blk.1.ffn_down.weight", "model.layers.1.mlp.down_proj.weight", None),
                 ("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", None),
                 ("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 4),
                 ("blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 2)]
        for gname, hname, heads in pairs:
            ref = _st_tensor(st, hname)
            got = g.dequantize(gname)
            if heads is not None:
                assert np.abs(got - ref).max() > 0.01  # really permuted
                got = ge.unpermute_qk(got, heads)
            tol = np.abs(ref.reshape(-1, 32)).max(axis=1, keepdims=True) / 127 * 0.57 + 1e-6
            assert np.all(np.abs((got - ref).reshape(-1, 32)) <= tol), gname
        np.testing.assert_array_equal(g.dequantize("output_norm.weight"), np.ones(64, np.float32))

        total = sum(t.nbytes for n, t in g.tensors.items() if n != "token_embd.weight")
        assert ge.decode_bytes_per_token(out) == total


def test_gguf_export_tied_llama3(tmp_path):
    gguf = _pyvt_gguf()
    folder = mc.make_checkpoint(TINY_TIED_LLAMA3, tmp_path, name="tied", quiet=True)
    out = ge.export_gguf(folder, tmp_path / "tied.gguf", qtype="f16", quiet=True)
    with gguf.read_gguf(out) as g:
        assert "output.weight" not in g.tensors
        assert g.metadata["llama.attention.key_length"] == 32  # head_dim != hidden / heads
        assert g.metadata["llama.rope.dimension_count"] == 32
        assert g.tensors["blk.0.attn_q.weight"].type_name == "F16"
        rf = g.dequantize("rope_freqs.weight")
        assert rf.shape == (16,) and rf[0] == 1.0 and rf[-1] == 32.0
        assert np.all((rf >= 1.0) & (rf <= 32.0)) and np.all(np.diff(rf) >= 0)
        k = ge.unpermute_qk(g.dequantize("blk.0.attn_k.weight"), 1)
        ref = _st_tensor(folder / "model.safetensors", "model.layers.0.self_attn.k_proj.weight")
        np.testing.assert_allclose(k, ref, rtol=2e-3, atol=1e-6)
        assert ge.decode_bytes_per_token(out) == sum(t.nbytes for t in g.tensors.values())


# ------------------------------------------------------------------------------------------
# End to end: llama.cpp runs the exported GGUF like a numpy reference of the HF model
# ------------------------------------------------------------------------------------------


def _reference_logits(folder: Path, ids: list[int]) -> np.ndarray:
    """A plain numpy Llama forward in HF conventions (rotate-half RoPE, llama3 scaling)."""
    cfg = json.loads((folder / "config.json").read_text())
    st = folder / "model.safetensors"
    W = lambda n: _st_tensor(st, n).astype(np.float64)  # noqa: E731
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    inv = 1.0 / cfg["rope_theta"] ** (np.arange(0, hd, 2) / hd)
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type") == "llama3":  # transformers' _compute_llama3_parameters
        lo, hi = rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wl = 2 * np.pi / inv
        smooth = (old / wl - lo) / (hi - lo)
        scaled = np.where(wl > old / lo, inv / rs["factor"], inv)
        mid = (wl <= old / lo) & (wl >= old / hi)
        inv = np.where(mid, (1 - smooth) * scaled / rs["factor"] + smooth * scaled, scaled)
    pos = np.arange(len(ids))[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([pos, pos], 1)), np.sin(np.concatenate([pos, pos], 1))

    def rope(x):  # [T, heads, hd]
        rot = np.concatenate([-x[..., hd // 2:], x[..., : hd // 2]], -1)
        return x * cos[:, None] + rot * sin[:, None]

    def norm(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    T = len(ids)
    h = W("model.embed_tokens.weight")[ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = norm(h, W(p + "input_layernorm.weight"))
        q = rope((x @ W(p + "self_attn.q_proj.weight").T).reshape(T, nh, hd))
        k = rope((x @ W(p + "self_attn.k_proj.weight").T).reshape(T, nkv, hd))
        v = (x @ W(p + "self_attn.v_proj.weight").T).reshape(T, nkv, hd)
        k, v = np.repeat(k, nh // nkv, 1), np.repeat(v, nh // nkv, 1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        o = np.einsum("hts,shd->thd", a, v).reshape(T, nh * hd)
        h = h + o @ W(p + "self_attn.o_proj.weight").T
        x = norm(h, W(p + "post_attention_layernorm.weight"))
        g, u = x @ W(p + "mlp.gate_proj.weight").T, x @ W(p + "mlp.up_proj.weight").T
        h = h + (g / (1 + np.exp(-g)) * u) @ W(p + "mlp.down_proj.weight").T
    head = "lm_head.weight" if not cfg["tie_word_embeddings"] else "model.embed_tokens.weight"
    return norm(h, W("model.norm.weight")) @ W(head).T


@pytest.mark.parametrize("shape", ["tiny", "tied-llama3"])
def test_llamacpp_runs_export_like_reference(shape, tmp_path):
    llama_cpp = pytest.importorskip("llama_cpp")
    # std 0.15 (not 0.02): attention must be far from uniform, or a wrong Q/K layout or
    # RoPE would go unnoticed.
    if shape == "tiny":
        folder = mc.make_checkpoint("tiny", tmp_path, std=0.15, quiet=True)
    else:
        folder = mc.make_checkpoint(TINY_TIED_LLAMA3, tmp_path, name="tied", std=0.15, quiet=True)
    out = ge.export_gguf(folder, tmp_path / "m.gguf", qtype="f32", quiet=True)
    vocab = json.loads((folder / "config.json").read_text())["vocab_size"]
    ids = [int(x) for x in np.random.default_rng(0).integers(3, vocab, 150)]
    ref = _reference_logits(folder, ids)
    llm = llama_cpp.Llama(model_path=str(out), n_ctx=256, n_batch=256, logits_all=True, verbose=False,
                          n_threads=1)
    try:
        llm.eval(ids)
        got = np.array(llm.scores[: len(ids)])
    finally:
        llm.close()
    assert np.abs(ref).max() > 2.0
    assert np.abs(got - ref).max() < 0.05  # F16 KV cache; a wrong Q/K layout gives ~5


def test_gemm_bench_skips_cleanly_without_a_gpu():
    """bench/gemm.py needs a GPU, torch and pyvt's device API; without them it says which is
    missing and exits 77 (bench/gpu_check.sh's gemm phase counts that as a failure: there it must run)."""
    import subprocess

    try:
        import pyvt

        if pyvt.ops.cuda_available():
            pytest.skip("a GPU is present: bench/gpu_check.sh runs the benchmark")
    except Exception:  # noqa: BLE001 - an unbuilt pyvt: the script must still skip cleanly
        pass
    r = subprocess.run([sys.executable, str(REPO / "bench" / "gemm.py"), "--quick", "--results-dir", "/nonexistent"],
                       capture_output=True, text=True, timeout=300, cwd="/")
    assert r.returncode == 77, r.stdout + r.stderr
    assert "skipped:" in r.stdout


def test_serve_bench_engine_step(tiny):
    """bench/serve.py's batched-step measurement without the server: one row per level up to the
    batch limit, and the ratio lines beside the server's (levels above the limit are skipped)."""
    mod = _bench_module("serve")
    steps = mod.engine_steps(tiny, [1, 3, 10 ** 6], threads=1, weight_format="int8")
    assert [r["rows"] for r in steps] == [1, 3]
    assert all(r["tok_per_s"] > 0 and len(r["step_ms_all"]) == 5 for r in steps)
    server = [{"engine": "pyvt", "concurrency": 1, "tok_per_s": 10.0},
              {"engine": "pyvt", "concurrency": 3, "tok_per_s": 20.0}]
    lines = mod.engine_step_lines(steps, server)
    assert len(lines) == 1 and "3 rows" in lines[0] and "the server at 3 clients: 2.00x" in lines[0]
    ratio = steps[1]["tok_per_s"] / steps[0]["tok_per_s"]
    assert f"= {ratio:.2f}x 1 row" in lines[0]


def test_serve_bench_stream_without_done_is_an_error():
    """A stream the server ends before ``data: [DONE]`` (llama-cpp-python cut streams short when a
    new request arrived) is an error row, not a short answer counted as success."""
    import asyncio
    import contextlib

    mod = _bench_module("serve")

    def chunk(text):
        return "data: " + json.dumps({"choices": [{"delta": {"content": text}}]})

    class Resp:
        status_code = 200

        def __init__(self, lines):
            self.lines = lines

        async def aiter_lines(self):
            for line in self.lines:
                yield line

    class Client:
        def __init__(self, lines):
            self.lines = lines

        @contextlib.asynccontextmanager
        async def stream(self, method, url, json=None):
            yield Resp(self.lines)

    cut = asyncio.run(mod.one_request(Client([chunk("Once")]), "u", "m", 0, 8))
    assert cut == {"error": "the stream ended without [DONE] after 1 piece(s)"}
    whole = asyncio.run(mod.one_request(Client([chunk("Once"), chunk(" upon"), "data: [DONE]"]), "u", "m", 0, 8))
    assert whole["text"] == "Once upon" and "error" not in whole


def test_serve_bench_async_engine_rows(tiny, tmp_path):
    """bench/serve.py's in-process AsyncEngine level: every request answered, tokens counted as
    the server's are, and the ratio line that splits serving's cost from HTTP's."""
    import argparse
    import shutil

    from tokenizers import Tokenizer

    folder = tmp_path / "tiny-chat"  # the tiny checkpoint with a chat template (it has none)
    shutil.copytree(tiny, folder)
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg["chat_template"] = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))

    mod = _bench_module("serve")
    args = argparse.Namespace(threads=1, weight_format="int8", max_batch=8, requests=4, max_tokens=6)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    rows = mod.async_engine_rows(folder, [1, 3], args, tok)
    assert [(r["engine"], r["concurrency"], r["requests"], r["errors"]) for r in rows] == \
        [("pyvt AsyncEngine", 1, 4, 0), ("pyvt AsyncEngine", 3, 4, 0)]
    assert all(r["tok_per_s"] > 0 and r["generated_tokens"] > 0 for r in rows)
    server = [{"engine": "pyvt", "concurrency": 3, "tok_per_s": rows[1]["tok_per_s"] / 2}]
    lines = mod.engine_step_lines([], rows + server)
    want = rows[1]["tok_per_s"] / rows[0]["tok_per_s"]
    assert len(lines) == 1 and f"at 3 clients: {want:.2f}x its 1 client" in lines[0]
    assert "the server delivers 0.50 of it" in lines[0]


def test_decode_bench_kv_cache_rows():
    """bench/decode.py's FORMAT/kv-TYPE rows: each is compared with its FORMAT row (same model,
    threads, contention), and the int8 goal lines stay with the default cache's row."""
    mod = _bench_module("decode")

    def row(engine, fmt, dec, pre, threads=2):
        return {"model": "m", "engine": engine, "format": fmt, "threads": threads, "status": "ok",
                "decode_tok_s": dec, "prefill_tok_s": pre}

    rows = [row("pyvt", "int8", 100.0, 500.0), row("pyvt", "int8/kv-int8", 125.0, 450.0),
            row("pyvt", "int4/kv-int8", 150.0, 600.0), row("llama.cpp", "Q8_0", 50.0, 250.0),
            row("pyvt", "int8/kv-int8", 80.0, 400.0, threads=1)]
    mod.add_ratios(rows)
    lines = mod.goals(rows)
    assert "m int8/kv-int8, 2 thread(s): decode 1.25x, prefill 0.90x int8 with the f16 KV cache" in lines
    assert sum("int8, 2 thread(s): decode 2.00x llama.cpp Q8_0" in x for x in lines) == 1  # the f16 row's goals
    assert not any("int4/kv-int8" in x or "1 thread(s)" in x for x in lines)  # no f16 row to compare with


def test_decode_bench_divides_by_llamacpps_faster_setting(tmp_path, capsys):
    """Where llama.cpp ran with flash attention on and off, bench/decode.py's ratios (against
    Q8_0, and a GGUF-loaded row against the same file) and bench/runs.py's medians divide by
    the faster of the two rows for each measure: decode by one, prefill by the other here."""
    mod = _bench_module("decode")

    def row(engine, fmt, dec, pre):
        return {"model": "m", "engine": engine, "format": fmt, "threads": 2, "status": "ok",
                "contention": "none", "decode_tok_s": dec, "prefill_tok_s": pre}

    rows = [row("pyvt", "int8", 120.0, 600.0), row("llama.cpp", "Q8_0 fa=on", 50.0, 300.0),
            row("llama.cpp", "Q8_0 fa=off", 80.0, 250.0), row("pyvt", "gguf-q4_k_m", 90.0, 400.0),
            row("llama.cpp", "Q4_K_M fa=on", 30.0, 200.0), row("llama.cpp", "Q4_K_M fa=off", 45.0, 160.0)]
    mod.add_ratios(rows)
    assert rows[0]["decode_vs_llamacpp_q8"] == pytest.approx(1.5)  # 120 / 80 (fa=off)
    assert rows[0]["prefill_vs_llamacpp_q8"] == pytest.approx(2.0)  # 600 / 300 (fa=on)
    assert rows[3]["decode_vs_llamacpp_same"] == pytest.approx(2.0)  # 90 / 45
    assert rows[3]["prefill_vs_llamacpp_same"] == pytest.approx(2.0)  # 400 / 200
    assert "decode_vs_llamacpp_q8" not in rows[1]  # llama.cpp's rows are not compared with themselves
    runs = _bench_module("runs")
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"env": {"settings": {"device": "cpu", "prompt_len": 512, "gen_len": 128}},
                                "rows": rows}))
    assert runs.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "| m | int8 decode vs llama.cpp Q8_0 | 1 | 1.50 | 1.50-1.50 |" in out
    assert "| m | int8 prefill vs llama.cpp Q8_0 | 1 | 2.00 | 2.00-2.00 |" in out
    assert "| m | Q4_K_M file decode, pyvt vs llama.cpp | 1 | 2.00 | 2.00-2.00 |" in out
    assert "| m | Q4_K_M file prefill, pyvt vs llama.cpp | 1 | 2.00 | 2.00-2.00 |" in out


def test_decode_bench_names_the_kernels_it_timed(monkeypatch):
    """A decode result file names the VT_* settings and libvt's CPU level: a run at VT_ISA=avx2
    on an AVX-512 CPU must not read as an AVX-512 run."""
    mod = _bench_module("decode")
    monkeypatch.setenv("VT_PREFETCH", "l1")
    info = mod.machine_info("cpu")
    assert info["vt_env"]["VT_PREFETCH"] == "l1"
    assert info["pyvt_cpu"].startswith(("cpu: ", "unknown ("))
    env = {"machine": info, "versions": {}, "git": {}, "date": "d", "command": "c", "bandwidth": [],
           "duration_s": 1.0, "loadavg_start": [0.0], "loadavg_end": [0.0]}
    args = mod.parse_args(["--no-save"])
    text = mod.render_markdown(env, [], [], args)
    assert f"* pyvt's CPU kernels: {info['pyvt_cpu']}; environment: " in text and "VT_PREFETCH=l1" in text


def test_decode_bench_goal_lines():
    """bench/decode.py's goal lines follow issue 19: quiet >= 1.3x llama.cpp Q8_0, beside a
    neighbour load >= 1.0x, and (CPU, 2 threads, quiet) the model's fraction of the floor."""
    mod = _bench_module("decode")

    def row(engine, fmt, dec, mode="none", model="smollm2-135m", frac=None):
        return {"model": model, "engine": engine, "format": fmt, "threads": 2, "status": "ok",
                "decode_tok_s": dec, "prefill_tok_s": dec * 5, "contention": mode, "floor_fraction": frac}

    rows = [row("pyvt", "int8", 120.0, frac=0.69), row("llama.cpp", "Q8_0", 100.0),
            row("pyvt", "int8", 30.0, "spin", frac=0.2), row("llama.cpp", "Q8_0", 20.0, "spin"),
            row("pyvt", "int8", 30.0, model="tinyllama-1.1b", frac=0.8),
            row("llama.cpp", "Q8_0", 20.0, model="tinyllama-1.1b")]
    mod.add_ratios(rows)
    quiet, spin, tiny = mod.goals(rows)
    assert "decode 1.20x llama.cpp Q8_0 (goal >= 1.3): MISSED" in quiet
    assert "0.690 of the bandwidth floor (goal >= 0.7): MISSED" in quiet
    assert "beside spin" in spin and "decode 1.50x llama.cpp Q8_0 (goal >= 1.0): MET" in spin
    assert "floor" not in spin  # the floor goals are quiet ones
    assert "decode 1.50x llama.cpp Q8_0 (goal >= 1.3): MET" in tiny and "0.800 of the bandwidth floor (goal >= 0.75): MET" in tiny
    assert not any("floor" in x for x in mod.goals(rows, "cuda"))


def test_decode_bench_merges_rounds():
    """bench/decode.py --rounds: a job's rounds become one row per thread count whose timing
    lists hold every round's values (medians over all of them); a failed round makes the row
    that failure, never a median of fewer rounds; --rounds 0 is refused."""
    mod = _bench_module("decode")

    def res(t, pre, dec, status="ok"):
        return {"threads": t, "status": status, "prefill_s": pre, "decode_s_per_tok": dec, "loadavg1": [1.0],
                "weight_bytes": 100}

    merged = mod.merge_rounds([[res(1, [0.5], [0.010]), res(2, [0.3], [0.006])],
                               [res(1, [0.7], [0.012]), res(2, [0.2], [0.008])],
                               [res(1, [0.6], [0.011]), res(2, [0.4], [0.007])]])
    assert [r["threads"] for r in merged] == [1, 2] and all(r["rounds"] == 3 for r in merged)
    assert merged[0]["prefill_s"] == [0.5, 0.7, 0.6] and merged[1]["decode_s_per_tok"] == [0.006, 0.008, 0.007]
    assert merged[0]["loadavg1"] == [1.0, 1.0, 1.0]
    mod.summarize(merged[1], 512, {2: 20.0})
    assert merged[1]["ms_per_token"] == pytest.approx(7.0)  # the median of the three rounds
    failed = mod.merge_rounds([[res(2, [0.3], [0.006])], [res(2, [], [], status="error: worker exit 1: boom")]])
    assert failed[0]["status"] == "error: worker exit 1: boom" and failed[0]["rounds"] == 2
    one = [[res(2, [0.3], [0.006])]]
    assert mod.merge_rounds(one) is one[0]  # one round: as it was
    with pytest.raises(SystemExit):
        mod.parse_args(["--rounds", "0"])
    assert mod.parse_args([]).llamacpp_quants == ["Q8_0", "Q4_1", "Q4_0"]
    assert mod.parse_args(["--llamacpp-quants", "Q8_0"]).llamacpp_quants == ["Q8_0"]
    for bad in ("Q5_K", ","):
        with pytest.raises(SystemExit):
            mod.parse_args(["--llamacpp-quants", bad])


def test_decode_bench_reexports_a_stale_gguf(tiny, tmp_path):
    """bench/decode.py export_q8_0 reuses an export only if this exporter version wrote it with
    the same pre-tokenizer: a file from before the chat template, or with another pre-tokenizer
    name (the serve bench once wrote 'smollm2', which llama.cpp refuses), is exported again."""
    mod = _bench_module("decode")
    dst = tmp_path / "m.Q8_0.gguf"
    mod.export_q8_0(tiny, dst, "smollm")
    first = dst.stat().st_mtime_ns
    assert mod.export_q8_0(tiny, dst, "smollm") == dst and dst.stat().st_mtime_ns == first  # reused
    mod.export_q8_0(tiny, dst, "gpt-2")
    assert ge.read_metadata(dst)["tokenizer.ggml.pre"] == "gpt-2"  # another pre-tokenizer: exported again
    dst.write_bytes(b"GGUF" + b"\0" * 8)  # truncated: unreadable, exported again
    mod.export_q8_0(tiny, dst, "gpt-2")
    assert ge.read_metadata(dst)[ge.EXPORT_KEY] == ge.EXPORT_VERSION


def test_runs_summary_pools_runs_of_one_workload(tmp_path, capsys):
    """bench/runs.py: medians and ranges over decode runs, each ratio taken within its own run;
    a run of another workload is named and left out, a file that is not a results file is an
    error naming it."""
    mod = _bench_module("runs")

    def run(name, i8, q8, i4, q4, frac, bw, prompt=512):
        def row(engine, fmt, dec):
            return {"model": "m", "engine": engine, "format": fmt, "threads": 2, "status": "ok",
                    "contention": "none", "decode_tok_s": dec, "prefill_tok_s": dec * 4,
                    "floor_fraction": frac if (engine, fmt) == ("pyvt", "int8") else None}
        data = {"env": {"settings": {"device": "cpu", "prompt_len": prompt, "gen_len": 128},
                        "bandwidth": [{"threads": 2, "gb_s": bw}]},
                "rows": [row("pyvt", "int8", i8), row("llama.cpp", "Q8_0", q8), row("pyvt", "int4", i4),
                         row("llama.cpp", "Q4_0", q4), row("pyvt", "gguf-q6_k", i8),
                         row("llama.cpp", "Q6_K fa=on", q8 / 2), row("llama.cpp", "Q6_K fa=off", q8)]}
        path = tmp_path / name
        path.write_text(json.dumps(data))
        return path

    files = [run("a.json", 100, 50, 150, 100, 0.69, 30), run("b.json", 120, 80, 150, 75, 0.75, 32),
             run("c.json", 90, 60, 117, 90, 0.60, 35), run("d.json", 1, 1, 1, 1, 0.1, 1, prompt=128)]
    assert mod.main([str(f) for f in files]) == 0
    out = capsys.readouterr().out
    assert "3 run(s), device cpu, prompt 512, gen 128" in out
    assert "left out (another workload): d.json (device cpu, prompt 128, gen 128)" in out
    assert "| m | int8 of floor | 3 | 0.690 | 0.600-0.750 |" in out
    assert "| m | int8 decode vs llama.cpp Q8_0 | 3 | 1.50 | 1.50-2.00 |" in out
    assert "| m | int4 decode vs pyvt int8 | 3 | 1.30 | 1.25-1.50 |" in out
    assert "| m | int4 decode vs llama.cpp Q4_0 | 3 | 1.50 | 1.30-2.00 |" in out
    assert "| m | int4 prefill vs llama.cpp Q4_0 | 3 | 1.50 | 1.30-2.00 |" in out
    # llama.cpp's faster of its two flash-attention rows
    assert "| m | Q6_K file decode, pyvt vs llama.cpp | 3 | 1.50 | 1.50-2.00 |" in out
    assert "Q4_K_M file" not in out  # no such rows in these runs
    assert "| m | read GB/s at the start | 3 | 32.00 | 30.00-35.00 |" in out
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert mod.main([str(files[0]), str(bad)]) == 2
    assert "bad.json: not a bench/decode.py results file" in capsys.readouterr().err
    assert mod.main(["--prompt-len", "64", str(files[0])]) == 2  # no run of that workload
    assert "error: no run of device cpu, prompt 64, gen 128 among the files" in capsys.readouterr().err


def test_speculative_bench_pyvt_worker(default_model_dir):
    """bench/speculative.py's pyvt worker: per task, decode rates of both modes, the tokens of
    each (equal: prompt lookup keeps plain decoding's tokens) and the draft counts; unknown
    engines and tasks are refused by name."""
    mod = _bench_module("speculative")
    ids = {"repeat": [int(t) for t in range(100, 140)] * 2, "poem": [int(t) for t in range(200, 230)]}
    out = mod.worker_pyvt(dict(gguf=str(default_model_dir), ids=ids, gen_len=24, threads=2, repeat=1,
                               lookup_tokens=5))
    assert set(out["tasks"]) == {"repeat", "poem"}
    for rec in out["tasks"].values():
        assert len(rec["plain"]) == len(rec["lookup"]) == 1 and rec["plain"][0] > 0 and rec["lookup"][0] > 0
        assert rec["plain_tokens"] == rec["lookup_tokens"]
        assert 0 <= rec["accepted"] <= rec["drafted"]
    for bad in (["--engines", "vllm"], ["--tasks", "sonnet"]):
        with pytest.raises(SystemExit) as e:
            mod.main(bad + ["--no-save"])
        assert e.value.code == 2


def test_gpt_oss_bench_checkpoint_loads_its_experts_as_mxfp4(tmp_path):
    """bench/gpt_oss.py's random checkpoint (here at a tiny shape): the Hub's gpt-oss layout
    with MXFP4 experts, which pyvt reads as such; "auto" holds them in mxfp4 (fewer bytes
    than the int8 load of the same file) with logits as close as the two kernels' rounding
    allows (int8 rounds activations on x86), and a second call reuses the folder."""
    from pyvt import _model

    go = _bench_module("gpt_oss")
    tiny = dict(hidden=64, heads=4, kv=2, head_dim=16, inter=64, experts=4, topk=2)
    folder = go.make_checkpoint(tmp_path / "ck", layers=2, vocab=300, shape=tiny)
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["model_type"] == "gpt_oss" and cfg["layer_types"] == ["sliding_attention", "full_attention"]
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert go.make_checkpoint(tmp_path / "ck", layers=2, vocab=300, shape=tiny) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    out = {}
    for fmt in ("auto", "int8"):
        with _model.Model(str(folder), weight_format=fmt, device="cpu", kv_cache="f32") as m:
            assert "mxfp4-experts" in m.info["features"]
            out[fmt] = (m.info["total_bytes"], m.logits([5, 6, 7, 8, 9, 10]).astype(np.float64))
    assert out["auto"][0] < out["int8"][0]
    a, b = out["auto"][1], out["int8"][1]
    assert np.linalg.norm(a - b) / np.linalg.norm(b) < 5e-3


def test_gpt_oss_bench_gguf_holds_the_same_weights(tmp_path):
    """bench/gpt_oss.py's llama.cpp file: the experts are the checkpoint's MXFP4 codes and
    exponents in ggml's block order (the gguf package decodes them to the very values the Hub
    layout encodes; gate and up apart), the attention Q8_0 of its weights, and the metadata
    llama.cpp's gpt-oss reads (pyvt's GGUF reader, which agrees byte for byte with the gguf
    package: tests/test_convert.py). With llama-cpp-python (bench-only), the all-F32 variant's
    logits are pyvt bf16's (measured 1.0e-4 relative: llama.cpp rounds YaRN's ramp)."""
    from pyvt.gguf import GGMLType, read_gguf

    go = _bench_module("gpt_oss")
    tiny = dict(hidden=64, heads=4, kv=2, head_dim=16, inter=64, experts=4, topk=2)
    folder = go.make_checkpoint(tmp_path / "ck", layers=2, vocab=300, shape=tiny)
    path = go.export_gguf(folder, tmp_path / "m.gguf")
    r = read_gguf(path)
    assert r.metadata["general.architecture"] == "gpt-oss" and r.metadata["gpt-oss.expert_count"] == 4
    assert r.metadata["gpt-oss.attention.sliding_window"] == 128 and len(r.metadata["tokenizer.ggml.tokens"]) == 300
    st = (folder / "model.safetensors").read_bytes()
    header = json.loads(st[8:8 + int.from_bytes(st[:8], "little")])
    e2m1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)
    for i in range(2):
        for hf, names in (("gate_up_proj", ("ffn_gate_exps", "ffn_up_exps")), ("down_proj", ("ffn_down_exps",))):
            b = go._u8_tensor(st, header, f"model.layers.{i}.mlp.experts.{hf}_blocks")
            s = go._u8_tensor(st, header, f"model.layers.{i}.mlp.experts.{hf}_scales")
            codes = np.stack([b & 15, b >> 4], axis=-1).reshape(*b.shape[:-1], 32)
            vals = (e2m1[codes] * np.exp2(s.astype(np.float32) - 127)[..., None]).reshape(b.shape[0], b.shape[1], -1)
            for k, name in enumerate(names):
                assert r.tensors[f"blk.{i}.{name}.weight"].ggml_type == GGMLType.MXFP4
                got = r.dequantize(f"blk.{i}.{name}.weight")
                np.testing.assert_array_equal(got, vals[:, k::2] if len(names) == 2 else vals)
        assert r.tensors[f"blk.{i}.attn_q.weight"].ggml_type == GGMLType.Q8_0
        q = r.dequantize(f"blk.{i}.attn_q.weight")
        w = go._bf16_tensor(st, header, f"model.layers.{i}.self_attn.q_proj.weight")
        assert q.shape == w.shape and np.abs(q - w).max() <= np.abs(w).max() / 127
    r.close()
    llama_cpp = pytest.importorskip("llama_cpp")
    from pyvt import _model

    f32 = go.export_gguf(folder, tmp_path / "f32.gguf", f32=True)
    ids = [5, 6, 7, 8, 9, 10, 11, 12]
    llm = llama_cpp.Llama(model_path=str(f32), n_ctx=64, n_threads=2, logits_all=True, verbose=False)
    llm.eval(ids)
    lc = np.array(llm.scores[:len(ids)], np.float64)
    with _model.Model(str(folder), weight_format="bf16", device="cpu", kv_cache="f32") as m:
        pv = m.logits(ids).astype(np.float64)
    assert np.linalg.norm(lc - pv) / np.linalg.norm(pv) < 1e-3


def test_requantize_names_an_unknown_type(tmp_path, capsys):
    """An llama.cpp type the requantizer has no ftype for is one line naming it and the known
    ones (before llama-cpp-python is imported: no traceback, nothing written)."""
    with pytest.raises(ValueError, match=r"type 'q5_k_m' is not one of q8_0, .*q6_k"):
        ge.requantize_with_llamacpp(tmp_path / "in.gguf", tmp_path / "out.gguf", "q5_k_m")
    with pytest.raises(SystemExit) as ei:
        ge.main(["--requantize", "--type", "q5_k_m", str(tmp_path / "in.gguf"), str(tmp_path / "out.gguf")])
    assert ei.value.code == 2 and "type 'q5_k_m' is not one of" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


# ---- bench/ab.py ----------------------------------------------------------------------------

def test_ab_speedups_are_per_round_and_oriented():
    """bench/ab.py: a speed-up is new over old within each round — tok/s new ÷ old, ms old ÷ new —
    with the median and range over rounds, and a measure only one build reported is left out."""
    ab = _bench_module("ab")
    rounds = [{"old": {"m prefill tok/s": 100.0, "q m=512 ms": 20.0, "only old ms": 1.0},
               "new": {"m prefill tok/s": 150.0, "q m=512 ms": 10.0}},
              {"old": {"m prefill tok/s": 80.0, "q m=512 ms": 30.0},
               "new": {"m prefill tok/s": 100.0, "q m=512 ms": 12.0}},
              {"old": {"m prefill tok/s": 120.0, "q m=512 ms": 22.0},
               "new": {"m prefill tok/s": 240.0, "q m=512 ms": 11.0}}]
    rows = {r["measure"]: r for r in ab.summarize(rounds)}
    assert set(rows) == {"m prefill tok/s", "q m=512 ms"}
    p = rows["m prefill tok/s"]
    assert p["per_round"] == [1.5, 1.25, 2.0] and p["speedup"] == 1.5 and p["speedup_range"] == [1.25, 2.0]
    assert p["old"] == 100.0 and p["new"] == 150.0 and p["rounds"] == 3
    q = rows["q m=512 ms"]
    assert q["per_round"] == [2.0, 2.5, 2.0] and q["speedup"] == 2.0 and q["speedup_range"] == [2.0, 2.5]
    md = "\n".join(ab.table(ab.summarize(rounds)))
    assert "| m prefill tok/s | 3 | 100 | 150 | **1.50×** (1.25-2.00) |" in md


@pytest.mark.parametrize("spec, msg", [("noequals", "LABEL=PATH:FORMAT:N"), ("a=/p:int8", "LABEL=PATH:FORMAT:N"),
                                       ("=/p:int8:5", "LABEL=PATH:FORMAT:N"), ("a=/p:int8:x", "N must be an integer"),
                                       ("a=/p:int8:0", "at least 1")])
def test_ab_model_specs(spec, msg):
    ab = _bench_module("ab")
    with pytest.raises(ValueError, match=msg):
        ab.parse_model_spec(spec, "prefill")
    t = ab.parse_model_spec("tl=C:/models/x:y:int4-min:512", "decode")  # colons in the path stay in it
    assert t == {"kind": "decode", "label": "tl", "path": "C:/models/x:y", "format": "int4-min", "n": 512}


def test_ab_refuses_a_run_with_nothing_to_measure(capsys):
    ab = _bench_module("ab")
    with pytest.raises(SystemExit):
        ab.main(["--old", sys.executable])
    assert "nothing to measure" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ab.main(["--linear", "int8"])
    assert "--old PYTHON is required" in capsys.readouterr().err


def test_ab_names_a_build_that_fails(tmp_path, capsys):
    """A build whose interpreter fails (or does not exist) ends the run with one line naming the
    round, the build and why — no traceback, nothing saved."""
    ab = _bench_module("ab")
    for python, why in (("/bin/false", "failed (exit 1)"), (str(tmp_path / "no-python"), "No such file")):
        assert ab.main(["--old", python, "--new", python, "--prefill", f"x={tmp_path}:int8:4", "--rounds", "1",
                        "--no-save"]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("ab.py: round 0, old build: ") and why in err[0], err
