"""Command line: ``pyvt`` / ``python -m pyvt``.

    pyvt generate "The capital of France is"        # default model, fetched once
    pyvt generate --model PATH --max-new-tokens 64 "Once upon a time"
    pyvt info [MODEL]
    pyvt pull
    pyvt convert FILE.gguf OUTDIR

Errors are one clear line on stderr (a traceback with --debug) and a non-zero exit code:
1 for bad input or a failed run, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

EXIT_ERROR = 1
EXIT_USAGE = 2


def _add_load_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weight-format", default="int8", choices=["int8", "fp8", "fp8-channel", "bf16"],
                   help="8-bit weight format (default int8: one scale per 32 weights) or bf16 reference")
    p.add_argument("--block-size", type=int, default=None, help="K-block of the weight scales (format default)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    p.add_argument("--max-seq-len", type=int, default=None, help="context limit (default: the config's)")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyvt", description="pyvt: fast 8-bit LLM inference for Llama-family checkpoints.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser("generate", help="generate text from a prompt",
                       description="Generate a continuation of PROMPT. Text goes to stdout, speed to stderr.")
    g.add_argument("prompt", help="the prompt text")
    g.add_argument("--model", "-m", default=None,
                   help="checkpoint folder / .safetensors / index.json (default: SmolLM2-135M-Instruct)")
    g.add_argument("--max-new-tokens", "-n", type=int, default=50)
    g.add_argument("--temperature", "-t", type=float, default=0.0, help="0 = greedy (default)")
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=42)
    g.add_argument("--ignore-eos", action="store_true", help="do not stop at end-of-sequence tokens")
    g.add_argument("--json", action="store_true", help="print the whole result as JSON")
    _add_load_args(g)

    i = sub.add_parser("info", help="describe a model (config, format, bytes, backend)")
    i.add_argument("model", nargs="?", default=None, help="model path (default: the default model)")
    _add_load_args(i)

    sub.add_parser("pull", help="fetch and convert the default model (SmolLM2-135M-Instruct)")

    c = sub.add_parser("convert", help="convert a Llama GGUF file to a Hugging Face folder")
    c.add_argument("gguf", help="input .gguf file")
    c.add_argument("outdir", help="output folder (config.json, model.safetensors, tokenizer.json, ...)")

    sub.add_parser("backends", help="which backends this build has and can use")
    return parser


def _load(args: argparse.Namespace, path):
    from .llm import load_model

    return load_model(path, weight_format=args.weight_format, block_size=args.block_size,
                      device=args.device, threads=args.threads, max_seq_len=args.max_seq_len)


def _cmd_generate(args: argparse.Namespace) -> int:
    from .llm import GenerateOpts, generate

    opts = GenerateOpts(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                        top_k=args.top_k, top_p=args.top_p, seed=args.seed,
                        stop_on_eos=not args.ignore_eos)
    with _load(args, args.model) as model:
        res = generate(model, args.prompt, opts)
        if args.json:
            out = dict(res.__dict__)
            out["tokens"] = list(res.tokens)
            print(json.dumps(out, indent=2, ensure_ascii=False))
        else:
            print(args.prompt + res.text)
        n = len(res.tokens)
        tok_s = 1e3 / res.ms_per_token if res.ms_per_token > 0 else float("nan")
        pre_s = res.prompt_tokens / (res.prefill_ms / 1e3) if res.prefill_ms > 0 else float("nan")
        print(f"[{model.info['weight_format']} on {model.info['device']}] prompt {res.prompt_tokens} tokens "
              f"in {res.prefill_ms:.1f} ms ({pre_s:.0f} tok/s); generated {n} tokens, "
              f"{res.ms_per_token:.2f} ms/token ({tok_s:.1f} tok/s); finish: {res.finish_reason}",
              file=sys.stderr)
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    with _load(args, args.model) as model:
        info = dict(model.info)
        info["path"] = str(model.path)
        info["tokenizer"] = str(model.tokenizer.path)
        info["eos_token_ids"] = sorted(model.eos_token_ids)
        width = max(len(k) for k in info)
        for k, v in info.items():
            print(f"{k:<{width}}  {v}")
    return 0


def _cmd_pull(args: argparse.Namespace) -> int:
    from . import hub

    print(hub.pull())
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from .convert import convert_gguf

    print(convert_gguf(args.gguf, args.outdir))
    return 0


def _cmd_backends(args: argparse.Namespace) -> int:
    from . import ops

    print(ops.backend_info())
    return 0


_COMMANDS = {
    "generate": _cmd_generate,
    "info": _cmd_info,
    "pull": _cmd_pull,
    "convert": _cmd_convert,
    "backends": _cmd_backends,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("pyvt: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError, RuntimeError, ImportError, TypeError, MemoryError) as e:
        if args.debug:
            raise
        print(f"pyvt {args.command}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
