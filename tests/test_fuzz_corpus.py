"""Replays the fuzzing seed corpus and every crasher ever found (fuzz/corpus/<target>/,
fuzz/crashers/<target>/) through the normal entry points, so a fixed bug stays fixed without
clang or atheris. tools/fuzz.sh runs the fuzzers themselves; docs/reliability.md has the
numbers. The same files go through the C targets (fuzz/*.cpp) under ASan + UBSan in
tests/test_sanitizers.py."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from pyvt import _model

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"  # on pytest's pythonpath: fuzz_gguf, fuzz_text


def inputs(target: str) -> list[Path]:
    files = []
    for kind in ("corpus", "crashers"):
        d = FUZZ / kind / target
        if d.is_dir():
            files += sorted(p for p in d.iterdir() if p.is_file() and not p.name.startswith("."))
    return files


def ids(files: list[Path]) -> list[str]:
    return [f"{p.parent.parent.name}/{p.name}" for p in files]


def test_every_target_has_seeds():
    for target in ("safetensors", "config", "gguf", "text"):
        assert len([p for p in inputs(target) if p.parent.parent.name == "corpus"]) >= 3, target
    assert (FUZZ / "data" / "config.json").is_file() and (FUZZ / "data" / "model.safetensors").is_file()


def load_and_run(folder: Path) -> None:
    """What fuzz_common.h's load_and_run does, through pyvt: a clean error, or a model that
    generates tokens inside its vocabulary. With the f16 KV cache and the f32 one: a key or
    value beyond f16's range is a clean refusal of the first pass (docs/guide.md), and the f32
    cache still runs such weights through attention (NaN / infinite scores included)."""
    for kw in (dict(weight_format="bf16"), dict(weight_format="bf16", kv_cache="f32"),
               dict(weight_format="int8", block_size=16, kv_cache="f32")):
        try:
            m = _model.Model(str(folder), device="cpu", **kw)
        except (ValueError, FileNotFoundError, OSError, MemoryError) as e:
            assert str(e), "an error without a message"
            continue
        with m:
            V = m.info["vocab_size"]
            prompt = [0, V - 1, (V - 1) // 2]
            try:
                toks, _ = m.generate(prompt, max_new_tokens=4)
            except ValueError as e:
                assert m.info["kv_cache"] == "f16" and "f16 KV cache" in str(e), e
                continue
            assert all(0 <= t < V for t in toks)
            toks, _ = m.generate(prompt, max_new_tokens=4, temperature=0.8, top_p=0.9, repetition_penalty=1.3)
            assert all(0 <= t < V for t in toks)
            assert m.logits(prompt).shape == (3, V)


@pytest.mark.parametrize("path", inputs("safetensors"), ids=ids(inputs("safetensors")))
def test_safetensors_input(path, tmp_path):
    shutil.copy(FUZZ / "data" / "config.json", tmp_path / "config.json")
    shutil.copy(path, tmp_path / "model.safetensors")
    load_and_run(tmp_path)


@pytest.mark.parametrize("path", inputs("config"), ids=ids(inputs("config")))
def test_config_input(path, tmp_path):
    shutil.copy(FUZZ / "data" / "model.safetensors", tmp_path / "model.safetensors")
    config, sep, gen = path.read_bytes().partition(b"\n//GEN\n")
    (tmp_path / "config.json").write_bytes(config)
    if sep:
        (tmp_path / "generation_config.json").write_bytes(gen)
    load_and_run(tmp_path)


@pytest.mark.parametrize("path", inputs("gguf"), ids=ids(inputs("gguf")))
def test_gguf_input(path):
    import fuzz_gguf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. "unknown pre-tokenizer": a warning, not an error
        fuzz_gguf.check(path.read_bytes())


@pytest.mark.parametrize("path", inputs("text"), ids=ids(inputs("text")))
def test_text_input(path, default_model_dir, monkeypatch):
    import fuzz_text

    monkeypatch.setenv("PYVT_FUZZ_TOKENIZER", str(Path(default_model_dir) / "tokenizer.json"))
    fuzz_text.check(path.read_bytes())
