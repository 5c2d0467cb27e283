"""GGUF quantized tensors loaded as they are (issue 18, item 2): Q8_0 / Q4_0 / Q4_1 blocks go
through pyvt's GGML_* SafeTensors dtypes into the libvt format that holds the same numbers
(int8 / int4 / int4-min), with no second quantization.

The weights here are made so that every dequantized value is exact in bfloat16 (power-of-two
block scales and minimums): the same GGUF converted to F32 and loaded as "bf16" then holds
exactly the same weights, so the two models' logits may differ only by f32 summation order,
while any misplaced nibble, scale or row would change them by orders of magnitude more."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import gguf_writer as gw
import pyvt
from int16_ref import int16_gemm_applies
import importlib

convert = importlib.import_module("pyvt.convert")
from test_convert import TINY, make_tiny_llama, safetensors_header

BLOCK_DTYPE = {gw.Q8_0: "GGML_Q8_0", gw.Q4_0: "GGML_Q4_0", gw.Q4_1: "GGML_Q4_1"}
NATIVE_FORMAT = {gw.Q8_0: "int8", gw.Q4_0: "int4", gw.Q4_1: "int4-min"}


def _pow2_scales(n_blocks: int, base: int) -> np.ndarray:
    return np.ldexp(1.0, -(base + np.arange(n_blocks) % 3)).astype(np.float32)


def exact_q8_0(x) -> bytes:
    blocks = np.asarray(x, np.float32).reshape(-1, 32)
    d = _pow2_scales(len(blocks), 7)
    out = bytearray()
    for blk, s in zip(blocks, d):
        q = np.clip(np.round(blk / s), -127, 127).astype(np.int8)
        out += np.float16(s).tobytes() + q.tobytes()
    return bytes(out)


def exact_q4_0(x) -> bytes:
    blocks = np.asarray(x, np.float32).reshape(-1, 32)
    d = -_pow2_scales(len(blocks), 4)  # negative, as Q4_0's d often is
    out = bytearray()
    for blk, s in zip(blocks, d):
        u = np.clip(np.round(blk / s) + 8, 0, 15).astype(np.uint8)
        out += np.float16(s).tobytes() + (u[:16] | (u[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def exact_q4_1(x) -> bytes:
    blocks = np.asarray(x, np.float32).reshape(-1, 32)
    d = _pow2_scales(len(blocks), 4)
    out = bytearray()
    for blk, s in zip(blocks, d):
        m = np.float32(-8 * s)
        u = np.clip(np.round((blk - m) / s), 0, 15).astype(np.uint8)
        out += np.float16(s).tobytes() + np.float16(m).tobytes() + (u[:16] | (u[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


EXACT = {gw.Q8_0: exact_q8_0, gw.Q4_0: exact_q4_0, gw.Q4_1: exact_q4_1}


@pytest.fixture()
def exact_quantizers(monkeypatch):
    for t, f in EXACT.items():
        monkeypatch.setitem(gw.QUANTIZERS, t, f)


def _native_supported(qtype) -> bool:
    return NATIVE_FORMAT[qtype] in pyvt.WEIGHT_FORMATS


TOKENS = [1, 72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10, 5, 17]


@pytest.mark.parametrize("qtype", [gw.Q8_0, gw.Q4_0, gw.Q4_1])
@pytest.mark.parametrize("arch, tied", [("llama", True), ("llama", False), ("qwen2", True)])
def test_blocks_load_exactly(tmp_path, exact_quantizers, qtype, arch, tied):
    if not _native_supported(qtype):
        pytest.skip(f"{NATIVE_FORMAT[qtype]} is not a weight format of this build")
    make_tiny_llama(tmp_path / "t.gguf", qtype=qtype, arch=arch, tied=tied)
    native = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "native", keep_blocks=True)
    ref = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "f32", dtype="f32")

    header = safetensors_header(native / "model.safetensors")
    dtypes = {k: v["dtype"] for k, v in header.items() if k != "__metadata__"}
    matrices = {k for k in dtypes if k.endswith("proj.weight") or k.endswith("embed_tokens.weight")
                or k == "lm_head.weight"}
    assert {dtypes[k] for k in matrices} == {BLOCK_DTYPE[qtype]}
    assert {dtypes[k] for k in set(dtypes) - matrices} == {"F32"}  # norms, biases
    summary = json.loads((native / "pyvt_blocks.json").read_text())
    assert summary["dequantized"] == {} and sum(summary["kept"].values()) == len(matrices)

    fmt = NATIVE_FORMAT[qtype]
    # On AVX2 int4 rounds x to one byte per K-block (docs/guide.md, "Numerics"): ~1e-2 of the
    # logits, as much as a second quantization; its blocks are compared on the f32 path
    # (VT_ISA=generic, a subprocess) instead.
    isa = "generic" if fmt == "int4" and int16_gemm_applies(fmt, 16) else None
    got_fmt, err, requant_err, same_tokens = _compare_logits(native, ref, isa, tmp_path)
    assert got_fmt == fmt
    # logits() of 16 tokens is a GEMM: on AVX2 the integer one rounds x to int16 per K-block
    # (docs/guide.md, "Numerics"), a few 1e-5 from the f32 product of the bf16 reference.
    int16_x = isa is None and int16_gemm_applies(fmt, 16)
    assert err < (1e-4 if int16_x else 2e-5), err
    # What the test would see with one more quantization: orders of magnitude more.
    assert requant_err > 50 * max(err, 1e-7)
    assert same_tokens


def compare_logits(native, ref) -> list:
    """[weight format, max |native - bf16| / max |bf16| over TOKENS' logits, the same for an int8
    requantization of the reference, whether greedy generation agrees with the bf16 model]."""
    # The f32 KV cache: the same blocks must give the same numbers, to float rounding.
    with pyvt.load_model(native, progress=False, kv_cache="f32") as m, \
            pyvt.load_model(ref, weight_format="bf16", progress=False, kv_cache="f32") as r, \
            pyvt.load_model(ref, weight_format="int8", progress=False, kv_cache="f32") as q:
        got, want, requant = m.logits(TOKENS), r.logits(TOKENS), q.logits(TOKENS)
        scale = float(np.abs(want).max())
        same = pyvt.generate(m, "hello", max_new_tokens=8, temperature=0).tokens == \
            pyvt.generate(r, "hello", max_new_tokens=8, temperature=0).tokens
        return [m.info["weight_format"], float(np.abs(got - want).max()) / scale,
                float(np.abs(requant - want).max()) / scale, same]


def _compare_logits(native, ref, isa, tmp_path):
    """compare_logits here or, with isa, in a process at that VT_ISA."""
    if isa is None:
        return tuple(compare_logits(native, ref))
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from test_gguf_blocks import compare_logits; "
            "print(json.dumps(compare_logits(sys.argv[2], sys.argv[3])))")
    out = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)), str(native), str(ref)],
                         env=dict(os.environ, VT_ISA=isa), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def test_q_and_k_rows_are_unpermuted_as_blocks(tmp_path):
    """llama.cpp stores Q/K rows permuted; the converter moves whole rows of blocks back."""
    hf, tensors = make_tiny_llama(tmp_path / "t.gguf", qtype=gw.Q8_0)
    out = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "n", keep_blocks=True)
    raw = (out / "model.safetensors").read_bytes()
    (hlen,) = struct.unpack_from("<Q", raw)
    header = json.loads(raw[8:8 + hlen])
    e = header["model.layers.0.self_attn.q_proj.weight"]
    rows, cols = e["shape"]
    data = np.frombuffer(raw[8 + hlen + e["data_offsets"][0]:8 + hlen + e["data_offsets"][1]], np.uint8)
    data = data.reshape(rows, cols // 32 * 34)
    gguf_rows = np.frombuffer(dict((n, b) for n, _, _, b in tensors)["blk.0.attn_q.weight"], np.uint8)
    want = convert.unpermute_qk(gguf_rows.reshape(rows, -1), 4)
    np.testing.assert_array_equal(data, want)


def test_explicit_format_quantizes_again(tmp_path, exact_quantizers):
    make_tiny_llama(tmp_path / "t.gguf", qtype=gw.Q4_0)
    native = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "n", keep_blocks=True)
    ref = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "f32", dtype="f32")
    with pyvt.load_model(native, weight_format="int8", progress=False) as m, \
            pyvt.load_model(ref, weight_format="int8", progress=False) as r:
        assert m.info["weight_format"] == "int8"
        # The blocks dequantized exactly, then packed as from the F32 conversion: the same model.
        np.testing.assert_array_equal(m.logits(TOKENS), r.logits(TOKENS))


def test_mixed_types_in_one_linear(tmp_path, exact_quantizers):
    """q_proj as Q8_0 next to Q4_0 k/v: q|k|v is one packed matrix, so it is dequantized and
    packed as int8; the rest stays as it is."""
    hf, _ = make_tiny_llama(tmp_path / "t.gguf", qtype=gw.Q4_0)
    q = convert.permute_qk(hf["model.layers.0.self_attn.q_proj.weight"], 4)
    make_tiny_llama(tmp_path / "m.gguf", qtype=gw.Q4_0, drop=("blk.0.attn_q.weight",),
                    extra_tensors=[("blk.0.attn_q.weight", gw.Q8_0, q.shape, exact_q8_0(q))])
    native = convert.convert_gguf(tmp_path / "m.gguf", tmp_path / "n", keep_blocks=True)
    ref = convert.convert_gguf(tmp_path / "m.gguf", tmp_path / "f32", dtype="f32")
    with pyvt.load_model(native, progress=False) as m, \
            pyvt.load_model(ref, weight_format="bf16", progress=False) as r:
        assert m.info["weight_format"] == "int8"  # layer 0's q_proj decides the report
        want = r.logits(TOKENS)
        err = float(np.abs(m.logits(TOKENS) - want).max()) / float(np.abs(want).max())
        # Only layer 0's q|k|v is quantized again (INT8 blocked-32: ~0.5 % error); a wrong
        # dequantization of the mixed parts would be off by ~100 %.
        assert err < 2e-2, err
    with pyvt.load_model(native, weight_format="bf16", progress=False) as b:
        # bf16 holds these values exactly: the dequantized parts are the GGUF's numbers.
        err = float(np.abs(b.logits(TOKENS) - want).max()) / float(np.abs(want).max())
        assert err < 2e-5, err


def test_a_non_finite_block_scale_is_named(tmp_path):
    hf, tensors = make_tiny_llama(tmp_path / "t.gguf", qtype=gw.Q8_0)
    out = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "n", keep_blocks=True)
    st = out / "model.safetensors"
    raw = bytearray(st.read_bytes())
    (hlen,) = struct.unpack_from("<Q", raw)
    e = json.loads(raw[8:8 + hlen])["model.layers.1.mlp.down_proj.weight"]
    rows, cols = e["shape"]
    row, block = 5, 1
    at = 8 + hlen + e["data_offsets"][0] + (row * (cols // 32) + block) * 34
    raw[at:at + 2] = np.float16(np.inf).tobytes()
    st.write_bytes(bytes(raw))
    with pytest.raises(ValueError) as ei:
        pyvt.load_model(out, progress=False)
    msg = str(ei.value)
    assert "model.layers.1.mlp.down_proj.weight" in msg and "block 1 of row 5" in msg and "non-finite" in msg


def test_block_dtypes_only_for_matrices(tmp_path):
    """A GGML_* norm, or a GGML_* tensor whose byte count or shape does not add up, is refused."""
    make_tiny_llama(tmp_path / "t.gguf", qtype=gw.Q8_0)
    out = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "n", keep_blocks=True)
    st = out / "model.safetensors"
    good = st.read_bytes()

    def rewrite(edit):
        (hlen,) = struct.unpack_from("<Q", good)
        header = json.loads(good[8:8 + hlen])
        edit(header)
        hb = json.dumps(header).encode()
        hb += b" " * (-len(hb) % 8)
        st.write_bytes(struct.pack("<Q", len(hb)) + hb + good[8 + hlen:])

    def norm_as_blocks(h):  # 64 F32 values = 256 bytes; as Q8_0 [4, 32]: 4 blocks = 136 bytes
        e = h["model.norm.weight"]
        e["dtype"], e["shape"] = "GGML_Q8_0", [4, 32]
        e["data_offsets"][1] = e["data_offsets"][0] + 136
    rewrite(norm_as_blocks)
    with pytest.raises(Exception, match="model.norm.weight.*GGML_Q8_0|GGML_Q8_0.*model.norm.weight"):
        pyvt.load_model(out, progress=False)

    def bad_columns(h):
        h["model.layers.0.mlp.up_proj.weight"]["shape"] = [96 * 2, 32]  # same numel, right bytes
    rewrite(bad_columns)
    with pytest.raises(Exception, match="up_proj"):
        pyvt.load_model(out, progress=False)

    def bad_bytes(h):
        e = h["model.layers.0.mlp.up_proj.weight"]
        e["shape"] = [96, 96]  # 3 blocks per row: 96 * 3 * 34 bytes, not what the offsets span
    rewrite(bad_bytes)
    with pytest.raises(Exception, match="up_proj.*needs .* bytes"):
        pyvt.load_model(out, progress=False)

    def one_d(h):
        e = h["model.layers.0.mlp.up_proj.weight"]
        e["shape"] = [96 * 64]
    rewrite(one_d)
    with pytest.raises(Exception, match=r"must be 2-D \(or 3-D: stacked experts\) with a multiple of 32 columns"):
        pyvt.load_model(out, progress=False)


def test_load_gguf_keeps_blocks_and_says_what_it_dequantized(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    hf, tensors = make_tiny_llama(tmp_path / "t.gguf", qtype=gw.Q4_0)
    with pyvt.load_model(tmp_path / "t.gguf", progress=False) as m:
        assert m.info["weight_format"] == "int4"
    assert "dequantized" not in capfd.readouterr().err
    # Q5_1 has no exact libvt format: rounded to int8 (Q8_0 blocks), with one line saying so.
    make_tiny_llama(tmp_path / "q5.gguf", qtype=gw.Q5_1)
    with pyvt.load_model(tmp_path / "q5.gguf", progress=False) as m:
        assert m.info["weight_format"] == "int8"
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if "pyvt: q5.gguf" in ln]
    assert len(lines) == 1 and "Q5_1 tensors rounded to int8 (Q8_0)" in lines[0] and "dequantized" not in lines[0]
    # Q5_0 is Q8_0's numbers exactly (codes q - 16): kept as such, loaded as int8, no notice;
    # every weight the file's: in bf16 the kept folder and the folder of the file's dequantized
    # values give the same logits, bit for bit.
    make_tiny_llama(tmp_path / "q50.gguf", qtype=gw.Q5_0)
    with pyvt.load_model(tmp_path / "q50.gguf", progress=False) as m:
        assert m.info["weight_format"] == "int8"
    assert "dequantized" not in capfd.readouterr().err
    kept = convert.convert_gguf(tmp_path / "q50.gguf", tmp_path / "q50-kept", keep_blocks=True)
    plain = convert.convert_gguf(tmp_path / "q50.gguf", tmp_path / "q50-plain", dtype="f32")
    assert '"GGML_Q8_0"' in (kept / "model.safetensors").read_bytes()[:4096].decode("latin-1")
    with pyvt.load_model(kept, weight_format="bf16", progress=False) as m, \
            pyvt.load_model(plain, weight_format="bf16", progress=False) as r:
        np.testing.assert_array_equal(m.logits(TOKENS), r.logits(TOKENS))


@pytest.mark.parametrize("dtype, refs", [("bf16", False), ("f32", False), ("f32", True)])
def test_dequantize_folder_writes_what_a_plain_conversion_writes(tmp_path, dtype, refs):
    """The kept-blocks folder made plain again (hub.reference) holds the bytes `pyvt convert`
    writes from the GGUF: every tensor, Q8_0, Q4_0 and Q4_1 blocks, F32 norms (those a
    referring folder leaves in the GGUF read from there)."""
    for qtype in (gw.Q8_0, gw.Q4_0, gw.Q4_1):
        d = tmp_path / str(qtype)
        d.mkdir()
        make_tiny_llama(d / "t.gguf", qtype=qtype)
        native = convert.convert_gguf(d / "t.gguf", d / "native", keep_blocks=True, gguf_refs=refs)
        assert (native / convert.GGUF_REFS).exists() == refs
        plain = convert.convert_gguf(d / "t.gguf", d / "plain", dtype=dtype)
        again = convert.dequantize_folder(native, d / "again", dtype=dtype)
        assert not (again / "pyvt_blocks.json").exists() and not (again / convert.GGUF_REFS).exists()
        h_plain, h_again = safetensors_header(plain / "model.safetensors"), safetensors_header(again / "model.safetensors")
        assert {k: (v["dtype"], v["shape"]) for k, v in h_again.items() if k != "__metadata__"} == \
            {k: (v["dtype"], v["shape"]) for k, v in h_plain.items() if k != "__metadata__"}
        raw_plain, raw_again = (plain / "model.safetensors").read_bytes(), (again / "model.safetensors").read_bytes()
        for k, v in h_plain.items():
            if k == "__metadata__":
                continue
            a, b = v["data_offsets"]
            c, e = h_again[k]["data_offsets"]
            base_p = 8 + struct.unpack_from("<Q", raw_plain)[0]
            base_a = 8 + struct.unpack_from("<Q", raw_again)[0]
            assert raw_plain[base_p + a:base_p + b] == raw_again[base_a + c:base_a + e], (qtype, k)
        for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
            assert (again / f).read_bytes() == (native / f).read_bytes()


def _one_tensor_file(folder, entry: dict, data: bytes) -> None:
    head = json.dumps({"t": entry}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(head)) + head + data)


def test_dequantize_folder_names_a_bad_file(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(ValueError, match="model.safetensors: not a SafeTensors file"):
        convert.dequantize_folder(tmp_path, tmp_path / "out")
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 2) + b"{x")
    with pytest.raises(ValueError, match="model.safetensors: bad SafeTensors header"):
        convert.dequantize_folder(tmp_path, tmp_path / "out")
    _one_tensor_file(tmp_path, {"dtype": "F32", "shape": [4], "data_offsets": [0, 64]}, b"\0" * 16)
    with pytest.raises(ValueError, match="tensor 't' lies outside the file"):
        convert.dequantize_folder(tmp_path, tmp_path / "out")
    _one_tensor_file(tmp_path, {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}, b"\0" * 16)
    with pytest.raises(ValueError, match="tensor 't' has dtype I64, not one pyvt writes"):
        convert.dequantize_folder(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out" / "model.safetensors").exists()  # nothing half-written left


def test_the_default_model_keeps_its_q4_1_blocks(native_model_dir, default_model_dir):
    """pyvt pull keeps the shipped GGUF's Q4_1 blocks (no Q4_1 -> BF16 -> INT8); the BF16
    reference beside it is the same model dequantized."""
    summary = json.loads((native_model_dir / "pyvt_blocks.json").read_text())
    assert summary["kept"].get("Q4_1", 0) > 0
    header = safetensors_header(native_model_dir / "model.safetensors")
    assert header["model.layers.0.self_attn.q_proj.weight"]["dtype"] == "GGML_Q4_1"
    ref = safetensors_header(default_model_dir / "model.safetensors")
    assert {v["dtype"] for k, v in ref.items() if k != "__metadata__"} == {"BF16"}
    ids = [1, 504, 3458, 282, 4649, 314, 2]
    with pyvt.load_model(native_model_dir, device="cpu", progress=False) as m, \
            pyvt.load_model(default_model_dir, weight_format="bf16", progress=False) as r:
        expect = "int4-min" if _native_supported(gw.Q4_1) else "int8"
        assert m.info["weight_format"] == expect
        got, want = m.logits(ids), r.logits(ids)
        # int4-min holds the file's numbers (lm_head 8-bit); int8 quantizes them once more.
        rel = float(np.abs(got - want).max()) / float(np.abs(want).max())
        assert rel < 0.05, rel
        assert (got.argmax(-1) == want.argmax(-1)).mean() >= 0.8


# ---- GGUF blocks by reference (pyvt_gguf.json) --------------------------------------------


def _refs(folder) -> dict:
    return json.loads((folder / convert.GGUF_REFS).read_text())


@pytest.mark.parametrize("qtype", [gw.Q8_0, gw.Q4_0, gw.Q4_1])
@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_referenced_blocks_load_as_copied_ones(tmp_path, qtype, arch):
    """A folder that refers to the GGUF's blocks (load_model(path.gguf)'s conversion) holds the
    same model as one that copies them, bit for bit; only the float norms are written (llama's
    Q/K rows, which llama.cpp's converter permuted, are referred to with their heads and put in
    order by libvt)."""
    make_tiny_llama(tmp_path / "t.gguf", qtype=qtype, arch=arch, tied=False)
    copied = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "copied", keep_blocks=True)
    referring = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "referring", keep_blocks=True, gguf_refs=True)
    assert not (copied / convert.GGUF_REFS).exists()
    refs = _refs(referring)
    meta = refs.pop("__metadata__")
    st = os.stat(tmp_path / "t.gguf")
    assert meta == {"format": "pyvt-gguf-refs", "file": str((tmp_path / "t.gguf").resolve()), "size": st.st_size,
                    "mtime_ns": st.st_mtime_ns}
    written = {k for k in safetensors_header(referring / "model.safetensors") if k != "__metadata__"}
    full = safetensors_header(copied / "model.safetensors")
    assert written | set(refs) == set(full) - {"__metadata__"} and not written & set(refs)
    qk = {k for k in full if k.endswith(("q_proj.weight", "k_proj.weight"))}
    assert len(qk) == 4 and qk <= set(refs) and written == {k for k in full if k.endswith(("norm.weight", ".bias"))}
    heads = {k: refs[k].get("pyvt_permuted_heads") for k in qk}
    want = {k: (TINY["n_head"] if ".q_proj" in k else TINY["n_kv"]) if arch == "llama" else None for k in qk}
    assert heads == want
    raw = (tmp_path / "t.gguf").read_bytes()
    base = 8 + struct.unpack_from("<Q", (copied / "model.safetensors").read_bytes())[0]
    whole = (copied / "model.safetensors").read_bytes()
    for k, v in refs.items():  # each reference is the copied tensor's bytes, where the GGUF has them
        assert v["dtype"] == BLOCK_DTYPE[qtype] and v["shape"] == full[k]["shape"]
        a, b = v["data_offsets"]
        c, e = full[k]["data_offsets"]
        rows = np.frombuffer(raw[a:b], np.uint8).reshape(v["shape"][0], -1)
        if v.get("pyvt_permuted_heads"):  # (llama.cpp's row order: the copy holds them in order)
            rows = convert.unpermute_qk(rows, v["pyvt_permuted_heads"])
        assert rows.tobytes() == whole[base + c:base + e], k
    from pyvt.model import checkpoint_bytes
    assert checkpoint_bytes(referring) == (referring / "model.safetensors").stat().st_size + sum(
        v["data_offsets"][1] - v["data_offsets"][0] for v in refs.values())
    with pyvt.load_model(copied, progress=False, kv_cache="f32") as m, \
            pyvt.load_model(referring, progress=False, kv_cache="f32") as r:
        assert r.info["weight_format"] == m.info["weight_format"] == NATIVE_FORMAT[qtype]
        np.testing.assert_array_equal(r.logits(TOKENS), m.logits(TOKENS))


def test_referenced_blocks_need_the_unchanged_gguf(tmp_path):
    """A referring folder whose GGUF changed, went away, or whose references are damaged is
    refused with one line naming the files; nothing is read from a changed GGUF."""
    make_tiny_llama(tmp_path / "t.gguf", qtype=gw.Q8_0)
    out = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "n", keep_blocks=True, gguf_refs=True)
    gguf = tmp_path / "t.gguf"
    good = (out / convert.GGUF_REFS).read_text()
    st = os.stat(gguf)
    os.utime(gguf, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with pytest.raises(ValueError) as ei:
        pyvt.load_model(out, progress=False)
    msg = str(ei.value)
    assert str(out / convert.GGUF_REFS) in msg and f"{gguf} has changed since this folder was converted" in msg
    with pytest.raises(ValueError, match="has changed since this folder was converted"):
        convert.dequantize_folder(out, tmp_path / "plain")
    os.utime(gguf, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pyvt.load_model(out, progress=False):
        pass
    # damaged references: an offset past the file, a missing "format", a relative path
    refs = json.loads(good)
    refs["model.layers.0.mlp.up_proj.weight"]["data_offsets"][1] += st.st_size
    (out / convert.GGUF_REFS).write_text(json.dumps(refs))
    with pytest.raises(ValueError, match=r"pyvt_gguf.json \(references into .*t.gguf\): tensor "
                                         r"model.layers.0.mlp.up_proj.weight: data_offsets .* lie outside"):
        pyvt.load_model(out, progress=False)
    for name, heads in (("model.layers.0.mlp.up_proj.weight", 2), ("model.layers.0.self_attn.q_proj.weight", 3)):
        refs = json.loads(good)
        refs[name]["pyvt_permuted_heads"] = heads  # (q_proj: 64 rows are no 3 heads)
        (out / convert.GGUF_REFS).write_text(json.dumps(refs))
        with pytest.raises(ValueError, match=f"tensor {name}: \"pyvt_permuted_heads\" must be"):
            pyvt.load_model(out, progress=False)
    for edit, match in ((lambda m: m.pop("format"), "not a pyvt GGUF references file"),
                        (lambda m: m.update(file="t.gguf"), "must be the GGUF's absolute path"),
                        (lambda m: m.update(size="12"), "needs the GGUF's \"size\" and \"mtime_ns\" as integers")):
        refs = json.loads(good)
        edit(refs["__metadata__"])
        (out / convert.GGUF_REFS).write_text(json.dumps(refs))
        with pytest.raises(ValueError, match=match):
            pyvt.load_model(out, progress=False)
    (out / convert.GGUF_REFS).write_text(good)
    gguf.rename(tmp_path / "moved.gguf")
    with pytest.raises(FileNotFoundError, match=str(gguf)):
        pyvt.load_model(out, progress=False)


def test_load_gguf_refers_to_its_blocks_and_converts_again_when_it_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "t.gguf"
    make_tiny_llama(gguf, qtype=gw.Q8_0, seed=1)
    with pyvt.load_model(gguf, progress=False, kv_cache="f32") as m:
        first = m.logits(TOKENS)
    folders = list((tmp_path / "cache" / "gguf").iterdir())
    assert len(folders) == 1 and (folders[0] / convert.GGUF_REFS).is_file()
    assert (folders[0] / "model.safetensors").stat().st_size < gguf.stat().st_size / 4
    # A folder an older pyvt made (the blocks copied, no "gguf_refs" in its marker) is made
    # again, referring: the copy's disk space comes back.
    from pyvt import hub
    marker = folders[0] / hub.MARKER
    old = json.loads(marker.read_text())
    del old["gguf_refs"]
    marker.write_text(json.dumps(old))
    (folders[0] / convert.GGUF_REFS).unlink()
    with pyvt.load_model(gguf, progress=False, kv_cache="f32") as m:
        np.testing.assert_array_equal(m.logits(TOKENS), first)
    assert json.loads(marker.read_text())["gguf_refs"] is True and (folders[0] / convert.GGUF_REFS).is_file()
    # the same name, other weights: converted again, and the new weights load
    make_tiny_llama(gguf, qtype=gw.Q8_0, seed=2)
    with pyvt.load_model(gguf, progress=False, kv_cache="f32") as m:
        second = m.logits(TOKENS)
    want = convert.convert_gguf(gguf, tmp_path / "copied", keep_blocks=True)
    with pyvt.load_model(want, progress=False, kv_cache="f32") as r:
        np.testing.assert_array_equal(second, r.logits(TOKENS))
    assert np.abs(second - first).max() > 1e-3


def test_referenced_k_quants_load_as_copied_ones(tmp_path, monkeypatch):
    """A Q4_K_M-like file (Q4_K, Q6_K for lm_head / attn_v / ffn_down, one Q5_0 o_proj): the
    folder that refers to them holds the same model as the copied one, bit for bit — libvt
    converts Q4_K superblocks to Q4_1 blocks, Q5_0 to Q8_0 and rounds Q6_K to Q8_0 as the
    converter does (ggml's rounding), at every instruction-set level."""
    monkeypatch.setitem(TINY, "hidden", 256)  # (K-quant rows are whole superblocks of 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    hf, _ = make_tiny_llama(tmp_path / "base.gguf", qtype=gw.Q4_K, tied=False)
    src = {"output.weight": (gw.Q6_K, hf["lm_head.weight"]),
           "blk.1.attn_output.weight": (gw.Q5_0, hf["model.layers.1.self_attn.o_proj.weight"])}
    for i in range(2):
        src[f"blk.{i}.attn_v.weight"] = (gw.Q6_K, hf[f"model.layers.{i}.self_attn.v_proj.weight"])
        src[f"blk.{i}.ffn_down.weight"] = (gw.Q6_K, hf[f"model.layers.{i}.mlp.down_proj.weight"])
    quant = {gw.Q6_K: gw.quant_q6_k, gw.Q5_0: gw.quant_q5_0}

    def ties(x):  # Q6_K blocks of random codes and power-of-two scales: x · (1 / d) lands on
        # halves (code 16 of a block whose largest is -32: 63.5), where roundf and rint differ
        n = x.size // 256
        rng = np.random.default_rng(5)
        b = np.zeros((n, 210), np.uint8)
        b[:, :192] = rng.integers(0, 256, (n, 192))
        b[:, 192:208] = rng.choice(np.array([1, 2, 4, -8, 16], np.int8), (n, 16)).view(np.uint8)
        b[:, 208:210] = np.array([2.0 ** -9], np.float16).view(np.uint8)
        return b.tobytes()
    quant[gw.Q6_K + 100] = ties
    src["blk.0.attn_v.weight"] = (gw.Q6_K + 100, src["blk.0.attn_v.weight"][1])
    path = tmp_path / "q4km.gguf"
    make_tiny_llama(path, qtype=gw.Q4_K, tied=False, drop=tuple(src),
                    extra_tensors=[(n, t % 100, x.shape, quant[t](x)) for n, (t, x) in src.items()])
    copied = convert.convert_gguf(path, tmp_path / "copied", keep_blocks=True)
    referring = convert.convert_gguf(path, tmp_path / "referring", keep_blocks=True, gguf_refs=True)
    refs = _refs(referring)
    dtypes = {k: v["dtype"] for k, v in refs.items() if k != "__metadata__"}
    assert dtypes["lm_head.weight"] == dtypes["model.layers.0.mlp.down_proj.weight"] == "GGML_Q6_K"
    assert dtypes["model.layers.1.self_attn.o_proj.weight"] == "GGML_Q5_0"
    assert dtypes["model.layers.0.mlp.up_proj.weight"] == dtypes["model.embed_tokens.weight"] == "GGML_Q4_K"
    assert dtypes["model.layers.0.self_attn.q_proj.weight"] == "GGML_Q4_K"  # (its rows put in order by libvt)
    assert refs["model.layers.0.self_attn.k_proj.weight"]["pyvt_permuted_heads"] == TINY["n_kv"]
    assert json.loads((referring / "pyvt_blocks.json").read_text()) == json.loads((copied / "pyvt_blocks.json").read_text())
    code = ("import json, sys, numpy as np, pyvt; sys.path.insert(0, sys.argv[1]); from test_gguf_blocks import TOKENS\n"
            "out = []\n"
            "for d in sys.argv[2:]:\n"
            "    with pyvt.load_model(d, progress=False, kv_cache='f32') as m:\n"
            "        out.append([m.info['weight_format'], m.logits(TOKENS).tolist()])\n"
            "print(json.dumps(out))")
    from pyvt import ops
    order = ["generic", "avx2", "avx512"]
    for isa in (order[: order.index(ops.cpu_isa()) + 1] if ops.cpu_isa() in order else ["generic"]):
        env = dict(os.environ)
        env.pop("VT_ISA", None)
        if isa:
            env["VT_ISA"] = isa
        p = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)), str(copied),
                            str(referring)], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        (fa, la), (fb, lb) = json.loads(p.stdout.strip().splitlines()[-1])
        assert fa == fb == "int4-min"  # (the model's format: layer 0's Q4_K q_proj's)
        np.testing.assert_array_equal(np.array(la), np.array(lb), err_msg=str(isa))
    # A non-finite Q6_K scale in the GGUF (its mtime kept: the references still match) is named.
    e = refs["model.layers.0.mlp.down_proj.weight"]
    rows, cols = e["shape"]
    at = e["data_offsets"][0] + (3 * (cols // 256) + 1) * 210 + 208  # row 3, superblock 1: d
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(np.float16(np.nan).tobytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(ValueError, match=r"model.layers.0.mlp.down_proj.weight.*Q6_K block 1 of row 3 has a "
                                         r"non-finite scale"):
        pyvt.load_model(referring, progress=False)


@pytest.mark.parametrize("qtype", [gw.IQ4_NL, gw.IQ4_XS], ids=["IQ4_NL", "IQ4_XS"])
def test_referenced_iq4_loads_as_copied_one(tmp_path, monkeypatch, qtype):
    """IQ4 files: libvt's Q8_0 blocks of the levels (to_carrier) are the converter's
    (iq4_nl_as_q8_0 / iq4_xs_as_q8_0), so a referring folder and a copied one load to
    bit-identical logits; each carried block's numbers are the file's (IQ4_XS: to f16 scales)."""
    from pyvt import gguf

    monkeypatch.setitem(TINY, "hidden", 256)  # (IQ4_XS rows are whole superblocks of 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    path = tmp_path / "iq4.gguf"
    make_tiny_llama(path, qtype=qtype, tied=False)
    copied = convert.convert_gguf(path, tmp_path / "copied", keep_blocks=True)
    referring = convert.convert_gguf(path, tmp_path / "referring", keep_blocks=True, gguf_refs=True)
    name = "IQ4_NL" if qtype == gw.IQ4_NL else "IQ4_XS"
    assert _refs(referring)["model.layers.0.mlp.up_proj.weight"]["dtype"] == f"GGML_{name}"
    with gguf.GGUFFile(path) as g:  # the carried blocks hold the file's values
        raw = np.frombuffer(g.raw("blk.0.ffn_up.weight"), np.uint8)
        want = g.dequantize("blk.0.ffn_up.weight")
    bb = 18 if qtype == gw.IQ4_NL else 136
    q8 = (gguf.iq4_nl_as_q8_0 if qtype == gw.IQ4_NL else gguf.iq4_xs_as_q8_0)(raw.reshape(-1, bb))
    got = gguf.dequantize(q8.reshape(-1), gguf.GGMLType.Q8_0, want.shape)
    tol = 0 if qtype == gw.IQ4_NL else 2.0 ** -11
    assert np.abs(got - want).max() <= tol * np.abs(want).max()
    with pyvt.load_model(copied, progress=False, kv_cache="f32") as m, \
            pyvt.load_model(referring, progress=False, kv_cache="f32") as r:
        assert m.info["weight_format"] == r.info["weight_format"] == "int8"
        np.testing.assert_array_equal(r.logits(TOKENS), m.logits(TOKENS))


def test_a_gguf_whose_path_is_not_utf8_is_copied(tmp_path, monkeypatch):
    """pyvt_gguf.json (JSON, UTF-8) cannot name a path that is not UTF-8: such a GGUF's blocks
    are copied into the folder as before, and it loads."""
    monkeypatch.setenv("PYVT_CACHE", str(tmp_path / "cache"))
    name = os.fsdecode(b"t\xff.gguf")
    try:
        make_tiny_llama(tmp_path / name, qtype=gw.Q8_0)
    except (OSError, UnicodeError):
        pytest.skip("this filesystem takes no such name")
    make_tiny_llama(tmp_path / "plain.gguf", qtype=gw.Q8_0)
    with pyvt.load_model(tmp_path / name, progress=False, kv_cache="f32") as m, \
            pyvt.load_model(tmp_path / "plain.gguf", progress=False, kv_cache="f32") as r:
        np.testing.assert_array_equal(m.logits(TOKENS), r.logits(TOKENS))
    folders = {f.name[:2]: f for f in (tmp_path / "cache" / "gguf").iterdir()}
    assert not (folders["t_"] / convert.GGUF_REFS).exists() and (folders["pl"] / convert.GGUF_REFS).exists()


def test_dequantize_folder_names_bad_references(tmp_path):
    """dequantize_folder on a referring folder whose pyvt_gguf.json is not one, or holds an
    entry without a shape and two offsets, names the file (and the tensor)."""
    make_tiny_llama(tmp_path / "t.gguf", qtype=gw.Q8_0)
    out = convert.convert_gguf(tmp_path / "t.gguf", tmp_path / "n", keep_blocks=True, gguf_refs=True)
    good = _refs(out)
    bad = dict(good, __metadata__={k: v for k, v in good["__metadata__"].items() if k != "format"})
    (out / convert.GGUF_REFS).write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="pyvt_gguf.json: not a pyvt GGUF references file"):
        convert.dequantize_folder(out, tmp_path / "a")
    bad = dict(good)
    bad["model.layers.0.mlp.up_proj.weight"] = {"dtype": "GGML_Q8_0", "data_offsets": [0, 34]}
    (out / convert.GGUF_REFS).write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="pyvt_gguf.json: tensor 'model.layers.0.mlp.up_proj.weight': an entry "
                                         "without a shape and two data offsets"):
        convert.dequantize_folder(out, tmp_path / "b")


def test_a_non_finite_iq4_xs_scale_in_the_gguf_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(TINY, "hidden", 256)  # (IQ4_XS rows are whole superblocks of 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    path = tmp_path / "iq4.gguf"
    make_tiny_llama(path, qtype=gw.IQ4_XS, tied=False)
    out = convert.convert_gguf(path, tmp_path / "n", keep_blocks=True, gguf_refs=True)
    e = _refs(out)["model.layers.1.mlp.gate_proj.weight"]
    cols = e["shape"][1]
    st = os.stat(path)
    with open(path, "r+b") as f:  # row 2, superblock 0: d (the references still match: mtime kept)
        f.seek(e["data_offsets"][0] + 2 * (cols // 256) * 136)
        f.write(np.array([np.inf], np.float16).tobytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(ValueError, match=r"model.layers.1.mlp.gate_proj.weight.*IQ4_XS block 0 of row 2 has a "
                                         r"non-finite scale"):
        pyvt.load_model(out, progress=False)


def test_a_q4_k_scale_beyond_f16_read_in_place_is_named(tmp_path, monkeypatch):
    """A Q4_K tensor referred to is not read by the converter: libvt converts its blocks to Q4_1
    and refuses a sub-block scale d·sc that an f16 cannot hold, naming tensor, block and row.
    A copied folder still reads the tensor first (q4k_fits) and dequantizes it instead."""
    from pyvt import gguf
    monkeypatch.setitem(TINY, "hidden", 256)  # (Q4_K rows are whole superblocks of 256)
    monkeypatch.setitem(TINY, "ffn", 512)
    path = tmp_path / "q4k.gguf"
    make_tiny_llama(path, qtype=gw.Q4_K, tied=False)
    with gguf.GGUFFile(path) as g:
        t = g.tensors["blk.1.ffn_up.weight"]
        at = t.offset + (2 * (t.shape[1] // 256) + 0) * 144  # row 2, superblock 0: d
    with open(path, "r+b") as f:  # d = 60000, finite; its sub-blocks' scales sc >= 2 overflow
        f.seek(at + 4)
        assert (np.frombuffer(f.read(4), np.uint8) & 63).max() >= 2  # (some sub-block's sc is)
        f.seek(at)
        f.write(np.array([60000], np.float16).tobytes())
    out = convert.convert_gguf(path, tmp_path / "n", keep_blocks=True, gguf_refs=True)
    assert _refs(out)["model.layers.1.mlp.up_proj.weight"]["dtype"] == "GGML_Q4_K"
    with pytest.raises(ValueError, match=r"model.layers.1.mlp.up_proj.weight.*Q4_K block 0 of row 2 has a "
                                         r"non-finite scale \(NaN or Inf, or too large for an f16\)"):
        pyvt.load_model(out, progress=False)
    copied = convert.convert_gguf(path, tmp_path / "c", keep_blocks=True)
    assert json.loads((copied / "pyvt_blocks.json").read_text())["dequantized"].get("Q4_K") == 1
    with pyvt.load_model(copied, progress=False) as m:
        assert np.isfinite(m.logits(TOKENS)).all()
