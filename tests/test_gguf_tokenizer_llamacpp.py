"""pyvt's tokenizer for GGUF vocabularies against llama.cpp's own token ids.

tests/data/gguf_tokenizer_llamacpp.json (tools/make_llamacpp_golden.py, llama-cpp-python)
holds small vocabularies of every kind pyvt rebuilds from tokenizer.ggml.* metadata —
SentencePiece with and without the space prefix (user-defined pieces with real spaces, control
tokens), byte-level BPE under every pre-tokenizer name pyvt maps, with merges that cross GPT-2's
split and a word no merge builds (the Llama 3 family's ignore_merges) — and the ids llama.cpp
gives for a corpus ("gpt2" is no llama.cpp name; this llama.cpp refuses "minerva"). Each file is rebuilt here, read through pyvt, and must give the same ids: with special
tokens parsed (``encode``, BOS as the file says) and not (``encode_plain``: user content).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gguf_writer as gw
from gguf_vocab import gguf_meta

DATA = json.loads((Path(__file__).parent / "data" / "gguf_tokenizer_llamacpp.json").read_text(encoding="utf-8"))
CASES = sorted(DATA["cases"])


def test_every_vocabulary_kind_is_covered():
    """Both SentencePiece flavours, and every pre-tokenizer name pyvt maps (and none)."""
    from pyvt import gguf_tokenizer as G

    kinds = {(c["tokenizer.ggml.model"], c.get("pre"), c.get("add_space_prefix", True)) for c in DATA["cases"].values()}
    assert ("llama", None, True) in kinds and ("llama", None, False) in kinds
    pres = {pre for model, pre, _ in kinds if model == "gpt2"}
    assert None in pres
    assert pres >= (set(G._SPLIT_PRE) | G._DIGITS_PRE | G._GPT2_PRE) - {"", "gpt2", "minerva"}


@pytest.mark.parametrize("name", CASES)
def test_gguf_tokenizer_matches_llama_cpp(tmp_path, name):
    """The files pyvt writes for a GGUF (tokenizer.json, tokenizer_config.json: what
    ``load_model("x.gguf")`` and ``pyvt convert`` read) through pyvt's Tokenizer."""
    import pyvt.convert as convert
    from pyvt import gguf
    from pyvt.tokenizer import Tokenizer

    case = DATA["cases"][name]
    if case.get("vocab") == "bpe":  # the byte-level vocabulary, stored once
        case = {**DATA["bpe_vocab"], **case}
    path = tmp_path / f"{name}.gguf"
    gw.write_gguf(path, gguf_meta(case))
    with gguf.read_gguf(path) as g:
        if case["tokenizer.ggml.model"] == "gpt2" and "pre" not in case:  # llama.cpp warns too
            with pytest.warns(UserWarning, match=r"no pre-tokenizer named .*'default'"):
                tk, info = convert.build_tokenizer(g.metadata, str(path))
        else:
            tk, info = convert.build_tokenizer(g.metadata, str(path))
        tok_config, _ = convert.tokenizer_config(g.metadata, info, 128, str(path))
        # The ids generation ends on: llama.cpp's (metadata EOS / EOT / EOM, and tokens spelled
        # <end_of_turn>, <|im_end|>, ...).
        assert sorted(convert.eos_token_ids(g.metadata, len(case["tokens"]), str(path))) == case["eog"]
    tk.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(tok_config), encoding="utf-8")
    tok = Tokenizer(tmp_path / "tokenizer.json")
    bad = []
    for text, want in case["ids"].items():
        got, got_plain = tok.encode(text), tok.encode_plain(text)
        if got != want["special"]:
            bad.append(f"{text!r}: {got} != llama.cpp {want['special']}")
        if got_plain != want["plain"]:
            bad.append(f"{text!r} (plain): {got_plain} != llama.cpp {want['plain']}")
    assert not bad, f"{name}: {len(bad)} of {2 * len(case['ids'])} differ:\n" + "\n".join(bad)
