"""Fidelity of pyvt against the committed FP32 transformers reference for SmolLM2-135M
(tests/data/smollm2_golden.json, made by tools/make_golden.py). Used by test_fidelity.py
and by tools/fidelity.py, which writes docs/fidelity.md."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parent / "data" / "smollm2_golden.json"
NEAR_TIE = 0.01  # reference top-2 logit margin below which a different choice is allowed


def load_golden() -> dict:
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)


@dataclass
class PromptScore:
    name: str
    forced_agree: int        # teacher-forced positions where our argmax == reference token
    forced_total: int
    first_token_ok: bool
    common_prefix: int       # free-running: tokens equal to the reference before a divergence
    prefix_ok: bool          # free-running equals the reference up to n tokens or a near-tie


def teacher_forced(model, prompt: dict) -> tuple[int, int, bool]:
    """Feed prompt + reference tokens in one batched pass; compare argmax at each position."""
    ids = list(prompt["prompt_ids"]) + list(prompt["generated_ids"])
    n_p = len(prompt["prompt_ids"])
    logits = model.logits(ids[:-1])
    ours = logits[n_p - 1:].argmax(axis=1)
    ref = np.asarray(prompt["generated_ids"])
    agree = ours == ref
    return int(agree.sum()), int(agree.size), bool(agree[0])


def free_running(model, prompt: dict, n: int) -> tuple[int, bool]:
    """Greedy continuation of n tokens (EOS ignored) against the reference."""
    import pyvt

    res = pyvt.generate(model, list(prompt["prompt_ids"]), max_new_tokens=n, stop_on_eos=False)
    ref = prompt["generated_ids"][:n]
    prefix = 0
    for a, b in zip(res.tokens, ref):
        if a != b:
            break
        prefix += 1
    if prefix >= n:
        return prefix, True
    # A divergence is acceptable only where the reference itself was a near-tie.
    return prefix, prompt["steps"][prefix]["margin"] < NEAR_TIE


def score(model, golden: dict, n_free: int) -> list[PromptScore]:
    out = []
    for p in golden["prompts"]:
        a, t, first = teacher_forced(model, p)
        prefix, ok = free_running(model, p, n_free)
        out.append(PromptScore(p["name"], a, t, first, prefix, ok))
    return out
