"""The loaded library, tessel.Error, and the calling conventions of include/tessel.h."""
from __future__ import annotations

import ctypes
import threading

from . import _lib

_lock = threading.Lock()
_loaded = None


def lib() -> ctypes.CDLL:
    """libtessel, loaded on first use (tessel/_lib.py says where it is looked for)."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _lib.load()
        return _loaded


class Error(Exception):
    """A tessel call failed. `status` is the status name ("io", "invalid-argument", "bad-model",
    "gguf-truncated", ...: tessel_status_name), `code` its number, `message` tessel's one-line
    message (naming the file, tensor, key or argument)."""

    def __init__(self, status: str, code: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.code = code
        self.message = message


def check(status: int) -> None:
    """Raises Error for a status other than TESSEL_OK."""
    if status != _lib.TESSEL_OK:
        raise error(status)


def error(status: int) -> Error:
    l = lib()
    return Error(l.tessel_status_name(status).decode(), status, l.tessel_last_error().decode("utf-8", "replace"))


def text_out(call, initial: int = 256) -> bytes:
    """Bytes from a C function following the buffer convention (buf, size, *n_needed): `call`
    takes (buf, size, n_needed) and returns a status; retried once with the size it asks for."""
    n = ctypes.c_size_t(0)
    buf = ctypes.create_string_buffer(initial)
    status = call(buf, initial, ctypes.byref(n))
    if status == _lib.TESSEL_ERROR_BUFFER_TOO_SMALL:
        buf = ctypes.create_string_buffer(n.value + 1)
        status = call(buf, n.value + 1, ctypes.byref(n))
    check(status)
    return buf.raw[: n.value]


class Handle:
    """Owns one tessel handle (self._h) and frees it with the C function named by `_free`
    (e.g. "tessel_model_free") on close(), at the end of a `with` block, or when collected.
    A handle that failed to be made (self._h unset or NULL) frees nothing."""

    _free = ""
    _h = None

    def close(self) -> None:
        """Frees the handle now; later calls do nothing."""
        if self._h:
            getattr(lib(), self._free)(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
