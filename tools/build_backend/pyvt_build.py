"""pyvt's PEP 517 build backend: meson-python, plus the CUTLASS headers when CUDA is built.

The CUDA backend's 2:4 sparse and FP8 W8A8 GEMMs are CUTLASS templates (header-only, from the
PyPI package nvidia-cutlass). That package is a build requirement only where a CUDA compiler
is found (nvcc on PATH, or under $CUDA_PATH / $CUDA_HOME): meson builds the CUDA backend
exactly then (-Dcuda=auto), and a CPU-only build should not download it (it pulls ~70 MB of
dependencies: cuda-python, scipy, ...). PYVT_CUTLASS=0 in the environment skips it; meson then
builds the CUDA backend without the CUTLASS GEMMs and vt_backend_info() says so.
Everything else is meson-python's.
"""

from __future__ import annotations

import os
import shutil

import mesonpy
from mesonpy import build_editable, build_sdist, build_wheel, get_requires_for_build_sdist  # noqa: F401

CUTLASS = "nvidia-cutlass>=4.2,<5"


def _cuda_compiler() -> bool:
    if shutil.which("nvcc"):
        return True
    for var in ("CUDA_PATH", "CUDA_HOME"):
        d = os.environ.get(var)
        if d and os.path.isfile(os.path.join(d, "bin", "nvcc")):
            return True
    return False


def _cutlass() -> list[str]:
    if os.environ.get("PYVT_CUTLASS", "") == "0":
        return []
    return [CUTLASS] if _cuda_compiler() else []


def get_requires_for_build_wheel(config_settings=None):
    return list(mesonpy.get_requires_for_build_wheel(config_settings)) + _cutlass()


def get_requires_for_build_editable(config_settings=None):
    return list(mesonpy.get_requires_for_build_editable(config_settings)) + _cutlass()
