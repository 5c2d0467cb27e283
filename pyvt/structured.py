"""Structured output: JSON constrained by a JSON schema (or any JSON object), enforced with a
token mask from llguidance (SPEC §10; issue 17).

Three pieces, each with one owner:

* :func:`compile_json_grammar` — the options' side: a schema (a dict or its JSON text) or
  ``json_object`` -> llguidance's grammar text, checked once (``ValueError`` naming the field
  for a schema that is not JSON, not an object, or that llguidance cannot compile). Cached
  per schema text.
* :func:`grammar_tokenizer` — the tokenizer bridge: llguidance's view of a model's vocabulary
  (every token's bytes, the EOS ids), built from our ``tokenizer.json`` (also the one pyvt
  writes for a GGUF) and cached per tokenizer content: building it costs ~0.4 s for a
  49152-token vocabulary.
* :class:`JsonConstraint` — one sequence's matcher: :meth:`~JsonConstraint.mask` gives the
  logits with every token the grammar forbids at this step set to ``-inf``;
  :meth:`~JsonConstraint.advance` moves the grammar past the chosen token. The generation
  loop (:class:`pyvt.generation._Sequence`) calls them around its token chooser, so greedy,
  temperature, top-k / top-p, min-p all weigh only allowed tokens.

The JSON is written on one line with ``", "`` and ``": "`` separators and no other
whitespace (``json.dumps``' default layout): a free-whitespace grammar lets a small model
spend its whole budget on newlines. A schema's own ``"x-guidance"`` options override this.

llguidance is an optional dependency (``pip install 'pyvt[json]'``): without it, asking for
structured output raises ``ImportError`` saying so; nothing else needs it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

__all__ = ["JsonConstraint", "JsonGrammar", "compile_json_grammar", "grammar_tokenizer"]

#: llguidance's JSON options: json.dumps' layout, no free whitespace (see the module doc).
JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}

#: ``json_object=True``: any JSON object.
ANY_OBJECT_SCHEMA = '{"type": "object"}'


def _llguidance() -> Any:
    try:
        import llguidance
    except ImportError:
        raise ImportError("structured output (json_schema / json_object) needs the 'llguidance' package: "
                          "pip install 'pyvt[json]'") from None
    return llguidance


# ==========================================================================================
# Schema -> grammar
# ==========================================================================================


def schema_text(value: Any, field: str = "json_schema") -> str:
    """A JSON schema given as a dict or as its JSON text -> its JSON text (key order kept:
    properties are generated in the schema's order). ``ValueError`` naming ``field`` when it
    is not JSON or not a JSON object."""
    if isinstance(value, (str, bytes, bytearray)):
        try:
            parsed = json.loads(value)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{field} is not valid JSON: {e}") from None
        except RecursionError:
            raise ValueError(f"{field} is nested too deeply") from None
    else:
        parsed = value
    if not isinstance(parsed, dict):
        raise ValueError(f"{field} must be a JSON schema: a JSON object such as {{\"type\": \"object\", ...}} "
                         f"(a dict or its JSON text), got {type(parsed).__name__}")
    try:
        return json.dumps(parsed, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{field} cannot be written as JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"{field} is nested too deeply") from None


@functools.lru_cache(maxsize=256)
def compile_json_grammar(schema: str, field: str = "json_schema") -> str:
    """llguidance's grammar (its JSON text) for a schema's JSON text, checked: ``ValueError``
    naming ``field`` with llguidance's reason when the schema cannot be compiled (an invalid
    type, an unsupported keyword, a dangling ``$ref``...)."""
    llg = _llguidance()
    try:
        grammar = llg.LLMatcher.grammar_from_json_schema(schema, defaults=JSON_LAYOUT)
    except ValueError as e:
        raise ValueError(f"{field} is not a usable JSON schema: {e}") from None
    err = llg.LLMatcher.validate_grammar(grammar, None)
    if err:
        raise ValueError(f"{field} is not a usable JSON schema: {' '.join(err.split())[:400]}")
    return grammar


# ==========================================================================================
# Tokenizer bridge
# ==========================================================================================

_TOKENIZERS: dict[tuple[str, int, tuple[int, ...]], Any] = {}
_TOKENIZERS_LOCK = threading.Lock()
_TOKENIZERS_MAX = 8
_DIGESTS: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()  # Tokenizer -> content hash


def grammar_tokenizer(tokenizer: Any, vocab_size: int, eos_ids: Iterable[int]) -> Any:
    """llguidance's ``LLTokenizer`` for a :class:`pyvt.Tokenizer` and a model's vocabulary
    size (the logits' width: ids past the tokenizer's are never allowed) and EOS ids (the
    tokens that may end the JSON). Cached by the tokenizer's content, so reloading a model
    reuses it. Only ``tokenizer.json`` tokenizers (``tokenizers``: also what pyvt writes for a
    GGUF) are supported; a SentencePiece ``tokenizer.model`` raises ``ValueError``."""
    hf = getattr(tokenizer, "_tk", None)
    if hf is None:
        raise ValueError(f"{tokenizer.path}: structured output needs a tokenizer.json tokenizer; "
                         "this model has a SentencePiece tokenizer.model only")
    llg = _llguidance()
    eos = tuple(sorted(int(i) for i in eos_ids))
    if not eos:
        raise ValueError(f"{tokenizer.path}: structured output needs an EOS token to end the JSON; "
                         "the model has none")
    with _TOKENIZERS_LOCK:
        # Serializing a 49152-token tokenizer takes ~30 ms: once per Tokenizer object.
        digest = _DIGESTS.get(tokenizer)
        if digest is None:
            text = hf.to_str()
            digest = _DIGESTS[tokenizer] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        key = (digest, int(vocab_size), eos)
        hit = _TOKENIZERS.get(key)
        if hit is not None:
            return hit
        text = hf.to_str()
        try:
            lt = llg.LLTokenizer(text, n_vocab=int(vocab_size), eos_token=list(eos))
        except Exception as e:  # llguidance raises ValueError / RuntimeError on tokenizers it cannot read
            raise ValueError(f"{tokenizer.path}: llguidance cannot read this tokenizer: {e}") from None
        if len(_TOKENIZERS) >= _TOKENIZERS_MAX:
            _TOKENIZERS.pop(next(iter(_TOKENIZERS)))
        _TOKENIZERS[key] = lt
        return lt


# ==========================================================================================
# Masks
# ==========================================================================================


def bitmask_to_bool(bits: np.ndarray, vocab: int) -> np.ndarray:
    """llguidance's (and xgrammar's) token bitmask -> bool ``[vocab]``: bit ``t % 32`` of
    int32 word ``t // 32`` is token ``t`` (little-endian bytes, least significant bit first)."""
    return np.unpackbits(bits.view(np.uint8), bitorder="little")[:vocab].view(bool)


def apply_allowed(ok: np.ndarray, z: np.ndarray) -> np.ndarray:
    """A copy of the logits row ``z`` with ``-inf`` where ``ok`` is false (ids past ``ok``'s
    end: logits wider than the tokenizer's vocabulary, never allowed)."""
    n = z.shape[-1]
    if n > ok.shape[0]:
        ok = np.concatenate([ok, np.zeros(n - ok.shape[0], dtype=bool)])
    ok = ok[:n]
    if not ok.any():
        raise RuntimeError("structured output: the grammar allows no token at this step")
    return np.where(ok, z, np.asarray(-np.inf, dtype=z.dtype))


# ==========================================================================================
# One sequence's constraint
# ==========================================================================================


@dataclass(frozen=True)
class JsonGrammar:
    """A compiled grammar on one model's vocabulary: what every sequence that asks for it
    starts from (:meth:`start` gives a fresh :class:`JsonConstraint`)."""

    grammar: str        # llguidance's grammar text (compile_json_grammar)
    tokenizer: Any      # llguidance.LLTokenizer (grammar_tokenizer)

    def start(self) -> "JsonConstraint":
        return JsonConstraint(self.grammar, self.tokenizer)


class JsonConstraint:
    """The grammar state of one sequence.

    Per step: ``z = constraint.mask(z)`` (a copy of the logits row with forbidden tokens at
    ``-inf``), choose a token from it, then ``constraint.advance(token)``. ``done`` is true
    once the JSON is complete: then only EOS is allowed."""

    def __init__(self, grammar: str, tokenizer: Any):
        llg = _llguidance()
        self._m = llg.LLMatcher(tokenizer, grammar, log_level=0)
        if self._m.is_error():
            raise ValueError(f"json_schema: llguidance refused the grammar: {self._m.get_error()}")
        self.vocab = int(tokenizer.vocab_size)
        self._words = (self.vocab + 31) // 32
        self._bits = np.empty(self._words, dtype=np.int32)

    def allowed(self) -> np.ndarray:
        """bool ``[vocab]``: the tokens the grammar allows next."""
        m = self._m
        m.unsafe_compute_mask_ptr(self._bits.ctypes.data, self._bits.nbytes)
        if m.is_error():
            raise RuntimeError(f"structured output: the grammar matcher failed: {m.get_error()}")
        return bitmask_to_bool(self._bits, self.vocab)

    def mask(self, z: np.ndarray) -> np.ndarray:
        """A copy of the logits row ``z`` with every token the grammar forbids at ``-inf``."""
        return apply_allowed(self.allowed(), z)

    def advance(self, token: int) -> None:
        """Move the grammar past ``token`` (one the mask allowed)."""
        if not self._m.consume_token(int(token)):
            raise RuntimeError(f"structured output: token {token} is not allowed by the grammar: "
                               f"{self._m.get_error()}")

    @property
    def done(self) -> bool:
        """The JSON is complete: nothing but EOS may follow."""
        return bool(self._m.is_stopped())
