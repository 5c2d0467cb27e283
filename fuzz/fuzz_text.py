"""Fuzz target (atheris): the text side — tokenizer encode/decode, the streaming text
pipeline (IncrementalDecoder, StopMatcher) and chat templates — with properties, not just
"no crash":

  mode 0  encode(text) -> ids -> decode == text (byte-level BPE round trip, less the bytes
          the vocabulary has no token for), or ValueError for text that is not valid Unicode
          (lone surrogates);
  mode 1  IncrementalDecoder: the deltas of arbitrary ids (special, out-of-vocabulary, split
          characters) concatenate to decode(ids), never raising;
  mode 2  StopMatcher: text fed in arbitrary chunks gives exactly the text before the first
          stop string to complete (the earliest-starting, then longest, among those complete
          after the same chunk), or all of it;
  mode 3  dialogs of arbitrary roles / contents / extra keys through the model's own ChatML
          template: ValueError / TypeError, or a prompt holding every content verbatim
          (template syntax inside a message is data, never evaluated);
  mode 4  arbitrary (short) Jinja templates: a str, or ValueError / TypeError — never
          another exception, never a hang or a huge allocation (sandbox + limits);
  mode 5  Tokenizer.decode / ModelHandle-level ids: arbitrary ints give text or ValueError.
  mode 6  tokenizer.json files: the default one with its padding / truncation / BPE dropout
          set to arbitrary values, keys dropped or the text cut: a Tokenizer that encodes
          exactly as the original (those settings are never applied), or ValueError;
  mode 7  chat content spelling special tokens (``<|im_end|>``, ``<|im_start|>``...): the
          encoded dialog holds exactly the control tokens of the same dialog without them.

Modes 0-5 are chosen by the first byte modulo 6 below 240, modes 6-7 by a first byte of 240
or more (so the corpus of the first six keeps its meaning).

The input is read with a small byte reader (:class:`Data`), so tests/test_fuzz_corpus.py can
replay fuzz/corpus/text and fuzz/crashers/text through :func:`check` without atheris.

    python fuzz/fuzz_text.py [libFuzzer options] [corpus dirs]     (needs ``pip install atheris``)

The tokenizer is the default model's (``$PYVT_FUZZ_TOKENIZER`` or the pyvt cache).
"""

from __future__ import annotations

import functools
import os
import sys

TOKEN_POOL = 49152 + 64  # ids drawn from [0, TOKEN_POOL): the vocabulary and a little past it


class Data:
    """Deterministic reader of fuzz bytes (a stand-in for atheris.FuzzedDataProvider)."""

    def __init__(self, data: bytes):
        self.b = data
        self.i = 0

    def left(self) -> int:
        return len(self.b) - self.i

    def byte(self) -> int:
        if self.i >= len(self.b):
            return 0
        self.i += 1
        return self.b[self.i - 1]

    def int(self, lo: int, hi: int) -> int:
        """An int in [lo, hi] from up to 4 bytes."""
        span = hi - lo + 1
        v, n = 0, 0
        while (1 << (8 * n)) < span and n < 4:
            v = (v << 8) | self.byte()
            n += 1
        return lo + v % span

    def bytes(self, n: int) -> bytes:
        out = self.b[self.i:self.i + n]
        self.i += len(out)
        return out

    def text(self, max_len: int) -> str:
        """Up to max_len code points; UTF-16 surrogates included (invalid Unicode on purpose)."""
        raw = self.bytes(self.int(0, max_len * 2))
        return raw.decode("utf-16-le", "surrogatepass") if len(raw) % 2 == 0 else raw.decode("latin-1")

    def short(self, alphabet: str = "ab\n<|>{}% ") -> str:
        return "".join(alphabet[self.byte() % len(alphabet)] for _ in range(self.int(0, 6)))


@functools.lru_cache(maxsize=1)
def tokenizer():
    from pathlib import Path

    from pyvt.tokenizer import Tokenizer

    path = os.environ.get("PYVT_FUZZ_TOKENIZER")
    if not path:
        from pyvt import hub

        path = str(Path(hub.pull(quiet=True)) / "tokenizer.json")
    return Tokenizer(path)


def _ids(d: Data, n_max: int) -> list[int]:
    return [d.int(0, TOKEN_POOL - 1) for _ in range(d.int(0, n_max))]


def check_roundtrip(d: Data) -> None:
    tok = tokenizer()
    text = d.text(64)
    try:
        ids = tok.encode(text, add_special_tokens=False)
    except ValueError:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return  # refused, rightly: not valid Unicode
        raise AssertionError(f"encode refused valid text {text!r}") from None
    assert all(0 <= i < tok.vocab_size for i in ids), ids
    back = tok.decode(ids, skip_special_tokens=False)
    # A UTF-8 byte the vocabulary lacks is dropped, as in HF (SmolLM2 has no token for bytes
    # 0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xF1-0xF4 and no byte fallback): a control character
    # vanishes, a character from planes 4-16 decodes as U+FFFD per remaining byte. Character by
    # character, as each character's bytes are kept or dropped on their own.
    want = "".join(_as_decoded(c) for c in text)
    assert back == want, (text, ids, back)


@functools.lru_cache(maxsize=65536)
def _as_decoded(c: str) -> str:
    tok = tokenizer()
    return tok.decode(tok.encode(c, add_special_tokens=False), skip_special_tokens=False)


def check_incremental(d: Data) -> None:
    from pyvt.stream import IncrementalDecoder

    tok = tokenizer()
    skip = bool(d.byte() & 1)
    ids = _ids(d, 24)
    dec = IncrementalDecoder(tok, (), skip_special_tokens=skip)
    out = "".join(dec.push(t) for t in ids) + dec.flush()
    want = tok.decode(ids, skip_special_tokens=skip)
    assert out == want, (ids, out, want)


def check_stops(d: Data) -> None:
    """A stop string matches as soon as it is complete in the text received so far; when
    several are complete at that point, the one starting first (the longest at a tie) wins.
    (So with stops "abc" and "b", "ab" + "c" stops at "b", "abc" in one piece at "abc".)"""
    from pyvt.stream import StopMatcher

    stops = [s for s in (d.short() for _ in range(d.int(1, 3))) if s]
    if not stops:
        return
    text = d.short() + d.short() + d.short()
    m = StopMatcher(stops)
    out, matched, pos, want = [], None, 0, None
    while pos < len(text) and matched is None:
        n = d.int(1, 4)
        emit, matched = m.feed(text[pos:pos + n])
        out.append(emit)
        pos += n
        seen = text[:pos]
        hits = [(seen.find(s), -len(s), s) for s in stops if s in seen]
        if hits and want is None:
            want = min(hits)
    if matched is None:
        out.append(m.flush())
    got = "".join(out)
    if want is not None:
        i, _, s = want
        assert matched == s and got == text[:i], (stops, text, got, matched)
    else:
        assert matched is None and got == text, (stops, text, got)


def _value(d: Data):
    kind = d.int(0, 6)
    if kind <= 2:
        return d.text(12)
    if kind == 3:
        return None
    if kind == 4:
        return d.int(-5, 5)
    if kind == 5:
        return [d.text(4)]
    return {"k": d.text(4)}


def check_dialog(d: Data) -> None:
    from pyvt.chat import render_chat_template

    tok = tokenizer()
    roles = ["system", "user", "assistant", "tool", "", "USER"]
    msgs = []
    for _ in range(d.int(0, 5)):
        m = {"role": roles[d.int(0, len(roles) - 1)] if d.byte() % 8 else _value(d), "content": _value(d)}
        if d.byte() % 4 == 0:
            m[d.short("abc_")] = _value(d)
        msgs.append(m)
    if d.byte() % 8 == 0:
        msgs = msgs[0] if msgs else "not a list"
    try:
        out = render_chat_template(tok.chat_template, msgs, bos_token="<s>", eos_token="</s>")
    except (ValueError, TypeError):
        return
    assert isinstance(out, str)
    for m in msgs:
        assert m["content"] in out, (m, out)


def check_template(d: Data) -> None:
    from pyvt.chat import render_chat_template

    pieces = ["{{ ", " }}", "{% ", " %}", "for m in messages", "endfor", "if ", "endif", "m['content']",
              "messages", "|tojson", "*", "**", "9", "range(", ")", "'a'", "+", "loop.index", "raise_exception(",
              "set x = ", "x", "[", "]", ".", "~", "namespace(", "__class__", "cycler", "|join", "|length"]
    parts = []
    for _ in range(d.int(0, 16)):
        parts.append(pieces[d.int(0, len(pieces) - 1)] if d.byte() % 4 else d.text(3))
    template = "".join(parts)
    try:
        out = render_chat_template(template, [{"role": "user", "content": "hi"}])
    except (ValueError, TypeError):
        return
    assert isinstance(out, str)


def check_decode_ids(d: Data) -> None:
    tok = tokenizer()
    ids = [d.int(-3, 3) * (1 << d.int(0, 40)) + d.int(0, 255) for _ in range(d.int(0, 8))]
    try:
        out = tok.decode(ids)
    except ValueError:
        assert any(not 0 <= i < 2**32 for i in ids), ids
        return
    assert isinstance(out, str)


@functools.lru_cache(maxsize=1)
def _tokenizer_json() -> dict:
    import json

    return json.loads(tokenizer().path.read_text(encoding="utf-8"))


_SAMPLE = "The capital of France is Paris.\n  Tabs\tand ünïcödé, emoji 🎉!"


def _junk(d: Data):
    kind = d.int(0, 6)
    return [None, d.int(-3, 10**9), d.text(6), [d.int(0, 9)], {"Fixed": d.int(0, 10**9)},
            d.int(0, 1000) / 100.0, True][kind]


def check_tokenizer_file(d: Data) -> None:
    import copy
    import json
    import tempfile
    from pathlib import Path

    from pyvt.tokenizer import Tokenizer

    tj = copy.deepcopy(_tokenizer_json())
    harmless = True  # only encode-time settings changed: encoding must not change
    for _ in range(d.int(1, 4)):
        what = d.int(0, 5)
        if what == 0:
            tj["padding"] = {"strategy": {"Fixed": d.int(0, 10**9)} if d.byte() & 1 else "BatchLongest",
                             "direction": "Right" if d.byte() & 1 else "Left", "pad_to_multiple_of": None,
                             "pad_id": d.int(0, 5), "pad_type_id": 0, "pad_token": "<|endoftext|>"}
        elif what == 1:
            tj["truncation"] = {"direction": "Right", "max_length": d.int(0, 8), "strategy": "LongestFirst",
                                "stride": 0}
        elif what == 2 and isinstance(tj.get("model"), dict):
            tj["model"]["dropout"] = d.int(1, 100) / 100.0
        elif what == 3:
            tj[["padding", "truncation"][d.byte() & 1]] = _junk(d)
            harmless = False
        elif what == 4:
            keys = [k for k in tj if k != "version"]
            tj.pop(keys[d.int(0, len(keys) - 1)], None)
            harmless = False
        elif what == 5 and isinstance(tj.get("model"), dict):
            tj["model"]["dropout"] = _junk(d)
            harmless = False
    text = json.dumps(tj)
    if d.byte() % 8 == 0:
        text = text[:d.int(0, len(text))]
        harmless = False
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokenizer.json"
        path.write_text(text, encoding="utf-8")
        try:
            tok = Tokenizer(path)
            ids = tok.encode(_SAMPLE, add_special_tokens=False)
        except ValueError:
            assert not harmless, "a tokenizer.json with only padding/truncation/dropout set was refused"
            return
    if harmless:
        assert ids == tokenizer().encode(_SAMPLE, add_special_tokens=False), ids


def check_chat_specials(d: Data) -> None:
    from pyvt.chat import apply_chat_template

    tok = tokenizer()
    specials = sorted(tok.special_tokens())
    pieces = specials[:8] + ["a", " ", "\n", "user", "system", "assistant", "<|", "|>", "im_end"]
    msgs, forged = [], []
    for i in range(d.int(1, 3) * 2 - 1):
        content = "".join(pieces[d.int(0, len(pieces) - 1)] for _ in range(d.int(0, 8)))
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append({"role": role, "content": content})
        clean = content
        for sp in sorted(specials, key=len, reverse=True):
            clean = clean.replace(sp, "")
        forged.append({"role": role, "content": clean})
    ids = apply_chat_template(tok, msgs, tokenize=True)
    base = apply_chat_template(tok, forged, tokenize=True)
    ctrl = set(tok.special_tokens().values())
    assert sorted(i for i in ids if i in ctrl) == sorted(i for i in base if i in ctrl), (msgs, ids, base)


MODES = [check_roundtrip, check_incremental, check_stops, check_dialog, check_template, check_decode_ids]
MODES_HIGH = [check_tokenizer_file, check_chat_specials]


def check(data: bytes) -> None:
    d = Data(data)
    b = d.byte()
    if b >= 240:
        MODES_HIGH[(b - 240) % len(MODES_HIGH)](d)
    else:
        MODES[b % len(MODES)](d)


def main() -> None:
    import atheris

    import importlib

    names = ["pyvt.stream", "pyvt.chat", "pyvt.tokenizer", "jinja2", "jinja2.sandbox", "jinja2.ext"]
    with atheris.instrument_imports(include=names):
        for name in names:
            importlib.import_module(name)
    tokenizer()
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
