"""Opening the files a model folder holds without trusting them to be files.

A model folder comes from elsewhere: ``tokenizer_config.json`` may be a FIFO (``open`` blocks
forever), ``/dev/zero`` through a symlink (``read()`` never ends), or a 50 GB file where a few
kilobytes belong. Every file pyvt reads in Python goes through :func:`open_regular`: opened
non-blocking, checked to be a regular file (after following links, on the descriptor itself:
no race between check and read), and bounded in size; the error is one line naming the file.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

__all__ = ["MiB", "check_path", "open_regular", "read_bytes", "read_json", "read_text"]

MiB = 1 << 20

#: Bounds on what pyvt reads (real files are far smaller: a tokenizer.json of a 256k
#: vocabulary is ~35 MB, a tokenizer_config.json ~3 MB, a chat template ~20 KB).
TOKENIZER_LIMIT = 256 * MiB   # tokenizer.json, tokenizer.model
CONFIG_LIMIT = 64 * MiB       # tokenizer_config.json, markers, saved conversations
TEMPLATE_LIMIT = 4 * MiB      # chat_template.jinja, --chat-template FILE


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_path(path: Any, what: str) -> str:
    """``os.fspath(path)``, refusing an embedded NUL (C would read a shorter path)."""
    p = os.fspath(path)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if "\0" in p:
        raise ValueError(f"{what}: the path {p.split(chr(0))[0]!r}... contains a NUL character")
    return p


def open_regular(path: Any, what: str, limit: int | None = None) -> int:
    """A read-only descriptor of `path` once it is known to be a regular file (of at most
    `limit` bytes). FileNotFoundError / PermissionError as ``open`` raises them; ValueError
    for anything that is not a regular file or is too big. The caller closes it."""
    p = check_path(path, what)
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{p}: the {what} is {_kind(st.st_mode)}, not a regular file")
        if limit is not None and st.st_size > limit:
            raise ValueError(f"{p}: the {what} is {st.st_size} bytes, more than the {limit} pyvt reads")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: Any, what: str, limit: int) -> bytes:
    """The whole file, if it is a regular file of at most `limit` bytes (also if it grows
    while read)."""
    fd = open_regular(path, what, limit)
    try:
        chunks, total = [], 0
        while True:
            b = os.read(fd, min(4 * MiB, limit + 1 - total))
            if not b:
                break
            chunks.append(b)
            total += len(b)
            if total > limit:
                raise ValueError(f"{os.fspath(path)}: the {what} grew past {limit} bytes while it was read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Any, what: str, limit: int) -> str:
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{os.fspath(path)}: the {what} is not UTF-8 text (byte {e.start})") from None


def read_json(path: Any, what: str, limit: int) -> Any:
    text = read_text(path, what, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{os.fspath(path)}: the {what} is not valid JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"{os.fspath(path)}: the {what} is nested too deeply") from None
