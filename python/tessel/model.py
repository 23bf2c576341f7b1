"""tessel.Model: a loaded GGUF model (tessel_model), its tokenizer and chat template."""
from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from typing import Callable, Iterable, Optional, Sequence, Union

from . import _lib
from ._core import Handle, c_int, c_text, check, invalid, lib, text_out

Text = Union[str, bytes, bytearray]


class Model(Handle):
    """A GGUF model loaded for `device` ("cpu", "npu", "npu1", ...) or `devices` (a list in
    priority order; the CPU is always added last). `vocab_only` loads the tokenizer and
    hyper-parameters only (no Context then). `progress(fraction)` is called as weights load,
    fraction 0..1; returning False cancels (Error "cancelled"); an exception it raises cancels the
    load and is raised again. Raises tessel.Error (e.g. status "io" naming a missing file);
    TypeError unless path is a str or os.PathLike and devices a list of device names."""

    _free = "tessel_model_free"
    _what = "model"

    def __init__(self, path: Union[str, os.PathLike], device: str = "cpu", *, devices: Optional[Sequence[str]] = None,
                 vocab_only: bool = False, progress: Optional[Callable[[float], bool]] = None):
        l = lib()
        try:
            file = os.fsencode(path)
        except TypeError:
            raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}") from None
        if devices is None:
            names = [c_text(device, "device")]
        elif isinstance(devices, (list, tuple)):
            names = [c_text(d, f"devices[{i}]") for i, d in enumerate(devices)]
        else:
            raise TypeError(f"devices must be a list of device names, not {type(devices).__name__}")
        p = l.tessel_model_default_params()
        arr = (ctypes.c_char_p * max(1, len(names)))(*names)
        p.devices = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        p.n_devices = len(names)
        p.vocab_only = vocab_only
        raised = []
        if progress is not None:
            def on_progress(fraction, _user):
                try:
                    return bool(progress(fraction))
                except BaseException as e:  # re-raised after the load stops
                    raised.append(e)
                    return False
            p.progress = _lib.PROGRESS(on_progress)
        handle = ctypes.c_void_p()
        status = l.tessel_model_load(file, ctypes.byref(p), ctypes.byref(handle))
        if raised:
            raise raised[0]
        check(status)
        self._h = handle
        info = _lib.ModelInfo()
        check(l.tessel_model_get_info(self._h, ctypes.byref(info)))
        self.info = {name: (getattr(info, name).decode() if isinstance(getattr(info, name), bytes) else getattr(info, name))
                     for name, _ in _lib.ModelInfo._fields_}
        self.n_vocab = int(info.n_vocab)

    def close(self) -> None:
        """Frees the model now; later calls do nothing. Contexts made from it keep decoding (the
        library keeps what they need), but the model's own methods (tokenize, detokenize, is_eog,
        chat templates, a new Context, generate given this model or a context of it) then raise
        tessel.Error "invalid-argument" ("the model was closed")."""
        super().close()

    def tokenize(self, text: Text, add_special: bool = True, parse_special: bool = False) -> list[int]:
        """Token ids of `text` (str as UTF-8, or bytes/bytearray; anything else: TypeError).
        add_special: BOS/EOS as the model says; parse_special: special-token text such as
        "<|im_start|>" becomes that token."""
        data = c_text(text, "text")
        h = self._live()
        n = ctypes.c_size_t(0)
        cap = len(data) + 8
        while True:
            out = (ctypes.c_int32 * cap)()
            status = lib().tessel_tokenize(h, data, len(data), add_special, parse_special, out, cap, ctypes.byref(n))
            if status != _lib.TESSEL_ERROR_BUFFER_TOO_SMALL:
                check(status)
                return list(out[: n.value])
            cap = n.value

    def detokenize_bytes(self, tokens: Iterable[int], special: bool = False) -> bytes:
        """The bytes of `tokens` concatenated (control tokens as text only when `special`)."""
        ids = [c_int(t, f"tokens[{i}]") for i, t in enumerate(tokens)]
        h = self._live()
        arr = (ctypes.c_int32 * max(1, len(ids)))(*ids)
        return text_out(lambda buf, size, n: lib().tessel_detokenize(h, arr, len(ids), special, buf, size, n))

    def detokenize(self, tokens: Iterable[int], special: bool = False) -> str:
        """detokenize_bytes() decoded as UTF-8 (invalid bytes become U+FFFD)."""
        return self.detokenize_bytes(tokens, special).decode("utf-8", "replace")

    def is_eog(self, token: int) -> bool:
        """True for an end-of-generation token (eos, eot, <|im_end|>, ...)."""
        token = c_int(token, "token")
        return bool(lib().tessel_token_is_eog(self._live(), token))

    @property
    def chat_template(self) -> str:
        """The model's tokenizer.chat_template ("" when it has none)."""
        return lib().tessel_model_chat_template(self._live()).decode("utf-8", "replace")

    def apply_chat_template(self, messages: Sequence[dict], add_generation_prompt: bool = True,
                            template: Optional[str] = None) -> str:
        """Renders [{"role": ..., "content": ...}, ...] as this model's chat prompt: its own Jinja
        template with its BOS/EOS texts, a leading BOS text dropped when the tokenizer adds BOS (or
        with `template`: a Jinja template text or one of "chatml", "llama3", "gemma", "phi3")."""
        if template is not None:
            return apply_chat_template(template, messages, add_generation_prompt)
        msgs, _keep = _chat_messages(messages)  # _keep: the bytes msgs points into
        model = self._live()
        out = text_out(lambda buf, size, n: lib().tessel_model_apply_chat_template(
            model, msgs, len(messages), add_generation_prompt, buf, size, n), 1024)
        return out.decode("utf-8", "replace")


def _chat_messages(messages: Sequence[dict]):
    """The C array of messages, and the byte strings it points into (keep them alive)."""
    msgs = (_lib.ChatMessage * max(1, len(messages)))()
    keep = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise TypeError(f"messages[{i}] must be a dict with 'role' and 'content', not {type(m).__name__}")
        for key in ("role", "content"):
            if key not in m:
                raise invalid(f"messages[{i}] lacks the key {key!r}")
        role, content = c_text(m["role"], f"messages[{i}]['role']"), c_text(m["content"], f"messages[{i}]['content']")
        keep += [role, content]
        msgs[i].role, msgs[i].content = role, content
    return msgs, keep


def apply_chat_template(template: str, messages: Sequence[dict], add_generation_prompt: bool = True) -> str:
    """Renders messages with `template` (a Jinja chat template, rendered as HF transformers does,
    or a built-in name). Raises Error "unsupported" for a template tessel cannot render and that
    matches no built-in format, "invalid-argument" for a malformed template, its raise_exception,
    a role a built-in format lacks, or a message lacking "role" or "content"; TypeError for a
    message that is not a dict."""
    tmpl = c_text(template, "template")
    msgs, _keep = _chat_messages(messages)  # _keep: the bytes msgs points into
    out = text_out(lambda buf, size, n: lib().tessel_chat_apply_template(tmpl, msgs, len(messages), add_generation_prompt,
                                                                          buf, size, n), 1024)
    return out.decode("utf-8", "replace")


__all__ = ["Model", "apply_chat_template"]
