"""The one EOS list (issue 14): decided once at load — config.json, generation_config.json,
the tokenizer's eos_token — and the same for the C vt_generate and pyvt.generate, also when
the tokenizer is not <dir>/tokenizer.json (tokenizer_path=, or a SentencePiece-only
tokenizer.model, whose EOS only Python can read): pyvt hands its tokenizer's EOS to libvt
through vt_model_options.extra_eos_ids."""

from __future__ import annotations

import json

import pytest

import pyvt
from pyvt import _model

import llama_ref as R
import textgen_models as T


@pytest.fixture(scope="module")
def scripted(tmp_path_factory, default_model_dir):
    """A model reciting a b c STOP d e (config EOS 2), its tokenizer moved elsewhere with
    eos_token = STOP's text."""
    tok = pyvt.Tokenizer(default_model_dir / "tokenizer.json")
    a, b, c, stop, d, e = tok.encode(" one two three four five six", add_special_tokens=False)[:6]
    assert stop != T.EOS and len({a, b, c, stop, d, e}) == 6
    folder = tmp_path_factory.mktemp("eosmodel")
    T.write_scripted_model(folder, default_model_dir, T.script_successors([[a, b, c, stop, d, e]], eos_after=False))
    elsewhere = tmp_path_factory.mktemp("eostok")
    for name in T.TOKENIZER_FILES:
        if (folder / name).exists():
            (folder / name).rename(elsewhere / name)
    tc = json.loads((elsewhere / "tokenizer_config.json").read_text())
    tc["eos_token"] = tok.id_to_token(stop)
    (elsewhere / "tokenizer_config.json").write_text(json.dumps(tc))
    return folder, elsewhere, [a, b], stop


def test_tokenizer_path_eos_reaches_both_generation_paths(scripted):
    folder, elsewhere, prompt, stop = scripted
    with pyvt.load_model(folder, tokenizer_path=elsewhere / "tokenizer.json", device="cpu") as m:
        assert m.tokenizer.eos_token_id == stop
        # One list, decided at load: what libvt reports is what pyvt stops on.
        assert list(m.info["eos_token_ids"]) == [T.EOS, stop]
        assert m.eos_token_ids == {T.EOS, stop}
        # The C path (vt_generate) stops on the tokenizer's EOS ...
        toks, stats = m._native.generate(prompt, max_new_tokens=10)
        assert toks[-1] == stop and stats["finish_reason"] == "eos"
        # ... and so does pyvt.generate, on the same token.
        r = pyvt.generate(m, prompt, max_new_tokens=10)
        assert list(r.tokens) == toks and r.finish_reason == "eos"
    # Without the tokenizer's EOS libvt knows only config.json's: the run goes on past it.
    with _model.Model(str(folder), device="cpu") as n:
        assert list(n.info["eos_token_ids"]) == [T.EOS]
        toks, stats = n.generate(prompt, max_new_tokens=4)
        assert stop in toks and toks[-1] != stop and stats["finish_reason"] == "length"


def test_extra_eos_ids_option(tmp_path):
    # The option a caller whose tokenizer libvt cannot read (SentencePiece tokenizer.model)
    # uses: appended without repeats, checked, and the C path stops on it.
    cfg = R.TinyConfig()
    R.write_checkpoint(tmp_path, cfg, dtype="BF16")
    with _model.Model(str(tmp_path), device="cpu") as m:
        free, _ = m.generate([1, 5, 9], max_new_tokens=8, stop_on_eos=False)
    stop = next(t for t in free if t != cfg.eos)
    with _model.Model(str(tmp_path), device="cpu", extra_eos_ids=(cfg.eos, stop)) as m:
        assert list(m.info["eos_token_ids"]) == [cfg.eos, stop]
        toks, stats = m.generate([1, 5, 9], max_new_tokens=8)
        assert toks == free[:free.index(stop) + 1] and stats["finish_reason"] == "eos"
    with pytest.raises(ValueError, match="extra_eos_ids must be token ids"):
        _model.Model(str(tmp_path), device="cpu", extra_eos_ids=(-1,))
