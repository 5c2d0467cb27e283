#!/usr/bin/env python3
"""llama.cpp's own results for small GGUF files, kept as test data.

tests/data/gguf_tokenizer_llamacpp.json: token ids for GGUF vocabularies.
tests/data/gguf_logits_llamacpp.json: logits of tiny GGUF models of every architecture pyvt
reads (llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, ...), computed by llama.cpp in float32 (F32 / exact
bf16 weights, f32 KV cache), so that tests/test_gguf_llamacpp_logits.py checks that pyvt reads
each file as llama.cpp does (names, Q/K order, Gemma's norm shift, what the file does not
store). The models are rebuilt in the tests from tests/data/families_golden.json and fixed
seeds (tests/test_convert.py: family_gguf, make_tiny_llama), so only the logits are stored.

Token ids:

A GGUF stores no tokenizer.json; pyvt rebuilds one from the tokenizer.ggml.* metadata
(pyvt/gguf_tokenizer.py). The authority on what those vocabularies mean is llama.cpp, so this
tool writes small GGUF vocabularies of each kind pyvt reads — SentencePiece BPE with and
without the space prefix (Llama 2 / Mistral / Phi-3 style, and Gemma's, with user-defined pieces
spelled with real spaces and control tokens), and one byte-level BPE vocabulary under each
pre-tokenizer family pyvt implements (gpt-2, llama-bpe, qwen2, smollm) — and records the ids
llama.cpp (through llama-cpp-python, vocab only) gives for a corpus of texts, with special
tokens parsed (a rendered chat prompt) and not (user content). Each case stores its whole
vocabulary, so tests/test_gguf_tokenizer_llamacpp.py rebuilds the same file without llama.cpp.

Dev-only (llama-cpp-python is a benchmark peer, never a dependency):

    pip install llama-cpp-python tokenizers
    python tools/make_llamacpp_golden.py
    python tools/make_llamacpp_golden.py --logits NAME...   # only these LOGIT_CASES, added to
        # (or replaced in) gguf_logits_llamacpp.json; every other case and the token ids stay
        # byte for byte as they are (llama.cpp's threads may sum in another order on a rerun)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import gguf_writer as gw  # noqa: E402  (tests/gguf_writer.py: the writer the tests use)
from gguf_vocab import HPARAMS, gguf_meta  # noqa: E402  (the same file the tests rebuild)

OUT = ROOT / "tests" / "data" / "gguf_tokenizer_llamacpp.json"
OUT_LOGITS = ROOT / "tests" / "data" / "gguf_logits_llamacpp.json"

# The GGUF models: (name, how it is built). "family": tests/family_models.py's case written as
# llama.cpp's converter writes the architecture; "tiny": make_tiny_llama's random model.
LOGIT_CASES = {
    "gemma": ("family", "gemma", "gemma"),
    "gemma2": ("family", "gemma2", "gemma2"), "gemma2-defaults-hd32": ("family", "gemma2-defaults-hd32", "gemma2"),
    "gemma3": ("family", "gemma3", "gemma3"), "gemma3-linear-hd32": ("family", "gemma3-linear-hd32", "gemma3"),
    "phi3": ("family", "phi3", "phi3"), "phi3-longrope": ("family", "phi3-longrope", "phi3"),
    "phi3-window8": ("family", "phi3-window8", "phi3"),
    "llama": ("tiny", "llama", True), "llama-untied": ("tiny", "llama", False), "qwen2": ("tiny", "qwen2", True),
    "qwen3": ("tiny", "qwen3", False),
    "mixtral": ("moe", "mixtral", "llama"), "qwen2-moe-shared": ("moe", "qwen2-moe-shared", "qwen2moe"),
    "qwen3-moe": ("moe", "qwen3-moe", "qwen3moe"), "smollm3": ("family", "smollm3", "smollm3"),
    "granite": ("family", "granite", "granite"), "olmo2": ("family", "olmo2", "olmo2"),
    "granitemoe": ("moe", "granitemoe", "granitemoe"), "olmoe": ("moe", "olmoe", "olmoe"),
    "granitemoe-shared": ("moe", "granitemoe-shared", "granitemoe"), "gpt-oss": ("moe", "gpt-oss", "gpt-oss"),
    "phi": ("family", "phi", "phi2"), "phi-gqa-04": ("family", "phi-gqa-04", "phi2"),
    "stablelm": ("family", "stablelm", "stablelm"),  # (llama.cpp needs output.weight: the tied case is not one)
    "starcoder2": ("family", "starcoder2", "starcoder2"),
    "ernie4_5": ("family", "ernie4_5", "ernie4_5"), "seed-oss": ("family", "seed-oss", "seed_oss"),
    "glm4": ("family", "glm4", "glm4"), "olmo3": ("family", "olmo3", "olmo2"),  # (OLMo 3: llama.cpp's olmo2)
    "cohere": ("family", "cohere", "command-r"), "cohere2": ("family", "cohere2", "cohere2"),
    "arcee": ("family", "arcee", "arcee"), "exaone4-nowindow": ("family", "exaone4-nowindow", "exaone4"),
    "exaone4-64": ("family", "exaone4-64", "exaone4"),  # (the exaone4 case's 2 blocks repeated: llama.cpp's window needs 64)
    "apertus": ("family", "apertus", "apertus"),
    "nemotron": ("family", "nemotron", "nemotron"),
    "gpt-neox": ("family", "gpt-neox", "gptneox"),  # (the parallel block)
    "gpt-neox-sequential": ("family", "gpt-neox-sequential", "gptneox"),  # (zero q/k/v/o biases: llama.cpp needs them)
    "gpt2": ("family", "gpt2", "gpt2"),  # (GPT2Model's [out, in] rows of the Conv1D weights)
    "gpt-bigcode": ("family", "gpt-bigcode", "starcoder"),  # (multi-query: head_count_kv 1)
    "gpt-bigcode-mha-unscaled": ("family", "gpt-bigcode-mha-unscaled", "starcoder"),  # (head_count_kv = heads; scaled)
    "falcon-7b": ("family", "falcon-7b", "falcon"),  # (multi-query, one norm)
    "falcon-new-2ln": ("family", "falcon-new-2ln", "falcon"),  # (attn_norm_2: two norms; 2 KV heads of 4)
    "falcon-new-1ln-bias": ("family", "falcon-new-1ln-bias", "falcon"),  # (one norm, 2 KV heads; its biases left out)
    "falcon-seq-mha-bias": ("family", "falcon-seq-mha-bias", "falcon"),  # (head_count_kv = heads; parallel, no biases)
    "bloom": ("family", "bloom", "bloom"),  # (ALiBi over 4 heads, the embeddings' norm, tied)
    "bloom-6heads-untied": ("family", "bloom-6heads-untied", "bloom"),  # (6 heads: ALiBi's odd powers; output)
    "mpt": ("family", "mpt", "mpt"),  # (ALiBi over 4 heads, bias-free LayerNorms, tied)
    "mpt-6heads-clip-scale": ("family", "mpt-6heads-clip-scale", "mpt"),  # (6 heads; clamp_kqv 1.5)
    "glm4-moe": ("moe", "glm4-moe", "glm4moe"),  # (4 groups, 2 open, scaling 2.5, q/k/v biases, a NextN block)
    "glm4-moe-qknorm": ("moe", "glm4-moe-qknorm", "glm4moe"),  # (q/k norms, not renormalized, 2 shared experts)
    "dots1": ("moe", "dots1", "dots1"),  # (2 groups, 1 open, a dense first block; no biases, no window)
    "deepseek-v3": ("moe", "deepseek-v3", "deepseek2"),  # (q's LoRA, sigmoid router 2 of 4 groups, kv_b split)
    "deepseek-v3-halfrope": ("moe", "deepseek-v3-halfrope", "deepseek2"),  # (q_proj; rope rows as pairs: the same model)
    "deepseek-v2": ("moe", "deepseek-v2", "deepseek2"),  # (V2-Lite's 512 + 64 latent, YaRN; greedy softmax router)
    "deepseek-v2-lora": ("moe", "deepseek-v2-lora", "deepseek2"),  # (q's LoRA; kv_b whole, as older files hold it)
    "ernie4_5-moe": ("moe", "ernie4_5-moe", "ernie4_5-moe"),  # (a dense first block, a shared expert, untied)
    "ernie4_5-moe-interval": ("moe", "ernie4_5-moe-interval", "ernie4_5-moe"),  # (its MoE layer alone; tied, top 3)
    "minimax-m2": ("moe", "minimax-m2", "minimax-m2"),  # (8 of head_dim 16 rotate, q/k norms over the projection)
    "minimax-m2-full-rope": ("moe", "minimax-m2-full-rope", "minimax-m2"),  # (every dim rotates, top 3 of 4)
    "exaone-moe": ("moe", "exaone-moe", "exaone-moe"),  # (windows, NoPE full layers, 2 groups, a dense first block)
    "exaone-moe-types": ("moe", "exaone-moe-types", "exaone-moe"),  # (its MoE layers alone; not renormalized)
    "lfm2": ("family", "lfm2", "lfm2"),  # (convolution blocks 0 and 2 of 3 taps, the MLP auto-adjusted, tied)
    "lfm2-bias": ("family", "lfm2-bias", "lfm2"),  # (4 taps, blocks 0, 2, 3 convolve, untied; its biases left out)
    "lfm2-moe": ("family", "lfm2-moe", "lfm2moe"),  # (a dense first block, top 2 of 8 with the expert bias, tied)
    "lfm2-moe-nobias": ("family", "lfm2-moe-nobias", "lfm2moe"),  # (top 3 of 4; the bias llama.cpp needs as zeros)
    "hunyuan-moe": ("moe", "hunyuan-moe", "hunyuan-moe"),  # (top 2 of 8, alpha 1000 as the stretched base, untied)
    "hunyuan-moe-lists": ("moe", "hunyuan-moe-lists", "hunyuan-moe"),  # (top 3 of 4, q/k/v biases, no o bias, tied)
    "ministral3": ("family", "ministral3", "mistral3"),  # (YaRN factor 4 from 8, the query scale 0.1 per 8 positions)
    "ministral3-window": ("family", "ministral3-window", "mistral3"),  # (default RoPE, 0.3 per 16; its window left out)
    "mistral4": ("moe", "mistral4", "mistral4"),  # (q LoRA, YaRN, 1 of 2 groups, scale 1.5, ffn_gate_up_exps)
    "mistral4-nolora": ("moe", "mistral4-nolora", "mistral4"),  # (q_proj, YaRN without mscale, gate / up experts apart)
    "minicpm3": ("family", "minicpm3", "minicpm3"),  # (q LoRA, rotate-half, llama.cpp's fixed scales 12 / 1.4 / 256)
    "minicpm3-lora-longrope": ("family", "minicpm3-lora-longrope", "minicpm3"),  # (LongRoPE's long factors from 32)
    "exaone": ("family", "exaone", "exaone"),  # (EXAONE's names, head_dim 24, llama3 factors from 32, untied)
    "jais2": ("family", "jais2", "jais2"),  # (LayerNorms with biases, relu², every bias, head_dim 24, untied)
    "jais2-nobias-tied": ("family", "jais2-nobias-tied", "jais2"),  # (one KV head, tied; zero biases: llama.cpp needs them)
    "afmoe-gguf": ("moe", "afmoe-gguf", "afmoe"),  # (muP, every 4th block NoPE and full, window 6, head_dim 24, 2 shared)
    "hunyuan-dense": ("family", "hunyuan-dense", "hunyuan-dense"),  # (q/k norms after RoPE, alpha 1000 baked, q/k/v biases)
    "olmo": ("family", "olmo", "olmo"),  # (weightless LayerNorms, Q/K permuted, untied)
    "olmo-clip-bias-tied": ("family", "olmo-clip-bias-tied", "olmo"),  # (clamp_kqv 0.5, tied; its biases left out)
    "hy-v3": ("moe", "hy-v3", "hy_v3"),  # (a dense first block, sigmoid router with its bias, scale 2.826, one shared)
    "hy-v3-types": ("moe", "hy-v3-types", "hy_v3"),  # (its MoE blocks alone, top 3 of 4, 2 shared, scale 1.5; biases left out)
}
LOGIT_SEQ = ([72, 101, 108, 108, 111, 44, 32, 119, 5, 17, 33, 2, 60, 61, 8, 9] * 4)[:60]
LOGIT_ROWS = [0, 7, 8, 30, 59]

CORPUS = [
    "hello world", " x", "  leading spaces", "trailing  ", "hello\nworld", "hello\n\nworld\n",
    "a  b    c\t\td", "world hello hello", "hé wörld ñ", "日本語 😀 ok", "don't I'll we've THEY'RE",
    "12345 3.14159 2026-11-26", "x = f(y[0]) + 1;  // c", "a zebra, ok... yes!! no?? don't.", " \n x",
    "    indented\n\tcode", "hello world hello world",
    "<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n", "<start_of_turn>user\nhello<end_of_turn>\n",
    "x<b>y", "<mask> x", "    x", "hello  world", "<s>[INST] hi [/INST]", "<bos>[INST] hi [/INST]<eos>",
    "!!! ??? ...", "\n", "   ", "", "CamelCaseWord HTTPServer getURLFor x2y ÉcoleNormale",
    "end.\nnext;\n\n) ok",
]

# SentencePiece: pieces with scores (the merges' ranks), bytes for the rest; user-defined pieces
# as llama.cpp's converter writes Gemma's (real spaces, not ▁), control tokens for chat markup.
SPM_PIECES = ["▁", "h", "e", "l", "o", "w", "r", "d", "▁h", "ll", "▁he", "llo", "▁hello", "▁w", "or", "▁wor",
              "▁world", "ld", "\n", "\n\n", "▁▁", "▁▁▁▁", "x", "▁x", "i", "n", "▁i", "in", "[", "]", "▁[", "I", "N",
              "S", "T", "IN", "ST", "INST", "▁[INST", "/", "▁[/", "▁t", "th", "the", "▁the", "a", "t"]
SPM_USER = ["  ", "    ", "\t\t", "<b>", "hello world", "<mask>"]
SPM_CONTROL = ["<start_of_turn>", "<end_of_turn>"]

# The byte-level vocabulary is trained here (tokenizers' BPE trainer) on this text, then stored.
BPE_TRAIN = """The quick brown fox jumps over the lazy dog. Hello world, hello there! Don't stop;
we'll see what they're doing. Numbers: 12345, 3.14159, 2026-11-26, 1,000,000.
def f(x):\n    return x[0] + 1  # a comment\n\tindented with tabs
Ünïcödé text, ñandú, 日本語のテキスト, emoji 😀🎉 and more. Hello world hello world.
""" * 3
BPE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BPE_USER = ["<b>"]
# Merges that cross the GPT-2 split (so that a coarser pre-tokenizer shows), appended after the
# trained ones, and a word in the vocabulary that no merge builds (llama.cpp's ignore_merges for
# the Llama 3 family takes such a word whole).
BPE_EXTRA_MERGES = ["n '", "n' t", "t .", "d ,", "( y", "] )", ". .", "! !", "? ?", "Ġ (", "1 2", "12 3", "o k",
                    "Ġ Ċ", "Ċ Ġ", ". Ċ", "; ĊĊ", "Ċ Ċ"]
BPE_WHOLE = ["Ġzebra"]
# Every pre-tokenizer name pyvt maps (pyvt/gguf_tokenizer.py); None: the key absent (llama.cpp:
# "default"). "-nobos": add_bos_token absent, where llama.cpp's default depends on the name.
BPE_PRES = [None, "default", "gpt-2", "mpt", "olmo", "jais", "llama-bpe", "llama3", "llama-v3", "falcon3", "pixtral",
            "dbrx", "smaug-bpe", "falcon", "qwen2", "deepseek-r1-qwen", "megrez", "starcoder", "refact", "command-r",
            "smollm", "codeshell", "exaone", "poro-chat", "bloom", "gpt3-finnish", "viking", "deepseek-coder", "tekken", "gpt-4o", "seed-coder"]


def spm_case(add_space_prefix: bool | None) -> dict:
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)] + SPM_PIECES
    types = [3, 3, 3, 2] + [6] * 256 + [1] * len(SPM_PIECES)
    scores = [0.0] * 260 + [-float(i + 1) for i in range(len(SPM_PIECES))]
    tokens += SPM_CONTROL + SPM_USER
    types += [3] * len(SPM_CONTROL) + [4] * len(SPM_USER)
    scores += [0.0] * (len(SPM_CONTROL) + len(SPM_USER))
    meta = {"tokenizer.ggml.model": "llama", "tokens": tokens, "types": types, "scores": scores,
            "bos": 2, "eos": 1, "unk": 3, "pad": 0}
    if add_space_prefix is not None:
        meta["add_space_prefix"] = add_space_prefix
    return meta


def bpe_case(pre: str | None, trained: tuple[list[str], list[str]], add_bos: bool | None = False) -> dict:
    tokens, merges = trained
    merges = merges + BPE_EXTRA_MERGES
    have = set(tokens)
    extra = [m.replace(" ", "") for m in BPE_EXTRA_MERGES if m.replace(" ", "") not in have]
    tokens = BPE_SPECIALS + tokens + extra + BPE_WHOLE + BPE_USER
    types = [3] * len(BPE_SPECIALS) + [1] * (len(tokens) - len(BPE_SPECIALS) - len(BPE_USER)) + [4] * len(BPE_USER)
    case = {"tokenizer.ggml.model": "gpt2", "tokens": tokens, "types": types, "merges": merges, "bos": 0, "eos": 0}
    if pre is not None:
        case["pre"] = pre
    if add_bos is not None:
        case["add_bos"] = add_bos
    return case


def train_bpe() -> tuple[list[str], list[str]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=700, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tk.train_from_iterator([BPE_TRAIN], trainer)
    model = json.loads(tk.to_str())["model"]
    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return [t for t, _ in vocab], merges


def logits_golden(names=None) -> dict:
    import numpy as np
    import llama_cpp
    from test_gguf_llamacpp_logits import build_case

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in LOGIT_CASES.items():
            if names is not None and name not in names:
                continue
            path = build_case(Path(tmp) / name, spec)
            lm = llama_cpp.Llama(str(path), n_ctx=128, logits_all=True, verbose=False, n_threads=2,
                                 type_k=0, type_v=0)  # GGML_TYPE_F32 keys and values
            lm.eval(LOGIT_SEQ)
            scores = np.array(lm.scores[:len(LOGIT_SEQ)], dtype=np.float32)
            out[name] = {"spec": list(spec), "argmax": scores.argmax(-1).tolist(),
                         "logits": [[float(f"{v:.7g}") for v in scores[r]] for r in LOGIT_ROWS]}
            del lm
    return out


def add_logits(names: list[str]) -> int:
    """Record only the named LOGIT_CASES into the existing logits file, leaving the others as
    they are (the file's own order, then the new cases in LOGIT_CASES' order)."""
    import llama_cpp

    unknown = [n for n in names if n not in LOGIT_CASES]
    if unknown:
        print(f"unknown logit cases: {', '.join(unknown)} (known: {', '.join(LOGIT_CASES)})", file=sys.stderr)
        return 2
    text = OUT_LOGITS.read_text(encoding="utf-8")
    data = json.loads(text)
    if json.dumps(data, separators=(",", ":")) + "\n" != text:
        print(f"{OUT_LOGITS} would not be rewritten byte for byte; not touching it", file=sys.stderr)
        return 1
    if (data["sequence"], data["rows"]) != (LOGIT_SEQ, LOGIT_ROWS):
        print(f"{OUT_LOGITS} holds another sequence or rows than LOGIT_SEQ / LOGIT_ROWS", file=sys.stderr)
        return 1
    if data["versions"]["llama_cpp_python"] != llama_cpp.__version__:
        print(f"{OUT_LOGITS} was written with llama-cpp-python {data['versions']['llama_cpp_python']}, this is "
              f"{llama_cpp.__version__}", file=sys.stderr)
        return 1
    data["cases"].update(logits_golden(set(names)))
    OUT_LOGITS.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {', '.join(names)} into {OUT_LOGITS} ({len(data['cases'])} models)")
    return 0


def main() -> int:
    import llama_cpp

    if sys.argv[1:2] == ["--logits"]:
        return add_logits(sys.argv[2:])
    cases = {"spm-prefix": spm_case(None), "spm-no-prefix": spm_case(False)}
    trained = train_bpe()
    for pre in BPE_PRES:
        cases[f"bpe-{pre or 'no-pre'}"] = bpe_case(pre, trained)
    for pre in ("llama-bpe", "qwen2", "gpt-2"):
        cases[f"bpe-{pre}-nobos"] = bpe_case(pre, trained, add_bos=None)
    with tempfile.TemporaryDirectory() as tmp:
        for name, case in cases.items():
            path = Path(tmp) / f"{name}.gguf"
            gw.write_gguf(path, gguf_meta(case))
            lm = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
            vocab = llama_cpp.llama_model_get_vocab(lm.model)  # the ids generation ends on
            case["eog"] = [i for i in range(len(case["tokens"])) if llama_cpp.llama_vocab_is_eog(vocab, i)]
            case["ids"] = {  # add_bos=True: BOS as the vocabulary says (llama_tokenize's add_special)
                s: {"special": lm.tokenize(s.encode(), add_bos=True, special=True),
                    "plain": lm.tokenize(s.encode(), add_bos=False, special=False)}
                for s in CORPUS
            }
            del lm
    import tokenizers

    data = {
        "about": "Token ids llama.cpp gives for small GGUF vocabularies (each stored whole), with special "
                 "tokens parsed ('special', BOS as llama.cpp adds it) and not ('plain', no BOS). Generated by "
                 "tools/make_llamacpp_golden.py.",
        "versions": {"llama_cpp_python": llama_cpp.__version__, "tokenizers (vocabulary training)": tokenizers.__version__},
        "hparams": {k: v for k, v in HPARAMS.items()},
        # The byte-level vocabulary, stored once: each "bpe-*" case names it ("vocab": "bpe").
        "bpe_vocab": {k: cases["bpe-gpt-2"][k] for k in ("tokens", "types", "merges")},
        "cases": {name: ({"vocab": "bpe", **{k: v for k, v in c.items() if k not in ("tokens", "types", "merges")}}
                         if c["tokenizer.ggml.model"] == "gpt2" else c) for name, c in cases.items()},
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(cases)} vocabularies x {len(CORPUS)} texts)")
    logits = {
        "about": "llama.cpp's logits (float32 compute, f32 KV cache) for tiny GGUF models rebuilt by "
                 "tests/test_gguf_llamacpp_logits.py (build_case); rows LOGIT_ROWS of the sequence, argmax of "
                 "every row. Generated by tools/make_llamacpp_golden.py.",
        "versions": {"llama_cpp_python": llama_cpp.__version__},
        "sequence": LOGIT_SEQ, "rows": LOGIT_ROWS, "cases": logits_golden(),
    }
    OUT_LOGITS.write_text(json.dumps(logits, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT_LOGITS} ({OUT_LOGITS.stat().st_size} bytes, {len(LOGIT_CASES)} models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
