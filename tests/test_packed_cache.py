"""The packed-weight cache (vt_model_options.packed_cache_dir, load_model(packed_cache=...)):
a second load reads the packed linears instead of quantizing; a stale, corrupt or truncated
cache is never used (it is rebuilt); concurrent writers and unwritable folders are safe."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyvt

IDS = [1, 504, 3458, 282, 4649, 314, 2]


@pytest.fixture(scope="module")
def model_copy(default_model_dir, tmp_path_factory):
    """A private copy of the default model (the tests rewrite its weights in place)."""
    d = tmp_path_factory.mktemp("pcmodel") / "m"
    shutil.copytree(default_model_dir, d)
    return d


def _logits(path, cache, **kw):
    with pyvt.load_model(path, packed_cache=cache, threads=2, **kw) as m:
        return m.logits(IDS)


def _vtpacks(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".vtpack"))


def _tamper_keeping_identity(st_path, offset, nbytes):
    """Flip bytes inside the file, keeping its size, mtime and inode (the cache key)."""
    st = os.stat(st_path)
    with open(st_path, "r+b") as f:
        f.seek(offset)
        data = bytearray(f.read(nbytes))
        for i in range(len(data)):
            data[i] ^= 0x55
        f.seek(offset)
        f.write(data)
    os.utime(st_path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _big_tensor_offset(st_path):
    import json
    import struct

    with open(st_path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
    name = next(k for k in hdr if k.endswith("layers.0.mlp.down_proj.weight"))
    return 8 + n + hdr[name]["data_offsets"][0]


def test_second_load_reads_the_cache(model_copy, tmp_path):
    cache = tmp_path / "cache"
    ref = _logits(model_copy, cache)
    files = _vtpacks(cache)
    assert len(files) == 1
    before = (cache / files[0]).stat().st_mtime_ns
    # The checkpoint's weights change behind the cache's back (same size, mtime, inode): a load
    # that uses the cache still gives the old logits; one without it does not.
    st = model_copy / "model.safetensors"
    off = _big_tensor_offset(st)
    _tamper_keeping_identity(st, off, 4096)
    try:
        np.testing.assert_array_equal(_logits(model_copy, cache), ref)
        assert not np.array_equal(_logits(model_copy, False), ref)
    finally:
        _tamper_keeping_identity(st, off, 4096)  # xor again: the original bytes
    assert (cache / files[0]).stat().st_mtime_ns == before  # read, not rewritten
    np.testing.assert_array_equal(_logits(model_copy, False), ref)


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_damaged_cache_is_rebuilt_not_used(model_copy, tmp_path, damage):
    cache = tmp_path / "cache"
    ref = _logits(model_copy, cache)
    f = cache / _vtpacks(cache)[0]
    size = f.stat().st_size
    if damage == "flip":      # one byte of the packed data
        with open(f, "r+b") as h:
            h.seek(size // 2)
            b = h.read(1)
            h.seek(size // 2)
            h.write(bytes([b[0] ^ 0xFF]))
    elif damage == "truncate":
        os.truncate(f, size // 3)
    else:
        f.write_bytes(b"VTPACK\n\x1a" + os.urandom(100))
    np.testing.assert_array_equal(_logits(model_copy, cache), ref)
    assert _vtpacks(cache) == [f.name] and f.stat().st_size == size  # rewritten whole
    np.testing.assert_array_equal(_logits(model_copy, cache), ref)


def test_a_changed_checkpoint_or_another_format_gets_its_own_file(model_copy, tmp_path):
    cache = tmp_path / "cache"
    _logits(model_copy, cache)
    first = _vtpacks(cache)
    _logits(model_copy, cache, weight_format="fp8")
    assert len(_vtpacks(cache)) == 2  # one per format
    st = model_copy / "model.safetensors"
    os.utime(st)  # touched: the int8 file is stale
    ref = _logits(model_copy, False)
    np.testing.assert_array_equal(_logits(model_copy, cache), ref)
    now = _vtpacks(cache)
    assert len(now) == 2 and first[0] not in now  # the stale file was replaced, not kept beside


def test_an_unwritable_cache_folder_only_means_no_cache(model_copy, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    ref = _logits(model_copy, False)
    np.testing.assert_array_equal(_logits(model_copy, blocker / "cache"), ref)
    with pytest.raises(ValueError, match="NUL"):
        pyvt.load_model(model_copy, packed_cache="a\0b")
    with pytest.raises(TypeError, match="packed_cache"):
        pyvt.load_model(model_copy, packed_cache=3)


def test_concurrent_first_loads_leave_one_complete_file(model_copy, tmp_path):
    cache = tmp_path / "cache"
    script = textwrap.dedent(f"""
        import pyvt, numpy as np, sys
        with pyvt.load_model({str(model_copy)!r}, packed_cache={str(cache)!r}, threads=1) as m:
            np.save(sys.argv[1], m.logits({IDS!r}))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / f"out{i}.npy")], cwd=tmp_path)
             for i in range(3)]
    assert [p.wait(300) for p in procs] == [0, 0, 0]
    outs = [np.load(tmp_path / f"out{i}.npy") for i in range(3)]
    assert all(np.array_equal(o, outs[0]) for o in outs)
    assert len(_vtpacks(cache)) == 1 and not [p for p in cache.iterdir() if ".tmp." in p.name]
    np.testing.assert_array_equal(_logits(model_copy, cache), outs[0])


def _fnv1a_hex(s: str) -> str:
    h = 1469598103934665603
    for c in s.encode():
        h = ((h ^ c) * 1099511628211) % (1 << 64)
    return f"{h:016x}"


def test_files_of_an_earlier_cache_version_are_removed_when_the_load_writes(model_copy, tmp_path):
    """A file libvt of an earlier cache version wrote for the same load is never read again
    (the version is part of its name): the load that writes this version's file removes it;
    files of other checkpoints stay."""
    from pyvt.resolve import _read_pack

    cache = tmp_path / "cache"
    _logits(model_copy, cache)
    (name,) = _vtpacks(cache)
    with open(cache / name, "rb") as f:
        f.seek(20)
        key = f.read(int.from_bytes(f.read(4), "little")).decode()
    parts = key.split("|")
    version = int(parts[0].split()[1])
    assert version >= 2 and _read_pack(cache / name).current
    paths = "".join("|" + p.rsplit(" ", 3)[0] for p in parts[1:-1] if p.startswith("/"))
    assert name.startswith(_fnv1a_hex(f"vtpack {version}{paths}|{parts[-1]}") + "-")  # the naming this test mirrors
    old = cache / (_fnv1a_hex(f"vtpack {version - 1}{paths}|{parts[-1]}") + "-0123456789abcdef.vtpack")
    other = cache / (_fnv1a_hex(f"vtpack {version - 1}|/elsewhere/model.safetensors|{parts[-1]}") + "-0.vtpack")
    old.write_bytes(b"VTPACK\n\x1a" + bytes(64))
    other.write_bytes(b"VTPACK\n\x1a" + bytes(64))
    _logits(model_copy, cache)  # a hit: nothing is written, nothing removed
    assert old.exists()
    os.utime(model_copy / "model.safetensors")  # stale: the next load packs and writes
    assert not _read_pack(cache / name).current
    _logits(model_copy, cache)
    now = _vtpacks(cache)
    assert not old.exists() and other.exists() and name not in now and len(now) == 2
