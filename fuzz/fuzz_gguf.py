"""Fuzz target (atheris): the GGUF reader and the converter behind ``pyvt convert``.

Input: the bytes of a .gguf file. It is parsed with :class:`pyvt.gguf.GGUFFile`, every
tensor up to 1 MiB is dequantized, and a file that parses is converted with
:func:`pyvt.convert.convert_gguf` (weights, config.json, tokenizer files) into a temp folder.
``ValueError`` naming the problem is the only acceptable failure; any other exception, a hang
or a crash is a finding.

    python fuzz/fuzz_gguf.py [libFuzzer options] [corpus dirs]     (needs ``pip install atheris``)

tests/test_fuzz_corpus.py calls :func:`check` on every file of fuzz/corpus/gguf and
fuzz/crashers/gguf.
"""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import sys
import tempfile

_TMP = tempfile.mkdtemp(prefix="pyvt_fuzz_gguf_")
atexit.register(shutil.rmtree, _TMP, True)
MAX_TENSOR_BYTES = 1 << 20


def _modules():
    return importlib.import_module("pyvt.gguf"), importlib.import_module("pyvt.convert")


def check(data: bytes) -> None:
    gguf, convert = _modules()
    path = os.path.join(_TMP, "in.gguf")
    with open(path, "wb") as f:
        f.write(data)
    try:
        with gguf.GGUFFile(path) as g:
            for name, t in g.tensors.items():
                if t.nbytes <= MAX_TENSOR_BYTES and t.n_elements <= MAX_TENSOR_BYTES:
                    try:
                        a = g.dequantize(name)
                        assert a.shape == t.shape, (a.shape, t.shape)
                    except ValueError:
                        pass
            arch = g.get("general.architecture")
    except ValueError:
        return
    if arch != "llama":
        return
    out = os.path.join(_TMP, "out")
    shutil.rmtree(out, ignore_errors=True)
    try:
        convert.convert_gguf(path, out)
    except ValueError:
        pass
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    import atheris

    with atheris.instrument_imports(include=["pyvt.gguf", "pyvt.convert"]):
        _modules()
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
