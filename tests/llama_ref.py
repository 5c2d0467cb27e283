"""An independent numpy float64 Llama reference and a writer of tiny random checkpoints.

Used by the model tests: the checkpoints are written here with numpy only (config.json +
SafeTensors, BF16 through a uint16 view, optional sharding with an index), and the
reference forward mirrors transformers' LlamaForCausalLM (RMSNorm, rotate_half RoPE incl.
llama3 / linear scaling, GQA attention, SwiGLU MLP, tied or untied lm_head), and with the
variants of the other families (biases, Qwen3's q/k norms, sliding windows) their
Mistral / Qwen2 / Qwen3 ForCausalLM.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

# ==========================================================================================
# Dtypes
# ==========================================================================================


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def round_to(a: np.ndarray, dtype: str) -> np.ndarray:
    """The values a checkpoint of `dtype` ("F32", "F16", "BF16") actually stores, as float32."""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "F32":
        return a.copy()
    if dtype == "F16":
        return a.astype(np.float16).astype(np.float32)
    if dtype == "BF16":
        return bf16_to_f32(bf16_bits(a))
    raise ValueError(dtype)


def tensor_bytes(a: np.ndarray, dtype: str) -> bytes:
    a = np.asarray(a, dtype=np.float32)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    if dtype == "BF16":
        return bf16_bits(a).astype("<u2").tobytes()
    raise ValueError(dtype)


# ==========================================================================================
# SafeTensors writer
# ==========================================================================================


def safetensors_bytes(tensors: dict[str, tuple[str, tuple[int, ...], bytes]],
                      metadata: dict[str, str] | None = None) -> bytes:
    """tensors: name -> (dtype, shape, raw bytes), in file order."""
    header: dict[str, Any] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    off = 0
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(raw for _, _, raw in tensors.values())


def write_safetensors(path: Path, arrays: dict[str, np.ndarray], dtype: str) -> None:
    tensors = {k: (dtype, tuple(v.shape), tensor_bytes(v, dtype)) for k, v in arrays.items()}
    Path(path).write_bytes(safetensors_bytes(tensors, {"format": "pt"}))


# ==========================================================================================
# Tiny configs and checkpoints
# ==========================================================================================


@dataclass
class TinyConfig:
    hidden: int = 64
    intermediate: int = 96
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    head_dim: int | None = None  # None: hidden // heads (and not written)
    vocab: int = 96
    max_pos: int = 256
    eps: float = 1e-5
    theta: float = 10000.0
    tie: bool = False
    rope_scaling: dict[str, Any] | None = None
    bos: int | None = 1
    eos: int | list[int] | None = 2
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def hd(self) -> int:
        return self.head_dim or self.hidden // self.heads

    def config_json(self) -> dict[str, Any]:
        c: dict[str, Any] = {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": self.hidden,
            "intermediate_size": self.intermediate,
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "vocab_size": self.vocab,
            "max_position_embeddings": self.max_pos,
            "rms_norm_eps": self.eps,
            "rope_theta": self.theta,
            "tie_word_embeddings": self.tie,
            "hidden_act": "silu",
            "attention_bias": False,
            "mlp_bias": False,
            "rope_scaling": self.rope_scaling,
            "torch_dtype": "float32",
        }
        if self.head_dim is not None:
            c["head_dim"] = self.head_dim
        if self.bos is not None:
            c["bos_token_id"] = self.bos
        if self.eos is not None:
            c["eos_token_id"] = self.eos
        c.update(self.extra)
        return c


def random_weights(cfg: TinyConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """float32 weights scaled so activations and logits are O(1) (distinct argmaxes)."""
    rng = np.random.default_rng(seed)
    H, I, V, hd = cfg.hidden, cfg.intermediate, cfg.vocab, cfg.hd

    def mat(rows: int, cols: int, gain: float = 1.0) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * gain / math.sqrt(cols)).astype(np.float32)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    w: dict[str, np.ndarray] = {"model.embed_tokens.weight": rng.standard_normal((V, H)).astype(np.float32)}
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        w[p + "self_attn.q_proj.weight"] = mat(cfg.heads * hd, H, 2.0)
        w[p + "self_attn.k_proj.weight"] = mat(cfg.kv_heads * hd, H, 2.0)
        w[p + "self_attn.v_proj.weight"] = mat(cfg.kv_heads * hd, H)
        w[p + "self_attn.o_proj.weight"] = mat(H, cfg.heads * hd, 0.5)
        w[p + "mlp.gate_proj.weight"] = mat(I, H)
        w[p + "mlp.up_proj.weight"] = mat(I, H)
        w[p + "mlp.down_proj.weight"] = mat(H, I, 0.5)
        w[p + "input_layernorm.weight"] = norm(H)
        w[p + "post_attention_layernorm.weight"] = norm(H)
    w["model.norm.weight"] = norm(H)
    if not cfg.tie:
        w["lm_head.weight"] = mat(V, H, 4.0)
    return w


def write_checkpoint(folder: Path, cfg: TinyConfig, *, dtype: str = "BF16", seed: int = 0,
                     shards: int = 1, config: bool = True, index: bool = True,
                     weights: dict[str, np.ndarray] | None = None,
                     generation_config: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
    """Writes config.json + model.safetensors (or `shards` files model-0000k-of-0000n with
    an index when `index`) into folder. Returns the weights as stored (rounded to dtype)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    w = weights if weights is not None else random_weights(cfg, seed)
    if config:
        (folder / "config.json").write_text(json.dumps(cfg.config_json(), indent=2))
    if generation_config is not None:
        (folder / "generation_config.json").write_text(json.dumps(generation_config))
    names = list(w)
    if shards <= 1:
        write_safetensors(folder / "model.safetensors", w, dtype)
    else:
        parts = np.array_split(np.arange(len(names)), shards)
        weight_map = {}
        for k, idx in enumerate(parts):
            fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
            write_safetensors(folder / fname, {names[i]: w[names[i]] for i in idx}, dtype)
            weight_map.update({names[i]: fname for i in idx})
        if index:
            (folder / "model.safetensors.index.json").write_text(
                json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}, indent=2))
    return {k: round_to(v, dtype) for k, v in w.items()}


# ==========================================================================================
# Reference forward (float64)
# ==========================================================================================


def rope_inv_freq(cfg: TinyConfig, seq_len: int = 0) -> np.ndarray:
    """As transformers computes it, in float32 (default, linear, llama3, yarn, longrope and
    dynamic rope types; longrope: the long factors when seq_len > original_max_position_embeddings;
    dynamic: a larger base when seq_len > max_position_embeddings)."""
    rs = cfg.rope_scaling or {}
    if rs.get("rope_type", rs.get("type")) == "dynamic":
        # _compute_dynamic_ntk_parameters: base' = base · ((factor · seq_len / M) − (factor − 1))
        # ** (dim / (dim − 2)); at __init__ (seq_len None: M) in Python floats, in a forward call
        # whose largest position + 1 is past M (dynamic_rope_update) with seq_len an int64 tensor:
        # float32 ops, the scalar power taken in double and rounded
        dim = int(cfg.hd * rs.get("partial_rotary_factor", 1.0))
        factor, m = rs["factor"], cfg.max_pos
        if seq_len > m:
            t = np.float32(np.float32(factor) * np.float32(seq_len))
            t = np.float32(t / np.float32(m))
            t = np.float32(t - np.float32(factor - 1))
            base = float(np.float32(np.float32(cfg.theta) * np.float32(float(t) ** (dim / (dim - 2)))))
        else:
            base = cfg.theta * ((factor * m / m) - (factor - 1)) ** (dim / (dim - 2))
        plain = replace(cfg, theta=base, rope_scaling=(
            {"rope_type": "default", "partial_rotary_factor": rs["partial_rotary_factor"]}
            if "partial_rotary_factor" in rs else None))
        return rope_inv_freq(plain)
    if rs.get("rope_type") == "proportional":  # every dim; int(factor · hd // 2) pairs turn, the rest at 0
        angles = int(rs.get("partial_rotary_factor", 1.0) * cfg.hd // 2)
        inv = np.zeros(cfg.hd // 2, np.float32)
        pf = np.float32(cfg.theta) ** (np.arange(0, 2 * angles, 2, dtype=np.int64).astype(np.float32) / np.float32(cfg.hd))
        inv[:angles] = (np.float32(1.0) / pf.astype(np.float32)).astype(np.float32)
        return (inv / np.float32(rs.get("factor", 1.0))).astype(np.float32)
    dim = int(cfg.hd * rs.get("partial_rotary_factor", 1.0))  # the rotary dims
    pos_freqs = (np.float32(cfg.theta) ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / np.float32(dim)))
    pos_freqs = pos_freqs.astype(np.float32)
    inv = (np.float32(1.0) / pos_freqs).astype(np.float32)
    rs = cfg.rope_scaling
    if rs:
        kind = rs.get("rope_type", rs.get("type"))
        if kind == "yarn":
            factor = np.float32(rs.get("factor") or cfg.max_pos / rs["original_max_position_embeddings"])
            orig = rs["original_max_position_embeddings"]

            def corr_dim(rot):
                return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(cfg.theta))

            low, high = corr_dim(rs.get("beta_fast") or 32), corr_dim(rs.get("beta_slow") or 1)
            if rs.get("truncate", True):
                low, high = math.floor(low), math.ceil(high)
            low, high = max(low, 0), min(high, dim - 1)
            if low == high:
                high += 0.001
            ramp = np.clip((np.arange(dim // 2, dtype=np.float32) - np.float32(low)) / np.float32(high - low), 0, 1)
            ef = (np.float32(1) - ramp).astype(np.float32)
            interp = (np.float32(1.0) / (factor * pos_freqs)).astype(np.float32)
            inv = (interp * (np.float32(1) - ef) + inv * ef).astype(np.float32)
        elif kind in ("longrope", "su"):
            long = seq_len > rs["original_max_position_embeddings"]
            ext = np.asarray(rs["long_factor" if long else "short_factor"], np.float32)
            inv = (np.float32(1.0) / (ext * pos_freqs)).astype(np.float32)
        if kind == "linear":
            inv = (inv / np.float32(rs["factor"])).astype(np.float32)
        elif kind == "llama3":
            factor = np.float32(rs["factor"])
            lo = np.float32(rs["low_freq_factor"])
            hi = np.float32(rs["high_freq_factor"])
            old = np.float32(rs["original_max_position_embeddings"])
            low_wl, high_wl = old / lo, old / hi
            wavelen = np.float32(2 * math.pi) / inv
            v = np.where(wavelen > low_wl, inv / factor, inv).astype(np.float32)
            smooth = (old / wavelen - lo) / (hi - lo)
            smoothed = (1 - smooth) * v / factor + smooth * v
            medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
            inv = np.where(medium, smoothed, v).astype(np.float32)
    return inv


def rope_attention_scale(cfg: TinyConfig, seq_len: int = 0) -> float:
    """The factor transformers multiplies cos and sin by (yarn, longrope), as a float32; with
    "mscale_by_length" (PhiMoE) short_mscale, or long_mscale when seq_len is past
    original_max_position_embeddings."""
    rs = cfg.rope_scaling or {}
    kind = rs.get("rope_type", rs.get("type"))
    if kind not in ("yarn", "longrope", "su"):
        return 1.0
    if rs.get("mscale_by_length"):
        long = seq_len > rs["original_max_position_embeddings"]
        return float(np.float32(rs["long_mscale"] if long else rs["short_mscale"]))
    if rs.get("attention_factor"):
        return float(np.float32(rs["attention_factor"]))
    orig = rs["original_max_position_embeddings"]
    factor = rs.get("factor") or cfg.max_pos / orig
    if kind == "yarn":  # (DeepSeek's mscale / mscale_all_dim: the ratio of the two, as transformers)
        def mscale(m: float) -> float:
            return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0
        if rs.get("mscale") and rs.get("mscale_all_dim"):
            return float(np.float32(mscale(rs["mscale"]) / mscale(rs["mscale_all_dim"])))
        return float(np.float32(mscale(1.0)))
    return float(np.float32(1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))))


def _rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x [n, heads, hd]; cos/sin [n, rot/2] (rotate_half convention over the first rot dims;
    partial rotary embeddings pass the rest unrotated)."""
    half = cos.shape[-1]
    x1, x2, rest = x[..., :half], x[..., half:2 * half], x[..., 2 * half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s, rest], axis=-1)


def _rope_interleaved(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """_rope over pairs (2i, 2i + 1) of the first rot dims (Helium, ERNIE 4.5, GLM: their
    rotate_half stacks (-x[..., 1::2], x[..., 0::2]) and repeats each frequency twice)."""
    half = cos.shape[-1]
    ev, od, rest = x[..., 0:2 * half:2], x[..., 1:2 * half:2], x[..., 2 * half:]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(x[..., :2 * half])
    out[..., 0::2], out[..., 1::2] = ev * c - od * s, od * c + ev * s
    return np.concatenate([out, rest], axis=-1)


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _round_kv_int8(a: np.ndarray) -> np.ndarray:
    """[n, kv, hd] keys or values as the int8 KV cache holds them (ops::store_i8, float32)."""
    x = a.astype(np.float32)
    amax = np.abs(x).max(axis=-1, keepdims=True)
    safe = np.where(amax > 0, amax, np.float32(1))
    q = np.clip(np.rint(x * (np.float32(127) / safe)), -127, 127)
    return (q * (amax / np.float32(127))).astype(np.float64)


def reference_logits(w: dict[str, np.ndarray], cfg: TinyConfig, tokens,
                     windows: list[int] | None = None, gemma2: dict[str, float] | None = None,
                     kv_cache: str = "f32", round_x=None, moe: dict[str, Any] | None = None,
                     nope: list[bool] | None = None, granite: dict[str, float] | None = None,
                     olmo2: bool = False, qk_full: bool = False, clip_qkv: float = 0.0,
                     gemma1: bool = False, phi: bool = False, layer_norm: bool = False,
                     qk_per_head: bool = False, interleaved: bool = False, sandwich: bool = False,
                     local_rope: dict[str, Any] | None = None, cohere: float | None = None,
                     qk_after_rope: bool = False, gelu_exact: bool = False,
                     parallel_norms: bool = False, learned_positions: bool = False,
                     attn_scale: float | None = None, relu: bool = False,
                     parallel_one_norm: bool = False, alibi: list[float] | None = None,
                     mla: dict[str, Any] | None = None, llama4: dict[str, Any] | None = None,
                     rope_negated: bool = False, final_softcap: float = 0.0,
                     rope_seq_lens: list[int] | None = None) -> np.ndarray:
    """[n, vocab] float64 logits of every position of `tokens` (positions 0..n-1).

    `rope_seq_lens` (dynamic NTK): the sequence length of the forward call each position's
    RoPE belongs to (a prefill's length, a decode step's position + 1: each row then is what
    that cached decode computes); None: one call, n, for every position.

    The Llama block plus the variants of the other families, each where its tensors are in
    `w`: q/k/v/o and gate/up/down biases (Llama's attention_bias / mlp_bias, Qwen2's qkv
    bias), per-head q_norm / k_norm before RoPE (Qwen3). `windows[layer]` > 0 limits that
    layer's attention to the last windows[layer] positions (Mistral's / Qwen2's
    sliding_window: key j is seen from query i when i - j < window).

    `gemma2` ({"query_pre_attn_scalar", "attn_softcap", "final_softcap"}, caps 0 = none;
    Gemma 3 adds "local_theta" and "local": the layers rotating with that base, unscaled):
    Gemma2ForCausalLM's block instead — RMSNorm weights used as 1 + w, embeddings scaled by
    float32(sqrt(hidden)), the attention and MLP outputs normed (post_attention_layernorm,
    post_feedforward_layernorm) before the residual add, the MLP input normed by
    pre_feedforward_layernorm, GeGLU with tanh GELU, scores scaled by
    query_pre_attn_scalar^-0.5 and soft-capped, the logits soft-capped.

    `kv_cache` "f16": keys (after RoPE) and values rounded to float16 (round to nearest even,
    numpy's), as the CPU backend's f16 KV cache stores them; "int8": each key and value
    vector (one position, one KV head) rounded as ops::store_i8 does (float32: scale =
    max |x| / 127, codes rne(x * (127 / max |x|))) and replaced by scale * code; the rest stays
    float64.

    `round_x`: applied to the input of every layer linear (not lm_head), for kernels that
    multiply a rounded x (tests/int16_ref.py).

    `nope[layer]` true: that layer attends without RoPE (SmolLM3's NoPE layers).

    `gemma1`: GemmaForCausalLM — Llama's pre-norm block with RMSNorm weights used as 1 + w,
    embeddings scaled by float32(sqrt(hidden)) and GeGLU (tanh GELU) in the MLP.

    `phi`: PhiForCausalLM — LayerNorm (weight and bias) and a parallel block, x + dense(attn(h))
    + fc2(gelu_tanh(fc1 h)) with h = LN(x), biases on every linear and on lm_head, the final
    LayerNorm model.final_layernorm.

    `layer_norm` (StableLmForCausalLM, Starcoder2ForCausalLM): Llama's block with LayerNorms
    (weights and biases) for input_layernorm, post_attention_layernorm and model.norm; a layer
    with mlp.c_fc (Starcoder2) computes c_proj(gelu_tanh(c_fc h)).

    `olmo2`: Olmo2ForCausalLM's block instead — no norm before attention or the MLP, their
    outputs RMSNormed (post_attention_layernorm, post_feedforward_layernorm) before the residual
    add, q and k RMSNormed over the whole projection (q_norm [heads·head_dim]) before RoPE.

    `qk_per_head` with `olmo2` (Exaone4ForCausalLM): the post-norm block with per-head q/k norms.

    `interleaved`: RoPE over pairs (2i, 2i + 1) instead of (i, i + rot/2) (Helium, ERNIE 4.5, GLM).

    `sandwich` (Glm4ForCausalLM): Llama's pre-norm block plus the attention and MLP outputs
    RMSNormed (post_self_attn_layernorm, post_mlp_layernorm) before their residual adds (AfmoeForCausalLM: the MLP `moe`'s
    sparse one where the layer has a router; its attention gate `self_attn.gate_proj` one per
    output dim, LFM3's one per head).

    `local_rope` ({"theta", "layers"}, OLMo 3): the layers marked rotate with that base, unscaled.

    `qk_after_rope` (HunYuan dense): the per-head q/k norms (query_layernorm, key_layernorm) after
    RoPE instead of before.

    `rope_negated` (NanoChat): every pair turns by -θ (sin negated); `final_softcap` > 0: the
    logits soft-capped without Gemma 2's block; `model.embed_norm.weight` without a bias: the
    embeddings RMSNormed.

    `cohere` (the logit scale; CohereForCausalLM, Cohere2ForCausalLM): a LayerNorm without bias
    (input_layernorm, model.norm) before a parallel block, x + o_proj(attn(h)) + mlp(h) with
    h = LN(x) and Llama's SwiGLU MLP; the logits times the scale.

    `parallel_norms` with `layer_norm` (GPTNeoXForCausalLM, use_parallel_residual): the parallel
    block with two LayerNorms, x + o_proj(attn(LN1(x))) + mlp(LN2(x)) (input_layernorm,
    post_attention_layernorm); `parallel_one_norm` (Falcon's parallel_attn): the MLP reads the
    attention's LayerNorm h instead. `gelu_exact`: the c_fc MLP's GELU exact (erf) instead of tanh.

    `learned_positions` (GPT2LMHeadModel, GPTBigCodeForCausalLM): `model.pos_embed.weight`'s row
    of each position added to the embeddings, no RoPE in any layer. `attn_scale`: the scores'
    scale instead of 1/sqrt(head_dim) (GPTBigCode's scale_attn_weights false: 1). `relu` (OPT):
    the ungated MLP's activation ReLU instead of Arcee's relu².

    `alibi` (BloomForCausalLM, MptForCausalLM: one slope per head): slope_h · j added to head h's score of key j
    instead of RoPE, and `model.embed_norm` (weight, bias) LayerNorms the embeddings.

    A layer with `conv.in_proj.weight` (Lfm2ForCausalLM's short convolution) mixes by
    out_proj(C · (conv(B · x) + bias)) instead of attending, [B | C | x] = in_proj(h), conv the
    depthwise causal kernel `conv.conv.weight` [H, 1, K] over zeros before position 0 (B · x
    rounded to float16 with an f16 or int8 `kv_cache`), then Llama's SwiGLU MLP (LFM2-MoE: or
    `moe`'s sparse one, its "sigmoid" "norm_eps" the 1e-6 added to the top weights' sum).

    `llama4` ({"beta", "orig"}: Ministral3ForCausalLM): each query, after RoPE, times
    1 + beta · log(1 + floor(position / orig)).

    `qk_full` (OLMoE): q and k RMSNormed over the whole projection in the pre-norm block;
    `clip_qkv` > 0 (OLMoE): q, k and v clamped to [-clip_qkv, clip_qkv] after those norms.

    `granite` ({"embedding_multiplier", "attention_multiplier", "residual_multiplier",
    "logits_scaling"}): GraniteForCausalLM's multipliers — embeddings times the first, scores
    times the second (instead of 1/sqrt(head_dim)), each residual branch (attention, MLP) times
    the third before its add, the logits divided by the last.

    `moe` ({"experts_per_tok", "norm_topk"}): a layer with `mlp.gate.weight` (the router,
    [experts, hidden]) computes Mixtral's / Qwen-MoE's sparse MLP instead of the dense one:
    softmax of the router logits, the top experts_per_tok experts (`mlp.experts.E.*_proj`),
    their weights renormalized to sum 1 when norm_topk, plus Qwen2-MoE's shared expert
    (`mlp.shared_expert.*_proj`) times sigmoid(`mlp.shared_expert_gate` · x) when present
    (GraniteMoeShared's: without that gate). With "sigmoid" ({"groups", "topk_groups",
    "scale"}: GLM-4 MoE, dots1), DeepSeek-V3's router instead: sigmoid scores, the choice made
    on score + `mlp.gate.e_score_correction_bias` within the topk_groups groups whose two best
    choice scores sum highest, the chosen plain scores renormalized (sum + 1e-20) when
    norm_topk and times scale, and the shared experts (`mlp.shared_experts.*_proj`) added —
    averaged with the routed sum, (routed + shared) / 2, when "shared_average" (Cohere 2 MoE,
    whose `cohere` block then holds the experts). In the pre-norm block, a MoE layer with
    `post_mlp_layernorm.weight` (A.X-K1) RMSNorms the MoE block's output before its add. With
    "sparsemixer" (router_jitter_noise: PhiMoE), transformers' sparsemixer (_sparsemixer)."""
    W = {k: np.asarray(v, dtype=np.float64) for k, v in w.items()}
    if gemma2 or gemma1:
        W = {k: (1.0 + v if k.endswith("norm.weight") else v) for k, v in W.items()}
    tokens = np.asarray(tokens, dtype=np.int64)
    n, hd, nh, kv = len(tokens), cfg.hd, cfg.heads, cfg.kv_heads
    x = W["model.embed_tokens.weight"][tokens]
    if gemma2 or gemma1:
        x = x * float(np.float32(math.sqrt(cfg.hidden)))
    if learned_positions:
        x = x + W["model.pos_embed.weight"][np.arange(n)]
    if "model.embed_norm.bias" in W:  # (Bloom)
        x = _layernorm(x, W["model.embed_norm.weight"], W["model.embed_norm.bias"], cfg.eps)
    elif "model.embed_norm.weight" in W:  # (NanoChat: RMSNormed, weights of 1)
        x = _rmsnorm(x, W["model.embed_norm.weight"], cfg.eps)
    scale = gemma2["query_pre_attn_scalar"] ** -0.5 if gemma2 else 1.0 / math.sqrt(hd)
    if attn_scale is not None:
        scale = attn_scale
    rmul = 1.0
    if granite:
        x = x * granite["embedding_multiplier"]
        scale, rmul = granite["attention_multiplier"], granite["residual_multiplier"]
    cap = gemma2["attn_softcap"] if gemma2 else 0.0
    if rope_seq_lens is None:
        ang = np.arange(n, dtype=np.float64)[:, None] * rope_inv_freq(cfg, seq_len=n).astype(np.float64)[None, :]
    else:  # (each position rotated as the call that computed it: a prefill's length, a decode's position + 1)
        assert len(rope_seq_lens) == n
        ang = np.stack([i * rope_inv_freq(cfg, seq_len=sl).astype(np.float64) for i, sl in enumerate(rope_seq_lens)])
    cos, sin = np.cos(ang), np.sin(ang)
    if rope_negated:  # (NanoChat: its rotate_half is (x2, -x1), each pair turning by -θ)
        sin = -sin
    # (transformers: cos and sin times the attention factor; PhiMoE's by each call's length)
    att = np.array([rope_attention_scale(cfg, sl) for sl in (rope_seq_lens or [n] * n)])[:, None]
    if np.any(att != 1.0):
        cos, sin = cos * att, sin * att
    if local_rope:
        gemma2_local = {"local_theta": local_rope["theta"], "local": local_rope["layers"]}
    else:
        gemma2_local = gemma2 or {}
    if gemma2_local.get("local"):
        local = TinyConfig(hidden=cfg.hidden, heads=cfg.heads, head_dim=cfg.head_dim, theta=gemma2_local["local_theta"])
        ang_l = np.arange(n, dtype=np.float64)[:, None] * rope_inv_freq(local).astype(np.float64)[None, :]
        cos_l, sin_l = np.cos(ang_l), np.sin(ang_l)
    causal = np.triu(np.full((n, n), -np.inf), k=1)
    ij = np.arange(n)[:, None] - np.arange(n)[None, :]

    def lin(h: np.ndarray, name: str) -> np.ndarray:
        if round_x is not None:
            h = np.asarray(round_x(h), dtype=np.float64)
        y = h @ W[name + ".weight"].T
        return y + W[name + ".bias"] if name + ".bias" in W else y

    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        if p + "conv.in_proj.weight" in W:  # LFM2's short convolution instead of the attention
            h = _rmsnorm(x, W[p + "input_layernorm.weight"], cfg.eps)
            b, c, xx = np.split(lin(h, p + "conv.in_proj"), 3, axis=1)
            bx = b * xx
            if kv_cache != "f32":  # (the cache holds B·x in f16 beside an f16 or int8 KV cache)
                bx = bx.astype(np.float16).astype(np.float64)
            kern = W[p + "conv.conv.weight"][:, 0, :]  # [H, K]: tap j reads position t - (K - 1) + j
            taps = kern.shape[1]
            padded = np.concatenate([np.zeros((taps - 1, bx.shape[1])), bx])
            y = sum(padded[j:j + n] * kern[:, j] for j in range(taps)) + W.get(p + "conv.conv.bias", 0.0)
            out = lin(c * y, p + "conv.out_proj")
            if sandwich:  # (LFM3: its post_operator_norm)
                out = _rmsnorm(out, W[p + "post_self_attn_layernorm.weight"], cfg.eps)
            x = x + out
            h = _rmsnorm(x, W[p + "post_attention_layernorm.weight"], cfg.eps)
            if p + "mlp.gate.weight" in W:  # (LFM2-MoE)
                x = x + _moe(W, p + "mlp.", h, lin, moe or {})
                continue
            g = lin(h, p + "mlp.gate_proj")
            out = lin(g / (1.0 + np.exp(-g)) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
            x = x + (_rmsnorm(out, W[p + "post_mlp_layernorm.weight"], cfg.eps) if sandwich else out)
            continue
        mask = causal
        if windows and windows[i] > 0:
            mask = np.where(ij >= windows[i], -np.inf, causal)
        if phi or cohere:
            h = _layernorm(x, W[p + "input_layernorm.weight"], W.get(p + "input_layernorm.bias", 0.0), cfg.eps)
            q, k = lin(h, p + "self_attn.q_proj").reshape(n, nh, hd), lin(h, p + "self_attn.k_proj").reshape(n, kv, hd)
            v = lin(h, p + "self_attn.v_proj").reshape(n, kv, hd)
        elif olmo2 and qk_per_head:  # (EXAONE 4: the post-norm block, q/k normed per head below)
            q, k = lin(x, p + "self_attn.q_proj").reshape(n, nh, hd), lin(x, p + "self_attn.k_proj").reshape(n, kv, hd)
            v = lin(x, p + "self_attn.v_proj").reshape(n, kv, hd)
        elif olmo2:
            q = _rmsnorm(lin(x, p + "self_attn.q_proj"), W[p + "self_attn.q_norm.weight"], cfg.eps).reshape(n, nh, hd)
            k = _rmsnorm(lin(x, p + "self_attn.k_proj"), W[p + "self_attn.k_norm.weight"], cfg.eps).reshape(n, kv, hd)
            v = lin(x, p + "self_attn.v_proj").reshape(n, kv, hd)
        elif mla:
            h = _rmsnorm(x, W[p + "input_layernorm.weight"], cfg.eps)
            q, k, v = _mla_qkv(W, p + "self_attn.", h, lin, mla, cos, sin, kv_cache)
        else:
            h = (_layernorm(x, W[p + "input_layernorm.weight"], W.get(p + "input_layernorm.bias", 0.0), cfg.eps) if layer_norm
                 else _rmsnorm(x, W[p + "input_layernorm.weight"], cfg.eps))
            q, k = lin(h, p + "self_attn.q_proj"), lin(h, p + "self_attn.k_proj")
            if qk_full:
                q = _rmsnorm(q, W[p + "self_attn.q_norm.weight"], cfg.eps)
                k = _rmsnorm(k, W[p + "self_attn.k_norm.weight"], cfg.eps)
            q, k = q.reshape(n, nh, hd), k.reshape(n, kv, hd)
            v = lin(h, p + "self_attn.v_proj").reshape(n, kv, hd)
        if clip_qkv:
            q, k, v = (np.clip(a, -clip_qkv, clip_qkv) for a in (q, k, v))
        if p + "self_attn.q_norm.weight" in W and not ((olmo2 and not qk_per_head) or qk_full or qk_after_rope):
            q = _rmsnorm(q, W[p + "self_attn.q_norm.weight"], cfg.eps)
            k = _rmsnorm(k, W[p + "self_attn.k_norm.weight"], cfg.eps)
        rope = _rope_interleaved if interleaved else _rope
        if (nope and nope[i]) or learned_positions or alibi or mla:
            pass
        elif gemma2_local.get("local") and gemma2_local["local"][i]:
            q, k = rope(q, cos_l, sin_l), rope(k, cos_l, sin_l)
        else:
            q, k = rope(q, cos, sin), rope(k, cos, sin)
        if llama4:  # (Ministral 3: each query times 1 + beta · log(1 + floor(pos / orig)))
            q = q * (1.0 + llama4["beta"] * np.log(1.0 + np.floor(np.arange(n) / llama4["orig"])))[:, None, None]
        if qk_after_rope:
            q = _rmsnorm(q, W[p + "self_attn.query_layernorm.weight"], cfg.eps)
            k = _rmsnorm(k, W[p + "self_attn.key_layernorm.weight"], cfg.eps)
        if mla:  # (the cache holds the latent: rounded there)
            pass
        elif kv_cache == "f16":
            k, v = k.astype(np.float16).astype(np.float64), v.astype(np.float16).astype(np.float64)
        elif kv_cache == "int8":
            k, v = _round_kv_int8(k), _round_kv_int8(v)
        rep = nh // kv
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        s = np.einsum("qhd,khd->hqk", q, k) * scale
        if alibi:
            s = s + np.asarray(alibi)[:, None, None] * np.arange(n)[None, None, :]
        if cap:
            s = cap * np.tanh(s / cap)
        s = s + mask[None]
        sink = W.get(p + "self_attn.sinks")  # gpt-oss: one more logit per head in each softmax
        mx = s.max(axis=-1, keepdims=True)
        if sink is not None:
            mx = np.maximum(mx, sink[:, None, None])
        s = np.exp(s - mx)
        s /= s.sum(axis=-1, keepdims=True) + (0.0 if sink is None else np.exp(sink[:, None, None] - mx))
        o = np.einsum("hqk,khd->qhd", s, v).reshape(n, -1)
        if p + "self_attn.gate_proj.weight" in W:  # LFM3: each head's output times sigmoid(g_proj · h)
            gate = 1.0 / (1.0 + np.exp(-lin(h, p + "self_attn.gate_proj")))
            # (AFMoE: one gate per output dim, [nh · hd] rows)
            o = o * gate if gate.shape[1] == o.shape[1] else (o.reshape(n, nh, hd) * gate[:, :, None]).reshape(n, -1)
        if phi:
            x = x + lin(o, p + "self_attn.dense") + lin(_gelu_tanh(lin(h, p + "mlp.fc1")), p + "mlp.fc2")
            continue
        if cohere:
            if p + "mlp.gate.weight" in W:  # (Cohere2MoeForCausalLM: its experts in the parallel block)
                x = x + lin(o, p + "self_attn.o_proj") + _moe(W, p + "mlp.", h, lin, moe or {})
                continue
            g = lin(h, p + "mlp.gate_proj")
            x = x + lin(o, p + "self_attn.o_proj") + lin(g / (1.0 + np.exp(-g)) * lin(h, p + "mlp.up_proj"),
                                                          p + "mlp.down_proj")
            continue
        if gemma2:  # (VaultGemma: without the post norms)
            post = (lambda t, n: _rmsnorm(t, W[p + n], cfg.eps)) if p + "post_attention_layernorm.weight" in W \
                else (lambda t, n: t)
            x = x + post(lin(o, p + "self_attn.o_proj"), "post_attention_layernorm.weight")
            h = _rmsnorm(x, W[p + "pre_feedforward_layernorm.weight"], cfg.eps)
            y = lin(_gelu_tanh(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
            x = x + post(y, "post_feedforward_layernorm.weight")
            continue
        if olmo2:
            x = x + _rmsnorm(lin(o, p + "self_attn.o_proj"), W[p + "post_attention_layernorm.weight"], cfg.eps)
            if p + "mlp.gate.weight" in W:  # (FlexOlmo: OLMoE's experts)
                y = _moe(W, p + "mlp.", x, lin, moe or {})
            else:
                g = lin(x, p + "mlp.gate_proj")
                y = lin(g / (1.0 + np.exp(-g)) * lin(x, p + "mlp.up_proj"), p + "mlp.down_proj")
            x = x + _rmsnorm(y, W[p + "post_feedforward_layernorm.weight"], cfg.eps)
            continue
        if sandwich:
            # (HyperCLOVA X: each normed output times the residual multiplier)
            x = x + _rmsnorm(lin(o, p + "self_attn.o_proj"), W[p + "post_self_attn_layernorm.weight"], cfg.eps) * rmul
            h = _rmsnorm(x, W[p + "post_attention_layernorm.weight"], cfg.eps)
            if p + "mlp.gate.weight" in W:  # (AFMoE: its experts between the norms)
                y = _moe(W, p + "mlp.", h, lin, moe or {})
            else:
                g, u = lin(h, p + "mlp.gate_proj"), lin(h, p + "mlp.up_proj")
                y = lin(g / (1.0 + np.exp(-g)) * u, p + "mlp.down_proj")
            x = x + _rmsnorm(y, W[p + "post_mlp_layernorm.weight"], cfg.eps) * rmul
            continue
        gelu = _gelu_erf if gelu_exact else _gelu_tanh
        if parallel_one_norm:  # (Falcon: the MLP reads the attention's LayerNorm h)
            x = x + lin(o, p + "self_attn.o_proj") + lin(gelu(lin(h, p + "mlp.c_fc")), p + "mlp.c_proj")
            continue
        if parallel_norms:
            h2 = _layernorm(x, W[p + "post_attention_layernorm.weight"], W[p + "post_attention_layernorm.bias"], cfg.eps)
            x = x + lin(o, p + "self_attn.o_proj") + lin(gelu(lin(h2, p + "mlp.c_fc")), p + "mlp.c_proj")
            continue
        x = x + lin(o, p + "self_attn.o_proj") * rmul
        h = (_layernorm(x, W[p + "post_attention_layernorm.weight"], W.get(p + "post_attention_layernorm.bias", 0.0), cfg.eps)
             if layer_norm else _rmsnorm(x, W[p + "post_attention_layernorm.weight"], cfg.eps))
        if p + "mlp.gate.weight" in W:
            y = _moe(W, p + "mlp.", h, lin, moe or {})
            if p + "post_mlp_layernorm.weight" in W:  # (AXK1ForCausalLM: the MoE block's output RMSNormed)
                y = _rmsnorm(y, W[p + "post_mlp_layernorm.weight"], cfg.eps)
            x = x + y * rmul
            continue
        if p + "mlp.router.weight" in W:
            x = x + _oss_moe(W, p + "mlp.", h, moe or {})
            continue
        if p + "mlp.c_fc.weight" in W:  # Starcoder2: c_proj(gelu_tanh(c_fc h))
            x = x + lin(gelu(lin(h, p + "mlp.c_fc")), p + "mlp.c_proj")
            continue
        if p + "mlp.act_fn.alpha_p" in W:  # Apertus: down(xielu(up h)), its parameters in float32
            sp = lambda v: float(np.float32(np.log1p(np.exp(np.float32(v)))))
            beta, eps = float(W[p + "mlp.act_fn.beta"]), float(W[p + "mlp.act_fn.eps"])
            ap, an = sp(W[p + "mlp.act_fn.alpha_p"][0]), float(np.float32(beta + sp(W[p + "mlp.act_fn.alpha_n"][0])))
            u = lin(h, p + "mlp.up_proj")
            act = np.where(u > 0, ap * u * u + beta * u, (np.expm1(np.minimum(u, eps)) - u) * an + beta * u)
            x = x + lin(act, p + "mlp.down_proj")
            continue
        if p + "mlp.gate_proj.weight" not in W:  # Arcee: down(relu(up h)²); OPT (`relu`): down(relu(up h))
            r = np.maximum(lin(h, p + "mlp.up_proj"), 0.0)
            x = x + lin(r if relu else r ** 2, p + "mlp.down_proj")
            continue
        g = lin(h, p + "mlp.gate_proj")
        u = lin(h, p + "mlp.up_proj")
        act = _gelu_tanh(g) if gemma1 else g / (1.0 + np.exp(-g))
        x = x + lin(act * u, p + "mlp.down_proj") * rmul
    if phi:
        x = _layernorm(x, W["model.final_layernorm.weight"], W["model.final_layernorm.bias"], cfg.eps)
    elif cohere:
        x = _layernorm(x, W["model.norm.weight"], 0.0, cfg.eps)
    elif layer_norm:
        x = _layernorm(x, W["model.norm.weight"], W.get("model.norm.bias", 0.0), cfg.eps)  # (MPT's: no bias)
    else:
        x = _rmsnorm(x, W["model.norm.weight"], cfg.eps)
    # An explicit lm_head.weight wins even when tied (tests pass a rounded copy of the table).
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    logits = x @ head.T
    if "lm_head.bias" in W:
        logits = logits + W["lm_head.bias"]
    if gemma2 and gemma2["final_softcap"]:
        logits = gemma2["final_softcap"] * np.tanh(logits / gemma2["final_softcap"])
    if final_softcap:  # (NanoChat's, without Gemma's block)
        logits = final_softcap * np.tanh(logits / final_softcap)
    if granite:
        logits = logits / granite["logits_scaling"]
    if cohere:
        logits = logits * cohere
    return logits


def _mla_qkv(W: dict[str, np.ndarray], p: str, h: np.ndarray, lin, mla: dict[str, Any], cos: np.ndarray,
             sin: np.ndarray, kv_cache: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DeepSeek-V2 / V3's multi-head latent attention, decompressed as transformers computes it:
    q from q_proj (or q_a_proj, its RMSNorm, q_b_proj), [n, heads, nope | rope]; the latent
    kv_a_proj_with_mqa · h = [c (kv_lora) | k_pe (rope)], c RMSNormed; k_pe and q's rope dims
    rotated (pairs (2i, 2i + 1) when `interleaved`, cos / sin of the rope dims); kv_b_proj · c
    per head = [k_nope | v]; keys [k_nope | k_pe] (k_pe shared by the heads). With an f16 or
    int8 cache, c and the rotated k_pe are rounded as pyvt's cache holds them (int8: one scale
    per position over [k_pe | c])."""
    n, nh, nope, rope, vd = len(h), mla["heads"], mla["nope"], mla["rope"], mla["v"]
    eps = 1e-6  # (q_a_layernorm, kv_a_layernorm: their RMSNorm class's default in every MLA model, not rms_norm_eps)
    if p + "q_a_proj.weight" in W:
        qf = lin(_rmsnorm(lin(h, p + "q_a_proj"), W[p + "q_a_layernorm.weight"], eps), p + "q_b_proj")
    else:
        qf = lin(h, p + "q_proj")
    qf = qf.reshape(n, nh, nope + rope)
    a = lin(h, p + "kv_a_proj_with_mqa")
    c, k_pe = _rmsnorm(a[:, :-rope], W[p + "kv_a_layernorm.weight"], eps), a[:, None, -rope:]
    rot = _rope_interleaved if mla["interleaved"] else _rope
    q_pe, k_pe = rot(qf[..., nope:], cos, sin), rot(k_pe, cos, sin)
    if kv_cache == "f16":
        c, k_pe = c.astype(np.float16).astype(np.float64), k_pe.astype(np.float16).astype(np.float64)
    elif kv_cache == "int8":
        r = _round_kv_int8(np.concatenate([k_pe[:, 0], c], axis=-1)[:, None])[:, 0]
        k_pe, c = r[:, None, :rope], r[:, rope:]
    kv = lin(c, p + "kv_b_proj").reshape(n, nh, nope + vd)
    q = np.concatenate([qf[..., :nope], q_pe], axis=-1)
    k = np.concatenate([kv[..., :nope], np.repeat(k_pe, nh, axis=1)], axis=-1)
    return q, k, kv[..., nope:]


def _moe(W: dict[str, np.ndarray], p: str, h: np.ndarray, lin, moe: dict[str, Any]) -> np.ndarray:
    """The sparse MLP of reference_logits (`moe`'s docstring there) on rows h."""
    def swiglu(x: np.ndarray, q: str) -> np.ndarray:
        g = lin(x, q + "gate_proj")
        return lin(g / (1.0 + np.exp(-g)) * lin(x, q + "up_proj"), q + "down_proj")

    k = moe["experts_per_tok"]
    z = h @ W[p + "gate.weight"].T
    if moe.get("sigmoid"):  # DeepSeek-V3's router: groups, a correction bias for the choice only
        prob = 1.0 / (1.0 + np.exp(-z))
        bias = W.get(p + "gate.e_score_correction_bias", W.get(p + "e_score_correction_bias"))  # (MiniMax-M2's: on the block)
        # (LFM2-MoE without use_expert_bias: none; Kolibri 1: the choice on the logit + bias)
        choice = (z if moe["sigmoid"].get("choice_on_logits") else prob) + (0.0 if bias is None else bias)
        g, tg = moe["sigmoid"]["groups"], moe["sigmoid"]["topk_groups"]
        grouped = choice.reshape(len(h), g, -1)
        gscore = np.sort(grouped, axis=-1)[:, :, -2:].sum(axis=-1)
        keep = np.argsort(-gscore, axis=-1, kind="stable")[:, :tg]
        mask = np.zeros_like(gscore, dtype=bool)
        np.put_along_axis(mask, keep, True, axis=-1)
        choice = np.where(np.repeat(mask, grouped.shape[-1], axis=-1), choice, -np.inf)
        top = np.argsort(-choice, axis=-1, kind="stable")[:, :k]
        wt = np.take_along_axis(prob, top, axis=-1)
        if moe.get("norm_topk"):
            wt = wt / (wt.sum(axis=-1, keepdims=True) + moe["sigmoid"].get("norm_eps", 1e-20))
        wt = wt * moe["sigmoid"]["scale"]
    elif moe.get("softmax_groups"):  # DeepSeek-V2's: softmax, groups by their best, times scale
        prob = np.exp(z - z.max(axis=-1, keepdims=True))
        prob /= prob.sum(axis=-1, keepdims=True)
        g, tg = moe["softmax_groups"]["groups"], moe["softmax_groups"]["topk_groups"]
        if tg < g:
            grouped = prob.reshape(len(h), g, -1)
            # (Mistral 4: a group scored by its best two, DeepSeek-V2: by its best)
            gscore = np.sort(grouped, axis=-1)[:, :, -2:].sum(axis=-1) if moe["softmax_groups"].get("two_best") \
                else grouped.max(axis=-1)
            keep = np.argsort(-gscore, axis=-1, kind="stable")[:, :tg]
            mask = np.zeros((len(h), g), dtype=bool)
            np.put_along_axis(mask, keep, True, axis=-1)
            prob = np.where(np.repeat(mask, grouped.shape[-1], axis=-1), prob, 0.0)
        top = np.argsort(-prob, axis=-1, kind="stable")[:, :k]
        wt = np.take_along_axis(prob, top, axis=-1)
        if moe.get("norm_topk"):  # (Mistral 4)
            wt = wt / (wt.sum(axis=-1, keepdims=True) + 1e-20)
        wt = wt * moe["softmax_groups"]["scale"]
    elif moe.get("sparsemixer") is not None:  # PhiMoE: two experts, each its masked softmax's weight
        top, wt = _sparsemixer(z, 2 * moe["sparsemixer"])
    else:
        prob = np.exp(z - z.max(axis=-1, keepdims=True))
        prob /= prob.sum(axis=-1, keepdims=True)
        choice = prob + W[p + "moe_statics.e_score_correction_bias"][0] \
            if p + "moe_statics.e_score_correction_bias" in W else prob  # (ERNIE 4.5: chosen with its bias)
        top = np.argsort(-choice, axis=-1, kind="stable")[:, :k]
        wt = np.take_along_axis(prob, top, axis=-1)
        if moe.get("norm_topk"):
            wt = wt / wt.sum(axis=-1, keepdims=True)
    y = np.zeros_like(h)
    for e in np.unique(top):
        rows, slot = np.nonzero(top == e)
        y[rows] += wt[rows, slot][:, None] * swiglu(h[rows], f"{p}experts.{e}.")
    if p + "shared_expert_gate.weight" in W:
        gate = 1.0 / (1.0 + np.exp(-(h @ W[p + "shared_expert_gate.weight"].T)))
        y += gate * swiglu(h, p + "shared_expert.")
    elif p + "shared_expert.gate_proj.weight" in W:  # GraniteMoeShared: added without a gate
        y += swiglu(h, p + "shared_expert.")
    elif p + "shared_experts.gate_proj.weight" in W:  # GLM-4 MoE, dots1, DeepSeek, ERNIE 4.5: likewise
        y += swiglu(h, p + "shared_experts.")
        if moe.get("shared_average"):  # (Cohere 2 MoE's "average": (routed + shared) / 2)
            y /= 2
    return y


def _sparsemixer(z: np.ndarray, eps2: float) -> tuple[np.ndarray, np.ndarray]:
    """PhiMoE's router (transformers' sparsemixer, inference mode) on logits z [n, experts]: the
    top expert, then the top of the others; each one's weight its softmax probability among the
    candidates i (the others, for the second) with (max - z_i) / max(|z_i|, max) <= eps2, max
    that step's top logit."""
    top = np.zeros((len(z), 2), np.int64)
    wt = np.zeros((len(z), 2))
    for r, zr in enumerate(z):
        cand = np.ones(len(zr), bool)
        for j in range(2):
            b = int(np.argmax(np.where(cand, zr, -np.inf)))
            m = zr[b]
            keep = cand & ((m - zr) / np.maximum(np.abs(zr), m) <= eps2)
            top[r, j], wt[r, j] = b, 1.0 / np.exp(zr[keep] - m).sum()
            cand[b] = False
    return top, wt


def _oss_moe(W: dict[str, np.ndarray], p: str, h: np.ndarray, moe: dict[str, Any]) -> np.ndarray:
    """gpt-oss's sparse MLP (GptOssMLP): router logits with their bias, the top k, softmax over
    those; each expert's x · gate_up + bias (gate and up interleaved: columns 2j, 2j + 1), the
    clamped SwiGLU (up clamped to ±limit, gate to <= limit; (up + 1) · gate · sigmoid(alpha ·
    gate)), · down + bias."""
    k, alpha, limit = moe["experts_per_tok"], moe["swiglu_alpha"], moe["swiglu_limit"]
    z = h @ W[p + "router.weight"].T + W[p + "router.bias"]
    top = np.argsort(-z, axis=-1, kind="stable")[:, :k]
    zt = np.take_along_axis(z, top, axis=-1)
    wt = np.exp(zt - zt.max(axis=-1, keepdims=True))
    wt /= wt.sum(axis=-1, keepdims=True)
    y = np.zeros_like(h)
    for e in np.unique(top):
        rows, slot = np.nonzero(top == e)
        gu = h[rows] @ W[p + "experts.gate_up_proj"][e] + W[p + "experts.gate_up_proj_bias"][e]
        gate, up = np.minimum(gu[:, ::2], limit), np.clip(gu[:, 1::2], -limit, limit)
        act = (up + 1.0) * gate / (1.0 + np.exp(-alpha * gate))
        y[rows] += wt[rows, slot][:, None] * (act @ W[p + "experts.down_proj"][e] + W[p + "experts.down_proj_bias"][e])
    return y


LINEAR_SUFFIXES = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight",
                   "gate_proj.weight", "up_proj.weight", "down_proj.weight")


def as_bf16_mode(w: dict[str, np.ndarray], cfg: TinyConfig) -> dict[str, np.ndarray]:
    """The weights pyvt's bf16 mode computes with: every linear (and lm_head, tied or not)
    rounded to bfloat16; the embedding table and the norms exactly as stored."""
    out = {}
    for k, v in w.items():
        out[k] = round_to(v, "BF16") if k.endswith(LINEAR_SUFFIXES) or k == "lm_head.weight" else v
    if cfg.tie:
        out["lm_head.weight"] = round_to(w["model.embed_tokens.weight"], "BF16")
    return out


def reference_greedy(w: dict[str, np.ndarray], cfg: TinyConfig, prompt, n_new: int) -> list[int]:
    toks = list(prompt)
    out = []
    for _ in range(n_new):
        t = int(np.argmax(reference_logits(w, cfg, toks)[-1]))
        out.append(t)
        toks.append(t)
    return out
