"""Convert a llama-architecture GGUF file into a Hugging Face-style checkpoint folder.

    convert_gguf("SmolLM2-135M-Instruct.Q4_1.gguf", "out/")  ->  out/
        config.json               LlamaForCausalLM, every field from the GGUF metadata
        generation_config.json    BOS/EOS/PAD ids
        model.safetensors         BF16 (default), Hugging Face tensor names and layouts
        tokenizer.json            rebuilt with `tokenizers` from the GGUF vocabulary
        tokenizer_config.json     special tokens, add_bos_token, chat_template, model_max_length
        special_tokens_map.json

Quantized tensors are dequantized (pyvt.gguf) and rounded once to the output dtype. Two
layout differences between llama.cpp and Hugging Face are undone here:

* llama.cpp's converter permutes the rows of Q and K so that RoPE rotates adjacent pairs
  (x0, x1), (x2, x3)...; Hugging Face rotates halves (x_i, x_{i+d/2}) ("rotate_half"). We apply the
  inverse permutation per head (`unpermute_qk`; Q with n_head, K with n_head_kv).
* A GGUF has no tokenizer.json; it stores the vocabulary, merges and token types as metadata.

Only numpy, `tokenizers` and the standard library are used: no torch, no safetensors/gguf
packages.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import warnings
from pathlib import Path

import numpy as np

from .gguf import GGUFFile, dequantize

__all__ = [
    "convert_gguf",
    "unpermute_qk",
    "permute_qk",
    "write_safetensors",
    "build_tokenizer",
    "hf_tensor_name",
    "CONVERTER_VERSION",
]

#: Bumped whenever the output of the converter changes (hub.pull re-converts on a mismatch).
CONVERTER_VERSION = 1

# Large 2-D tensors are dequantized and written this many values at a time.
_CHUNK_VALUES = 1 << 22

# --------------------------------------------------------------------------------------------
# Tensor names and layouts
# --------------------------------------------------------------------------------------------

_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
_BLOCK_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.bias": "self_attn.o_proj.bias",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
_BLOCK_RE = re.compile(r"^blk\.(\d+)\.(.+)$")
# Tensors llama.cpp may store that have no Hugging Face weight (handled through the config).
_SKIPPED = {"rope_freqs.weight"}


def hf_tensor_name(gguf_name: str) -> str | None:
    """The Hugging Face name of a llama GGUF tensor, or None if it has none."""
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    m = _BLOCK_RE.match(gguf_name)
    if m and m.group(2) in _BLOCK_NAMES:
        return f"model.layers.{int(m.group(1))}.{_BLOCK_NAMES[m.group(2)]}"
    return None


def permute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Hugging Face -> llama.cpp row order of a Q or K projection (what llama.cpp's converter does).

    w: [n_head * head_dim, ...]. Within each head, rows (i, i + head_dim/2) become adjacent.
    """
    rows = w.shape[0]
    if n_head <= 0 or rows % (2 * n_head):
        raise ValueError(f"cannot permute {rows} rows over {n_head} heads")
    return (
        w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp -> Hugging Face row order of a Q or K projection (inverse of `permute_qk`)."""
    rows = w.shape[0]
    if n_head <= 0 or rows % (2 * n_head):
        raise ValueError(f"cannot un-permute {rows} rows over {n_head} heads")
    return (
        w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


# --------------------------------------------------------------------------------------------
# SafeTensors writer
# --------------------------------------------------------------------------------------------

_DTYPES = {
    # name accepted by convert_gguf -> (safetensors dtype, torch_dtype, bytes per element)
    "bf16": ("BF16", "bfloat16", 2),
    "f16": ("F16", "float16", 2),
    "f32": ("F32", "float32", 4),
}
_DTYPE_ALIASES = {
    "bf16": "bf16", "bfloat16": "bf16",
    "f16": "f16", "fp16": "f16", "float16": "f16",
    "f32": "f32", "fp32": "f32", "float32": "f32",
}


def _to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    r = u >> 16
    r &= 1
    r += 0x7FFF
    r += u  # wraps only for NaN payloads, fixed below
    r >>= 16
    out = r.astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | 0x0040).astype(np.uint16)
    return out


def _encode(x: np.ndarray, st_dtype: str) -> np.ndarray:
    if st_dtype == "BF16":
        return _to_bf16_bits(x)
    if st_dtype == "F16":
        return np.ascontiguousarray(x, dtype="<f2")
    return np.ascontiguousarray(x, dtype="<f4")


def write_safetensors(path, tensors, metadata: dict | None = None) -> None:
    """Write a .safetensors file from an iterable of ``(name, st_dtype, shape, produce)``.

    ``produce()`` returns the tensor's data -- one array, or an iterable of arrays whose bytes
    follow each other -- and is called once per tensor, in order, after the header is written, so
    only one tensor (or one chunk of one) is in memory at a time. The file is written to ``path + ".tmp"`` and renamed into place when complete.
    """
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1, "I8": 1, "I32": 4, "I64": 8, "F64": 8}
    items = list(tensors)
    header: dict = {"__metadata__": {str(k): str(v) for k, v in (metadata or {"format": "pt"}).items()}}
    offset = 0
    for name, st_dtype, shape, _ in items:
        if name in header:
            raise ValueError(f"duplicate tensor name {name!r}")
        n = math.prod(shape) * sizes[st_dtype]
        header[name] = {"dtype": st_dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * (-len(hbytes) % 8)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(hbytes)))
            f.write(hbytes)
            for name, st_dtype, shape, produce in items:
                want = header[name]["data_offsets"][1] - header[name]["data_offsets"][0]
                got = 0
                data = produce()
                for chunk in (data,) if isinstance(data, np.ndarray) else data:
                    chunk = np.ascontiguousarray(chunk)
                    got += chunk.nbytes
                    if got > want:
                        break
                    f.write(memoryview(chunk).cast("B"))
                if got != want:
                    raise ValueError(f"tensor {name!r}: produced {got} bytes, expected {want}")
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------

# llama.cpp token types (llama_token_type)
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6

# Pre-tokenizer split regexes keyed by `tokenizer.ggml.pre` (the names llama.cpp's converter
# writes). A byte-level vocabulary listed in none of these maps is split the GPT-2 way.
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_SPLIT_PRE = {
    "llama3": _LLAMA3_SPLIT, "llama-v3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT,
    "falcon3": _LLAMA3_SPLIT, "pixtral": _LLAMA3_SPLIT, "dbrx": _LLAMA3_SPLIT,
    "smaug-bpe": _LLAMA3_SPLIT,
    "qwen2": _QWEN2_SPLIT, "deepseek-r1-qwen": _QWEN2_SPLIT, "megrez": _QWEN2_SPLIT,
}
# llama.cpp splits every number code point on its own (regex \p{N}) before the GPT-2 regex for
# these (llama-vocab.cpp: STARCODER, REFACT, COMMAND_R, SMOLLM, CODESHELL, EXAONE, MINERVA). The
# original Hugging Face tokenizer.json of SmolLM/StarCoder says the same thing as
# Sequence[Digits(individual_digits=True), ByteLevel(use_regex=True)].
_DIGITS_PRE = {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva"}
_GPT2_PRE = {"default", "gpt-2", "gpt2", "mpt", "olmo", "jais", "poro-chat", "viking", "gpt3-finnish", ""}


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table used by byte-level BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1)
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def _as_str(tok, index: int, path) -> str:
    if isinstance(tok, bytes):
        # Not valid UTF-8 in the file: keep the bytes, spelled as latin-1 code points.
        return tok.decode("latin-1")
    if not isinstance(tok, str):
        raise ValueError(f"{path}: tokenizer.ggml.tokens[{index}] is not a string")
    return tok


def _merges_from_scores(vocab: dict[str, int], scores) -> list[tuple[str, str]]:
    """Recover BPE merges from a SentencePiece vocabulary: every split of a token into two
    tokens, ranked by the token's score (best first)."""
    merges = []
    for tok, tid in vocab.items():
        score = float(scores[tid])
        local = []
        for i in range(1, len(tok)):
            left, right = tok[:i], tok[i:]
            if left in vocab and right in vocab:
                local.append((left, right, score))
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(a, b) for a, b, _ in merges]


def _bpe(path, vocab, merges, **kw):
    """tokenizers' BPE model, its errors (a merge naming a token the vocabulary lacks...)
    raised as ValueError naming the file."""
    from tokenizers.models import BPE

    try:
        return BPE(vocab, merges, **kw)
    except Exception as e:  # tokenizers raises a bare Exception
        raise ValueError(f"{path}: the tokenizer in the GGUF metadata is invalid: {e}") from None


def build_tokenizer(meta: dict, path="<gguf>"):
    """Build a `tokenizers.Tokenizer` from GGUF tokenizer metadata.

    Returns ``(tokenizer, info)`` where info holds the special tokens and flags
    (``bos_token``, ``eos_token``, ``unk_token``, ``pad_token``, ``add_bos_token``,
    ``add_eos_token``, ``special_tokens`` (control tokens, in id order)).

    Supported ``tokenizer.ggml.model``: ``gpt2`` (byte-level BPE) and ``llama`` (SentencePiece
    BPE with byte fallback). Anything else raises ValueError.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, pre_tokenizers, processors

    model = meta.get("tokenizer.ggml.model")
    tokens = meta.get("tokenizer.ggml.tokens")
    if model is None or tokens is None:
        raise ValueError(f"{path}: the GGUF has no tokenizer (tokenizer.ggml.model/tokens missing)")
    if model not in ("gpt2", "llama"):
        raise ValueError(
            f"{path}: unsupported tokenizer model {model!r} (tokenizer.ggml.model); "
            "pyvt converts 'gpt2' (byte-level BPE) and 'llama' (SentencePiece BPE)"
        )
    if not isinstance(tokens, list):
        raise ValueError(f"{path}: tokenizer.ggml.tokens is not an array of strings")
    tokens = [_as_str(t, i, path) for i, t in enumerate(tokens)]
    n = len(tokens)
    types = meta.get("tokenizer.ggml.token_type")
    types = np.asarray(types, dtype=np.int64) if types is not None else np.full(n, TOKEN_NORMAL)
    if types.shape != (n,):
        raise ValueError(f"{path}: tokenizer.ggml.token_type has {types.size} entries for {n} tokens")

    def token_at(key: str):
        tid = meta.get(f"tokenizer.ggml.{key}")
        if tid is None:
            return None, None
        if isinstance(tid, bool) or not isinstance(tid, int) or not 0 <= tid < n:
            raise ValueError(f"{path}: tokenizer.ggml.{key} = {tid!r} is not a token id (vocab {n})")
        return tid, tokens[tid]

    bos_id, bos = token_at("bos_token_id")
    eos_id, eos = token_at("eos_token_id")
    unk_id, unk = token_at("unknown_token_id")
    pad_id, pad = token_at("padding_token_id")
    add_bos = meta.get("tokenizer.ggml.add_bos_token")
    add_eos = bool(meta.get("tokenizer.ggml.add_eos_token", False))
    add_space_prefix = meta.get("tokenizer.ggml.add_space_prefix")

    merges_meta = meta.get("tokenizer.ggml.merges")
    if merges_meta is not None and not isinstance(merges_meta, list):
        raise ValueError(f"{path}: tokenizer.ggml.merges is not an array of strings")
    if merges_meta is not None:
        merges = []
        for i, m in enumerate(merges_meta):
            parts = _as_str(m, i, path).split(" ")
            if len(parts) != 2:
                raise ValueError(f"{path}: tokenizer.ggml.merges[{i}] = {m!r} is not 'left right'")
            merges.append((parts[0], parts[1]))
    else:
        merges = None

    control = [i for i in range(n) if types[i] == TOKEN_CONTROL]
    user_defined = [i for i in range(n) if types[i] == TOKEN_USER_DEFINED]

    if model == "gpt2":
        if add_bos is None:
            add_bos = False
        spelling = _bytes_to_unicode()
        alphabet = set(spelling.values())
        # Every byte-level token is spelled in GPT-2's byte alphabet; respell the few that are not
        # (llama.cpp writes some added tokens as plain text).
        vocab: dict[str, int] = {}
        for i, tok in enumerate(tokens):
            spelled = tok if set(tok) <= alphabet else "".join(spelling[b] for b in tok.encode("utf-8"))
            vocab.setdefault(spelled, i)
        if merges is None:
            raise ValueError(f"{path}: byte-level BPE vocabulary without tokenizer.ggml.merges")
        tk = Tokenizer(_bpe(path, vocab, merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="",
                            fuse_unk=False, byte_fallback=False))
        tk.normalizer = None
        pre = meta.get("tokenizer.ggml.pre", "default")
        bytelevel = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
        if pre in _DIGITS_PRE:
            tk.pre_tokenizer = pre_tokenizers.Sequence(
                [pre_tokenizers.Digits(individual_digits=True), bytelevel]
            )
        elif pre in _SPLIT_PRE:
            tk.pre_tokenizer = pre_tokenizers.Sequence(
                [
                    pre_tokenizers.Split(Regex(_SPLIT_PRE[pre]), behavior="isolated", invert=False),
                    pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
                ]
            )
        else:
            if pre not in _GPT2_PRE:
                warnings.warn(
                    f"{path}: unknown pre-tokenizer {pre!r} (tokenizer.ggml.pre); "
                    "splitting text the GPT-2 way",
                    stacklevel=2,
                )
            tk.pre_tokenizer = bytelevel
        tk.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
        # Control tokens not spelled in the byte alphabet are llama.cpp mislabels: skip them.
        special_ids = [i for i in control if set(tokens[i]) <= alphabet]
    else:  # llama: SentencePiece BPE with byte fallback
        if add_bos is None:
            add_bos = True  # llama.cpp's default for SentencePiece vocabularies
        if add_space_prefix is None:
            add_space_prefix = True
        vocab = {}
        for i, tok in enumerate(tokens):
            vocab.setdefault(tok, i)
        if merges is None:
            scores = meta.get("tokenizer.ggml.scores")
            if not isinstance(scores, (list, np.ndarray)) or len(scores) != n:
                raise ValueError(f"{path}: SentencePiece vocabulary without merges or scores")
            merges = _merges_from_scores(vocab, scores)
        tk = Tokenizer(_bpe(path, vocab, merges, dropout=None, unk_token=unk, fuse_unk=True, byte_fallback=True))
        tk.normalizer = None
        tk.pre_tokenizer = pre_tokenizers.Metaspace(
            replacement="\u2581", prepend_scheme="first" if add_space_prefix else "never", split=False
        )
        seq = [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
        if add_space_prefix:
            seq.append(decoders.Strip(content=" ", left=1, right=0))
        tk.decoder = decoders.Sequence(seq)
        special_ids = list(control)

    # bos/eos/unk/pad are special whatever type the file gives them.
    for tid in (bos_id, eos_id, unk_id, pad_id):
        if tid is not None and tid not in special_ids:
            special_ids.append(tid)
    special_ids.sort()
    tk.add_special_tokens(
        [AddedToken(tokens[i], special=True, normalized=False) for i in special_ids]
    )
    special_set = set(special_ids)
    plain_added = [i for i in user_defined if i not in special_set and tokens[i] in vocab]
    if plain_added:
        tk.add_tokens([AddedToken(tokens[i], special=False, normalized=False) for i in plain_added])

    # The post-processor adds BOS/EOS exactly when the tokenizer config says so.
    single = []
    specials = []
    if add_bos and bos is not None:
        single.append(f"{bos}:0")
        specials.append((bos, bos_id))
    single.append("$A:0")
    if add_eos and eos is not None:
        single.append(f"{eos}:0")
        if eos != bos:
            specials.append((eos, eos_id))
    if specials:
        pair = single + [("$B:1" if s == "$A:0" else s.replace(":0", ":1")) for s in single]
        tk.post_processor = processors.TemplateProcessing(
            single=" ".join(single), pair=" ".join(pair), special_tokens=specials
        )
    elif model == "gpt2":
        tk.post_processor = processors.ByteLevel(trim_offsets=False)
    else:
        tk.post_processor = None

    info = {
        "model": model,
        "bos_token": bos,
        "eos_token": eos,
        "unk_token": unk,
        "pad_token": pad,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "add_bos_token": bool(add_bos),
        "add_eos_token": add_eos,
        "special_ids": special_ids,
        "user_defined_ids": plain_added,
        "tokens": tokens,
    }
    return tk, info


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------


def _f32(x) -> float:
    """A float32 metadata value written as the shortest decimal that round-trips (1e-05, not
    9.999999747378752e-06)."""
    return float(str(np.float32(x)))


def _infer_llama3_rope_scaling(freqs: np.ndarray, rope_theta: float, head_dim: int, path):
    """Recover Llama-3 `rope_scaling` from llama.cpp's `rope_freqs.weight` (per-frequency
    divisors). Only the standard parameterisation is recognised; anything else is refused."""
    freqs = np.asarray(freqs, np.float64).ravel()
    if freqs.size != head_dim // 2:
        raise ValueError(f"{path}: rope_freqs.weight has {freqs.size} entries, expected {head_dim // 2}")
    if np.allclose(freqs, 1.0):
        return None
    factor = float(np.max(freqs))
    inv = rope_theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    wavelen = 2 * math.pi / inv
    for orig in (8192, 4096, 2048, 16384, 32768, 131072):
        for low in (1.0, 2.0, 0.5, 4.0):
            for high in (4.0, 2.0, 8.0, 1.0, 16.0):
                if high <= low:
                    continue
                lw, hw = orig / low, orig / high
                smooth = (orig / wavelen - low) / (high - low)
                expect = np.where(
                    wavelen < hw, 1.0,
                    np.where(wavelen > lw, factor, 1.0 / ((1 - smooth) / factor + smooth)),
                )
                if np.allclose(expect, freqs, rtol=1e-3, atol=1e-4):
                    return {
                        "rope_type": "llama3",
                        "factor": factor,
                        "low_freq_factor": low,
                        "high_freq_factor": high,
                        "original_max_position_embeddings": orig,
                    }
    raise ValueError(
        f"{path}: rope_freqs.weight does not match any Llama-3 rope scaling pyvt recognises"
    )


# --------------------------------------------------------------------------------------------
# convert_gguf
# --------------------------------------------------------------------------------------------


def convert_gguf(gguf_path, out_dir, *, dtype: str = "bf16", progress=None) -> Path:
    """Convert a llama-architecture GGUF file to a Hugging Face-style folder; returns `out_dir`.

    dtype: "bf16" (default), "f16" or "f32" for model.safetensors.
    progress: optional callable(str) for progress messages.
    Raises FileNotFoundError for a missing file, ValueError for a malformed or unsupported one
    (an architecture other than `llama`, a tensor type pyvt cannot dequantize, an unsupported
    tokenizer model...).
    """
    key = _DTYPE_ALIASES.get(str(dtype).lower())
    if key is None:
        raise ValueError(f"dtype must be one of bf16, f16, f32; got {dtype!r}")
    st_dtype, torch_dtype, _ = _DTYPES[key]
    say = progress or (lambda msg: None)
    out = Path(out_dir)
    with GGUFFile(gguf_path) as g:
        p = str(g.path)
        meta = g.metadata
        arch = meta.get("general.architecture")
        if arch != "llama":
            raise ValueError(
                f"{p}: unsupported architecture {arch!r} (general.architecture); "
                "pyvt converts 'llama' GGUF files"
            )

        def need_int(k: str, default=None) -> int:
            v = meta.get(f"llama.{k}", default)
            if v is None:
                raise ValueError(f"{p}: missing metadata llama.{k}")
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) <= 0:
                raise ValueError(f"{p}: llama.{k} = {v!r} is not a positive integer")
            return int(v)

        if meta.get("llama.expert_count", 0):
            raise ValueError(f"{p}: mixture-of-experts llama models are not supported")
        hidden = need_int("embedding_length")
        n_layers = need_int("block_count")
        n_head = need_int("attention.head_count")
        n_kv = need_int("attention.head_count_kv", n_head)
        ffn = need_int("feed_forward_length")
        ctx = need_int("context_length", 2048)
        head_dim = need_int("attention.key_length", hidden // n_head if hidden % n_head == 0 else None)
        if need_int("attention.value_length", head_dim) != head_dim:
            raise ValueError(f"{p}: different key and value head sizes are not supported")
        if n_head % n_kv:
            raise ValueError(f"{p}: {n_head} attention heads is not a multiple of {n_kv} KV heads")
        rope_dim = need_int("rope.dimension_count", head_dim)
        if rope_dim != head_dim:
            raise ValueError(f"{p}: partial rotary embeddings (rope.dimension_count {rope_dim} "
                             f"of head_dim {head_dim}) are not supported")
        eps = _f32(meta.get("llama.attention.layer_norm_rms_epsilon", 1e-5))
        theta = _f32(meta.get("llama.rope.freq_base", 10000.0))
        if float(theta).is_integer():
            theta = float(theta)

        # -- tensors ---------------------------------------------------------------------
        names = list(g.tensors)
        unknown = [n for n in names if hf_tensor_name(n) is None and n not in _SKIPPED]
        if unknown:
            raise ValueError(f"{p}: tensors a llama model does not have: {', '.join(unknown[:10])}"
                             + (f" (and {len(unknown) - 10} more)" if len(unknown) > 10 else ""))
        if "token_embd.weight" not in g.tensors:
            raise ValueError(f"{p}: missing tensor token_embd.weight")
        vocab_size = g.tensors["token_embd.weight"].shape[0]
        # Before anything is built per block: a block_count the tensors cannot back (a lying
        # header says 4 million blocks) is refused, naming the first missing block.
        present = {int(m.group(1)) for n in names if (m := _BLOCK_RE.match(n))}
        if n_layers > len(present):
            first = min(set(range(len(present) + 1)) - present)
            raise ValueError(f"{p}: llama.block_count = {n_layers}, but the file has tensors for "
                             f"{len(present)} blocks (none for blk.{first})")
        expected = {"token_embd.weight": (vocab_size, hidden), "output_norm.weight": (hidden,)}
        for i in range(n_layers):
            b = f"blk.{i}."
            expected.update({
                b + "attn_norm.weight": (hidden,),
                b + "ffn_norm.weight": (hidden,),
                b + "attn_q.weight": (n_head * head_dim, hidden),
                b + "attn_k.weight": (n_kv * head_dim, hidden),
                b + "attn_v.weight": (n_kv * head_dim, hidden),
                b + "attn_output.weight": (hidden, n_head * head_dim),
                b + "ffn_gate.weight": (ffn, hidden),
                b + "ffn_up.weight": (ffn, hidden),
                b + "ffn_down.weight": (hidden, ffn),
            })
        missing = [n for n in expected if n not in g.tensors]
        if missing:
            raise ValueError(f"{p}: missing tensors: {', '.join(missing[:10])}"
                             + (f" (and {len(missing) - 10} more)" if len(missing) > 10 else ""))
        for n, shape in expected.items():
            if g.tensors[n].shape != shape:
                raise ValueError(f"{p}: tensor {n} has shape {list(g.tensors[n].shape)}, "
                                 f"expected {list(shape)}")
        tied = "output.weight" not in g.tensors
        if not tied and g.tensors["output.weight"].shape != (vocab_size, hidden):
            raise ValueError(f"{p}: tensor output.weight has shape "
                             f"{list(g.tensors['output.weight'].shape)}, expected {[vocab_size, hidden]}")
        blocks = {m.group(1) for n in names if (m := _BLOCK_RE.match(n))}
        if any(int(b) >= n_layers for b in blocks):
            raise ValueError(f"{p}: tensors for more blocks than llama.block_count = {n_layers}")
        meta_vocab = meta.get("llama.vocab_size")
        if meta_vocab is not None and (isinstance(meta_vocab, bool) or not isinstance(meta_vocab, (int, np.integer))
                                       or int(meta_vocab) != vocab_size):
            raise ValueError(f"{p}: llama.vocab_size {meta_vocab} but token_embd.weight has {vocab_size} rows")

        rope_scaling = None
        if "rope_freqs.weight" in g.tensors:
            rope_scaling = _infer_llama3_rope_scaling(
                g.dequantize("rope_freqs.weight"), theta, head_dim, p)
        elif meta.get("llama.rope.scaling.type") in ("linear", "yarn"):
            stype = meta["llama.rope.scaling.type"]
            factor = float(meta.get("llama.rope.scaling.factor", 1.0))
            if factor != 1.0:
                rope_scaling = {"rope_type": stype, "factor": factor}
                if "llama.rope.scaling.original_context_length" in meta:
                    rope_scaling["original_max_position_embeddings"] = int(
                        meta["llama.rope.scaling.original_context_length"])

        # -- tokenizer -------------------------------------------------------------------
        tokenizer, tinfo = build_tokenizer(meta, p)
        if len(tinfo["tokens"]) != vocab_size:
            # HF pads the embedding table past the vocabulary in some models; the reverse is broken.
            if len(tinfo["tokens"]) > vocab_size:
                raise ValueError(f"{p}: {len(tinfo['tokens'])} tokens but token_embd.weight has "
                                 f"{vocab_size} rows")

        eos_ids = []
        for k in ("eos_token_id", "eot_token_id", "eom_token_id"):
            v = meta.get(f"tokenizer.ggml.{k}")
            if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < vocab_size and v not in eos_ids:
                eos_ids.append(v)
        bos_id = tinfo["bos_token_id"]
        pad_id = meta.get("tokenizer.ggml.padding_token_id")
        pad_id = pad_id if isinstance(pad_id, int) and 0 <= pad_id < vocab_size else None
        eos_value = eos_ids[0] if len(eos_ids) == 1 else (eos_ids or None)

        config = {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "attention_bias": any(n.endswith("attn_q.bias") for n in names),
            "attention_dropout": 0.0,
            "bos_token_id": bos_id,
            "eos_token_id": eos_value,
            "head_dim": head_dim,
            "hidden_act": "silu",
            "hidden_size": hidden,
            "initializer_range": 0.02,
            "intermediate_size": ffn,
            "max_position_embeddings": ctx,
            "mlp_bias": False,
            "num_attention_heads": n_head,
            "num_hidden_layers": n_layers,
            "num_key_value_heads": n_kv,
            "pretraining_tp": 1,
            "rms_norm_eps": eps,
            "rope_scaling": rope_scaling,
            "rope_theta": theta,
            "tie_word_embeddings": tied,
            "torch_dtype": torch_dtype,
            "use_cache": True,
            "vocab_size": vocab_size,
        }
        if pad_id is not None:
            config["pad_token_id"] = pad_id
        gen_config = {"bos_token_id": bos_id, "eos_token_id": eos_value}
        if pad_id is not None:
            gen_config["pad_token_id"] = pad_id

        # -- write -----------------------------------------------------------------------
        out.mkdir(parents=True, exist_ok=True)
        order = ["token_embd.weight"]
        for i in range(n_layers):
            b = f"blk.{i}."
            order += [b + s for s in (
                "attn_norm.weight", "attn_q.weight", "attn_q.bias", "attn_k.weight", "attn_k.bias",
                "attn_v.weight", "attn_v.bias", "attn_output.weight", "attn_output.bias",
                "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight")]
        order += ["output_norm.weight", "output.weight"]
        order = [n for n in order if n in g.tensors]

        def producer(name: str):
            info = g.tensors[name]
            kind = name.split(".")[-2] if name.startswith("blk.") else ""
            heads = {"attn_q": n_head, "attn_k": n_kv}.get(kind)

            def check(x):
                if not np.isfinite(x).all():
                    raise ValueError(f"{p}: tensor {name} has non-finite values")
                return _encode(x, st_dtype)

            def produce():
                if heads is not None or len(info.shape) != 2:
                    x = g.dequantize(name)
                    yield check(unpermute_qk(x, heads) if heads is not None else x)
                    return
                # Row chunks of ~4M values bound the float32 temporaries (embedding tables).
                rows, cols = info.shape
                raw = g.raw(name)
                row_bytes = info.nbytes // rows
                step = max(1, _CHUNK_VALUES // cols)
                for r in range(0, rows, step):
                    r1 = min(rows, r + step)
                    try:
                        x = dequantize(raw[r * row_bytes:r1 * row_bytes], info.ggml_type, (r1 - r, cols))
                    except ValueError as e:
                        raise ValueError(f"{p}: tensor {name!r}: {e}") from None
                    yield check(x)
            return produce

        say(f"converting {len(order)} tensors to {st_dtype}")
        write_safetensors(
            out / "model.safetensors",
            [(hf_tensor_name(n), st_dtype, g.tensors[n].shape, producer(n)) for n in order],
            {"format": "pt"},
        )

    # -- json files --------------------------------------------------------------------------
    say("writing config and tokenizer")
    tokens = tinfo["tokens"]
    added_decoder = {}
    for i in tinfo["special_ids"]:
        added_decoder[str(i)] = {"content": tokens[i], "lstrip": False, "normalized": False,
                                 "rstrip": False, "single_word": False, "special": True}
    for i in tinfo["user_defined_ids"]:
        added_decoder[str(i)] = {"content": tokens[i], "lstrip": False, "normalized": False,
                                 "rstrip": False, "single_word": False, "special": False}
    named = {k: tinfo[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token")}
    extra = [tokens[i] for i in tinfo["special_ids"] if tokens[i] not in named.values()]
    tok_config = {
        "add_bos_token": tinfo["add_bos_token"],
        "add_eos_token": tinfo["add_eos_token"],
        "added_tokens_decoder": added_decoder,
        "additional_special_tokens": extra,
        **{k: v for k, v in named.items() if v is not None},
        "clean_up_tokenization_spaces": False,
        "model_max_length": ctx,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    if tinfo["model"] == "gpt2":
        tok_config["add_prefix_space"] = False
    chat_template = meta.get("tokenizer.chat_template")
    if isinstance(chat_template, str):
        tok_config["chat_template"] = chat_template
    special_map = {k: v for k, v in named.items() if v is not None}
    special_map["additional_special_tokens"] = extra

    _write_json(out / "config.json", config)
    _write_json(out / "generation_config.json", gen_config)
    _write_json(out / "tokenizer_config.json", tok_config)
    _write_json(out / "special_tokens_map.json", special_map)
    tmp = out / "tokenizer.json.tmp"
    tokenizer.save(str(tmp), pretty=True)
    os.replace(tmp, out / "tokenizer.json")
    return out


def _write_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None) -> int:
    import argparse
    import sys
    import time

    ap = argparse.ArgumentParser(prog="python -m pyvt.convert",
                                 description="Convert a llama GGUF file to a Hugging Face folder.")
    ap.add_argument("gguf")
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", default="bf16", choices=sorted(_DTYPE_ALIASES))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        out = convert_gguf(args.gguf, args.out_dir, dtype=args.dtype,
                           progress=lambda m: print(m, file=sys.stderr))
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
