"""tessel.Context (a KV cache and compute buffers on a model: decode, logits, cache edits) and
tessel.Sampler (the sampler chain of tessel/sampling.hpp)."""
from __future__ import annotations

import array
import ctypes
from typing import Optional, Sequence

from . import _lib
from ._core import Handle, c_int, c_text, check, invalid, lib
from .model import Model


class Context(Handle):
    """A context on `model`. n_ctx: KV cells (0: the model's training context, at most 4096);
    n_threads: CPU threads (0: physical cores, the big ones on big/little CPUs); flash_attn: "auto", "on" or "off"; type_k/type_v:
    "f16", "f32" or "q8_0"; kv_unified=False with n_seq_max sequences splits the cache so each sequence's logits do
    not depend on the others decoded with it (n_ctx_seq: the cells of one). Raises tessel.Error ("invalid-argument", "out-of-memory"). It keeps
    decoding after model.close(); its methods raise tessel.Error "the context was closed" after
    its own close()."""

    _free = "tessel_context_free"
    _what = "context"

    def __init__(self, model: Model, n_ctx: int = 0, n_threads: int = 0, n_ubatch: int = 512,
                 flash_attn: str = "auto", type_k: str = "f16", type_v: str = "f16", kv_unified: bool = True,
                 n_seq_max: int = 1):
        l = lib()
        if not isinstance(model, Model):
            raise TypeError(f"model must be a tessel.Model, not {type(model).__name__}")
        if not isinstance(flash_attn, str):
            raise TypeError(f"flash_attn must be a str, not {type(flash_attn).__name__}")
        if flash_attn not in _lib.FLASH_ATTN:
            raise invalid(f"flash_attn {flash_attn!r}: expected one of {sorted(_lib.FLASH_ATTN)}")
        p = l.tessel_context_default_params()
        p.n_ctx, p.n_ubatch = c_int(n_ctx, "n_ctx", "int64_t"), c_int(n_ubatch, "n_ubatch", "int64_t")
        p.n_threads = c_int(n_threads, "n_threads")
        p.flash_attn = _lib.FLASH_ATTN[flash_attn]
        p.type_k, p.type_v = c_text(type_k, "type_k"), c_text(type_v, "type_v")
        if not isinstance(kv_unified, bool):
            raise TypeError(f"kv_unified must be a bool, not {type(kv_unified).__name__}")
        p.kv_unified, p.n_seq_max = kv_unified, c_int(n_seq_max, "n_seq_max")
        handle = ctypes.c_void_p()
        check(l.tessel_context_new(model._live(), ctypes.byref(p), ctypes.byref(handle)))
        self._h = handle
        self.model = model
        self.n_ctx = int(l.tessel_context_n_ctx(self._h))
        self.n_ctx_seq = int(l.tessel_context_n_ctx_seq(self._h))

    def decode(self, tokens: Sequence[int], pos: int = 0, seq: int = 0, all_logits: bool = False) -> None:
        """Decodes `tokens` as sequence `seq` at positions pos, pos+1, ...; keeps the logits of
        the last token (every token's with all_logits). Raises tessel.Error: "invalid-argument"
        naming a bad entry, "context-full"."""
        h = self._live()
        n = len(tokens)
        pos, seq = c_int(pos, "pos"), c_int(seq, "seq")
        c_int(pos + max(0, n - 1), "pos + len(tokens) - 1")  # the last token's position
        batch = (_lib.BatchToken * max(1, n))()
        for i, t in enumerate(tokens):
            batch[i].token, batch[i].pos, batch[i].seq = c_int(t, f"tokens[{i}]"), pos + i, seq
            batch[i].logits = all_logits or i == n - 1
        check(lib().tessel_decode(h, batch, n))

    @property
    def n_outputs(self) -> int:
        """Logit vectors the last decode kept."""
        return int(lib().tessel_n_outputs(self._live()))

    def logits(self, i: int = -1) -> array.array:
        """A copy of the i-th kept logit vector of the last decode (n_vocab floats, 'f' array);
        negative i counts from the end. Raises tessel.Error ("invalid-argument") past the end."""
        ptr = self._logits_ptr(i)
        out = array.array("f", bytes(ctypes.sizeof(ctypes.c_float) * self.model.n_vocab))
        ctypes.memmove(out.buffer_info()[0], ptr, len(out) * out.itemsize)
        return out

    def _logits_ptr(self, i: int):
        n = self.n_outputs
        index = c_int(i, "i", "int64_t")
        if index < 0:
            index += n
        if index < 0:
            raise invalid(f"logits {i}: the last decode kept {n}")
        ptr = ctypes.POINTER(ctypes.c_float)()
        check(lib().tessel_get_logits(self._h, c_int(index, "i", "size_t"), ctypes.byref(ptr)))
        return ptr

    def kv_seq_rm(self, seq: int, p0: int, p1: int = -1) -> None:
        """Removes positions [p0, p1) of sequence seq (p1 < 0: to the end; seq < 0: every sequence)."""
        args = [c_int(v, name) for v, name in ((seq, "seq"), (p0, "p0"), (p1, "p1"))]
        check(lib().tessel_kv_seq_rm(self._live(), *args))

    def kv_seq_cp(self, src: int, dst: int, p0: int = 0, p1: int = -1) -> None:
        """Makes sequence dst share positions [p0, p1) of src."""
        args = [c_int(v, name) for v, name in ((src, "src"), (dst, "dst"), (p0, "p0"), (p1, "p1"))]
        check(lib().tessel_kv_seq_cp(self._live(), *args))

    def kv_seq_pos_max(self, seq: int = 0) -> int:
        """The largest position of seq in the cache, or -1."""
        seq = c_int(seq, "seq")
        pos = ctypes.c_int32()
        check(lib().tessel_kv_seq_pos_max(self._live(), seq, ctypes.byref(pos)))
        return pos.value

    def kv_clear(self) -> None:
        """Empties the cache."""
        check(lib().tessel_kv_clear(self._live()))


class Sampler(Handle):
    """Picks tokens from logits: penalties, then greedy (temp <= 0) or top-k, top-p, min-p,
    temperature and a seeded draw (seed None: random; otherwise 0..2**32-2, as 2**32-1 is the C
    API's random-seed marker). Raises tessel.Error naming a bad field or an integer out of its C
    type's range."""

    _free = "tessel_sampler_free"
    _what = "sampler"

    def __init__(self, n_vocab: int, temp: float = 0.8, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
                 repeat_penalty: float = 1.0, repeat_last_n: int = 64, presence_penalty: float = 0.0,
                 frequency_penalty: float = 0.0, seed: Optional[int] = None):
        l = lib()
        p = l.tessel_sampler_default_params()
        p.temp, p.top_k, p.top_p, p.min_p = temp, c_int(top_k, "top_k"), top_p, min_p
        p.repeat_penalty, p.repeat_last_n = repeat_penalty, c_int(repeat_last_n, "repeat_last_n")
        p.presence_penalty, p.frequency_penalty = presence_penalty, frequency_penalty
        p.seed = _lib.RANDOM_SEED if seed is None else c_int(seed, "seed", "uint32_t", 0, _lib.RANDOM_SEED - 1)
        handle = ctypes.c_void_p()
        check(l.tessel_sampler_new(ctypes.byref(p), c_int(n_vocab, "n_vocab"), ctypes.byref(handle)))
        self._h = handle

    def sample(self, ctx: Context, i: int = -1) -> int:
        """The token picked from ctx's i-th kept logits of its last decode (not recorded: accept())."""
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a tessel.Context, not {type(ctx).__name__}")
        h = self._live()
        token = ctypes.c_int32()
        check(lib().tessel_sampler_sample(h, ctx._logits_ptr(i), ctypes.byref(token)))
        return token.value

    def accept(self, token: int) -> None:
        """Records `token` in the penalty history."""
        token = c_int(token, "token")
        check(lib().tessel_sampler_accept(self._live(), token))

    @property
    def seed(self) -> int:
        """The seed in use (the drawn one when seed was None)."""
        return int(lib().tessel_sampler_seed(self._live()))


__all__ = ["Context", "Sampler"]
