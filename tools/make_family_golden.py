"""Writes tests/data/families_golden.json: for each tiny checkpoint of tests/family_models.py
(transformers' own config classes: Llama with biases, Mistral, Qwen2, Qwen3), its config.json,
tensor names and shapes and weight seed, and transformers' float32 results on it: the
argmax of every position of a 96-token teacher-forced sequence and its top-2 margin, the
logits of a few of those positions, and 32 greedy tokens after family_models.PROMPT with the top-2 margin of each step
(dynamic NTK RoPE cases: decoded with the KV cache, as generate() runs).
tests/test_families.py rebuilds the same checkpoints with numpy and checks pyvt against
these without torch.

    python tools/make_family_golden.py [CASE ...]   (needs torch and transformers; names: only those
                                                   cases are made again, the others kept)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import family_models as F  # noqa: E402

SEQ_LEN = 96
LOGIT_ROWS = [0, 9, SEQ_LEN - 1]  # the first, one past every window, the last


def main() -> None:
    import torch
    import transformers

    # Names on the command line: only those cases are (re)made, the others kept as they are.
    only = sys.argv[1:]
    unknown = sorted(set(only) - set(F.CASES))
    if unknown:
        sys.exit(f"unknown cases: {', '.join(unknown)} (known: {', '.join(sorted(F.CASES))})")
    cases = F.load_golden()["cases"] if only and F.GOLDEN.exists() else {}
    for name in sorted(only or F.CASES):
        with tempfile.TemporaryDirectory() as d:
            model, cfg, w, shapes = F.build_transformers(name, Path(d))
        seed = F.seed_of(name)
        seq = np.random.default_rng(1000 + seed).integers(0, F.VOCAB, SEQ_LEN).tolist()
        with torch.no_grad():
            logits = model(torch.tensor([seq])).logits[0].double().numpy()
        # (dynamic NTK RoPE: greedy as generate() runs it, with the KV cache, whose keys keep the
        # frequencies of the call that made them; the other cases a whole-sequence pass per step)
        greedy, margins = F.hf_greedy(model, F.PROMPT, 32, cached=F.dynamic_rope(cfg))
        margins = [float(f"{m:.4g}") for m in margins]
        toks = list(F.PROMPT) + greedy
        cases[name] = {
            "config": cfg,
            "shapes": shapes,
            "seed": seed,
            "sequence": seq,
            "argmax": logits.argmax(-1).tolist(),
            "margins": [float(f"{m:.4g}") for m in np.diff(np.sort(logits, -1)[:, -2:], axis=-1)[:, 0]],
            "logit_rows": LOGIT_ROWS,
            "logits": [[float(f"{v:.7g}") for v in logits[r]] for r in LOGIT_ROWS],
            "greedy": toks[len(F.PROMPT):],
            "greedy_margins": margins,
        }
        cases[name]["made_with"] = f"transformers {transformers.__version__}, torch {torch.__version__}"
        print(f"{name}: greedy {cases[name]['greedy'][:8]}..., min margin {min(margins):.3g}")
    out = {"generated_by": "tools/make_family_golden.py", "transformers": transformers.__version__,
           "torch": torch.__version__, "cases": cases}
    out["cases"] = dict(sorted(cases.items()))
    F.GOLDEN.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {F.GOLDEN} ({F.GOLDEN.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
