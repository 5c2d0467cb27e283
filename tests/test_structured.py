"""Structured output (issue 17): json_schema / json_object constrain generation through a
token mask (pyvt.structured, llguidance). Outputs must parse and validate against the schema
in every generation path (generate, stream, batched text_completion), greedy and sampled; bad
schemas are refused up front. Skipped without llguidance (pip install 'pyvt[json]'), except
the test of the message that says so."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import pyvt
from pyvt import GenerateOpts, generate, stream, text_completion
from pyvt import structured

from int16_ref import exact_batch_kv_cache
import llama_ref as R
import textgen_models as T

try:
    import llguidance  # noqa: F401
    HAVE_LLG = True
except ImportError:
    HAVE_LLG = False

needs_llg = pytest.mark.skipif(not HAVE_LLG, reason="llguidance is not installed (pip install 'pyvt[json]')")

# A schema exercising objects, required keys, enums, bounded integers, strings, arrays and
# nesting — every value bounded, so even a random model finishes within the token budget.
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "role": {"enum": ["admin", "user", "guest"]},
        "active": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 2},
        "home": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10}},
                 "required": ["city"], "additionalProperties": False},
    },
    "required": ["name", "age", "role", "active", "tags", "home"],
    "additionalProperties": False,
}


def check_person(obj) -> None:
    """PERSON's constraints, checked by hand (and by jsonschema when it is installed)."""
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    if jsonschema is not None:
        jsonschema.validate(obj, PERSON)
    assert isinstance(obj, dict) and set(obj) == set(PERSON["required"]), obj
    assert isinstance(obj["name"], str) and len(obj["name"]) <= 12
    assert isinstance(obj["age"], int) and not isinstance(obj["age"], bool) and 0 <= obj["age"] <= 120
    assert obj["role"] in ("admin", "user", "guest")
    assert isinstance(obj["active"], bool)
    assert isinstance(obj["tags"], list) and len(obj["tags"]) <= 2
    assert all(isinstance(t, str) and len(t) <= 6 for t in obj["tags"])
    assert isinstance(obj["home"], dict) and set(obj["home"]) == {"city"} and len(obj["home"]["city"]) <= 10


def valid_person(r: pyvt.GenerateResult, model) -> dict:
    assert r.finish_reason == "eos", (r.finish_reason, r.text)
    assert r.tokens[-1] in model.eos_token_ids
    obj = json.loads(r.text)
    check_person(obj)
    return obj


SAMPLED = [dict(), dict(temperature=1.0, seed=7), dict(temperature=1.0, seed=123, top_k=40, top_p=0.95),
           dict(temperature=0.8, seed=3, min_p=0.05, repetition_penalty=1.2, presence_penalty=0.5)]


# ---- options ------------------------------------------------------------------------------------------

@needs_llg
def test_schema_is_stored_as_json_text_and_validated():
    o = GenerateOpts(json_schema=PERSON)
    assert json.loads(o.json_schema) == PERSON
    assert list(json.loads(o.json_schema)["properties"]) == list(PERSON["properties"])  # order kept
    assert GenerateOpts(json_schema=json.dumps(PERSON)) == o
    assert hash(o) == hash(GenerateOpts(json_schema=PERSON))
    assert o.replace(max_new_tokens=3).json_schema == o.json_schema
    assert GenerateOpts(json_object=True)._grammar_schema == structured.ANY_OBJECT_SCHEMA
    assert GenerateOpts()._grammar_schema is None


@needs_llg
@pytest.mark.parametrize("bad, match", [
    ({"type": "foo"}, "json_schema is not a usable JSON schema.*foo"),
    ('{"type": "object", ', "json_schema is not valid JSON"),
    ("[1, 2]", "json_schema must be a JSON schema: a JSON object .*got list"),
    (42, "json_schema must be a JSON schema: .*got int"),
    ("true", "json_schema must be a JSON schema: .*got bool"),
    ({"$ref": "#/$defs/missing"}, "json_schema is not a usable JSON schema"),
    ({"type": "object", "properties": {"x": {"type": "string", "minLength": 5, "maxLength": 2}},
      "required": ["x"]}, "json_schema is not a usable JSON schema: Unsatisfiable"),
    ({"not": {"type": "string"}}, "json_schema is not a usable JSON schema: Unimplemented keys.*not"),
    ({"type": "string", "format": "weird"}, "Unknown format: weird"),
    ({"type": "number", "x": float("nan")}, "json_schema cannot be written as JSON"),
])
def test_invalid_schemas_are_refused_up_front(bad, match):
    with pytest.raises(ValueError, match=match):
        GenerateOpts(json_schema=bad)


def test_schema_and_object_are_exclusive_and_json_object_is_a_bool():
    with pytest.raises(ValueError, match="json_schema and json_object are exclusive"):
        GenerateOpts(json_schema={"type": "object"}, json_object=True)
    with pytest.raises(ValueError, match="json_object must be a bool"):
        GenerateOpts(json_object="yes")


def test_missing_llguidance_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "llguidance", None)  # import llguidance -> ImportError
    structured.compile_json_grammar.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"pip install 'pyvt\[json\]'"):
            GenerateOpts(json_object=True)
    finally:
        structured.compile_json_grammar.cache_clear()
    assert GenerateOpts(max_new_tokens=3).json_schema is None  # nothing else needs it


# ---- the default model ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real(default_model_dir):
    if not HAVE_LLG:
        pytest.skip("llguidance is not installed")
    with pyvt.load_model(default_model_dir, kv_cache=exact_batch_kv_cache()) as m:
        yield m


def chat_prompt(model, text):
    return pyvt.apply_chat_template(model, [{"role": "user", "content": text}])


@needs_llg
@pytest.mark.parametrize("kw", SAMPLED, ids=["greedy", "t1", "t1-topk-topp", "minp-penalties"])
def test_default_model_output_validates_in_generate_and_stream(real, kw):
    prompt = chat_prompt(real, "Describe a person as JSON.")
    opts = GenerateOpts(json_schema=PERSON, max_new_tokens=120, **kw)
    r = generate(real, prompt, opts)
    valid_person(r, real)
    s = stream(real, prompt, opts)
    pieces = list(s)
    assert [p.token for p in pieces[:-1]] == list(r.tokens)
    assert s.text == r.text and s.result is not None and s.result.finish_reason == "eos"


@needs_llg
@pytest.mark.slow
def test_default_model_batched_equals_single(real):
    prompts = [chat_prompt(real, t) for t in ("Describe a person as JSON.", "Give me a user record.",
                                             "JSON for an admin called Ann.", "Who lives in Paris?",
                                             "A guest, please.")]
    for kw in SAMPLED[:2]:
        opts = GenerateOpts(json_schema=PERSON, max_new_tokens=120, **kw)
        batched = text_completion(real, prompts, opts, max_batch_size=4)
        for p, b in zip(prompts, batched):
            valid_person(b, real)
            single = generate(real, p, opts)
            assert b.tokens == single.tokens and b.text == single.text


@needs_llg
def test_chat_completion_takes_a_schema(real):
    r = pyvt.chat_completion(real, [[{"role": "user", "content": "A person, as JSON."}]],
                             json_schema=PERSON, max_new_tokens=120)[0]
    valid_person(r, real)


@needs_llg
def test_default_model_json_object(real):
    for kw in SAMPLED[:2]:
        r = generate(real, chat_prompt(real, "Reply with a JSON object describing a cat."),
                     json_object=True, max_new_tokens=200, **kw)
        if r.finish_reason == "eos":
            assert isinstance(json.loads(r.text), dict)
        else:  # an object the model kept extending: a valid prefix, cut by the length limit
            assert r.finish_reason == "length" and r.text.startswith("{")


@needs_llg
def test_cut_off_by_max_new_tokens_is_length_and_incomplete(real):
    r = generate(real, chat_prompt(real, "Describe a person as JSON."), json_schema=PERSON, max_new_tokens=5)
    assert r.finish_reason == "length" and len(r.tokens) == 5
    assert r.text.startswith('{"name": "')
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.text)


@needs_llg
def test_the_mask_overrides_the_model(real):
    """Unconstrained, the model answers in prose; constrained, the same prompt gives JSON."""
    prompt = chat_prompt(real, "What is the capital of France?")
    free = generate(real, prompt, max_new_tokens=20)
    with pytest.raises(json.JSONDecodeError):
        json.loads(free.text)
    schema = {"type": "object", "properties": {"capital": {"type": "string", "maxLength": 20}},
              "required": ["capital"], "additionalProperties": False}
    r = generate(real, prompt, json_schema=schema, max_new_tokens=40)
    assert r.finish_reason == "eos" and set(json.loads(r.text)) == {"capital"}


@needs_llg
def test_logprobs_and_stop_on_eos_false_under_a_schema(real):
    prompt = chat_prompt(real, "Describe a person as JSON.")
    r = generate(real, prompt, json_schema=PERSON, max_new_tokens=120, logprobs=True, top_logprobs=2,
                 stop_on_eos=False)
    valid_person(r, real)  # the grammar's end is EOS even without stop_on_eos
    assert r.logprobs is not None and len(r.logprobs) == len(r.tokens)
    assert all(np.isfinite(e.logprob) and len(e.top) == 2 for e in r.logprobs)
    plain = generate(real, prompt, json_schema=PERSON, max_new_tokens=120)
    assert plain.tokens == r.tokens  # logprobs do not change the choice


@needs_llg
def test_tokenizer_bridge_is_cached_per_tokenizer_content(real, default_model_dir):
    vocab = int(real.info["vocab_size"])
    a = structured.grammar_tokenizer(real.tokenizer, vocab, real.eos_token_ids)
    other = pyvt.Tokenizer(default_model_dir / "tokenizer.json")  # a second load of the same file
    assert structured.grammar_tokenizer(other, vocab, real.eos_token_ids) is a
    assert a.vocab_size == vocab
    assert structured.grammar_tokenizer(other, vocab, [0]) is not a  # other EOS: another entry


@needs_llg
def test_mask_allows_exactly_the_grammar_tokens(real):
    """The mask against llguidance's own token check, over a whole valid document."""
    g = structured.JsonGrammar(structured.compile_json_grammar(json.dumps(PERSON)),
                               structured.grammar_tokenizer(real.tokenizer, 49152, real.eos_token_ids))
    doc = json.dumps({"name": "Ann", "age": 31, "role": "admin", "active": True, "tags": ["a", "b"],
                      "home": {"city": "Oslo"}})
    ids = real.encode(doc, add_special_tokens=False)
    c = g.start()
    rng = np.random.default_rng(0)
    for t in ids:
        ok = c.allowed()
        assert ok[t]
        z = rng.standard_normal(49152).astype(np.float32)
        zm = c.mask(z)
        assert np.array_equal(np.isfinite(zm), ok) and np.array_equal(zm[ok], z[ok])
        assert not c.done
        c.advance(t)
    assert c.done and set(np.flatnonzero(c.allowed())) <= set(real.eos_token_ids)
    with pytest.raises(RuntimeError, match="not allowed by the grammar"):
        g.start().advance(real.encode("}", add_special_tokens=False)[0])


# ---- tiny checkpoints -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rand_dir(tmp_path_factory, default_model_dir):
    if not HAVE_LLG:
        pytest.skip("llguidance is not installed")
    folder = tmp_path_factory.mktemp("random")
    T.write_random_model(folder, default_model_dir)
    return folder


@pytest.fixture(scope="module")
def rand(rand_dir):
    with pyvt.load_model(rand_dir, weight_format="bf16") as m:
        yield m


@needs_llg
def test_random_model_output_validates(rand):
    """A random model wants random tokens: everything valid comes from the mask."""
    prompts = ["Hello", "A B C", "{}", "x"]
    for kw in SAMPLED:
        opts = GenerateOpts(json_schema=PERSON, max_new_tokens=150, **kw)
        for r in text_completion(rand, prompts, opts, max_batch_size=3):
            valid_person(r, rand)
        r0 = generate(rand, prompts[0], opts)
        valid_person(r0, rand)
        assert "".join(p.text for p in stream(rand, prompts[0], opts)) == r0.text


@needs_llg
def test_echo_under_a_schema(rand):
    r = generate(rand, "Hello there", json_schema=PERSON, max_new_tokens=150, echo=True)
    valid_person(r, rand)
    assert r.prompt_logprobs is not None and len(r.prompt_logprobs) == len(rand.encode("Hello there"))


@pytest.fixture(scope="module")
def sp_model(tmp_path_factory):
    """A tiny random model with a GGUF-derived SentencePiece-style vocabulary (BPE with byte
    fallback: '{', '"' and digits exist only as <0xNN> byte tokens) and an embedding 8 rows
    larger than the vocabulary (ids the grammar must never allow)."""
    if not HAVE_LLG:
        pytest.skip("llguidance is not installed")
    import gguf_writer  # noqa: F401  (the GGUF metadata builder the convert tests use)
    from test_convert import sentencepiece_gguf
    from pyvt import gguf
    from pyvt.gguf_tokenizer import build_tokenizer, tokenizer_config

    folder = tmp_path_factory.mktemp("sp")
    tokens = sentencepiece_gguf(folder / "sp.gguf")
    with gguf.read_gguf(folder / "sp.gguf") as g:
        tk, info = build_tokenizer(g.metadata, "sp.gguf")
        config, _ = tokenizer_config(g.metadata, info, 256)
    tk.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "sp.gguf").unlink()
    cfg = R.TinyConfig(vocab=len(tokens) + 8, bos=1, eos=2)  # + padding rows no token spells
    R.write_checkpoint(folder, cfg, seed=5, dtype="BF16")
    with pyvt.load_model(folder, weight_format="bf16") as m:
        yield m


@needs_llg
def test_gguf_sentencepiece_vocabulary(sp_model):
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 999},
                                               "w": {"enum": ["hello", "world"]}},
              "required": ["n", "w"], "additionalProperties": False}
    for kw in SAMPLED[:3]:
        r = generate(sp_model, "hello world", json_schema=schema, max_new_tokens=60, **kw)
        assert r.finish_reason == "eos", r.text
        assert max(r.tokens) < sp_model.tokenizer.vocab_size
        obj = json.loads(r.text)
        assert set(obj) == {"n", "w"} and 0 <= obj["n"] <= 999 and obj["w"] in ("hello", "world")


# ---- the command line -------------------------------------------------------------------------------

@needs_llg
def test_cli_json_schema(rand_dir, tmp_path):
    from test_cli import one_line_error, run

    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(PERSON))
    p = run("generate", "-m", rand_dir, "--weight-format", "bf16", "--no-prompt", "-n", "150", "-t", "1",
            "--json-schema", schema, "Hello", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    check_person(json.loads(p.stdout))
    assert "finish: eos" in p.stderr
    p = run("generate", "-m", rand_dir, "--json", "-n", "150", "--json-schema", schema, "Hello", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    check_person(json.loads(json.loads(p.stdout)["text"]))
    one_line_error(run("generate", "-m", rand_dir, "--json-schema", tmp_path / "nope.json", "x", cwd=tmp_path),
                   1, "--json-schema", "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "foo"}')
    one_line_error(run("generate", "-m", rand_dir, "--json-schema", bad, "x", cwd=tmp_path), 1,
                   str(bad), "not a usable JSON schema", "foo")
    bad.write_text("[1]")
    one_line_error(run("generate", "-m", rand_dir, "--json-schema", bad, "x", cwd=tmp_path), 1, str(bad), "list")
    one_line_error(run("generate", "-m", rand_dir, "--json-schema", schema, "--json-object", "x", cwd=tmp_path), 2,
                   "--json-schema and --json-object are exclusive")


def test_sentencepiece_tokenizer_is_refused_clearly(tmp_path):
    class SP:  # what grammar_tokenizer sees of a tokenizer.model Tokenizer: no `tokenizers` object
        path = tmp_path / "tokenizer.model"
        _tk = None

    with pytest.raises(ValueError, match="tokenizer.model.*structured output needs a tokenizer.json"):
        structured.grammar_tokenizer(SP(), 32000, [2])


@needs_llg
def test_constrained_and_free_rows_share_a_batched_decode(rand):
    """The server's case: one decode step holding constrained and unconstrained sequences
    (different options per row). Each row equals its run alone."""
    from pyvt.generation import _Run, prepare

    cases = [("Hello", GenerateOpts(json_schema=PERSON, max_new_tokens=150)),
             ("Hello", GenerateOpts(max_new_tokens=30, stop_on_eos=False)),
             ("A B C", GenerateOpts(json_schema=PERSON, max_new_tokens=150, temperature=1.0, seed=11)),
             ("x", GenerateOpts(max_new_tokens=30, temperature=0.9, seed=4, logprobs=True))]
    preps = [prepare(rand, p, o) for p, o in cases]
    done = {}
    for i, piece in _Run(rand, preps).pieces():
        if piece.result is not None:
            done[i] = piece.result
    for i, (p, o) in enumerate(cases):
        alone = generate(rand, p, o)
        assert done[i].tokens == alone.tokens and done[i].text == alone.text
        if o.json_schema is not None:
            valid_person(done[i], rand)
