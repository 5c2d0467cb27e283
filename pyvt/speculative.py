"""Prompt lookup: drafts for speculative decoding taken from the sequence itself.

Output often repeats stretches of its input — code being edited, a document being
summarized or quoted, a list being reformatted. When the last few tokens of the sequence
(prompt + generated) occurred earlier, the tokens that followed that earlier occurrence are a
cheap guess at what comes next. :class:`PromptLookup` keeps an index of the sequence's
n-grams and proposes such a draft; one ``vt_session_verify`` call runs the last token and
the draft through the model as one batched pass and keeps the longest prefix the model's own
choices confirm, plus the model's next token (``Session.verify``). The tokens are those plain
decoding chooses — greedy or sampled at the same seed and step — up to the float rounding of
a batched pass; a wrong draft costs time, never a different token.

A verify pass of k + 1 rows costs more than one decode step (on 2 CPU cores, ~1.3-2× for
k = 3-4: the linears' arithmetic grows with the rows while their weight traffic does not), so
each step's draft length weighs the tokens a draft is expected to bring against that cost
(:class:`DraftPolicy`), both measured as the sequence goes.
"""

from __future__ import annotations

from typing import Iterable

from . import _model

__all__ = ["DraftPolicy", "PromptLookup"]

#: The longest draft one verify call takes (vt.h VT_MAX_VERIFY, less the input token).
MAX_DRAFT = int(_model.MAX_VERIFY) - 1


class PromptLookup:
    """Drafts by prompt lookup (n-gram matching over the sequence so far).

    ``draft(k)`` looks for the most recent earlier occurrence of the sequence's last
    ``max_ngram`` tokens, then ``max_ngram - 1``, ... down to ``min_ngram``, and returns up to
    ``k`` tokens that followed it (``[]`` when none matches). ``push`` appends tokens; the
    index is updated incrementally (O(max_ngram) per token)."""

    def __init__(self, ids: Iterable[int], max_ngram: int = 3, min_ngram: int = 1):
        if not (1 <= min_ngram <= max_ngram):
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.seq: list[int] = []
        # index[n - min_ngram]: n-gram -> the position right after its latest occurrence that
        # has a token after it (so the sequence's own last n-gram is never its own match).
        self._index: list[dict[tuple[int, ...], int]] = [{} for _ in range(min_ngram, max_ngram + 1)]
        self._next = 0  # positions j < _next are indexed as "followed by seq[j]"
        self.push(ids)

    def push(self, ids: Iterable[int]) -> None:
        seq = self.seq
        seq.extend(int(t) for t in ids)
        lo, hi = self.min_ngram, self.max_ngram
        for j in range(max(self._next, 1), len(seq)):
            for n in range(lo, min(hi, j) + 1):
                self._index[n - lo][tuple(seq[j - n:j])] = j
        self._next = max(self._next, len(seq))

    def match(self) -> tuple[int, int] | None:
        """(n, j): the longest n-gram ending the sequence that occurred before, and the
        position right after its latest earlier occurrence; None when none did."""
        seq = self.seq
        for n in range(min(self.max_ngram, len(seq)), self.min_ngram - 1, -1):
            j = self._index[n - self.min_ngram].get(tuple(seq[-n:]))
            if j is not None:
                return n, j
        return None

    def draft(self, k: int, match: tuple[int, int] | None = None) -> list[int]:
        """Up to k tokens that followed ``match`` (default: :meth:`match`'s; ``[]`` when
        there is none)."""
        m = (match or self.match()) if k > 0 else None
        return [] if m is None else self.seq[m[1]:m[1] + k]


class DraftPolicy:
    """How many drafted tokens one step checks, from what drafting has been worth so far.

    A verify pass of 1 + k rows costs about ``1 + beta * k`` decode steps and yields on average
    ``(1 - a**(k + 1)) / (1 - a)`` tokens when each drafted token is right with probability
    ``a`` (given that the ones before it were). ``a`` is estimated for each match length n
    (a 3-token match predicts better than a 1-token one) from this sequence's verify calls,
    older ones weighing less; ``beta`` from the times of its decode steps and verify passes
    (on 2 CPU cores ~0.2-0.4: the linears' arithmetic grows with the rows; on a GPU a few
    rows cost about one). ``choose(n)`` is the k <= limit with the most tokens per unit of
    time, 0 (decode without a draft) when none beats a plain step; every ``PROBE``-th such
    step for a match length checks a one-token draft anyway, so that its estimate can
    recover when the output turns to copying."""

    PROBE = 8
    DECAY = 0.7           # weight of the evidence before each verify call
    PRIOR = (1.0, 2.0)    # accepted, checked: a = 0.5 before any evidence (n >= 2)
    PRIOR1 = (1.0, 3.0)   # a = 1/3 for a one-token match
    BETA0 = 0.3           # the cost of a row before any timing

    def __init__(self, limit: int):
        self.limit = limit
        self._stats: dict[int, tuple[float, float]] = {}
        self._skips: dict[int, int] = {}
        self.beta = self.BETA0
        self._t_step: float | None = None

    def _prior(self, n: int) -> tuple[float, float]:
        return self.PRIOR1 if n == 1 else self.PRIOR

    def accept_rate(self, n: int) -> float:
        acc, checked = self._stats.get(n, self._prior(n))
        return acc / checked

    def choose(self, n: int) -> int:
        a = min(self.accept_rate(n), 0.999)
        best_k, best = 0, 1.0
        gain, p = 1.0, 1.0
        for k in range(1, self.limit + 1):
            p *= a
            gain += p                       # expected tokens of a (1 + k)-row pass
            rate = gain / (1.0 + self.beta * k)
            if rate > best * 1.0001:
                best_k, best = k, rate
        if best_k > 0:
            self._skips[n] = 0
            return best_k
        skips = self._skips.get(n, 0) + 1
        self._skips[n] = 0 if skips >= self.PROBE else skips
        return 1 if skips >= self.PROBE else 0

    def update(self, n: int, drafted: int, accepted: int) -> None:
        """A verify call of a draft after a match of n tokens: ``accepted`` of ``drafted``."""
        acc, checked = self._stats.get(n, self._prior(n))
        checked_now = accepted + (1 if accepted < drafted else 0)
        self._stats[n] = (acc * self.DECAY + accepted, checked * self.DECAY + checked_now)

    def timed(self, rows: int, seconds: float) -> None:
        """A decode step (rows = 1) or a verify pass of ``rows`` rows took ``seconds``."""
        if rows == 1:
            self._t_step = seconds if self._t_step is None else 0.7 * self._t_step + 0.3 * seconds
        elif self._t_step:
            b = (seconds / self._t_step - 1.0) / (rows - 1)
            self.beta = min(3.0, max(0.005, 0.7 * self.beta + 0.3 * b))
