"""Exceptions of pyvt beyond the built-in ones.

libvt's statuses map to built-in exceptions (ValueError for bad arguments and unsupported
formats, MemoryError, FileNotFoundError, OSError, KeyboardInterrupt for a cancelled call),
except one: a backend that cannot be used.
"""

from __future__ import annotations


class BackendUnavailable(RuntimeError):
    """A backend was asked for and cannot be used (VT_STATUS_BACKEND_UNAVAILABLE): the message
    names the reason, e.g. "libvt was built without CUDA", "no NVIDIA driver: libcuda.so.1 was
    not found", "device 3 does not exist (1 CUDA device)". A RuntimeError, so code catching
    that keeps working."""


__all__ = ["BackendUnavailable"]
