# One place that turns a vt_status into the right Python exception, carrying libvt's message.
# Included (not cimported) by each extension module.

from pyvt.errors import BackendUnavailable

cdef int _check(vt_status status) except -1:
    if status == VT_OK:
        return 0
    msg = vt_last_error().decode("utf-8", "replace")
    if status == VT_STATUS_INVALID_ARGUMENT or status == VT_STATUS_FORMAT_ERROR:
        raise ValueError(msg)
    if status == VT_STATUS_FILE_NOT_FOUND:
        raise FileNotFoundError(msg)
    if status == VT_STATUS_IO_ERROR:
        raise OSError(msg)
    if status == VT_STATUS_UNSUPPORTED:
        raise ValueError(msg)
    if status == VT_STATUS_OUT_OF_MEMORY:
        raise MemoryError(msg)
    if status == VT_STATUS_BACKEND_UNAVAILABLE:
        raise BackendUnavailable(msg)
    if status == VT_STATUS_CANCELLED:
        raise KeyboardInterrupt(msg)
    raise RuntimeError("libvt internal error: " + msg)
