"""tessel: LLM inference on edge hardware, from Python (ctypes over libtessel.so).

    import tessel
    model = tessel.Model("model.gguf")                 # device="npu" for the NPU
    ids = model.tokenize("Hello")
    ctx = tessel.Context(model, n_ctx=512)
    ctx.decode(ids)
    logits = ctx.logits()                              # n_vocab floats of the last token
    for piece in tessel.generate(model, "Once upon a time", n_predict=32, temp=0):
        print(piece, end="", flush=True)

Failures raise tessel.Error (its `status` names the kind, its message the file or argument),
including integers outside their C type's range; wrong Python types raise TypeError.
The library is found as tessel/_lib.py says (TESSEL_LIBRARY first). docs/api.md has the rest.
"""
from __future__ import annotations

import ctypes
from typing import Callable, Optional

from . import _lib
from ._core import Error, lib
from ._lib import LibraryNotFound
from .context import Context, Sampler
from .generate import generate
from .model import Model, apply_chat_template


def version() -> str:
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return lib().tessel_version().decode()


def library_path() -> str:
    """Where the loaded libtessel came from."""
    return lib().path


def devices() -> list[dict]:
    """The registered devices, CPU first: name, description, kind ("cpu"/"accel"), memory bytes."""
    out = []
    for i in range(lib().tessel_device_count()):
        d = _lib.DeviceInfo()
        if lib().tessel_device_get(i, ctypes.byref(d)) == _lib.TESSEL_OK:
            out.append({"name": d.name.decode(), "description": d.description.decode("utf-8", "replace"),
                        "kind": "cpu" if d.kind == 0 else "accel", "memory_free": d.memory_free,
                        "memory_total": d.memory_total})
    return out


_log_callback = None  # keeps the ctypes callback alive while the library holds it


def set_log_callback(callback: Optional[Callable[[str, str], None]]) -> None:
    """Sends tessel's diagnostic messages to callback(level, text) (level: "debug", "info",
    "warn", "error"); None restores the default (stderr). The callback must not raise or call
    tessel."""
    global _log_callback
    levels = ("debug", "info", "warn", "error")
    new = None if callback is None else _lib.LOG(lambda level, text, _user: callback(levels[level], text.decode("utf-8", "replace")))
    lib().tessel_set_log_callback(new if new is not None else _lib.LOG(), None)
    _log_callback = new  # the old one is released only after the library stopped using it


__all__ = ["Model", "Context", "Sampler", "Error", "LibraryNotFound", "generate", "apply_chat_template", "version",
           "devices", "library_path", "set_log_callback"]
