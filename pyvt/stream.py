"""The text side of streaming: UTF-8-safe incremental detokenization and stop strings.

libvt produces token ids one at a time; these two small state machines turn them into text
deltas that are safe to show as they come:

* :class:`IncrementalDecoder` — a multi-byte character split across tokens (an emoji, CJK,
  accented letters in byte-level BPE) is held back until it is complete, so a delta never
  contains half a character (no U+FFFD from a split), and the first tokens are decoded in the
  context of the prompt's last tokens, so a leading space is kept where the tokenizer's
  decoder would strip it from a lone token.
* :class:`StopMatcher` — generation ends at the first occurrence of any stop string, which
  is not included; text that could still be the start of a stop string is held back until it
  is known not to be, so a stop string split across tokens (or across deltas) is never
  partly shown.

Both are used by :func:`pyvt.stream` (and so by :func:`pyvt.generate`, which consumes it);
they are public for callers who run their own loops over ``pyvt._model.Session``.
"""

from __future__ import annotations

from typing import Protocol, Sequence

__all__ = ["IncrementalDecoder", "StopMatcher"]

_REPLACEMENT = "\ufffd"

#: Prompt tokens given to the decoder as context (enough for any decoder's look-behind).
CONTEXT_TOKENS = 6


class _Decodes(Protocol):
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str: ...


class IncrementalDecoder:
    """Token ids in, UTF-8-safe text deltas out.

    ``decoder.push(token_id)`` returns the text that became final with this token ("" while a
    character is incomplete or the token adds no text, e.g. a skipped special token);
    ``decoder.flush()`` returns whatever is still held at the end. The concatenation of all
    deltas equals ``tokenizer.decode(generated ids)`` in context of the prompt.

    The scheme is the one vLLM and text-generation-inference use: decode a short window that
    starts a few tokens back (``prefix``) twice — without and with the new tokens — and emit
    the difference once it does not end in U+FFFD. Each step decodes only a few tokens.
    """

    def __init__(self, tokenizer: _Decodes, context: Sequence[int] = (), *, skip_special_tokens: bool = True):
        self._tok = tokenizer
        self._skip = skip_special_tokens
        ctx = [int(t) for t in context][-CONTEXT_TOKENS:]
        # A context that itself ends mid-character would make every later diff wrong.
        while ctx and self._decode(ctx).endswith(_REPLACEMENT):
            ctx = ctx[1:]
        self._ids: list[int] = ctx
        self._prefix = 0          # start of the window decoded each step
        self._read = len(ctx)     # ids before this index have been emitted
        self._text_parts: list[str] = []

    def _decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=self._skip)

    def push(self, token_id: int) -> str:
        """Add one generated token; return the newly final text ("" when none)."""
        self._ids.append(int(token_id))
        prefix_text = self._decode(self._ids[self._prefix:self._read])
        new_text = self._decode(self._ids[self._prefix:])
        if len(new_text) > len(prefix_text) and not new_text.endswith(_REPLACEMENT):
            delta = new_text[len(prefix_text):]
            self._prefix = self._read
            self._read = len(self._ids)
            self._text_parts.append(delta)
            return delta
        return ""

    def flush(self) -> str:
        """The text still held back (an incomplete character at the very end is emitted as
        the tokenizer decodes it, U+FFFD included — there is nothing more to wait for)."""
        prefix_text = self._decode(self._ids[self._prefix:self._read])
        new_text = self._decode(self._ids[self._prefix:])
        self._prefix = self._read = len(self._ids)
        delta = new_text[len(prefix_text):] if new_text.startswith(prefix_text) else ""
        if delta:
            self._text_parts.append(delta)
        return delta

    @property
    def text(self) -> str:
        """All text emitted so far."""
        return "".join(self._text_parts)


class StopMatcher:
    """Finds the first occurrence of any stop string in a stream of text deltas.

    ``feed(delta)`` returns ``(text to emit now, matched stop string or None)``. Text is held
    back while its tail is a proper prefix of some stop string; once a stop string occurs,
    the text before it is emitted and everything from it on is dropped. ``flush()`` releases
    what is held when generation ends for another reason. With no stop strings every delta
    passes straight through.
    """

    def __init__(self, stops: Sequence[str] = ()):
        self.stops: tuple[str, ...] = tuple(stops)
        if any(not isinstance(s, str) or not s for s in self.stops):
            raise ValueError("stop strings must be non-empty str")
        self._held = ""
        self.matched: str | None = None

    def feed(self, delta: str) -> tuple[str, str | None]:
        if self.matched is not None:
            return "", self.matched
        if not self.stops:
            return delta, None
        buf = self._held + delta
        # Earliest match wins; among matches at the same index, the longest.
        best = -1
        best_stop = None
        for s in self.stops:
            i = buf.find(s)
            if i >= 0 and (best < 0 or i < best or (i == best and len(s) > len(best_stop or ""))):
                best, best_stop = i, s
        if best_stop is not None:
            self._held = ""
            self.matched = best_stop
            return buf[:best], best_stop
        hold = self._partial_len(buf)
        self._held = buf[len(buf) - hold:] if hold else ""
        return buf[:len(buf) - hold], None

    def _partial_len(self, buf: str) -> int:
        """Length of the longest suffix of buf that is a proper prefix of a stop string."""
        best = 0
        for s in self.stops:
            for n in range(min(len(s) - 1, len(buf)), best, -1):
                if buf.endswith(s[:n]):
                    best = n
                    break
        return best

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held if self.matched is None else ""
