"""Text <-> token ids, the way Hugging Face does it for the same files.

libvt works on token ids only; this module owns the text side:

* ``tokenizer.json`` through the ``tokenizers`` library (byte-level BPE as in GPT-2 /
  Llama-3 / SmolLM2, and SentencePiece-style BPE with byte fallback as in Llama-2 /
  TinyLlama);
* a SentencePiece ``tokenizer.model`` through ``sentencepiece`` (optional dependency);
* BOS handling and special tokens per ``tokenizer_config.json``.
* the chat template a checkpoint ships (``tokenizer_config.json``'s ``chat_template``, a string
  or a list of named templates, or ``chat_template.jinja``; :func:`template_source`).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from ._files import CONFIG_LIMIT, TEMPLATE_LIMIT, TOKENIZER_LIMIT, check_path, read_bytes, read_text

__all__ = ["Tokenizer", "resolve_tokenizer_path", "template_source"]

_log = logging.getLogger("pyvt")


def _panic(e: BaseException) -> bool:
    """The `tokenizers` library (Rust, through pyo3) reports a panic as PanicException, a
    BaseException that `except Exception` does not catch."""
    return not isinstance(e, (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_bytes(path, "tokenizer config", CONFIG_LIMIT).decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _token_text(value: Any) -> str | None:
    """tokenizer_config.json writes special tokens as strings or AddedToken dicts."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def template_source(value: Any, name: str | None = None) -> str | None:
    """The template text from a ``chat_template`` value: a string, or a list of
    ``{"name", "template"}`` entries (``name``, else ``"default"``, else the only one)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        named = {e.get("name"): e.get("template") for e in value if isinstance(e, Mapping)}
        if name is not None:
            if name not in named:
                raise ValueError(f"no chat template named {name!r} (the model has {', '.join(map(str, named))})")
            return named[name]
        if "default" in named:
            return named["default"]
        if len(named) == 1:
            return next(iter(named.values()))
        raise ValueError(f"the model has several chat templates ({', '.join(map(str, named))}) and none is "
                         "named 'default'; pass chat_template=")
    raise ValueError(f"chat_template must be a str or a list of named templates, got {type(value).__name__}")


def resolve_tokenizer_path(model_path: str | Path, tokenizer_path: str | Path | None = None) -> Path:
    """Find the tokenizer for a checkpoint (SPEC §3 order).

    An explicit ``tokenizer_path`` wins. Otherwise, for a weights file ``dir/name.safetensors``:
    ``dir/name_tokenizer.json``, then ``dir/tokenizer.json``, then ``dir/tokenizer.model``.
    For a folder: ``tokenizer.json`` then ``tokenizer.model`` inside it.
    """
    if tokenizer_path is not None:
        p = Path(check_path(tokenizer_path, "tokenizer_path"))
        if not p.exists():
            raise FileNotFoundError(f"tokenizer_path {str(p)!r} does not exist")
        return p
    mp = Path(model_path)
    if mp.is_dir():
        folder, candidates = mp, []
    else:
        folder = mp.parent
        stem = mp.name.split(".")[0]
        candidates = [folder / f"{stem}_tokenizer.json"]
    candidates += [folder / "tokenizer.json", folder / "tokenizer.model"]
    for c in candidates:
        # lexists: a FIFO or a dangling link is reported when it is read, not skipped.
        if os.path.lexists(c) and not c.is_dir():
            return c
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"no tokenizer found for {str(mp)!r} (tried {tried}); pass tokenizer_path=")


class Tokenizer:
    """Encode/decode identical to Hugging Face's for the same files.

    ``path`` is a ``tokenizer.json`` or a SentencePiece ``tokenizer.model``; a
    ``tokenizer_config.json`` in the same folder (if any) supplies BOS/EOS handling and the
    chat template.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not os.path.lexists(self.path):
            raise FileNotFoundError(f"tokenizer file {str(self.path)!r} does not exist")
        cfg_path = self.path.parent / "tokenizer_config.json"
        # lexists: a dangling or looping symlink is reported (OSError naming it), not skipped.
        self.config: dict[str, Any] = _read_json(cfg_path) if os.path.lexists(cfg_path) else {}
        self._sp = None
        self._tk = None
        self._json = ""
        self._tk_plain = None  # a second instance that encodes special tokens as text (encode_plain)
        if self.path.suffix == ".model":
            try:
                import sentencepiece as spm
            except ImportError:
                raise ImportError(
                    f"{self.path} is a SentencePiece model: install the 'sentencepiece' package "
                    "(pip install 'pyvt[sentencepiece]')"
                ) from None
            self._sp = spm.SentencePieceProcessor()
            proto = read_bytes(self.path, "SentencePiece model", TOKENIZER_LIMIT)
            try:
                self._sp.LoadFromSerializedProto(proto)
            except Exception as e:  # sentencepiece raises OSError/RuntimeError on bad files
                raise ValueError(f"{self.path}: not a valid SentencePiece model ({e})") from None
        else:
            from tokenizers import Tokenizer as _HFTokenizer

            raw = read_bytes(self.path, "tokenizer file", TOKENIZER_LIMIT)
            try:
                self._json = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{self.path}: not a valid tokenizer.json (not UTF-8 text at byte {e.start})") from None
            try:
                self._tk = _HFTokenizer.from_str(self._json)
            except BaseException as e:  # a bare Exception on parse errors; PanicException on worse
                if not _panic(e):
                    raise
                msg = " ".join(str(e).split())[:300]
                raise ValueError(f"{self.path}: not a valid tokenizer.json ({type(e).__name__}: {msg})") from None
            self._disable_encode_time_settings()

        self.bos_token = _token_text(self.config.get("bos_token"))
        self.eos_token = _token_text(self.config.get("eos_token"))
        self.bos_token_id = self.token_to_id(self.bos_token) if self.bos_token else None
        self.eos_token_id = self.token_to_id(self.eos_token) if self.eos_token else None
        if self._sp is not None:
            if self.bos_token_id is None and self._sp.bos_id() >= 0:
                self.bos_token_id = self._sp.bos_id()
            if self.eos_token_id is None and self._sp.eos_id() >= 0:
                self.eos_token_id = self._sp.eos_id()
        add_bos = self.config.get("add_bos_token")
        self.add_bos_token: bool | None = add_bos if isinstance(add_bos, bool) else None
        tmpl = self.config.get("chat_template")
        if tmpl is None:
            jinja = self.path.parent / "chat_template.jinja"
            if os.path.lexists(jinja):
                tmpl = read_text(jinja, "chat template", TEMPLATE_LIMIT)
        self.chat_template: Any = tmpl

    def _disable_encode_time_settings(self) -> None:
        """tokenizer.json may ask `tokenizers` to pad (to 10^9 tokens, out of memory), truncate
        (every prompt cut silently) or drop BPE merges at random (greedy output no longer
        deterministic) at encode time. Hugging Face transformers encodes without padding or
        truncation unless asked; pyvt never asks, and encodes deterministically."""
        tk = self._tk
        off = []
        if tk.padding is not None:
            tk.no_padding()
            off.append("padding")
        if tk.truncation is not None:
            tk.no_truncation()
            off.append("truncation")
        dropout = getattr(tk.model, "dropout", None)
        if dropout:
            tk.model.dropout = None
            off.append(f"BPE dropout {dropout}")
        if off:
            _log.warning("%s: ignoring the file's encode-time %s (pyvt encodes whole prompts, "
                         "deterministically)", self.path, ", ".join(off))

    # ---- vocabulary --------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        if self._sp is not None:
            return int(self._sp.GetPieceSize())
        return int(self._tk.get_vocab_size(with_added_tokens=True))

    @property
    def max_token_chars(self) -> int:
        """The longest token's text, in characters (vocabulary and added tokens): a bound on
        how much text one token can stand for, used to refuse a prompt too long for any
        context before tokenizing it."""
        n = getattr(self, "_max_token_chars", None)
        if n is None:
            if self._sp is not None:
                n = max((len(self._sp.IdToPiece(i)) for i in range(self._sp.GetPieceSize())), default=1)
            else:
                n = max((len(t) for t in self._tk.get_vocab(with_added_tokens=True)), default=1)
            self._max_token_chars = n = max(int(n), 1)
        return n

    def token_to_id(self, token: str) -> int | None:
        if self._sp is not None:
            i = self._sp.PieceToId(token)
            return int(i) if i != self._sp.unk_id() or token == self._sp.IdToPiece(i) else None
        i = self._tk.token_to_id(token)
        return None if i is None else int(i)

    def id_to_token(self, token_id: int) -> str | None:
        if self._sp is not None:
            if 0 <= token_id < self._sp.GetPieceSize():
                return self._sp.IdToPiece(token_id)
            return None
        return self._tk.id_to_token(token_id)

    # ---- encode / decode -----------------------------------------------------------------

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text``; with ``add_special_tokens``, BOS as the checkpoint wants it."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"text is not valid Unicode: {e.reason} at index {e.start} "
                             f"({text[e.start:e.end]!r})") from None
        if self._sp is not None:
            ids = [int(i) for i in self._sp.EncodeAsIds(text)]
            want_bos = self.add_bos_token if self.add_bos_token is not None else True
            if add_special_tokens and want_bos and self.bos_token_id is not None:
                ids = [self.bos_token_id] + ids
            return ids
        ids = self._hf_encode(self._tk, text, add_special_tokens)
        if add_special_tokens and self.bos_token_id is not None and self.add_bos_token is not None:
            has_bos = bool(ids) and ids[0] == self.bos_token_id
            if self.add_bos_token and not has_bos:
                ids.insert(0, self.bos_token_id)
            elif not self.add_bos_token and has_bos and not text.startswith(self.bos_token or "\0"):
                ids.pop(0)
        return ids

    def _hf_encode(self, tk: Any, text: str, add_special_tokens: bool) -> list[int]:
        try:
            return list(tk.encode(text, add_special_tokens=add_special_tokens).ids)
        except BaseException as e:
            if not _panic(e):
                raise
            raise ValueError(f"{self.path}: the tokenizer failed on this text ({type(e).__name__}: "
                             f"{' '.join(str(e).split())[:200]})") from None

    def special_tokens(self) -> dict[str, int]:
        """The special tokens' text -> id: the strings that ``encode`` turns into control
        tokens (none for SentencePiece, whose control pieces never match text)."""
        if self._sp is not None:
            return {}
        return {tok.content: int(tid) for tid, tok in self._tk.get_added_tokens_decoder().items()
                if getattr(tok, "special", False) and tok.content}

    def special_token_strip(self) -> dict[str, tuple[bool, bool]]:
        """Special token text -> (lstrip, rstrip): whether it absorbs the whitespace on its left /
        right when matched, as `tokenizers` does."""
        if self._sp is not None:
            return {}
        return {tok.content: (bool(tok.lstrip), bool(tok.rstrip))
                for tok in self._tk.get_added_tokens_decoder().values() if getattr(tok, "special", False)}

    def encode_plain(self, text: str) -> list[int]:
        """Token ids of `text` with special-token strings encoded as the text they spell, never
        as control tokens (user content in a chat: ``<|im_end|>`` typed by a user must not
        end a turn). No BOS is added."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if self._sp is not None:
            return self.encode(text, add_special_tokens=False)
        if self._tk_plain is None:
            from tokenizers import Tokenizer as _HFTokenizer

            plain = _HFTokenizer.from_str(self._tk.to_str())
            plain.encode_special_tokens = True
            self._tk_plain = plain
        return self._hf_encode(self._tk_plain, text, False)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of ``ids``; ids the vocabulary does not have decode to nothing."""
        ids = [int(i) for i in ids]
        for k, i in enumerate(ids):
            if not 0 <= i < 2**32:
                raise ValueError(f"token id {i} (ids[{k}]) is not a token id (must be in [0, 2**32))")
        if self._sp is not None:
            if skip_special_tokens:
                ids = [i for i in ids if not self._sp.IsControl(i)]
            return self._sp.DecodeIds(ids)
        return self._tk.decode(ids, skip_special_tokens=skip_special_tokens)

    def special_token_ids(self) -> set[int]:
        if self._sp is not None:
            return {i for i in range(self._sp.GetPieceSize()) if self._sp.IsControl(i)}
        out = set()
        for tid, tok in self._tk.get_added_tokens_decoder().items():
            if getattr(tok, "special", False):
                out.add(int(tid))
        return out

    def __repr__(self) -> str:
        return f"Tokenizer({str(self.path)!r}, vocab_size={self.vocab_size})"

