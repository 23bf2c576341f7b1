#!/usr/bin/env python3
"""tessel against llama.cpp, side by side, in one run on this machine.

    python3 bench/compare.py [--threads 2] [--reps 5] [-p 512] [-n 128] [--types Q4_0,Q4_1,Q8_0,Q4_K]
                             [--models gemma3-270m] [--plot FILE.png]

What it does:
  1. takes llama.cpp's llama-bench from the peer build of the pinned llama-cpp-python sdist
     (scripts/peer/build-llama.sh: built once into tessel's cache, native ISA);
  2. makes Q4_0, Q4_1, Q8_0 and Q4_K_M (`tessel quantize ... Q4_K`: llama-quantize's Q4_K_M rules)
     variants of the default model (SmolLM2-135M-Instruct, fetched by tessel on first use) with
     `tessel quantize --allow-requantize`, cached next to the model in
     ${XDG_CACHE_HOME:-~/.cache}/tessel/bench/; then the models --models names as they are
     (scripts/models.sh fetches them: by default gemma3-270m, Google's Q4_K_M file);
  3. measures the read bandwidth at --threads threads (bench_kernels `Read/MiB:1024`, the probe of
     bench/README.md) before and after the rounds, and takes the larger;
  4. runs `tessel bench` and `llama-bench` on the same files, with the same threads and tests
     (pp512, tg128 by default), one repetition per call, alternating the tools for --reps rounds,
     so that drift of the machine's speed hits both alike; each call does its own warm-up;
  5. prints one markdown table (model, test, llama.cpp t/s, tessel t/s, ratio tessel/llama.cpp;
     t/s as mean ± sample stddev over the rounds; for tg, each engine's fraction of the bandwidth
     bound = read bandwidth / the model's weight bytes, every weight being read once per token)
     and writes it to bench/results/latest.md; --plot draws it (matplotlib).

Each engine runs its best working configuration: tessel its default packed CPU path, llama-bench
its default (--repack 1: ggml's repacked CPU buffer types). Where llama-bench dies with a signal
with repack on (ggml's AMX kernels fault on some AMX hosts, scripts/README.md), that model is
measured with --repack 0 for every round, and the table's "llama.cpp config" column says so.
Standard library only (but for --plot). Exit status 1 when a tool fails (its output is shown).
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


def llama_config(llama_bench: str, model: Path, common: list[str]) -> list[str]:
    """llama-bench's flags for model: repack on, unless that run dies with a signal (then off)."""
    cmd = [llama_bench, "-m", str(model), "--repack", "1", *common]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode >= 0:
        if p.returncode != 0:  # an ordinary failure is a failure, not a configuration to avoid
            sys.stderr.write(p.stdout + p.stderr)
            sys.exit(f"compare: llama.cpp failed (exit {p.returncode}): {' '.join(cmd)}")
        return ["--repack", "1"]
    print(f"compare: llama-bench died with signal {-p.returncode} with repack on for {model.name}: "
          "measuring it with --repack 0", file=sys.stderr)
    return ["--repack", "0"]


def read_bandwidth(bench_kernels: str, threads: int) -> float:
    """Bytes/s of bench_kernels' read probe (1 GiB, `threads` threads)."""
    out = run([bench_kernels, f"--benchmark_filter=^Read/MiB:1024/threads:{threads}/", "--benchmark_format=json"],
              "bench_kernels Read")
    runs = [b for b in json.loads(out)["benchmarks"] if "bytes" in b]  # the probe's counter: bytes read per second
    if not runs:
        sys.exit(f"compare: bench_kernels has no Read/MiB:1024/threads:{threads} run (threads it probes: see bench/README.md)")
    return max(b["bytes"] for b in runs)


def weight_bytes(tessel: str, model: Path) -> int:
    """Bytes of the model's tensor data (tessel info --json)."""
    return sum(t["bytes"] for t in json.loads(run([tessel, "info", str(model), "--json"], "tessel info"))["tensors"])


def default_model(tessel: str) -> Path:
    model = cache_dir() / "models" / MODEL_FILE
    if not model.exists():
        print(f"compare: fetching the default model with {tessel}", file=sys.stderr)
        run([tessel, "run", "-p", "hi", "-n", "1"], "fetching the default model")
    return model


def cached_model(name: str, tessel: str) -> Path:
    """Test model `name` of scripts/models.sh (fetched or made into the cache when missing)."""
    return Path(run(["bash", str(REPO / "scripts/models.sh"), name, tessel], f"scripts/models.sh {name}").strip())


def variant(tessel: str, source: Path, qtype: str, threads: int) -> Path:
    """The default model quantized to qtype by tessel quantize (made once, then cached)."""
    name = {"Q4_K": "Q4_K_M"}.get(qtype, qtype)  # tessel quantize's Q4_K is llama-quantize's Q4_K_M
    out = cache_dir() / "bench" / f"SmolLM2-135M-Instruct.{name}.gguf"
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
    ap.add_argument("--types", default="Q4_0,Q4_1,Q8_0,Q4_K",
                    help="comma-separated `tessel quantize` types (Q4_K: the Q4_K_M mix; "" for none)")
    ap.add_argument("--models", default="gemma3-270m",
                    help="comma-separated scripts/models.sh names measured as they are ('' for none)")
    ap.add_argument("--tessel", default=str(REPO / "build/bin/tessel"))
    ap.add_argument("--bench-kernels", default=None, help="default: bench_kernels next to --tessel")
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/latest.md")
    ap.add_argument("--plot", type=Path, default=None, help="also draw the table to this PNG (needs matplotlib)")
    args = ap.parse_args()
    if args.threads < 1 or args.reps < 1 or args.p < 0 or args.n < 0 or args.p + args.n == 0:
        sys.exit("compare: --threads and --reps must be >= 1, -p/-n >= 0 and not both 0")
    if not os.access(args.tessel, os.X_OK):
        sys.exit(f"compare: {args.tessel} is not an executable (build first: scripts/build.sh, or pass --tessel)")
    bench_kernels = args.bench_kernels or str(Path(args.tessel).with_name("bench_kernels"))
    if not os.access(bench_kernels, os.X_OK):
        sys.exit(f"compare: {bench_kernels} is not an executable (build target bench_kernels, or pass --bench-kernels)")
    if args.plot:
        try:
            import matplotlib  # noqa: F401  (checked before the long run, used at its end)
        except ImportError:
            sys.exit("compare: --plot needs matplotlib: run it with $(bash scripts/pyenv.sh plot)")

    bin_dir = Path(run(["bash", str(REPO / "scripts/peer/build-llama.sh")], "building the llama.cpp peer").strip())
    llama_bench = str(bin_dir / "llama-bench")
    source = default_model(args.tessel)
    models = [variant(args.tessel, source, t, args.threads) for t in args.types.split(",") if t]
    models += [cached_model(name, args.tessel) for name in args.models.split(",") if name]

    tests = [(args.p, 0)] if args.p else []
    tests += [(0, args.n)] if args.n else []
    common = ["-p", str(args.p), "-n", str(args.n), "-t", str(args.threads), "-r", "1", "-o", "json"]
    configs = {m: llama_config(llama_bench, m, common) for m in models}
    sizes = {m: weight_bytes(args.tessel, m) for m in models}
    bandwidth = read_bandwidth(bench_kernels, args.threads)
    got: dict[tuple[str, Path, tuple[int, int]], list[float]] = {}
    for rnd in range(args.reps):
        for m in models:
            print(f"compare: round {rnd + 1}/{args.reps}: {m.name}", file=sys.stderr)
            for tool, cmd in (("llama.cpp", [llama_bench, "-m", str(m), *configs[m], *common]),
                              ("tessel", [args.tessel, "bench", "-m", str(m), *common])):
                for key, ts in samples(json.loads(run(cmd, tool))).items():
                    got.setdefault((tool, m, key), []).append(ts)
    bandwidth = max(bandwidth, read_bandwidth(bench_kernels, args.threads))

    rows = []  # (model, test, llama.cpp samples, tessel samples, bound t/s or None)
    for m in models:
        for key in tests:
            bound = bandwidth / sizes[m] if key[0] == 0 else None
            rows.append((m, test_name(*key), got[("llama.cpp", m, key)], got[("tessel", m, key)], bound))
    lines = [f"tessel vs llama.cpp (llama-cpp-python's pinned llama.cpp), {args.threads} threads, "
             f"{args.reps} interleaved rounds; t/s = mean ± stddev; read bandwidth {bandwidth / 1e9:.1f} GB/s "
             f"(bench_kernels Read/MiB:1024/threads:{args.threads}); tg bound = bandwidth / weight bytes",
             "",
             "| model | weights MiB | llama.cpp config | test | llama.cpp t/s | tessel t/s | tessel / llama.cpp "
             "| llama.cpp / bound | tessel / bound |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for m, test, ref, ours, bound in rows:
        frac = (lambda v: f"{statistics.mean(v) / bound:.0%}") if bound else (lambda v: "")
        lines.append(f"| {m.name} | {sizes[m] / 2**20:.1f} | {' '.join(configs[m])} | {test} | {fmt(ref)} | "
                     f"{fmt(ours)} | {statistics.mean(ours) / statistics.mean(ref):.2f} | {frac(ref)} | {frac(ours)} |")
    table = "\n".join(lines) + "\n"
    print(table, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table, encoding="utf-8")
    print(f"compare: wrote {args.out}", file=sys.stderr)
    if args.plot:
        plot(rows, args.plot, f"{args.threads} threads, read bandwidth {bandwidth / 1e9:.1f} GB/s")
        print(f"compare: drew {args.plot}", file=sys.stderr)


def plot(rows: list, path: Path, subtitle: str) -> None:
    """One panel per test: t/s of both engines per model (bars with stddev), tg's bound as a line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tests = list(dict.fromkeys(r[1] for r in rows))
    fig, axes = plt.subplots(1, len(tests), figsize=(6 * len(tests), 4.5), squeeze=False)
    for ax, test in zip(axes[0], tests):
        sel = [r for r in rows if r[1] == test]
        xs = range(len(sel))
        for offset, idx, label in ((-0.2, 2, "llama.cpp"), (0.2, 3, "tessel")):
            means = [statistics.mean(r[idx]) for r in sel]
            sds = [statistics.stdev(r[idx]) if len(r[idx]) > 1 else 0.0 for r in sel]
            ax.bar([x + offset for x in xs], means, width=0.4, yerr=sds, capsize=3, label=label)
        if sel[0][4]:
            ax.plot([x for x in xs], [r[4] for r in sel], "k_", markersize=40, mew=2, label="bandwidth bound")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r[0].name.replace("SmolLM2-135M-Instruct.", "").replace(".gguf", "") for r in sel])
        ax.set_ylabel("tokens/s")
        ax.set_title(test)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.25)  # room above the bars and bound marks for the legend
        ax.legend(loc="upper center", ncol=3, fontsize="small")
    fig.suptitle(subtitle)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
