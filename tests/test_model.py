"""The Llama engine (libvt model / session / generate, through pyvt._model) end to end on tiny
random checkpoints written by the test, against the numpy float64 reference in llama_ref.py
and, where installed, Hugging Face transformers."""

from __future__ import annotations

import json
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pyvt import _model

import llama_ref as R

# name -> (config, write_checkpoint keyword arguments)
VARIANTS = {
    "gqa-hd16-bf16": (R.TinyConfig(), dict(dtype="BF16")),
    "mha-hd64-tied": (R.TinyConfig(hidden=128, intermediate=160, heads=2, kv_heads=2, tie=True), dict(dtype="BF16")),
    "gqa-hd128": (R.TinyConfig(hidden=128, intermediate=128, heads=2, kv_heads=1, head_dim=128, vocab=80),
                  dict(dtype="BF16")),
    "llama3-rope": (R.TinyConfig(hidden=64, heads=2, kv_heads=1, theta=500000.0, tie=True, eos=[2, 3],
                                 rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
                    dict(dtype="BF16")),
    "linear-rope": (R.TinyConfig(rope_scaling={"type": "linear", "factor": 4.0}), dict(dtype="BF16")),
    "sharded-f16": (R.TinyConfig(layers=3), dict(dtype="F16", shards=3)),
    "f32": (R.TinyConfig(), dict(dtype="F32")),
    "no-config": (R.TinyConfig(hidden=128, intermediate=128, heads=2, kv_heads=1, max_pos=2048, bos=None, eos=None),
                  dict(dtype="BF16", config=False)),
}

PROMPT = [1, 17, 42, 5, 9, 33, 60, 2, 71, 8, 15, 44]


def load(path, **kw):
    """These tests check the CPU engine against the references (a GPU run has its own), with
    the exact-math f32 KV cache unless a test asks for f16 (which has its own reference)."""
    kw.setdefault("device", "cpu")
    kw.setdefault("kv_cache", "f32")
    return _model.Model(str(path), **kw)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """variant name -> (folder, config, stored weights); written once per module."""
    cache = {}

    def get(name):
        if name not in cache:
            cfg, kw = VARIANTS[name]
            folder = tmp_path_factory.mktemp(name)
            w = R.write_checkpoint(folder, cfg, seed=len(cache) + 1, **kw)
            cache[name] = (folder, cfg, w)
        return cache[name]

    return get


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max())


# ---- every variant, bf16 (unquantized) mode, against the float64 reference -------------

@pytest.mark.parametrize("name", list(VARIANTS))
def test_bf16_logits_match_reference(ckpt, name):
    folder, cfg, w = ckpt(name)
    with load(folder, weight_format="bf16") as m:
        info = m.info
        assert info["num_layers"] == cfg.layers and info["head_dim"] == cfg.hd
        assert info["num_heads"] == cfg.heads and info["num_kv_heads"] == cfg.kv_heads
        assert info["vocab_size"] == cfg.vocab and info["weight_format"] == "bf16"
        assert info["tie_word_embeddings"] == cfg.tie
        got = m.logits(PROMPT)
    ref = R.reference_logits(R.as_bf16_mode(w, cfg), cfg, PROMPT)
    assert got.shape == (len(PROMPT), cfg.vocab) and got.dtype == np.float32
    assert rel_err(got, ref) < 1e-4
    np.testing.assert_array_equal(got.argmax(-1), ref.argmax(-1))


@pytest.mark.parametrize("name", ["gqa-hd16-bf16", "mha-hd64-tied", "gqa-hd128", "llama3-rope", "f32"])
def test_bf16_greedy_tokens_match_reference(ckpt, name):
    folder, cfg, w = ckpt(name)
    with load(folder, weight_format="bf16") as m:
        toks, stats = m.generate(PROMPT[:6], max_new_tokens=10, stop_on_eos=False)
    assert toks == R.reference_greedy(R.as_bf16_mode(w, cfg), cfg, PROMPT[:6], 10)
    assert stats["generated_tokens"] == 10 and stats["prompt_tokens"] == 6 and stats["finish_reason"] == "length"


def test_config_values_reach_the_model(ckpt):
    folder, cfg, _ = ckpt("llama3-rope")
    with load(folder) as m:
        info = m.info
    assert info["rope_theta"] == 500000.0 and info["eos_token_ids"] == [2, 3] and info["bos_token_id"] == 1
    assert info["max_seq_len"] == cfg.max_pos and info["weight_format"] == "int8" and info["block_size"] == 32
    assert info["device"] == "cpu" and info["weight_bytes"] > 0 and info["total_bytes"] > info["weight_bytes"]


def test_no_config_uses_shapes_and_tinyllama_defaults(ckpt):
    folder, cfg, _ = ckpt("no-config")
    with load(folder) as m:
        info = m.info
    assert info["head_dim"] == 64 and info["num_heads"] == 2 and info["num_kv_heads"] == 1
    assert info["hidden_size"] == 128 and info["intermediate_size"] == 128 and info["vocab_size"] == cfg.vocab
    assert abs(info["rms_norm_eps"] - 1e-5) < 1e-9 and info["rope_theta"] == 10000.0
    assert info["max_seq_len"] == 2048 and info["eos_token_ids"] == [] and info["bos_token_id"] == -1
    assert info["tie_word_embeddings"] is False


@pytest.mark.parametrize("how", ["file", "shard", "index"])
def test_every_path_form_loads_the_same_model(ckpt, how):
    folder, cfg, _ = ckpt("sharded-f16")
    path = {"file": folder / "model-00001-of-00003.safetensors",
            "shard": folder / "model-00002-of-00003.safetensors",
            "index": folder / "model.safetensors.index.json"}[how]
    with load(folder, weight_format="bf16") as a, load(path, weight_format="bf16") as b:
        np.testing.assert_array_equal(a.logits(PROMPT), b.logits(PROMPT))


def test_shards_found_by_naming_without_index(ckpt, tmp_path):
    folder, cfg, _ = ckpt("sharded-f16")
    for f in folder.glob("*.safetensors"):
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    with load(folder) as a, load(tmp_path / "model-00003-of-00003.safetensors") as b:
        np.testing.assert_array_equal(a.logits(PROMPT), b.logits(PROMPT))


# ---- quantized formats -----------------------------------------------------------------

@pytest.mark.parametrize("fmt,tol", [("int8", 0.025), ("fp8", 0.07), ("fp8-channel", 0.08)])
@pytest.mark.parametrize("name", ["gqa-hd16-bf16", "mha-hd64-tied", "gqa-hd128"])
def test_quantized_formats_stay_close(ckpt, name, fmt, tol):
    folder, cfg, w = ckpt(name)
    with load(folder, weight_format=fmt) as m:
        assert m.info["weight_format"] == fmt
        got = m.logits(PROMPT)
    ref = R.reference_logits(w, cfg, PROMPT)
    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    assert err < tol, f"{fmt}: normalized error {err:.4f}"
    assert (got.argmax(-1) == ref.argmax(-1)).mean() >= 0.75


def test_block_size_option(ckpt):
    folder, cfg, w = ckpt("gqa-hd16-bf16")
    ref = R.reference_logits(w, cfg, PROMPT)
    for bs in (16, 32):
        with load(folder, weight_format="int8", block_size=bs) as m:
            assert m.info["block_size"] == bs
            assert np.linalg.norm(m.logits(PROMPT) - ref) / np.linalg.norm(ref) < 0.05


# ---- transformers as the reference (where installed) ------------------------------------

@pytest.fixture(scope="module")
def hf():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    return torch, transformers


@pytest.mark.parametrize("name", ["gqa-hd16-bf16", "mha-hd64-tied", "gqa-hd128", "llama3-rope", "linear-rope",
                                  "sharded-f16", "f32"])
def test_matches_transformers(ckpt, hf, name):
    torch, transformers = hf
    folder, cfg, _ = ckpt(name)
    ref_model = transformers.LlamaForCausalLM.from_pretrained(str(folder), torch_dtype=torch.float32)
    ref_model.eval()
    with torch.no_grad():
        ref = ref_model(torch.tensor([PROMPT])).logits[0].double().numpy()
    stored_bf16 = VARIANTS[name][1]["dtype"] == "BF16"
    with load(folder, weight_format="bf16") as m:
        got = m.logits(PROMPT)
    # BF16 checkpoints: bf16 mode holds exactly the stored weights. F16/F32 ones are rounded
    # to bf16 for the linears, a ~0.4% weight perturbation.
    assert rel_err(got, ref) < (1e-4 if stored_bf16 else 3e-2)
    assert (got.argmax(-1) == ref.argmax(-1)).mean() >= (1.0 if stored_bf16 else 0.9)
    with load(folder, weight_format="int8") as m:
        q = m.logits(PROMPT)
    assert np.linalg.norm(q - ref) / np.linalg.norm(ref) < 0.03


# ---- sessions --------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["bf16", "int8"])
@pytest.mark.parametrize("name", ["gqa-hd16-bf16", "gqa-hd128"])
def test_prefill_logits_equal_decode_logits(ckpt, name, fmt):
    folder, cfg, _ = ckpt(name)
    with load(folder, weight_format=fmt) as m:
        with m.new_session() as s:
            nxt, all_logits = s.prefill(PROMPT, logits="all")
            assert s.length == len(PROMPT)
            assert nxt == int(all_logits[-1].argmax())
        with m.new_session() as s:
            nxt0, first = s.prefill(PROMPT[:1], logits="last")
            rows = [first]
            for t in PROMPT[1:]:
                _, lg = s.decode(t, want_logits=True)
                rows.append(lg)
            assert s.length == len(PROMPT)
    step = np.stack(rows)
    assert rel_err(step, all_logits) < 1e-4
    np.testing.assert_array_equal(step.argmax(-1), all_logits.argmax(-1))


@pytest.mark.parametrize("kv_cache", ["f32", "f16", "int8"])
def test_long_context_chunks_and_cache_growth(ckpt, kv_cache):
    """A prompt longer than one prefill chunk (256), then decoding past the first KV cache
    allocation, with the split-key decode attention; all against the reference (with keys
    and values rounded to f16 for the f16 cache, to int8 with their scales for the int8 one:
    a code that rounds the other way on an f32-vs-f64 difference moves a logit by more than
    f16's step does, hence its looser bound)."""
    folder, cfg, w = ckpt("no-config")  # max_position_embeddings 2048 (default)
    rng = np.random.default_rng(5)
    seq = rng.integers(0, cfg.vocab, size=300).tolist()
    ref = R.reference_logits(R.as_bf16_mode(w, cfg), cfg, seq, kv_cache=kv_cache)
    tol = 5e-3 if kv_cache == "int8" else 1e-4
    with load(folder, weight_format="bf16", kv_cache=kv_cache) as m:
        assert m.info["kv_cache"] == kv_cache
        with m.new_session() as s:
            _, lg = s.prefill(seq[:280], logits="all")
            assert rel_err(lg, ref[:280]) < tol
            for i in range(280, 300):
                _, row = s.decode(seq[i], want_logits=True)
                assert rel_err(row, ref[i]) < tol


@pytest.mark.parametrize("name", ["gqa-hd16-bf16", "mha-hd64-tied", "gqa-hd128"])
@pytest.mark.parametrize("kv_cache", ["f16", "int8"])
def test_rounded_kv_cache_matches_the_reference_rounding_keys_and_values(ckpt, name, kv_cache):
    """The f16 or int8 cache (prefill, then decode over it, and a copied prefix) against
    float64 math whose keys and values are rounded as that cache rounds them (numpy's f16;
    per vector as ops::store_i8 does): that rounding is the only difference to the f32 path,
    and it is visible (the logits are nearer the rounded reference than the exact one). f16
    keeps the f32 path's tolerance; int8's is looser because a code that rounds the other way
    on an f32-vs-f64 difference moves a logit by more than an f16 step does."""
    folder, cfg, w = ckpt(name)
    wb = R.as_bf16_mode(w, cfg)
    ref = R.reference_logits(wb, cfg, PROMPT, kv_cache=kv_cache)
    ref32 = R.reference_logits(wb, cfg, PROMPT)
    tol = 1e-4 if kv_cache == "f16" else 5e-3
    with load(folder, weight_format="bf16", kv_cache=kv_cache) as m:
        assert m.info["kv_cache"] == kv_cache
        got = m.logits(PROMPT)
        with m.new_session() as s, m.new_session() as c:
            _, first = s.prefill(PROMPT[:5], logits="last")
            rows = [first] + [s.decode(t, want_logits=True)[1] for t in PROMPT[5:]]
            c.copy_prefix(s, 7)
            _, tail = c.prefill(PROMPT[7:], logits="all")
    assert rel_err(got, ref) < tol
    assert rel_err(got, ref) < rel_err(got, ref32)
    assert rel_err(np.stack(rows), ref[4:]) < tol
    assert rel_err(tail, ref[7:]) < tol


def test_int8_kv_cache_refuses_non_finite_keys_and_values(tmp_path):
    """A key or value the int8 cache cannot scale (an infinity from an overflowing v_proj)
    fails the pass with a message naming the layer and the remedy; the f32 cache carries it."""
    cfg = R.TinyConfig()
    w = R.random_weights(cfg, seed=3)
    for layer in range(cfg.layers):  # every v_proj output overflows f32
        w[f"model.layers.{layer}.self_attn.v_proj.weight"][:] = np.float32(3e38)
    R.write_checkpoint(tmp_path, cfg, dtype="F32", weights=w)
    with load(tmp_path, weight_format="bf16", kv_cache="int8") as m:
        with m.new_session() as s:
            with pytest.raises(ValueError, match=r"layer 0: a key or value of the token at position 0 is not "
                                                 r"finite; the int8 KV cache cannot hold it") as e:
                s.prefill(PROMPT, logits="last")
            assert "\n" not in str(e.value)
            assert s.length == 0


def test_f16_kv_cache_prefix_copy_into_a_growing_cache(ckpt):
    """copy_prefix of an f16 cache into a session whose first allocation (256 positions) is
    too small: the copy grows it, and prefill / decode go on against the reference."""
    folder, cfg, w = ckpt("no-config")
    seq = np.random.default_rng(9).integers(0, cfg.vocab, size=300).tolist()
    ref = R.reference_logits(R.as_bf16_mode(w, cfg), cfg, seq, kv_cache="f16")
    with load(folder, weight_format="bf16", kv_cache="f16") as m:
        with m.new_session() as a, m.new_session() as b:
            a.prefill(seq[:290], choose=False)
            b.copy_prefix(a, 270)
            _, lg = b.prefill(seq[270:290], logits="all")
            assert rel_err(lg, ref[270:290]) < 1e-4
            for i in range(290, 300):
                _, row = b.decode(seq[i], want_logits=True)
                assert rel_err(row, ref[i]) < 1e-4


def test_f16_kv_cache_refuses_values_beyond_its_range(tmp_path):
    """A value f16 cannot hold (here every v_proj output, ~1e5) would be infinite in the
    cache and every later token NaN-driven: the f16 model refuses to go on, naming the
    remedy; the f32 cache computes it as the reference does; the session is left as it was."""
    cfg = R.TinyConfig()
    w = R.random_weights(cfg, seed=3)
    for layer in range(cfg.layers):
        w[f"model.layers.{layer}.self_attn.v_proj.weight"] *= 1e6
    w = R.write_checkpoint(tmp_path, cfg, dtype="F32", weights=w)
    with load(tmp_path, weight_format="bf16", kv_cache="f16") as m:
        with m.new_session() as s:
            with pytest.raises(ValueError, match=r"beyond the range of the f16 KV cache.*kv_cache=\"f32\""):
                s.prefill(PROMPT, logits="last")
            assert s.length == 0
    with load(tmp_path, weight_format="bf16", kv_cache="f32") as m:
        got = m.logits(PROMPT)
    assert np.isfinite(got).all()
    assert rel_err(got, R.reference_logits(R.as_bf16_mode(w, cfg), cfg, PROMPT)) < 1e-4


def test_kv_cache_option_is_checked(ckpt):
    folder, _, _ = ckpt("gqa-hd16-bf16")
    for bad in ("bf16", "F16", "", None, 16):
        with pytest.raises(ValueError, match=r"kv_cache must be one of f16, f32, int8; got"):
            load(folder, kv_cache=bad)
    with _model.Model(str(folder), device="cpu") as m:  # the default
        assert m.info["kv_cache"] == "f16"


def test_session_reset_and_sampling_steps(ckpt):
    folder, cfg, _ = ckpt("gqa-hd16-bf16")
    with load(folder) as m:
        toks, _ = m.generate(PROMPT, max_new_tokens=8, temperature=0.9, top_p=0.9, seed=3, stop_on_eos=False)
        with m.new_session(len(PROMPT) + 8) as s:
            for _ in range(2):  # reset restarts the sampling steps too
                s.reset()
                assert s.length == 0
                out = [s.prefill(PROMPT, temperature=0.9, top_p=0.9, seed=3)[0]]
                while len(out) < 8:
                    out.append(s.decode(out[-1], temperature=0.9, top_p=0.9, seed=3)[0])
                assert out == toks


# ---- generation ------------------------------------------------------------------------

def test_greedy_is_reproducible_and_sampling_is_seeded(ckpt):
    folder, cfg, _ = ckpt("gqa-hd16-bf16")
    with load(folder) as m:
        g1, _ = m.generate(PROMPT, max_new_tokens=16, stop_on_eos=False)
        g2, _ = m.generate(PROMPT, max_new_tokens=16, stop_on_eos=False)
        assert g1 == g2
        kw = dict(max_new_tokens=24, temperature=1.5, top_k=0, top_p=1.0, stop_on_eos=False)
        a, _ = m.generate(PROMPT, seed=1, **kw)
        b, _ = m.generate(PROMPT, seed=1, **kw)
        c, _ = m.generate(PROMPT, seed=2, **kw)
        assert a == b and a != c
        assert all(0 <= t < cfg.vocab for t in a + c)
        # top_k=1 is greedy whatever the temperature
        k1, _ = m.generate(PROMPT, max_new_tokens=16, temperature=2.0, top_k=1, seed=9, stop_on_eos=False)
        assert k1 == g1


def _free_run_and_copy(ckpt, tmp_path, at):
    """20 tokens generated without stopping, the token at index `at` as a would-be EOS, the
    index where it first appears, and a copy of the checkpoint in tmp_path."""
    folder, _, _ = ckpt("gqa-hd16-bf16")
    with load(folder) as m:
        free, _ = m.generate(PROMPT, max_new_tokens=20, stop_on_eos=False)
    for f in folder.iterdir():
        shutil.copy(f, tmp_path / f.name)
    return free, free[at], free.index(free[at])


def test_eos_stops_and_generation_config_eos_is_merged(ckpt, tmp_path):
    free, stop, k = _free_run_and_copy(ckpt, tmp_path, 4)
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": [%d, 2]}' % stop)
    with load(tmp_path) as m:
        assert set(m.info["eos_token_ids"]) == {2, stop}
        toks, stats = m.generate(PROMPT, max_new_tokens=20)
        assert toks == free[:k + 1] and stats["finish_reason"] == "eos"
        toks, stats = m.generate(PROMPT, max_new_tokens=20, stop_on_eos=False)
        assert toks == free and stats["finish_reason"] == "length"


def test_tokenizer_eos_is_merged_once_at_load(ckpt, tmp_path):
    # The one EOS list: config.json, generation_config.json and the tokenizer's eos_token
    # (tokenizer_config.json, mapped to its id through tokenizer.json), decided by libvt at
    # load and used by vt_generate.
    free, stop, k = _free_run_and_copy(ckpt, tmp_path, 3)

    def write(eos_token, tokenizer):
        (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": eos_token}))
        (tmp_path / "tokenizer.json").write_text(json.dumps(tokenizer))

    # An added token, written as an AddedToken dict in tokenizer_config.json.
    write({"content": "<stop>", "special": True},
          {"added_tokens": [{"id": 1, "content": "<s>"}, {"id": stop, "content": "<stop>"}],
           "model": {"type": "BPE", "vocab": {"a": 0}}})
    with load(tmp_path) as m:
        assert m.info["eos_token_ids"] == ([2] if stop == 2 else [2, stop])
        toks, stats = m.generate(PROMPT, max_new_tokens=20)
        assert toks == free[:k + 1] and stats["finish_reason"] == "eos"
    # From the model's vocabulary (an object), and from a Unigram vocabulary (a list).
    write("</x>", {"added_tokens": [], "model": {"type": "BPE", "vocab": {"a": 0, "</x>": 5}}})
    with load(tmp_path) as m:
        assert m.info["eos_token_ids"] == [2, 5]
    write("</x>", {"model": {"type": "Unigram", "vocab": [["a", 0.0], ["b", -1.0], ["</x>", -2.0]]}})
    with load(tmp_path) as m:
        assert m.info["eos_token_ids"] == [2]  # id 2: already there, not repeated
    # An eos_token the tokenizer does not know adds nothing (as the tokenizer: no id).
    write("<nope>", {"added_tokens": [], "model": {"vocab": {"a": 0}}})
    with load(tmp_path) as m:
        assert m.info["eos_token_ids"] == [2]
    # A broken tokenizer.json is an error naming it.
    (tmp_path / "tokenizer.json").write_text('{"added_tokens": [')
    with pytest.raises(ValueError, match="tokenizer.json"):
        load(tmp_path)


def test_max_new_tokens_and_context_limit(ckpt):
    folder, cfg, _ = ckpt("gqa-hd16-bf16")
    with load(folder) as m:
        assert m.generate(PROMPT, max_new_tokens=0)[0] == []
        toks, st = m.generate(PROMPT, max_new_tokens=5, stop_on_eos=False)
        assert len(toks) == 5 and st["generated_tokens"] == 5 and st["prefill_ms"] >= 0 and st["decode_ms"] >= 0
    with load(folder, max_seq_len=16) as m:
        assert m.info["max_seq_len"] == 16
        toks, st = m.generate(PROMPT, max_new_tokens=50, stop_on_eos=False)  # 12 + 5 - 1 = 16 positions
        assert len(toks) == 16 - len(PROMPT) + 1 and st["finish_reason"] == "length"


def test_num_layers_loads_the_first_blocks(ckpt):
    folder, cfg, w = ckpt("sharded-f16")
    one = R.TinyConfig(**{**cfg.__dict__, "layers": 1})
    with load(folder, weight_format="bf16", num_layers=1) as m:
        assert m.info["num_layers"] == 1
        got = m.logits(PROMPT)
    ref = R.reference_logits(R.as_bf16_mode(w, one), one, PROMPT)
    assert rel_err(got, ref) < 1e-4


def test_threads_share_one_model(ckpt):
    folder, cfg, _ = ckpt("gqa-hd16-bf16")
    prompts = [PROMPT[i:] + PROMPT[:i] for i in range(8)]
    with load(folder) as m:
        serial = [m.generate(p, max_new_tokens=12, stop_on_eos=False)[0] for p in prompts]
        with ThreadPoolExecutor(4) as ex:
            par = list(ex.map(lambda p: m.generate(p, max_new_tokens=12, stop_on_eos=False)[0], prompts))
        assert par == serial

        def sess(p):
            with m.new_session() as s:
                out = [s.prefill(p)[0]]
                while len(out) < 12:
                    out.append(s.decode(out[-1])[0])
                return out

        with ThreadPoolExecutor(4) as ex:
            assert list(ex.map(sess, prompts)) == serial


def test_tokens_as_arrays(ckpt):
    folder, cfg, _ = ckpt("gqa-hd16-bf16")
    with load(folder) as m:
        base = m.logits(PROMPT)
        for arr in (np.array(PROMPT, np.int32), np.array(PROMPT, np.int64), np.array(PROMPT, np.uint16), tuple(PROMPT)):
            np.testing.assert_array_equal(m.logits(arr), base)
        assert m.generate(np.array(PROMPT), max_new_tokens=3)[0] == m.generate(PROMPT, max_new_tokens=3)[0]


# ---- lifetime and progress ----------------------------------------------------------------

def test_progress_is_reported_and_can_cancel(ckpt):
    folder, cfg, _ = ckpt("sharded-f16")
    seen = []
    with load(folder, progress=lambda d, t: seen.append((d, t))):
        pass
    assert len(seen) > 3 and seen[-1][0] == seen[-1][1] > 0
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))

    class Stop(Exception):
        pass

    def boom(done, total):
        if done > 0:
            raise Stop("enough")

    with pytest.raises(Stop, match="enough"):
        load(folder, progress=boom)


def test_close_while_in_use(ckpt):
    folder, cfg, _ = ckpt("gqa-hd16-bf16")
    m = load(folder)
    s = m.new_session()
    s.prefill(PROMPT)
    m.close()
    assert m.closed
    with pytest.raises(RuntimeError, match="model is closed"):
        m.logits(PROMPT)
    with pytest.raises(RuntimeError, match="model is closed"):
        m.new_session()
    with pytest.raises(RuntimeError, match="model is closed"):
        s.decode(3)
    s.close()  # the last user: the native model is freed now
    s.close()
    m.close()
    with pytest.raises(RuntimeError, match="session is closed"):
        s.prefill(PROMPT)

    # close() from another thread while generations run: they finish or fail cleanly.
    m = load(folder)
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(m.generate(PROMPT, max_new_tokens=8, stop_on_eos=False)[0])
        except RuntimeError as e:
            errors.append(str(e))

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    m.close()
    for t in ts:
        t.join()
    assert all(e == "model is closed" for e in errors)
    assert len({tuple(r) for r in results}) <= 1


# ---- the real default model (SmolLM2-135M-Instruct) -----------------------------------------

REAL_PROMPT = [504, 2365, 6354, 16438, 27003, 690, 260, 23790, 2767, 30, 536, 216, 33, 36, 40, 41, 28, 260,
               802, 2943, 15004, 8522, 335]


def test_default_model_bf16_vs_int8(default_model_dir):
    with load(default_model_dir, weight_format="bf16") as ref, load(default_model_dir) as q:
        info = q.info
        assert (info["num_layers"], info["hidden_size"], info["num_heads"], info["num_kv_heads"]) == (30, 576, 9, 3)
        assert info["tie_word_embeddings"] and info["weight_format"] == "int8"
        lr, lq = ref.logits(REAL_PROMPT), q.logits(REAL_PROMPT)
        assert np.linalg.norm(lq - lr) / np.linalg.norm(lr) < 0.05
        assert (lq.argmax(-1) == lr.argmax(-1)).mean() >= 0.85
        g1 = q.generate(REAL_PROMPT, max_new_tokens=16, stop_on_eos=False)[0]
        assert g1 == q.generate(REAL_PROMPT, max_new_tokens=16, stop_on_eos=False)[0]


def test_default_model_matches_transformers(default_model_dir, hf):
    torch, transformers = hf
    ref_model = transformers.LlamaForCausalLM.from_pretrained(str(default_model_dir), torch_dtype=torch.float32)
    ref_model.eval()
    with torch.no_grad():
        ref = ref_model(torch.tensor([REAL_PROMPT])).logits[0].double().numpy()
        ref_gen = ref_model.generate(torch.tensor([REAL_PROMPT]), max_new_tokens=16, do_sample=False)
    with load(default_model_dir, weight_format="bf16") as m:
        got = m.logits(REAL_PROMPT)
        gen = m.generate(REAL_PROMPT, max_new_tokens=16, stop_on_eos=False)[0]
    assert rel_err(got, ref) < 1e-4
    assert gen == ref_gen[0, len(REAL_PROMPT):].tolist()
