"""The hostile-inputs catalogue (docs/reliability.md): files downloaded from strangers and
arguments from careless callers. Each case must give a clear exception naming the file /
tensor / field / value, leave the process intact, and leave an already loaded model exactly
as usable as before (``model`` below generates the same tokens after every case).

tests/test_model_errors.py has the first cases of each kind; this file extends them."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pyvt
from pyvt import _model

import llama_ref as R

CFG = R.TinyConfig()
PROMPT = [1, 5, 9, 12]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    folder = tmp_path_factory.mktemp("good")
    R.write_checkpoint(folder, CFG, dtype="BF16")
    return folder


@pytest.fixture(scope="module")
def model(good):
    with load(good) as m:
        yield m


@pytest.fixture(scope="module")
def baseline(model):
    return model.generate(PROMPT, max_new_tokens=6, stop_on_eos=False)[0]


@pytest.fixture
def intact(model, baseline):
    """Checks after the test that the loaded model still generates what it did before."""
    yield
    assert model.generate(PROMPT, max_new_tokens=6, stop_on_eos=False)[0] == baseline


def load(path, **kw):
    kw.setdefault("device", "cpu")
    return _model.Model(str(path), **kw)


def clone(good, dst, skip=()):
    dst.mkdir(parents=True, exist_ok=True)
    for f in good.iterdir():
        if f.name not in skip:
            shutil.copy(f, dst / f.name)
    return dst


def raw_file(header: dict | bytes, data: bytes = b"", hlen: int | None = None) -> bytes:
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(h) if hlen is None else hlen) + h + data


def refused(path, pattern, exc=ValueError, **kw):
    with pytest.raises(exc, match=pattern) as e:
        load(path, **kw)
    return str(e.value)


# ---- truncation at every section boundary --------------------------------------------------

def test_truncated_at_every_section_boundary(good, tmp_path, intact):
    data = (good / "model.safetensors").read_bytes()
    hlen = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + hlen])
    base = 8 + hlen
    cuts = {0, 1, 4, 7, 8, 9, 8 + hlen // 2, base - 1, base, base + 1, len(data) - 1}
    for name, t in header.items():
        if name != "__metadata__":
            a, b = t["data_offsets"]
            cuts |= {base + a, base + a + 1, base + b - 1}
    cuts.discard(len(data))
    f = tmp_path / "model.safetensors"
    shutil.copy(good / "config.json", tmp_path / "config.json")
    for cut in sorted(cuts):
        f.write_bytes(data[:cut])
        msg = refused(tmp_path, r"model\.safetensors")
        want = "truncated" if cut < 8 else "header length" if cut < base else "outside the data section"
        assert want in msg, (cut, msg)


# ---- header length, offsets ----------------------------------------------------------------

@pytest.mark.parametrize("hlen", [2**64 - 1, 2**63, 2**32 + 2, "size-7"])
def test_header_length_larger_than_the_file(tmp_path, hlen, intact):
    f = tmp_path / "model.safetensors"
    body = json.dumps({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    n = len(body) + 4 + 1 if hlen == "size-7" else hlen
    f.write_bytes(raw_file(body, b"\0" * 4, hlen=n))
    refused(f, "header length .* exceeds")


def test_header_over_the_size_limit(tmp_path, intact):
    f = tmp_path / "model.safetensors"
    n = 100_000_001
    with open(f, "wb") as fh:  # sparse: no 100 MB written
        fh.write(struct.pack("<Q", n) + b"{")
        fh.truncate(8 + n)
    refused(f, "exceeds the 100000000-byte limit")


@pytest.mark.parametrize("offsets,pattern", [
    ([-4, 0], r"invalid data_offsets \[-4, 0\]"),
    ([8, 4], r"invalid data_offsets \[8, 4\]"),
    ([0, 2**63 - 1], "lie outside the data section"),
    ([0, 1e30], "must be an array of two integers"),
    ([0, 4.0], "must be an array of two integers"),
    ([0], "must be an array of two integers"),
    ([0, 4, 8], "must be an array of two integers"),
    ("0,4", "must be an array of two integers"),
    ([0, 12], "needs 4 bytes but data_offsets"),
])
def test_bad_offsets(tmp_path, offsets, pattern, intact):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file({"w": {"dtype": "F32", "shape": [1], "data_offsets": offsets}}, b"\0" * 16))
    assert "tensor w" in refused(f, pattern)


def test_tensors_overlapping_by_one_byte_and_empty_tensors(tmp_path, intact):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                            "b": {"dtype": "F32", "shape": [2], "data_offsets": [7, 15]}}, b"\0" * 16))
    refused(f, r"tensors a \[0, 8\) and b \[7, 15\) overlap")
    # Zero-size tensors may sit anywhere (they own no bytes): not an overlap.
    f.write_bytes(raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                            "e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [4, 4]}}, b"\0" * 8))
    refused(f, "not a Llama checkpoint")


# ---- dtype / shape / byte count --------------------------------------------------------------

@pytest.mark.parametrize("entry,pattern", [
    ({"dtype": "F32", "shape": [2**62, 2**62], "data_offsets": [0, 4]}, "needs too many bytes"),
    ({"dtype": "F32", "shape": [2**31, 2**31, 4], "data_offsets": [0, 4]}, "needs too many bytes"),
    ({"dtype": "BF16", "shape": [-1, 2], "data_offsets": [0, 4]}, "non-negative integers"),
    ({"dtype": "BF16", "shape": [1.5], "data_offsets": [0, 4]}, "non-negative integers"),
    ({"dtype": "BF16", "shape": [1] * 9, "data_offsets": [0, 2]}, "9 dimensions"),
    ({"dtype": "bf16", "shape": [2], "data_offsets": [0, 4]}, 'unknown dtype "bf16"'),
    ({"dtype": 2, "shape": [2], "data_offsets": [0, 4]}, 'non-string "dtype"'),
    ({"dtype": "F16", "shape": 2, "data_offsets": [0, 4]}, 'non-array "shape"'),
    ({"dtype": "F16", "shape": [3], "data_offsets": [0, 4]}, r"shape \[3\] of dtype F16 needs 6 bytes"),
    ([1, 2], "header entry is not a JSON object"),
])
def test_dtype_shape_byte_count_mismatch(tmp_path, entry, pattern, intact):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file({"w": entry}, b"\0" * 8))
    assert "tensor w" in refused(f, pattern)


def test_transposed_weight_is_named(good, tmp_path, intact):
    w = R.random_weights(CFG)
    w["model.layers.1.mlp.down_proj.weight"] = w["model.layers.1.mlp.down_proj.weight"].T.copy()
    R.write_checkpoint(tmp_path, CFG, weights=w)
    refused(tmp_path, r"model\.layers\.1\.mlp\.down_proj\.weight is \[96, 64\], expected \[64, 96\]")


def test_metadata_must_be_an_object(tmp_path, intact):
    f = tmp_path / "model.safetensors"
    f.write_bytes(raw_file({"__metadata__": [1]}))
    refused(f, "__metadata__ is not a JSON object")


# ---- duplicate tensor names ----------------------------------------------------------------

def test_duplicate_tensor_across_shards(tmp_path, intact):
    w = R.random_weights(CFG)
    st = {n: ("BF16", v.shape, R.tensor_bytes(v, "BF16")) for n, v in w.items()}
    (tmp_path / "config.json").write_text(json.dumps(CFG.config_json()))
    a, b = tmp_path / "model-00001-of-00002.safetensors", tmp_path / "model-00002-of-00002.safetensors"
    a.write_bytes(R.safetensors_bytes(st))
    b.write_bytes(R.safetensors_bytes({"model.norm.weight": st["model.norm.weight"]}))
    msg = refused(tmp_path, r"tensor model\.norm\.weight is stored twice")
    assert "model-00001-of-00002" in msg and "model-00002-of-00002" in msg


# ---- NaN / Inf weights: refused at load, naming the tensor and the position ----------------

@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32"])
@pytest.mark.parametrize("name,idx,where", [
    ("model.embed_tokens.weight", (3, 5), "row 3, column 5"),
    ("model.norm.weight", (7,), "index 7"),
    ("model.layers.1.post_attention_layernorm.weight", (0,), "index 0"),
    ("model.layers.0.mlp.down_proj.weight", (2, 9), "row 2, column 9"),
    ("lm_head.weight", (95, 63), "row 95, column 63"),
])
def test_non_finite_weights_are_refused(tmp_path, dtype, name, idx, where, intact):
    for k, val in enumerate((np.nan, np.inf, -np.inf)):
        w = R.random_weights(CFG)
        w[name][idx] = val
        d = tmp_path / f"v{k}"
        R.write_checkpoint(d, CFG, weights=w, dtype=dtype)
        for fmt in ("int8", "bf16"):
            msg = refused(d, "NaN|Inf|non-finite", weight_format=fmt)
            assert name in msg and where in msg and "model.safetensors" in msg, msg


def test_non_finite_tied_embedding_is_refused(tmp_path, intact):
    cfg = R.TinyConfig(tie=True)
    w = R.random_weights(cfg)
    w["model.embed_tokens.weight"][0, 0] = np.inf
    R.write_checkpoint(tmp_path, cfg, weights=w)
    refused(tmp_path, r"model\.embed_tokens\.weight .* non-finite value .* at row 0, column 0")


def test_huge_finite_weights_load_and_generate_without_crashing(tmp_path, intact):
    """Finite weights near the format's limit overflow the activations (Inf/NaN logits):
    not refused (they are finite), and generation stays defined: ids inside the vocabulary."""
    w = R.random_weights(CFG)
    for n in w:
        if n.endswith(("q_proj.weight", "k_proj.weight", "up_proj.weight")):
            w[n] = np.sign(w[n]) * 3e38
    R.write_checkpoint(tmp_path, CFG, weights=w, dtype="BF16")
    for fmt in ("int8", "bf16", "fp8"):
        with load(tmp_path, weight_format=fmt) as m:
            toks = m.generate(PROMPT, max_new_tokens=4, stop_on_eos=False)[0]
            assert len(toks) == 4 and all(0 <= t < CFG.vocab for t in toks)
            toks = m.generate(PROMPT, max_new_tokens=4, temperature=1.0, stop_on_eos=False)[0]
            assert all(0 <= t < CFG.vocab for t in toks)


def _strict_json(text: str):
    def refuse(c):
        raise ValueError(f"{c} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_nan_logits_never_reach_json_output(tmp_path):
    """Issue 20: NaN logits (here from finite weights that overflow the activations; config
    values that did the same are refused at load) gave NaN logprobs, which `pyvt generate
    --json` and the server's streamed events printed as `NaN`: not JSON. They are null."""
    import family_models as F

    cfg = R.TinyConfig(vocab=300)
    w = R.random_weights(cfg)
    for n in w:
        if n.endswith(("q_proj.weight", "k_proj.weight", "up_proj.weight")):
            w[n] = np.sign(w[n]) * 3e38
    R.write_checkpoint(tmp_path / "m", cfg, weights=w, dtype="BF16")
    F.write_tokenizer(tmp_path / "m")
    # The f32 KV cache: where the linears keep f32 activations (AVX-512 int8) the overflowed keys
    # stay finite and an f16 cache refuses them (an error naming the cache, tested elsewhere);
    # the AVX2 integer kernels make those rows NaN, which any cache passes on.
    p = subprocess.run([sys.executable, "-m", "pyvt", "generate", "-m", str(tmp_path / "m"), "--json", "--logprobs",
                        "2", "-n", "3", "--kv-cache", "f32", "Hello"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = _strict_json(p.stdout)
    assert len(out["logprobs"]) == 3 and out["logprobs"][0]["logprob"] is None
    assert all(t["logprob"] is None for t in out["logprobs"][0]["top"])

    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from pyvt.engine import AsyncEngine
    from pyvt.server import create_app

    with pyvt.load_model(tmp_path / "m", progress=False, kv_cache="f32") as m:
        r = pyvt.generate(m, "Hello", max_new_tokens=2, logprobs=True, top_logprobs=2)
        assert math.isnan(r.logprobs[0].logprob) and r.to_dict()["logprobs"][0]["logprob"] is None
        engine = AsyncEngine(m)
        try:
            with TestClient(create_app(engine, "m")) as c:
                res = c.post("/v1/chat/completions", json={
                    "model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "logprobs": True,
                    "top_logprobs": 2, "stream": True})
                events = [ln[6:] for ln in res.text.splitlines() if ln.startswith("data: ") and ln != "data: [DONE]"]
                lps = [e["choices"][0]["logprobs"] for e in map(_strict_json, events) if e["choices"]]
                assert any(lp and lp["content"][0]["logprob"] is None for lp in lps), res.text[:2000]
        finally:
            engine.close()


# ---- JSON: non-UTF-8, huge, wrong shapes ---------------------------------------------------

@pytest.mark.parametrize("content,pattern", [
    (b'{"model_type": "ll\xffama"}', "invalid UTF-8"),
    (b'{"model_type": "\xed\xa0\x80"}', "invalid UTF-8"),  # an encoded surrogate
    (b'{"model_type": "\xc0\xae"}', "invalid UTF-8"),      # overlong
    ("\ufeff{}".encode("utf-16"), "invalid JSON"),
    (b'{"hidden_size": 64\x00}', "invalid JSON"),
    (b'{"model_type": "\\ud800"}', "unpaired UTF-16 surrogate"),
    (b'{"hidden_size": 1e999}', "number out of range"),
    (b'{"hidden_size": 99999999999999999999999}', r'"hidden_size" must be an integer'),
    (b'{"vocab_size": 4294967296}', r'"vocab_size" must be an integer in \[1, 2147483647\]'),
    (b'{"max_position_embeddings": 0}', '"max_position_embeddings" must be an integer'),
    (b'{"rope_theta": -1}', '"rope_theta" must be a positive number'),
    (b'{"architectures": "LlamaForCausalLM"}', '"architectures" must be a list of strings'),
    (b'{"eos_token_id": [2, 3.5]}', '"eos_token_id" must be a token id'),
    (b'{"rope_scaling": {"rope_type": "linear"}}', r"rope_scaling\.factor is missing"),
    (b'{"rope_scaling": {"rope_type": "linear", "factor": "2"}}', r'"rope_scaling\.factor" must be a positive'),
    (b"", "unexpected end of input"),
    (b"   ", "unexpected end of input"),
])
def test_hostile_config_json(good, tmp_path, content, pattern, intact):
    d = clone(good, tmp_path / "m", skip=("config.json",))
    (d / "config.json").write_bytes(content)
    assert "config.json" in refused(d, pattern)


def test_hostile_generation_config_json(good, tmp_path, intact):
    d = clone(good, tmp_path / "m")
    for content, pattern in ((b'{"eos_token_id": "\xff"}', "invalid UTF-8"),
                             (b'{"eos_token_id": -1}', '"eos_token_id" must be a token id'),
                             (b"[2]", "expected a JSON object")):
        (d / "generation_config.json").write_bytes(content)
        assert "generation_config.json" in refused(d, pattern)


def test_huge_json_files(good, tmp_path, intact):
    d = clone(good, tmp_path / "m")
    with open(d / "config.json", "wb") as f:  # sparse, 17 MB
        f.write(b"{")
        f.truncate(17 << 20)
    refused(d, r"config\.json: \d+ bytes is larger than the \d+-byte limit")
    shutil.copy(good / "config.json", d / "config.json")
    with open(d / "model.safetensors.index.json", "wb") as f:  # sparse, 65 MB
        f.write(b"{")
        f.truncate(65 << 20)
    refused(d, r"model\.safetensors\.index\.json: \d+ bytes is larger than the \d+-byte limit")


def test_many_small_json_values(good, tmp_path, intact):
    """A 5 MB config.json of a million array entries: parsed within the limits, then
    refused on the field's type — no quadratic blow-up, no stack overflow."""
    d = clone(good, tmp_path / "m", skip=("config.json",))
    (d / "config.json").write_text('{"architectures": [' + ",".join(["1"] * 1_000_000) + "]}")
    refused(d, '"architectures" must be a list of strings')
    keys = ",".join(f'"k{i}": {i}' for i in range(200_000))  # many keys: the duplicate check is O(n log n)
    (d / "config.json").write_text("{" + keys + ', "k7": 0}')
    refused(d, 'duplicate key "k7"')


def test_hostile_tokenizer_files(good, default_model_dir, tmp_path, intact):
    d = clone(good, tmp_path / "m")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(default_model_dir) / name, d / name)
    (d / "tokenizer_config.json").write_bytes(b'{"bos_token": "\xff"}')
    with pytest.raises(ValueError, match="tokenizer_config.json: not UTF-8"):
        pyvt.load_model(d)
    (d / "tokenizer_config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="tokenizer_config.json: expected a JSON object"):
        pyvt.load_model(d)
    shutil.copy(Path(default_model_dir) / "tokenizer_config.json", d / "tokenizer_config.json")
    (d / "tokenizer.json").write_bytes(b'{"model": 5}')
    with pytest.raises(ValueError, match="not a valid tokenizer.json"):
        pyvt.load_model(d)
    (d / "tokenizer.json").write_bytes(b"\x00\xff" * 100)
    with pytest.raises(ValueError, match="not a valid tokenizer.json"):
        pyvt.load_model(d)


# ---- index.json ------------------------------------------------------------------------------

@pytest.mark.parametrize("index,exc,pattern", [
    ({"weight_map": {"model.norm.weight": "model-00009-of-00009.safetensors"}}, FileNotFoundError,
     r"names shard model-00009-of-00009\.safetensors \(e\.g\. for model\.norm\.weight\)"),
    ({"weight_map": {}}, ValueError, "weight_map is empty"),
    ({"weight_map": []}, ValueError, 'non-object "weight_map"'),
    ({"metadata": {}}, ValueError, 'non-object "weight_map"'),
    ({"weight_map": {"model.norm.weight": 3}}, ValueError, "is not a file name"),
    ({"weight_map": {"model.norm.weight": ""}}, ValueError, "is not a file name"),
    ({"weight_map": {"model.norm.weight": "sub"}}, OSError, "is a directory"),
    ({"weight_map": {"model.norm.weight": "model.safetensors.index.json"}}, ValueError, "SafeTensors"),
])
def test_hostile_index(good, tmp_path, index, exc, pattern, intact):
    d = clone(good, tmp_path / "m", skip=("model.safetensors",))
    (d / "sub").mkdir()
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    refused(d, pattern, exc)


def test_index_that_lists_a_shard_missing_tensors(tmp_path, intact):
    R.write_checkpoint(tmp_path, CFG, shards=2)
    idx = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    idx["weight_map"]["model.layers.0.extra.weight"] = "model-00001-of-00002.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(idx))
    refused(tmp_path, r"weight_map puts tensor model\.layers\.0\.extra\.weight in model-00001-of-00002")


# ---- symlinks, FIFOs, devices ------------------------------------------------------------------

def test_symlink_loops(good, tmp_path, intact):
    d = clone(good, tmp_path / "m", skip=("model.safetensors",))
    os.symlink("model.safetensors", d / "model.safetensors")  # points at itself
    refused(d, "cannot open .*model.safetensors: Too many levels of symbolic links", OSError)
    (d / "model.safetensors").unlink()
    os.symlink("b.safetensors", d / "model.safetensors")
    os.symlink("model.safetensors", d / "b.safetensors")  # a two-link cycle
    refused(d / "model.safetensors", "Too many levels of symbolic links", OSError)
    # A loop named config.json (or generation_config.json) is reported, not skipped.
    d2 = clone(good, tmp_path / "m2", skip=("config.json",))
    os.symlink("config.json", d2 / "config.json")
    refused(d2, r"config\.json: Too many levels of symbolic links", OSError)
    d3 = clone(good, tmp_path / "m3")
    os.symlink("generation_config.json", d3 / "generation_config.json")
    refused(d3, r"generation_config\.json: Too many levels of symbolic links", OSError)
    # A dangling config.json link is a missing file, named.
    d4 = clone(good, tmp_path / "m4", skip=("config.json",))
    os.symlink("gone.json", d4 / "config.json")
    refused(d4, r"no such file or directory: .*config\.json", FileNotFoundError)
    # A folder with a loop to itself inside still loads (folders are not walked).
    d5 = clone(good, tmp_path / "m5")
    os.symlink(".", d5 / "loop")
    load(d5).close()
    # The whole model path a loop: missing.
    os.symlink("self", tmp_path / "self")
    with pytest.raises(FileNotFoundError):
        pyvt.load_model(tmp_path / "self")


def test_symlink_loop_tokenizer_config(good, default_model_dir, tmp_path, intact):
    d = clone(good, tmp_path / "m")
    shutil.copy(Path(default_model_dir) / "tokenizer.json", d / "tokenizer.json")
    os.symlink("tokenizer_config.json", d / "tokenizer_config.json")
    with pytest.raises(OSError, match="tokenizer_config.json"):
        pyvt.load_model(d)


def test_fifos_and_devices_never_block(good, tmp_path, intact):
    """A FIFO named model.safetensors or config.json would block open() forever: refused."""
    code = textwrap.dedent(f"""
        import os, sys
        from pyvt import _model
        d = {str(tmp_path)!r}
        for name in ("model.safetensors", "config.json", "generation_config.json"):
            sub = os.path.join(d, name.replace(".", "_"))
            os.makedirs(sub)
            for f in os.listdir({str(good)!r}):
                if f != name:
                    os.symlink(os.path.join({str(good)!r}, f), os.path.join(sub, f))
            os.mkfifo(os.path.join(sub, name))
            try:
                _model.Model(sub, device="cpu")
            except OSError as e:
                assert "not a regular file" in str(e) and name in str(e), e
            else:
                raise AssertionError("a FIFO was accepted")
        sub = os.path.join(d, "dev")
        os.makedirs(sub)
        for f in os.listdir({str(good)!r}):
            os.symlink(os.path.join({str(good)!r}, f), os.path.join(sub, f))
        os.unlink(os.path.join(sub, "config.json"))
        os.symlink("/dev/zero", os.path.join(sub, "config.json"))
        try:
            _model.Model(sub, device="cpu")
        except OSError as e:
            assert "not a regular file" in str(e), e
        else:
            raise AssertionError("/dev/zero was accepted")
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


# ---- tokenizer and embedding disagree ----------------------------------------------------------

def test_tokenizer_larger_than_the_embedding(default_model_dir, tmp_path, intact):
    cfg = R.TinyConfig(vocab=1000)
    R.write_checkpoint(tmp_path, cfg)
    shutil.copy(Path(default_model_dir) / "tokenizer.json", tmp_path / "tokenizer.json")
    with pytest.raises(ValueError, match=r"tokenizer has 49152 tokens but the model's embedding has 1000 rows"):
        pyvt.load_model(tmp_path)


def test_embedding_rows_beyond_the_tokenizer(default_model_dir, tmp_path, intact):
    """A padded embedding (more rows than the tokenizer has ids) loads; ids past the
    tokenizer — in prompts or generated — decode to nothing, never an error."""
    V = 49152 + 64
    cfg = R.TinyConfig(vocab=V, max_pos=64)
    w = R.random_weights(cfg)
    head = np.zeros((V, cfg.hidden), np.float32)
    head[49152 + 10] = 1.0   # logit = sum(h) or -sum(h): one of the two rows past the
    head[49152 + 20] = -1.0  # tokenizer wins every step
    w["lm_head.weight"] = head
    R.write_checkpoint(tmp_path, cfg, weights=w, dtype="F32")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(default_model_dir) / name, tmp_path / name)
    with pyvt.load_model(tmp_path) as m:
        r = pyvt.generate(m, "Hello", max_new_tokens=5)
        assert r.tokens and all(t in (49162, 49172) for t in r.tokens)
        assert r.text == ""
        pieces = list(pyvt.stream(m, [1, 49200, 49201], max_new_tokens=3, logprobs=True, top_logprobs=2))
        assert pieces[-1].result.text == "" and len(pieces[-1].result.logprobs) == 3
        assert m.decode([49200, 9906]) == m.decode([9906])


def test_decode_of_impossible_ids(model, default_model_dir, intact):
    from pyvt.tokenizer import Tokenizer

    tok = Tokenizer(Path(default_model_dir) / "tokenizer.json")
    assert tok.decode([10**6, 49152]) == ""
    for bad in ([-1], [2**40], [2**32]):
        with pytest.raises(ValueError, match="is not a token id"):
            tok.decode(bad)
    with pytest.raises(ValueError, match="not valid Unicode.*index 1"):
        tok.encode("a\ud800b")


# ---- the C API, from C -------------------------------------------------------------------------

def test_c_api_hostile_arguments(tmp_path):
    """tests/c/test_hostile.c: token ids >= vocab, zero / negative / enormous lengths, bad
    enums and options through every C entry point; the model generates the same after."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    inc, lib = pyvt.get_include(), pyvt.get_library_dir()
    exe = tmp_path / "test_hostile"
    build = subprocess.run([cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                            str(ROOT / "tests/c/test_hostile.c"), f"-I{inc}", f"-L{lib}", f"-Wl,-rpath,{lib}", "-lvt"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe), str(ROOT / "fuzz" / "data")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and " passed, 0 failed" in run.stdout, run.stdout + run.stderr


# ---- context length: 0, enormous, allocation failure -----------------------------------------

def test_max_seq_len_zero_and_enormous(good, intact):
    with pytest.raises(ValueError, match="max_seq_len must be a positive integer"):
        pyvt.load_model(good, max_seq_len=0)
    for bad in ((1 << 24) + 1, 2**40, -1):
        with pytest.raises(ValueError, match="max_seq_len"):
            load(good, max_seq_len=bad)
    with load(good, max_seq_len=0) as m:  # native 0 = the config's
        assert m.info["max_seq_len"] == CFG.max_pos
    with load(good, max_seq_len=1 << 24) as m:
        assert m.info["max_seq_len"] == 1 << 24
        assert m.generate(PROMPT, max_new_tokens=3)[0] == load(good).generate(PROMPT, max_new_tokens=3)[0]


def test_config_context_beyond_the_limit_is_capped(good, tmp_path, intact):
    d = clone(good, tmp_path / "m", skip=("config.json",))
    cfg = CFG.config_json()
    cfg["max_position_embeddings"] = 2**40
    (d / "config.json").write_text(json.dumps(cfg))
    with load(d) as m:
        assert m.info["max_seq_len"] == 1 << 24


def test_allocation_failure_is_an_error_not_a_crash(good, tmp_path):
    """Under a 2.5 GiB address-space limit, a 2^24-token prefill needs a KV cache of 8 GiB:
    MemoryError, the session left empty and the model still generating the same tokens."""
    code = textwrap.dedent(f"""
        import resource, numpy as np
        from pyvt import _model
        m = _model.Model({str(good)!r}, device="cpu", max_seq_len=1 << 24)
        before = m.generate({PROMPT!r}, max_new_tokens=5)[0]
        toks = np.ones(1 << 24, np.int32)
        resource.setrlimit(resource.RLIMIT_AS, (2560 << 20, resource.RLIM_INFINITY))
        s = m.new_session()
        try:
            s.prefill(toks)
        except MemoryError as e:
            print("MemoryError:", e)
        else:
            raise SystemExit("no MemoryError")
        assert s.length == 0
        s.close()
        try:
            m.logits(toks)  # the [2^24, vocab] float32 result alone is 6 GiB: MemoryError first
        except MemoryError:
            pass
        else:
            raise SystemExit("no MemoryError from logits")
        assert m.generate({PROMPT!r}, max_new_tokens=5)[0] == before
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
    assert "out of host memory" in r.stdout


def test_stop_strings_are_bounded():
    """Every token's text is checked against every stop string: their number and length are
    capped per call, with one line naming the limit (docs/reliability.md, "Memory")."""
    from pyvt.options import MAX_STOP_CHARS, MAX_STOP_STRINGS

    ok = pyvt.GenerateOpts(stop=[f"<{i}>" for i in range(MAX_STOP_STRINGS)])
    assert len(ok.stop) == MAX_STOP_STRINGS
    assert pyvt.GenerateOpts(stop="x" * MAX_STOP_CHARS).stop == ("x" * MAX_STOP_CHARS,)
    with pytest.raises(ValueError, match=f"stop: at most {MAX_STOP_STRINGS} strings, got 200000"):
        pyvt.GenerateOpts(stop=[str(i) for i in range(200_000)])
    with pytest.raises(ValueError, match=f"at most {MAX_STOP_CHARS} characters, got one of 1000000") as e:
        pyvt.GenerateOpts(stop=["ok", "y" * 1_000_000])
    assert len(str(e.value)) < 200
    with pytest.raises(ValueError, match="non-empty strings") as e:
        pyvt.GenerateOpts(stop=["ok", b"z" * 1_000_000])
    assert len(str(e.value)) < 300 and "\n" not in str(e.value)
