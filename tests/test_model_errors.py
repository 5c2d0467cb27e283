"""Everything a user can get wrong when loading or running a model gives a clear exception
naming the file / tensor / field / value — never a crash — and leaves loaded models usable."""

from __future__ import annotations

import json
import shutil
import struct

import numpy as np
import pytest

from pyvt import _model

import llama_ref as R

CFG = R.TinyConfig()
PROMPT = [1, 5, 9, 12]


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    folder = tmp_path_factory.mktemp("good")
    R.write_checkpoint(folder, CFG, dtype="BF16")
    return folder


@pytest.fixture(scope="module")
def model(good):
    with load(good) as m:
        yield m


def clone(good, dst, skip=()):
    dst.mkdir(parents=True, exist_ok=True)
    for f in good.iterdir():
        if f.name not in skip:
            shutil.copy(f, dst / f.name)
    return dst


def raw_file(header: dict | bytes, data: bytes = b"", hlen: int | None = None) -> bytes:
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(h) if hlen is None else hlen) + h + data


def load(path, **kw):
    kw.setdefault("device", "cpu")
    return _model.Model(str(path), **kw)


# ---- paths ------------------------------------------------------------------------------

def test_missing_path(tmp_path):
    p = tmp_path / "nope" / "model.safetensors"
    with pytest.raises(FileNotFoundError, match="nope"):
        load(p)


def test_empty_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path.name)):
        load(tmp_path)


def test_index_names_a_missing_shard(good, tmp_path):
    R.write_checkpoint(tmp_path, CFG, dtype="BF16", shards=2)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model-00002-of-00002.safetensors"):
        load(tmp_path)


def test_shard_naming_with_a_missing_sibling(tmp_path):
    R.write_checkpoint(tmp_path, CFG, dtype="BF16", shards=3, index=False)
    (tmp_path / "model-00003-of-00003.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model-00003-of-00003.safetensors"):
        load(tmp_path / "model-00001-of-00003.safetensors")


def test_index_tensor_not_in_its_shard(tmp_path):
    R.write_checkpoint(tmp_path, CFG, dtype="BF16", shards=2)
    idx = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    idx["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(idx))
    with pytest.raises(ValueError, match="model.norm.weight"):
        load(tmp_path)


# ---- corrupt SafeTensors ----------------------------------------------------------------

def test_truncated_file(good, tmp_path):
    d = clone(good, tmp_path / "m")
    f = d / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) - 1000])
    with pytest.raises(ValueError, match=r"model\.safetensors.*(truncated|outside)") as e:
        load(d)
    assert "tensor" in str(e.value)


@pytest.mark.parametrize("content,pattern", [
    (b"", "truncated"),
    (b"\x05\x00", "truncated"),
    (raw_file(b"{}", hlen=1 << 40), "header length"),
    (raw_file(b'{"a": 1', hlen=7), "invalid JSON"),
    (raw_file(b"[1, 2]"), "not a SafeTensors file|not a JSON object"),
])
def test_bad_headers(tmp_path, content, pattern):
    f = tmp_path / "model.safetensors"
    f.write_bytes(content)
    with pytest.raises(ValueError, match=pattern) as e:
        load(f)
    assert "model.safetensors" in str(e.value)


def test_offsets_outside_the_file(tmp_path):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8))
    with pytest.raises(ValueError, match=r"tensor w: data_offsets \[0, 16\] lie outside"):
        load(f)


def test_overlapping_tensors(tmp_path):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                            "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, b"\0" * 24))
    with pytest.raises(ValueError, match="tensors a .* and b .* overlap"):
        load(f)


def test_shape_and_dtype_size_disagree_with_offsets(tmp_path):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file({"model.norm.weight": {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 16]}},
                           b"\0" * 16))
    with pytest.raises(ValueError, match=r"model\.norm\.weight: shape \[3, 4\] of dtype BF16 needs 24 bytes"):
        load(f)


def test_duplicate_tensor_names(tmp_path):
    f = tmp_path / "model.safetensors"
    h = (b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},'
         b' "x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}')
    f.write_bytes(raw_file(h, b"\0" * 8))
    with pytest.raises(ValueError, match='duplicate key "x"'):
        load(f)


def test_unknown_and_non_float_dtypes(good, tmp_path):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file({"w": {"dtype": "Q4_K", "shape": [1], "data_offsets": [0, 1]}}, b"\0"))
    with pytest.raises(ValueError, match='tensor w: unknown dtype "Q4_K"'):
        load(f)
    # A weight stored as integers: named with its dtype.
    w = R.random_weights(CFG)
    tensors = {k: ("BF16", v.shape, R.tensor_bytes(v, "BF16")) for k, v in w.items()}
    tensors["model.norm.weight"] = ("I16", (CFG.hidden,), b"\0" * (2 * CFG.hidden))
    d = tmp_path / "int"
    d.mkdir()
    (d / "model.safetensors").write_bytes(R.safetensors_bytes(tensors))
    with pytest.raises(ValueError, match=r"model\.norm\.weight \(I16"):
        load(d)


def test_deep_nesting_and_bad_utf8(good, tmp_path):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file(b'{"w":' + b"[" * 100000 + b"]" * 100000 + b"}"))
    with pytest.raises(ValueError, match="nesting deeper than"):
        load(f)
    f.write_bytes(raw_file(b'{"w\xff": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}', b"\0" * 4))
    with pytest.raises(ValueError, match="invalid UTF-8"):
        load(f)
    d = clone(good, tmp_path / "m")
    (d / "config.json").write_text("[" * 50000 + "]" * 50000)
    with pytest.raises(ValueError, match=r"config\.json: invalid JSON at byte \d+: nesting deeper than 64"):
        load(d)


def test_mutated_headers_never_crash(good, tmp_path):
    """Random byte flips in a real header: each load either works or raises cleanly."""
    data = (good / "model.safetensors").read_bytes()
    hlen = struct.unpack("<Q", data[:8])[0]
    rng = np.random.default_rng(0)
    f = tmp_path / "model.safetensors"
    outcomes = set()
    for _ in range(60):
        b = bytearray(data[: 8 + hlen + 64])  # keep the header and a little data
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(0, 8 + hlen))] = int(rng.integers(0, 256))
        f.write_bytes(bytes(b))
        try:
            load(f).close()
            outcomes.add("ok")
        except (ValueError, FileNotFoundError, OSError) as e:
            outcomes.add(type(e).__name__)
    assert "ValueError" in outcomes


# ---- config.json ------------------------------------------------------------------------

def test_invalid_json_config(good, tmp_path):
    d = clone(good, tmp_path / "m")
    (d / "config.json").write_text('{"hidden_size": 64,, }')
    with pytest.raises(ValueError, match=r"config\.json: invalid JSON at byte 19"):
        load(d)


@pytest.mark.parametrize("field,value,pattern", [
    ("hidden_size", "64", r'field "hidden_size" must be an integer.*got "64"'),
    ("num_attention_heads", -4, r'field "num_attention_heads" must be an integer in \[1,'),
    ("rms_norm_eps", "small", r'field "rms_norm_eps" must be a positive number'),
    ("tie_word_embeddings", 1, r'field "tie_word_embeddings" must be true or false'),
    ("eos_token_id", [2, "x"], r'field "eos_token_id" must be a token id or a list'),
    ("rope_scaling", {"rope_type": "llama3", "factor": 8.0}, r"rope_scaling\.low_freq_factor is missing"),
])
def test_wrong_config_field_types(good, tmp_path, field, value, pattern):
    d = clone(good, tmp_path / "m")
    cfg = CFG.config_json()
    cfg[field] = value
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=pattern) as e:
        load(d)
    assert "config.json" in str(e.value)


@pytest.mark.parametrize("patch,pattern", [
    ({"rope_theta": 1e-300}, r'field "rope_theta" = 1e-300 is out of range'),
    ({"rms_norm_eps": 1e300}, r'field "rms_norm_eps" = 1e\+300 is out of range'),
    ({"rope_scaling": {"rope_type": "linear", "factor": 1e-300}}, r'field "rope_scaling\.factor" = 1e-300 is out of range'),
    ({"rope_scaling": {"rope_type": "linear", "factor": -2.0}}, r'field "rope_scaling\.factor" must be a positive number'),
    # Each value fits a float32, but the slower frequencies 1e38^(-2k/16) / 3e38 underflow to 0.
    ({"rope_theta": 1e38, "rope_parameters": {"rope_type": "linear", "factor": 3e38}},
     r'field "rope_parameters\.factor" = 3e\+38 gives RoPE inverse frequency \d of 8 = 0 in float32'),
])
def test_config_whose_float32_constants_are_out_of_range(good, tmp_path, patch, pattern):
    # The engine computes in float32: a config whose derived constants round to 0 or inf is
    # refused at load, naming config.json and the field, rather than giving NaN logits.
    d = clone(good, tmp_path / "m")
    cfg = CFG.config_json()
    cfg.update(patch)
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=pattern) as e:
        load(d)
    assert "config.json" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("scaling, pattern", [
    ({"rope_type": "ntk_by_parts", "factor": 4.0}, r'rope_scaling type "ntk_by_parts" is not supported \(supported: '
                                                    r'default, linear, llama3, yarn, longrope, proportional, dynamic\)'),
    ({"rope_type": "dynamic", "factor": 1.0}, r"rope_scaling\.factor = 1 is not supported \(rope type dynamic needs a "
                                               r"factor above 1\)"),
    ({"rope_type": "dynamic", "factor": True}, r'field "rope_scaling\.factor" must be a number'),
    ({"rope_type": "yarn", "factor": 4.0}, r"rope_scaling\.original_max_position_embeddings is missing \(rope type yarn\)"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": -1},
     r'field "rope_scaling\.beta_fast" must be a positive number'),
    ({"type": "su", "short_factor": [1.0] * 8}, r"rope_scaling\.long_factor is missing \(rope type longrope\)"),
    ({"rope_type": "longrope", "short_factor": [1.0] * 8, "long_factor": [1.0] * 3},
     r"rope_scaling\.long_factor has 3 entries; 16 rotary dims need 8"),
    ({"rope_type": "longrope", "short_factor": [1.0, "x"], "long_factor": [1.0] * 8},
     r'field "rope_scaling\.short_factor" must be a list of positive numbers'),
    ({"rope_type": "default", "partial_rotary_factor": 0.5},
     r"partial_rotary_factor 0\.5 is not supported for Llama \(partial rotary embeddings: Phi, Phi-3, StableLM, GLM, "
     r"Nemotron and Sarvam-MoE families only\)"),
    ({"rope_type": "default", "partial_rotary_factor": 1.5}, r'"rope_scaling\.partial_rotary_factor" must be a number in \(0, 1\]'),
])
def test_unsupported_or_incomplete_rope_scaling(good, tmp_path, scaling, pattern):
    d = clone(good, tmp_path / "m")
    cfg = CFG.config_json()
    cfg["rope_scaling"] = scaling
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=pattern) as e:
        load(d)
    assert "config.json" in str(e.value) and "\n" not in str(e.value)


def test_config_disagrees_with_shapes(good, tmp_path):
    d = clone(good, tmp_path / "m")
    cfg = CFG.config_json()
    cfg["num_key_value_heads"] = 4
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"k_proj\.weight is \[32, 64\], expected \[64, 64\]"):
        load(d)


def test_phi_checkpoint_without_its_mlp_biases_is_refused_with_the_names(tmp_path):
    rng = np.random.default_rng(0)
    H, L = 32, 2
    w = {"model.embed_tokens.weight": rng.standard_normal((50, H)), "lm_head.weight": rng.standard_normal((50, H)),
         "lm_head.bias": rng.standard_normal(50), "model.final_layernorm.weight": np.ones(H),
         "model.final_layernorm.bias": np.zeros(H)}
    for i in range(L):
        p = f"model.layers.{i}."
        for n in ("q_proj", "k_proj", "v_proj", "dense"):
            w[p + f"self_attn.{n}.weight"] = rng.standard_normal((H, H))
            w[p + f"self_attn.{n}.bias"] = rng.standard_normal(H)
        w[p + "mlp.fc1.weight"] = rng.standard_normal((4 * H, H))
        w[p + "mlp.fc2.weight"] = rng.standard_normal((H, 4 * H))
        w[p + "input_layernorm.weight"] = np.ones(H)
        w[p + "input_layernorm.bias"] = np.zeros(H)
    R.write_safetensors(tmp_path / "model.safetensors", w, "F16")
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_size": H, "num_hidden_layers": L,
        "num_attention_heads": 4, "intermediate_size": 4 * H, "vocab_size": 50, "hidden_act": "gelu_new"}))
    with pytest.raises(ValueError) as e:
        load(tmp_path)
    msg = str(e.value)
    # Phi's layout is checked: the fc1 / fc2 biases every Phi checkpoint has are named.
    assert "not a Phi checkpoint this engine can run" in msg
    assert "missing 4 tensors: model.layers.{0..1}.mlp.fc1.bias, model.layers.{0..1}.mlp.fc2.bias" in msg
    # Without config.json the tensors are checked against the Llama layout, naming them.
    (tmp_path / "config.json").unlink()
    with pytest.raises(ValueError) as e:
        load(tmp_path)
    msg = str(e.value)
    assert "not a Llama checkpoint" in msg
    assert "missing" in msg and "model.layers.{0..1}.self_attn.o_proj.weight" in msg and "model.norm.weight" in msg
    assert "unexpected" in msg and "model.layers.{0..1}.mlp.fc1.weight" in msg and "lm_head.bias" in msg


# ---- options ----------------------------------------------------------------------------

@pytest.mark.parametrize("kw,exc,pattern", [
    (dict(weight_format="int3"), ValueError, "weight_format"),
    (dict(block_size=48), ValueError, "block_size 48"),
    (dict(block_size=-1), ValueError, "block_size"),
    (dict(num_layers=3), ValueError, "num_layers 3 is more than the 2 blocks"),
    (dict(device="tpu"), ValueError, "device"),
    (dict(device="cuda:7"), RuntimeError, "device cuda:7 was requested, but"),
    (dict(progress=5), TypeError, "progress"),
])
def test_bad_load_options(good, kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        load(good, **kw)


def test_block_size_that_does_not_divide_names_the_tensor(good):
    with pytest.raises(ValueError, match=r"down_proj\.weight.*not a multiple of block_size \(64\)"):
        load(good, block_size=64)


# ---- running ------------------------------------------------------------------------------

def test_token_out_of_range(model):
    V = CFG.vocab
    for bad in ([1, 2, V], np.array([1, V + 5], np.int32), np.array([-1], np.int32), [1, 2**40], [1, -3]):
        with pytest.raises(ValueError, match="outside the vocabulary"):
            model.logits(bad)
    with pytest.raises(ValueError, match=r"token id 96 \(tokens\[2\]\)"):
        model.generate(np.array([1, 2, V], np.int32))
    with pytest.raises(ValueError, match="integers"):
        model.logits([1.5, 2.0])
    with model.new_session() as s:
        s.prefill(PROMPT)
        for bad in (V, -1, 2**33):
            with pytest.raises(ValueError, match="outside the vocabulary"):
                s.decode(bad)
        with pytest.raises(ValueError, match="outside the vocabulary"):
            s.prefill(np.array([3, V], np.int32))
        assert s.length == len(PROMPT)  # nothing appended
        a = s.decode(3)[0]
    with model.new_session() as s:
        s.prefill(PROMPT)
        assert s.decode(3)[0] == a  # the session was left exactly as it was


def test_kv_overflow_appends_nothing(model):
    with model.new_session(6) as s:
        s.prefill(PROMPT)
        with pytest.raises(ValueError, match=r"KV cache full: 4 cached positions \+ 3 new tokens exceed .* 6"):
            s.prefill([1, 2, 3])
        assert s.length == 4
        s.decode(1)
        s.decode(2)
        with pytest.raises(ValueError, match="KV cache full"):
            s.decode(3)
        assert s.length == 6
    with pytest.raises(ValueError, match="max_tokens 1000 exceeds the model's max_seq_len 256"):
        model.new_session(1000)
    with pytest.raises(ValueError, match="more than the model's max_seq_len"):
        model.generate(list(range(1, 90)) * 3, max_new_tokens=1)


@pytest.mark.parametrize("kw,pattern", [
    (dict(temperature=-1.0), "temperature"),
    (dict(temperature=float("nan")), "temperature"),
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(top_k=-2), "top_k"),
    (dict(seed=-1), "seed"),
])
def test_invalid_sampling_options(model, kw, pattern):
    with pytest.raises(ValueError, match=pattern):
        model.generate(PROMPT, max_new_tokens=2, **kw)
    with model.new_session() as s:
        with pytest.raises(ValueError, match=pattern):
            s.prefill(PROMPT, **kw)
        assert s.length == 0


def test_other_bad_calls(model):
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(PROMPT, max_new_tokens=-1)
    with pytest.raises(ValueError, match="prompt is empty"):
        model.generate([], max_new_tokens=2)
    with pytest.raises(ValueError, match="at least one token"):
        model.logits([])
    with model.new_session() as s:
        with pytest.raises(ValueError, match="logits must be"):
            s.prefill(PROMPT, logits="first")
        with pytest.raises(ValueError, match="at least one token"):
            s.prefill([])
        with pytest.raises(ValueError, match="1-D"):
            s.prefill(np.ones((2, 2), np.int32))


def test_model_still_usable_after_errors(model):
    before = model.generate(PROMPT, max_new_tokens=6)[0]
    for call in (lambda: model.logits([CFG.vocab]), lambda: model.generate(PROMPT, top_p=2.0),
                 lambda: model.new_session(10**6)):
        with pytest.raises(ValueError):
            call()
    assert model.generate(PROMPT, max_new_tokens=6)[0] == before
