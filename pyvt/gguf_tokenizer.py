"""The tokenizer of a GGUF file, rebuilt for Hugging Face (used by :mod:`pyvt.convert`).

A GGUF has no tokenizer.json: it stores the vocabulary, merges, scores and token types as
``tokenizer.ggml.*`` metadata. :func:`build_tokenizer` rebuilds a ``tokenizers.Tokenizer``
from them — byte-level BPE (``gpt2``) with the pre-tokenizer llama.cpp uses for
``tokenizer.ggml.pre``, or SentencePiece-style BPE with byte fallback (``llama``) — and
:func:`tokenizer_config` the ``tokenizer_config.json`` / ``special_tokens_map.json`` that go
with it. :func:`eos_token_ids` lists the end-of-sequence ids the metadata names.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .gguf import meta_value

__all__ = ["build_tokenizer", "eos_token_ids", "tokenizer_config"]

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
# Tekken (Mistral NeMo, Pixtral): words split at case changes, single digits; Mistral's own
# tokenizer.json regex (llama.cpp rewrites it for its regex engine: tested to agree).
_TEKKEN_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# GPT-4o's (o200k; Phi-4-mini): Tekken's with English contractions, digits in threes.
_GPT4O_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# GPT-2's split, which llama.cpp also writes into longer sequences below.
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_PORO_SPLIT = r" ?[^(\s|.,!?…。，、।۔،)]+"
# `tokenizer.ggml.pre` -> the regexes llama.cpp splits text with, one after the other (each
# splits the pieces the previous left; llama-vocab.cpp, llm_tokenizer_bpe), for the names whose
# split is not plain GPT-2. A missing or empty name is llama.cpp's "default".
_SPLIT_PRE = {
    "llama3": [_LLAMA3_SPLIT], "llama-v3": [_LLAMA3_SPLIT], "llama-bpe": [_LLAMA3_SPLIT],
    "falcon3": [_LLAMA3_SPLIT], "pixtral": [_LLAMA3_SPLIT], "dbrx": [_LLAMA3_SPLIT],
    "smaug-bpe": [_LLAMA3_SPLIT],
    "qwen2": [_QWEN2_SPLIT], "deepseek-r1-qwen": [_QWEN2_SPLIT], "megrez": [_QWEN2_SPLIT],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", _GPT2_SPLIT, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", _GPT2_SPLIT, r"[0-9][0-9][0-9]"],
    "poro-chat": [_PORO_SPLIT], "bloom": [_PORO_SPLIT], "gpt3-finnish": [_PORO_SPLIT],
    "viking": [_PORO_SPLIT, r"\p{N}"],
    # DeepSeek Coder (v1: Llama architecture): line breaks, letters and punctuation runs with
    # one leading space, CJK runs, single digits.
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", r"[一-龥ࠀ-一가-퟿]+", r"\p{N}"],
    "tekken": [_TEKKEN_SPLIT],
    "gpt-4o": [_GPT4O_SPLIT],
    # Seed-Coder (Llama architecture): Qwen2's split with no line breaks in a punctuation run.
    "seed-coder": [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}\r\n]+"
                   r"|\s*[\r\n]+|\s+(?!\S)|\s+"],
}
_SPLIT_PRE[""] = _SPLIT_PRE["default"]
# The Llama 3 family and Tekken: a piece that is a token is taken whole before any merge
# (ignore_merges), and BOS is added unless the file says otherwise (llama.cpp's defaults for
# these names).
_LLAMA3_PRE = {"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "tekken"}
# llama.cpp splits every number code point on its own (regex \p{N}) before the GPT-2 regex for
# these (llama-vocab.cpp: STARCODER, REFACT, COMMAND_R, SMOLLM, CODESHELL, EXAONE, MINERVA). The
# original Hugging Face tokenizer.json of SmolLM/StarCoder says the same thing as
# Sequence[Digits(individual_digits=True), ByteLevel(use_regex=True)].
_DIGITS_PRE = {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva"}
# GPT-2's split alone ("gpt2" is no llama.cpp name, but means nothing else).
_GPT2_PRE = {"gpt-2", "gpt2", "mpt", "olmo", "jais"}


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


# The characters _merges_from_scores may slice out of the tokens while trying splits: the
# 32k- and 49k-token vocabularies of TinyLlama's and SmolLM2's GGUFs need 2.7M and 2.4M; a
# hostile one of tokens of every length (a, aa, aaa, ... up to 3000: 4.5 MB) would need ~9e9,
# and as many bytes of merges.
_MAX_SPLIT_WORK = 1 << 27


def _merges_from_scores(vocab: dict[str, int], scores, path) -> list[tuple[str, str]]:
    """Recover BPE merges from a SentencePiece vocabulary: every split of a token into two
    tokens, ranked by the token's score (best first).

    Only the split points where both halves have the length of some token are tried: trying
    all of them made one long token quadratic (a 300 000-character token: 13 s); this way a
    token longer than twice the others costs nothing. The work left is bounded too
    (_MAX_SPLIT_WORK characters, else a ValueError naming the file)."""
    lengths = sorted({len(t) for t in vocab})
    length_set = set(lengths)
    work = 0
    merges = []
    for tok, tid in vocab.items():
        score = float(scores[tid])
        local = []
        n = len(tok)
        for i in lengths:
            if i >= n:
                break
            if n - i not in length_set:
                continue
            work += n
            if work > _MAX_SPLIT_WORK:
                raise ValueError(f"{path}: tokenizer.ggml.tokens: recovering the SentencePiece merges from the "
                                 f"scores would slice more than {_MAX_SPLIT_WORK} characters (too many long tokens)")
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
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors

    model = meta_value(meta, "tokenizer.ggml.model", "string", path)
    tokens = meta_value(meta, "tokenizer.ggml.tokens", "strings", path)
    if model is None or tokens is None:
        raise ValueError(f"{path}: the GGUF has no tokenizer (tokenizer.ggml.model/tokens missing)")
    if model not in ("gpt2", "llama"):
        raise ValueError(
            f"{path}: unsupported tokenizer model {model!r} (tokenizer.ggml.model); "
            "pyvt converts 'gpt2' (byte-level BPE) and 'llama' (SentencePiece BPE)"
        )
    if not tokens:
        raise ValueError(f"{path}: tokenizer.ggml.tokens is empty (a vocabulary without tokens)")
    tokens = [_as_str(t, i, path) for i, t in enumerate(tokens)]
    n = len(tokens)
    types = meta_value(meta, "tokenizer.ggml.token_type", "ints", path)
    types = types.astype(np.int64) if types is not None else np.full(n, TOKEN_NORMAL)
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
    add_bos = meta_value(meta, "tokenizer.ggml.add_bos_token", "bool", path)
    add_eos = meta_value(meta, "tokenizer.ggml.add_eos_token", "bool", path, False)
    add_space_prefix = meta_value(meta, "tokenizer.ggml.add_space_prefix", "bool", path)

    merges_meta = meta_value(meta, "tokenizer.ggml.merges", "strings", path)
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
        pre = meta_value(meta, "tokenizer.ggml.pre", "string", path, "")
        if pre == "":  # as llama.cpp says it (older converters wrote no name)
            warnings.warn(f"{path}: no pre-tokenizer named (tokenizer.ggml.pre); splitting text as llama.cpp's "
                          "'default' does", stacklevel=2)
        if add_bos is None:
            add_bos = pre in _LLAMA3_PRE
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
                            fuse_unk=False, byte_fallback=False, ignore_merges=pre in _LLAMA3_PRE))
        tk.normalizer = None
        bytelevel = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
        if pre in _DIGITS_PRE:
            tk.pre_tokenizer = pre_tokenizers.Sequence(
                [pre_tokenizers.Digits(individual_digits=True), bytelevel]
            )
        elif pre in _SPLIT_PRE:
            tk.pre_tokenizer = pre_tokenizers.Sequence(
                [
                    *(pre_tokenizers.Split(Regex(r), behavior="isolated", invert=False) for r in _SPLIT_PRE[pre]),
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
            scores = meta_value(meta, "tokenizer.ggml.scores", "numbers", path)
            if scores is None or len(scores) != n:
                raise ValueError(f"{path}: SentencePiece vocabulary without merges or scores")
            if np.isnan(scores).any():
                # The merges are ranked by score: NaN has no rank.
                raise ValueError(f"{path}: tokenizer.ggml.scores[{int(np.argmax(np.isnan(scores)))}] is NaN")
            merges = _merges_from_scores(vocab, scores, path)
        tk = Tokenizer(_bpe(path, vocab, merges, dropout=None, unk_token=unk, fuse_unk=True, byte_fallback=True))
        # llama.cpp's SentencePiece tokenization: spaces become ▁, and with add_space_prefix every
        # piece of text between special / user-defined tokens (and the first) gets one ▁ in
        # front, also when it starts with a space (sentencepiece's dummy prefix does the same).
        # A normalizer runs on each such piece, after the added tokens are split off; the
        # Metaspace pre-tokenizer prefixed only the first and skipped text starting with a space.
        space = normalizers.Replace(" ", "\u2581")
        tk.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), space]) if add_space_prefix else space
        tk.pre_tokenizer = None
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


# Token texts llama.cpp ends generation on wherever they are in a vocabulary (llama-vocab.cpp,
# its end-of-generation list): converters often store only one EOS id (Gemma's <eos>, not its
# <end_of_turn>; Qwen's <|endoftext|>, not <|im_end|>), so a chat would run past its turn.
_EOG_TEXTS = frozenset({
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>",
    "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
})


def eos_token_ids(meta: dict, vocab_size: int, path="<gguf>") -> list[int]:
    """The end-of-generation ids, as llama.cpp decides them: the metadata's (EOS, end of turn,
    end of message), then every token spelled as one of llama.cpp's end-of-generation texts
    (`<end_of_turn>`, `<|im_end|>`, `<|eot_id|>`, ...), each once; ids outside the vocabulary
    are left out, values that are not integers are a ValueError naming the key."""
    out: list[int] = []
    for k in ("eos_token_id", "eot_token_id", "eom_token_id"):
        v = meta_value(meta, f"tokenizer.ggml.{k}", "int", path)
        if v is not None and 0 <= v < vocab_size and v not in out:
            out.append(int(v))
    tokens = meta.get("tokenizer.ggml.tokens")
    if isinstance(tokens, (list, tuple)):
        for i, t in enumerate(tokens[:vocab_size]):
            if isinstance(t, str) and t in _EOG_TEXTS and i not in out:
                out.append(i)
    return out


def tokenizer_config(meta: dict, info: dict, model_max_length: int,
                     path="<gguf>") -> tuple[dict[str, Any], dict[str, Any]]:
    """``(tokenizer_config.json, special_tokens_map.json)`` for a tokenizer built by
    :func:`build_tokenizer` (``info`` is its second result): the added tokens (control ones
    special, user-defined ones not), the named special tokens, ``add_bos_token`` /
    ``add_eos_token`` and the GGUF's chat template."""
    tokens = info["tokens"]
    added_decoder = {}
    for ids, special in ((info["special_ids"], True), (info["user_defined_ids"], False)):
        for i in ids:
            added_decoder[str(i)] = {"content": tokens[i], "lstrip": False, "normalized": False,
                                     "rstrip": False, "single_word": False, "special": special}
    named = {k: info[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token")}
    extra = [tokens[i] for i in info["special_ids"] if tokens[i] not in named.values()]
    config = {
        "add_bos_token": info["add_bos_token"],
        "add_eos_token": info["add_eos_token"],
        "added_tokens_decoder": added_decoder,
        "additional_special_tokens": extra,
        **{k: v for k, v in named.items() if v is not None},
        "clean_up_tokenization_spaces": False,
        "model_max_length": model_max_length,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    if info["model"] == "gpt2":
        config["add_prefix_space"] = False
    chat_template = meta_value(meta, "tokenizer.chat_template", "string", path)
    if chat_template is not None:
        config["chat_template"] = chat_template
    special_map: dict[str, Any] = {k: v for k, v in named.items() if v is not None}
    special_map["additional_special_tokens"] = extra
    return config, special_map
