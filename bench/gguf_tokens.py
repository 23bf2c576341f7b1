"""The end-of-generation token ids of a GGUF model, read from its metadata (standard library only).

bench/server.py bans them with logit_bias so that every stream generates its full max_tokens on any
server. EOG here = the eos / eot / eom ids plus every CONTROL token (tokenizer.ggml.token_type 3):
a superset of what an engine stops on, harmless to ban in a throughput run.
"""
from __future__ import annotations

import struct
from pathlib import Path

# GGUF value types: fixed-size scalars by struct format; 8 = string, 9 = array.
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_WANTED = ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
           "tokenizer.ggml.token_type")
_CONTROL = 3


class _Reader:
    def __init__(self, f):
        self.f = f

    def unpack(self, fmt: str):
        size = struct.calcsize(fmt)
        data = self.f.read(size)
        if len(data) != size:
            raise ValueError("truncated GGUF header")
        return struct.unpack(fmt, data)[0]

    def string(self, keep: bool = True) -> str | None:
        n = self.unpack("<Q")
        if not keep:
            self.f.seek(n, 1)
            return None
        return self.f.read(n).decode("utf-8", "replace")

    def value(self, vtype: int, keep: bool):
        """Reads one value of vtype; returns it when keep, else skips it (None)."""
        if vtype in _SCALAR:
            if keep:
                return self.unpack(_SCALAR[vtype])
            self.f.seek(struct.calcsize(_SCALAR[vtype]), 1)
            return None
        if vtype == _STRING:
            return self.string(keep)
        if vtype == _ARRAY:
            etype, n = self.unpack("<I"), self.unpack("<Q")
            if etype in _SCALAR and not keep:
                self.f.seek(n * struct.calcsize(_SCALAR[etype]), 1)
                return None
            if etype in _SCALAR:
                fmt = _SCALAR[etype]
                return list(struct.iter_unpack(fmt, self.f.read(n * struct.calcsize(fmt))))
            items = [self.value(etype, keep) for _ in range(n)]
            return items if keep else None
        raise ValueError(f"unknown GGUF value type {vtype}")


def eog_token_ids(model: Path) -> list[int]:
    """Sorted ids of the model's end-of-generation and control tokens."""
    found: dict[str, object] = {}
    with open(model, "rb") as f:
        r = _Reader(f)
        if f.read(4) != b"GGUF":
            raise ValueError(f"{model}: not a GGUF file")
        version = r.unpack("<I")
        if version < 2:
            raise ValueError(f"{model}: GGUF version {version} is not supported")
        r.unpack("<Q")  # tensor count
        n_kv = r.unpack("<Q")
        for _ in range(n_kv):
            key = r.string()
            vtype = r.unpack("<I")
            found[key] = r.value(vtype, keep=key in _WANTED)
    ids = {int(found[k]) for k in _WANTED[:3] if found.get(k) is not None}
    types = found.get("tokenizer.ggml.token_type") or []
    ids.update(i for i, (t,) in enumerate(types) if t == _CONTROL)
    return sorted(ids)
