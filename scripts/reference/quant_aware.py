#!/usr/bin/env python3
"""A float64 reference of the default model that rounds where tessel's kernels round.

Run with the pinned numpy + gguf venv (scripts/pyenv.sh reference prints its python):

    "$(scripts/pyenv.sh reference)" scripts/reference/quant_aware.py --tessel build/bin/tessel [--model FILE]

Why. A plain float64 forward pass checks only tessel's reference kernels: every fast kernel
quantizes its activations (to Q8_0 / Q8_1 blocks before a quantized matrix product), and against
plain float64 that alone moves the logits by NMSE ~1e-3, which would hide defects of that size. This
script emulates those roundings exactly, so each kernel is held to bounds far below that noise.

For every path this machine runs (each CPU tier of `tessel info --system`, with and without the
packed weights, `-fa off` on the best tier, and the NPU over both links and with `-fa off`),
`tessel trace` writes what the path computed (docs/trace.md): the nodes of a prompt graph and of a
decode graph with their inputs, and the logits of three teacher-forced prompts (258 positions).
Then:

  (a) per node: each node, fed the inputs the engine gave it, is recomputed in float64 with the
      rounding its kernel does (from the kernel name: `<weight>_<act>_...` quantizes activations
      to <act>; `npu_*` matrix products of a weight quantize to the NPU's Q8 blocks; `ref` does
      not round); NMSE <= 1e-6 for every node of both graphs;
  (b) end to end: the forward pass in float64 with the path's roundings (per weight type, as its
      matrix-product nodes show) gives logits per position. A path that rounds no activation must
      be within NMSE 1e-5 at every position. A quantizing path cannot be held to a small bound
      end to end: this model turns a one-ulp change of one activation into another Q8 rounding and
      that into logit NMSE ~1e-3 (the reference itself moves that much when each matrix product's
      result is rounded to float32: the "floor" column). So its mean NMSE over the positions must
      stay within 10x of that floor, which catches gross errors (a wrong tail tile, a missing
      term), while (a) holds every rounding exactly.

Roundings emulated (float32 where the kernels compute in float32; sources: src/quant/quant_legacy.cpp,
src/npu/device/vec_i8.h):
  Q8_0 block of 32: d = amax / 127 (float32), id = 1/d (0 when d = 0), q = round-half-away(x * id),
       d stored as fp16 (round to nearest even); the product uses fp16(d) * q.
  Q8_1: as Q8_0 plus s = fp16(float32(sum q) * d), d the float32 scale before its fp16 rounding;
       a weight with a min m (Q4_1, Q5_1) adds m * s per block.
  NPU Q8: as Q8_0; the min term is m * (fp16(d) * sum q) in float32 (no fp16 rounding of s).
  KV cache: K and V rounded to fp16 when stored (SET_ROWS into an F16 cache).
Everything else is float64. Exit status 1 when a bound is exceeded; a table per path on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
NODE_BOUND = 1e-6
E2E_EXACT_BOUND = 1e-5   # (b) for a path that rounds no activation (the reference kernels)
E2E_FLOOR_FACTOR = 10.0  # (b) mean NMSE of a quantizing path, in units of its reference's floor
PROMPT_NAMES = ("english", "digits", "non_ascii")  # from tests/data/smollm2/reference.gguf: 258 positions

# ---------------------------------------------------------------------------------------------
# GGUF data


class Tensors:
    """Tensors of a GGUF file by name: raw blocks, dequantized values, metadata."""

    def __init__(self, path: Path):
        import gguf  # noqa: PLC0415
        self.reader = gguf.GGUFReader(path)
        self.by_name = {t.name: t for t in self.reader.tensors}
        self._cache: dict[str, np.ndarray] = {}

    def has(self, name: str) -> bool:
        return name in self.by_name

    def type_name(self, name: str) -> str:
        return self.by_name[name].tensor_type.name

    def ne(self, name: str) -> list[int]:
        return [int(n) for n in self.by_name[name].shape]

    def raw(self, name: str) -> np.ndarray:
        return np.asarray(self.by_name[name].data)

    def values(self, name: str) -> np.ndarray:
        """float64 values, numpy shape = reversed ne."""
        if name not in self._cache:
            from gguf.quants import dequantize  # noqa: PLC0415
            t = self.by_name[name]
            a = np.asarray(t.data)
            if t.tensor_type.name in ("F32", "F16", "I32", "I64", "I8", "I16", "F64"):
                a = a.astype(np.float64)
            else:
                a = dequantize(a, t.tensor_type).astype(np.float64)
            self._cache[name] = a.reshape([int(n) for n in reversed(t.shape)])
        return self._cache[name]

    def field(self, key: str):
        f = self.reader.fields[key]
        if f.types and f.types[0].name == "ARRAY":
            if len(f.types) > 1 and f.types[1].name == "STRING":
                return [bytes(f.parts[i]).decode() for i in f.data]
            return [f.parts[i][0].item() for i in f.data]
        if f.types[0].name == "STRING":
            return bytes(f.parts[f.data[0]]).decode()
        return f.parts[f.data[0]][0].item()


def f16(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)


# ---------------------------------------------------------------------------------------------
# weights split for the matrix products: W = scale part (d * q) + min part (m per block)


def weight_parts(w: Tensors, name: str):
    """(D, M): D float64 [N, K] = d * q (the whole weight when the type has no min), M float64
    [N, K/32] the per-block mins (None without). Formats: GGUF's Q4_1 / Q5_1 blocks (fp16 d, fp16 m)."""
    kind = w.type_name(name)
    if kind not in ("Q4_1", "Q5_1"):
        return w.values(name).reshape(-1, w.ne(name)[0]), None
    raw = w.raw(name).reshape(-1).view(np.uint8)
    K = w.ne(name)[0]
    bb = 20 if kind == "Q4_1" else 24
    blocks = raw.reshape(-1, bb)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float64)[:, 0]
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float64)[:, 0]
    full = w.values(name).reshape(-1, 32)
    scale_part = (full - m[:, None])  # d * q exactly (both terms are exact in float64)
    N = full.size // K
    return scale_part.reshape(N, K), m.reshape(N, K // 32)


# ---------------------------------------------------------------------------------------------
# activation roundings


def round_half_away(v: np.ndarray) -> np.ndarray:
    a = np.abs(v)
    i = np.trunc(a)
    i = i + (a - i >= np.float32(0.5))
    return np.where(v < 0, -i, i)


def q8_blocks(x: np.ndarray):
    """Q8 blocks of float32 rows x [..., K]: (xq float64 = fp16(d) * q [..., K], d float32 [..., K/32],
    qsum [..., K/32])."""
    x = np.asarray(x, dtype=np.float32)
    xb = x.reshape(*x.shape[:-1], x.shape[-1] // 32, 32)
    amax = np.abs(xb).max(-1)
    d = (amax / np.float32(127.0)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    q = round_half_away((xb * inv[..., None]).astype(np.float32))
    d16 = f16(d)
    xq = (q * d16[..., None]).reshape(x.shape)
    return xq, d, q.sum(-1)


def act_scheme(kernel: str, device: str) -> str:
    """The activation rounding of a matrix-product kernel: none, q8_0, q8_1, npu_q8, f16."""
    if device.startswith("NPU"):
        return "npu_q8"
    if kernel == "ref":
        return "none"
    m = re.match(r"(.+?)_(q8_0|q8_1|q8_k|f32|f16|bf16)_(gemm|gemv)", kernel.split("+")[0])
    if not m:
        raise ValueError(f"kernel name '{kernel}' does not say its activation type")
    act = m.group(2)
    return {"f32": "none", "q8_0": "q8_0", "q8_1": "q8_1", "f16": "f16"}.get(act, act)


def matmul(x: np.ndarray, parts, scheme: str, weight_type: str) -> np.ndarray:
    """x [..., K] (float32 values) times a weight's parts -> [..., N] in float64, rounding as scheme."""
    D, M = parts
    if scheme == "none" or weight_type in ("F32", "F16", "BF16") and scheme != "f16":
        return np.asarray(x, np.float64) @ (D if M is None else D + np.repeat(M, 32, axis=1)).T
    if scheme == "f16":
        return f16(x) @ D.T
    if scheme not in ("q8_0", "q8_1", "npu_q8"):
        raise ValueError(f"activation scheme {scheme} is not emulated")
    xq, d, qsum = q8_blocks(x)
    y = xq @ D.T
    if M is not None:
        if scheme == "q8_1":
            s = f16((qsum.astype(np.float32) * d).astype(np.float32))
        elif scheme == "npu_q8":
            s = (f16(d).astype(np.float32) * qsum.astype(np.float32)).astype(np.float64)
        else:
            s = f16(d) * qsum
        y = y + s @ M.T
    return y


# ---------------------------------------------------------------------------------------------
# (a) one node from the inputs the engine gave it


def f32_param(params: list[int], i: int) -> float:
    return float(np.array([params[i]], dtype=np.int32).view(np.float32)[0])


def silu(x):
    return x / (1.0 + np.exp(-x))


def rope(x: np.ndarray, pos: np.ndarray, params: list[int]) -> np.ndarray:
    """x [B, T, H, D] (numpy order of ne [D, H, T, B])."""
    n_dims, mode = params[1], params[2]
    base, fscale, ext = f32_param(params, 5), f32_param(params, 6), f32_param(params, 7)
    attn = f32_param(params, 8)
    if ext != 0.0:
        raise ValueError("ROPE with YaRN (ext_factor != 0) is not emulated")
    half = n_dims // 2
    j = np.arange(half)
    theta = fscale * pos.astype(np.float64)[:, None] * base ** (-2.0 * j / n_dims)  # [T, half]
    c, s = np.cos(theta) * attn, np.sin(theta) * attn
    c, s = c[None, :, None, :], s[None, :, None, :]
    out = x.copy()
    if mode == 2:
        a, b = x[..., :half], x[..., half:n_dims]
        out[..., :half], out[..., half:n_dims] = a * c - b * s, a * s + b * c
    else:
        a, b = x[..., 0:n_dims:2], x[..., 1:n_dims:2]
        out[..., 0:n_dims:2], out[..., 1:n_dims:2] = a * c - b * s, a * s + b * c
    return out


def broadcast_to(b: np.ndarray, shape) -> np.ndarray:
    reps = [s // n for s, n in zip(shape, b.shape)]
    return np.tile(b, reps)


def emulate_node(node: dict, src, weights: Tensors) -> np.ndarray:
    """The node's output (numpy order of its ne) in float64."""
    op, p = node["op"], node["params"]
    if op == "GET_ROWS":
        table, ids = src(0), src(1).astype(np.int64)  # [B3, B2, N, K], [B3?, B2?, R] as [1, B3, B2, R]
        out = np.empty(ids.shape[1:] + (table.shape[-1],))
        for i3 in range(out.shape[0]):
            for i2 in range(out.shape[1]):
                out[i3, i2] = table[i3 % table.shape[0], i2 % table.shape[1]][ids[0, i3, i2]]
        return out
    if op == "RMS_NORM":
        x = src(0)
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + f32_param(p, 0))
    if op in ("MUL", "ADD"):
        a, b = src(0), broadcast_to(src(1), src(0).shape)
        return a * b if op == "MUL" else a + b
    if op == "SCALE":
        return src(0) * f32_param(p, 0) + f32_param(p, 1)
    if op == "MUL_MAT":
        wname = node["srcs"][0]
        x = src(1)
        if wname.startswith("w:"):
            name = wname[2:]
            scheme = act_scheme(node["kernel"], node["device"])
            return matmul(x, weight_parts(weights, name), scheme, weights.type_name(name))
        w = src(0)  # [B3, B2, N, K] (e.g. the KV cache)
        scheme = act_scheme(node["kernel"], node["device"])
        x = f16(x) if scheme == "f16" else x
        rep2 = x.shape[1] // w.shape[1]
        rep3 = x.shape[0] // w.shape[0]
        w = np.repeat(np.repeat(w, rep2, axis=1), rep3, axis=0)
        return x @ np.swapaxes(w, -1, -2)
    if op == "ROPE":
        return rope(src(0), src(1).reshape(-1), p)
    if op == "SET_ROWS":
        dst, rows, ids = src(0), src(1), src(2).astype(np.int64)  # dst read after the write
        out = dst.copy()
        B3, B2, R, _ = rows.shape
        for i3 in range(B3):
            for i2 in range(B2):
                for i1 in range(R):
                    out[i3, i2, ids[0, i3 % ids.shape[1], i2 % ids.shape[2], i1]] = rows[i3, i2, i1]
        return out
    if op == "GLU":
        if p[0] != 0:
            raise ValueError("GLU other than SWIGLU is not emulated")
        if len(node["srcs"]) > 1 and node["srcs"][1]:
            a, g = src(0), src(1)
        else:
            a2 = src(0)
            k = a2.shape[-1] // 2
            a, g = (a2[..., k:], a2[..., :k]) if p[1] else (a2[..., :k], a2[..., k:])
        return silu(a) * g
    if op == "SOFT_MAX":
        x = src(0) * f32_param(p, 0)
        if f32_param(p, 1) != 0.0:
            raise ValueError("SOFT_MAX with ALiBi is not emulated")
        if len(node["srcs"]) > 1 and node["srcs"][1]:
            mask = src(1)[..., : x.shape[-2], :]
            x = x + broadcast_to(mask, (mask.shape[0], mask.shape[1]) + x.shape[2:]) if mask.shape[:2] != x.shape[:2] else x + mask
        x = x - x.max(-1, keepdims=True)
        e = np.exp(x)
        return e / e.sum(-1, keepdims=True)
    if op == "FLASH_ATTN_EXT":
        q, k, v = src(0), src(1), src(2)  # [B, H, T, D], [B, Hkv, KV, D], [B, Hkv, KV, Dv]
        scale, max_bias, softcap = f32_param(p, 0), f32_param(p, 1), f32_param(p, 2)
        if max_bias != 0.0 or softcap != 0.0 or (len(node["srcs"]) > 4 and node["srcs"][4]):
            raise ValueError("FLASH_ATTN_EXT with ALiBi, softcap or sinks is not emulated")
        B, H, T, _ = q.shape
        group = H // k.shape[1]
        kk = np.repeat(k, group, axis=1)
        vv = np.repeat(v, group, axis=1)
        s = q @ np.swapaxes(kk, -1, -2) * scale  # [B, H, T, KV]
        if len(node["srcs"]) > 3 and node["srcs"][3]:
            mask = src(3)[..., :T, :]  # [B?, H?, T, KV]
            s = s + mask
        s = s - s.max(-1, keepdims=True)
        e = np.exp(s)
        o = (e / e.sum(-1, keepdims=True)) @ vv  # [B, H, T, Dv]
        return np.swapaxes(o, 1, 2)  # ne [Dv, H, T, B]
    if op in ("CPY", "CONT", "DUP"):
        return src(0).reshape(-1)
    raise ValueError(f"op {op} is not emulated")


def as4(a: np.ndarray) -> np.ndarray:
    """a with leading axes of 1 up to 4 (numpy order of ne[0..3])."""
    return a.reshape((1,) * (4 - a.ndim) + a.shape) if a.ndim < 4 else a


def nmse(got: np.ndarray, want: np.ndarray) -> float:
    got = np.asarray(got, np.float64).reshape(-1)
    want = np.asarray(want, np.float64).reshape(-1)
    fin = np.isfinite(want)
    if not np.array_equal(fin, np.isfinite(got)) or not np.array_equal(got[~fin], want[~fin]):
        return float("inf")
    den = float((want[fin] ** 2).sum())
    num = float(((got[fin] - want[fin]) ** 2).sum())
    return num / den if den > 0 else num


def check_nodes(trace: Tensors, weights: Tensors, graph: str):
    """Per node of one traced graph: (name, op, kernel, nmse), worst first."""
    key = f"tessel.trace.{graph}."
    n = trace.field(key + "n_nodes")
    rows = []

    def values_of(ref: str):
        if ref.startswith("w:"):
            return weights.values(ref[2:])
        return trace.values(ref[2:])

    for i in range(n):
        k = f"{key}{i}."
        node = {f: trace.field(k + f) for f in ("op", "name", "kernel", "device", "params")}
        node["srcs"] = trace.field(k + "srcs") if (k + "srcs") in trace.reader.fields else []
        out_name = f"{graph}.{i}.out"
        got = trace.values(out_name)
        try:
            want = emulate_node(node, lambda j: as4(values_of(node["srcs"][j])), weights)
            if trace.type_name(out_name) == "F16":
                want = f16(want)
            e = nmse(got, np.asarray(want).reshape(got.shape))
        except ValueError as err:
            e, node["kernel"] = float("nan"), f"{node['kernel']} ({err})"
        rows.append((node["name"] or f"#{i}", node["op"], f"{node['device']}:{node['kernel']}", e))
    return rows


# ---------------------------------------------------------------------------------------------
# (b) the forward pass with a path's roundings


class Forward:
    """The llama forward pass of the default model in float64 (architecture of src/model/llama.cpp),
    with matrix products rounding per weight type as `schemes` says."""

    def __init__(self, weights: Tensors):
        w = weights
        self.w = w
        self.n_layer = int(w.field("llama.block_count"))
        self.n_head = int(w.field("llama.attention.head_count"))
        self.n_head_kv = int(w.field("llama.attention.head_count_kv"))
        self.eps = float(w.field("llama.attention.layer_norm_rms_epsilon"))
        self.base = float(w.field("llama.rope.freq_base"))
        self.parts = {}

    def mm(self, x, name, schemes):
        if name not in self.parts:
            self.parts[name] = weight_parts(self.w, name)
        kind = self.w.type_name(name)
        return matmul(x.astype(np.float32), self.parts[name], schemes.get(kind, "none"), kind)

    def logits(self, tokens: np.ndarray, schemes: dict) -> np.ndarray:
        w = self.w
        emb = w.values("token_embd.weight")
        n, n_embd = len(tokens), emb.shape[1]
        d = n_embd // self.n_head
        group = self.n_head // self.n_head_kv
        causal = np.triu(np.full((n, n), -np.inf), 1)
        pos = np.arange(n)
        rp = [0, d, 0, 0, 0, int(np.float32(self.base).view(np.int32)), int(np.float32(1.0).view(np.int32)), 0,
              int(np.float32(1.0).view(np.int32))]

        def norm(x, g):
            return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * g

        x = emb[tokens]
        for il in range(self.n_layer):
            p = f"blk.{il}."
            h = norm(x, w.values(p + "attn_norm.weight"))
            q = rope(self.mm(h, p + "attn_q.weight", schemes).reshape(1, n, self.n_head, d), pos, rp)[0]
            k = rope(self.mm(h, p + "attn_k.weight", schemes).reshape(1, n, self.n_head_kv, d), pos, rp)[0]
            v = self.mm(h, p + "attn_v.weight", schemes).reshape(n, self.n_head_kv, d)
            k, v = f16(k), f16(v)  # the F16 KV cache
            o = np.empty((n, self.n_head, d))
            for hd in range(self.n_head):
                s = q[:, hd] @ k[:, hd // group].T / np.sqrt(d) + causal
                s = np.exp(s - s.max(-1, keepdims=True))
                o[:, hd] = (s / s.sum(-1, keepdims=True)) @ v[:, hd // group]
            x = x + self.mm(o.reshape(n, n_embd), p + "attn_output.weight", schemes)
            h = norm(x, w.values(p + "ffn_norm.weight"))
            g = self.mm(h, p + "ffn_gate.weight", schemes)
            x = x + self.mm(silu(g) * self.mm(h, p + "ffn_up.weight", schemes), p + "ffn_down.weight", schemes)
        x = norm(x, w.values("output_norm.weight"))
        out = "output.weight" if w.has("output.weight") else "token_embd.weight"
        return self.mm(x, out, schemes)


def path_schemes(trace: Tensors, weights: Tensors) -> dict:
    """Weight type -> activation scheme of the traced prompt graph's matrix products."""
    key = "tessel.trace.prompt."
    schemes: dict[str, str] = {}
    for i in range(trace.field(key + "n_nodes")):
        k = f"{key}{i}."
        if trace.field(k + "op") != "MUL_MAT":
            continue
        srcs = trace.field(k + "srcs")
        if not srcs or not srcs[0].startswith("w:"):
            continue
        kind = weights.type_name(srcs[0][2:])
        s = act_scheme(trace.field(k + "kernel"), trace.field(k + "device"))
        if schemes.setdefault(kind, s) != s:
            raise ValueError(f"{kind} matrix products round their activations two ways ({schemes[kind]}, {s})")
    return schemes


# ---------------------------------------------------------------------------------------------
# driver


def paths(tessel: str):
    """(name, env, extra flags, runs here) of every path: CPU tiers x packed/unpacked, NPU links."""
    info = json.loads(subprocess.run([tessel, "info", "--system", "--json"], check=True, capture_output=True, text=True).stdout)
    tiers = ["scalar"]
    for f in info["features"].values():
        if f["tier"] not in tiers:
            tiers.append(f["tier"])
    usable = set(tiers[: tiers.index(info["usable_tier"]) + 1])
    out = []
    for tier in tiers:
        here = tier in usable
        if tier != "scalar":  # no packed kernel below avx2 (nor on a CPU without one)
            out.append((f"cpu {tier} packed", {"TESSEL_CPU_ISA": tier}, [], here))
        out.append((f"cpu {tier} unpacked", {"TESSEL_CPU_ISA": tier}, ["--no-packed"], here))
    best = tiers.index(info["usable_tier"])
    # attention without FLASH_ATTN_EXT (MUL_MAT over the F16 cache, SOFT_MAX) on the best tier
    out.append((f"cpu {tiers[best]} packed fa off", {"TESSEL_CPU_ISA": tiers[best]}, ["-fa", "off"], best > 0))
    for link in ("inproc", "process"):
        out.append((f"npu {link}", {"TESSEL_NPU_LINK": link}, ["--device", "npu"], True))
    out.append(("npu inproc fa off", {"TESSEL_NPU_LINK": "inproc"}, ["--device", "npu", "-fa", "off"], True))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--tessel", default=str(REPO / "build/bin/tessel"))
    ap.add_argument("--model", type=Path, help="default: the cached default model")
    ap.add_argument("--only", help="run the paths whose name contains this text")
    ap.add_argument("--keep", type=Path, help="keep the traces in this folder")
    args = ap.parse_args()

    model = args.model
    if model is None:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        model = cache / "tessel/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    if not model.exists():
        print(f"quant_aware: {model} does not exist (run tessel once to fetch the default model)", file=sys.stderr)
        return 1
    weights = Tensors(model)
    ref = Tensors(REPO / "tests/data/smollm2/reference.gguf")
    prompts = [ref.field(f"tessel.reference.prompt.{n}.text") for n in PROMPT_NAMES]
    if any("\n" in p for p in prompts):
        raise SystemExit("quant_aware: a prompt holds a newline (tessel trace reads one per line)")
    fwd = Forward(weights)
    references: dict[str, list[np.ndarray]] = {}

    def reference(schemes: dict, tokens_list, perturbed: bool = False) -> list[np.ndarray]:
        """The forward pass per prompt; `perturbed`: every matrix product's result rounded to
        float32 (a change of ~6e-8 relative, below what float32 kernels differ by)."""
        key = json.dumps(schemes, sort_keys=True) + str(perturbed)
        if key not in references:
            if perturbed:
                exact = fwd.mm
                fwd.mm = lambda x, name, sch: exact(x, name, sch).astype(np.float32).astype(np.float64)
            try:
                references[key] = [fwd.logits(t, schemes) for t in tokens_list]
            finally:
                if perturbed:
                    del fwd.mm
        return references[key]

    failed = False
    work = args.keep or Path(tempfile.mkdtemp(prefix="tessel-quant-aware-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "prompts.txt").write_text("".join(p + "\n" for p in prompts))
    print(f"(a) worst node NMSE of a prompt graph and a decode graph (the first prompt's), bound {NODE_BOUND:g};"
          f" (b) over the {len(prompts)} prompts' positions: mean / max NMSE against the quantization-aware reference, bound"
          f" {E2E_EXACT_BOUND:g} (max) for a path that rounds nothing, else {E2E_FLOOR_FACTOR:g}x the floor (mean); floor: the"
          " reference against itself with float32-rounded matrix products; plain: mean NMSE against plain float64")
    print(f"{'path':<30} {'(a) node':>9} {'worst node':<26} {'(b) mean':>9} {'max':>9} {'floor':>9} {'plain':>9}  roundings")
    ran = 0
    for name, env, flags, here in paths(args.tessel):
        if args.only and args.only not in name:
            continue
        if not here:
            print(f"{name:<30} not on this CPU")
            continue
        out = work / (name.replace(" ", "_") + ".gguf")
        cmd = [args.tessel, "trace", "-m", str(model), "-f", str(work / "prompts.txt"), "-o", str(out), "-t", "2"] + flags
        r = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name:<30} FAILED: {' '.join(cmd)}: {r.stderr.strip()}")
            failed = True
            continue
        trace = Tensors(out)
        nodes = check_nodes(trace, weights, "prompt") + check_nodes(trace, weights, "decode")
        worst = max(nodes, key=lambda row: float("inf") if row[3] != row[3] else row[3])
        bad = [row for row in nodes if not (row[3] <= NODE_BOUND)]
        schemes = path_schemes(trace, weights)
        rounds = any(v != "none" for v in schemes.values())
        tokens = [trace.raw(f"p{i}.tokens").astype(np.int64) for i in range(trace.field("tessel.trace.n_prompts"))]
        want = reference(schemes, tokens)
        floor = reference(schemes, tokens, perturbed=True)
        plain = reference({}, tokens)
        e_want, e_floor, e_plain = [], [], []
        for i, t in enumerate(tokens):
            got = trace.values(f"p{i}.logits").reshape(len(t), -1)
            for j in range(len(t)):
                e_want.append(nmse(got[j], want[i][j]))
                e_floor.append(nmse(floor[i][j], want[i][j]))
                e_plain.append(nmse(got[j], plain[i][j]))
        mean, top, fl = float(np.mean(e_want)), float(np.max(e_want)), float(np.mean(e_floor))
        ran += 1
        print(f"{name:<30} {worst[3]:>9.2e} {worst[0] + ' ' + worst[1]:<26} {mean:>9.2e} {top:>9.2e} {fl:>9.2e} "
              f"{float(np.mean(e_plain)):>9.2e}  {', '.join(f'{k} {v}' for k, v in sorted(schemes.items())) or 'none'}")
        for row in bad[:8]:
            print(f"    node {row[0]} {row[1]} on {row[2]}: NMSE {row[3]:.3e} > {NODE_BOUND:g}")
        failed |= bool(bad)
        if len(e_want) < 200:
            print(f"    only {len(e_want)} positions (needs 200)")
            failed = True
        # (b): a path that rounds nothing must match float64 everywhere; one that quantizes its
        # activations cannot be held closer than its reference is to itself (see the docstring)
        if not rounds and top > E2E_EXACT_BOUND:
            print(f"    end to end: NMSE {top:.3e} > {E2E_EXACT_BOUND:g} at some position")
            failed = True
        if rounds and mean > E2E_FLOOR_FACTOR * fl:
            print(f"    end to end: mean NMSE {mean:.3e} > {E2E_FLOOR_FACTOR:g} x the floor {fl:.3e}")
            failed = True
        if not args.keep:
            out.unlink()
    if not args.keep:
        shutil.rmtree(work)
    if ran == 0:
        print("no path ran" + (f" (--only '{args.only}' matches none)" if args.only else ""))
        failed = True
    print("FAILED" if failed else f"all {ran} paths within the bounds")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
