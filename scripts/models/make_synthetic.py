#!/usr/bin/env python3
"""Write shape-true GGUF files with random weights for the golden tests of qwen3, qwen2 and llama 3.x.

    "$(bash scripts/pyenv.sh reference)" scripts/models/make_synthetic.py \
        --vocab-dir VOCAB_DIR --out-dir OUT_DIR [--update-sha256] NAME...

No small Qwen3, Qwen2 or Llama-3 GGUF ships in a package, so these files carry the hyper-parameters,
tensor names, shapes and vocabularies of Qwen3-0.6B, Qwen2-0.5B and Llama-3.2-1B with 2 layers of
random weights. llama.cpp's logits on them are the golden data (scripts/reference/make_reference.py);
scripts/models.sh runs this script into tessel's cache (models/synthetic/).

NAME: qwen3-0.6b-shape, qwen2-0.5b-shape, llama-3.2-1b-shape (the file is NAME.gguf).
VOCAB_DIR: vendor/llama.cpp/models of the pinned llama-cpp-python sdist (scripts/peer/fetch-sdist.sh);
every tokenizer.* key of ggml-vocab-qwen2.gguf / ggml-vocab-llama-bpe.gguf is copied.

Keys and tensor names are those llama.cpp's convert_hf_to_gguf.py writes for these models
(conversion/base.py, llama.py, qwen.py of the sdist; gguf-py's constants): head_dim as
attention.key_length / value_length, tied output (no output.weight), and for Llama 3.2 the llama3
rope scaling as the F32 tensor rope_freqs.weight [head_dim / 2] (factor 32, low_freq_factor 1,
high_freq_factor 4, original context 8192, computed as the converter's generate_extra_tensors does)
plus llama.vocab_size and llama.rope.dimension_count; for rope_type llama3 the converter writes no
*.rope.scaling.* key, so neither does this script.

Weights: embeddings and FFN matrices Q4_0, attention matrices Q8_0 (gguf-py's quantizers), norms
F32 near 1, Qwen2's Q/K/V biases F32. Each tensor draws from numpy's PCG64 seeded with the model's
seed and the CRC-32 of its name, so a file depends only on this script and the pins
(numpy==2.4.6, gguf==0.19.0). Scales: each residual branch (attention, FFN) adds about 8 times the
embedding's RMS, so the context decides the logits, not the current token's own embedding (with
branches as small as the embedding, top-1 was the input token at most positions); attention scores
have a standard deviation near 1.5 (not uniform attention); the logits (tied embeddings after the
final norm) a standard deviation near 8, so llama.cpp's top-1/top-2 margin over a 128k-152k
vocabulary is above 0.5 at about 75 % of the positions.

Each file is written to a temporary name in OUT_DIR, its sha256 compared with
scripts/models/synthetic.sha256 and only then renamed into place: a mismatch is an error naming
the file and both hashes, and leaves nothing behind (--update-sha256 rewrites that line instead,
for a deliberate change of this script).
"""
from __future__ import annotations

import argparse
import hashlib
import math
import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHA_FILE = Path(__file__).resolve().with_name("synthetic.sha256")
N_LAYER = 2
LOGIT_STD = 8.0      # of the logits: embedding rows have std LOGIT_STD / sqrt(n_embd)
QK_STD = 1.2         # of each q and k component before rope (scores ~ QK_STD^2 after the 1/sqrt(d) scale)
BRANCH_RMS = 8.0     # of a residual branch's output relative to the embedding's RMS
ROWS_PER_CHUNK = 8192


@dataclass(frozen=True)
class Shape:
    arch: str
    hf_name: str          # the model whose shapes these are
    vocab: str            # ggml-vocab-*.gguf of the sdist
    n_embd: int
    n_ff: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ctx: int
    freq_base: float
    rms_eps: float
    qk_norm: bool = False
    qkv_bias: bool = False
    llama3_rope: bool = False
    seed: int = 0


MODELS = {
    "qwen3-0.6b-shape": Shape("qwen3", "Qwen3-0.6B", "ggml-vocab-qwen2.gguf", 1024, 3072, 16, 8, 128, 40960,
                              1e6, 1e-6, qk_norm=True, seed=3),
    "qwen2-0.5b-shape": Shape("qwen2", "Qwen2-0.5B", "ggml-vocab-qwen2.gguf", 896, 4864, 14, 2, 64, 32768,
                              1e6, 1e-6, qkv_bias=True, seed=2),
    "llama-3.2-1b-shape": Shape("llama", "Llama-3.2-1B", "ggml-vocab-llama-bpe.gguf", 2048, 8192, 32, 8, 64, 131072,
                                500000.0, 1e-5, llama3_rope=True, seed=1),
}

# Llama 3.2's rope_scaling (config.json): rope_type llama3
LLAMA3_FACTOR, LLAMA3_LOW, LLAMA3_HIGH, LLAMA3_ORIG_CTX = 32.0, 1.0, 4.0, 8192


def llama3_rope_factors(head_dim: int, base: float) -> np.ndarray:
    """Per rotated pair, the divisor of its frequency under llama3 rope scaling (rope_freqs.weight)."""
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)))
    low_wavelen, high_wavelen = LLAMA3_ORIG_CTX / LLAMA3_LOW, LLAMA3_ORIG_CTX / LLAMA3_HIGH
    out = []
    for f in freqs.astype(np.float64):
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(LLAMA3_FACTOR)
        else:
            smooth = (LLAMA3_ORIG_CTX / wavelen - LLAMA3_LOW) / (LLAMA3_HIGH - LLAMA3_LOW)
            out.append(1.0 / ((1 - smooth) / LLAMA3_FACTOR + smooth))
    return np.asarray(out, dtype=np.float32)


class Tensors:
    """Random tensors of one model, each seeded by (model seed, CRC-32 of its name)."""

    def __init__(self, writer, seed: int):
        self.w = writer
        self.seed = seed

    def rng(self, name: str) -> np.random.Generator:
        return np.random.default_rng([self.seed, zlib.crc32(name.encode())])

    def matrix(self, name: str, rows: int, cols: int, std: float, qtype) -> None:
        """ne [cols, rows]: N(0, std^2) quantized to qtype, drawn and quantized in chunks of rows."""
        from gguf import quants  # noqa: PLC0415

        rng = self.rng(name)
        parts = []
        for r0 in range(0, rows, ROWS_PER_CHUNK):
            n = min(ROWS_PER_CHUNK, rows - r0)
            x = rng.standard_normal((n, cols), dtype=np.float32) * np.float32(std)
            parts.append(quants.quantize(x, qtype))
        self.w.add_tensor(name, np.concatenate(parts), raw_dtype=qtype)

    def vector(self, name: str, n: int, mean: float, std: float) -> None:
        """F32 [n] of N(mean, std^2)."""
        x = np.float32(mean) + self.rng(name).standard_normal(n, dtype=np.float32) * np.float32(std)
        self.w.add_tensor(name, x.astype(np.float32))


# GGUF value types (gguf-py's GGUFValueType numbering) -> struct format of a scalar
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def read_metadata(path: Path) -> list[tuple[str, int, int | None, object]]:
    """(key, type, array item type, value) of every key of a GGUF v2/v3 file. gguf-py's
    GGUFReader takes ~20 s on a 150k-token vocabulary; this reads only the metadata, in a second."""
    data = path.read_bytes()
    if data[:4] != b"GGUF" or struct.unpack_from("<I", data, 4)[0] not in (2, 3):
        sys.exit(f"make_synthetic: {path} is not a GGUF v2/v3 file")
    n_kv = struct.unpack_from("<Q", data, 16)[0]
    off = 24

    def string() -> str:
        nonlocal off
        n = struct.unpack_from("<Q", data, off)[0]
        off += 8 + n
        return data[off - n:off].decode("utf-8")

    def scalar(vtype: int):
        nonlocal off
        if vtype == _STRING:
            return string()
        fmt = _SCALAR[vtype]
        off += struct.calcsize(fmt)
        return struct.unpack_from(fmt, data, off - struct.calcsize(fmt))[0]

    out = []
    for _ in range(n_kv):
        key = string()
        vtype = struct.unpack_from("<I", data, off)[0]
        off += 4
        if vtype != _ARRAY:
            out.append((key, vtype, None, scalar(vtype)))
            continue
        sub, n = struct.unpack_from("<IQ", data, off)
        off += 12
        if sub == _STRING:
            out.append((key, vtype, sub, [string() for _ in range(n)]))
        else:
            size = struct.calcsize(_SCALAR[sub])
            out.append((key, vtype, sub, np.frombuffer(data, _SCALAR[sub], n, off).tolist()))
            off += size * n
    return out


def copy_tokenizer(writer, vocab_file: Path) -> int:
    """Copies every tokenizer.* key of vocab_file; returns the number of tokens."""
    from gguf import GGUFValueType  # noqa: PLC0415

    n_vocab = 0
    for key, vtype, sub, value in read_metadata(vocab_file):
        if not key.startswith("tokenizer."):
            continue
        writer.add_key_value(key, value, GGUFValueType(vtype), None if sub is None else GGUFValueType(sub))
        if key == "tokenizer.ggml.tokens":
            n_vocab = len(value)
    if not n_vocab:
        sys.exit(f"make_synthetic: {vocab_file} has no tokenizer.ggml.tokens")
    return n_vocab


def write_model(name: str, s: Shape, vocab_dir: Path, path: Path) -> None:
    import gguf  # noqa: PLC0415
    from gguf import GGMLQuantizationType as Q  # noqa: PLC0415

    w = gguf.GGUFWriter(path, s.arch)
    w.add_type("model")
    w.add_name(f"{s.hf_name} shape, {N_LAYER} layers of random weights (tessel {name})")
    w.add_block_count(N_LAYER)
    w.add_context_length(s.n_ctx)
    w.add_embedding_length(s.n_embd)
    w.add_feed_forward_length(s.n_ff)
    w.add_head_count(s.n_head)
    w.add_head_count_kv(s.n_head_kv)
    w.add_rope_freq_base(s.freq_base)
    w.add_layer_norm_rms_eps(s.rms_eps)
    if s.head_dim != s.n_embd // s.n_head or s.arch == "llama":
        w.add_key_length(s.head_dim)
        w.add_value_length(s.head_dim)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    n_vocab = copy_tokenizer(w, vocab_dir / s.vocab)
    if s.arch == "llama":
        w.add_vocab_size(n_vocab)
        w.add_rope_dimension_count(s.head_dim)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    t = Tensors(w, s.seed)
    n_q, n_kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    embd_std = LOGIT_STD / math.sqrt(s.n_embd)
    # a branch output of RMS about BRANCH_RMS * embd_std: attention values have RMS ~1 before the
    # averaging over positions, the SwiGLU product about 0.6 of its inputs' RMS of 1
    out_std = BRANCH_RMS * embd_std / math.sqrt(n_q)
    down_std = BRANCH_RMS * embd_std / (0.6 * math.sqrt(s.n_ff))
    in_std = 1.0 / math.sqrt(s.n_embd)  # rows of an input projection after RMS norm: outputs of std 1

    if s.llama3_rope:
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(s.head_dim, s.freq_base))
    t.matrix("token_embd.weight", n_vocab, s.n_embd, embd_std, Q.Q4_0)
    for i in range(N_LAYER):
        b = f"blk.{i}."
        t.vector(b + "attn_norm.weight", s.n_embd, 1.0, 0.1)
        t.matrix(b + "attn_q.weight", n_q, s.n_embd, QK_STD * in_std, Q.Q8_0)
        t.matrix(b + "attn_k.weight", n_kv, s.n_embd, QK_STD * in_std, Q.Q8_0)
        t.matrix(b + "attn_v.weight", n_kv, s.n_embd, in_std, Q.Q8_0)
        if s.qkv_bias:
            t.vector(b + "attn_q.bias", n_q, 0.0, 0.3)
            t.vector(b + "attn_k.bias", n_kv, 0.0, 0.3)
            t.vector(b + "attn_v.bias", n_kv, 0.0, 0.1)
        if s.qk_norm:  # RMS norms of each head's q and k: their std becomes the weights' (~QK_STD)
            t.vector(b + "attn_q_norm.weight", s.head_dim, QK_STD, 0.1)
            t.vector(b + "attn_k_norm.weight", s.head_dim, QK_STD, 0.1)
        t.matrix(b + "attn_output.weight", s.n_embd, n_q, out_std, Q.Q8_0)
        t.vector(b + "ffn_norm.weight", s.n_embd, 1.0, 0.1)
        t.matrix(b + "ffn_gate.weight", s.n_ff, s.n_embd, in_std, Q.Q4_0)
        t.matrix(b + "ffn_up.weight", s.n_ff, s.n_embd, in_std, Q.Q4_0)
        t.matrix(b + "ffn_down.weight", s.n_embd, s.n_ff, down_std, Q.Q4_0)
    t.vector("output_norm.weight", s.n_embd, 1.0, 0.1)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def read_sha_file() -> dict[str, str]:
    out = {}
    if SHA_FILE.exists():
        for line in SHA_FILE.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                digest, file = line.split()
                out[file] = digest
    return out


def write_sha_file(sums: dict[str, str]) -> None:
    lines = ["# sha256 of the files scripts/models/make_synthetic.py writes (checked on every run)"]
    lines += [f"{sums[f]}  {f}" for f in sorted(sums)]
    SHA_FILE.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("names", nargs="+", choices=sorted(MODELS), metavar="NAME")
    ap.add_argument("--vocab-dir", type=Path, required=True)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--update-sha256", action="store_true", help="record the hashes instead of checking them")
    args = ap.parse_args()

    sums = read_sha_file()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    failed = False
    for name in args.names:
        file = f"{name}.gguf"
        out = args.out_dir / file
        tmp = args.out_dir / f".{file}.tmp"
        try:
            write_model(name, MODELS[name], args.vocab_dir, tmp)
            got = sha256_file(tmp)
            if args.update_sha256:
                sums[file] = got
            elif sums.get(file) != got:
                print(f"make_synthetic: {file}: sha256 {got}, expected {sums.get(file, '(none recorded)')} "
                      f"in {SHA_FILE}", file=sys.stderr)
                failed = True
                continue
            tmp.replace(out)
            print(f"make_synthetic: {out} ({out.stat().st_size / 1e6:.1f} MB, sha256 {got})", file=sys.stderr)
        finally:
            tmp.unlink(missing_ok=True)
    if args.update_sha256:
        write_sha_file(sums)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
