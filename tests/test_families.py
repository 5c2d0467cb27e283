"""Model families beyond plain Llama (issue 16): Llama with attention/MLP biases and
head_dim != hidden/heads, Mistral (with and without sliding_window), Qwen2 (qkv bias, tied,
sliding window on some layers), Qwen3 (q/k norms, independent head_dim, attention_bias),
Phi-3 (fused qkv_proj / gate_up_proj, sliding window), Gemma 2 ((1+w) norms, embedding scale,
GeGLU, post-attention/feedforward norms, query_pre_attn_scalar, soft-capping, alternating
sliding/global layers), Gemma 3 text (the same plus q/k norms and the sliding layers' own RoPE
base; linear scaling on the global layers).

The tiny checkpoints are made from transformers' own config classes (tests/family_models.py).
With torch installed they are compared against transformers in float32: bf16 mode logits,
greedy tokens over 32 steps, the 8-bit and 4-bit modes' teacher-forced top-1 agreement.
Without torch the committed golden data (tools/make_family_golden.py) checks the same
numbers; the numpy float64 reference (llama_ref) is an independent second check either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pyvt import _model

import family_models as F
import llama_ref as R
from int16_ref import int16_gemm_applies

CASES = sorted(F.CASES)
PROMPT = F.PROMPT


def load(path, **kw):
    """The CPU engine, with the exact-math f32 KV cache unless a test asks for f16."""
    kw.setdefault("device", "cpu")
    kw.setdefault("kv_cache", "f32")
    return _model.Model(str(path), **kw)


def rel_err(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def golden():
    return F.load_golden()


@pytest.fixture(scope="module")
def from_golden(tmp_path_factory, golden):
    """name -> (folder written with numpy from the golden data, its weights)."""
    made = {}

    def get(name):
        if name not in made:
            folder = tmp_path_factory.mktemp(name)
            made[name] = (folder, F.write_from_golden(folder, name, golden))
        return made[name]

    return get


def teacher_sequence(golden, name) -> list[int]:
    return golden["cases"][name]["sequence"]


def greedy_equal_or_near_tie(got: list[int], want: list[int], margins: list[float], tol: float = 1e-3) -> None:
    """Greedy tokens identical, except that after a step where the reference's top-2 margin
    is below `tol` (a near-tie that float rounding may break either way) the rest is not
    compared."""
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            assert margins[i] < tol, f"greedy token {i}: {a} != {b} (reference top-2 margin {margins[i]:.3g})"
            return
    assert len(got) == len(want)


# ---- the golden data (no torch needed) ---------------------------------------------------

def test_golden_covers_every_case(golden):
    assert sorted(golden["cases"]) == CASES
    for name in CASES:
        g = golden["cases"][name]
        assert g["config"]["architectures"] == [F.architecture(F.CASES[name][0])]


@pytest.mark.parametrize("name", CASES)
def test_bf16_matches_transformers_golden(from_golden, golden, name):
    folder, w = from_golden(name)
    g = golden["cases"][name]
    seq = g["sequence"]
    with load(folder, weight_format="bf16") as m:
        assert m.info["family"] == F.EXPECTED_FEATURES[name][0]
        assert m.info["features"] == F.EXPECTED_FEATURES[name][1]
        got = m.logits(seq)
        toks, _ = m.generate(PROMPT, max_new_tokens=32, stop_on_eos=False)
    rows = g["logit_rows"]
    ref_rows = np.asarray(g["logits"], np.float64)
    assert rel_err(got[rows], ref_rows) < 1e-3
    np.testing.assert_array_equal(got.argmax(-1), g["argmax"])
    greedy_equal_or_near_tie(list(toks), g["greedy"], g["greedy_margins"])


@pytest.mark.parametrize("name", CASES)
def test_float64_reference(from_golden, golden, name):
    """numpy float64 (llama_ref, with biases, q/k norms and windows) against pyvt's bf16 mode
    (whose weights are these bf16 values exactly) and against transformers' stored logits."""
    folder, w = from_golden(name)
    g = golden["cases"][name]
    cfg = g["config"]
    seq = g["sequence"]
    ref = R.reference_logits(F.unfused(w, cfg), F.tiny_config(cfg), seq, F.layer_windows(cfg), F.gemma2_params(cfg),
                             **F.reference_extras(cfg))
    assert rel_err(ref[g["logit_rows"]], np.asarray(g["logits"], np.float64)) < 1e-5
    with load(folder, weight_format="bf16") as m:
        assert rel_err(m.logits(seq), ref) < 1e-5


# Measured against the rounded reference (and the exact one), 2026-11-26: f16 1.3e-6 .. 1.7e-5
# (a few f32 keys and values lie next to an f16 rounding boundary that float64 falls on the
# other side of; 15 to 40 times that against the exact one); int8 2e-7 .. 3.3e-6 (9e-4 ..
# 5.8e-3 against the exact one; its bound is int8's, tests/test_model.py: a code that rounds
# the other way on an f32-vs-f64 difference moves a logit more than an f16 step does). On an
# AVX-512 CPU (2026-11-27), whose f32 sums run in another order, f16 reached 3.7e-5 (qwen2-tied's
# decode rows, against 2.2e-4 from the exact one): hence 6e-5. The 4-layer SmolLM3 cases
# (2026-11-28, this AVX-512 VM) reached 7.0e-5 (smollm3's prefill, against 4.4e-4 from the exact
# one) and 7.4e-5 (smollm3-window-bias's decode rows): twice as many layers for a boundary key
# to move; hence 1.2e-4. The second bound (a quarter of the rounding's own effect) still holds
# with room in every case.
KV_BOUNDS = {"f16": 1.2e-4, "int8": 5e-3}
# Cohere's parallel LayerNorm block (added 2026-11-29) sits farther from the rounded reference
# with the f16 cache: 7.8e-5 (cohere) and 1.6e-4 (cohere2, four layers) against 2.2e-4 and
# 3.8e-4 from the exact one, measured on this AVX-512 VM. The rounding itself is modelled: the
# change the f16 cache makes to pyvt's logits has 0.99 of the norm of the change it makes to
# the reference's; their difference is 0.35-0.42 of it (Helium's: 0.11), spread over the rows,
# as keys near an f16 boundary round the other way (pyvt's f32 keys vs the reference's float64
# ones; Cohere's f32 logits are 5.7e-6 / 7.2e-6 from float64 against 5e-7 to 9e-7 for the
# other new families). Hence a wider bound and a half, not a quarter, for these two.
# Nemotron (LayerNorm1P, relu², added the same day) likewise: 5.2e-5 against 1.8e-4 (0.29).
# Bloom (ALiBi, 2026-11-29) likewise: 2.9e-5 against 8.8e-5 (0.33) while its f32 cache is 2.9e-7
# from float64 (bloom-6heads-untied, other weights: 8.1e-6 against 1.1e-4).
# Mistral 4 without q LoRA (2026-11-29): its f16 latent cache 4.9e-5 from the reference rounding it,
# against 1.8e-4 (0.27) from the unrounded one, while its f32 cache is 3.6e-7 from float64 (the
# other latent-attention cases: 0.08-0.15 of their rounding).
KV_WIDER = {"cohere": (2.5e-4, 2), "cohere2": (2.5e-4, 2), "nemotron": (2.5e-4, 2), "bloom": (2.5e-4, 2),
            "mistral4-nolora": (2.5e-4, 2)}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("kv_cache", ["f16", "int8"])
def test_rounded_kv_cache_against_the_reference_rounding_keys_and_values(from_golden, golden, name, kv_cache):
    """The f16 and int8 KV caches in every family (sliding windows, some starting inside a
    tile, Gemma's soft-capping and local RoPE, q/k norms, biases): prefill, then decode,
    against float64 math over keys and values rounded as that cache rounds them (numpy's f16;
    per vector as ops::store_i8 does), and farther from the unrounded reference: the test
    sees the rounding, and only the rounding."""
    folder, w = from_golden(name)
    g = golden["cases"][name]
    cfg = g["config"]
    seq = g["sequence"]
    args = (F.unfused(w, cfg), F.tiny_config(cfg), seq, F.layer_windows(cfg), F.gemma2_params(cfg))
    extra = F.reference_extras(cfg)
    ref = R.reference_logits(*args, kv_cache=kv_cache, **extra)
    exact = R.reference_logits(*args, **extra)
    with load(folder, weight_format="bf16", kv_cache=kv_cache) as m:
        got = m.logits(seq)
        with m.new_session() as s:
            _, first = s.prefill(seq[:5], logits="last")
            rows = [first] + [s.decode(t, want_logits=True)[1] for t in seq[5:]]
    step, step_ref = np.stack(rows), ref[4:]
    if lens := F.decode_seq_lens(cfg, 5, len(seq)):
        # dynamic NTK: each decode step past max_position_embeddings rotates with its own base
        # over keys cached with the bases of their calls, which the reference computes per position
        step_ref = R.reference_logits(*args, kv_cache=kv_cache, rope_seq_lens=lens, **extra)[4:]
    orig = F.longrope_switch(cfg)
    if orig:
        # LongRoPE: a decode past original_max_position_embeddings rotates with the long factors
        # over keys cached with the short ones (transformers' cached generation does the same),
        # which no one-pass reference computes: the rows before the switch against a reference
        # of that prefix (short factors throughout).
        step, step_ref = step[:orig - 4], R.reference_logits(*args[:2], seq[:orig], *args[3:], kv_cache=kv_cache,
                                                                      **extra)[4:]
    bound, part = KV_WIDER.get(name, (KV_BOUNDS[kv_cache], 4)) if kv_cache == "f16" else (KV_BOUNDS[kv_cache], 4)
    for e in (rel_err(got, ref), rel_err(step, step_ref)):
        assert e < bound and e < rel_err(got, exact) / part


# Random tiny models have close logits: an 8-bit mode's ~1 % logit error flips the argmax where
# the reference's top-2 margin is a few hundredths (typical margins are ~1, the logits' spread
# ~4). int8 must agree on every position whose margin is at least NEAR_TIE, and on >= 0.96 of
# all positions (measured 0.969-1.0: 0-3 of 96 flips, all at margins <= 0.114).
# The other formats have floors a few points below what was measured over all positions
# (fp8 0.917-1.0, fp8-channel 0.938-1.0, int4 0.792-1.0 on 11 cases before Gemma 3; int4-min
# 0.802-1.0 on the 13 cases; the tied cases are
# 1.0 in every format: their argmax is dominated by the input token's own embedding). The YaRN
# case (added 2026-11-26, its 8-bit modes at 0.99 / 0.91 as the others) measured int4 0.729 and
# int4-min 0.698: its random logits have more near-ties; the 4-bit floors are 0.65 since.
# smollm3-window-bias (added 2026-11-28: 4 layers, attention and MLP biases) flips 3 of 96 under
# int8 (0.969), one at a margin of 0.164 (int4: 0.667, flips up to margin 1.5): the near-tie
# margin is 0.2 since. olmo2 (added the same day: the post-norm block, whose linears read the
# unnormed residual stream) flips 4 of 96 under int8 (0.958; margins 0.170, 0.011, 0.035, 0.048:
# no clear position), fp8 0.854, int4 0.656: the int8 floor over all positions is 0.95 since.
# The generic kernels (CPUs without AVX2, every aarch64 CPU; VT_ISA=generic) keep int4's x in
# f32 where the x86 integer kernels round it to a byte, which moves near-ties: olmo2's int4 there
# 0.646 (62 of 96; found 2026-11-29 running this file under qemu-aarch64, the same on x86 with
# VT_ISA=generic): the 4-bit floors are 0.625 (60 of 96) since.
NEAR_TIE = 0.2
# LFM3's random case is the most sensitive to rounding: each sublayer's output is RMSNormed to
# full size before its add (the sandwich norms), and its 7-tap convolution multiplies three
# projections of one in_proj. The float64 reference with its own weights rounded to symmetric int8
# blocks of 32 agrees 0.979 with itself unrounded and flips the same 0.21-margin position the
# engine's int8 does (rounded to int4: 0.49; in_proj alone 0.583). 2026-11-29, this Xeon: int8
# 0.979, fp8 0.927, fp8-channel 0.844, int4 0.625, int4-min 0.688.
# Mistral 4's (q LoRA, the latent attention, groups): its int8 logits sit 4.6 % from bf16 as
# DeepSeek-V3's case does (4.0 %), but its margins are smaller (median 0.73 against 1.08), and int8
# flips one position at 0.223 (the others at 0.033-0.164). 2026-11-29, this Xeon: int8 0.958.
# PhiMoE's sparsemixer weights are a step function of the router's logits: an expert crossing
# the mask threshold (router_jitter_noise, 0.3 in the phimoe case: 61 % of the rows' first weights
# below 1) moves that weight by a jump, so a rounding that flips a mask moves the logits much more
# than a softmax router's would. The float64 reference with its own linears rounded to symmetric
# int8 blocks of 32 agrees 0.979 and flips a 0.247-margin position; 2026-11-30, this Xeon: int8
# 0.948 (flips at 0.565, 0.247, 0.173, 0.112, 0.029), fp8 0.958, int4 0.781; phimoe-longrope
# (0.01: 1 % of the rows below 1) int8 0.969, every flip below 0.07.
# Sarvam-MLA's case (2026-11-30; q_proj whole, YaRN's mscale_all_dim, top-3 of 8 experts without
# groups) has router near-ties: the float64 reference with only its routers' weights rounded to
# symmetric int8 blocks of 32 flips position 92 (reference margin 0.62; its logits move 4.5 as
# another expert is chosen), with every linear rounded it agrees 0.958 (flips at margins 0.02-0.62).
# This Xeon: int8 0.979 (position 92 only), fp8 0.833, fp8-channel 0.781, int4 and int4-min above
# their floor.
# Kolibri 1's cases (2026-11-30) choose their experts on the router's logit + bias in every layer
# (the others' routers on sigmoid(logit) + bias, where the bias weighs more against these random
# logits), behind the sandwich norms: a rounded linear upstream moves a choice, and the logits jump.
# The float64 reference with every linear but the routers rounded to symmetric int8 blocks of 32
# agrees 0.875 (kolibri1) / 0.917 (kolibri1-norm) with itself unrounded, flipping positions at
# margins up to 0.74 / 3.0 (int4: 0.354 / 0.469). This Xeon, kolibri1: int8 0.854 (largest
# flipped margin 0.74), fp8 0.656, fp8-channel 0.760, int4 0.427, int4-min 0.365; kolibri1-norm:
# int8 0.917, fp8 0.875, fp8-channel 0.854, int4 0.552, int4-min 0.594, each flipping its
# position at margin 3.0 (the reference's own).
KOLIBRI_FLOORS = {"kolibri1": {"int8": 0.8, "fp8": 0.6, "fp8-channel": 0.7, "int4": 0.35, "int4-min": 0.3},
                  "kolibri1-norm": {"int8": 0.9, "fp8": 0.85, "fp8-channel": 0.8, "int4": 0.5, "int4-min": 0.55}}
NEAR_TIE_OF = {"lfm3": 0.25, "mistral4": 0.25, "phimoe": 0.6, "sarvam-mla": 0.65, "kolibri1": 0.8, "kolibri1-norm": 3.1}
INT8_FLOOR = 0.95
# llama-dynamic's random logits have many near-ties: int8 flips 5 of 96 (0.948; 2026-11-29, this
# VM), at reference margins 0.029-0.087, every one below NEAR_TIE (the clear positions all agree).
INT8_FLOOR_OF = {"llama-dynamic": 0.94, "phimoe": 0.94, "kolibri1": 0.8, "kolibri1-norm": 0.9}
FOUR_BIT_FLOOR = 0.625


@pytest.mark.parametrize("fmt,floor", [("int8", INT8_FLOOR), ("fp8", 0.85), ("fp8-channel", 0.85),
                                       ("int4", FOUR_BIT_FLOOR), ("int4-min", FOUR_BIT_FLOOR)])
@pytest.mark.parametrize("name", CASES)
def test_quantized_top1_agreement(from_golden, golden, name, fmt, floor):
    folder, _ = from_golden(name)
    g = golden["cases"][name]
    if fmt.startswith("fp8") and g["config"]["model_type"] in ("olmo2", "exaone4"):
        # The post-norm block (each sublayer's output RMSNormed before its add) magnifies FP8's
        # 3-bit mantissa on these random weights (2026-11-28: olmo2 0.854 / 0.865, exaone4 0.896 /
        # 0.833 for fp8 / fp8-channel, every miss at a reference margin <= 0.7; int8 0.958 / 0.969).
        floor = 0.8
    if name in ("glm4-moe", "ernie4_5-moe") and fmt != "int8":
        # These routers weight each expert by its plain score but choose by score + a correction
        # bias (GLM-4 MoE: within the best groups): a choice flipped by the weights' rounding swaps
        # in an expert of another weight (GLM-4 MoE: times routed_scaling 2.5). 2026-11-29, this
        # Xeon: glm4-moe fp8 0.854, fp8-channel 0.823, int4 0.615-0.625, int4-min 0.708;
        # ernie4_5-moe fp8 0.885, fp8-channel 0.917, int4 0.667, int4-min 0.594; int8 0.979 both.
        floor = 0.75 if fmt.startswith("fp8") else 0.55
    if name == "lfm2-bias" and fmt.startswith("int4"):
        # LFM2's convolution multiplies three projections of one in_proj, C · conv(B · x): their
        # 4-bit roundings compound. The float64 reference with in_proj alone rounded to symmetric
        # int4 blocks of 32 agrees 0.708 on this case (every linear: 0.573); 2026-11-29, this
        # Xeon: int4 0.677, int4-min 0.604; lfm2 0.844 / 0.917; int8 0.958 / 1.0.
        floor = 0.55
    if name == "lfm3" and fmt != "int8":
        floor = 0.8 if fmt.startswith("fp8") else 0.55
    if name == "sarvam-mla" and fmt.startswith("fp8"):  # (its router near-ties: NEAR_TIE_OF's note)
        floor = 0.75
    if name in KOLIBRI_FLOORS:  # (its routers' choices: NEAR_TIE_OF's note)
        floor = KOLIBRI_FLOORS[name][fmt]
    if name == "afmoe" and fmt.startswith("int4"):
        # AFMoE: the sandwich norms rescale whatever the 4-bit roundings leave, and the router
        # chooses on score + expert_bias (8 experts, top 2, over three layers). The float64
        # reference with every linear rounded to symmetric int4 blocks of 32 agrees 0.542 on this
        # case (the experts alone: 0.719); 2026-11-29, this Xeon: int4 0.573, int4-min 0.521; fp8
        # 0.885, fp8-channel 0.854, int8 0.979; afmoe-mup 0.927 / 0.969 / 0.979 / 0.99 / 0.99.
        floor = 0.45
    if fmt == "int8":
        floor = INT8_FLOOR_OF.get(name, floor)
    with load(folder, weight_format=fmt) as m:
        got = m.logits(g["sequence"]).argmax(-1)
    same = got == np.asarray(g["argmax"])
    assert same.mean() >= floor, f"{fmt}: teacher-forced top-1 agreement {same.mean():.3f} < {floor}"
    if fmt == "int8":
        near = NEAR_TIE_OF.get(name, NEAR_TIE)
        clear = np.asarray(g["margins"]) >= near
        assert same[clear].all(), (
            f"int8 disagrees at positions {np.nonzero(~same & clear)[0].tolist()} (reference margins >= {near})")


@pytest.mark.parametrize("fmt", ["bf16", "int8"])
@pytest.mark.parametrize("name", CASES)
def test_prefill_decode_and_batched_decode_agree(from_golden, golden, name, fmt):
    """The same logits from one prefill, from token-by-token decode and from batched decode
    (past the sliding windows: the sequence is longer than every window)."""
    folder, _ = from_golden(name)
    seq = teacher_sequence(golden, name)[:24]
    other = teacher_sequence(golden, name)[40:64]
    with load(folder, weight_format=fmt) as m:
        with m.new_session() as s:
            _, full = s.prefill(seq, logits="all")
        with m.new_session() as a, m.new_session() as b:
            _, ra = a.prefill(seq[:1], logits="last")
            _, rb = b.prefill(other[:3], logits="last")
            rows_a = [ra]
            for i in range(1, len(seq)):
                if i + 2 < len(other):
                    _, lg = _model.decode_batch([a, b], [seq[i], other[i + 2]], [{}, {}], want_logits=True)
                    rows_a.append(lg[0])
                else:
                    _, row = a.decode(seq[i], want_logits=True)
                    rows_a.append(row)
        step = np.stack(rows_a)
    assert rel_err(step, full) < 1e-4
    np.testing.assert_array_equal(step.argmax(-1), full.argmax(-1))


_ISA_SCRIPT = """
import sys
import numpy as np
from pyvt import _model, ops
folder, fmt, out, seq = sys.argv[1], sys.argv[2], sys.argv[3], [int(t) for t in sys.argv[4].split(",")]
with _model.Model(folder, device="cpu", kv_cache="f32", weight_format=fmt) as m:
    full = m.logits(seq)  # a prefill: the GEMM kernels
    with m.new_session() as s:  # token by token: the GEMVs
        _, row = s.prefill(seq[:1], logits="last")
        rows = [row]
        for t in seq[1:]:
            rows.append(s.decode(t, want_logits=True)[1])
np.savez(out, isa=ops.cpu_isa(), full=full, step=np.stack(rows))
"""


@pytest.mark.parametrize("fmt", ["bf16", "int8"])
@pytest.mark.parametrize("name", ["gemma", "gemma2", "gemma3"])
def test_gemma_at_every_cpu_level(from_golden, golden, tmp_path, name, fmt):
    """Gemma's fused GeGLU epilogue (GEMM and GEMV kernels) and attention's bodies, soft-capped,
    at every CPU level the machine has (VT_ISA), each in its own process: prefill and
    token-by-token logits agree with each other, and with transformers' (bf16) or with the
    native level's (int8, whose AVX2 GEMM rounds x to int16 where generic does not).
    (ops::softcap, which both soft-caps call, and ops::geglu_tanh pick their code by the CPU,
    not VT_ISA: tests/ops/test_ops.cpp checks them against float64.)"""
    from pyvt import ops

    folder, _ = from_golden(name)
    g = golden["cases"][name]
    seq = g["sequence"]
    order = ["generic", "avx2", "avx512"]
    native = ops.cpu_isa()
    levels = order[: order.index(native) + 1] if native in order else ["generic"]
    got = {}
    for lvl in levels:
        out = tmp_path / f"{lvl}.npz"
        r = subprocess.run([sys.executable, "-c", _ISA_SCRIPT, str(folder), fmt, str(out), ",".join(map(str, seq))],
                           env=dict(os.environ, VT_ISA=lvl), capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)  # not the checkout: pyvt comes from where this process has it
        assert r.returncode == 0, r.stderr
        with np.load(out) as z:
            assert str(z["isa"]) == lvl
            got[lvl] = (z["full"], z["step"])
    for lvl, (full, step) in got.items():
        assert rel_err(step, full) < 1e-4, lvl
        np.testing.assert_array_equal(step.argmax(-1), full.argmax(-1))
        if fmt == "bf16":
            assert rel_err(full[g["logit_rows"]], np.asarray(g["logits"], np.float64)) < 1e-3, lvl
            np.testing.assert_array_equal(full.argmax(-1), g["argmax"])
        else:
            assert rel_err(full, got[levels[-1]][0]) < 2e-3, lvl


@pytest.mark.parametrize("name", ["qwen2-window6", "qwen3-hd32-tied", "llama-bias-hd24"])
def test_info_generate_and_chat(from_golden, name):
    """pyvt info names the family and its features; text generation and the chat template
    run through the Python API."""
    import pyvt

    folder, _ = from_golden(name)
    p = subprocess.run([sys.executable, "-m", "pyvt", "info", str(folder), "--json", "--device", "cpu"],
                       capture_output=True, text=True, timeout=180, cwd=str(folder))
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["family"] == F.EXPECTED_FEATURES[name][0]
    assert info["features"] == F.EXPECTED_FEATURES[name][1]
    p = subprocess.run([sys.executable, "-m", "pyvt", "info", str(folder), "--device", "cpu"],
                       capture_output=True, text=True, timeout=180, cwd=str(folder))
    assert p.returncode == 0, p.stderr
    assert any(line.split()[:1] == ["features"] and ", ".join(F.EXPECTED_FEATURES[name][1]) in line
               for line in p.stdout.splitlines())
    with pyvt.load_model(folder, weight_format="bf16", device="cpu") as model:
        assert model.encode("Hello, w") == PROMPT
        assert model.chat_template is not None
        assert F.IM_END in model.eos_token_ids
        dialogs = [[{"role": "user", "content": "Hello"}], [{"role": "user", "content": "Hi, you"}]]
        one = [pyvt.chat(model, d, max_new_tokens=6) for d in dialogs]
        both = pyvt.chat_completion(model, dialogs, max_new_tokens=6)  # batched decode
        assert [r.text for r in both] == [r.text for r in one]
        assert all(0 < r.generated_tokens <= 6 for r in one)


# ---- transformers in float32 (where torch is installed) ----------------------------------

@pytest.fixture(scope="module")
def hf_case(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    made = {}

    def get(name):
        if name not in made:
            folder = tmp_path_factory.mktemp("hf-" + name)
            made[name] = (folder, *F.build_transformers(name, folder))
        return made[name]

    return get


def hf_greedy(model, prompt, n, cached=False):
    return F.hf_greedy(model, prompt, n, cached)


@pytest.mark.parametrize("name", CASES)
def test_matches_transformers(hf_case, golden, name):
    import torch

    folder, model, cfg, w, shapes = hf_case(name)
    # The golden data was made from this very checkpoint (same config, names, shapes, seed).
    g = golden["cases"][name]
    assert shapes == g["shapes"] and F.seed_of(name) == g["seed"]
    seq = g["sequence"]
    with torch.no_grad():
        ref = model(torch.tensor([seq])).logits[0].double().numpy()
    want, margins = hf_greedy(model, PROMPT, 32, cached=F.dynamic_rope(cfg))
    with load(folder, weight_format="bf16") as m:
        assert rel_err(m.logits(seq), ref) < 1e-3
        toks, _ = m.generate(PROMPT, max_new_tokens=32, stop_on_eos=False)
    greedy_equal_or_near_tie(list(toks), want, margins)
    with load(folder, weight_format="int8") as m:
        same = m.logits(seq).argmax(-1) == ref.argmax(-1)
    top2 = np.sort(ref, -1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] >= NEAR_TIE_OF.get(name, NEAR_TIE)
    assert same.mean() >= INT8_FLOOR_OF.get(name, INT8_FLOOR) and same[clear].all()


# ---- refusals ---------------------------------------------------------------------------

def copy_case(from_golden, name, dst) -> dict:
    """Case `name`'s folder copied into dst (to edit); its config.json as a dict."""
    folder, _ = from_golden(name)
    for f in folder.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return json.loads((folder / "config.json").read_text())


def refused(folder) -> str:
    with pytest.raises(ValueError) as e:
        load(folder)
    return str(e.value)


@pytest.mark.parametrize("arch,model_type,words", [
    ("Qwen3NextForCausalLM", "qwen3_next", []),
    ("Gemma3ForConditionalGeneration", "gemma3", ["vision tower", "Gemma3ForCausalLM"]),
    ("JambaForCausalLM", "jamba", []),
    ("GraniteMoeHybridForCausalLM", "granitemoehybrid", []),
    ("RwkvForCausalLM", "rwkv", []),
])
def test_unsupported_architectures_are_named(from_golden, tmp_path, arch, model_type, words):
    cfg = copy_case(from_golden, "mistral", tmp_path)
    cfg.update(architectures=[arch], model_type=model_type)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    msg = refused(tmp_path)
    assert f"architecture {arch} (model_type {model_type}) is not supported" in msg
    assert ("supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM, "
            "GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, SmolLM3ForCausalLM, GraniteForCausalLM, "
            "HyperCLOVAXForCausalLM, GraniteSWAForCausalLM, "
            "PhiForCausalLM, GPTJForCausalLM, StableLmForCausalLM, OlmoForCausalLM, GPTNeoXForCausalLM, FalconForCausalLM, BloomForCausalLM, "
            "MptForCausalLM, OPTForCausalLM, "
            "GPTNeoForCausalLM, GPT2LMHeadModel, "
            "GPTBigCodeForCausalLM, Starcoder2ForCausalLM, ExaoneForCausalLM, IQuestCoderForCausalLM, InternLM3ForCausalLM, Exaone4ForCausalLM, Olmo2ForCausalLM, FlexOlmoForCausalLM, GraniteMoeForCausalLM, GraniteMoeSharedForCausalLM, OlmoeForCausalLM, "
            "GptOssForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, ExaoneMoeForCausalLM, "
            "Glm4MoeForCausalLM, SolarOpenForCausalLM, "
            "Dots1ForCausalLM, DeepseekV3ForCausalLM, MiniCPM3ForCausalLM, YoutuForCausalLM, Mistral4ForCausalLM, Glm4MoeLiteForCausalLM, DeepseekV2ForCausalLM, MiniMaxM2ForCausalLM, "
            "HeliumForCausalLM, "
            "Ernie4_5ForCausalLM, Ernie4_5_MoeForCausalLM, SeedOssForCausalLM, GlmForCausalLM, Glm4ForCausalLM, Olmo3ForCausalLM, "
            "MinistralForCausalLM, CwmForCausalLM, Ministral3ForCausalLM, CohereForCausalLM, Cohere2ForCausalLM, ArceeForCausalLM, NanoChatForCausalLM, "
            "ApertusForCausalLM, NemotronForCausalLM, Jais2ForCausalLM, HunYuanDenseV1ForCausalLM, HunYuanMoEV1ForCausalLM, "
            "VaultGemmaForCausalLM, Lfm2ForCausalLM, Lfm2MoeForCausalLM, Lfm3ForCausalLM, AfmoeForCausalLM, "
            "PhimoeForCausalLM, SarvamMoEForCausalLM, "
            "SarvamMLAForCausalLM, Kolibri1ForCausalLM, HYV3ForCausalLM, Cohere2MoeForCausalLM, AXK1ForCausalLM, MellumForCausalLM, FlintForCausalLM)") in msg
    for word in words:
        assert word in msg
    assert "not a Llama checkpoint" not in msg


def test_bias_tensors_without_attention_bias_name_the_field(from_golden, tmp_path):
    cfg = copy_case(from_golden, "llama-bias-hd24", tmp_path)
    cfg["attention_bias"] = False
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    msg = refused(tmp_path)
    assert "not a Llama checkpoint" in msg and "self_attn.q_proj.bias" in msg
    assert "attention_bias is not true" in msg


def test_missing_qwen3_norms_and_bad_layer_types_are_named(from_golden, tmp_path):
    folder, w = from_golden("qwen3-hd32-tied")
    cfg = json.loads((folder / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    R.write_safetensors(tmp_path / "model.safetensors", {k: v for k, v in w.items() if "k_norm" not in k}, "BF16")
    msg = refused(tmp_path)
    assert "not a Qwen3 checkpoint" in msg and "missing 2 tensors: model.layers.{0..1}.self_attn.k_norm.weight" in msg
    R.write_safetensors(tmp_path / "model.safetensors", w, "BF16")
    cfg.update(use_sliding_window=True, sliding_window=4, layer_types=["full_attention", "chunked_attention"])
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert 'layer_types[1] "chunked_attention" is not supported for Qwen3' in refused(tmp_path)
    cfg.update(layer_types=None, hidden_act="gelu")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert 'hidden_act "gelu" is not supported for Qwen3' in refused(tmp_path)


def test_moe_checkpoints_that_do_not_fit_are_named(from_golden, tmp_path):
    """Mixture-of-experts: each inconsistency between config.json and the experts in the file
    is one line naming the field or tensor, before anything is packed."""
    _, w = from_golden("qwen3-moe")
    base = copy_case(from_golden, "qwen3-moe", tmp_path)
    tensors = F.to_checkpoint(w, base)

    def with_config(**kw):
        cfg = dict(base)
        cfg.update(kw)
        (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in cfg.items() if v is not None}))
        return refused(tmp_path)

    assert 'field "num_experts_per_tok" = 9 is more than the 8 experts' in with_config(num_experts_per_tok=9)
    assert 'field "num_experts_per_tok" is missing' in with_config(num_experts_per_tok=None)
    msg = with_config(num_local_experts=10)  # the file holds 8
    assert "missing 12 tensors: model.layers.{0,2}.mlp.experts.8.down_proj.weight" in msg
    msg = with_config(moe_intermediate_size=64)
    assert "8 experts of width 64" in msg and "model.layers.0.mlp.experts.0.gate_proj.weight is [32, 64], expected [64, 64]" in msg
    # A config naming a million experts over a small file is refused by count, not by building a million names.
    assert "mixture-of-experts layers of 65536 experts need" in with_config(num_local_experts=65536)
    # An expert missing from the file; the dense layer listed in mlp_only_layers has no experts.
    (tmp_path / "config.json").write_text(json.dumps(base))
    R.write_safetensors(tmp_path / "model.safetensors",
                        {k: v for k, v in tensors.items() if k != "model.layers.2.mlp.experts.5.up_proj.weight"}, "BF16")
    assert "missing 1 tensors: model.layers.2.mlp.experts.5.up_proj.weight" in refused(tmp_path)
    R.write_safetensors(tmp_path / "model.safetensors", tensors, "BF16")
    msg = with_config(mlp_only_layers=[])  # layer 1 is dense in the file
    assert "model.layers.1.mlp.experts.0.gate_proj.weight" in msg and "unexpected 3 tensors: model.layers.1.mlp." in msg
    # A Mistral checkpoint labelled Mixtral: no experts anywhere.
    cfg = copy_case(from_golden, "mistral", tmp_path)
    cfg.update(architectures=["MixtralForCausalLM"], model_type="mixtral", num_experts_per_tok=2)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    msg = refused(tmp_path)
    assert "not a Mixtral checkpoint" in msg and "model.layers.0.block_sparse_moe.experts.0.w1.weight" in msg


def test_smollm3_no_rope_layers_that_do_not_fit_are_named(from_golden, tmp_path):
    cfg = copy_case(from_golden, "smollm3-window-bias", tmp_path)
    for value, words in (([1, 0, 1], "no_rope_layers lists 3 layers, but the model has 4"),
                         ([1, 0, 2, 1], 'field "no_rope_layers" must be a list of 0 / 1 per layer'),
                         ("all", 'field "no_rope_layers" must be a list of 0 / 1 per layer')):
        (tmp_path / "config.json").write_text(json.dumps(dict(cfg, no_rope_layers=value)))
        assert words in refused(tmp_path)
    # Without the list: every no_rope_layer_interval-th layer (SmolLM3Config's rule).
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, no_rope_layers=None, no_rope_layer_interval=2,
                                                          layer_types=None)))
    with load(tmp_path) as m:
        assert "no-rope layers 1,3" in m.info["features"] and "sliding-window 6 (layers 1,3)" in m.info["features"]


def test_olmo2_per_head_qk_norms_are_named(from_golden, tmp_path):
    """OLMo 2's q/k norms span the whole projection: a checkpoint with per-head ones (Qwen3's
    shape) under an OLMo 2 config is refused naming the tensor and both shapes."""
    folder, w = from_golden("olmo2")
    cfg = json.loads((folder / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    hd = cfg["hidden_size"] // cfg["num_attention_heads"]
    bad = {k: (v[:hd] if k.endswith(("q_norm.weight", "k_norm.weight")) else v) for k, v in w.items()}
    R.write_safetensors(tmp_path / "model.safetensors", bad, "BF16")
    msg = refused(tmp_path)
    assert f"model.layers.0.self_attn.q_norm.weight is [{hd}], expected [{cfg['hidden_size']}]" in msg


def test_granitemoe_stacked_experts_that_do_not_fit_are_named(from_golden, tmp_path):
    cfg = copy_case(from_golden, "granitemoe", tmp_path)
    for change, words in (({"num_local_experts": 5}, "model.layers.0.block_sparse_moe.input_linear.weight is [4, 64, 64], "
                                                     "expected [5, 64, 64]"),
                          ({"intermediate_size": 48}, "block_sparse_moe.output_linear.weight is [4, 64, 32], expected "
                                                      "[4, 64, 48]")):
        (tmp_path / "config.json").write_text(json.dumps(dict(cfg, **change)))
        assert words in refused(tmp_path)


def test_granitemoe_shared_expert_that_does_not_fit_is_named(from_golden, tmp_path):
    """GraniteMoeShared's shared_intermediate_size against its shared_mlp tensors: another
    width names both tensors' shapes; 0 (GraniteMoeSharedConfig's default: no shared expert)
    with the tensors in the file names them as unexpected rather than ignoring them."""
    cfg = copy_case(from_golden, "granitemoe-shared", tmp_path)
    for change, words in (({"shared_intermediate_size": 32}, "model.layers.0.shared_mlp.input_linear.weight is "
                                                             "[128, 64], expected [64, 64]"),
                          ({"shared_intermediate_size": 0}, "unexpected 4 tensors: "
                                                            "model.layers.{0..1}.shared_mlp.input_linear.weight")):
        (tmp_path / "config.json").write_text(json.dumps(dict(cfg, **change)))
        msg = refused(tmp_path)
        assert words in msg and "\n" not in msg


def test_stacked_experts_load_whatever_their_count(from_golden, golden, tmp_path):
    """Stacked experts (GraniteMoE, gpt-oss) are a few tensors per layer however many experts
    they hold: granite-3.0-1b-a400m's 32 experts in 24 layers (~10 tensors each) tripped the
    bound meant for one-tensor-per-expert files (which counted 3 · 32 + 5 names a layer).
    Here 40 experts in 2 layers (refused before): they load and compute."""
    folder, w = from_golden("granitemoe")
    cfg = json.loads((folder / "config.json").read_text())
    big = {}
    for k, v in F.to_checkpoint(w, cfg).items():
        if k.endswith(("input_linear.weight", "output_linear.weight")):
            v = np.concatenate([v] + [v[:1]] * 36)  # experts 4..39 copies of expert 0
        elif k.endswith("router.layer.weight"):
            v = np.concatenate([v] + [v[:1]] * 36)
        big[k] = v
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, num_local_experts=40)))
    R.write_safetensors(tmp_path / "model.safetensors", big, "BF16")
    F.write_tokenizer(tmp_path)
    with load(tmp_path, weight_format="bf16") as m:
        assert "moe 40 experts top-2" in m.info["features"]
        assert np.isfinite(m.logits(PROMPT)).all()


@pytest.mark.parametrize("name, field, words", [
    ("stablelm", "use_parallel_residual", "use_parallel_residual true is not supported for StableLM"),
    ("stablelm", "qk_layernorm", "qk_layernorm true is not supported for StableLM"),
    ("phi", "qk_layernorm", "qk_layernorm true is not supported for Phi"),
])
def test_layernorm_family_options_without_a_path_are_named(from_golden, tmp_path, name, field, words):
    """stablelm-2-12b's parallel residual and q/k LayerNorms, Phi's qk_layernorm: refused in one
    line naming the field (computing them as if false would be silently wrong)."""
    cfg = copy_case(from_golden, name, tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, **{field: True})))
    msg = refused(tmp_path)
    assert words in msg and "\n" not in msg


def test_exaone4_sliding_window_pattern_as_a_string(from_golden, golden, tmp_path):
    """EXAONE 4's configs may write sliding_window_pattern as "LLLG"-style text: read as the
    integer it stands for (here "LG" = 2, the case's own pattern, without layer_types: the same
    logits); text that is not L...LG is refused naming the field."""
    cfg = copy_case(from_golden, "exaone4", tmp_path)
    g = golden["cases"]["exaone4"]
    cfg.pop("layer_types")
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, sliding_window_pattern="LG")))
    with load(tmp_path, weight_format="bf16") as m:
        assert "no-rope layer 1" in m.info["features"]
        assert rel_err(m.logits(g["sequence"])[g["logit_rows"]], np.asarray(g["logits"], np.float64)) < 1e-3
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, sliding_window_pattern="GL")))
    assert 'field "sliding_window_pattern" must be an integer or a string of L ending in one G' in refused(tmp_path)


def test_olmoe_clip_qkv_out_of_range_is_named(from_golden, tmp_path):
    cfg = copy_case(from_golden, "olmoe-clip-norm", tmp_path)
    for value, words in ((-1.5, 'field "clip_qkv"'), (1e300, 'field "clip_qkv" = 1e+300 is not a finite float32')):
        (tmp_path / "config.json").write_text(json.dumps(dict(cfg, clip_qkv=value)))
        assert words in refused(tmp_path)


def test_moe_bytes_per_token_count_the_active_experts(from_golden):
    """weight_bytes (what a decoded token reads: the bandwidth floor) counts top-k of the
    experts; total_bytes holds all of them."""
    folder, _ = from_golden("qwen3-moe")
    with load(folder, weight_format="int8") as m:
        info = m.info
    cfg = json.loads((folder / "config.json").read_text())
    H, I, E, k = cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["num_local_experts"], cfg["num_experts_per_tok"]
    expert = 3 * I * H * (1 + 4 / 32)  # int8 blocked-32: one f32 scale per 32 weights
    idle = 2 * (E - k) * expert  # the two MoE layers' experts a token does not use
    assert info["total_bytes"] - info["weight_bytes"] >= idle
    assert info["total_bytes"] - info["weight_bytes"] < idle + 4 * 1024 * 1024


@pytest.mark.parametrize("name", ["mixtral", "qwen2-moe-shared", "glm4-moe", "dots1", "deepseek-v3", "deepseek-v2",
                                  "minimax-m2"])
def test_moe_speculative_verify_keeps_the_tokens_of_decode(from_golden, name):
    """A verify pass (several rows through the experts at once, grouped by expert) accepts a
    true draft whole and picks what token-by-token decoding picks."""
    folder, _ = from_golden(name)
    with load(folder, weight_format="int8") as m:
        with m.new_session() as s:
            tok, _ = s.prefill(PROMPT)
            ref = [tok]
            for _ in range(19):
                ref.append(s.decode(ref[-1])[0])
        with m.new_session() as s:
            tok, _ = s.prefill(PROMPT)
            out = [tok]
            while len(out) < len(ref):
                draft = ref[len(out):len(out) + 4]
                chosen = s.verify([out[-1]] + draft)
                assert chosen[:len(draft)] == draft  # a true draft is accepted whole
                out += chosen
    assert out[:len(ref)] == ref


def test_moe_experts_go_through_the_packed_cache(from_golden, tmp_path):
    """Every expert (and the shared one) is a linear of the packed-weight cache: the second
    load reads the file the first wrote and computes the same logits."""
    folder, _ = from_golden("qwen2-moe-shared")
    g_seq = list(range(40, 72))
    cache = tmp_path / "cache"
    with load(folder, weight_format="int8", packed_cache_dir=str(cache)) as m:
        first = m.logits(g_seq)
    files = sorted(cache.glob("*.vtpack"))
    assert len(files) == 1
    stamp = files[0].stat().st_mtime_ns
    # 2 MoE layers x (4 experts + the shared one) x 3 linears + 2 x (qkv, o) + lm_head
    assert files[0].stat().st_size > 2 * 5 * 3 * 32 * 64
    # An expert's bytes change behind the cache's back (same size, mtime and inode: the cache
    # key): the load that reads the cache still computes with the packed copy of the old ones.
    st = folder / "model.safetensors"
    with open(st, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        hdr = json.loads(f.read(n))
    start, end = hdr["model.layers.0.mlp.experts.2.down_proj.weight"]["data_offsets"]
    before, original = os.stat(st), st.read_bytes()
    try:
        with open(st, "r+b") as f:
            f.seek(8 + n + start)
            f.write(bytes(b ^ 0x55 for b in original[8 + n + start:8 + n + end]))
        os.utime(st, ns=(before.st_atime_ns, before.st_mtime_ns))
        with load(folder, weight_format="int8", packed_cache_dir=str(cache)) as m:
            np.testing.assert_array_equal(m.logits(g_seq), first)
        with load(folder, weight_format="int8") as m:  # (the expert is used: without the cache it differs)
            assert not np.array_equal(m.logits(g_seq), first)
    finally:
        st.write_bytes(original)
    assert files[0].stat().st_mtime_ns == stamp


@pytest.mark.parametrize("name, field, value, words", [
    ("gemma2", "query_pre_attn_scalar", 1e-300, "the attention scale it gives, 1e+150, must be a finite positive float32"),
    ("gemma2", "query_pre_attn_scalar", 1e300, "the attention scale it gives, 1e-150, must be a finite positive float32"),
    ("gemma3", "query_pre_attn_scalar", 1e-300, "the attention scale it gives"),
    ("gemma2", "attn_logit_softcapping", 1e300, "is out of range: it must be a finite positive float32"),
    ("gemma2", "attn_logit_softcapping", 1e-300, "is out of range"),
    ("gemma2", "final_logit_softcapping", 1e300, "is out of range"),
    ("gemma2", "final_logit_softcapping", 1e-300, "is out of range"),
    ("granite", "logits_scaling", 1e300, "is out of range"),
    ("granite", "residual_multiplier", 1e300, "is out of range"),
    ("granite", "attention_multiplier", 1e-300, "is out of range"),
    ("granite", "embedding_multiplier", 1e300, "is out of range"),
])
def test_gemma_constants_outside_float32_are_refused(from_golden, tmp_path, name, field, value, words):
    # Issue 20's float32 class for Gemma's fields (and Granite's multipliers): each loaded and
    # gave NaN logits (or all-zero ones: token 0 forever) before.
    cfg = copy_case(from_golden, name, tmp_path)
    cfg[field] = value
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    msg = refused(tmp_path)
    assert f'config.json: field "{field}" = {value:g}' in msg and words in msg and "\n" not in msg
    cfg[field] = {"query_pre_attn_scalar": 1e-40, "attn_logit_softcapping": 1e38, "final_logit_softcapping": 1e-37,
                  "logits_scaling": 1e30, "residual_multiplier": 1e-30, "attention_multiplier": 1e-30,
                  "embedding_multiplier": 1e-20}[field]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with load(tmp_path, weight_format="bf16") as m:  # the edges of the range still load, and compute
        assert np.isfinite(m.logits(PROMPT)).all()


def test_gemma1_legacy_gelu_is_the_tanh_gelu(from_golden, golden, tmp_path):
    """gemma-2b / 7b's config.json says hidden_act "gelu"; GemmaConfig takes it as the tanh
    GELU the models were trained with, and so does pyvt. Any other activation is refused
    naming it."""
    cfg = copy_case(from_golden, "gemma", tmp_path)
    g = golden["cases"]["gemma"]
    cfg["hidden_act"] = "gelu"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with load(tmp_path, weight_format="bf16") as m:
        assert rel_err(m.logits(g["sequence"])[g["logit_rows"]], np.asarray(g["logits"], np.float64)) < 1e-3
    cfg["hidden_act"] = "relu"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match='hidden_act "relu" is not supported for Gemma '):
        load(tmp_path)


def test_qwen2_without_layer_types_uses_max_window_layers(from_golden, golden, tmp_path):
    """An older Qwen2 config.json (no layer_types): use_sliding_window and max_window_layers
    decide which layers have the window, as in transformers' Qwen2Config."""
    folder, w = from_golden("qwen2-window6")
    cfg = json.loads((folder / "config.json").read_text())
    cfg.pop("layer_types", None)
    for f in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / f).write_bytes((folder / f).read_bytes())
    seq = teacher_sequence(golden, "qwen2-window6")[:30]
    for change, windows in (({"max_window_layers": 0}, [6, 6]), ({"max_window_layers": 2}, [0, 0]),
                            ({"use_sliding_window": False, "max_window_layers": 0}, [0, 0])):
        cfg.update(change)
        (tmp_path / "config.json").write_text(json.dumps(cfg))
        with load(tmp_path, weight_format="bf16") as m:
            window_features = [f for f in m.info["features"] if f.startswith("sliding-window")]
            assert window_features == (["sliding-window 6 (every layer)"] if windows[0] else [])
            ref = R.reference_logits(w, F.tiny_config(cfg), seq, windows)
            assert rel_err(m.logits(seq), ref) < 1e-5


@pytest.mark.parametrize("factor, words", [
    (0.3125, "partial_rotary_factor 0.3125 gives 5 rotary dims of head_dim 16 (an even number >= 2 is needed)"),
    (0.0625, "gives 1 rotary dims"),
    (-0.5, 'field "rope_parameters.partial_rotary_factor" must be a number in (0, 1]'),
])
def test_partial_rotary_factors_that_give_no_even_dims_are_refused(from_golden, tmp_path, factor, words):
    cfg = copy_case(from_golden, "phi3-partial-rotary", tmp_path)
    cfg["rope_parameters"]["partial_rotary_factor"] = factor
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    msg = refused(tmp_path)
    assert words in msg and "config.json" in msg and "\n" not in msg


# ---- gpt-oss's MXFP4 experts ------------------------------------------------------------------

_E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def _mxfp4(rng, experts: int, rows: int, cols: int):
    """Random MXFP4 weights as the Hub's gpt-oss files hold them: (blocks [E, rows, cols/32, 16]
    uint8, two E2M1 codes a byte, low nibble first; scales [E, rows, cols/32] uint8, e8m0; their
    values [E, rows, cols] float32)."""
    codes = rng.integers(0, 16, size=(experts, rows, cols // 32, 32)).astype(np.uint8)
    scales = rng.integers(121, 127, size=(experts, rows, cols // 32)).astype(np.uint8)  # 2^-6 .. 2^-1
    blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    values = _E2M1[codes] * np.exp2(scales.astype(np.float32) - 127)[..., None]
    return blocks, scales, values.reshape(experts, rows, cols).astype(np.float32)


def _gpt_oss_mxfp4_pair(from_golden, tmp_path, int8_exact: bool = False):
    """Case gpt-oss's folder with MXFP4 experts (tmp_path/mx) and the same weights dequantized
    as transformers holds them, [E, in, out] (tmp_path/bf16: every MXFP4 value is a bfloat16
    one); the MXFP4 tensors by name, the dequantized ones. `int8_exact`: the other linears
    (attention, lm_head) hold values int8 blocked-32 represents exactly (k / 512, |k| <= 127,
    each block reaching 127), so int8 packing changes only the experts'."""
    folder, w = from_golden("gpt-oss")
    cfg = json.loads((folder / "config.json").read_text())
    if int8_exact:
        rng = np.random.default_rng(3)
        w = dict(w)
        for k in w:
            if k.endswith(("proj.weight", "lm_head.weight")):
                q = rng.integers(-127, 128, size=w[k].shape).astype(np.float32)
                q.reshape(-1, 32)[:, 0] = 127.0
                w[k] = q / np.float32(512)
    E, H, I = cfg["num_local_experts"], cfg["hidden_size"], cfg["intermediate_size"]
    rng = np.random.default_rng(7)
    mx, deq, raw = {}, {}, {}
    for k, v in F.to_checkpoint(w, cfg).items():
        for name, rows, cols in (("gate_up_proj", 2 * I, H), ("down_proj", H, I)):
            if k.endswith("mlp.experts." + name):
                blocks, scales, values = _mxfp4(rng, E, rows, cols)
                raw[k + "_blocks"], raw[k + "_scales"] = blocks, scales
                deq[k] = values.transpose(0, 2, 1)  # (transformers' x · W)
                break
        else:
            mx[k] = deq[k] = v
    for sub, tensors in (("mx", mx), ("bf16", deq)):
        (tmp_path / sub).mkdir()
        for f in folder.iterdir():
            if f.name != "model.safetensors":
                (tmp_path / sub / f.name).write_bytes(f.read_bytes())
        entries = {k: ("BF16", tuple(v.shape), R.tensor_bytes(v, "BF16")) for k, v in tensors.items()}
        if sub == "mx":
            entries.update({k: ("U8", tuple(v.shape), v.tobytes()) for k, v in raw.items()})
        (tmp_path / sub / "model.safetensors").write_bytes(R.safetensors_bytes(entries, {"format": "pt"}))
    return tmp_path / "mx", tmp_path / "bf16", raw, deq


@pytest.mark.parametrize("fmt", ["bf16", "fp8", "int4"])
def test_gpt_oss_mxfp4_experts_load_as_their_values(from_golden, tmp_path, fmt):
    """The Hub's gpt-oss files hold the experts as MXFP4 (gate_up_proj_blocks / _scales of the
    untransposed weights): they load as the values they encode, so the logits are those of the
    same weights stored dequantized (int8: the next test)."""
    mx, deq, _, _ = _gpt_oss_mxfp4_pair(from_golden, tmp_path)
    seq = F.load_golden()["cases"]["gpt-oss"]["sequence"][:40]
    with load(mx, weight_format=fmt) as m, load(deq, weight_format=fmt) as r:
        assert "mxfp4-experts" in m.info["features"] and "mxfp4-experts" not in r.info["features"]
        got, want = m.logits(seq), r.logits(seq)
        assert m.info["weight_bytes"] == r.info["weight_bytes"]
    np.testing.assert_array_equal(got, want)


def test_gpt_oss_mxfp4_experts_pack_exactly_as_int8(from_golden, tmp_path):
    """In int8 blocked-32 (the default format) each MXFP4 block is packed as the int8 block of
    its doubled codes with the f16 scale 2^(e - 128): the experts are the values the file
    encodes, not an int8 rounding of them. With the other linears int8-exact, the MXFP4 file's
    int8 logits are those of its dequantized weights in bf16 up to the int8 kernels' rounding
    of activations, while the dequantized file packed as int8 (experts rounded to int8's grid)
    is further off. Measured (relative norm of the difference): 1.3e-4 against 1.6e-2 at the
    avx512 and avx2 levels, 8.0e-7 against 1.6e-2 at the generic level (no activation rounding)."""
    mx, deq, _, _ = _gpt_oss_mxfp4_pair(from_golden, tmp_path, int8_exact=True)
    seq = F.load_golden()["cases"]["gpt-oss"]["sequence"][:40]
    got = {}
    for key, folder, fmt in (("mx", mx, "int8"), ("deq", deq, "int8"), ("ref", deq, "bf16")):
        with load(folder, weight_format=fmt, kv_cache="f32") as m:
            got[key] = m.logits(seq).astype(np.float64)
    err = {k: rel_err(got[k], got["ref"]) for k in ("mx", "deq")}
    assert err["mx"] < 2e-3 and err["deq"] > 10 * err["mx"], err


def test_gpt_oss_mxfp4_experts_stay_mxfp4_under_auto(from_golden, tmp_path):
    """weight_format "auto" (the default) keeps the MXFP4 experts in MXFP4 — the values the
    file encodes, at 0.5625 bytes a weight instead of int8's 1.0625 — and the other linears
    in int8: with those int8-exact, the logits are those of the dequantized weights in bf16
    up to the kernels' rounding of activations. Where the integer kernels run (x rounded to
    int16 per block for both formats, exact integer block sums, the same power-of-two scales)
    they are the int8 load's bit for bit. Measured (relative norm of the difference from bf16):
    1.3e-4 at the avx512 and avx2 levels, 0 at avx512-novnni, 8.0e-7 at generic."""
    mx, deq, _, _ = _gpt_oss_mxfp4_pair(from_golden, tmp_path, int8_exact=True)
    seq = F.load_golden()["cases"]["gpt-oss"]["sequence"][:40]
    got, info = {}, {}
    for key, folder, fmt in (("auto", mx, "auto"), ("int8", mx, "int8"), ("ref", deq, "bf16")):
        with load(folder, weight_format=fmt, kv_cache="f32") as m:
            got[key] = m.logits(seq).astype(np.float64)
            info[key] = m.info
    assert info["auto"]["weight_format"] == "int8"  # what layer 0's attention holds
    err = rel_err(got["auto"], got["ref"])
    assert err < 2e-3, err
    if int16_gemm_applies("mxfp4", 1) and int16_gemm_applies("int8", 1):
        np.testing.assert_array_equal(got["auto"], got["int8"])
    # Every expert of the MXFP4 load is 2I x H and H x I in MXFP4 instead of int8 blocked-32.
    cfg = json.loads((mx / "config.json").read_text())
    E, H, I, L = (cfg[k] for k in ("num_local_experts", "hidden_size", "intermediate_size", "num_hidden_layers"))
    saved = L * E * 3 * I * H * (1.0625 - 0.5625)
    assert info["int8"]["total_bytes"] - info["auto"]["total_bytes"] == pytest.approx(saved, rel=0.05)


def test_gpt_oss_mxfp4_scales_beyond_reach_still_load(from_golden, tmp_path):
    """A row whose block scales span more than 38 binades (beyond one f16 scale per block under
    one row multiplier) is packed from its decoded values by the OCP rule: the load works, and
    its logits are those of the same values in bf16 (the block 2^-41 below its neighbour, at
    most 6 * 2^-47, is what the rule may round)."""
    mx, deq, raw, _ = _gpt_oss_mxfp4_pair(from_golden, tmp_path, int8_exact=True)
    name = "model.layers.0.mlp.experts.gate_up_proj"

    def patch(path, tensor, fn):
        st = bytearray(path.read_bytes())
        n = int.from_bytes(st[:8], "little")
        b0, _ = json.loads(st[8:8 + n])[tensor]["data_offsets"]
        fn(st, 8 + n + b0)
        path.write_bytes(bytes(st))

    sc = raw[name + "_scales"]  # [E, 2I, H/32]: expert 0, row 0, blocks 0 and 1 -> 2^-6 and 2^-47
    patch(mx / "model.safetensors", name + "_scales", lambda st, o: st.__setitem__(slice(o, o + 2), bytes([121, 80])))
    q = raw[name + "_blocks"][0, 0, 1]  # block 1's codes: k = 2j low nibble, 2j + 1 high
    codes = np.stack([q & 15, q >> 4], axis=1).reshape(-1)
    vals = {0: _E2M1[np.stack([raw[name + "_blocks"][0, 0, 0] & 15, raw[name + "_blocks"][0, 0, 0] >> 4], 1).reshape(-1)]
            * np.float32(2.0 ** -6), 1: _E2M1[codes] * np.float32(2.0 ** -47)}
    two_i = sc.shape[1]

    def put(st, o):  # the bf16 reference [E, H, 2I]: element (0, k, 0) of row 0 for k < 64
        for blk, v in vals.items():
            for j, x in enumerate(v):
                b = R.tensor_bytes(np.array([x], np.float32), "BF16")
                e = o + ((blk * 32 + j) * two_i) * 2
                st[e:e + 2] = b

    patch(deq / "model.safetensors", name, put)
    seq = F.load_golden()["cases"]["gpt-oss"]["sequence"][:40]
    with load(mx, kv_cache="f32") as m, load(deq, weight_format="bf16", kv_cache="f32") as r:
        got, want = m.logits(seq).astype(np.float64), r.logits(seq).astype(np.float64)
    assert rel_err(got, want) < 2e-3, rel_err(got, want)


def test_gpt_oss_mxfp4_layout_is_transformers(from_golden, tmp_path):
    """The MXFP4 decoding the test above relies on is transformers' own
    (integrations/mxfp4.convert_moe_packed_tensors): the same values, in transformers' layout."""
    torch = pytest.importorskip("torch")
    mxfp4 = pytest.importorskip("transformers.integrations.mxfp4")
    _, _, raw, deq = _gpt_oss_mxfp4_pair(from_golden, tmp_path)
    want = {k: v for k, v in deq.items() if k.endswith("_proj")}
    assert len(want) == 4
    for k in want:
        got = mxfp4.convert_moe_packed_tensors(torch.from_numpy(raw[k + "_blocks"]), torch.from_numpy(raw[k + "_scales"]),
                                               dtype=torch.float32)
        np.testing.assert_array_equal(got.numpy(), want[k], err_msg=k)


def test_gpt_oss_mxfp4_that_does_not_fit_is_named(from_golden, tmp_path):
    """A NaN scale (e8m0's 0xFF), blocks of the wrong dtype or shape: one line naming the tensor."""
    mx, _, _, _ = _gpt_oss_mxfp4_pair(from_golden, tmp_path)
    st = (mx / "model.safetensors").read_bytes()
    n = int.from_bytes(st[:8], "little")
    header = json.loads(st[8:8 + n])
    name = "model.layers.1.mlp.experts.down_proj_scales"
    b0, _ = header[name]["data_offsets"]
    bad = bytearray(st)
    bad[8 + n + b0 + 5] = 0xFF
    (mx / "model.safetensors").write_bytes(bytes(bad))
    msg = refused(mx)
    assert f"tensor {name} expert 0 row 5 block 0 is NaN (scale 0xFF)" in msg  # ([4, 64, 1]: one block a row) and "\n" not in msg
    header[name]["dtype"] = "I8"
    hb = json.dumps(header).encode()
    (mx / "model.safetensors").write_bytes(len(hb).to_bytes(8, "little") + hb + st[8 + n:])
    msg = refused(mx)
    assert name in msg and "I8" in msg and "\n" not in msg
    cfg = json.loads((mx / "config.json").read_text())
    (mx / "config.json").write_text(json.dumps(dict(cfg, intermediate_size=64)))
    (mx / "model.safetensors").write_bytes(st)
    msg = refused(mx)
    assert "model.layers.0.mlp.experts.gate_up_proj_blocks is [4, 64, 2, 16], expected [4, 128, 2, 16]" in msg


def test_gpt_oss_experts_that_cannot_load_are_named(from_golden, tmp_path):
    """A NaN in a (transformers-layout) expert names the tensor and the expert; MXFP4 experts
    over a hidden_size that is not a multiple of their block of 32 name both sizes."""
    folder, w = from_golden("gpt-oss")
    cfg = json.loads((folder / "config.json").read_text())
    bad = F.to_checkpoint(w, cfg)
    gu = bad["model.layers.1.mlp.experts.gate_up_proj"].copy()
    gu[2, 5, 7] = np.nan
    bad["model.layers.1.mlp.experts.gate_up_proj"] = gu
    copy_case(from_golden, "gpt-oss", tmp_path)
    R.write_safetensors(tmp_path / "model.safetensors", bad, "BF16")
    msg = refused(tmp_path)
    assert "tensor model.layers.1.mlp.experts.gate_up_proj" in msg and "non-finite value (NaN or Inf) in expert 2" in msg
    (tmp_path / "pair").mkdir()
    mx, _, _, _ = _gpt_oss_mxfp4_pair(from_golden, tmp_path / "pair")
    (mx / "config.json").write_text(json.dumps(dict(json.loads((mx / "config.json").read_text()), hidden_size=48)))
    msg = refused(mx)
    assert "MXFP4 experts need hidden_size (48) and intermediate_size (32) to be multiples of 32" in msg
    assert "\n" not in msg


def test_starcoder2_biases_with_use_bias_false_name_the_field(from_golden, tmp_path):
    cfg = copy_case(from_golden, "starcoder2", tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, use_bias=False)))
    msg = refused(tmp_path)
    assert "unexpected" in msg and "self_attn.q_proj.bias" in msg and "(config.json's use_bias is false)" in msg


@pytest.mark.parametrize("name, edit, words", [
    ("ernie4_5", {"use_bias": False}, "(config.json's use_bias is not true)"),
    ("ernie4_5", {"use_bias": None}, "(config.json's use_bias is not true)"),  # (left out: false)
    ("glm", {"attention_bias": False}, "(config.json's attention_bias is false)"),
    ("seed-oss", {"attention_out_bias": False}, "(config.json's attention_out_bias is not true)"),
])
def test_bias_fields_of_the_newer_families_are_named(from_golden, tmp_path, name, edit, words):
    """Bias tensors a config does not enable are refused naming the field that would."""
    cfg = copy_case(from_golden, name, tmp_path)
    cfg.update(edit)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    msg = refused(tmp_path)
    assert "unexpected" in msg and "self_attn." in msg and words in msg and "\n" not in msg


def test_olmo3_and_glm_defaults_without_their_fields(from_golden, golden, tmp_path):
    """Fields left out take their config classes' defaults: OLMo 3's sliding layers rotate with
    rope_theta when rope_parameters has no sliding_attention entry; GLM's q/k/v biases are on
    without attention_bias and half of each head rotates without partial_rotary_factor."""
    (tmp_path / "glm").mkdir()
    (tmp_path / "olmo3").mkdir()
    cfg = copy_case(from_golden, "glm", tmp_path / "glm")
    cfg.pop("attention_bias")
    rp = dict(cfg["rope_parameters"])
    rp.pop("partial_rotary_factor")
    cfg["rope_parameters"] = rp
    (tmp_path / "glm" / "config.json").write_text(json.dumps(cfg))
    seq = golden["cases"]["glm"]["sequence"]
    with load(from_golden("glm")[0], weight_format="bf16") as a, load(tmp_path / "glm", weight_format="bf16") as b:
        assert b.info["features"] == a.info["features"]
        np.testing.assert_array_equal(b.logits(seq[:16]), a.logits(seq[:16]))
    cfg = copy_case(from_golden, "olmo3", tmp_path / "olmo3")
    cfg["rope_parameters"] = {"full_attention": {"rope_type": "default", "rope_theta": 500.0}}
    (tmp_path / "olmo3" / "config.json").write_text(json.dumps(cfg))
    with load(tmp_path / "olmo3", weight_format="bf16") as m:
        assert "local-rope-theta 500" in m.info["features"]


@pytest.mark.parametrize("edit, words", [
    ({"use_qk_norm": True}, "use_qk_norm true is not supported for Cohere (a LayerNorm of q and k with weights per head)"),
    ({"logit_scale": 1e-300}, 'field "logit_scale" = 1e-300 is out of range'),
])
def test_cohere_fields_that_cannot_run_are_named(from_golden, tmp_path, edit, words):
    cfg = copy_case(from_golden, "cohere", tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, **edit)))
    msg = refused(tmp_path)
    assert words in msg and "\n" not in msg


def test_cohere2_without_a_window_rotates_no_layer(from_golden, golden, tmp_path):
    """Cohere2's attention rotates only on a layer with a window: with sliding_window null every
    layer attends without RoPE (as transformers computes it), against the float64 reference."""
    cfg = copy_case(from_golden, "cohere2", tmp_path)
    cfg["sliding_window"] = None
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    _, w = from_golden("cohere2")
    seq = golden["cases"]["cohere2"]["sequence"][:24]
    ref = R.reference_logits(F.unfused(w, cfg), F.tiny_config(cfg), seq, F.layer_windows(cfg), None,
                             **F.reference_extras(cfg))
    with load(tmp_path, weight_format="bf16") as m:
        assert "no-rope every layer" in m.info["features"]
        assert rel_err(m.logits(seq), ref) < 1e-5


def test_apertus_config_without_rope_fields_is_refused(from_golden, tmp_path):
    """ApertusConfig fills in llama3 RoPE scaling when config.json states none; pyvt does not guess it."""
    cfg = copy_case(from_golden, "apertus", tmp_path)
    cfg.pop("rope_parameters", None)
    cfg.pop("rope_theta", None)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    msg = refused(tmp_path)
    assert 'field "rope_parameters" is missing (Apertus' in msg and "\n" not in msg


def test_apertus_xielu_scalars_of_shape_1_load_alike(from_golden, golden, tmp_path):
    """xIELU's beta and eps are 0-d in transformers' files; a file holding them as [1] computes the same."""
    folder, w = from_golden("apertus")
    cfg = golden["cases"]["apertus"]["config"]
    for f in folder.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    ck = F.to_checkpoint(w, cfg)
    assert ck["model.layers.0.mlp.act_fn.beta"].shape == ()
    R.write_safetensors(tmp_path / "model.safetensors", {k: (v.reshape(1) if v.ndim == 0 else v) for k, v in ck.items()},
                        "BF16")
    seq = golden["cases"]["apertus"]["sequence"][:16]
    with load(folder, weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        np.testing.assert_array_equal(a.logits(seq), b.logits(seq))


@pytest.mark.parametrize("name, rope, words", [
    # (an alpha outside HunYuan is not read, as transformers reads none: dynamic NTK by factor)
    ("llama-bias-hd24", {"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0, "rope_theta": 10000.0},
     "rope_parameters.factor = 1 is not supported (rope type dynamic needs a factor above 1)"),
    ("llama-bias-hd24", {"rope_type": "dynamic", "alpha": 1000.0, "rope_theta": 10000.0},
     "rope_parameters.factor is missing (rope type dynamic)"),
])
def test_dynamic_rope_alpha_is_hunyuans_only(from_golden, tmp_path, name, rope, words):
    cfg = copy_case(from_golden, name, tmp_path)
    cfg.pop("rope_scaling", None)
    cfg.pop("rope_theta", None)
    cfg["rope_parameters"] = rope
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    msg = refused(tmp_path)
    assert words in msg and "\n" not in msg


@pytest.mark.parametrize("name", ["hunyuan-dense", "phi3-partial-rotary", "qwen2-tied"])
def test_dynamic_rope_in_other_families(from_golden, golden, tmp_path, name):
    """rope type dynamic by factor (HunYuan: without an alpha, transformers' dynamic NTK too;
    Phi-3: over its partial rotary dims) against the float64 reference, with
    max_position_embeddings 40: one prefill past it, and decode steps crossing it."""
    cfg = copy_case(from_golden, name, tmp_path)
    theta = cfg.pop("rope_theta", None) or (cfg.get("rope_parameters") or {}).get("rope_theta") or 10000.0
    prf = (cfg.get("rope_parameters") or {}).get("partial_rotary_factor") or cfg.get("partial_rotary_factor")
    cfg.pop("rope_scaling", None)
    cfg["rope_parameters"] = {"rope_type": "dynamic", "factor": 2.5, "rope_theta": theta,
                              **({"partial_rotary_factor": prf} if prf else {})}
    cfg["max_position_embeddings"] = 40
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    _, w = from_golden(name)
    seq = golden["cases"][name]["sequence"]
    args = (F.unfused(w, cfg), F.tiny_config(cfg), seq, F.layer_windows(cfg), F.gemma2_params(cfg))
    extra = F.reference_extras(cfg)
    with load(tmp_path, weight_format="bf16") as m:
        assert m.info["max_seq_len"] == 100  # (factor · max_position_embeddings)
        got = m.logits(seq)
        with m.new_session() as s:
            _, first = s.prefill(seq[:30], logits="last")
            rows = [first] + [s.decode(t, want_logits=True)[1] for t in seq[30:60]]
    assert rel_err(got, R.reference_logits(*args, **extra)) < 1e-5
    step_ref = R.reference_logits(*args[:2], seq[:60], *args[3:], rope_seq_lens=F.decode_seq_lens(cfg, 30, 60), **extra)
    assert rel_err(np.stack(rows), step_ref[29:]) < 1e-5


def test_gpt_neox_as_pythia_files_hold_it(from_golden, golden, tmp_path):
    """Pythia's files as the Hub has them: config.json with rotary_pct / rotary_emb_base, no
    rope_parameters (and a num_key_value_heads, which GPT-NeoX does not read), and per layer the causal-mask and RoPE buffers of old
    conversions (attention.bias, attention.masked_bias, attention.rotary_emb.inv_freq): the same
    logits as the case; a layer tensor that is none of those still named as unexpected."""
    cfg = copy_case(from_golden, "gpt-neox", tmp_path)
    for k in ("num_key_value_heads", "rope_parameters", "rms_norm_eps"):
        cfg.pop(k)
    cfg.update(rotary_pct=0.25, rotary_emb_base=10000)
    cfg["num_key_value_heads"] = 2  # (not a GPTNeoXConfig field: transformers ignores it, as pyvt does)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    _, w = from_golden("gpt-neox")
    ck = F.to_checkpoint(w, cfg)
    n = 16
    for l in range(cfg["num_hidden_layers"]):
        p = f"gpt_neox.layers.{l}.attention."
        ck[p + "bias"] = np.tril(np.ones((n, n), np.float32))[None, None]
        ck[p + "masked_bias"] = np.array(-1e9, np.float32)
        ck[p + "rotary_emb.inv_freq"] = np.ones(2, np.float32)
    R.write_safetensors(tmp_path / "model.safetensors", ck, "F32")
    seq = golden["cases"]["gpt-neox"]["sequence"][:16]
    with load(from_golden("gpt-neox")[0], weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        assert b.info["features"] == a.info["features"] and b.info["num_kv_heads"] == 4
        np.testing.assert_array_equal(b.logits(seq), a.logits(seq))
    ck["gpt_neox.layers.1.attention.rotary_emb.cos_cached"] = np.ones(2, np.float32)
    R.write_safetensors(tmp_path / "model.safetensors", ck, "F32")
    msg = refused(tmp_path)
    assert "unexpected 1 tensors: gpt_neox.layers.1.attention.rotary_emb.cos_cached" in msg and "\n" not in msg


def test_internlm3_config_as_the_hubs_and_without_head_dim(from_golden, golden, tmp_path):
    """InternLM3's config.json as released says rope_scaling {"type": "dynamic", ...} (the old
    key) and may leave out head_dim (InternLM3Config's default 128): the same model. Beside the
    usual attention_bias / mlp_bias, its qkv_bias / bias win, as transformers sets them last."""
    folder, _ = from_golden("internlm3")
    cfg = copy_case(from_golden, "internlm3", tmp_path)
    assert cfg["head_dim"] == 128
    del cfg["head_dim"]
    cfg["rope_scaling"] = {"type": "dynamic", "factor": cfg["rope_scaling"]["factor"]}
    cfg.update(attention_bias=False, mlp_bias=False)  # (qkv_bias, bias: true)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    seq = golden["cases"]["internlm3"]["sequence"]
    with load(folder, weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        assert b.info["family"] == "InternLM3" and b.info["max_seq_len"] == 6 * 24
        np.testing.assert_array_equal(a.logits(seq), b.logits(seq))


def test_gpt2_as_the_hubs_own_files_hold_it(from_golden, golden, tmp_path):
    """openai-community/gpt2's files name the base model's tensors without "transformer."
    (wte.weight, h.0.attn.c_attn.weight, ...) and keep the causal-mask buffers (h.N.attn.bias,
    h.N.attn.masked_bias): the same logits as the case; a name held both ways is refused."""
    cfg = copy_case(from_golden, "gpt2", tmp_path)
    _, w = from_golden("gpt2")
    ck = {k[len("transformer."):]: v for k, v in F.to_checkpoint(w, cfg).items()}
    for l in range(cfg["n_layer"]):
        ck[f"h.{l}.attn.bias"] = np.tril(np.ones((16, 16), np.float32))[None, None]
        ck[f"h.{l}.attn.masked_bias"] = np.array(-1e4, np.float32)
    R.write_safetensors(tmp_path / "model.safetensors", ck, "F32")
    seq = golden["cases"]["gpt2"]["sequence"][:16]
    with load(from_golden("gpt2")[0], weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        np.testing.assert_array_equal(b.logits(seq), a.logits(seq))
    ck["transformer.ln_f.bias"] = ck["ln_f.bias"]
    R.write_safetensors(tmp_path / "model.safetensors", ck, "F32")
    msg = refused(tmp_path)
    assert "duplicate tensor name transformer.ln_f.bias" in msg and "\n" not in msg


# phimoe-longrope's RoPE set without its mscales (the refusals below add them back one by one)
PHIMOE_ROPE = {"rope_type": "longrope", "rope_theta": 1e4, "original_max_position_embeddings": 48,
               "short_factor": [1.0] * 8, "long_factor": [1.0] * 8}


@pytest.mark.parametrize("name, edit, words", [
    ("gpt-neox", {"hidden_act": "relu"}, 'hidden_act "relu" is not supported for GPTNeoX (its MLP computes gelu(fc1 · '
                                         'x); gelu, gelu_new, gelu_fast or gelu_pytorch_tanh)'),
    ("gpt-neox", {"intermediate_size": 128}, "gpt_neox.layers.0.mlp.dense_h_to_4h.weight is [96, 64], expected [128, 64]"),
    ("gpt-neox", {"attention_bias": False}, "unexpected 4 tensors: gpt_neox.layers.{0..1}.attention.dense.bias, "
                                            "gpt_neox.layers.{0..1}.attention.query_key_value.bias"),
    ("gpt2", {"scale_attn_by_inverse_layer_idx": True},
     "scale_attn_by_inverse_layer_idx true is not supported for GPT2 (scores divided by the layer index + 1)"),
    ("gpt2", {"add_cross_attention": True}, "add_cross_attention true is not supported"),
    ("gpt2", {"n_positions": 128}, "transformer.wpe.weight is [256, 64], expected [128, 64]"),
    ("gpt2", {"n_inner": 128}, "transformer.h.0.mlp.c_fc.weight is [64, 96], expected [64, 128]"),
    ("gpt-bigcode", {"multi_query": False}, "transformer.h.0.attn.c_attn.weight is [96, 64], expected [192, 64]"),
    ("gpt-bigcode", {"activation_function": "relu"}, 'activation_function "relu" is not supported for GPTBigCode'),
    ("falcon-7b", {"activation": "relu"}, 'activation "relu" is not supported for Falcon'),
    ("gpt-neo", {"attention_types": None}, 'field "attention_types" is missing (GPTNeo\'s global and local layers)'),
    ("gpt-neo", {"attention_types": [[["global", "local"], 2]]}, "attention_types describes 4 layers, but the model has 2"),
    ("gpt-neo", {"attention_types": [[["global", "sparse"], 1]]}, 'field "attention_types" must be a list of'),
    ("gpt-neo", {"attention_types": [["global", 1]]}, 'field "attention_types" must be a list of'),
    ("olmo", {"clip_qkv": -1.0}, 'field "clip_qkv"'),
    ("olmo", {"hidden_act": "gelu"}, 'hidden_act "gelu" is not supported for OLMo'),
    ("gptj", {"rotary_dim": None}, "rotary_dim null is not supported for GPTJ"),
    ("gptj", {"rotary_dim": 7}, "rotary_dim 7 does not fit head_dim 16"),
    ("gptj", {"rotary_dim": 32}, "rotary_dim 32 does not fit head_dim 16"),
    ("gptj", {"n_inner": None}, "transformer.h.0.mlp.fc_in.weight is [96, 64], expected [256, 64]"),
    ("falcon-7b", {"alibi": True}, "alibi true is not supported for Falcon (falcon-rw's ALiBi"),
    ("falcon-new-1ln-bias", {"parallel_attn": False},
     "new_decoder_architecture with num_ln_in_parallel_attn 1 and parallel_attn false is not supported for Falcon"),
    ("falcon-seq-mha-bias", {"num_kv_heads": 2}, "num_kv_heads 2 with multi_query false is not supported for Falcon"),
    ("falcon-new-2ln", {"num_ln_in_parallel_attn": 1}, "missing 4 tensors: transformer.h.{0..1}.input_layernorm.bias"),
    ("falcon-new-2ln", {"num_kv_heads": 4}, "self_attention.query_key_value.weight is [128, 64], expected [192, 64]"),
    ("falcon-7b", {"bias": True}, "missing 8 tensors: transformer.h.{0..1}.mlp.dense_4h_to_h.bias"),
    ("bloom", {"apply_residual_connection_post_layernorm": True},
     "apply_residual_connection_post_layernorm true is not supported for Bloom"),
    ("mpt", {"attn_config": {"alibi": False}}, "attn_config.alibi false is not supported for MPT"),
    ("mpt", {"attn_config": {"alibi_bias_max": 16}}, "attn_config.alibi_bias_max other than 8 is not supported for MPT"),
    ("mpt", {"attn_config": {"qk_ln": True}}, "attn_config.qk_ln true is not supported for MPT (LayerNorms of q and k)"),
    ("mpt", {"attn_config": {"prefix_lm": True}}, "attn_config.prefix_lm true is not supported for MPT"),
    ("mpt", {"attn_config": {"attn_uses_sequence_id": True}},
     "attn_config.attn_uses_sequence_id true is not supported for MPT"),
    ("mpt", {"no_bias": False}, "no_bias false is not supported for MPT"),
    ("mpt", {"logit_scale": 0.5}, "logit_scale is not supported for MPT"),
    ("mpt", {"attn_config": [1]}, 'field "attn_config" must be an object'),
    ("mpt", {"attn_config": {"clip_qkv": -1}}, 'field "attn_config.clip_qkv" must be a finite positive number or null'),
    ("opt", {"do_layer_norm_before": False}, "do_layer_norm_before false is not supported for OPT (opt-350m's post-norm"),
    ("opt", {"_remove_final_layer_norm": True}, "_remove_final_layer_norm true is not supported for OPT"),
    ("opt", {"layer_norm_elementwise_affine": False}, "layer_norm_elementwise_affine false is not supported for OPT"),
    ("opt", {"word_embed_proj_dim": 32}, "word_embed_proj_dim 32 is not supported for OPT"),
    ("opt", {"max_position_embeddings": 128}, "model.decoder.embed_positions.weight is [258, 64], expected [130, 64]"),
    ("opt", {"enable_bias": False}, "unexpected 12 tensors: model.decoder.layers.{0..1}.fc1.bias"),
    ("opt", {"enable_bias": False}, "(config.json's enable_bias is false)"),
    ("glm4-moe", {"n_group": 3}, 'field "n_group" = 3 does not split the 8 experts into groups of 2 or more'),
    ("glm4-moe", {"n_group": 8, "topk_group": 2},
     'field "n_group" = 8 does not split the 8 experts into groups of 2 or more'),
    ("glm4-moe", {"topk_group": 5}, 'field "topk_group" = 5 is more than the 4 groups (n_group)'),
    ("glm4-moe", {"topk_group": 1}, 'field "num_experts_per_tok" = 3 is more than the 2 experts of the topk_group = 1'),
    ("glm4-moe", {"routed_scaling_factor": -1}, 'field "routed_scaling_factor" must be a positive number'),
    ("glm4-moe", {"n_shared_experts": 2}, "shared_experts.gate_proj.weight is [32, 64], expected [64, 64]"),
    ("glm4-moe", {"first_k_dense_replace": 0}, "missing 29 tensors: model.layers.0.mlp.experts.0.down_proj.weight"),
    ("glm4-moe", {"use_qk_norm": True}, "missing 6 tensors: model.layers.{0..2}.self_attn.k_norm.weight"),
    ("glm4-moe", {"attention_bias": False}, "(config.json's attention_bias is false)"),
    ("dots1", {"n_routed_experts": 16}, "missing"),
    ("deepseek-v3", {"attention_bias": True}, "attention_bias true is not supported for DeepseekV3 (biases on q_a_proj"),
    ("deepseek-v2", {"mlp_bias": True}, "mlp_bias true is not supported for DeepseekV2"),
    ("deepseek-v2", {"norm_topk_prob": True}, "norm_topk_prob true is not supported for DeepseekV2 (transformers'"),
    ("deepseek-v2", {"topk_method": "noaux_tc"}, 'topk_method "noaux_tc" is not supported for DeepseekV2'),
    ("deepseek-v2", {"n_group": None}, "topk_method group_limited_greedy needs the fields"),
    ("deepseek-v2", {"n_group": 16}, 'field "n_group" = 16 does not split the 8 experts into groups of 1 or more'),
    ("deepseek-v2-lora", {"qk_rope_head_dim": 7}, "qk_rope_head_dim 7 must be even"),
    ("deepseek-v2-lora", {"num_attention_heads": None}, 'field "num_attention_heads" is missing'),
    ("deepseek-v2-lora", {"kv_lora_rank": 4096}, "kv_lora_rank + qk_rope_head_dim 4104 is larger than the 4096"),
    ("deepseek-v2-lora", {"kv_lora_rank": 64},
     "self_attn.kv_a_proj_with_mqa.weight is [40, 64], expected [72, 64]"),
    ("deepseek-v2-lora", {"q_lora_rank": None}, "missing 2 tensors: model.layers.{0..1}.self_attn.q_proj.weight"),
    ("deepseek-v3-halfrope", {"q_lora_rank": 32}, "self_attn.q_a_layernorm.weight"),
    ("deepseek-v3", {"v_head_dim": 16}, "self_attn.kv_b_proj.weight is [160, 32], expected [128, 32]"),
    ("minimax-m2", {"rotary_dim": 7}, "rotary_dim 7 does not fit head_dim 16"),
    ("minimax-m2", {"rotary_dim": 32}, "rotary_dim 32 does not fit head_dim 16"),
    ("glm4-moe-lite", {"mlp_layer_types": ["dense", "dense"]}, "mlp_layer_types lists 2 layers, but the model has 3"),
    ("exaone-moe-types", {"mlp_layer_types": ["sparse", "dense"]}, "mlp_layer_types lists 2 layers, but the model has 3"),
    ("exaone-moe-types", {"mlp_layer_types": ["sparse", "moe", "sparse"]}, 'field "mlp_layer_types" must be a list of'),
    ("exaone-moe-types", {"mlp_layer_types": ["dense", "dense", "sparse"]},
     "unexpected 17 tensors: model.layers.0.mlp.e_score_correction_bias"),
    ("ernie4_5-moe", {"use_bias": True}, "use_bias true is not supported for Ernie4_5_MoE (biases on the shared experts)"),
    ("ernie4_5-moe", {"moe_num_shared_experts": 2}, "shared_experts.gate_proj.weight is [32, 64], expected [64, 64]"),
    ("ernie4_5-moe", {"moe_layer_start_index": 0}, "missing 29 tensors: model.layers.0.mlp.experts.0.down_proj.weight"),
    ("ernie4_5-moe", {"moe_k": 9}, 'field "moe_k" = 9 is more than the 8 experts'),
    ("minimax-m2", {"num_experts_per_tok": 9}, 'field "num_experts_per_tok" = 9 is more than the 8 experts'),
    ("lfm2", {"layer_types": ["conv", "sliding_attention", "conv"]},
     'layer_types[1] "sliding_attention" is not supported for Lfm2 (full_attention, conv)'),
    ("lfm2", {"layer_types": ["conv", "full_attention"]}, "layer_types lists 2 layers, but the model has 3"),
    ("lfm2", {"layer_types": ["conv", "conv", "conv"]}, "missing 3 tensors: model.layers.1.conv.conv.weight"),
    ("lfm2", {"layer_types": None, "full_attn_idxs": [0, 1]}, "missing 6 tensors: model.layers.0.self_attn.k_layernorm"),
    ("lfm2", {"conv_L_cache": 4}, "model.layers.0.conv.conv.weight is [64, 1, 3], expected [64, 1, 4]"),
    ("lfm2", {"conv_L_cache": 0}, 'field "conv_L_cache" must be an integer in [1, 256]'),
    ("lfm2", {"conv_bias": True}, "missing 6 tensors: model.layers.{0,2}.conv.conv.bias"),
    ("lfm2", {"block_multiple_of": 256}, "feed_forward.w1.weight is [96, 64], expected [256, 64]"),
    ("lfm2", {"block_ffn_dim_multiplier": None}, "feed_forward.w1.weight is [96, 64], expected [64, 64]"),
    ("lfm2-bias", {"conv_bias": False}, "unexpected 9 tensors: model.layers.{0,2,3}.conv.conv.bias"),
    ("lfm2-bias", {"block_auto_adjust_ff_dim": True}, "feed_forward.w1.weight is [96, 64], expected [256, 64]"),
    ("ministral3", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}},
     'rope_parameters needs "llama_4_scaling_beta" and "original_max_position_embeddings" (Ministral3 scales each query'),
    ("ministral3", {"rope_parameters": None}, 'field "rope_parameters" is missing: it needs "llama_4_scaling_beta"'),
    ("ministral3-window", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "llama_4_scaling_beta": 0.3}},
     'rope_parameters needs "llama_4_scaling_beta" and "original_max_position_embeddings"'),
    ("ministral3-window", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "llama_4_scaling_beta": -1,
                                               "original_max_position_embeddings": 16}},
     'field "rope_parameters.llama_4_scaling_beta" must be a finite number >= 0'),
    ("mistral4", {"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0,
                                      "original_max_position_embeddings": 8, "llama_4_scaling_beta": 0.1,
                                      "partial_rotary_factor": 0.25}},
     "partial_rotary_factor 0.25 rotates 8 of the query head's 32 dims, not its qk_rope_head_dim 16"),
    ("mistral4", {"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0,
                                      "original_max_position_embeddings": 8}},
     'rope_parameters needs "llama_4_scaling_beta" and "original_max_position_embeddings" (Mistral4 scales'),
    ("mistral4", {"n_group": 8}, 'field "n_group" = 8 does not split the 8 experts into groups of 2 or more (Mistral4'),
    ("mistral4", {"moe_intermediate_size": 16}, "mlp.experts.gate_up_proj is [8, 64, 64], expected [8, 32, 64]"),
    ("solar-open", {"attention_bias": False}, "unexpected 6 tensors: model.layers.{0..1}.self_attn.k_proj.bias"),
    ("solar-open", {"partial_rotary_factor": 0.5}, "partial_rotary_factor 0.5 is not supported for SolarOpen"),
    ("cwm", {"rope_parameters": None}, "field \"rope_parameters\" is missing (Cwm's RoPE: its config class fills in"),
    ("cwm", {"layer_types": ["full_attention", "sliding_attention", "chunked_attention", "full_attention",
                             "full_attention"]}, 'layer_types[2] "chunked_attention" is not supported for Cwm'),
    ("cwm", {"mlp_bias": False}, "unexpected 15 tensors: model.layers.{0..4}.mlp.down_proj.bias"),
    ("iquestcoder", {"clip_qkv": 0.5}, "clip_qkv is not supported for IQuestCoder (its config class refuses it)"),
    ("iquestcoder", {"mlp_bias": False}, "unexpected 6 tensors: model.layers.{0..1}.mlp.down_proj.bias"),
    ("hyperclovax", {"use_post_norm": False}, "unexpected 4 tensors: model.layers.{0..1}.post_norm1.weight"),
    ("hyperclovax", {"logits_scaling": 1e300}, "logits_scaling"),
    ("llama-dynamic", {"rope_parameters": {"rope_type": "dynamic", "factor": 1.0, "rope_theta": 1e4}},
     "rope_parameters.factor = 1 is not supported (rope type dynamic needs a factor above 1)"),
    ("llama-dynamic", {"rope_parameters": {"rope_type": "dynamic", "factor": "2", "rope_theta": 1e4}},
     'field "rope_parameters.factor"'),
    ("llama-dynamic", {"rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4}},
     "rope_parameters.factor is missing (rope type dynamic)"),
    ("internlm3", {"rope_scaling": {"type": "dynamic", "factor": 0.5}}, "rope_scaling.factor = 0.5 is not supported"),
    ("internlm3", {"bias": False}, "qkv_bias true with bias false is not supported for InternLM3"),
    ("internlm3", {"qkv_bias": False}, "qkv_bias false with bias true is not supported for InternLM3"),
    ("exaone", {"activation_function": "gelu"}, 'activation_function "gelu" is not supported for Exaone (its MLP computes silu'),
    ("exaone", {"attention_bias": True}, "missing 8 tensors: transformer.h.{0..1}.attn.attention.k_proj.bias"),
    ("exaone", {"layer_norm_epsilon": 0}, 'field "layer_norm_epsilon" must be a positive number, got 0'),
    ("nanochat", {"hidden_act": "silu"}, 'hidden_act "silu" is not supported for NanoChat (its MLP computes relu2(fc1'),
    ("nanochat", {"final_logit_softcapping": -1.0}, 'field "final_logit_softcapping" must be a positive number, got -1'),
    ("nanochat", {"attention_bias": True}, "missing 8 tensors: model.layers.{0..1}.self_attn.k_proj.bias"),
    ("flex-olmo", {"num_experts": 8}, "missing 24 tensors: model.layers.{0..1}.mlp.experts.4.down_proj.weight"),
    ("jais2", {"attention_bias": False}, "unexpected 8 tensors: model.layers.{0..1}.self_attn.k_proj.bias"),
    ("jais2", {"mlp_bias": False}, "(config.json's mlp_bias is not true)"),
    ("jais2-nobias-tied", {"mlp_bias": True}, "missing 4 tensors: model.layers.{0..1}.mlp.down_proj.bias"),
    ("jais2", {"partial_rotary_factor": 0.5}, "partial_rotary_factor 0.5 is not supported for Jais2"),
    ("granite-swa", {"layer_rope_theta": [1e4, 1e4, 5e5, 0]},
     "layer_rope_theta with two RoPE bases (10000 and 500000) is not supported for GraniteSWA"),
    ("granite-swa", {"layer_rope_theta": [1e4, 1e4]}, "layer_rope_theta lists 2 layers, but the model has 4"),
    ("granite-swa", {"layer_rope_theta": [1e4, -1, 1e4, 1e4]},
     'field "layer_rope_theta" must be a list of one RoPE base per layer (a number >= 0; 0: no RoPE), got an array'),
    ("granite-swa", {"layer_rope_theta": 1e4}, 'field "layer_rope_theta" must be a list of one RoPE base per layer'),
    ("granite-swa", {"sliding_window": None},
     "sliding_window null (or 0) is not supported for GraniteSWA with sliding layers (layer 1 is sliding_attention)"),
    ("granite-swa", {"layer_types": ["full_attention", "sliding_attention", "chunked_attention", "full_attention"]},
     'layer_types[2] "chunked_attention" is not supported for GraniteSWA'),
    ("granite-swa", {"layer_types": ["full_attention", "sliding_attention"]},
     "layer_types lists 2 layers, but the model has 4"),
    ("granite-swa", {"partial_rotary_factor": 0.5}, "partial_rotary_factor 0.5 is not supported for GraniteSWA"),
    ("granite-swa-nope", {"attention_bias": True}, "missing 16 tensors: model.layers.{0..3}.self_attn.k_proj.bias"),
    ("flex-olmo", {"num_experts_per_tok": 5}, 'field "num_experts_per_tok" = 5 is more than the 4 experts'),
    ("minicpm3", {"attention_bias": True}, "attention_bias true is not supported for MiniCPM3"),
    ("minicpm3", {"q_lora_rank": None}, "missing 3 tensors: model.layers.{0..2}.self_attn.q_proj.weight"),
    ("minicpm3", {"v_head_dim": 32}, "self_attn.kv_b_proj.weight is [128, 32], expected [192, 32]"),
    ("minicpm3", {"scale_emb": 0}, 'field "scale_emb" must be a positive number'),
    ("minicpm3-longrope", {"rope_parameters": {"rope_type": "longrope", "rope_theta": 1e4,
                                               "original_max_position_embeddings": 64, "short_factor": [1.0, 1.1],
                                               "long_factor": [1.0, 1.3, 2.5, 4.0]}}, "short_factor"),
    ("youtu", {"attention_bias": True}, "attention_bias true is not supported for Youtu"),
    ("youtu", {"mlp_bias": True}, "mlp_bias true is not supported for Youtu"),
    ("youtu", {"q_lora_rank": None}, "missing 3 tensors: model.layers.{0..2}.self_attn.q_proj.weight"),
    ("youtu", {"v_head_dim": 16}, "self_attn.kv_b_proj.weight is [160, 32], expected [128, 32]"),
    ("youtu", {"qk_rope_head_dim": 7}, "qk_rope_head_dim 7 must be even"),
    ("youtu", {"kv_lora_rank": "32"}, 'field "kv_lora_rank"'),
    ("youtu-nolora", {"tie_word_embeddings": False}, "lm_head.weight"),
    ("lfm3", {"layer_types": ["conv", "conv", "full_attention", "conv", "chunked_attention"]},
     'layer_types[4] "chunked_attention" is not supported for Lfm3 (full_attention, sliding_attention, conv)'),
    ("lfm3", {"use_attention_gate": False}, "unexpected 2 tensors: model.layers.{2,4}.self_attn.gate_proj.weight"),
    ("lfm3", {"use_sandwich_norm": False}, "unexpected 10 tensors: model.layers.{0..4}.post_ffn_norm.weight"),
    ("lfm3", {"rope_parameters": None}, 'field "rope_parameters" with "full_attention" and "sliding_attention" sets is '
                                        "missing (LFM3's RoPE"),
    ("lfm3", {"rope_parameters": {"full_attention": {"rope_type": "proportional", "rope_theta": 1e6},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                        "partial_rotary_factor": 0.5}}},
     "rope_parameters.sliding_attention.partial_rotary_factor 0.5 is not supported"),
    ("lfm3", {"rope_parameters": {"full_attention": {"rope_type": "proportional", "rope_theta": 1e6, "factor": 0},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
     'field "rope_parameters.full_attention.factor" must be a positive number'),
    ("lfm3-nogate", {"attention_bias": False}, "unexpected 8 tensors: model.layers.{0,2}.self_attn.k_proj.bias"),
    ("lfm2-moe", {"use_expert_bias": False}, "unexpected 2 tensors: model.layers.{1..2}.feed_forward.expert_bias"),
    ("lfm2-moe-nobias", {"use_expert_bias": True}, "missing 3 tensors: model.layers.{0..2}.feed_forward.expert_bias"),
    ("lfm2-moe", {"num_dense_layers": 0}, "missing 26 tensors: model.layers.0.feed_forward.expert_bias"),
    ("lfm2-moe", {"num_experts_per_tok": 9}, 'field "num_experts_per_tok" = 9 is more than the 8 experts'),
    ("lfm2-moe", {"moe_intermediate_size": 64}, "feed_forward.experts.0.w1.weight is [32, 64], expected [64, 64]"),
    # AFMoE: its dense layers, shared experts, windows and fields by name
    ("afmoe", {"num_dense_layers": 0}, "missing 29 tensors: model.layers.0.mlp.expert_bias"),
    ("afmoe", {"num_dense_layers": 2}, "missing 3 tensors: model.layers.1.mlp.down_proj.weight"),
    ("afmoe", {"num_shared_experts": 2}, "mlp.shared_experts.gate_proj.weight is"),
    ("afmoe", {"num_shared_experts": 0}, "num_shared_experts 0 is not supported for Afmoe"),
    ("afmoe", {"sliding_window": None},
     "sliding_window null (or 0) is not supported for Afmoe with sliding layers (layer 0 is sliding_attention)"),
    ("afmoe", {"layer_types": ["sliding_attention", "full_attention", "sliding_attention", "chunked_attention"]},
     'layer_types[3] "chunked_attention" is not supported for Afmoe'),
    ("afmoe", {"num_experts_per_tok": 9}, 'field "num_experts_per_tok" = 9 is more than the 8 experts'),
    ("afmoe", {"route_scale": "2"}, 'field "route_scale" must be a positive number'),
    ("afmoe", {"mup_enabled": 1}, 'field "mup_enabled" must be true or false'),
    ("afmoe", {"global_attn_every_n_layers": 0}, 'field "global_attn_every_n_layers" must be an integer in [1, 100000]'),
    ("afmoe-mup", {"attention_bias": False}, "unexpected 12 tensors: model.layers.{0..2}.self_attn.k_proj.bias"),
    # PhiMoE: the sparsemixer's two experts, its fields, lm_head's bias and the mscales by name
    ("phimoe", {"num_experts_per_tok": 3},
     'field "num_experts_per_tok" = 3 is not supported for PhiMoE (its sparsemixer router always picks 2 experts)'),
    ("phimoe", {"num_experts_per_tok": 1}, 'field "num_experts_per_tok" = 1 is not supported for PhiMoE'),
    ("phimoe", {"router_jitter_noise": -0.01}, 'field "router_jitter_noise" must be a number >= 0, got -0.01'),
    ("phimoe", {"lm_head_bias": "true"}, 'field "lm_head_bias" must be true or false'),
    ("phimoe", {"lm_head_bias": False}, "unexpected 1 tensors: lm_head.bias"),
    ("phimoe-longrope", {"lm_head_bias": True}, "missing 1 tensors: lm_head.bias"),
    ("phimoe", {"attention_bias": False}, "unexpected 8 tensors: model.layers.{0..1}.self_attn.k_proj.bias"),
    ("phimoe-longrope", {"rope_parameters": PHIMOE_ROPE | {"long_mscale": 1.3}},
     "rope_parameters.short_mscale is missing (PhiMoE's rope type longrope needs it)"),
    ("phimoe-longrope", {"rope_parameters": PHIMOE_ROPE | {"short_mscale": 1.1}},
     "rope_parameters.long_mscale is missing (PhiMoE's rope type longrope needs it)"),
    ("phimoe-longrope", {"rope_parameters": PHIMOE_ROPE | {"short_mscale": 1.1, "long_mscale": 0}},
     'field "rope_parameters.long_mscale" must be a positive number'),
    ("phimoe-longrope", {"rope_parameters": {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0,
                                             "short_mscale": 1.1, "long_mscale": 1.3}},
     "rope_parameters of a type other than default or longrope is not supported for PhiMoE"),
    # Cohere 2 MoE: its norms, router, shared experts and dense layers by name
    ("cohere2-moe", {"rms_norm_eps": 1e-6}, "rms_norm_eps 1e-06 is not supported for Cohere2Moe (RMSNorms in place of"),
    ("cohere2-moe", {"expert_selection_fn": "softmax_topk"},
     'expert_selection_fn "softmax_topk" is not supported for Cohere2Moe (softmax, sigmoid)'),
    ("cohere2-moe", {"shared_expert_combination_strategy": "max"},
     'shared_expert_combination_strategy "max" is not supported for Cohere2Moe (average, sum)'),
    ("cohere2-moe", {"expert_selection_fn": 1}, 'field "expert_selection_fn" must be a string'),
    ("cohere2-moe", {"num_shared_experts": 2}, "mlp.shared_experts.gate_proj.weight is [32, 64], expected [64, 64]"),
    ("cohere2-moe", {"prefix_dense_intermediate_size": None}, "mlp.gate_proj.weight is [64, 64], expected [32, 64]"),
    ("cohere2-moe", {"mlp_layer_types": ["dense", "dense", "sparse", "sparse"]},
     "missing 3 tensors: model.layers.1.mlp.down_proj.weight"),
    ("cohere2-moe", {"mlp_layer_types": ["dense", "sparse"]}, "mlp_layer_types lists 2 layers, but the model has 4"),
    ("cohere2-moe", {"layer_types": None, "sliding_window_pattern": 0},
     'field "sliding_window_pattern" must be an integer in [1, 100000], got 0'),
    ("cohere2-moe", {"prefix_dense_sliding_window_pattern": 0},
     'field "prefix_dense_sliding_window_pattern" must be an integer in [1, 100000]'),
    ("cohere2-moe-sigmoid", {"attention_bias": False}, "unexpected 16 tensors: model.layers.{0..3}.self_attn.k_proj.bias"),
    # HY-V3: its dense layers, shared experts, biases and fields by name
    ("hy-v3", {"mlp_layer_types": ["sparse", "sparse", "sparse"]}, "missing 29 tensors: model.layers.0.mlp.expert_bias"),
    ("hy-v3", {"mlp_layer_types": ["dense", "dense"]}, "mlp_layer_types lists 2 layers, but the model has 3"),
    ("hy-v3", {"num_shared_experts": 2}, "mlp.shared_mlp.gate_proj.weight is [32, 64], expected [64, 64]"),
    ("hy-v3", {"num_shared_experts": 0}, "num_shared_experts 0 is not supported for HYV3 (its model then builds a shared MLP"),
    ("hy-v3", {"mlp_bias": True}, "mlp_bias true is not supported for HYV3 (biases on its dense and shared MLPs)"),
    ("hy-v3", {"router_scaling_factor": "2"}, 'field "router_scaling_factor" must be a positive number'),
    ("hy-v3", {"num_experts_per_tok": 9}, 'field "num_experts_per_tok" = 9 is more than the 8 experts'),
    ("hy-v3-types", {"attention_bias": False}, "unexpected 12 tensors: model.layers.{0..2}.self_attn.k_proj.bias"),
    # A.X-K1: its layers, q's LoRA and its MoE output norm by name
    ("axk1", {"q_lora_rank": None}, "q_lora_rank null is not supported for AXK1 (its attention always projects q"),
    ("axk1", {"mlp_layer_types": ["sparse", "sparse", "sparse"]}, "missing 29 tensors: model.layers.0.mlp.experts.0."),
    ("axk1", {"mlp_layer_types": ["dense", "sparse"]}, "mlp_layer_types lists 2 layers, but the model has 3"),
    ("axk1-freq", {"mlp_layer_types": None, "moe_layer_freq": 1},
     "missing 34 tensors: model.layers.{1,3}.mlp.experts.0.down_proj.weight"),
    ("axk1-freq", {"moe_layer_freq": 0}, 'field "moe_layer_freq" must be an integer in [1, 100000]'),
    ("axk1", {"attention_bias": True}, "attention_bias true is not supported for AXK1"),
    ("axk1", {"n_group": 3}, 'field "n_group" = 3 does not split the 8 experts'),
    # HunYuan MoE: per-layer lists must hold one value for every layer; the widths transformers builds
    ("hunyuan-moe-lists", {"moe_topk": [3, 2, 3]},
     "moe_topk [3, 2, 3] differs per layer, which is not supported (the engine gives every MoE layer the same experts per"),
    ("hunyuan-moe-lists", {"num_experts": [4, 4, 2]}, "num_experts [4, 4, 2] differs per layer, which is not supported"),
    ("hunyuan-moe-lists", {"moe_topk": [3, 3]}, 'field "moe_topk" lists 2 values, but the model has 3 layers'),
    ("hunyuan-moe-lists", {"moe_topk": [3, "3", 3]}, 'field "moe_topk" must be an integer in [1, 65536] or a list of them'),
    ("hunyuan-moe-lists", {"num_experts": []}, 'field "num_experts" must be an integer in [0, 65536] or a list of them'),
    ("hunyuan-moe-lists", {"num_shared_expert": [2, 2, 2]},
     "num_shared_expert 2 is not supported for HunYuanMoEV1 (transformers' model has one shared MLP"),
    ("hunyuan-moe", {"num_shared_expert": 0}, "num_shared_expert 0 is not supported for HunYuanMoEV1"),
    ("hunyuan-moe-lists", {"moe_intermediate_size": [48, 48, 48]},
     "moe_intermediate_size 48 is not supported for HunYuanMoEV1 (transformers' experts are intermediate_size = 96 wide)"),
    ("hunyuan-moe-lists", {"use_mixed_mlp_moe": False}, "use_mixed_mlp_moe false is not supported for HunYuanMoEV1"),
    ("hunyuan-moe-lists", {"use_cla": True}, "use_cla true is not supported for HunYuanMoEV1 (cross-layer attention"),
    ("hunyuan-moe-lists", {"moe_layer_num_skipped": 1}, "moe_layer_num_skipped 1 is not supported for HunYuanMoEV1"),
    ("hunyuan-moe", {"moe_topk": 9}, 'field "moe_topk" = 9 is more than the 8 experts'),
    ("hunyuan-moe", {"attention_bias": True}, "missing 8 tensors: model.layers.{0..1}.self_attn.k_proj.bias"),
    # Sarvam-MoE: q/k norms unless use_qk_norm is false (SarvamMoEConfig's default), its fused
    # bias by use_qkv_bias (winning over attention_bias), the Hub code's dense bias refused
    ("sarvam-moe-plain", {"use_qk_norm": None}, "missing 4 tensors: model.layers.{0..1}.attention.key_layernorm.weight"),
    ("sarvam-moe", {"use_qkv_bias": False, "attention_bias": True},
     "unexpected 3 tensors: model.layers.{0..2}.attention.query_key_value.bias"),
    ("sarvam-moe", {"use_bias": True}, "use_bias true is not supported for SarvamMoE (a bias on attention.dense, which "
     "transformers' Glm4MoeForCausalLM does not have)"),
    ("sarvam-moe", {"num_shared_experts": 2}, "mlp.shared_experts.gate_proj.weight is [32, 64], expected [64, 64]"),
    # Sarvam-MLA: rope_scaling type deepseek_yarn is its legacy name for yarn, there only
    ("sarvam-mla", {"rope_parameters": {"rope_type": "deepseek_yarn", "rope_theta": 1e4, "factor": 4.0,
                                        "original_max_position_embeddings": 64}},
     'rope_parameters type "deepseek_yarn" is not supported for SarvamMLA (SarvamMLA\'s legacy name for yarn, in rope_scaling)'),
    ("deepseek-v3", {"rope_parameters": None, "rope_scaling": {"type": "deepseek_yarn", "factor": 4.0,
                                                                "original_max_position_embeddings": 64}},
     'rope_scaling type "deepseek_yarn" is not supported for DeepseekV3'),
    # Kolibri 1: its shared expert's width, windows and layer types by name
    ("kolibri1", {"shared_expert_intermediate_size": 0}, "shared_expert_intermediate_size 0 is not supported for Kolibri1"),
    ("kolibri1", {"shared_expert_intermediate_size": 32}, "mlp.shared_experts.gate_proj.weight is [64, 64], expected [32, 64]"),
    ("kolibri1", {"sliding_window": None},
     "sliding_window null (or 0) is not supported for Kolibri1 with sliding layers (layer 0 is sliding_attention)"),
    ("kolibri1-norm", {"layer_types": ["sliding_attention", "chunked_attention", "sliding_attention"]},
     'layer_types[1] "chunked_attention" is not supported for Kolibri1'),
    ("kolibri1-norm", {"num_experts_per_tok": 5}, 'field "num_experts_per_tok" = 5 is more than the 4 experts'),
    # Mellum: its RoPE only in per-layer-type sets, its windows, layer types and MLP types by name
    ("mellum", {"rope_theta": 1e6}, 'field "rope_theta" is not supported for Mellum (its config class does not read it'),
    ("mellum", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4}},
     'field "rope_parameters" must hold one set per layer type ("full_attention", "sliding_attention") for Mellum'),
    ("mellum-types", {"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4}}},
     'field "rope_parameters" has no "sliding_attention" set, but layer 0 is sliding_attention'),
    ("mellum-types", {"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4},
                                          "sliding_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                                "partial_rotary_factor": 0.5}}},
     "rope_parameters.sliding_attention.partial_rotary_factor 0.5 is not supported"),
    ("mellum-types", {"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                             "partial_rotary_factor": 0.5},
                                          "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
     "partial_rotary_factor 0.5 is not supported for Mellum"),
    ("mellum-types", {"sliding_window": None},
     "sliding_window null (or 0) is not supported for Mellum with sliding layers (layer 0 is sliding_attention)"),
    ("mellum-types", {"layer_types": ["sliding_attention", "chunked_attention", "sliding_attention"]},
     'layer_types[1] "chunked_attention" is not supported for Mellum'),
    ("mellum-types", {"mlp_layer_types": ["sparse", "sparse"]}, "mlp_layer_types lists 2 layers, but the model has 3"),
    ("mellum-types", {"mlp_layer_types": ["sparse", "sparse", "sparse"]}, "model.layers.1.mlp.experts.0.down_proj.weight"),
    ("mellum", {"mlp_layer_types": ["sparse", "moe", "sparse"]}, 'field "mlp_layer_types" must be a list of "dense" / "sparse"'),
    # Flint: its window, layer types, shared expert and dense layers by name
    ("flint", {"sliding_window": None},
     "sliding_window null (or 0) is not supported for Flint with sliding layers (layer 2 is sliding_attention)"),
    ("flint-types", {"layer_types": ["sliding_attention", "chunked_attention", "sliding_attention"]},
     'layer_types[1] "chunked_attention" is not supported for Flint'),
    ("flint", {"shared_expert_intermediate_size": 0}, "shared_expert_intermediate_size 0 is not supported for Flint"),
    ("flint", {"shared_expert_intermediate_size": 32}, "mlp.shared_expert.gate_proj.weight is [64, 64], expected [32, 64]"),
    ("flint", {"mlp_only_layers": [0]}, "model.layers.1.mlp.experts.0.down_proj.weight"),
    ("flint", {"mlp_only_layers": [0, "1"]}, 'field "mlp_only_layers" must be a list of layer indices'),
    ("flint", {"partial_rotary_factor": 0.5}, "partial_rotary_factor 0.5 is not supported for Flint"),
    ("flint-types", {"attention_bias": False}, "unexpected 12 tensors: model.layers.{0..2}.self_attn.k_proj.bias"),
    ("qwen3-moe", {"num_experts": [8, 8, 8]}, 'field "num_experts" must be an integer for Qwen3MoE, got a list'),
    ("qwen3-moe", {"moe_intermediate_size": [32, 32, 32]},
     'field "moe_intermediate_size" must be an integer for Qwen3MoE, got a list'),
])
def test_new_family_configs_that_do_not_fit_are_named(from_golden, tmp_path, name, edit, words):
    cfg = copy_case(from_golden, name, tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, **edit)))
    msg = refused(tmp_path)
    assert words in msg and "\n" not in msg


def test_phimoe_hub_config_spelling(from_golden, golden, tmp_path):
    """Phi-3.5-MoE's own config.json: architectures PhiMoEForCausalLM, rope_theta at the top level
    and the longrope set (with its mscales) as rope_scaling with "type"; the same model."""
    cfg = copy_case(from_golden, "phimoe-longrope", tmp_path)
    rp = dict(cfg.pop("rope_parameters"))
    rope_theta = rp.pop("rope_theta")
    rp["type"] = rp.pop("rope_type")
    cfg.update(architectures=["PhiMoEForCausalLM"], rope_theta=rope_theta, rope_scaling=rp)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    g = golden["cases"]["phimoe-longrope"]
    with load(tmp_path, weight_format="bf16") as m:
        assert m.info["family"] == "PhiMoE"
        assert m.info["features"] == F.EXPECTED_FEATURES["phimoe-longrope"][1]
        got = m.logits(g["sequence"])
    assert rel_err(got[g["logit_rows"]], np.asarray(g["logits"], np.float64)) < 1e-3


def test_phimoe_mscale_switches_past_the_original_length(from_golden, golden, tmp_path):
    """PhiMoE's cos / sin scale is short_mscale for a pass within original_max_position_embeddings
    (48 here) and long_mscale past it: the 96-token pass with long_mscale set to short_mscale's
    value differs from the golden one, a 40-token pass does not."""
    cfg = copy_case(from_golden, "phimoe-longrope", tmp_path)
    g = golden["cases"]["phimoe-longrope"]
    seq = g["sequence"]
    _, w = from_golden("phimoe-longrope")
    cfg["rope_parameters"] = dict(cfg["rope_parameters"], long_mscale=cfg["rope_parameters"]["short_mscale"])
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with load(tmp_path, weight_format="bf16") as m:
        same_scale = m.logits(seq)
        short = m.logits(seq[:40])
    with load(from_golden("phimoe-longrope")[0], weight_format="bf16") as m:
        golden_short = m.logits(seq[:40])
        golden_full = m.logits(seq)
    np.testing.assert_array_equal(short, golden_short)
    assert rel_err(same_scale, golden_full) > 1e-2
    ref = R.reference_logits(F.unfused(w, cfg), F.tiny_config(cfg), seq, F.layer_windows(cfg), None,
                             **F.reference_extras(cfg))
    assert rel_err(same_scale, ref) < 1e-5


@pytest.mark.parametrize("name", ["glm4-moe", "deepseek-v3", "hy-v3"])
def test_mtp_layers_after_the_model_are_left_out(from_golden, golden, tmp_path, name):
    """GLM-4.5's and DeepSeek-V3's files hold their multi-token-prediction layer as
    model.layers.<num_hidden_layers> (num_nextn_predict_layers of them; their config classes'
    default 1): left out, the logits those of the model's own layers. A layer past them is refused.
    (Hy3's files likewise: transformers ignores their model.layers.80.)"""
    cfg = copy_case(from_golden, name, tmp_path)
    _, w = from_golden(name)
    ck = F.to_checkpoint(w, cfg)
    extra = {k.replace("model.layers.2.", "model.layers.3."): v for k, v in ck.items() if k.startswith("model.layers.2.")}
    extra["model.layers.3.eh_proj.weight"] = np.zeros((64, 128), np.float32)
    R.write_safetensors(tmp_path / "model.safetensors", {**ck, **extra}, "BF16")
    g = golden["cases"][name]
    with load(tmp_path, weight_format="bf16") as m:
        assert (m.logits(g["sequence"]).argmax(-1) == np.asarray(g["argmax"])).all()
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, num_nextn_predict_layers=0)))
    assert f"unexpected {len(extra)} tensors: model.layers.3." in refused(tmp_path)


@pytest.mark.parametrize("name", ["exaone-moe", "mellum"])
def test_exaone_moe_mtp_module_is_left_out(from_golden, golden, tmp_path, name):
    """K-EXAONE's and Mellum's files hold a multi-token-prediction module under mtp.* (transformers
    ignores it): left out, the logits those of the model."""
    cfg = copy_case(from_golden, name, tmp_path)
    _, w = from_golden(name)
    ck = F.to_checkpoint(w, cfg)
    extra = {"mtp.layers.0.eh_proj.weight": np.zeros((64, 128), np.float32), "mtp.norm.weight": np.ones(64, np.float32)}
    R.write_safetensors(tmp_path / "model.safetensors", {**ck, **extra}, "BF16")
    g = golden["cases"][name]
    with load(tmp_path, weight_format="bf16") as m:
        assert (m.logits(g["sequence"]).argmax(-1) == np.asarray(g["argmax"])).all()


def test_flint_config_class_defaults_and_sink_names(from_golden, golden, tmp_path):
    """A Flint config.json without layer_types, mlp_only_layers (or it null) or norm_topk_prob:
    FlintConfig's defaults (full when l < 2, l % 4 == 1 or the last; layers 0 and 1 dense;
    renormalized top k), the same model as the case that writes them out. Its files name the sinks
    self_attn.softmax_offset (transformers' sinks in memory): files under the in-memory name are
    refused naming the tensors."""
    cfg = copy_case(from_golden, "flint", tmp_path)
    for k in ("layer_types", "mlp_only_layers", "norm_topk_prob"):
        del cfg[k]
    g = golden["cases"]["flint"]
    for edit in ({}, {"mlp_only_layers": None}):
        (tmp_path / "config.json").write_text(json.dumps(dict(cfg, **edit)))
        with load(tmp_path, weight_format="bf16") as m:
            assert m.info["features"] == F.EXPECTED_FEATURES["flint"][1]
            assert (m.logits(g["sequence"]).argmax(-1) == np.asarray(g["argmax"])).all()
    _, w = from_golden("flint")
    ck = {k.replace(".self_attn.softmax_offset", ".self_attn.sinks"): v for k, v in F.to_checkpoint(w, cfg).items()}
    R.write_safetensors(tmp_path / "model.safetensors", ck, "BF16")
    msg = refused(tmp_path)
    assert "missing 4 tensors: model.layers.{0..3}.self_attn.softmax_offset" in msg
    assert "unexpected 4 tensors: model.layers.{0..3}.self_attn.sinks" in msg


def test_mellum_config_class_defaults(from_golden, golden, tmp_path):
    """A Mellum config.json without layer_types, mlp_layer_types, rope_parameters or norm_topk_prob:
    MellumConfig's defaults (every layer full and sparse, bases 500000 / 10000, renormalized top k),
    the same model as the case that writes them out; norm_topk_prob false changes it."""
    cfg = copy_case(from_golden, "mellum", tmp_path)
    for k in ("layer_types", "mlp_layer_types", "rope_parameters", "norm_topk_prob"):
        del cfg[k]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    g = golden["cases"]["mellum"]
    with load(tmp_path, weight_format="bf16") as m:
        assert m.info["features"] == F.EXPECTED_FEATURES["mellum"][1]
        assert (m.logits(g["sequence"]).argmax(-1) == np.asarray(g["argmax"])).all()
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, norm_topk_prob=False)))
    with load(tmp_path, weight_format="bf16") as m:
        assert "norm-topk" not in m.info["features"]


def test_dots1_without_layer_types_slides_from_max_window_layers(from_golden, tmp_path):
    """Dots1Config without layer_types: layers from max_window_layers slide when sliding_window
    is not null (no use_sliding_window, unlike Qwen's); its default 62 leaves small models full."""
    cfg = copy_case(from_golden, "dots1", tmp_path)
    del cfg["layer_types"]
    for edit, want in [({}, "sliding-window 6 (layer 2)"), ({"max_window_layers": 1}, "sliding-window 6 (layers 1..2)"),
                       ({"max_window_layers": None}, None), ({"sliding_window": None}, None)]:
        (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in dict(cfg, **edit).items() if v is not None}))
        with load(tmp_path, weight_format="bf16") as m:
            feats = m.info["features"]
        assert (want in feats) if want else "sliding-window" not in feats, (edit, feats)


def test_minimax_m2_legacy_rotary_dim(from_golden, golden, tmp_path):
    """MiniMax-M2's released config.json says its rotated dims as rotary_dim (MiniMaxM2Config reads
    it as partial_rotary_factor = rotary_dim / head_dim): the same logits as the case's factor;
    without either every dim rotates, as transformers does."""
    cfg = copy_case(from_golden, "minimax-m2", tmp_path)
    g = golden["cases"]["minimax-m2"]
    rope = {k: v for k, v in cfg["rope_parameters"].items() if k != "partial_rotary_factor"}
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, rope_parameters=rope, rotary_dim=8)))
    with load(tmp_path, weight_format="bf16") as m:
        assert "rotary-dim 8" in m.info["features"]
        assert (m.logits(g["sequence"]).argmax(-1) == np.asarray(g["argmax"])).all()
    del cfg["rotary_dim"]
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, rope_parameters=rope)))
    with load(tmp_path, weight_format="bf16") as m:
        assert not any(f.startswith("rotary-dim") for f in m.info["features"])
        assert (m.logits(g["sequence"]).argmax(-1) != np.asarray(g["argmax"])).any()


def test_hunyuan_moe_fields_as_numbers_or_lists_load_alike(from_golden, golden, tmp_path):
    """HunYuanMoEV1Config's num_experts, moe_topk, num_shared_expert and moe_intermediate_size as
    one number or one per layer (Hunyuan-A13B's config.json lists them; a list longer than the
    layers is read as transformers reads it, entry l for layer l): the same logits. Without
    moe_topk, the config class's 1 expert per token."""
    cfg = copy_case(from_golden, "hunyuan-moe-lists", tmp_path)
    g = golden["cases"]["hunyuan-moe-lists"]
    seq = g["sequence"][:24]
    with load(tmp_path, weight_format="bf16") as m:
        want = m.logits(seq)
    for edit in [dict(moe_topk=3, num_shared_expert=1, moe_intermediate_size=96),
                 dict(num_experts=[4, 4, 4, 4], moe_topk=[3, 3, 3, 3, 3]),
                 {k: None for k in ("num_shared_expert", "moe_intermediate_size", "use_mixed_mlp_moe", "use_cla",
                                    "moe_layer_num_skipped")}]:
        (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in dict(cfg, **edit).items() if v is not None}))
        with load(tmp_path, weight_format="bf16") as m:
            assert "moe 4 experts top-3" in m.info["features"], edit
            np.testing.assert_array_equal(m.logits(seq), want, err_msg=str(edit))
    del cfg["moe_topk"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with load(tmp_path, weight_format="bf16") as m:
        assert "moe 4 experts top-1" in m.info["features"]
        assert np.abs(m.logits(seq) - want).max() > 0.01  # (one expert a token, not three)


def test_opt_as_the_hubs_files_hold_it(from_golden, golden, tmp_path):
    """facebook/opt-*'s files name the decoder without "model." (decoder.embed_tokens.weight,
    decoder.layers.0...): the same logits as the case, whose positions read rows pos + 2."""
    cfg = copy_case(from_golden, "opt", tmp_path)
    _, w = from_golden("opt")
    ck = {k[len("model."):]: v for k, v in F.to_checkpoint(w, cfg).items()}
    R.write_safetensors(tmp_path / "model.safetensors", ck, "F32")
    seq = golden["cases"]["opt"]["sequence"][:16]
    with load(from_golden("opt")[0], weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        np.testing.assert_array_equal(b.logits(seq), a.logits(seq))
        assert b.info["max_seq_len"] == 256


def test_learned_positions_bound_the_context(from_golden):
    """GPT-2's positions end with its wpe table (n_positions, 256 here): a longer max_seq_len is
    refused naming both; the full table's last position still computes (one step of decode at
    position 255 equals the prefill's last row)."""
    folder, _ = from_golden("gpt2")
    with pytest.raises(ValueError) as e:
        load(folder, max_seq_len=257)
    assert "max_seq_len 257 is more than the 256 learned positions of GPT2 (transformer.wpe.weight" in str(e.value)
    seq = [(7 * i) % 250 for i in range(256)]
    with load(folder, weight_format="bf16") as m:
        full = m.logits(seq)
    with load(folder, weight_format="bf16", max_seq_len=256) as m:
        s = _model.Session(m)
        s.prefill(seq[:-1])
        _, last = s.decode(seq[-1], want_logits=True)
        np.testing.assert_allclose(last, full[-1], rtol=0, atol=1e-4 * np.abs(full[-1]).max())


def test_bloom_as_the_hubs_files_hold_it_and_alibi_past_the_golden_length(from_golden, golden, tmp_path):
    """bigscience/bloom-*'s files name the base model's tensors without "transformer."
    (word_embeddings.weight, h.0...): the same logits. ALiBi over 300 positions (several key
    blocks, decode split across threads) against the float64 reference, prefill and decode."""
    cfg = copy_case(from_golden, "bloom", tmp_path)
    _, w = from_golden("bloom")
    ck = {k[len("transformer."):]: v for k, v in F.to_checkpoint(w, cfg).items()}
    R.write_safetensors(tmp_path / "model.safetensors", ck, "F32")
    seq = [(11 * i + 3) % 256 for i in range(300)]
    ref = R.reference_logits(F.unfused(w, cfg), F.tiny_config(cfg), seq, F.layer_windows(cfg), None,
                             **F.reference_extras(cfg))
    # (ALiBi has no position table: a context past the config's max_position_embeddings, 256 here)
    with load(from_golden("bloom")[0], weight_format="bf16") as a, \
            load(tmp_path, weight_format="bf16", max_seq_len=300) as b:
        full = b.logits(seq)
        np.testing.assert_array_equal(full[:16], a.logits(seq[:16]))
        assert rel_err(full, ref) < 1e-5
        with b.new_session() as s:
            s.prefill(seq[:-3])
            rows = np.stack([s.decode(t, want_logits=True)[1] for t in seq[-3:]])
        assert rel_err(rows, ref[-3:]) < 1e-5


@pytest.mark.parametrize("name, field", [("gpt2", "hidden_act"), ("falcon-7b", "hidden_act"), ("bloom", "hidden_act"),
                                         ("mpt", "hidden_act"), ("mpt", "activation_function")])
def test_activation_fields_their_config_classes_do_not_read_are_ignored(from_golden, golden, tmp_path, name, field):
    """GPT2Config reads activation_function, FalconConfig activation, BloomConfig and MptConfig
    none (a fixed GELU): another family's field in their config.json changes nothing, as in
    transformers."""
    cfg = copy_case(from_golden, name, tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, **{field: "relu"})))
    seq = golden["cases"][name]["sequence"][:16]
    with load(from_golden(name)[0], weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        np.testing.assert_array_equal(b.logits(seq), a.logits(seq))


def test_olmo_file_with_norm_weights_is_named(from_golden, tmp_path):
    """OLMo 1's LayerNorms have no weights: a file that holds some (another conversion's) is
    refused naming them, not run with or without them."""
    cfg = copy_case(from_golden, "olmo", tmp_path)
    _, w = from_golden("olmo")
    ck = F.to_checkpoint(w, cfg)
    ck["model.layers.0.input_layernorm.weight"] = np.ones(cfg["hidden_size"], np.float32)
    R.write_safetensors(tmp_path / "model.safetensors", ck, "BF16")
    msg = refused(tmp_path)
    assert "unexpected 1 tensors: model.layers.0.input_layernorm.weight" in msg and "\n" not in msg


def test_lfm2_convolution_inputs_follow_the_session(from_golden, golden):
    """LFM2's convolution layers keep B·x per position beside the KV cache (its kernel of 4 reads
    the last three): decoding token by token past the first allocation (256 positions), truncating,
    copying a prefix and verifying a draft give the logits one prefill of the same tokens gives."""
    folder, _ = from_golden("lfm2-bias")
    rng = np.random.default_rng(7)
    seq = [int(t) for t in rng.integers(0, 256, 300)]
    with load(folder, weight_format="bf16", max_seq_len=400) as m:
        # per position: the one attending layer's K and V (2 KV heads of 16 f32), the three
        # convolution layers' B·x (64 f32 each); pyvt.engine's prefix cache sizes by it
        assert m.info["cache_bytes_per_token"] == 1 * 2 * 2 * 16 * 4 + 3 * 64 * 4
        from pyvt.engine import kv_bytes_per_token
        assert kv_bytes_per_token(m.info) == m.info["cache_bytes_per_token"]
        with m.new_session() as s:
            _, full = s.prefill(seq, logits="all")
        with m.new_session() as a, m.new_session() as b:
            a.prefill(seq[:100])
            rows = [a.decode(t, want_logits=True)[1] for t in seq[100:]]
            assert rel_err(np.stack(rows), full[100:]) < 1e-4  # (grown at 256: the inputs held moved)
            a.truncate(50)
            _, again = a.prefill(seq[50:80], logits="all")
            assert rel_err(again, full[50:80]) < 1e-4
            b.copy_prefix(a, 40)
            _, copied = b.prefill(seq[40:60], logits="all")
            assert rel_err(copied, full[40:60]) < 1e-4
            # A draft wrong from its third token: the session keeps the confirmed inputs only.
            b.truncate(20)
            want = [int(t) for t in full[19:26].argmax(-1)]
            picked = b.verify([seq[20]] + want[1:3] + [(want[3] + 1) % 256] + want[4:])
            assert b.length == 20 + len(picked)
            _, row = b.decode(picked[-1], want_logits=True)
            with m.new_session() as c:
                _, ref = c.prefill(seq[:21] + picked, logits="last")
            assert rel_err(row, ref) < 1e-4


def test_lfm2_reads_full_attn_idxs_tie_embedding_and_norm_eps(from_golden, golden, tmp_path):
    """Without layer_types the layers not in full_attn_idxs convolve; tie_embedding wins over
    tie_word_embeddings and norm_eps over rms_norm_eps, as Lfm2Config reads them."""
    cfg = copy_case(from_golden, "lfm2", tmp_path)
    g = golden["cases"]["lfm2"]
    cfg.pop("layer_types")
    cfg.update(full_attn_idxs=[1], tie_embedding=True, tie_word_embeddings=False, rms_norm_eps=0.5)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with load(tmp_path, weight_format="bf16") as m:
        assert "short-conv 3 (layers 0,2)" in m.info["features"]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, tie_embedding=False)))
    assert "missing 1 tensors: lm_head.weight" in refused(tmp_path)


def test_lfm2_convolution_input_beyond_f16_is_refused(from_golden, golden, tmp_path):
    """B·x beyond f16's range cannot enter the f16 cache beside an f16 KV cache: refused, naming the
    layer, the position and the f32 cache that holds it."""
    cfg = copy_case(from_golden, "lfm2", tmp_path)
    _, w = from_golden("lfm2")
    ck = F.to_checkpoint(w, cfg)
    ck["model.layers.0.conv.in_proj.weight"] = ck["model.layers.0.conv.in_proj.weight"] * 4096.0
    R.write_safetensors(tmp_path / "model.safetensors", ck, "BF16")
    seq = golden["cases"]["lfm2"]["sequence"][:8]
    with load(tmp_path, weight_format="bf16", kv_cache="f16") as m, m.new_session() as s:
        with pytest.raises(ValueError) as e:
            s.prefill(seq)
    assert "layer 0: the convolution input B·x of the token at position 0 is beyond the range of the f16 cache" \
        in str(e.value)
    with load(tmp_path, weight_format="bf16") as m:  # (f32)
        assert np.isfinite(m.logits(seq)).all()


def test_solar_open_keeps_experts_in_every_layer(from_golden, golden, tmp_path):
    """SolarOpenConfig has no first_k_dense_replace (GLM-4 MoE's): one in config.json is not read,
    and every layer keeps its experts, as transformers builds it."""
    cfg = copy_case(from_golden, "solar-open", tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, first_k_dense_replace=1)))
    g = golden["cases"]["solar-open"]
    with load(tmp_path, weight_format="bf16") as m:
        assert "moe 8 experts top-2" in m.info["features"]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))


def test_cwm_without_layer_types_slides_all_but_every_fourth(from_golden, golden, tmp_path):
    """CwmConfig without layer_types: layer i attends fully when i % 4 == 0 and slides otherwise —
    the same model as its saved layer_types."""
    cfg = copy_case(from_golden, "cwm", tmp_path)
    assert cfg["layer_types"] == ["full_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                                  "full_attention"]
    cfg.pop("layer_types")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    g = golden["cases"]["cwm"]
    with load(tmp_path, weight_format="bf16") as m:
        assert "sliding-window 6 (layers 1..3)" in m.info["features"]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))


def test_jais2_biases_are_on_when_left_out(from_golden, golden, tmp_path):
    """Jais2Config's attention_bias and mlp_bias default to true: a config.json without them is
    the model with every bias, and a bias-free checkpoint under such a config is refused naming
    the missing tensors."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cfg = copy_case(from_golden, "jais2", tmp_path / "a")
    (tmp_path / "a" / "config.json").write_text(json.dumps(
        {k: v for k, v in cfg.items() if k not in ("attention_bias", "mlp_bias")}))
    g = golden["cases"]["jais2"]
    with load(tmp_path / "a", weight_format="bf16") as m:
        assert m.info["features"] == F.EXPECTED_FEATURES["jais2"][1]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))
    cfg = copy_case(from_golden, "jais2-nobias-tied", tmp_path / "b")
    (tmp_path / "b" / "config.json").write_text(json.dumps(
        {k: v for k, v in cfg.items() if k not in ("attention_bias", "mlp_bias")}))
    msg = refused(tmp_path / "b")
    assert "missing 12 tensors: model.layers.{0..1}.mlp.down_proj.bias" in msg and "\n" not in msg


def test_granite_swa_defaults_and_sinks(from_golden, golden, tmp_path):
    """GraniteSWAConfig without layer_types and layer_rope_theta: every 4th layer from 0 attends
    fully, the others slide, each rotating with rope_theta — the same model as its saved lists. A
    file without the attention sinks is refused naming them."""
    cfg = copy_case(from_golden, "granite-swa", tmp_path)
    assert cfg["layer_types"] == ["full_attention"] + ["sliding_attention"] * 3
    assert cfg["layer_rope_theta"] == [cfg["rope_parameters"]["rope_theta"]] * 4
    (tmp_path / "config.json").write_text(json.dumps(
        {k: v for k, v in cfg.items() if k not in ("layer_types", "layer_rope_theta")}))
    g = golden["cases"]["granite-swa"]
    with load(tmp_path, weight_format="bf16") as m:
        assert m.info["features"] == F.EXPECTED_FEATURES["granite-swa"][1]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))
    _, w = from_golden("granite-swa")
    ck = {k: v for k, v in F.to_checkpoint(w, cfg).items() if not k.endswith("self_attn.sinks")}
    R.write_safetensors(tmp_path / "model.safetensors", ck, "BF16")
    msg = refused(tmp_path)
    assert "missing 4 tensors: model.layers.{0..3}.self_attn.sinks" in msg and "\n" not in msg


def test_hyperclovax_defaults(from_golden, golden, tmp_path):
    """HyperCLOVAXConfig without attention_multiplier scores by 1/sqrt(head_dim) (what its config
    class writes as the field: the same logits), and without use_post_norm keeps the post norms."""
    cfg = copy_case(from_golden, "hyperclovax", tmp_path)
    assert cfg["attention_multiplier"] == cfg["head_dim"] ** -0.5 and cfg["use_post_norm"] is True
    g = golden["cases"]["hyperclovax"]
    with load(tmp_path, weight_format="bf16") as m:
        want = m.logits(g["sequence"])
    (tmp_path / "config.json").write_text(json.dumps(
        {k: v for k, v in cfg.items() if k not in ("attention_multiplier", "use_post_norm")}))
    with load(tmp_path, weight_format="bf16") as m:
        assert "sandwich-norms" in m.info["features"] and not any(
            f.startswith("attention-multiplier") for f in m.info["features"])
        np.testing.assert_array_equal(m.logits(g["sequence"]), want)


def test_clip_qkv_is_read_only_where_the_config_class_has_it(from_golden, golden, tmp_path):
    """A top-level clip_qkv clamps q, k and v for OLMo and OLMoE, whose config classes read it;
    another family's class has no such field and transformers ignores it: the same model as
    without it (it had clamped them here, silently another model)."""
    cfg = copy_case(from_golden, "llama-bias-hd24", tmp_path)
    g = golden["cases"]["llama-bias-hd24"]
    with load(tmp_path, weight_format="bf16") as m:
        want = m.logits(g["sequence"])
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, clip_qkv=0.01)))
    with load(tmp_path, weight_format="bf16") as m:
        assert not any(f.startswith("clip-qkv") for f in m.info["features"])
        np.testing.assert_array_equal(m.logits(g["sequence"]), want)


def test_afmoe_reads_only_its_config_class_fields(from_golden, golden, tmp_path):
    """AfmoeConfig has no n_group / topk_group, routed_scaling_factor, norm_topk_prob,
    sliding_window_pattern or use_attention_gate (DeepSeek-V3's, LFM3's, Gemma's names; released
    files may carry some of them): they are not read, and the case computes as transformers does
    (every choice over all experts, the top weights renormalized, times route_scale)."""
    cfg = copy_case(from_golden, "afmoe-mup", tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(
        cfg, n_group=2, topk_group=1, routed_scaling_factor=4.0, norm_topk_prob=False, use_attention_gate=False)))
    g = golden["cases"]["afmoe-mup"]
    with load(tmp_path, weight_format="bf16") as m:
        assert m.info["features"] == F.EXPECTED_FEATURES["afmoe-mup"][1]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))
    # (no layer_types: global_attn_every_n_layers decides, not sliding_window_pattern)
    cfg = copy_case(from_golden, "afmoe", tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, layer_types=None, sliding_window_pattern=1)))
    g = golden["cases"]["afmoe"]
    with load(tmp_path, weight_format="bf16") as m:
        assert m.info["features"] == F.EXPECTED_FEATURES["afmoe"][1]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))


def test_sarvam_moe_config_as_the_hubs(from_golden, golden, tmp_path):
    """sarvamai/sarvam-30b's config.json says SarvamMoEForCausalLM and the names of its remote
    code (SarvamMoEConfig's attribute_map: use_qkv_bias, num_experts, num_shared_experts), and may
    leave out use_qk_norm (true): the same model as transformers' save of it. Beside
    attention_bias / n_routed_experts / n_shared_experts, those names win, as in transformers."""
    folder, _ = from_golden("sarvam-moe")
    cfg = copy_case(from_golden, "sarvam-moe", tmp_path)
    for k in ("attention_bias", "n_routed_experts", "n_shared_experts", "use_qk_norm"):
        del cfg[k]
    cfg.update(architectures=["SarvamMoEForCausalLM"], use_qkv_bias=True, num_experts=8, num_shared_experts=1,
               use_bias=False)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    g = golden["cases"]["sarvam-moe"]
    with load(folder, weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        assert b.info["family"] == "SarvamMoE" and b.info["features"] == F.EXPECTED_FEATURES["sarvam-moe"][1]
        np.testing.assert_array_equal(a.logits(g["sequence"]), b.logits(g["sequence"]))
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, attention_bias=False, n_routed_experts=4,
                                                          n_shared_experts=2)))
    with load(tmp_path, weight_format="bf16") as b:
        assert b.info["features"] == F.EXPECTED_FEATURES["sarvam-moe"][1]


def test_sarvam_mla_config_as_the_hubs(from_golden, golden, tmp_path):
    """sarvamai/sarvam-105b's config.json says SarvamMLAForCausalLM, rope_scaling {"type":
    "deepseek_yarn", ...} beside a top-level rope_theta, head_dim kv_lora_rank + qk_rope_head_dim
    and q_head_dim (derived: not read), num_experts / num_shared_experts, and leaves out what
    SarvamMLAConfig fills in (q_lora_rank null, n_group 1, topk_group 1, first_k_dense_replace 1,
    rope_interleave true): the same model as transformers' save of it."""
    folder, _ = from_golden("sarvam-mla")
    cfg = copy_case(from_golden, "sarvam-mla", tmp_path)
    rp = dict(cfg.pop("rope_parameters"))
    assert rp.pop("rope_type") == "yarn" and cfg["q_lora_rank"] is None
    for k in ("q_lora_rank", "n_group", "topk_group", "first_k_dense_replace", "rope_interleave",
              "num_nextn_predict_layers"):
        del cfg[k]
    cfg.update(architectures=["SarvamMLAForCausalLM"], rope_theta=rp.pop("rope_theta"),
               rope_scaling=dict(rp, type="deepseek_yarn"), num_experts=cfg.pop("n_routed_experts"),
               num_shared_experts=cfg.pop("n_shared_experts"), head_dim=cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"],
               q_head_dim=cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"])
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    g = golden["cases"]["sarvam-mla"]
    with load(folder, weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        assert b.info["family"] == "SarvamMLA" and b.info["features"] == F.EXPECTED_FEATURES["sarvam-mla"][1]
        np.testing.assert_array_equal(a.logits(g["sequence"]), b.logits(g["sequence"]))


def test_sarvam_mtp_layers_by_num_mtp_layers(from_golden, golden, tmp_path):
    """SarvamMLAConfig has no MTP layers unless num_mtp_layers (its released name, winning over
    num_nextn_predict_layers) says so: a layer after the model's is then left out, else refused."""
    cfg = copy_case(from_golden, "sarvam-mla", tmp_path)
    _, w = from_golden("sarvam-mla")
    ck = F.to_checkpoint(w, cfg)
    extra = {k.replace("model.layers.2.", "model.layers.3."): v for k, v in ck.items() if k.startswith("model.layers.2.")}
    R.write_safetensors(tmp_path / "model.safetensors", {**ck, **extra}, "BF16")
    assert f"unexpected {len(extra)} tensors: model.layers.3." in refused(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, num_mtp_layers=1, num_nextn_predict_layers=0)))
    g = golden["cases"]["sarvam-mla"]
    with load(tmp_path, weight_format="bf16") as m:
        assert (m.logits(g["sequence"]).argmax(-1) == np.asarray(g["argmax"])).all()
    (tmp_path / "config.json").write_text(json.dumps(dict(cfg, num_mtp_layers=0, num_nextn_predict_layers=1)))
    assert f"unexpected {len(extra)} tensors: model.layers.3." in refused(tmp_path)


def test_kolibri1_reads_only_its_config_class_fields(from_golden, golden, tmp_path):
    """Kolibri1Config has no n_group / topk_group, routed_scaling_factor, first_k_dense_replace or
    sliding_window_pattern (DeepSeek-V3's, EXAONE 4's names): they are not read, and the case
    computes as transformers does (every layer's experts chosen over all of them, unscaled). Without
    layer_types, every 5th layer is global (Kolibri1Config's default)."""
    cfg = copy_case(from_golden, "kolibri1", tmp_path)
    assert cfg["layer_types"] == ["sliding_attention"] * 4 + ["full_attention"]
    (tmp_path / "config.json").write_text(json.dumps(dict(
        cfg, n_group=2, topk_group=1, routed_scaling_factor=2.5, first_k_dense_replace=1, sliding_window_pattern=2,
        layer_types=None)))
    g = golden["cases"]["kolibri1"]
    with load(tmp_path, weight_format="bf16") as m:
        assert m.info["features"] == F.EXPECTED_FEATURES["kolibri1"][1]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))


def test_sarvam_moe_under_transformers_own_names(from_golden, golden, tmp_path):
    """save_pretrained(save_original_format=False) writes Sarvam-MoE under transformers' own names
    (embed_tokens, q_proj / k_proj / v_proj with their biases, o_proj, q_norm / k_norm,
    e_score_correction_bias, the experts stacked: gate_up_proj [E, 2·I, H], down_proj [E, H, I]),
    which are the in-memory weights' names: the same model as the Hub's names give."""
    folder, w = from_golden("sarvam-moe")
    copy_case(from_golden, "sarvam-moe", tmp_path)
    assert w["model.layers.1.mlp.experts.gate_up_proj"].shape == (8, 64, 64)
    R.write_safetensors(tmp_path / "model.safetensors", w, "BF16")
    seq = golden["cases"]["sarvam-moe"]["sequence"]
    with load(folder, weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        assert b.info["family"] == "SarvamMoE"
        assert b.info["features"] == [f for f in F.EXPECTED_FEATURES["sarvam-moe"][1] if f != "fused-qkv"]
        np.testing.assert_array_equal(a.logits(seq), b.logits(seq))
    del w["model.layers.2.mlp.gate.e_score_correction_bias"]  # (a half-converted file: named as such)
    R.write_safetensors(tmp_path / "model.safetensors", w, "BF16")
    assert "not a SarvamMoE checkpoint this engine can run" in refused(tmp_path)
    assert "missing 1 tensors: model.layers.2.mlp.gate.e_score_correction_bias" in refused(tmp_path)


def test_cohere2_moe_default_layer_types_follow_first_k_dense_replace(from_golden, golden, tmp_path):
    """Cohere2MoeConfig fills in layer_types and mlp_layer_types from first_k_dense_replace (a
    released config.json's field, which save_pretrained replaces by the two lists): the dense
    prefix counted with prefix_dense_sliding_window_pattern, the rest with sliding_window_pattern
    from the first layer after it. Without the lists, the same model and logits."""
    for name in ("cohere2-moe", "cohere2-moe-sigmoid"):
        (tmp_path / name).mkdir()
        cfg = copy_case(from_golden, name, tmp_path / name)
        k = cfg["mlp_layer_types"].count("dense")
        cfg = {key: v for key, v in cfg.items() if key not in ("layer_types", "mlp_layer_types")}
        (tmp_path / name / "config.json").write_text(json.dumps(dict(cfg, first_k_dense_replace=k)))
        g = golden["cases"][name]
        with load(tmp_path / name, weight_format="bf16") as m:
            assert m.info["features"] == F.EXPECTED_FEATURES[name][1]
            np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))
            assert rel_err(m.logits(g["sequence"])[g["logit_rows"]], np.asarray(g["logits"], np.float64)) < 1e-3


def test_cohere2_moe_dense_layers_rotate_only_with_prefix_pattern_1(from_golden, golden, tmp_path):
    """Cohere2MoeAttention's force_rope: with prefix_dense_sliding_window_pattern 1 a dense global
    layer rotates (cohere2-moe's layer 0); with another pattern it attends without RoPE, as
    Cohere 2's global layers (against the float64 reference of that model)."""
    cfg = copy_case(from_golden, "cohere2-moe", tmp_path)
    cfg["prefix_dense_sliding_window_pattern"] = 3
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    _, w = from_golden("cohere2-moe")
    seq = golden["cases"]["cohere2-moe"]["sequence"][:24]
    assert F.nope_layers(cfg) == [True, False, True, False]
    ref = R.reference_logits(F.unfused(w, cfg), F.tiny_config(cfg), seq, F.layer_windows(cfg), None,
                             **F.reference_extras(cfg))
    with load(tmp_path, weight_format="bf16") as m:
        assert "no-rope layers 0,2" in m.info["features"]
        got = m.logits(seq)
    assert rel_err(got, ref) < 1e-5
    with load(from_golden("cohere2-moe")[0], weight_format="bf16") as m:
        assert rel_err(got, m.logits(seq)) > 1e-2  # (layer 0's rotation: another model)


def test_hy_v3_reads_only_its_config_class_fields(from_golden, golden, tmp_path):
    """HYV3Config has no n_group / topk_group, routed_scaling_factor, norm_topk_prob or
    first_k_dense_replace (DeepSeek-V3's names): they are not read, and the case computes as
    transformers does (every choice over all experts, the top weights renormalized, times
    router_scaling_factor; the first layer dense without mlp_layer_types)."""
    cfg = copy_case(from_golden, "hy-v3", tmp_path)
    cfg.pop("mlp_layer_types")
    (tmp_path / "config.json").write_text(json.dumps(dict(
        cfg, n_group=2, topk_group=1, routed_scaling_factor=4.0, norm_topk_prob=False, first_k_dense_replace=2)))
    g = golden["cases"]["hy-v3"]
    with load(tmp_path, weight_format="bf16") as m:
        assert m.info["features"] == F.EXPECTED_FEATURES["hy-v3"][1]
        np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))


def test_axk1_files_without_a_correction_bias_and_with_dense_norms(from_golden, golden, tmp_path):
    """A.X-K1's released files route without e_score_correction_bias (transformers then keeps its
    zeros) and hold a post_mlp_layernorm in the dense layers too, which no layer uses: such files
    load, the same model as the bias at zero; a bias in only some MoE layers, or a MoE layer
    without its post_mlp_layernorm, is refused."""
    cfg = copy_case(from_golden, "axk1", tmp_path)
    _, w = from_golden("axk1")
    ck = F.to_checkpoint(w, cfg)
    assert "model.layers.1.mlp.gate.e_score_correction_bias" in ck
    zero = {k: (np.zeros_like(v) if k.endswith("e_score_correction_bias") else v) for k, v in ck.items()}
    R.write_safetensors(tmp_path / "model.safetensors", zero, "BF16")
    seq = golden["cases"]["axk1"]["sequence"][:24]
    with load(tmp_path, weight_format="bf16") as m:
        want = m.logits(seq)
    with load(from_golden("axk1")[0], weight_format="bf16") as m:
        assert rel_err(m.logits(seq), want) > 1e-3  # (the case's bias chooses other experts)
    hub = {k: v for k, v in ck.items() if not k.endswith("e_score_correction_bias")}
    hub["model.layers.0.post_mlp_layernorm.weight"] = np.full(64, 3.0, np.float32)  # (unused)
    R.write_safetensors(tmp_path / "model.safetensors", hub, "BF16")
    with load(tmp_path, weight_format="bf16") as m:
        np.testing.assert_array_equal(m.logits(seq), want)
    R.write_safetensors(tmp_path / "model.safetensors",
                        {k: v for k, v in ck.items() if k != "model.layers.2.mlp.gate.e_score_correction_bias"}, "BF16")
    msg = refused(tmp_path)
    assert "missing 1 tensor" in msg and "model.layers.2.mlp.gate.e_score_correction_bias" in msg and "\n" not in msg
    # (the MoE layers' own norm is required)
    R.write_safetensors(tmp_path / "model.safetensors",
                        {k: v for k, v in ck.items() if k != "model.layers.1.post_mlp_layernorm.weight"}, "BF16")
    msg = refused(tmp_path)
    assert "missing 1 tensor" in msg and "model.layers.1.post_mlp_layernorm.weight" in msg and "\n" not in msg


def test_axk1_default_layers_follow_first_k_dense_replace_and_moe_layer_freq(from_golden, golden, tmp_path):
    """AXK1Config fills in mlp_layer_types from first_k_dense_replace (1) and moe_layer_freq (1):
    layer l sparse when l >= first_k_dense_replace and l % moe_layer_freq == 0 (save_pretrained
    writes the list instead). Without the list, the same model."""
    for name, extra in (("axk1", {}), ("axk1-freq", {"first_k_dense_replace": 1, "moe_layer_freq": 2})):
        (tmp_path / name).mkdir()
        cfg = copy_case(from_golden, name, tmp_path / name)
        cfg.pop("mlp_layer_types")
        (tmp_path / name / "config.json").write_text(json.dumps(dict(cfg, **extra)))
        g = golden["cases"][name]
        with load(tmp_path / name, weight_format="bf16") as m:
            assert m.info["features"] == F.EXPECTED_FEATURES[name][1]
            np.testing.assert_array_equal(m.logits(g["sequence"]).argmax(-1), np.asarray(g["argmax"]))


@pytest.mark.parametrize("name", ["deepseek-v3", "minicpm3", "glm4-moe-lite"])
def test_mla_latent_norms_keep_their_own_eps(from_golden, tmp_path, name):
    """q_a_layernorm and kv_a_layernorm use 1e-6 whatever rms_norm_eps says (transformers builds
    them with its RMSNorm class's default; GLM-4.7-Flash and MiniCPM3 say 1e-5): with
    rms_norm_eps 0.05 the other norms take it and the latent ones do not, as in the float64
    reference; taking 0.05 there too moves the logits far past the tolerance."""
    cfg = copy_case(from_golden, name, tmp_path)
    cfg["rms_norm_eps"] = 0.05
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    _, w = from_golden(name)
    seq = F.PROMPT * 3
    with load(tmp_path, weight_format="bf16", kv_cache="f32") as m:
        got = m.logits(seq)
    ref = R.reference_logits(F.unfused(w, cfg), F.tiny_config(cfg), seq, F.layer_windows(cfg), None,
                             **F.reference_extras(cfg))
    assert rel_err(got, ref) < 1e-5


def test_exaone_hub_names_win_over_the_standard_ones(from_golden, golden, tmp_path):
    """ExaoneConfig's attribute_map makes num_layers, layer_norm_epsilon and activation_function its
    fields: beside them num_hidden_layers, rms_norm_eps and hidden_act are not read (transformers
    gives the aliases priority whatever the order), so conflicting standard names change nothing."""
    cfg = copy_case(from_golden, "exaone", tmp_path)
    assert {"num_layers", "layer_norm_epsilon", "activation_function"} <= set(cfg)
    cfg.update(num_hidden_layers=1, rms_norm_eps=0.5, hidden_act="gelu")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    g = golden["cases"]["exaone"]
    with load(from_golden("exaone")[0], weight_format="bf16") as a, load(tmp_path, weight_format="bf16") as b:
        assert b.info["num_layers"] == a.info["num_layers"] == cfg["num_layers"]
        np.testing.assert_array_equal(a.logits(g["sequence"]), b.logits(g["sequence"]))
