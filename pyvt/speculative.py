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
the draft length adapts (:class:`DraftLength`): as Hugging Face's assisted generation, +2 after
a draft accepted whole, -1 after one that was not, and a few steps without a draft after a
one-token draft was rejected.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["DraftLength", "PromptLookup"]

#: The longest draft one verify call takes (vt.h VT_MAX_VERIFY - 1).
MAX_DRAFT = 63


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

    def draft(self, k: int) -> list[int]:
        seq = self.seq
        if k <= 0 or not seq:
            return []
        for n in range(min(self.max_ngram, len(seq)), self.min_ngram - 1, -1):
            j = self._index[n - self.min_ngram].get(tuple(seq[-n:]))
            if j is not None:
                return seq[j:j + k]
        return []


class DraftLength:
    """The adaptive draft length. As Hugging Face's assisted generation: it starts at
    ``limit``, +2 (up to ``limit``) after a draft the model accepted whole, -1 (down to 1)
    after one it did not. And since a verify pass costs more than a decode step even when the
    draft is one token: after a rejected draft of one token, the next 1, 2, 4 ... 16 steps
    (doubling while rejections go on; reset by any accepted token) decode without a draft."""

    MAX_BACKOFF = 16

    def __init__(self, limit: int):
        self.limit = limit
        self.k = limit
        self._backoff = 0
        self._skip = 0

    def next(self) -> int:
        """The length of this step's draft (0: decode without one)."""
        if self._skip > 0:
            self._skip -= 1
            return 0
        return self.k

    def update(self, drafted: int, accepted: int) -> None:
        if drafted == 0:
            return
        if accepted > 0:
            self._backoff = 0
        if accepted == drafted:
            self.k = min(self.limit, self.k + 2)
            return
        if drafted == 1:
            self._backoff = min(self.MAX_BACKOFF, max(1, 2 * self._backoff))
            self._skip = self._backoff
        self.k = max(1, self.k - 1)
