"""pyvt's OpenAI server as a Ray Serve application: N replicas (each its own process with its
own model, engine and continuous batch) behind Ray Serve's HTTP proxy, with autoscaling.

From Python::

    import ray
    from ray import serve
    from pyvt.ray_serve import build_app

    ray.init()
    serve.run(build_app(model="path/or/hf-id", num_replicas=2, threads=2), route_prefix="/")
    # the OpenAI API is now on http://127.0.0.1:8000/v1 (serve.start(http_options=...) for another port)

From the shell (``serve run`` passes ``key=value`` arguments to :func:`app_builder`)::

    serve run pyvt.ray_serve:app_builder model=path/or/hf-id num_replicas=2 threads=2
    serve run pyvt.ray_serve:app_builder min_replicas=1 max_replicas=4 target_ongoing_requests=16

Each replica serves exactly what ``pyvt serve`` does (:func:`pyvt.server.create_app`); Ray
Serve routes each request to a replica (power of two choices over ongoing requests). See
docs/serve.md ("Scale-out with Ray Serve") for running across machines.
"""

from __future__ import annotations

from typing import Any

try:
    from ray import serve
except ImportError as e:  # pragma: no cover - exercised only without ray
    raise ImportError('pyvt.ray_serve needs Ray Serve: pip install "ray[serve]"') from e

__all__ = ["PyvtReplica", "app_builder", "build_app"]

_ENGINE_KEYS = ("max_batch", "max_queue", "prefill_chunk", "prefix_cache_bytes")


@serve.ingress()
class PyvtReplica:
    """One replica: loads the model, starts an engine, serves pyvt's FastAPI app."""

    def __init__(self, model: str | None, load_options: dict[str, Any], engine_options: dict[str, Any],
                 model_name: str | None, api_key: str | None, chat_template: str | None):
        from .engine import AsyncEngine
        from .model import load_model

        self.model = load_model(model, **load_options)
        self.engine = AsyncEngine(self.model, **engine_options)
        self.model_name = model_name or self.model.path.name
        self.api_key = api_key
        self.chat_template = chat_template

    def __serve_build_asgi_app__(self) -> Any:
        from .server import create_app

        return create_app(self.engine, self.model_name, api_key=self.api_key, chat_template=self.chat_template)

    def __del__(self) -> None:  # Ray Serve calls it when the replica stops
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.close(drain=False)
        model = getattr(self, "model", None)
        if model is not None:
            model.close()


def build_app(model: str | None = None, *, num_replicas: int = 1, min_replicas: int | None = None,
              max_replicas: int | None = None, target_ongoing_requests: float | None = None,
              threads: int | None = None, model_name: str | None = None, api_key: str | None = None,
              chat_template: str | None = None, weight_format: str = "int8", device: str = "auto",
              max_seq_len: int | None = None, kv_cache: str = "f16", num_cpus: float | None = None,
              num_gpus: float | None = None, **engine_options: Any) -> "serve.Application":
    """The Ray Serve application: ``num_replicas`` fixed replicas, or autoscaling between
    ``min_replicas`` and ``max_replicas`` aiming at ``target_ongoing_requests`` per replica
    (default: the engine's ``max_batch``). Each replica reserves ``num_cpus`` Ray CPUs (default
    ``threads``, else 1) and ``num_gpus`` GPUs (give 1 with ``device="cuda"``). ``threads``,
    ``weight_format``, ``device``, ``max_seq_len`` and ``kv_cache`` go to :func:`pyvt.load_model`.
    ``engine_options``: max_batch, max_queue, prefill_chunk, prefix_cache_bytes (see
    :class:`pyvt.AsyncEngine`)."""
    unknown = set(engine_options) - set(_ENGINE_KEYS)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))}; engine options are {', '.join(_ENGINE_KEYS)}")
    for name, v in (("num_replicas", num_replicas), ("min_replicas", min_replicas), ("max_replicas", max_replicas)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "min_replicas" else 1)):
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    load = {"threads": threads, "weight_format": weight_format, "device": device, "max_seq_len": max_seq_len,
            "kv_cache": kv_cache}
    actor: dict[str, Any] = {"num_cpus": float(num_cpus if num_cpus is not None else threads or 1)}
    if num_gpus:
        actor["num_gpus"] = float(num_gpus)
    opts: dict[str, Any] = {"ray_actor_options": actor, "name": "pyvt"}
    if min_replicas is not None or max_replicas is not None:
        lo = 1 if min_replicas is None else min_replicas
        hi = max(lo, max_replicas if max_replicas is not None else lo)
        target = target_ongoing_requests if target_ongoing_requests is not None else \
            float(engine_options.get("max_batch", 32))
        opts["autoscaling_config"] = {"min_replicas": lo, "max_replicas": hi, "target_ongoing_requests": target}
        # Each replica takes up to max_batch requests plus its own queue; Ray holds the rest.
        opts["max_ongoing_requests"] = int(engine_options.get("max_batch", 32)) + int(engine_options.get("max_queue", 256))
    else:
        opts["num_replicas"] = num_replicas
        opts["max_ongoing_requests"] = int(engine_options.get("max_batch", 32)) + int(engine_options.get("max_queue", 256))
    dep = serve.deployment(**opts)(PyvtReplica)
    return dep.bind(model, load, engine_options, model_name, api_key, chat_template)


_INT_KEYS = {"num_replicas", "min_replicas", "max_replicas", "threads", "max_seq_len", "max_batch", "max_queue",
             "prefill_chunk", "prefix_cache_bytes"}
_FLOAT_KEYS = {"target_ongoing_requests", "num_cpus", "num_gpus"}


def app_builder(args: dict[str, str]) -> "serve.Application":
    """For ``serve run pyvt.ray_serve:app_builder key=value ...``: the same keywords as
    :func:`build_app` (``model``, ``num_replicas``, ``threads``...), given as strings."""
    kw: dict[str, Any] = {}
    for k, v in args.items():
        if k in _INT_KEYS:
            try:
                kw[k] = int(v)
            except ValueError:
                raise ValueError(f"{k} must be an integer, got {v!r}") from None
        elif k in _FLOAT_KEYS:
            try:
                kw[k] = float(v)
            except ValueError:
                raise ValueError(f"{k} must be a number, got {v!r}") from None
        else:
            kw[k] = v
    return build_app(**kw)
