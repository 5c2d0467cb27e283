"""Models by name: Hugging Face ids through an HF cache laid out here (no network: the hub is
never contacted, HF_HUB_OFFLINE is on), .gguf files converted once and cached, `pyvt list`
and `pyvt rm`. What is not exercised here: a real download from huggingface.co (this machine
cannot reach it), gated repositories and login tokens."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyvt
from pyvt import convert, resolve
from test_convert import make_tiny_llama, read_safetensors

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture()
def caches(tmp_path, monkeypatch):
    """An empty pyvt cache and an empty, offline Hugging Face cache, in-process and for
    subprocesses (env)."""
    import huggingface_hub.constants as hfc

    pyvt_cache, hf_cache = tmp_path / "pyvt-cache", tmp_path / "hf-cache"
    hf_cache.mkdir()
    monkeypatch.setenv("PYVT_CACHE", str(pyvt_cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(hf_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hfc, "HF_HUB_CACHE", str(hf_cache))
    monkeypatch.setattr(hfc, "HF_HUB_OFFLINE", True)
    return pyvt_cache, hf_cache


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny llama as a GGUF (byte-level BPE tokenizer in its metadata) and the Hugging Face
    folder it converts to."""
    d = tmp_path_factory.mktemp("tiny")
    make_tiny_llama(d / "tiny.gguf")
    convert.convert_gguf(d / "tiny.gguf", d / "hf", dtype="bf16")
    return d / "tiny.gguf", d / "hf"


def put_in_hf_cache(hf_cache: Path, repo_id: str, files: dict[str, Path], commit: str = COMMIT) -> Path:
    """Lay out a snapshot the way huggingface_hub does (blobs + symlinks, refs/main)."""
    repo = hf_cache / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    for name, src in files.items():
        blob = repo / "blobs" / f"{abs(hash((repo_id, name))):x}"
        shutil.copyfile(src, blob)
        os.symlink(os.path.relpath(blob, snap), snap / name)
    return snap


def greedy(path, n=6):
    with pyvt.load_model(path, weight_format="bf16", progress=False) as m:
        return pyvt.generate(m, "hello world", max_new_tokens=n, temperature=0.0).tokens


# ---- ids ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, want", [
    ("HuggingFaceTB/SmolLM2-135M-Instruct", ("HuggingFaceTB/SmolLM2-135M-Instruct", None, None)),
    ("org/name@v1.0", ("org/name", "v1.0", None)),
    ("org/name@refs/pr/3", ("org/name", "refs/pr/3", None)),
    ("org/name:model-Q4_0.gguf", ("org/name", None, "model-Q4_0.gguf")),
    ("org/name@main:sub/model.gguf", ("org/name", "main", "sub/model.gguf")),
])
def test_hub_ids_parse(name, want):
    h = resolve.parse_hub_id(name)
    assert (h.repo_id, h.revision, h.filename) == want
    assert str(h) == name


@pytest.mark.parametrize("name", ["name", "a/b/c", "/abs/path", "./rel/x", "org/-bad", "org/na..me", "org/na--me",
                                  "org/name:file.bin", "org/name@", "", "o/" + "x" * 97])
def test_not_hub_ids(name):
    assert resolve.parse_hub_id(name) is None


def test_a_missing_path_that_is_not_an_id_says_so(caches, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist") as e:
        pyvt.load_model(str(tmp_path / "no" / "such" / "model"))
    assert "\n" not in str(e.value)


# ---- Hugging Face cache -------------------------------------------------------------------------


def test_load_by_hub_id_from_the_cache(caches, tiny):
    _, hf_cache = caches
    _, folder = tiny
    snap = put_in_hf_cache(hf_cache, "acme/tiny-llama", {f.name: f for f in folder.iterdir() if f.is_file()})
    assert resolve.resolve_model("acme/tiny-llama") == snap
    assert resolve.resolve_model(f"acme/tiny-llama@{COMMIT}") == snap
    assert greedy("acme/tiny-llama") == greedy(folder)


def test_an_uncached_id_offline_is_one_line(caches):
    with pytest.raises(FileNotFoundError, match=r"acme/absent is not a local path, nor in the Hugging Face cache "
                                                r".*HF_HUB_OFFLINE is set") as e:
        pyvt.load_model("acme/absent")
    assert "\n" not in str(e.value)
    with pytest.raises(FileNotFoundError, match="acme/absent:m.gguf is not a local path"):
        resolve.resolve_model("acme/absent:m.gguf")


def test_a_snapshot_without_safetensors_names_what_is_missing(caches, tiny):
    _, hf_cache = caches
    gguf, folder = tiny
    put_in_hf_cache(hf_cache, "acme/gguf-only", {"config.json": folder / "config.json", "tiny.gguf": gguf})
    with pytest.raises(FileNotFoundError, match=r"has no \*\.safetensors .*acme/gguf-only:tiny\.gguf"):
        resolve.resolve_model("acme/gguf-only")


def test_a_gguf_of_a_hub_repository_is_converted_once(caches, tiny, monkeypatch):
    pyvt_cache, hf_cache = caches
    gguf, folder = tiny
    put_in_hf_cache(hf_cache, "acme/tiny-gguf", {"tiny.gguf": gguf})
    out = resolve.resolve_model("acme/tiny-gguf:tiny.gguf")
    assert out.parent == pyvt_cache / resolve.GGUF_DIR
    assert greedy("acme/tiny-gguf:tiny.gguf") == greedy(folder)
    monkeypatch.setattr(convert, "convert_gguf", lambda *a, **k: pytest.fail("converted twice"))
    assert resolve.resolve_model("acme/tiny-gguf:tiny.gguf") == out


# ---- local GGUF files ---------------------------------------------------------------------------


def test_a_local_gguf_loads_and_reconverts_when_it_changes(caches, tiny, tmp_path):
    pyvt_cache, _ = caches
    src, folder = tiny
    gguf = tmp_path / "mine.gguf"
    shutil.copyfile(src, gguf)
    out = resolve.resolve_model(gguf)
    marker = json.loads((out / "pyvt_source.json").read_text())
    assert marker["source"] == str(gguf.resolve()) and marker["gguf_identity"]["size"] == gguf.stat().st_size
    assert greedy(gguf) == greedy(folder)
    # A different file at the same path: converted again, never the stale folder.
    make_tiny_llama(gguf, seed=7)
    os.utime(gguf, ns=(gguf.stat().st_atime_ns, gguf.stat().st_mtime_ns + 10**9))
    out2 = resolve.resolve_model(gguf)
    assert out2 == out
    assert json.loads((out / "pyvt_source.json").read_text())["gguf_identity"]["mtime_ns"] == gguf.stat().st_mtime_ns
    new, old = read_safetensors(out / "model.safetensors"), read_safetensors(folder / "model.safetensors")
    assert not np.array_equal(new["model.embed_tokens.weight"], old["model.embed_tokens.weight"])
    assert [p.name for p in (pyvt_cache / resolve.GGUF_DIR).iterdir() if p.name.startswith(".")] == []


def test_a_folder_converted_by_an_older_converter_is_converted_again(caches, tiny, tmp_path, monkeypatch):
    """A conversion stamped with another converter version is made again from the local GGUF
    (no network); one with the current stamp is reused."""
    src, _ = tiny
    gguf = tmp_path / "mine.gguf"
    shutil.copyfile(src, gguf)
    out = resolve.resolve_model(gguf)
    marker_path = out / "pyvt_source.json"
    marker = json.loads(marker_path.read_text())
    assert marker["converter_version"] == convert.CONVERTER_VERSION
    marker["converter_version"] = convert.CONVERTER_VERSION - 1
    marker_path.write_text(json.dumps(marker))
    calls = []
    real = convert.convert_gguf
    monkeypatch.setattr(convert, "convert_gguf", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert resolve.resolve_model(gguf) == out and len(calls) == 1
    assert json.loads(marker_path.read_text())["converter_version"] == convert.CONVERTER_VERSION
    assert resolve.resolve_model(gguf) == out and len(calls) == 1


def test_a_broken_gguf_leaves_nothing_behind(caches, tmp_path):
    pyvt_cache, _ = caches
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 12)
    with pytest.raises(ValueError):
        resolve.resolve_model(bad)
    left = list((pyvt_cache / resolve.GGUF_DIR).iterdir())
    assert left == []


# ---- list / rm ----------------------------------------------------------------------------------


def test_list_and_rm(caches, tiny, tmp_path):
    pyvt_cache, hf_cache = caches
    gguf, folder = tiny
    put_in_hf_cache(hf_cache, "acme/tiny-llama", {f.name: f for f in folder.iterdir() if f.is_file()})
    conv = resolve.resolve_model(gguf)
    models = {m.name: m for m in resolve.list_models()}
    assert set(models) == {"acme/tiny-llama", f"gguf/{conv.name}"}
    assert models["acme/tiny-llama"].kind == "hf" and models["acme/tiny-llama"].size_bytes > 0
    assert models[f"gguf/{conv.name}"].source == str(gguf.resolve())
    with pytest.raises(FileNotFoundError, match="did you mean acme/tiny-llama"):
        resolve.remove_model("acme/tiny-lama")
    resolve.remove_model("acme/tiny-llama")
    resolve.remove_model(f"gguf/{conv.name}")
    assert resolve.list_models() == []
    assert not conv.exists() and not (hf_cache / "models--acme--tiny-llama").exists()
    with pytest.raises(FileNotFoundError, match="nothing is cached"):
        resolve.remove_model("acme/tiny-llama")


def _cli(*args, env):
    # cwd: not the repository root, whose pyvt/ (sources, no extensions) would shadow the install
    return subprocess.run([sys.executable, "-m", "pyvt", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=env["PYVT_CACHE"].rsplit("/", 1)[0])


def test_cli_pull_list_generate_rm(caches, tiny):
    _, hf_cache = caches
    _, folder = tiny
    put_in_hf_cache(hf_cache, "acme/tiny-llama", {f.name: f for f in folder.iterdir() if f.is_file()})
    env = dict(os.environ)
    r = _cli("pull", "acme/tiny-llama", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith(COMMIT)
    r = _cli("list", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert [m["name"] for m in json.loads(r.stdout)] == ["acme/tiny-llama"]
    r = _cli("generate", "-m", "acme/tiny-llama", "--weight-format", "bf16", "-n", "4", "-t", "0", "--no-prompt",
             "hello world", env=env)
    assert r.returncode == 0, r.stderr
    r = _cli("pull", "acme/absent", env=env)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("pyvt pull: error: acme/absent is not a local path")
    r = _cli("rm", "acme/tiny-llama", env=env)
    assert r.returncode == 0, r.stderr
    r = _cli("rm", "acme/tiny-llama", env=env)
    assert r.returncode == 1 and "no cached model named 'acme/tiny-llama'" in r.stderr
    r = _cli("list", env=env)
    assert r.returncode == 0 and r.stdout == "" and "no cached models" in r.stderr


def test_list_and_rm_packed_weights(caches, tiny, tmp_path):
    """`pyvt list` shows the packed-weight cache's files (format, checkpoint, stale or not);
    removing a model removes the packed files made from it; `packed` removes them all."""
    pyvt_cache, hf_cache = caches
    _, folder = tiny
    put_in_hf_cache(hf_cache, "acme/tiny-llama", {f.name: f for f in folder.iterdir() if f.is_file()})
    snap = resolve.resolve_model("acme/tiny-llama")
    local = tmp_path / "local"
    shutil.copytree(folder, local)
    pyvt.load_model(snap, weight_format="int8", packed_cache=True).close()
    pyvt.load_model(local, weight_format="int4", packed_cache=True).close()
    packs = {m.name: m for m in resolve.list_models() if m.kind == "packed"}
    assert len(packs) == 2 and all(n.startswith("packed/") and n.endswith(".vtpack") for n in packs)
    (hf_pack,) = [m for m in packs.values() if "int8 weights, block 32" in m.source]
    (local_pack,) = [m for m in packs.values() if "int4 weights, block 32" in m.source]
    assert f"of {local.resolve()} (vtpack " in local_pack.source and "stale" not in local_pack.source
    assert str((hf_cache / "models--acme--tiny-llama").resolve()) in hf_pack.source
    assert all(m.size_bytes == Path(m.path).stat().st_size > 0 for m in packs.values())
    os.utime(local / "model.safetensors")  # the checkpoint changed: its packed file is stale
    (local_pack,) = [m for m in resolve.list_models() if m.name == local_pack.name]
    assert "stale: the checkpoint changed or is gone" in local_pack.source
    garbage = pyvt_cache / "packed" / "0000-0000.vtpack"
    garbage.write_bytes(b"not a pack")
    (g,) = [m for m in resolve.list_models() if m.name == "packed/0000-0000.vtpack"]
    assert "not a packed-weight file" in g.source
    assert resolve.remove_model("packed/0000-0000.vtpack") == [str(garbage)] and not garbage.exists()
    removed = resolve.remove_model("acme/tiny-llama")  # the model and the packed file made from it
    assert removed[1:] == [hf_pack.path] and not Path(hf_pack.path).exists()
    assert [m.name for m in resolve.list_models()] == [local_pack.name]
    assert resolve.remove_model("packed") == [local_pack.path]
    assert resolve.list_models() == []
    with pytest.raises(FileNotFoundError, match="no packed-weight cache files"):
        resolve.remove_model("packed")
