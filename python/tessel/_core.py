"""The loaded library, tessel.Error, and the calling conventions of include/tessel.h."""
from __future__ import annotations

import ctypes
import operator
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


def invalid(message: str) -> Error:
    """An Error "invalid-argument" raised by the Python side (a value the C API would misread)."""
    code = _lib.TESSEL_ERROR_INVALID_ARGUMENT
    return Error(lib().tessel_status_name(code).decode(), code, message)


_SIZE_BITS = 8 * ctypes.sizeof(ctypes.c_size_t)
C_RANGES = {"int32_t": (-2**31, 2**31 - 1), "uint32_t": (0, 2**32 - 1), "int64_t": (-2**63, 2**63 - 1),
            "size_t": (0, 2**_SIZE_BITS - 1)}


def c_int(value, name: str, ctype: str = "int32_t", lo: int | None = None, hi: int | None = None) -> int:
    """`value` as an integer argument `name` of C type `ctype` (C_RANGES), optionally narrowed
    to lo..hi. TypeError for a bool or a non-integer; Error "invalid-argument" naming the
    argument and the allowed range when it is outside (ctypes would silently wrap it)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    c_lo, c_hi = C_RANGES[ctype]
    lo, hi = c_lo if lo is None else lo, c_hi if hi is None else hi
    if not lo <= value <= hi:
        raise invalid(f"{name} = {value}: out of range {lo}..{hi} ({ctype})")
    return value


def c_text(value, name: str) -> bytes:
    """A text argument as bytes: str (as UTF-8), bytes or bytearray; TypeError for anything else
    (bytes(5) would be five NUL bytes, bytes([1, 2]) the bytes 1 and 2)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise TypeError(f"{name} must be a str, bytes or bytearray, not {type(value).__name__}")


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
    _what = "handle"  # in the message of a call on a closed handle
    _h = None

    def _live(self):
        """The handle; Error "invalid-argument" ("the model was closed", ...) after close()."""
        if not self._h:
            raise invalid(f"the {self._what} was closed")
        return self._h

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
