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
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

__all__ = ["Tokenizer", "resolve_tokenizer_path", "template_source"]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read().decode("utf-8"))
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
        p = Path(tokenizer_path)
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
        if c.is_file():
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
        if not self.path.is_file():
            raise FileNotFoundError(f"tokenizer file {str(self.path)!r} does not exist")
        cfg_path = self.path.parent / "tokenizer_config.json"
        # lexists: a dangling or looping symlink is reported (OSError naming it), not skipped.
        self.config: dict[str, Any] = _read_json(cfg_path) if os.path.lexists(cfg_path) else {}
        self._sp = None
        self._tk = None
        if self.path.suffix == ".model":
            try:
                import sentencepiece as spm
            except ImportError:
                raise ImportError(
                    f"{self.path} is a SentencePiece model: install the 'sentencepiece' package "
                    "(pip install 'pyvt[sentencepiece]')"
                ) from None
            self._sp = spm.SentencePieceProcessor()
            try:
                self._sp.Load(str(self.path))
            except Exception as e:  # sentencepiece raises OSError/RuntimeError on bad files
                raise ValueError(f"{self.path}: not a valid SentencePiece model ({e})") from None
        else:
            from tokenizers import Tokenizer as _HFTokenizer

            try:
                self._tk = _HFTokenizer.from_file(str(self.path))
            except Exception as e:  # tokenizers raises a bare Exception on parse errors
                raise ValueError(f"{self.path}: not a valid tokenizer.json ({e})") from None

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
            if jinja.is_file():
                tmpl = jinja.read_text(encoding="utf-8")
        self.chat_template: Any = tmpl

    # ---- vocabulary --------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        if self._sp is not None:
            return int(self._sp.GetPieceSize())
        return int(self._tk.get_vocab_size(with_added_tokens=True))

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
        ids = list(self._tk.encode(text, add_special_tokens=add_special_tokens).ids)
        if add_special_tokens and self.bos_token_id is not None and self.add_bos_token is not None:
            has_bos = bool(ids) and ids[0] == self.bos_token_id
            if self.add_bos_token and not has_bos:
                ids.insert(0, self.bos_token_id)
            elif not self.add_bos_token and has_bos and not text.startswith(self.bos_token or "\0"):
                ids.pop(0)
        return ids

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

