#!/usr/bin/env python3
"""Regenerate tests/data/quant/: reference outputs of independent GGUF quant implementations.

Run with the pinned venv (scripts/pyenv.sh prints its python):

    "$(scripts/pyenv.sh)" scripts/xcheck_quant.py [--out tests/data/quant]

Output is deterministic (fixed seeds, no timestamps). tests/unit/quant_xcheck_test.cpp reads it.

Checks and their reference implementations
------------------------------------------
* dequant  (kind 1): random *valid* blocks of every supported type (random bytes; fp16 scale fields
  replaced by finite moderate values, MXFP4 E8M0 exponents in a sane range plus the e<2 edge,
  Q8_K bsums made consistent) and the float32 output of gguf-py's ``gguf.quants.dequantize``.
  Where gguf-py has no dequantizer the output of ggml's own dequantizer (libggml-base via
  ctypes) is stored instead; where neither exists (Q8_1: gguf-py lacks it and ggml's
  dequantize_row_q8_1 does not exist) the format's definition x = fp32(d) * q is evaluated
  with numpy. Whenever both gguf-py and ggml can decode a type, the script compares them bit for
  bit and records the outcome. Each file's header text says which source was used.
* qexact   (kind 2): llama.cpp's quantized bytes (``ggml_quantize_chunk``, imatrix=NULL) of the
  rows in quant_rows.bin, for the types tessel must reproduce bit-exactly: Q4_0, Q4_1, Q5_0,
  Q5_1, Q8_0, Q8_1, MXFP4. ggml_quantize_chunk is probed per type in a child process first;
  a type it rejects (Q8_1) is quantized with the type's ``from_float_ref`` from
  ``ggml_get_type_traits`` instead, and the header says so.
* qrmse    (kind 3): llama.cpp's RMSE (quantize, then ggml's dequantizer) over the N(0,1) rows
  in rmse_rows.bin for Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS; tessel must stay within 1.02x of it.
  Q8_K has neither a quantize_chunk case nor traits functions in ggml-base, so the exported
  quantize_row_q8_K_ref / dequantize_row_q8_K are called directly (header says so).

File format (every file; all integers little-endian)
----------------------------------------------------
    char[4] magic "TQXC"
    u32     version            1
    u32     kind               0 = input rows, 1 = dequant, 2 = qexact, 3 = qrmse
    u32     ggml type id       (kind 0: 0, i.e. F32)
    u32     nrows
    u32     n_per_row          elements per row
    u32     text_len, then text_len bytes of UTF-8 text: provenance and versions (informational)
    payload:
      kind 0: f32[nrows * n_per_row]                        the rows
      kind 1: u8[nrows * row_bytes]  raw blocks, then f32[nrows * n_per_row] expected values
      kind 2: u32 name_len + name of the kind-0 input file, then u8[nrows * row_bytes] expected
      kind 3: u32 name_len + name of the kind-0 input file, then f64 reference RMSE over all
              rows, then f64[nrows] per-row reference RMSE
    row_bytes = n_per_row / block_size * block_bytes. The file ends right after its payload.

RMSE is sqrt(mean((x - dequant(quant(x)))^2)) computed in float64.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import os
import struct
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

MAGIC = b"TQXC"
VERSION = 1
KIND_ROWS, KIND_DEQUANT, KIND_QEXACT, KIND_QRMSE = 0, 1, 2, 3

SEED_DEQUANT = 0x7E55E1_01
SEED_QROWS = 0x7E55E1_02
SEED_RMSE = 0x7E55E1_03

DEQUANT_NROWS = 2  # rows of 256 elements (512 for the 256-element super-block types)
QEXACT_NPR = 256
RMSE_NROWS, RMSE_NPR = 16, 4096


@dataclass(frozen=True)
class QType:
    name: str
    ggml_id: int
    block_size: int
    block_bytes: int
    fp16_fields: tuple[int, ...] = ()  # byte offsets of fp16 scale fields inside a block


TYPES = {t.name: t for t in [
    QType("F16", 1, 1, 2),
    QType("BF16", 30, 1, 2),
    QType("Q4_0", 2, 32, 18, (0,)),
    QType("Q4_1", 3, 32, 20, (0, 2)),
    QType("Q5_0", 6, 32, 22, (0,)),
    QType("Q5_1", 7, 32, 24, (0, 2)),
    QType("Q8_0", 8, 32, 34, (0,)),
    QType("Q8_1", 9, 32, 36, (0,)),          # s (offset 2) is set to fp16(d * sum(q))
    QType("Q2_K", 10, 256, 84, (80, 82)),
    QType("Q3_K", 11, 256, 110, (108,)),
    QType("Q4_K", 12, 256, 144, (0, 2)),
    QType("Q5_K", 13, 256, 176, (0, 2)),
    QType("Q6_K", 14, 256, 210, (208,)),
    QType("Q8_K", 15, 256, 292),             # f32 d at 0, int8 qs[256], int16 bsums[16]
    QType("IQ4_NL", 20, 32, 18, (0,)),
    QType("IQ4_XS", 23, 256, 136, (0,)),
    QType("MXFP4", 39, 32, 17),              # E8M0 exponent at 0
]}

DEQUANT_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
                 "Q6_K", "Q8_K", "IQ4_NL", "IQ4_XS", "MXFP4", "F16", "BF16"]
QEXACT_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "MXFP4"]
QRMSE_TYPES = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ4_NL", "IQ4_XS"]


def row_bytes(t: QType, n: int) -> int:
    assert n % t.block_size == 0
    return n // t.block_size * t.block_bytes


# ---------------------------------------------------------------------------------------------
# libggml-base through ctypes


class TypeTraits(ctypes.Structure):
    # struct ggml_type_traits (ggml.h of the pinned llama.cpp)
    _fields_ = [
        ("type_name", ctypes.c_char_p),
        ("blck_size", ctypes.c_int64),
        ("blck_size_interleave", ctypes.c_int64),
        ("type_size", ctypes.c_size_t),
        ("is_quantized", ctypes.c_bool),
        ("to_float", ctypes.c_void_p),
        ("from_float_ref", ctypes.c_void_p),
    ]


TO_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def find_ggml_base() -> Path:
    import llama_cpp  # noqa: PLC0415 (only needed here)

    pkg = Path(llama_cpp.__file__).resolve().parent
    hits = sorted(p for p in pkg.rglob("libggml-base*.so*") if p.is_file())
    if not hits:
        sys.exit(f"error: no libggml-base*.so under {pkg}")
    return hits[0]


class Ggml:
    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        lib = self.lib
        lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                            ctypes.c_void_p]
        lib.ggml_get_type_traits.restype = ctypes.POINTER(TypeTraits)
        lib.ggml_get_type_traits.argtypes = [ctypes.c_int]
        lib.ggml_row_size.restype = ctypes.c_size_t
        lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
        lib.ggml_quantize_requires_imatrix.restype = ctypes.c_bool
        lib.ggml_quantize_requires_imatrix.argtypes = [ctypes.c_int]

    def check_geometry(self, t: QType) -> None:
        tr = self.lib.ggml_get_type_traits(t.ggml_id).contents
        got = (tr.blck_size, tr.type_size, self.lib.ggml_row_size(t.ggml_id, QK_LCM))
        want = (t.block_size, t.block_bytes, row_bytes(t, QK_LCM))
        if got != want:
            sys.exit(f"error: ggml geometry of {t.name} is {got}, script expects {want}")

    def to_float_fn(self, t: QType):
        ptr = self.lib.ggml_get_type_traits(t.ggml_id).contents.to_float
        if ptr:
            return TO_FLOAT(ptr), "ggml_get_type_traits().to_float"
        sym = f"dequantize_row_{t.name.lower().replace('_k', '_K')}"
        if hasattr(self.lib, sym):
            return TO_FLOAT(ctypes.cast(getattr(self.lib, sym), ctypes.c_void_p).value), sym
        return None, None

    def from_float_ref_fn(self, t: QType):
        ptr = self.lib.ggml_get_type_traits(t.ggml_id).contents.from_float_ref
        if ptr:
            return FROM_FLOAT(ptr), "ggml_get_type_traits().from_float_ref"
        sym = f"quantize_row_{t.name.lower().replace('_k', '_K')}_ref"
        if hasattr(self.lib, sym):
            return FROM_FLOAT(ctypes.cast(getattr(self.lib, sym), ctypes.c_void_p).value), sym
        return None, None

    def dequantize(self, t: QType, raw: np.ndarray, nrows: int, npr: int):
        fn, how = self.to_float_fn(t)
        if fn is None:
            return None, None
        raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(nrows, row_bytes(t, npr))
        out = np.empty((nrows, npr), dtype=np.float32)
        for r in range(nrows):
            fn(raw[r].ctypes.data, out[r].ctypes.data, npr)
        return out, how

    def quantize_chunk(self, t: QType, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        nrows, npr = x.shape
        out = np.zeros((nrows, row_bytes(t, npr)), dtype=np.uint8)
        n = self.lib.ggml_quantize_chunk(t.ggml_id, x.ctypes.data, out.ctypes.data, 0, nrows, npr, None)
        if n != out.size:
            sys.exit(f"error: ggml_quantize_chunk({t.name}) wrote {n} bytes, expected {out.size}")
        return out

    def quantize_ref(self, t: QType, x: np.ndarray):
        fn, how = self.from_float_ref_fn(t)
        if fn is None:
            sys.exit(f"error: ggml has no reference quantizer for {t.name}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        nrows, npr = x.shape
        out = np.zeros((nrows, row_bytes(t, npr)), dtype=np.uint8)
        for r in range(nrows):
            fn(x[r].ctypes.data, out[r].ctypes.data, npr)
        return out, how


QK_LCM = 256  # a row length every block size divides


def probe_chunk_child(lib_path: str, type_id: int) -> None:
    """Child process: quantize one fixed row with ggml_quantize_chunk and print the bytes (hex)."""
    g = Ggml(Path(lib_path))
    t = next(t for t in TYPES.values() if t.ggml_id == type_id)
    x = np.linspace(-3.0, 5.0, QK_LCM, dtype=np.float32).reshape(1, QK_LCM)
    sys.stdout.write(g.quantize_chunk(t, x).tobytes().hex())


def chunk_reachable(g: Ggml, t: QType) -> tuple[bool, str]:
    """Whether ggml_quantize_chunk accepts type t, probed in a child process (ggml aborts on a type
    it has no case for). Returns (reachable, note); the note also says whether the chunk path
    agrees with the type's reference quantizer on the probe row."""
    if g.lib.ggml_quantize_requires_imatrix(t.ggml_id):
        return False, "ggml_quantize_requires_imatrix() is true"
    env = dict(os.environ, GGML_NO_BACKTRACE="1")
    r = subprocess.run([sys.executable, __file__, "--probe-chunk", str(g.path), str(t.ggml_id)],
                       capture_output=True, text=True, check=False, env=env)
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if "GGML_ASSERT" in ln or "error" in ln.lower()]
        msg = lines[0].split("ggml/src/")[-1] if lines else "(no message)"
        return False, f"probe child died with status {r.returncode}: {msg}"
    if len(r.stdout.strip()) != 2 * row_bytes(t, QK_LCM):
        return False, "probe child returned the wrong number of bytes"
    x = np.linspace(-3.0, 5.0, QK_LCM, dtype=np.float32).reshape(1, QK_LCM)
    ref, how = g.quantize_ref(t, x)
    same = r.stdout.strip() == ref.tobytes().hex()
    return True, f"probe row {'identical to' if same else 'differs from'} {how}"


# ---------------------------------------------------------------------------------------------
# inputs


def moderate_fp16(rng: np.random.Generator, n: int) -> np.ndarray:
    """n finite fp16 values, |v| log-uniform in [2^-12, 2^2], random sign (uint16 bits)."""
    mag = np.exp2(rng.uniform(-12.0, 2.0, n))
    sign = np.where(rng.integers(0, 2, n) == 1, -1.0, 1.0)
    return (mag * sign).astype(np.float16).view(np.uint16)


def random_blocks(rng: np.random.Generator, t: QType, nblocks: int) -> tuple[np.ndarray, str]:
    """Random valid blocks of type t as uint8 [nblocks, block_bytes], and a description."""
    raw = rng.integers(0, 256, (nblocks, t.block_bytes), dtype=np.uint8)
    desc = "random bytes"
    if t.name == "F16":
        h = raw.view(np.uint16)
        nan = (h & 0x7C00) == 0x7C00
        nan &= (h & 0x03FF) != 0
        h[nan] &= np.uint16(0xFC00)  # NaN -> Inf of the same sign (payloads are not compared)
        desc = "random binary16 bits, NaNs replaced by Inf (normals, subnormals, zeros, Inf kept)"
    elif t.name == "BF16":
        h = raw.view(np.uint16)
        nan = ((h & 0x7F80) == 0x7F80) & ((h & 0x007F) != 0)
        h[nan] &= np.uint16(0xFF80)
        desc = "random bfloat16 bits, NaNs replaced by Inf"
    for off in t.fp16_fields:
        raw[:, off:off + 2] = moderate_fp16(rng, nblocks).view(np.uint8).reshape(nblocks, 2)
    if t.fp16_fields:
        desc += "; fp16 scale fields at byte offsets %s: |v| log-uniform in [2^-12, 2^2], random sign" % (
            list(t.fp16_fields))
    if t.name == "Q8_1":
        d = raw[:, 0:2].copy().view(np.float16).astype(np.float32).reshape(nblocks)
        q = raw[:, 4:36].view(np.int8).astype(np.int32)
        s = (d * q.sum(axis=1).astype(np.float32)).astype(np.float16)
        raw[:, 2:4] = s.view(np.uint8).reshape(nblocks, 2)
        desc += "; s = fp16(d * sum(q))"
    if t.name == "Q8_K":
        d = (np.exp2(rng.uniform(-16.0, 0.0, nblocks)) *
             np.where(rng.integers(0, 2, nblocks) == 1, -1.0, 1.0)).astype(np.float32)
        raw[:, 0:4] = d.view(np.uint8).reshape(nblocks, 4)
        q = raw[:, 4:260].view(np.int8).astype(np.int16)
        bsums = q.reshape(nblocks, 16, 16).sum(axis=2).astype("<i2")
        raw[:, 260:292] = bsums.view(np.uint8).reshape(nblocks, 32)
        desc += "; f32 d: |d| log-uniform in [2^-16, 1], random sign; bsums = sums of 16 quants"
    if t.name == "MXFP4":
        e = rng.integers(100, 151, nblocks).astype(np.uint8)
        e[:3] = [0, 1, 2]  # the subnormal-scale edge of E8M0 (2^-127, 2^-126, 2^-125)
        raw[:, 0] = e
        desc += "; E8M0 exponents uniform in [100, 150], first three blocks use e = 0, 1, 2"
    return raw, desc


def quant_rows(rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    n = QEXACT_NPR
    rows, names = [], []

    def add(name, v):
        names.append(name)
        rows.append(np.asarray(v, dtype=np.float32))

    for i in range(8):
        add(f"N(0,1) #{i}", rng.standard_normal(n))
    add("all zero", np.zeros(n))
    v = 0.05 * rng.standard_normal(n)
    v[rng.integers(0, n)] = 40.0
    v[rng.integers(0, n)] = -75.0
    add("one outlier per sign (+40, -75) on 0.05*N(0,1)", v)
    add("all negative: -|N(0,1)| - 0.01", -np.abs(rng.standard_normal(n)) - 0.01)
    add("tiny: 1e-6 * N(0,1)", 1e-6 * rng.standard_normal(n))
    add("large: 1e4 * N(0,1)", 1e4 * rng.standard_normal(n))
    v = rng.integers(-253, 254, n) / 2.0
    v[::32] = 127.0
    add("ties: half-integers in [-126.5, 126.5], 127 first in each 32-block", v)
    v = rng.standard_normal(n)
    for b in range(n // 32):
        i, j = rng.choice(32, 2, replace=False)
        v[b * 32 + i], v[b * 32 + j] = 3.0, -3.0
    add("equal |max| of both signs (+3 and -3) in every 32-block", v)
    v = rng.standard_normal(n) * np.repeat(10.0 ** rng.uniform(-7.0, 4.0, n // 32), 32)
    add("per-32-block scale 10^U(-7, 4) on N(0,1)", v)
    return np.stack(rows), names


# ---------------------------------------------------------------------------------------------
# output


def pack_file(kind: int, t_id: int, nrows: int, npr: int, text: str, payload: bytes) -> bytes:
    tb = text.encode("utf-8")
    return (MAGIC + struct.pack("<IIIIII", VERSION, kind, t_id, nrows, npr, len(tb)) + tb + payload)


def pack_name(name: str) -> bytes:
    b = name.encode("utf-8")
    return struct.pack("<I", len(b)) + b


def versions() -> str:
    return "numpy %s, gguf %s, llama-cpp-python %s" % (
        np.__version__, metadata.version("gguf"), metadata.version("llama-cpp-python"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests/data/quant")
    ap.add_argument("--probe-chunk", nargs=2, metavar=("LIB", "TYPE_ID"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe_chunk:
        probe_chunk_child(args.probe_chunk[0], int(args.probe_chunk[1]))
        return

    import gguf  # noqa: PLC0415
    from gguf import GGMLQuantizationType, quants  # noqa: PLC0415

    g = Ggml(find_ggml_base())
    ver = versions()
    g.lib.ggml_version.restype = ctypes.c_char_p
    g.lib.ggml_commit.restype = ctypes.c_char_p
    lib_desc = (f"libggml-base from llama-cpp-python ({g.path.name}, ggml {g.lib.ggml_version().decode()}"
                f" commit {g.lib.ggml_commit().decode()})")
    common = f"versions: {ver}\nlibrary: {lib_desc}\n"
    print(f"{ver}\nusing {g.path}", file=sys.stderr)
    size_notes: dict[str, str] = {}
    for t in TYPES.values():
        g.check_geometry(t)
        gq = GGMLQuantizationType(t.ggml_id)
        if gq.name != t.name:
            sys.exit(f"error: gguf-py calls type {t.ggml_id} {gq.name}, script says {t.name}")
        if tuple(gguf.GGML_QUANT_SIZES[gq]) != (t.block_size, t.block_bytes):
            size_notes[t.name] = (f"note: gguf-py's GGML_QUANT_SIZES[{t.name}] is "
                                  f"{tuple(gguf.GGML_QUANT_SIZES[gq])}, ggml's block is "
                                  f"({t.block_size}, {t.block_bytes}); ggml's size is used\n")
            print(size_notes[t.name], end="", file=sys.stderr)

    out: dict[str, bytes] = {}
    summary: list[str] = []

    # 1. dequantization -------------------------------------------------------------------
    rng = np.random.default_rng(SEED_DEQUANT)
    for name in DEQUANT_TYPES:
        t = TYPES[name]
        nrows, npr = DEQUANT_NROWS, (512 if t.block_size == 256 else 256)
        nblocks = nrows * npr // t.block_size
        raw, desc = random_blocks(rng, t, nblocks)
        raw_rows = raw.reshape(nrows, row_bytes(t, npr))
        gq = GGMLQuantizationType(t.ggml_id)
        try:
            ref_py = np.asarray(quants.dequantize(raw_rows, gq), dtype=np.float32).reshape(nrows, npr)
        except NotImplementedError:
            ref_py = None
        ref_c, how_c = g.dequantize(t, raw_rows, nrows, npr)
        if ref_py is not None:
            expected, source = ref_py, "gguf-py gguf.quants.dequantize"
            if ref_c is None:
                agree = "ggml has no dequantizer for this type (not cross-checked)"
            else:
                diff = ref_py.view(np.uint32) != ref_c.view(np.uint32)
                if diff.any():
                    agree = (f"DISAGREES with ggml {how_c} on {int(diff.sum())} of {diff.size} "
                             f"values (max |diff| {float(np.max(np.abs(ref_py - ref_c))):.3g})")
                    print(f"WARNING: {name}: gguf-py {agree}", file=sys.stderr)
                else:
                    agree = f"bit-identical to ggml {how_c}"
        elif ref_c is not None:
            expected, source = ref_c, f"ggml {how_c} via ctypes (gguf-py has no dequantizer for {name})"
            agree = "gguf-py cannot decode this type (not cross-checked)"
        elif name == "Q8_1":
            d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)
            q = raw[:, 4:36].view(np.int8).astype(np.float32)
            expected = (d * q).astype(np.float32).reshape(nrows, npr)
            source = ("numpy, format definition x = fp32(d) * q (s ignored): gguf-py has no Q8_1 "
                      "dequantizer and ggml has no dequantize_row_q8_1")
            agree = "no independent dequantizer exists"
        else:
            sys.exit(f"error: nothing can dequantize {name}")
        assert not np.isnan(expected).any()
        text = (f"tessel quant xcheck: dequant {name}\nexpected: {source}\ncross-check: {agree}\n"
                f"input: {nrows} rows x {npr}; {desc}; numpy default_rng seed {SEED_DEQUANT:#x}\n"
                f"{size_notes.get(name, '')}{common}")
        out[f"dequant_{name}.bin"] = pack_file(KIND_DEQUANT, t.ggml_id, nrows, npr, text,
                                               raw_rows.tobytes() + expected.astype("<f4").tobytes())
        summary.append(f"dequant {name:7s} {source.split(' (')[0].split(',')[0]}; {agree}")

    # 2. bit-exact quantization -----------------------------------------------------------
    x, names = quant_rows(np.random.default_rng(SEED_QROWS))
    rows_text = ("tessel quant xcheck: input rows for qexact_*.bin\n" +
                 "".join(f"row {i}: {n}\n" for i, n in enumerate(names)) +
                 f"numpy default_rng seed {SEED_QROWS:#x}\n{common}")
    out["quant_rows.bin"] = pack_file(KIND_ROWS, 0, x.shape[0], x.shape[1], rows_text,
                                      x.astype("<f4").tobytes())
    for name in QEXACT_TYPES:
        t = TYPES[name]
        ok, why = chunk_reachable(g, t)
        if ok:
            q = g.quantize_chunk(t, x)
            source = f"ggml_quantize_chunk(imatrix=NULL) ({why})"
        else:
            q, how = g.quantize_ref(t, x)
            source = f"ggml {how} (ggml_quantize_chunk rejects {name}: {why})"
        text = (f"tessel quant xcheck: bit-exact quantization {name}\nexpected: {source}\n"
                f"input: quant_rows.bin ({x.shape[0]} rows x {x.shape[1]})\n{size_notes.get(name, '')}{common}")
        out[f"qexact_{name}.bin"] = pack_file(KIND_QEXACT, t.ggml_id, x.shape[0], x.shape[1], text,
                                              pack_name("quant_rows.bin") + q.tobytes())
        summary.append(f"qexact  {name:7s} {source}")

    # 3. RMSE of the searched quantizers -------------------------------------------------
    xr = np.random.default_rng(SEED_RMSE).standard_normal((RMSE_NROWS, RMSE_NPR)).astype(np.float32)
    out["rmse_rows.bin"] = pack_file(
        KIND_ROWS, 0, RMSE_NROWS, RMSE_NPR,
        f"tessel quant xcheck: input rows for qrmse_*.bin: N(0,1) float32, numpy default_rng seed "
        f"{SEED_RMSE:#x}\n{common}", xr.astype("<f4").tobytes())
    for name in QRMSE_TYPES:
        t = TYPES[name]
        ok, why = chunk_reachable(g, t)
        if ok:
            q = g.quantize_chunk(t, xr)
            qsrc = f"ggml_quantize_chunk(imatrix=NULL) ({why})"
        else:
            q, how = g.quantize_ref(t, xr)
            qsrc = f"ggml {how} (ggml_quantize_chunk rejects {name}: {why})"
        y, how_c = g.dequantize(t, q, RMSE_NROWS, RMSE_NPR)
        if y is None:
            sys.exit(f"error: ggml cannot dequantize {name}")
        err = (xr.astype(np.float64) - y.astype(np.float64)) ** 2
        per_row = np.sqrt(err.mean(axis=1))
        total = float(np.sqrt(err.mean()))
        text = (f"tessel quant xcheck: quantization RMSE {name}\nquantized by: {qsrc}\n"
                f"dequantized by: ggml {how_c}\nreference RMSE: {total:.9g}\n"
                f"input: rmse_rows.bin ({RMSE_NROWS} rows x {RMSE_NPR})\n{common}")
        out[f"qrmse_{name}.bin"] = pack_file(KIND_QRMSE, t.ggml_id, RMSE_NROWS, RMSE_NPR, text,
                                             pack_name("rmse_rows.bin") + struct.pack("<d", total) +
                                             per_row.astype("<f8").tobytes())
        summary.append(f"qrmse   {name:7s} rmse {total:.6g}; {qsrc}")

    # write -------------------------------------------------------------------------------
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.bin"):
        if old.name not in out:
            old.unlink()
    manifest = [f"tessel quant cross-check data (generated by scripts/xcheck_quant.py)", common.strip(), ""]
    manifest += summary + [""]
    total_size = 0
    for fname in sorted(out):
        (args.out / fname).write_bytes(out[fname])
        total_size += len(out[fname])
        manifest.append(f"{hashlib.sha256(out[fname]).hexdigest()}  {fname}  ({len(out[fname])} bytes)")
    manifest.append(f"total {total_size} bytes")
    (args.out / "MANIFEST.txt").write_text("\n".join(manifest) + "\n", encoding="utf-8")
    print("\n".join(summary), file=sys.stderr)
    print(f"wrote {len(out)} files, {total_size} bytes, to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
