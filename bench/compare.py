#!/usr/bin/env python3
"""tessel against llama.cpp, side by side, in one run on this machine.

    python3 bench/compare.py [--threads 2] [--reps 5] [-p 512] [-n 128] [--types Q4_0,Q4_1,Q8_0]

What it does:
  1. takes llama.cpp's llama-bench from the peer build of the pinned llama-cpp-python sdist
     (scripts/peer/build-llama.sh: built once into tessel's cache, native ISA);
  2. makes Q4_0, Q4_1 and Q8_0 variants of the default model (SmolLM2-135M-Instruct, fetched by
     tessel on first use) with `tessel quantize --allow-requantize`, cached next to the model in
     ${XDG_CACHE_HOME:-~/.cache}/tessel/bench/;
  3. runs `tessel bench` and `llama-bench` on the same files, with the same threads and tests
     (pp512, tg128 by default), one repetition per call, alternating the tools for --reps rounds,
     so that drift of the machine's speed hits both alike; each call does its own warm-up;
  4. prints one markdown table (model, test, llama.cpp t/s, tessel t/s, ratio tessel/llama.cpp;
     t/s as mean ± sample stddev over the rounds) and writes it to bench/results/latest.md.

llama-bench runs with --repack 0 (no extra buffer types): on this machine the native build would
run Q4 weights through ggml's AMX kernels, which die with SIGILL (see scripts/README.md). tessel
runs its default packed CPU path (CPU_PACKED weights): each engine's best working configuration.
Standard library only. Exit status 1 when a tool fails (its output is shown).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    # Same rule as tessel (tools/common/model_fetch.cpp): a relative XDG_CACHE_HOME is ignored.
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "tessel"


def run(cmd: list[str], what: str) -> str:
    """Runs cmd, returns its stdout; on failure shows its output and exits 1."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        sys.exit(f"compare: {what} failed (exit {p.returncode}): {' '.join(cmd)}")
    return p.stdout


def default_model(tessel: str) -> Path:
    model = cache_dir() / "models" / MODEL_FILE
    if not model.exists():
        print(f"compare: fetching the default model with {tessel}", file=sys.stderr)
        run([tessel, "run", "-p", "hi", "-n", "1"], "fetching the default model")
    return model


def variant(tessel: str, source: Path, qtype: str, threads: int) -> Path:
    """The default model quantized to qtype by tessel quantize (made once, then cached)."""
    out = cache_dir() / "bench" / f"SmolLM2-135M-Instruct.{qtype}.gguf"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"compare: tessel quantize {qtype} -> {out}", file=sys.stderr)
        run([tessel, "quantize", "--allow-requantize", "-t", str(threads), str(source), str(out), qtype],
            f"tessel quantize {qtype}")
    return out


def samples(records: list[dict]) -> dict[tuple[int, int], float]:
    """(n_prompt, n_gen) -> tokens/s of a one-repetition run's records."""
    return {(int(r["n_prompt"]), int(r["n_gen"])): float(r["avg_ts"]) for r in records}


def test_name(n_prompt: int, n_gen: int) -> str:
    return f"pp{n_prompt}" if n_gen == 0 else f"tg{n_gen}"


def fmt(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} ± {sd:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--threads", "-t", type=int, default=2)
    ap.add_argument("--reps", "-r", type=int, default=5, help="rounds (one repetition of each tool per round)")
    ap.add_argument("-p", type=int, default=512, help="prompt tokens of the pp test")
    ap.add_argument("-n", type=int, default=128, help="generated tokens of the tg test")
    ap.add_argument("--types", default="Q4_0,Q4_1,Q8_0", help="comma-separated weight types")
    ap.add_argument("--tessel", default=str(REPO / "build/bin/tessel"))
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/latest.md")
    args = ap.parse_args()
    if args.threads < 1 or args.reps < 1 or args.p < 0 or args.n < 0 or args.p + args.n == 0:
        sys.exit("compare: --threads and --reps must be >= 1, -p/-n >= 0 and not both 0")
    if not os.access(args.tessel, os.X_OK):
        sys.exit(f"compare: {args.tessel} is not an executable (build first: scripts/build.sh, or pass --tessel)")

    bin_dir = Path(run(["bash", str(REPO / "scripts/peer/build-llama.sh")], "building the llama.cpp peer").strip())
    llama_bench = str(bin_dir / "llama-bench")
    source = default_model(args.tessel)
    models = [variant(args.tessel, source, t, args.threads) for t in args.types.split(",")]

    tests = [(args.p, 0)] if args.p else []
    tests += [(0, args.n)] if args.n else []
    common = ["-p", str(args.p), "-n", str(args.n), "-t", str(args.threads), "-r", "1", "-o", "json"]
    got: dict[tuple[str, Path, tuple[int, int]], list[float]] = {}
    for rnd in range(args.reps):
        for m in models:
            print(f"compare: round {rnd + 1}/{args.reps}: {m.name}", file=sys.stderr)
            for tool, cmd in (("llama.cpp", [llama_bench, "-m", str(m), "--repack", "0", *common]),
                              ("tessel", [args.tessel, "bench", "-m", str(m), *common])):
                for key, ts in samples(json.loads(run(cmd, tool))).items():
                    got.setdefault((tool, m, key), []).append(ts)

    lines = [f"tessel vs llama.cpp (llama-cpp-python's pinned llama.cpp), {args.threads} threads, "
             f"{args.reps} interleaved rounds; t/s = mean ± stddev",
             "",
             "| model | test | llama.cpp t/s | tessel t/s | tessel / llama.cpp |",
             "| --- | --- | ---: | ---: | ---: |"]
    for m in models:
        for key in tests:
            ref, ours = got[("llama.cpp", m, key)], got[("tessel", m, key)]
            lines.append(f"| {m.name} | {test_name(*key)} | {fmt(ref)} | {fmt(ours)} | "
                         f"{statistics.mean(ours) / statistics.mean(ref):.2f} |")
    table = "\n".join(lines) + "\n"
    print(table, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table, encoding="utf-8")
    print(f"compare: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
