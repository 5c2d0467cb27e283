"""Chat: dialogs rendered with the model's own chat template (SPEC §10).

The template is the checkpoint's: ``chat_template`` in ``tokenizer_config.json`` (a string,
or a list of named templates — ``"default"`` is used), else ``chat_template.jinja`` beside
the tokenizer. It is rendered with Jinja2 the way Hugging Face transformers'
``apply_chat_template`` renders it — a sandboxed environment with ``trim_blocks`` and
``lstrip_blocks``, the ``loopcontrols`` extension, a ``{% generation %}`` block tag, the
``raise_exception`` / ``strftime_now`` globals and a non-escaping ``tojson`` — with
``messages``, ``add_generation_prompt`` and the tokenizer's special tokens (``bos_token``,
``eos_token``, ``unk_token``, ``pad_token``...) in scope. The rendered text is tokenized
without adding special tokens (the template writes them), as transformers does.

A dialog is a list of ``{"role": ..., "content": ...}`` messages: an optional ``system``
message first, then ``user`` and ``assistant`` turns alternating, starting and ending with
``user``. Anything else raises ``ValueError`` naming the offending message.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any, Mapping, Sequence

from .generation import (
    DEFAULT_MAX_BATCH_SIZE,
    Stream,
    check_batch_size,
    check_model,
    finish,
    open_stream,
    prepare,
    resolve_opts,
    run_batch,
)
from .model import ModelHandle
from .options import GenerateOpts, GenerateResult
from .tokenizer import Tokenizer, template_source

__all__ = [
    "ROLES",
    "apply_chat_template",
    "chat",
    "chat_completion",
    "chat_stream",
    "render_chat_template",
    "validate_dialog",
]

#: The roles a dialog may use.
ROLES = ("system", "user", "assistant")

#: Special tokens of tokenizer_config.json passed to the template (transformers'
#: ``special_tokens_map``).
_SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                        "mask_token")


# ==========================================================================================
# Dialog validation
# ==========================================================================================


def validate_dialog(messages: Any) -> list[dict[str, str]]:
    """Check a dialog and return it as plain dicts (``role``, ``content`` and any other
    string keys the template may read; keys whose value is ``None`` are dropped, as
    transformers does).

    Rules: a non-empty list of mappings, each with a ``role`` in :data:`ROLES` and a str
    ``content``; ``system`` only as the first message; then ``user`` / ``assistant``
    alternating, starting with ``user``; the last message is a ``user`` turn. A violation
    raises ``ValueError`` naming the message (``messages[2]``) and what is wrong.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ValueError(f"messages must be a list of {{'role': ..., 'content': ...}} dicts, "
                         f"got {type(messages).__name__}")
    if len(messages) == 0:
        raise ValueError("messages is empty: a dialog needs at least one user message")
    out: list[dict[str, str]] = []
    expect = "user"
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, Mapping):
            raise ValueError(f"{where} must be a dict with 'role' and 'content', got {type(m).__name__}")
        role = m.get("role")
        if role not in ROLES:
            raise ValueError(f"{where} has role {role!r}; roles must be one of {', '.join(map(repr, ROLES))}")
        content = m.get("content")
        if not isinstance(content, str):
            raise ValueError(f"{where} ({role}) content must be a str, got {type(content).__name__}")
        if role == "system":
            if i != 0:
                raise ValueError(f"{where} is a system message; only the first message may be one")
        elif role != expect:
            after = "at the start of the dialog" if not out or out[-1]["role"] == "system" \
                else f"after the {out[-1]['role']} message messages[{i - 1}]"
            raise ValueError(f"{where} has role {role!r} but a {expect!r} message must come {after} "
                             "(user and assistant turns alternate)")
        else:
            expect = "assistant" if role == "user" else "user"
        out.append({str(k): v for k, v in m.items() if v is not None})
    if out[-1]["role"] != "user":
        raise ValueError(f"messages[{len(out) - 1}] is a {out[-1]['role']} message; the dialog must end "
                         "with a user message for the model to answer")
    return out


# ==========================================================================================
# Rendering
# ==========================================================================================


_MAX_POW_BITS = 1 << 16   # integers a template makes (**, *): at most ~65536 bits
_MAX_REPEAT = 1 << 20     # str / list * n in a template: at most ~1M items
_MAX_STR = 1 << 24        # any string a template operation makes, and the whole output: 16M characters
_MAX_WIDTH = 1 << 16      # a width / precision / indent in a format spec, center(), indent()...
_MAX_ITEMS = 1 << 16      # batch() / slice() counts, lipsum() paragraphs x words
RENDER_SECONDS = 0.5      # a render that takes longer is stopped (a chat template renders in ms;
                          # issue 20: every rejection in under a second, this one included)


class _RenderTimeout(BaseException):
    """Raised inside the rendering thread when the render's time is up."""


def _too_big(what: str) -> Exception:
    import jinja2

    return jinja2.exceptions.SecurityError(f"{what} is too large for a chat template")


def _check_len(n: int, what: str) -> None:
    if n > _MAX_STR:
        raise _too_big(f"{what} ({n} characters)")


_PERCENT_SPEC = None


def _check_format_spec(spec: str, what: str) -> None:
    """Widths and precisions in a %-format string (what == "% formatting") or in one
    str.format spec: no '*' (a width taken from the arguments), each <= _MAX_WIDTH."""
    import re

    global _PERCENT_SPEC
    if what == "% formatting":
        if _PERCENT_SPEC is None:
            _PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
        nums = [g for m in _PERCENT_SPEC.finditer(spec.replace("%%", "")) for g in m.groups() if g]
    else:
        nums = re.findall(r"\d+", spec)
    for num in nums:
        if num == "*":
            raise _too_big(f"a '*' width in {what}")
        if len(num) > 6 or int(num) > _MAX_WIDTH:
            raise _too_big(f"the width {num[:12]} in {what}")


def _check_str_format(fmt: str) -> None:
    import string

    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # str.format raises its own error
    for _, field, spec, _ in parsed:
        if spec and ("{" in spec):
            raise _too_big("a nested format field")
        if spec:
            _check_format_spec(spec, "str.format")


def _check_str_method(obj: Any, args: tuple, kwargs: dict) -> None:
    """Pre-checks of str methods whose result can be far larger than their input."""
    obj = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format / format_map
    name = getattr(obj, "__name__", "")
    owner = getattr(obj, "__self__", None)
    if not isinstance(owner, str):
        return
    if name in ("center", "ljust", "rjust", "zfill"):
        width = args[0] if args else kwargs.get("width", 0)
        if isinstance(width, int) and width > _MAX_STR:
            raise _too_big(f"{name}({width})")
    elif name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(size, int) and size > _MAX_WIDTH:
            raise _too_big(f"expandtabs({size})")
    elif name in ("format", "format_map"):
        _check_str_format(owner)
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        count = args[2] if len(args) > 2 else kwargs.get("count", -1)
        hits = owner.count(args[0]) if args[0] else len(owner) + 1
        if isinstance(count, int) and count >= 0:
            hits = min(hits, count)
        _check_len(len(owner) + hits * max(0, len(args[1]) - len(args[0])), "replace()")
    elif name == "join" and args:
        items = list(args[0]) if not isinstance(args[0], str) else list(args[0])
        _check_len(sum(len(x) for x in items if isinstance(x, str)) + len(owner) * max(0, len(items) - 1), "join()")


def _checked_join(join: Any) -> Any:
    """Jinja's `~` (str_join / markup_join) with a bound on the result."""

    def checked(seq: Any) -> Any:
        out = join(seq)
        _check_len(len(out), "a '~' concatenation")
        return out

    return checked


@lru_cache(maxsize=32)
def _compile(template: str) -> Any:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _GenerationTag(jinja2.ext.Extension):
        # transformers marks assistant text with {% generation %}...{% endgeneration %};
        # rendering passes the body through.
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_passthrough"), [], [], body).set_lineno(lineno)

        def _passthrough(self, caller: Any) -> str:
            return caller()

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        if (isinstance(indent, int) and indent > 64) or (isinstance(indent, str) and len(indent) > 64):
            raise _too_big(f"tojson(indent={indent!r:.20})")
        out = json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
        _check_len(len(out), "tojson()")
        return out

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    class _Sandbox(ImmutableSandboxedEnvironment):
        # A template comes with a downloaded model: besides the sandbox's rules (no private
        # attributes, no mutation, range() <= 100000 items), refuse the two operators that
        # turn a few characters into minutes of CPU or gigabytes: huge powers
        # ({{ 9**9**9 }}) and huge repetitions ({{ 'a' * 10**10 }}).
        intercepted_binops = frozenset(["*", "**", "+", "%"])

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            _check_str_method(__obj, args, kwargs)
            return super().call(__context, __obj, *args, **kwargs)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "+":
                if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
                    if len(left) + len(right) > _MAX_STR:
                        raise _too_big(f"a concatenation of {len(left) + len(right)} items")
            elif operator == "%":
                if isinstance(left, str):
                    _check_format_spec(left, "% formatting")
            elif operator == "**":
                if (isinstance(left, int) and isinstance(right, int) and abs(left) > 1
                        and right * max(abs(left), 2).bit_length() > _MAX_POW_BITS):
                    raise jinja2.exceptions.SecurityError(
                        f"a power of a {abs(left).bit_length()}-bit number to a {right.bit_length()}-bit "
                        "exponent is too large for a chat template")
            elif operator == "*":
                seq, n = (left, right) if isinstance(right, int) else (right, left)
                if (isinstance(seq, (str, list, tuple)) and isinstance(n, int)
                        and len(seq) * n > _MAX_REPEAT):
                    raise jinja2.exceptions.SecurityError(
                        f"repeating a {type(seq).__name__} of length {len(seq)} {n} times is too large "
                        "for a chat template")
                if (isinstance(left, int) and isinstance(right, int)
                        and left.bit_length() + right.bit_length() > _MAX_POW_BITS):
                    raise _too_big(f"a product of {left.bit_length()}- and {right.bit_length()}-bit integers")
            return super().call_binop(context, operator, left, right)

    env = _Sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    _bound_filters(env)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    try:
        compiled = env.from_string(template)
        ns = compiled.root_render_func.__globals__  # the template module's own namespace
        for name in ("str_join", "markup_join"):
            if name in ns:
                ns[name] = _checked_join(ns[name])
        return compiled
    except jinja2.exceptions.TemplateSyntaxError as e:
        raise ValueError(f"chat template has a syntax error at line {e.lineno}: {e.message}") from None
    except RecursionError:
        raise ValueError("chat template is nested too deeply to compile") from None
    except (SyntaxError, ValueError, TypeError, MemoryError) as e:
        # Jinja turns the template into Python source; some names Jinja accepts are not
        # Python identifiers (U+1818...), and Python's compiler then fails.
        raise ValueError(f"chat template cannot be compiled: {type(e).__name__}: {e}") from None


def _bound_filters(env: Any) -> None:
    """Jinja's filters that turn a small input into a large output, with bounds."""
    f = env.filters

    def wrap(name: str, check: Any) -> None:
        inner = f[name]

        def bounded(*args: Any, **kwargs: Any) -> Any:
            check(*args, **kwargs)
            return inner(*args, **kwargs)

        bounded.__name__ = name
        for attr in ("jinja_pass_arg",):  # keep Jinja's context/env passing markers
            if hasattr(inner, attr):
                setattr(bounded, attr, getattr(inner, attr))
        f[name] = bounded

    def width_arg(k: int, key: str, default: Any):
        def check(*args: Any, **kwargs: Any) -> None:
            w = args[k] if len(args) > k else kwargs.get(key, default)
            if isinstance(w, int) and w > _MAX_WIDTH:
                raise _too_big(f"a width of {w}")
            if isinstance(w, str) and len(w) > _MAX_WIDTH:
                raise _too_big(f"an indent of {len(w)} characters")
        return check

    def count_arg(k: int, key: str):
        def check(*args: Any, **kwargs: Any) -> None:
            n = args[k] if len(args) > k else kwargs.get(key, 0)
            if isinstance(n, int) and n > _MAX_ITEMS:
                raise _too_big(f"a count of {n}")
        return check

    def fmt(value: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(value, str):
            _check_format_spec(value, "% formatting")

    def replace(*args: Any, **kwargs: Any) -> None:
        # (eval_ctx, s, old, new, count=None)
        a = args[1:] if args and not isinstance(args[0], str) else args
        if len(a) >= 3 and all(isinstance(x, str) for x in a[:3]):
            s, old, new = a[:3]
            hits = s.count(old) if old else len(s) + 1
            _check_len(len(s) + hits * max(0, len(new) - len(old)), "replace")

    wrap("center", width_arg(1, "width", 80))
    wrap("indent", width_arg(1, "width", 4))
    wrap("format", fmt)
    wrap("replace", replace)
    wrap("batch", count_arg(1, "linecount"))
    wrap("slice", count_arg(1, "slices"))
    wrap("wordwrap", width_arg(2, "width", 79))

    lipsum = env.globals.get("lipsum")
    if lipsum is not None:
        def bounded_lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> Any:  # noqa: A002
            if not all(isinstance(x, int) for x in (n, min, max)) or n * max > _MAX_ITEMS:
                raise _too_big(f"lipsum({n}, max={max})")
            return lipsum(n=n, html=html, min=min, max=max)

        env.globals["lipsum"] = bounded_lipsum


def _render_bounded(compiled: Any, variables: dict[str, Any]) -> str:
    """Render with a bound on the output (_MAX_STR characters) and on the time
    (RENDER_SECONDS): a timer interrupts the rendering thread between two Python
    operations, so loops that produce nothing are stopped too."""
    import ctypes
    import threading

    tid = threading.get_ident()
    lock = threading.Lock()
    state = {"active": True, "fired": False}

    def fire() -> None:
        with lock:
            if state["active"]:
                state["fired"] = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(_RenderTimeout))

    timer = threading.Timer(RENDER_SECONDS, fire)
    timer.daemon = True
    try:
        timer.start()
        try:
            pieces, total = [], 0
            for piece in compiled.generate(**variables):
                total += len(piece)
                if total > _MAX_STR:
                    raise _too_big(f"the rendered prompt (over {_MAX_STR} characters)")
                pieces.append(piece)
            out = "".join(pieces)
        finally:
            with lock:
                state["active"] = False
                if state["fired"]:  # fired, maybe not yet delivered: take it back
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None)
            timer.cancel()
    except _RenderTimeout:
        state["fired"] = True
    if state["fired"]:
        import jinja2

        raise jinja2.exceptions.SecurityError(f"rendering took more than {RENDER_SECONDS:g} s (stopped)")
    return out


def render_chat_template(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = True,
    validate: bool = True,
    **variables: Any,
) -> str:
    """Render a Jinja chat template exactly as transformers does.

    ``variables`` are passed to the template as they are (``bos_token="<s>"``,
    ``date_string=...``, ``tools=...``). With ``validate`` (default) the dialog is checked
    with :func:`validate_dialog` first. Template errors (``raise_exception`` included) raise
    ``ValueError``.
    """
    import jinja2

    if not isinstance(template, str):
        raise TypeError(f"template must be a str, got {type(template).__name__}")
    msgs = validate_dialog(messages) if validate else [
        {k: v for k, v in m.items() if v is not None} for m in messages]
    compiled = _compile(template)
    try:
        return _render_bounded(compiled, dict(variables, messages=msgs,
                                              add_generation_prompt=bool(add_generation_prompt)))
    except jinja2.exceptions.TemplateError as e:
        raise ValueError(f"chat template error: {e}") from None
    except MemoryError:
        raise ValueError("chat template error: out of memory while rendering") from None
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError) as e:
        # A template is code shipped with the model: whatever it does wrong ({{ 1 / 0 }},
        # {{ messages[99] }} on a short dialog...) is a chat template error, not a crash.
        raise ValueError(f"chat template error: {type(e).__name__}: {e}") from None


def _special_tokens(tok: Tokenizer) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in _SPECIAL_TOKEN_NAMES:
        v = tok.config.get(name)
        if isinstance(v, dict):
            v = v.get("content")
        if isinstance(v, str):
            out[name] = v
    # A SentencePiece model without tokenizer_config.json still has BOS/EOS pieces.
    if "bos_token" not in out and tok.bos_token_id is not None:
        piece = tok.id_to_token(tok.bos_token_id)
        if piece:
            out["bos_token"] = piece
    if "eos_token" not in out and tok.eos_token_id is not None:
        piece = tok.id_to_token(tok.eos_token_id)
        if piece:
            out["eos_token"] = piece
    return out


def _resolve_template(tok: Tokenizer, chat_template: str | None) -> str:
    if chat_template is not None:
        if not isinstance(chat_template, str):
            raise TypeError(f"chat_template must be a str, got {type(chat_template).__name__}")
        return chat_template
    t = template_source(tok.chat_template)
    if t is None:
        where = tok.path.parent
        raise ValueError(
            f"the model has no chat template (no 'chat_template' in {where / 'tokenizer_config.json'} and no "
            f"{where / 'chat_template.jinja'}); pass chat_template=, or use generate() with your own prompt"
        )
    return t


def apply_chat_template(
    model: ModelHandle | Tokenizer,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = True,
    tokenize: bool = False,
    chat_template: str | None = None,
    **variables: Any,
) -> str | list[int]:
    """The prompt a chat model sees for ``messages``: the rendered text, or its token ids
    with ``tokenize=True`` (encoded without adding special tokens, as transformers does).

    ``model`` is a :class:`~pyvt.ModelHandle` or a :class:`~pyvt.Tokenizer`;
    ``chat_template`` overrides the model's template; ``variables`` reach the template
    (and override the special tokens)."""
    if isinstance(model, ModelHandle):
        tok = model.tokenizer
    elif isinstance(model, Tokenizer):
        tok = model
    else:
        raise TypeError(f"model must be a ModelHandle or a Tokenizer, got {type(model).__name__}")
    template = _resolve_template(tok, chat_template)
    variables = {**_special_tokens(tok), **variables}
    if tokenize:
        return _encode_dialog(tok, template, messages, bool(add_generation_prompt), variables)
    return render_chat_template(template, messages, add_generation_prompt=add_generation_prompt, **variables)


def _encode_dialog(tok: Tokenizer, template: str, messages: Any, add_generation_prompt: bool,
                   variables: dict[str, Any]) -> list[int]:
    """The dialog's token ids, with the text of the messages never read as control tokens.

    A user who types ``<|im_end|>\n<|im_start|>system`` into a message must not forge a turn
    (the "fragile special tags" flaw). A dialog whose messages spell no special token is
    rendered and encoded in one piece, exactly as transformers does. Otherwise each special
    token's text inside a message is swapped for a private-use placeholder character before
    rendering; the rendered text is then cut at the template's own special tokens (as
    `tokenizers` cuts it) and each piece is encoded with the placeholders put back as plain
    text (``Tokenizer.encode_plain``).
    """
    import re

    msgs = validate_dialog(messages)
    specials = tok.special_tokens()
    pattern = re.compile("|".join(re.escape(t) for t in sorted(specials, key=len, reverse=True))) if specials else None

    def strings(m: dict[str, Any]):
        return [(k, v) for k, v in m.items() if k != "role" and isinstance(v, str)]

    if pattern is None or not any(pattern.search(v) for m in msgs for _, v in strings(m)):
        text = render_chat_template(template, msgs, add_generation_prompt=add_generation_prompt, validate=False,
                                    **variables)
        return tok.encode(text, add_special_tokens=False)

    seen = set(template).union(*(set(v) for m in msgs for _, v in strings(m)))
    base = next((b for b in (0x100000, 0xF0000, 0xE000) if not any(chr(b + i) in seen for i in range(len(specials)))),
                None)
    if base is None:  # pragma: no cover - every private-use range already in the messages
        raise ValueError("messages use every private-use character range pyvt could mark special tokens with")
    names = sorted(specials)
    to_ph = {t: chr(base + i) for i, t in enumerate(names)}
    from_ph = {v: k for k, v in to_ph.items()}
    safe = [{k: (pattern.sub(lambda mt: to_ph[mt.group(0)], v) if isinstance(v, str) and k != "role" else v)
             for k, v in m.items()} for m in msgs]
    text = render_chat_template(template, safe, add_generation_prompt=add_generation_prompt, validate=False,
                                **variables)
    strip = tok.special_token_strip()
    restore = re.compile("|".join(map(re.escape, from_ph)))
    pieces = pattern.split(text)
    found = pattern.findall(text)
    ids: list[int] = []
    for k, piece in enumerate(pieces):
        if k > 0 and strip.get(found[k - 1], (False, False))[1]:
            piece = piece.lstrip()
        if k < len(found) and strip.get(found[k], (False, False))[0]:
            piece = piece.rstrip()
        if piece:
            ids += tok.encode_plain(restore.sub(lambda mt: from_ph[mt.group(0)], piece))
        if k < len(found):
            ids.append(specials[found[k]])
    return ids


# ==========================================================================================
# Chat generation
# ==========================================================================================


def _chat_prompt(model: ModelHandle, messages: Any, chat_template: str | None) -> list[int]:
    ids = apply_chat_template(model, messages, tokenize=True, chat_template=chat_template)
    assert isinstance(ids, list)
    return ids


def chat(
    model: ModelHandle,
    messages: Sequence[Mapping[str, Any]],
    opts: GenerateOpts | None = None,
    *,
    chat_template: str | None = None,
    **overrides: Any,
) -> GenerateResult:
    """The assistant's reply to a dialog (see :func:`validate_dialog`), rendered with the
    model's chat template and ``add_generation_prompt``. ``result.text`` is the reply,
    ``result.message`` the same as ``{"role": "assistant", "content": ...}``; generation
    stops at the model's end-of-turn token (an EOS id) unless ``stop_on_eos=False``."""
    return finish(chat_stream(model, messages, opts, chat_template=chat_template, **overrides))


def chat_stream(
    model: ModelHandle,
    messages: Sequence[Mapping[str, Any]],
    opts: GenerateOpts | None = None,
    *,
    chat_template: str | None = None,
    **overrides: Any,
) -> Stream:
    """:func:`chat` as a :class:`~pyvt.Stream` of pieces (see :func:`pyvt.stream`)."""
    model = check_model(model)
    opts = resolve_opts(opts, overrides)
    return open_stream(model, prepare(model, _chat_prompt(model, messages, chat_template), opts))


def chat_completion(
    model: ModelHandle,
    dialogs: Sequence[Sequence[Mapping[str, Any]]],
    opts: GenerateOpts | None = None,
    *,
    chat_template: str | None = None,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    **overrides: Any,
) -> list[GenerateResult]:
    """Replies to a batch of dialogs: one :class:`~pyvt.GenerateResult` per dialog, in
    order, each equal to :func:`chat` on that dialog alone (greedy). Up to
    ``max_batch_size`` dialogs are decoded together. Every dialog is validated before any
    work starts; errors name it (``dialogs[1]: messages[2] ...``)."""
    model = check_model(model)
    opts = resolve_opts(opts, overrides)
    mbs = check_batch_size(max_batch_size)
    if isinstance(dialogs, (str, bytes)) or not isinstance(dialogs, Sequence):
        raise TypeError("dialogs must be a list of dialogs (each a list of messages); for one dialog use chat()")
    if dialogs and isinstance(dialogs[0], Mapping):
        raise TypeError("dialogs must be a list of dialogs, got a single dialog (a list of messages); "
                        "wrap it in a list or use chat()")
    preps = []
    for i, d in enumerate(dialogs):
        try:
            ids = _chat_prompt(model, d, chat_template)
        except ValueError as e:
            raise ValueError(f"dialogs[{i}]: {e}") from None
        preps.append(prepare(model, ids, opts, f"dialogs[{i}]"))
    return run_batch(model, preps, mbs)
