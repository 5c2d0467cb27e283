"""Tiny checkpoints with a real tokenizer, for the text-generation tests (stream, stop
strings, chat, CLI, logprobs), written with numpy in a fraction of a second.

Both kinds use the default model's tokenizer (SmolLM2, byte-level BPE, 49152 ids, ChatML
chat template), so the model's vocabulary is 49152 with a small hidden size.

* :func:`write_scripted_model` — a model that *recites*: given the last token it predicts a
  chosen next token with a large margin, so greedy generation produces a known token
  sequence (an emoji split across byte tokens, a stop string across token boundaries, a
  chat reply ending in EOS). Every block's output projections are zero, so the residual
  stream is the embedding of the current token; script tokens get orthonormal embedding
  directions and ``lm_head`` maps each direction to its successor.
* :func:`write_random_model` — :mod:`llama_ref`'s random Llama with the same vocabulary, for
  comparisons against the float64 reference (logprobs, penalties).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

import llama_ref as R

VOCAB = 49152
EOS = 2  # <|im_end|> in the SmolLM2 tokenizer (also its chat end-of-turn)

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def copy_tokenizer(src_dir: Path, folder: Path, *, chat_template: bool = True) -> None:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (Path(src_dir) / name).is_file():
            shutil.copy(Path(src_dir) / name, folder / name)
    if not chat_template:
        cfg = json.loads((folder / "tokenizer_config.json").read_text())
        cfg.pop("chat_template", None)
        (folder / "tokenizer_config.json").write_text(json.dumps(cfg))


def script_successors(sequences: Iterable[Sequence[int]], eos_after: bool = True) -> dict[int, int]:
    """token -> next token for every consecutive pair of every sequence (then EOS after the
    last token when eos_after). A token with two different successors is an error."""
    nxt: dict[int, int] = {}
    for seq in sequences:
        seq = list(seq) + ([EOS] if eos_after else [])
        for a, b in zip(seq, seq[1:]):
            if nxt.get(a, b) != b:
                raise ValueError(f"token {a} is followed by both {nxt[a]} and {b} in the scripts")
            nxt[a] = b
    return nxt


def write_scripted_model(folder: Path, tokenizer_dir: Path, successors: dict[int, int], *,
                         hidden: int = 128, chat_template: bool = True, max_pos: int = 512) -> R.TinyConfig:
    cfg = R.TinyConfig(hidden=hidden, intermediate=64, layers=1, heads=4, kv_heads=2, vocab=VOCAB,
                       max_pos=max_pos, bos=1, eos=EOS)
    keys = sorted(set(successors))
    if len(keys) > hidden:
        raise ValueError(f"{len(keys)} scripted tokens need hidden >= {len(keys)}")
    rng = np.random.default_rng(0)
    w = R.random_weights(cfg, seed=0)
    # Orthonormal directions for the scripted tokens; other rows small and random.
    q, _ = np.linalg.qr(rng.standard_normal((hidden, hidden)))
    emb = (0.05 * rng.standard_normal((VOCAB, hidden))).astype(np.float32)
    head = np.zeros((VOCAB, hidden), dtype=np.float32)
    for k, t in enumerate(keys):
        emb[t] = q[k]
        head[successors[t]] += 2.0 * q[k]  # logit ≈ 2·sqrt(hidden) ≈ 22 for the successor
    w["model.embed_tokens.weight"] = emb
    w["lm_head.weight"] = head
    for name in list(w):
        if name.endswith(("o_proj.weight", "down_proj.weight")):
            w[name] = np.zeros_like(w[name])
        if name.endswith("layernorm.weight") or name == "model.norm.weight":
            w[name] = np.ones_like(w[name])
    R.write_checkpoint(folder, cfg, weights=w, dtype="F32")
    copy_tokenizer(tokenizer_dir, folder, chat_template=chat_template)
    return cfg


def write_random_model(folder: Path, tokenizer_dir: Path, *, seed: int = 3, layers: int = 2
                       ) -> tuple[R.TinyConfig, dict[str, np.ndarray]]:
    """A random tiny Llama (stored BF16) and the weights pyvt's bf16 mode computes with."""
    cfg = R.TinyConfig(hidden=64, intermediate=96, layers=layers, heads=4, kv_heads=2, vocab=VOCAB,
                       max_pos=256, bos=1, eos=EOS)
    w = R.write_checkpoint(folder, cfg, seed=seed, dtype="BF16")
    copy_tokenizer(tokenizer_dir, folder)
    return cfg, R.as_bf16_mode(w, cfg)
