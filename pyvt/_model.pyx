# cython: language_level=3
"""Low-level bindings of libvt's model API: ``Model`` (one ``vt_model*``) and ``Session``
(one ``vt_session*``, a KV cache). ``pyvt.model`` and ``pyvt.generation`` build the user-facing API on these.

Every native compute call runs without the GIL. A Model may be used from many threads at
once; ``close()`` is safe while other threads still use it: the native model is freed when
the last call / open session using it is done.
"""
cimport cython
from cpython.exc cimport PyErr_CheckSignals
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int32_t, int64_t, uint64_t

from pyvt._vt cimport *

import os
import threading

import numpy as np

include "_errors.pxi"

_FORMATS = {
    "auto": VT_FORMAT_AUTO,
    "int8": VT_FORMAT_INT8_BLOCKED,
    "fp8": VT_FORMAT_FP8_BLOCKED,
    "fp8-channel": VT_FORMAT_FP8_CHANNEL,
    "bf16": VT_FORMAT_BF16,
    "int4": VT_FORMAT_INT4_BLOCKED,
    "int4-min": VT_FORMAT_INT4_MIN_BLOCKED,
    "mxfp4": VT_FORMAT_MXFP4,
}
_FORMAT_NAMES = {v: k for k, v in _FORMATS.items() if k != "auto"}
_KV_CACHE = {"f16": VT_DTYPE_F16, "f32": VT_DTYPE_F32, "int8": VT_DTYPE_I8}
_KV_CACHE_NAMES = {v: k for k, v in _KV_CACHE.items()}
_LOGITS_MODES = {"none": VT_LOGITS_NONE, "last": VT_LOGITS_LAST, "all": VT_LOGITS_ALL}

_INT32_MIN = -(2 ** 31)
_INT32_MAX = 2 ** 31 - 1


cdef object _logits_out(tuple shape, float** data):
    """A float32 array of `shape` for libvt to write logits into; *data = its first element."""
    out = np.empty(shape, dtype=np.float32)
    cdef float[::1] flat = out.reshape(-1)
    data[0] = &flat[0]
    return out


def _token_array(tokens, int64_t vocab):
    """tokens (an int sequence or an integer ndarray) -> a contiguous int32 ndarray.

    Ids outside [0, vocab) in anything but an int32 array are reported here (they may not
    even fit int32); int32 arrays go to libvt as they are, which checks them too."""
    if isinstance(tokens, np.ndarray):
        arr = tokens
        if arr.ndim != 1:
            raise ValueError(f"tokens must be a 1-D sequence of token ids, got shape {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            raise ValueError(f"tokens must be integers, got an array of dtype {arr.dtype}")
        if arr.dtype != np.int32:
            bad = np.flatnonzero((arr < 0) | (arr >= vocab))
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"token id {arr[i]} (tokens[{i}]) is outside the vocabulary [0, {vocab})")
            arr = arr.astype(np.int32)
        return np.ascontiguousarray(arr)
    if isinstance(tokens, (str, bytes)):
        raise ValueError("tokens must be a sequence of token ids, not text")
    vals = list(tokens)
    for i, t in enumerate(vals):
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
            raise ValueError(f"tokens must be integers, got {t!r} at tokens[{i}]")
        if not (0 <= t < vocab):
            raise ValueError(f"token id {t} (tokens[{i}]) is outside the vocabulary [0, {vocab})")
    return np.array(vals, dtype=np.int32)


MAX_BATCH = VT_MAX_BATCH
MAX_VERIFY = VT_MAX_VERIFY


_PENALTY_DEFAULTS = {"min_p": 0.0, "repetition_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0}


cdef vt_sample_options _sampling(temperature, top_k, top_p, seed, dict penalties=None) except *:
    """Options -> vt_sample_options (libvt validates the values and names the field).
    penalties: min_p, repetition_penalty, frequency_penalty, presence_penalty."""
    extra = dict(_PENALTY_DEFAULTS)
    if penalties:
        unknown = sorted(set(penalties) - set(_PENALTY_DEFAULTS))
        if unknown:
            raise TypeError(f"unknown sampling option(s): {', '.join(unknown)}")
        extra.update(penalties)
    cdef vt_sample_options o = vt_sample_default_options()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not (0 <= int(seed) < 2 ** 64):
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)):
        raise ValueError(f"top_k must be an integer (0 = no cap), got {top_k!r}")
    o.temperature = float(temperature)
    o.top_k = <int32_t>max(min(int(top_k), _INT32_MAX), _INT32_MIN)
    o.top_p = float(top_p)
    o.seed = <uint64_t>int(seed)
    o.min_p = float(extra["min_p"])
    o.repetition_penalty = float(extra["repetition_penalty"])
    o.frequency_penalty = float(extra["frequency_penalty"])
    o.presence_penalty = float(extra["presence_penalty"])
    return o


cdef int _progress_trampoline(void* user, int64_t done, int64_t total) noexcept nogil:
    with gil:
        return (<Model>user)._on_progress(done, total)


@cython.no_gc_clear
cdef class Model:
    """A loaded Llama-family checkpoint (see vt_model_load)."""

    cdef vt_model* _m
    cdef object _lock
    cdef int _users
    cdef bint _closed
    cdef object _info
    cdef object _progress
    cdef object _progress_exc

    def __cinit__(self, path, *, weight_format="auto", block_size=0, num_layers=0, device="auto",
                  max_seq_len=0, progress=None, extra_eos_ids=(), packed_cache_dir=None, kv_cache="f16"):
        self._m = NULL
        self._lock = threading.Lock()
        self._users = 0
        self._closed = False
        if weight_format not in _FORMATS:
            raise ValueError(f"weight_format must be one of {', '.join(_FORMATS)}; got {weight_format!r}")
        if not isinstance(kv_cache, str) or kv_cache not in _KV_CACHE:
            raise ValueError(f"kv_cache must be one of {', '.join(_KV_CACHE)}; got {kv_cache!r}")
        if progress is not None and not callable(progress):
            raise TypeError(f"progress must be a callable(done_bytes, total_bytes) or None, got {progress!r}")
        cdef vt_model_options opt = vt_model_default_options()
        opt.weight_format = _FORMATS[weight_format]
        opt.kv_cache_dtype = _KV_CACHE[kv_cache]
        for name, v in (("block_size", block_size), ("num_layers", num_layers), ("max_seq_len", max_seq_len)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 or v > _INT32_MAX:
                raise ValueError(f"{name} must be an integer >= 0 (0 = default), got {v!r}")
        opt.block_size = block_size
        opt.num_layers = num_layers
        opt.max_seq_len = max_seq_len
        if device == "auto":
            opt.device = VT_DEVICE_AUTO
        elif device == "cpu":
            opt.device = VT_DEVICE_CPU
        elif isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
            opt.device = VT_DEVICE_CUDA
            idx = device[5:] if device.startswith("cuda:") else "0"
            if not idx.isdigit():
                raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
            opt.device_index = int(idx)
        else:
            raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
        # Always installed: it also lets Ctrl-C cancel a long load.
        self._progress = progress
        self._progress_exc = None
        opt.progress = _progress_trampoline
        opt.progress_user = <void*>self

        # The tokenizer's EOS when pyvt tokenizes with a file libvt does not read (tokenizer_path=,
        # tokenizer.model): libvt adds it to the model's one EOS list.
        eos = list(extra_eos_ids)
        for e in eos:
            if isinstance(e, bool) or not isinstance(e, (int, np.integer)) or e < 0 or e > _INT32_MAX:
                raise ValueError(f"extra_eos_ids must be token ids (integers >= 0), got {e!r}")
        if len(eos) > VT_MAX_EOS:
            raise ValueError(f"extra_eos_ids: at most {VT_MAX_EOS} ids, got {len(eos)}")
        eos_arr = np.asarray(eos + [0], dtype=np.int32)
        cdef int32_t[::1] eos_view = eos_arr
        opt.extra_eos_ids = &eos_view[0]
        opt.num_extra_eos = len(eos)

        bpath = os.fsencode(path)
        if b"\0" in bpath:  # C would read the path only up to the NUL: another file
            head = os.fsdecode(bpath.split(b"\0")[0])
            raise ValueError(f"path {head!r}... contains a NUL character")
        bcache = None
        if packed_cache_dir is not None:
            bcache = os.fsencode(packed_cache_dir)
            if b"\0" in bcache or not bcache:
                raise ValueError(f"packed_cache_dir {packed_cache_dir!r} is empty or contains a NUL character")
            opt.packed_cache_dir = bcache
        cdef const char* cpath = bpath
        cdef vt_status st
        cdef vt_model* m = NULL
        with nogil:
            st = vt_model_load(cpath, &opt, &m)
        self._progress = None
        if st == VT_STATUS_CANCELLED and self._progress_exc is not None:
            exc, self._progress_exc = self._progress_exc, None
            raise exc
        _check(st)
        self._m = m
        self._info = self._read_info()

    cdef int _on_progress(self, int64_t done, int64_t total) noexcept:
        try:
            PyErr_CheckSignals()
            if self._progress is not None:
                self._progress(done, total)
            return 0
        except BaseException as e:
            self._progress_exc = e
            return 1

    def __dealloc__(self):
        if self._m != NULL:
            vt_model_free(self._m)
            self._m = NULL

    cdef object _read_info(self):
        cdef vt_model_info i
        i.struct_size = sizeof(vt_model_info)
        _check(vt_model_get_info(self._m, &i))
        return {
            "vocab_size": i.vocab_size,
            "hidden_size": i.hidden_size,
            "intermediate_size": i.intermediate_size,
            "num_layers": i.num_layers,
            "num_heads": i.num_heads,
            "num_kv_heads": i.num_kv_heads,
            "head_dim": i.head_dim,
            "max_seq_len": i.max_seq_len,
            "rms_norm_eps": i.rms_norm_eps,
            "rope_theta": i.rope_theta,
            "tie_word_embeddings": bool(i.tie_word_embeddings),
            "bos_token_id": i.bos_token_id,
            "num_eos": i.num_eos,
            "eos_token_ids": [i.eos_token_ids[k] for k in range(i.num_eos)],
            "weight_format": _FORMAT_NAMES.get(i.weight_format, str(i.weight_format)),
            "block_size": i.block_size,
            "device": "cuda" if i.device == VT_DEVICE_CUDA else "cpu",
            "device_index": i.device_index,
            "kv_cache": _KV_CACHE_NAMES.get(i.kv_cache_dtype, str(i.kv_cache_dtype)),
            "weight_bytes": i.weight_bytes,
            "total_bytes": i.total_bytes,
            "family": i.family.decode("utf-8", "replace"),
            "features": [f for f in i.features.decode("utf-8", "replace").split(", ") if f],
            "cache_bytes_per_token": i.cache_bytes_per_token,
        }

    # ---- lifetime: a count of users (calls in flight + open sessions) ------------------

    cdef int _acquire(self) except -1:
        with self._lock:
            if self._closed or self._m == NULL:
                raise RuntimeError("model is closed")
            self._users += 1
        return 0

    cdef void _release(self):
        cdef vt_model* to_free = NULL
        with self._lock:
            self._users -= 1
            if self._closed and self._users == 0 and self._m != NULL:
                to_free = self._m
                self._m = NULL
        if to_free != NULL:
            vt_model_free(to_free)

    def close(self):
        """Free the native model now, or as soon as the calls and sessions still using it
        finish. Later calls raise RuntimeError("model is closed")."""
        cdef vt_model* to_free = NULL
        with self._lock:
            self._closed = True
            if self._users == 0 and self._m != NULL:
                to_free = self._m
                self._m = NULL
        if to_free != NULL:
            vt_model_free(to_free)

    @property
    def closed(self):
        return bool(self._closed)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def info(self):
        """Every vt_model_info field (weight_format and device as strings)."""
        return dict(self._info)

    # ---- compute -----------------------------------------------------------------------

    def logits(self, tokens):
        """float32 [n, vocab] logits of every position, in one batched pass (fresh cache)."""
        cdef int64_t vocab = self._info["vocab_size"]
        arr = _token_array(tokens, vocab)
        cdef int32_t[::1] tv = arr
        cdef int64_t n = arr.shape[0]
        if n == 0:
            raise ValueError("tokens is empty: logits needs at least one token")
        if n > self._info["max_seq_len"]:
            raise ValueError(f"tokens has {n} ids, more than the model's max_seq_len {self._info['max_seq_len']}")
        out = np.empty((n, vocab), dtype=np.float32)
        cdef float[:, ::1] ov = out
        cdef vt_session* s = NULL
        cdef vt_status st
        self._acquire()
        try:
            with nogil:
                st = vt_session_new(self._m, n, &s)
                if st == VT_OK:
                    st = vt_session_prefill(s, &tv[0], n, NULL, NULL, &ov[0, 0], VT_LOGITS_ALL)
                vt_session_free(s)
            _check(st)
        finally:
            self._release()
        return out

    def generate(self, prompt_tokens, max_new_tokens=50, temperature=0.0, top_k=0, top_p=1.0, seed=42,
                 stop_on_eos=True, **penalties):
        """One vt_generate call -> (generated ids, stats dict)."""
        arr = _token_array(prompt_tokens, self._info["vocab_size"])
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) \
                or not (0 <= max_new_tokens <= _INT32_MAX):
            raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
        cdef vt_generate_options g = vt_generate_default_options()
        # Generation stops at the context limit: a buffer for what can come, not for
        # max_new_tokens (2**31 - 1 would be 8 GiB).
        cdef int64_t cap = max(1, min(int(max_new_tokens), int(self._info["max_seq_len"]) - len(arr) + 1))
        g.max_new_tokens = max_new_tokens
        g.stop_on_eos = 1 if stop_on_eos else 0
        g.sampling = _sampling(temperature, top_k, top_p, seed, penalties)
        cdef int64_t n = arr.shape[0]
        cdef int32_t[::1] tv = arr
        out = np.empty(cap, dtype=np.int32)
        cdef int32_t[::1] ov = out
        cdef int64_t n_out = 0
        cdef vt_generate_stats stats
        stats.struct_size = sizeof(vt_generate_stats)
        cdef vt_status st
        cdef const int32_t* pp = &tv[0] if n > 0 else NULL
        self._acquire()
        try:
            with nogil:
                st = vt_generate(self._m, pp, n, &g, &ov[0], cap, &n_out, &stats)
            _check(st)
        finally:
            self._release()
        return out[:n_out].tolist(), {
            "prompt_tokens": stats.prompt_tokens,
            "generated_tokens": stats.generated_tokens,
            "prefill_ms": stats.prefill_ms,
            "decode_ms": stats.decode_ms,
            "finish_reason": "eos" if stats.finish_reason == 1 else "length",
        }

    def new_session(self, max_tokens=0):
        """A Session (KV cache) for up to max_tokens positions (0 = max_seq_len)."""
        return Session(self, max_tokens)


@cython.no_gc_clear
cdef class Session:
    """One sequence's KV cache on a Model. Not for concurrent use from several threads."""

    cdef vt_session* _s
    cdef Model _model
    cdef bint _busy
    cdef int64_t _vocab

    def __cinit__(self, Model model not None, max_tokens=0):
        self._s = NULL
        self._busy = False
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)) or max_tokens < 0:
            raise ValueError(f"max_tokens must be an integer >= 0 (0 = max_seq_len), got {max_tokens!r}")
        if max_tokens > model._info["max_seq_len"]:
            raise ValueError(f"max_tokens {max_tokens} exceeds the model's max_seq_len {model._info['max_seq_len']}")
        model._acquire()
        cdef vt_session* s = NULL
        cdef int64_t mt = max_tokens
        cdef vt_status st = vt_session_new(model._m, mt, &s)
        if st != VT_OK:
            model._release()
            _check(st)
        self._s = s
        self._model = model
        self._vocab = model._info["vocab_size"]

    def __dealloc__(self):
        if self._s != NULL:
            vt_session_free(self._s)
            self._s = NULL
            if self._model is not None:
                self._model._release()

    def close(self):
        """Free the KV cache now."""
        if self._busy:
            raise RuntimeError("session is in use by another thread")
        if self._s != NULL:
            vt_session_free(self._s)
            self._s = NULL
            self._model._release()

    @property
    def closed(self):
        return self._s == NULL

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    cdef int _enter(self) except -1:
        if self._s == NULL:
            raise RuntimeError("session is closed")
        if self._model._closed:
            raise RuntimeError("model is closed")
        if self._busy:
            raise RuntimeError("session is in use by another thread")
        self._busy = True
        return 0

    @property
    def length(self):
        """Positions currently cached."""
        return vt_session_length(self._s) if self._s != NULL else 0

    def reset(self):
        """Forget all cached positions (keeps the memory)."""
        self._enter()
        try:
            _check(vt_session_reset(self._s))
        finally:
            self._busy = False

    def copy_prefix(self, Session src not None, n):
        """Hold the first n cached positions of src (same model) instead of this session's own:
        as if reset and prefilled with them (sampling step 0), without running the model."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise ValueError(f"n must be an integer, got {n!r}")
        if src is self:
            raise ValueError("copy_prefix: src is this session")
        cdef int64_t nn = n
        cdef vt_status st
        self._enter()
        try:
            src._enter()
        except BaseException:
            self._busy = False
            raise
        with nogil:
            st = vt_session_copy_prefix(self._s, src._s, nn)
        self._busy = False
        src._busy = False
        _check(st)

    def prefill(self, tokens, temperature=0.0, top_k=0, top_p=1.0, seed=42, logits="none", choose=True,
                **penalties):
        """Append tokens in one batched pass -> (next token, logits or None). logits: "none",
        "last" ([vocab]) or "all" ([n, vocab]) -- raw logits. ``penalties``: min_p,
        repetition_penalty, frequency_penalty, presence_penalty (vt_sample_options).
        ``choose=False``: no next token is chosen (-1; the sampling step does not advance) --
        a chunk of a prompt whose last chunk comes later."""
        if logits not in _LOGITS_MODES:
            raise ValueError(f"logits must be 'none', 'last' or 'all', got {logits!r}")
        cdef vt_logits_mode mode = _LOGITS_MODES[logits]
        arr = _token_array(tokens, self._vocab)
        cdef int64_t n = arr.shape[0]
        cdef vt_sample_options so = _sampling(temperature, top_k, top_p, seed, penalties)
        cdef int32_t[::1] tv = arr
        cdef const int32_t* tp = &tv[0] if n > 0 else NULL
        out = None
        cdef float* lp = NULL
        if mode == VT_LOGITS_ALL and n > 0:
            out = _logits_out((n, self._vocab), &lp)
        elif mode == VT_LOGITS_LAST:
            out = _logits_out((self._vocab,), &lp)
        cdef int32_t nxt = -1
        cdef int32_t* nxt_p = &nxt if choose else NULL
        cdef vt_status st
        self._enter()  # nothing between here and _busy = False can raise: a C call, no Python
        with nogil:
            st = vt_session_prefill(self._s, tp, n, &so, nxt_p, lp, mode)
        self._busy = False
        _check(st)
        return int(nxt), out

    def decode(self, token, temperature=0.0, top_k=0, top_p=1.0, seed=42, want_logits=False, **penalties):
        """Append one token and choose the next -> (next token, raw logits [vocab] or None)."""
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)):
            raise ValueError(f"token must be an integer token id, got {token!r}")
        if not (0 <= token < self._vocab):
            raise ValueError(f"token id {token} is outside the vocabulary [0, {self._vocab})")
        cdef int32_t t = token
        cdef vt_sample_options so = _sampling(temperature, top_k, top_p, seed, penalties)
        out = None
        cdef float* lp = NULL
        if want_logits:
            out = _logits_out((self._vocab,), &lp)
        cdef int32_t nxt = -1
        cdef vt_status st
        self._enter()  # nothing between here and _busy = False can raise: a C call, no Python
        with nogil:
            st = vt_session_decode(self._s, t, &so, &nxt, lp)
        self._busy = False
        _check(st)
        return int(nxt), out

    def truncate(self, n):
        """Keep the first n cached positions (0 <= n <= length), as if reset and prefilled
        with them (sampling step 0, penalty history = those tokens as inputs)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise ValueError(f"n must be an integer, got {n!r}")
        cdef int64_t nn = n
        self._enter()
        try:
            _check(vt_session_truncate(self._s, nn))
        finally:
            self._busy = False

    def verify(self, tokens, temperature=0.0, top_k=0, top_p=1.0, seed=42, **penalties):
        """Speculative decoding's step (vt_session_verify): tokens[0] is the input a decode
        call would take, tokens[1:] a draft of what follows. One batched pass; returns the
        tokens the model chooses, position by position, up to and including the first that
        differs from the draft (a list of 1 .. len(tokens) ids). The session keeps the inputs
        those choices confirmed."""
        arr = _token_array(tokens, self._vocab)
        cdef int64_t n = arr.shape[0]
        if n < 1 or n > VT_MAX_VERIFY:
            raise ValueError(f"verify takes 1 to {VT_MAX_VERIFY} tokens, got {n}")
        cdef vt_sample_options so = _sampling(temperature, top_k, top_p, seed, penalties)
        cdef int32_t[::1] tv = arr
        out = np.empty(n, dtype=np.int32)
        cdef int32_t[::1] ov = out
        cdef int64_t n_out = 0
        cdef vt_status st
        self._enter()  # nothing between here and _busy = False can raise: a C call, no Python
        with nogil:
            st = vt_session_verify(self._s, &tv[0], n, &so, &ov[0], &n_out)
        self._busy = False
        _check(st)
        return out[:n_out].tolist()


def decode_batch(sessions, tokens, sampling, want_logits=False):
    """One vt_session_decode_batch call: sessions[i] takes tokens[i] and chooses its next
    token with sampling[i] (a dict of Session.decode's keyword options) -> (next tokens as a
    list, raw logits [n, vocab] or None). All sessions on one model, distinct, n <= MAX_BATCH."""
    cdef Py_ssize_t n = len(sessions)
    if n < 1 or n > VT_MAX_BATCH:
        raise ValueError(f"a batch holds 1 to {VT_MAX_BATCH} sessions, got {n}")
    if len(tokens) != n or len(sampling) != n:
        raise ValueError(f"sessions, tokens and sampling must have the same length "
                         f"({n}, {len(tokens)}, {len(sampling)})")
    sess = list(sessions)
    for i, obj in enumerate(sess):
        if not isinstance(obj, Session):
            raise TypeError(f"sessions[{i}] is not a Session")
    if len({id(obj) for obj in sess}) != n:
        raise ValueError("a session appears more than once in the batch")
    cdef Session first = sess[0]
    cdef int64_t vocab = first._vocab
    arr = _token_array(tokens, vocab)
    cdef int32_t[::1] tv = arr
    cdef vt_sample_options* so = <vt_sample_options*>PyMem_Malloc(n * sizeof(vt_sample_options))
    cdef vt_session** ptrs = <vt_session**>PyMem_Malloc(n * sizeof(vt_session*))
    if so == NULL or ptrs == NULL:
        PyMem_Free(so)
        PyMem_Free(ptrs)
        raise MemoryError()
    out_tokens = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] ov = out_tokens
    cdef float* lp = NULL
    logits = _logits_out((n, vocab), &lp) if want_logits else None
    cdef Session x
    cdef Py_ssize_t k, entered = 0
    cdef vt_status st
    try:
        for k in range(n):
            kw = dict(sampling[k])
            so[k] = _sampling(kw.pop("temperature", 0.0), kw.pop("top_k", 0), kw.pop("top_p", 1.0),
                              kw.pop("seed", 42), kw)
        for k in range(n):
            x = sess[k]
            x._enter()
            entered += 1
            ptrs[k] = x._s
        with nogil:
            st = vt_session_decode_batch(ptrs, n, &tv[0], so, &ov[0], lp)
        _check(st)
    finally:
        for k in range(entered):
            x = sess[k]
            x._busy = False
        PyMem_Free(so)
        PyMem_Free(ptrs)
    return out_tokens.tolist(), logits
