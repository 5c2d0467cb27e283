#!/usr/bin/env python3
"""The tiny random model folders the GPU runner's `models` phase hands to vt_cuda_test and to
compute-sanitizer (numpy only, well under a second):

  gqa-hd64    hidden 256, 4 heads / 2 KV heads, head_dim 64, 4096 positions (vt_cuda_test's
              decode past position 2048 needs them)
  gqa-hd128   hidden 256, 8 heads / 1 KV head, head_dim 128

    python bench/gpu/tiny_models.py OUTDIR     prints each folder
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _llama_ref():
    spec = importlib.util.spec_from_file_location("llama_ref", ROOT / "tests" / "llama_ref.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    R = _llama_ref()
    out = Path(argv[0])
    for name, cfg in {
        "gqa-hd64": R.TinyConfig(hidden=256, intermediate=320, heads=4, kv_heads=2, vocab=300, max_pos=4096),
        "gqa-hd128": R.TinyConfig(hidden=256, intermediate=256, heads=8, kv_heads=1, head_dim=128, vocab=260),
    }.items():
        if not (out / name / "model.safetensors").is_file():
            R.write_checkpoint(out / name, cfg, seed=5)
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
