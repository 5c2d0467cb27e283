"""``pyvt serve``: an OpenAI-compatible HTTP server over :class:`pyvt.engine.AsyncEngine`.

FastAPI + uvicorn, pydantic models for the request bodies, prometheus-client for
``/metrics``. Endpoints: ``POST /v1/chat/completions``, ``POST /v1/completions`` (plain or
``stream: true`` as server-sent events ending with ``data: [DONE]``), ``GET /v1/models``,
``GET /health``, ``GET /metrics``. Requests from all clients run together in the engine's
continuous batch. Errors have OpenAI's shape, ``{"error": {"message", "type", "param",
"code"}}``: invalid values are HTTP 400 naming the field, a missing or wrong API key 401, a
full queue 429 with ``Retry-After``, a shutting-down server 503. Unknown fields are ignored, as
OpenAI's server does. See docs/serve.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import time
from typing import Any, AsyncIterator, Literal, Union

from .engine import AsyncEngine, EngineClosed, QueueFull, Run
from .options import MAX_TOP_LOGPROBS, GenerateOpts, GenerateResult, StreamPiece, TokenLogprob, json_ready

try:  # the server's own dependencies: pip install "pyvt[serve]"
    import prometheus_client as prom
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
    from pydantic import BaseModel, ConfigDict, Field, field_validator
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"pyvt serve needs FastAPI, uvicorn and prometheus-client ({e.name} is missing): "
                      'pip install "pyvt[serve]"') from None

__all__ = ["create_app", "serve"]

_log = logging.getLogger("pyvt.server")

#: Most choices one request may ask for (``n``) and most prompts one completions request holds.
MAX_N = 16
MAX_PROMPTS = 64
#: OpenAI's limit on stop sequences is 4; pyvt takes more, up to this many.
MAX_STOP = 16
#: The completions endpoint's logprobs (top alternatives) limit, as OpenAI's.
MAX_COMPLETION_LOGPROBS = 5


# ==========================================================================================
# Errors
# ==========================================================================================


class APIError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code
        self.headers = headers

    def response(self) -> JSONResponse:
        return JSONResponse(status_code=self.status, headers=self.headers,
                            content={"error": {"message": self.message, "type": self.type, "param": self.param,
                                               "code": self.code}})


def _bad(message: str, param: str | None = None) -> APIError:
    return APIError(400, message, param=param)


def _loc_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body",)]
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (("." if out else "") + p)
    return out or "body"


# ==========================================================================================
# Request bodies (pydantic; unknown fields are ignored)
# ==========================================================================================


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class StreamOptions(_Body):
    include_usage: bool = False


class JSONSchemaFormat(_Body):
    name: str = "response"
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Body):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JSONSchemaFormat | None = None


class _Sampling(_Body):
    """Fields both endpoints take."""

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=0)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int | None = None                     # pyvt / vLLM extension; None, 0 or -1: off
    min_p: float = Field(default=0.0, ge=0.0, le=1.0)
    seed: int | None = Field(default=None, ge=0, lt=2**63)
    stop: Union[str, list[str], None] = None
    presence_penalty: float = Field(default=0.0, ge=-2.0, le=2.0)
    frequency_penalty: float = Field(default=0.0, ge=-2.0, le=2.0)
    repetition_penalty: float = Field(default=1.0, gt=0.0)  # extension
    n: int = Field(default=1, ge=1, le=MAX_N)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    logit_bias: dict[str, float] | None = None
    ignore_eos: bool = False                     # extension
    response_format: ResponseFormat | None = None

    @field_validator("stop")
    @classmethod
    def _stop(cls, v: Any) -> Any:
        items = [v] if isinstance(v, str) else (v or [])
        if len(items) > MAX_STOP:
            raise ValueError(f"at most {MAX_STOP} stop sequences, got {len(items)}")
        if any(s == "" for s in items):
            raise ValueError("stop sequences must be non-empty strings")
        return v

    @field_validator("temperature", "top_p", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v


class ChatMessage(_Body):
    role: str
    content: Union[str, list[dict[str, Any]], None] = None
    name: str | None = None


class ChatRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=0)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)
    tools: list[Any] | None = None
    tool_choice: Any = None
    functions: list[Any] | None = None


class CompletionRequest(_Sampling):
    prompt: Union[str, list[str], list[int], list[list[int]]]
    logprobs: int | None = Field(default=None, ge=0, le=MAX_COMPLETION_LOGPROBS)
    echo: bool = False
    suffix: str | None = None
    best_of: int | None = None


# ==========================================================================================
# Metrics
# ==========================================================================================


class _EngineCollector:
    """Engine counters and gauges, read at scrape time."""

    def __init__(self, engine: AsyncEngine):
        self.engine = engine

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        s = self.engine.stats()
        yield GaugeMetricFamily("pyvt_queue_depth", "Requests waiting to start", value=s.waiting)
        yield GaugeMetricFamily("pyvt_running_requests", "Requests in the running batch", value=s.running)
        yield CounterMetricFamily("pyvt_prompt_tokens", "Prompt tokens admitted", value=s.prompt_tokens)
        yield CounterMetricFamily("pyvt_generation_tokens", "Tokens generated", value=s.generated_tokens)
        yield CounterMetricFamily("pyvt_decode_steps", "Batched decode steps run", value=s.decode_steps)
        yield CounterMetricFamily("pyvt_speculative_draft_tokens",
                                  "Prompt-lookup tokens drafted and checked (serve --prompt-lookup)",
                                  value=s.draft_tokens)
        yield CounterMetricFamily("pyvt_speculative_accepted_tokens", "Drafted tokens the model confirmed",
                                  value=s.accepted_draft_tokens)
        yield CounterMetricFamily("pyvt_engine_requests_rejected", "Requests refused: queue full",
                                  value=s.requests_rejected)
        yield CounterMetricFamily("pyvt_engine_requests_cancelled", "Requests cancelled (client gone)",
                                  value=s.requests_cancelled)
        yield CounterMetricFamily("pyvt_prefix_cache_lookups", "Prefix cache lookups", value=s.prefix_cache_lookups)
        yield CounterMetricFamily("pyvt_prefix_cache_hits", "Prefix cache hits", value=s.prefix_cache_hits)
        yield CounterMetricFamily("pyvt_prefix_cache_reused_tokens", "Prompt tokens taken from the prefix cache",
                                  value=s.prefix_cache_tokens_reused)
        yield GaugeMetricFamily("pyvt_prefix_cache_hit_rate", "Prefix cache hits / lookups",
                                value=(s.prefix_cache_hits / s.prefix_cache_lookups) if s.prefix_cache_lookups else 0.0)
        yield GaugeMetricFamily("pyvt_prefix_cache_bytes", "KV bytes held by the prefix cache",
                                value=s.prefix_cache_bytes)
        yield GaugeMetricFamily("pyvt_prefix_cache_entries", "Sessions held by the prefix cache",
                                value=s.prefix_cache_entries)


class Metrics:
    def __init__(self, engine: AsyncEngine):
        self.registry = prom.CollectorRegistry()
        r = self.registry
        self.requests = prom.Counter("pyvt_requests", "HTTP requests by endpoint and status",
                                     ["endpoint", "status"], registry=r)
        self.ttft = prom.Histogram("pyvt_time_to_first_token_seconds", "Request arrival to first token",
                                   buckets=(.01, .025, .05, .1, .25, .5, 1, 2, 4, 8, 16, 32, 64), registry=r)
        self.itl = prom.Histogram("pyvt_inter_token_latency_seconds", "Time between a request's tokens",
                                  buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5), registry=r)
        self.e2e = prom.Histogram("pyvt_request_duration_seconds", "Request arrival to its last token",
                                  buckets=(.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160), registry=r)
        r.register(_EngineCollector(engine))


# ==========================================================================================
# Turning requests into engine work
# ==========================================================================================


def _make_opts(req: _Sampling, max_new: int, logprobs: bool, top_logprobs: int, echo: bool,
               seed: int) -> GenerateOpts:
    stop = (req.stop,) if isinstance(req.stop, str) else tuple(req.stop or ())
    top_k = req.top_k if req.top_k not in (None, 0, -1) else None
    if top_k is not None and top_k < 1:
        raise _bad(f"top_k must be >= 1, or 0 / -1 for no limit; got {req.top_k}", "top_k")
    extra: dict[str, Any] = {}
    rf = req.response_format
    if rf is not None and rf.type != "text":
        fields = GenerateOpts.__dataclass_fields__
        if "json_schema" not in fields:
            raise _bad("response_format json_object / json_schema is not supported by this build", "response_format")
        if rf.type == "json_object":
            extra["json_object"] = True
        else:
            if rf.json_schema is None or rf.json_schema.schema_ is None:
                raise _bad("response_format.json_schema.schema is required for type json_schema",
                           "response_format.json_schema")
            extra["json_schema"] = rf.json_schema.schema_
    try:
        return GenerateOpts(max_new_tokens=max_new, temperature=req.temperature, top_k=top_k, top_p=req.top_p,
                            min_p=req.min_p, seed=seed, stop=stop, presence_penalty=req.presence_penalty,
                            frequency_penalty=req.frequency_penalty, repetition_penalty=req.repetition_penalty,
                            stop_on_eos=not req.ignore_eos, logprobs=logprobs, top_logprobs=top_logprobs,
                            echo=echo, **extra)
    except ValueError as e:
        msg = str(e)
        field = msg.split(" ", 1)[0] if msg else None
        raise _bad(msg, "response_format" if field in ("json_schema", "json_object") else field) from None
    except ImportError as e:  # the grammar engine is an optional extra
        raise _bad(f"response_format {rf.type if rf else ''} is not available on this server: {e}",
                   "response_format") from None


def _check_common(req: _Sampling) -> None:
    if req.logit_bias:
        raise _bad("logit_bias is not supported", "logit_bias")


def _finish_reason(r: GenerateResult) -> str:
    return "length" if r.finish_reason == "length" else "stop"


def _usage(results: list[GenerateResult], prompt_tokens: int) -> dict[str, int]:
    gen = sum(r.generated_tokens for r in results)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": gen, "total_tokens": prompt_tokens + gen}


def _token_bytes(text: str) -> list[int]:
    return list(text.encode("utf-8", "surrogatepass"))


class _Server:
    def __init__(self, engine: AsyncEngine, model_name: str, api_key: str | None, chat_template: str | None):
        self.engine = engine
        self.model = engine.model
        self.model_name = model_name
        self.api_key = api_key
        self.chat_template = chat_template
        self.created = int(time.time())
        self.metrics = Metrics(engine)
        self.fingerprint = "pyvt-" + self.model.info["weight_format"]

    # ---- preparing ----------------------------------------------------------------------

    def _check_model(self, req: _Sampling) -> None:
        if req.model is not None and req.model not in (self.model_name, "default", ""):
            raise APIError(404, f"The model '{req.model}' does not exist; this server serves '{self.model_name}'",
                           "invalid_request_error", "model", "model_not_found")

    def _room(self, n_prompt: int) -> int:
        return max(0, self.model.max_seq_len - n_prompt)

    def _prepare(self, ids: list[int], req: _Sampling, max_tokens: int | None, default_max: int | None,
                 logprobs: bool, top_logprobs: int, echo: bool, what: str) -> list[Any]:
        """n Prepared prompts (one per choice; seeds seed, seed+1, ...)."""
        from .generation import prepare

        room = self._room(len(ids))
        if max_tokens is None:
            max_new = room if default_max is None else min(default_max, room)
        else:
            max_new = max_tokens
            if len(ids) + max_new > self.model.max_seq_len:
                raise _bad(f"{what} has {len(ids)} tokens; with max_tokens={max_new} that exceeds the model's "
                           f"context of {self.model.max_seq_len} tokens", "max_tokens")
        if len(ids) >= self.model.max_seq_len:
            raise _bad(f"{what} has {len(ids)} tokens; the model's context is {self.model.max_seq_len} tokens",
                       "messages" if what == "messages" else "prompt")
        base = req.seed if req.seed is not None else secrets.randbits(62)
        preps = []
        for i in range(req.n):
            opts = _make_opts(req, max_new, logprobs, top_logprobs, echo, (base + i) % 2**63)
            try:
                preps.append(prepare(self.model, ids, opts, what))
            except ValueError as e:
                raise _bad(str(e), "prompt" if what.startswith("prompt") else "messages") from None
        return preps

    async def _chat_ids(self, req: ChatRequest) -> list[int]:
        msgs = []
        for i, m in enumerate(req.messages):
            content = m.content
            if isinstance(content, list):  # content parts: text only
                texts = []
                for j, part in enumerate(content):
                    if part.get("type") != "text" or not isinstance(part.get("text"), str):
                        raise _bad(f"messages[{i}].content[{j}]: only text parts are supported "
                                   f"(type {part.get('type')!r})", f"messages[{i}].content")
                    texts.append(part["text"])
                content = "".join(texts)
            if m.role not in ("system", "user", "assistant", "developer"):
                raise _bad(f"messages[{i}].role must be system, developer, user or assistant; got {m.role!r}"
                           + (" (tool calls are not supported)" if m.role in ("tool", "function") else ""),
                           f"messages[{i}].role")
            msgs.append({"role": "system" if m.role == "developer" else m.role, "content": content or ""})
        try:
            return await self.engine.chat_prompt(msgs, self.chat_template)
        except ValueError as e:
            raise _bad(str(e), "messages") from None

    def _check_fits(self, preps: list[Any]) -> None:
        e = self.engine.engine
        if len(preps) > e.max_batch + e.max_queue:
            raise _bad(f"this request asks for {len(preps)} sequences (prompts x n); the server runs at most "
                       f"{e.max_batch} and queues {e.max_queue}", "n")

    # ---- running --------------------------------------------------------------------------

    async def _run(self, preps: list[Any], request: Request) -> list[GenerateResult]:
        """Run all choices to the end; a client that goes away cancels them."""
        t0 = time.perf_counter()
        results: list[GenerateResult | None] = [None] * len(preps)
        last = [t0] * len(preps)
        first = [True] * len(preps)
        run = self.engine.open(preps)

        async def consume() -> None:
            async for i, piece in run:
                self._observe(i, piece, t0, last, first)
                if piece.result is not None:
                    results[i] = piece.result

        task = asyncio.ensure_future(consume())
        try:
            while not task.done():
                done, _ = await asyncio.wait({task}, timeout=0.25)
                if not done and await request.is_disconnected():
                    task.cancel()
                    break
            await task
        finally:
            if not task.done():
                task.cancel()
            run.cancel()
        self.metrics.e2e.observe(time.perf_counter() - t0)
        return [r for r in results if r is not None]

    def _observe(self, i: int, piece: StreamPiece, t0: float, last: list[float], first: list[bool]) -> None:
        if piece.token is None:
            return
        now = time.perf_counter()
        if first[i]:
            self.metrics.ttft.observe(now - t0)
            first[i] = False
        else:
            self.metrics.itl.observe(now - last[i])
        last[i] = now

    # ---- chat ------------------------------------------------------------------------------

    async def chat(self, req: ChatRequest, request: Request) -> Any:
        self._check_model(req)
        _check_common(req)
        if req.tools or req.functions:
            raise _bad("tools / function calling are not supported", "tools" if req.tools else "functions")
        top = int(req.top_logprobs or 0)
        if top and not req.logprobs:
            raise _bad("top_logprobs requires logprobs: true", "top_logprobs")
        ids = await self._chat_ids(req)
        max_tokens = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
        # In a worker thread: a first json_schema request builds the grammar tokenizer (~0.4 s).
        preps = await asyncio.to_thread(self._prepare, ids, req, max_tokens, None, bool(req.logprobs), top, False,
                                        "messages")
        self._check_fits(preps)
        rid = "chatcmpl-" + secrets.token_hex(12)
        if req.stream:
            return self._sse(self._chat_events(rid, self.engine.open(preps), req, len(ids)))
        results = await self._run(preps, request)
        choices = []
        for i, r in enumerate(results):
            choices.append({"index": i, "message": {"role": "assistant", "content": r.text, "refusal": None},
                            "logprobs": self._chat_logprobs(r.logprobs, top) if req.logprobs else None,
                            "finish_reason": _finish_reason(r)})
        return {"id": rid, "object": "chat.completion", "created": int(time.time()), "model": self.model_name,
                "system_fingerprint": self.fingerprint, "choices": choices, "usage": _usage(results, len(ids))}

    def _chat_logprobs(self, entries: Any, top: int) -> dict[str, Any]:
        return {"content": [self._chat_lp(e, top) for e in (entries or ())], "refusal": None}

    def _chat_lp(self, e: TokenLogprob, top: int) -> dict[str, Any]:
        tk = self.model.tokenizer
        alts = []
        for t, lp in e.top[:top]:
            s = tk.decode([t], skip_special_tokens=False)
            alts.append({"token": s, "logprob": lp, "bytes": _token_bytes(s)})
        return {"token": e.text, "logprob": e.logprob, "bytes": _token_bytes(e.text), "top_logprobs": alts}

    async def _chat_events(self, rid: str, run: Run, req: ChatRequest,
                           n_prompt: int) -> AsyncIterator[dict[str, Any]]:
        created = int(time.time())
        usage_on = bool(req.stream_options and req.stream_options.include_usage)
        top = int(req.top_logprobs or 0)

        def chunk(i: int, delta: dict[str, Any], finish: str | None, lp: Any = None) -> dict[str, Any]:
            c = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": self.model_name,
                 "system_fingerprint": self.fingerprint,
                 "choices": [{"index": i, "delta": delta, "logprobs": lp, "finish_reason": finish}]}
            if usage_on:
                c["usage"] = None
            return c

        n = len(run.requests)
        results: list[GenerateResult] = []
        t0 = time.perf_counter()
        last, first = [t0] * n, [True] * n
        async with run:
            for i in range(n):
                yield chunk(i, {"role": "assistant", "content": ""}, None)
            async for i, piece in run:
                self._observe(i, piece, t0, last, first)
                if piece.result is not None:
                    results.append(piece.result)
                    yield chunk(i, {}, _finish_reason(piece.result))
                elif piece.text or piece.logprob is not None:
                    lp = None
                    if req.logprobs and piece.logprob is not None:
                        lp = {"content": [self._chat_lp(piece.logprob, top)], "refusal": None}
                    yield chunk(i, {"content": piece.text}, None, lp)
        self.metrics.e2e.observe(time.perf_counter() - t0)
        if usage_on:
            yield {"id": rid, "object": "chat.completion.chunk", "created": created, "model": self.model_name,
                   "system_fingerprint": self.fingerprint, "choices": [], "usage": _usage(results, n_prompt)}

    # ---- completions -------------------------------------------------------------------------

    def _prompts(self, req: CompletionRequest) -> list[Any]:
        p = req.prompt
        if isinstance(p, str):
            return [p]
        if not p:
            raise _bad("prompt is empty", "prompt")
        if all(isinstance(x, int) for x in p):
            return [list(p)]
        if len(p) > MAX_PROMPTS:
            raise _bad(f"at most {MAX_PROMPTS} prompts per request, got {len(p)}", "prompt")
        return list(p)

    async def completions(self, req: CompletionRequest, request: Request) -> Any:
        self._check_model(req)
        _check_common(req)
        if req.suffix:
            raise _bad("suffix is not supported", "suffix")
        if req.best_of not in (None, 1) and req.best_of != req.n:
            raise _bad("best_of other than n is not supported", "best_of")
        top = int(req.logprobs or 0)
        want_lp = req.logprobs is not None
        preps: list[Any] = []
        n_prompt = 0
        prompts = self._prompts(req)
        for k, p in enumerate(prompts):
            what = "prompt" if len(prompts) == 1 else f"prompt[{k}]"
            try:
                ids = await asyncio.to_thread(self.model.encode, p) if isinstance(p, str) else list(p)
            except ValueError as e:
                raise _bad(str(e), "prompt") from None
            vocab = int(self.model.info["vocab_size"])
            if any((not isinstance(t, int)) or t < 0 or t >= vocab for t in ids):
                raise _bad(f"{what}: token ids must be in [0, {vocab})", "prompt")
            if not ids:
                raise _bad(f"{what} is empty", "prompt")
            n_prompt += len(ids)
            preps += await asyncio.to_thread(self._prepare, ids, req, req.max_tokens, 16, want_lp, top, req.echo,
                                             what)
        self._check_fits(preps)
        rid = "cmpl-" + secrets.token_hex(12)
        if req.stream:
            return self._sse(self._completion_events(rid, self.engine.open(preps), preps, req, n_prompt))
        results = await self._run(preps, request)
        choices = []
        for i, r in enumerate(results):
            text = r.text
            lp = None
            if req.echo:
                text = self.model.decode(list(preps[i].ids), skip_special_tokens=False) + text
            if want_lp:
                entries = list(r.prompt_logprobs or ()) + list(r.logprobs or ()) if req.echo else list(r.logprobs or ())
                lp = self._completion_logprobs(entries, top)
            choices.append({"index": i, "text": text, "logprobs": lp, "finish_reason": _finish_reason(r)})
        return {"id": rid, "object": "text_completion", "created": int(time.time()), "model": self.model_name,
                "system_fingerprint": self.fingerprint, "choices": choices, "usage": _usage(results, n_prompt)}

    def _completion_logprobs(self, entries: list[TokenLogprob], top: int, offset0: int = 0) -> dict[str, Any]:
        tk = self.model.tokenizer
        tokens, lps, tops, offs = [], [], [], []
        off = offset0
        for e in entries:
            tokens.append(e.text)
            lps.append(e.logprob)
            tops.append({tk.decode([t], skip_special_tokens=False): lp for t, lp in e.top[:top]} if top else None)
            offs.append(off)
            off += len(e.text)
        return {"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offs}

    async def _completion_events(self, rid: str, run: Run, preps: list[Any], req: CompletionRequest,
                                 n_prompt: int) -> AsyncIterator[dict[str, Any]]:
        created = int(time.time())
        usage_on = bool(req.stream_options and req.stream_options.include_usage)
        top = int(req.logprobs or 0)
        offsets = [0] * len(preps)

        def chunk(i: int, text: str, finish: str | None, lp: Any = None) -> dict[str, Any]:
            c = {"id": rid, "object": "text_completion", "created": created, "model": self.model_name,
                 "system_fingerprint": self.fingerprint,
                 "choices": [{"index": i, "text": text, "logprobs": lp, "finish_reason": finish}]}
            if usage_on:
                c["usage"] = None
            return c

        results: list[GenerateResult] = []
        t0 = time.perf_counter()
        last, first = [t0] * len(preps), [True] * len(preps)
        async with run:
            if req.echo:
                for i, p in enumerate(preps):
                    text = self.model.decode(list(p.ids), skip_special_tokens=False)
                    offsets[i] = len(text)
                    yield chunk(i, text, None)
            async for i, piece in run:
                self._observe(i, piece, t0, last, first)
                if piece.result is not None:
                    results.append(piece.result)
                    yield chunk(i, "", _finish_reason(piece.result))
                elif piece.text or piece.logprob is not None:
                    lp = None
                    if req.logprobs is not None and piece.logprob is not None:
                        lp = self._completion_logprobs([piece.logprob], top, offsets[i])
                    offsets[i] += len(piece.text)
                    yield chunk(i, piece.text, None, lp)
        self.metrics.e2e.observe(time.perf_counter() - t0)
        if usage_on:
            yield {"id": rid, "object": "text_completion", "created": created, "model": self.model_name,
                   "system_fingerprint": self.fingerprint, "choices": [], "usage": _usage(results, n_prompt)}

    # ---- server-sent events ---------------------------------------------------------------------

    def _sse(self, events: AsyncIterator[dict[str, Any]]) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            try:
                async for ev in events:
                    yield b"data: " + json.dumps(json_ready(ev), ensure_ascii=False, allow_nan=False).encode() + b"\n\n"
            except (QueueFull, EngineClosed, ValueError, RuntimeError) as e:
                # Headers are sent already: the error travels as one last event.
                err = {"error": {"message": str(e), "type": "server_error", "param": None, "code": None}}
                yield b"data: " + json.dumps(err).encode() + b"\n\n"
            finally:
                await events.aclose()  # type: ignore[attr-defined]
            yield b"data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


# ==========================================================================================
# The app
# ==========================================================================================


def create_app(engine: AsyncEngine, model_name: str = "default", *, api_key: str | None = None,
               chat_template: str | None = None) -> "FastAPI":
    """The FastAPI app serving ``engine`` under ``model_name``. The app does not close the
    engine; :func:`serve` does at shutdown."""
    srv = _Server(engine, model_name, api_key, chat_template)
    app = FastAPI(title="pyvt", description="OpenAI-compatible API over pyvt", version=_version(),
                  docs_url=None, redoc_url=None)
    app.state.pyvt = srv

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        e = errs[0] if errs else {"loc": ("body",), "msg": "invalid request"}
        param = _loc_name(tuple(e.get("loc", ())))
        msg = str(e.get("msg", "invalid value"))
        if e.get("type") == "json_invalid":
            return _bad(f"the request body is not valid JSON: {msg}").response()
        if param == "body":
            return _bad(f"the request body must be a JSON object ({msg})").response()
        if e.get("type") == "missing":
            return _bad(f"{param}: required field is missing", param).response()
        return _bad(f"{param}: {msg} (got {_short(e.get('input'))})", param).response()

    @app.middleware("http")
    async def _auth_and_count(request: Request, call_next: Any) -> Any:
        path = request.url.path
        if srv.api_key and path.startswith("/v1/"):
            auth = request.headers.get("authorization", "")
            if not secrets.compare_digest(auth.encode(), f"Bearer {srv.api_key}".encode()):
                srv.metrics.requests.labels(path, "401").inc()
                return APIError(401, "Incorrect or missing API key: send 'Authorization: Bearer KEY'",
                                "invalid_request_error", None, "invalid_api_key").response()
        response = await call_next(request)
        if path.startswith("/v1/"):
            srv.metrics.requests.labels(path, str(response.status_code)).inc()
        return response

    @app.get("/health")
    async def health() -> Any:
        if engine.engine.closed:
            return JSONResponse(status_code=503, content={"status": "shutting down"})
        return {"status": "ok"}

    @app.get("/metrics")
    async def metrics() -> Any:
        return PlainTextResponse(prom.generate_latest(srv.metrics.registry), media_type=prom.CONTENT_TYPE_LATEST)

    @app.get("/v1/models")
    async def models() -> Any:
        return {"object": "list", "data": [{"id": model_name, "object": "model", "created": srv.created,
                                            "owned_by": "pyvt", "max_model_len": engine.model.max_seq_len}]}

    @app.get("/v1/models/{name:path}")
    async def model(name: str) -> Any:
        if name != model_name:
            raise APIError(404, f"The model '{name}' does not exist", "invalid_request_error", "model",
                           "model_not_found")
        return {"id": model_name, "object": "model", "created": srv.created, "owned_by": "pyvt"}

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatRequest, request: Request) -> Any:
        return await _guard(srv.chat(body, request))

    @app.post("/v1/completions")
    async def completions(body: CompletionRequest, request: Request) -> Any:
        return await _guard(srv.completions(body, request))

    return app


async def _guard(work: Any) -> Any:
    try:
        return await work
    except QueueFull as e:
        raise APIError(429, str(e), "rate_limit_error", None, "queue_full",
                       {"Retry-After": str(int(math.ceil(e.retry_after)))}) from None
    except EngineClosed as e:
        raise APIError(503, str(e), "server_error", None, "shutting_down", {"Retry-After": "5"}) from None


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _version() -> str:
    from . import __version__

    return __version__


def serve(model: Any, *, host: str = "127.0.0.1", port: int = 8000, model_name: str | None = None,
          api_key: str | None = None, chat_template: str | None = None, log_level: str = "info",
          **engine_options: Any) -> None:
    """Serve ``model`` (a loaded :class:`~pyvt.ModelHandle`) until interrupted (SIGINT or
    SIGTERM): in-flight requests are drained (up to 30 s), then the engine stops."""
    import uvicorn

    engine = AsyncEngine(model, **engine_options)
    app = create_app(engine, model_name or model.path.name, api_key=api_key, chat_template=chat_template)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=30)
    server = uvicorn.Server(config)
    import signal
    import threading

    # uvicorn turns SIGTERM into a graceful shutdown, then raises the signal again for the
    # handler it found: a SIGTERM that ended in a clean shutdown ends here (exit status 0).
    main_thread = threading.current_thread() is threading.main_thread()
    prev = signal.getsignal(signal.SIGTERM) if main_thread else None
    if main_thread:
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        server.run()
    finally:
        engine.close(drain=False)
        if main_thread:
            signal.signal(signal.SIGTERM, prev)
