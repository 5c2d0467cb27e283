"""pyvt — a fast, honest LLM inference engine.

``load_model(path)`` + ``generate(model, prompt, opts)`` (also ``stream``, ``chat``,
``text_completion``, ``chat_completion``) for Hugging Face checkpoints of the families in
docs/models.md (Llama, Mistral, Ministral, Qwen2/3, Phi-3, Gemma 1/2/3, SmolLM3, Helium, ERNIE 4.5, GLM, Seed-OSS, CWM, EXAONE 3/3.5, IQuest-Coder, InternLM3;
on the CPU Phi-1/2, StableLM, Starcoder2, Cohere 1/2, Arcee, NanoChat, Apertus, Nemotron, Jais2, HunYuan, VaultGemma, OLMo 1, GPT-NeoX, GPT-2, GPT-Neo, GPTBigCode, GPT-J, OPT, Falcon, Bloom, MPT, Granite, GraniteSWA, HyperCLOVA X, OLMo 2/3, EXAONE 4, GLM-4, Ministral 3, MiniCPM3, Youtu-LLM, LFM2, LFM3 and the
mixture-of-experts families), with weights prepacked once to 8
bits (INT8 or FP8 E4M3, blocked scales), on any CPU and (when built with CUDA) NVIDIA GPUs. The quantized inference API (prepack_* / linear_*) and the
sampling primitives are available on their own (``pyvt.ops``).

C and C++ programs link the same core, libvt: see :func:`get_include`,
:func:`get_library_dir` and :func:`get_pkgconfig_dir`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from . import ops
from .ops import *  # noqa: F401,F403  (the inference API: prepack_*, linear_*, sampling)
from .ops import __all__ as _ops_all
from .options import GenerateOpts, GenerateResult, StreamPiece, TokenLogprob, default_generate_opts
from .model import WEIGHT_FORMATS, ModelHandle, load_model
from .generation import Stream, generate, stream, text_completion
from .chat import apply_chat_template, chat, chat_completion, chat_stream, validate_dialog
from .tokenizer import Tokenizer
from .engine import AsyncEngine

# Quiet by default: pyvt (and libvt, bridged into the "pyvt" logger) only logs where the
# application configures logging, e.g. logging.basicConfig(level=logging.INFO).
logging.getLogger("pyvt").addHandler(logging.NullHandler())

__version__ = ops.version()

_HERE = Path(__file__).resolve().parent


def _dev_layout() -> tuple[Path, Path] | None:
    """(include dir, library dir) of an editable/in-tree build, where the installed layout
    (pyvt/include, pyvt/libvt.so) does not exist."""
    if (_HERE / "include" / "vt" / "vt.h").is_file():
        return None
    from . import _ops

    build = Path(_ops.__file__).resolve().parent.parent  # <build>/pyvt/_ops*.so
    return _HERE.parent / "libvt" / "include", build / "libvt"


def get_include() -> str:
    """Folder holding ``vt/vt.h`` (pass as ``-I`` to a C compiler)."""
    dev = _dev_layout()
    return str(dev[0] if dev else _HERE / "include")


def get_library_dir() -> str:
    """Folder holding ``libvt.so`` (pass as ``-L`` and rpath)."""
    dev = _dev_layout()
    return str(dev[1] if dev else _HERE)


def get_pkgconfig_dir() -> str:
    """Folder holding ``vt.pc``: ``PKG_CONFIG_PATH=<this> pkg-config --cflags --libs vt``."""
    dev = _dev_layout()
    if dev is None:
        return str(_HERE / "pkgconfig")
    # Editable install: write a vt.pc with absolute paths next to the build's library.
    pc_dir = dev[1] / "pkgconfig-dev"
    pc_dir.mkdir(exist_ok=True)
    (pc_dir / "vt.pc").write_text(
        f"libdir={dev[1]}\nincludedir={dev[0]}\n\nName: vt\nDescription: libvt (editable build)\n"
        f"Version: {__version__}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lvt\n"
        "Cflags: -I${includedir}\n"
    )
    return str(pc_dir)


def backends() -> str:
    """One line per backend with its availability and why (libvt's ``vt_backend_info``)."""
    return ops.backend_info()


__all__ = [
    "AsyncEngine",
    "GenerateOpts",
    "GenerateResult",
    "ModelHandle",
    "Stream",
    "StreamPiece",
    "TokenLogprob",
    "Tokenizer",
    "WEIGHT_FORMATS",
    "apply_chat_template",
    "backends",
    "chat",
    "chat_completion",
    "chat_stream",
    "default_generate_opts",
    "generate",
    "get_include",
    "get_library_dir",
    "get_pkgconfig_dir",
    "load_model",
    "ops",
    "stream",
    "text_completion",
    "validate_dialog",
    *_ops_all,
]
