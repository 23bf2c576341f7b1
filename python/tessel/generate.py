"""tessel.generate: a prompt's continuation as a stream of text pieces."""
from __future__ import annotations

import ctypes
from typing import Iterator, Optional, Sequence, Union

from ._core import Handle, c_int, check, invalid, lib, text_out
from .context import Context, Sampler
from .model import Model


class _Detokenizer(Handle):
    """tessel_detokenizer: token -> text that never cuts a UTF-8 character in two."""

    _free = "tessel_detokenizer_free"
    _what = "detokenizer"

    def __init__(self, model: Model):
        self._h = ctypes.c_void_p()
        check(lib().tessel_detokenizer_new(model._live(), False, ctypes.byref(self._h)))

    def push(self, token: int) -> bytes:
        first = [True]

        def call(buf, size, n):  # the retry after a small buffer fetches the pending text (token -1)
            t = token if first[0] else -1
            first[0] = False
            return lib().tessel_detokenizer_push(self._h, t, buf, size, n)

        return text_out(call)

    def flush(self) -> bytes:
        return text_out(lambda buf, size, n: lib().tessel_detokenizer_flush(self._h, buf, size, n))



def generate(model_or_ctx: Union[Model, Context], prompt: Union[str, bytes, bytearray, Sequence[int]], n_predict: int = -1, *,
             temp: float = 0.8, seed: Optional[int] = None, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
             repeat_penalty: float = 1.0, repeat_last_n: int = 64, n_ctx: int = 0, n_threads: int = 0,
             add_special: bool = True, parse_special: bool = False) -> Iterator[str]:
    """Yields the continuation of `prompt` (text, tokenized with add_special/parse_special, or
    token ids) as text pieces, each ending on a whole UTF-8 character, as `tessel run` prints
    them: the prompt is decoded, then tokens are sampled (temp <= 0: greedy; seed None: random)
    until an end-of-generation token (not shown), n_predict tokens (< 0: no limit) or the end of
    the context. Given a Model, it makes a Context(model, n_ctx, n_threads); given a Context, it
    extends sequence 0 after what that cache holds (the model must still be open: it tokenizes
    and detokenizes). seed: None (random) or 0..2**32-2 (2**32-1 is the C API's random-seed
    marker). The arguments are checked when generate() is called: TypeError for a wrong type,
    tessel.Error "invalid-argument" for a bad value (e.g. "the prompt is empty", a closed model);
    later tessel.Error such as "context-full" when the prompt does not fit."""
    if isinstance(model_or_ctx, Context):
        ctx = model_or_ctx
    elif isinstance(model_or_ctx, Model):
        ctx = Context(model_or_ctx, n_ctx=n_ctx, n_threads=n_threads)
    else:
        raise TypeError(f"model_or_ctx must be a tessel.Model or tessel.Context, not {type(model_or_ctx).__name__}")
    ctx._live()
    model = ctx.model
    n_predict = c_int(n_predict, "n_predict", "int64_t")
    if isinstance(prompt, (str, bytes, bytearray)):
        tokens = model.tokenize(prompt, add_special, parse_special) if prompt else []
    elif isinstance(prompt, Sequence):
        tokens = [c_int(t, f"prompt[{i}]") for i, t in enumerate(prompt)]
    else:
        raise TypeError(f"prompt must be a str, bytes, bytearray or a list of token ids, not {type(prompt).__name__}")
    if not tokens:
        raise invalid("the prompt is empty")
    sampler = Sampler(model.n_vocab, temp=temp, top_k=top_k, top_p=top_p, min_p=min_p, repeat_penalty=repeat_penalty,
                      repeat_last_n=repeat_last_n, seed=seed)
    detok = _Detokenizer(model)
    return _stream(ctx, model, tokens, sampler, detok, n_predict)


def _stream(ctx: Context, model: Model, tokens: list, sampler: Sampler, detok: _Detokenizer,
            n_predict: int) -> Iterator[str]:
    pos = ctx.kv_seq_pos_max(0) + 1
    ctx.decode(tokens, pos=pos)
    pos += len(tokens)
    for t in tokens:
        sampler.accept(t)
    n = 0
    while n_predict < 0 or n < n_predict:
        token = sampler.sample(ctx)
        sampler.accept(token)
        if model.is_eog(token):
            break
        piece = detok.push(token)
        if piece:
            yield piece.decode("utf-8", "replace")
        n += 1
        if pos >= ctx.n_ctx:
            break
        ctx.decode([token], pos=pos)
        pos += 1
    rest = detok.flush()
    if rest:
        yield rest.decode("utf-8", "replace")


__all__ = ["generate"]
