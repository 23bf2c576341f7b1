#!/usr/bin/env python3
"""`tessel serve` against llama.cpp's llama-server, in one run on this machine (issue 27).

    python3 bench/server.py [--tessel build/bin/tessel] [--llama-server BIN] [-m MODEL] [-t 2] [--reps 2]
                            [-np 8] [-c 4096] [--out FILE]

Both servers load the same model (default: tessel's cached default model, scripts/default-model.sh)
with the same threads, slots (-np) and total context (-c, split over the slots), on free 127.0.0.1
ports; llama-server is the peer build of the pinned llama-cpp-python sdist (scripts/peer/build-llama.sh),
run with its defaults otherwise (its prompt cache, cache_prompt, is on by default). Measured:
  - aggregate generated tokens/s with 1, 4 and 8 concurrent streams: each stream one non-stream
    /v1/completions request, its own fixed prompt, max_tokens 64, greedy; the model's end-of-generation
    and control tokens banned with logit_bias -100 (and "ignore_eos": true, which llama-server reads) so
    every stream generates all 64; aggregate = sum(usage.completion_tokens) / wall time from the first
    request sent to the last answer;
  - time to first token (send -> first stream chunk with text) on a ~400-token shared prefix plus a
    short suffix: "uncached" = a prefix no slot has seen (its second token, a number, changes at each
    measurement), "cached" = the same prefix again with another suffix; a third server, tessel with
    --no-prompt-cache, runs the same pairs as a cross-check (its "cached" should match its uncached).
Every configuration runs --reps times, alternating tessel and llama-server, so drift hits both alike;
the table has the median (min-max) of the reps and the issue's bars. Standard library only.
"""
from __future__ import annotations

import argparse
import itertools
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gguf_tokens import eog_token_ids  # noqa: E402
from server_client import Server, free_port  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STREAMS = (1, 4, 8)
MAX_TOKENS = 64
PREFIX_TOKENS = 400
TTFT_PAIRS = 3  # uncached / cached pairs per server and rep

# One fixed prompt per stream: plain text, no chat template, so both servers see the same tokens.
PROMPTS = [
    "The lighthouse keeper climbed the stairs every evening and",
    "In the old market of the city, the spice merchant told us",
    "The first thing to know about growing tomatoes is that",
    "Our train left the station at dawn, and through the window we saw",
    "A good recipe for bread starts with flour, water and",
    "The history of the bicycle begins in the early nineteenth century, when",
    "When the storm reached the harbour, the fishermen",
    "The library had a secret room behind the shelf of atlases, where",
]

WORDS = ["crates", "barrels", "boxes", "sacks", "bundles", "cases", "jars", "bottles"]
GOODS = ["apples", "copper wire", "wool", "salt", "lamp oil", "paper", "nails", "rice"]


def sentence(i: int) -> str:
    return (f"Shelf {i} in aisle {i % 7 + 1} holds {i % 5 + 2} {WORDS[i % len(WORDS)]} of "
            f"{GOODS[(i * 3) % len(GOODS)]}, checked on day {i * 3 % 28 + 1}. ")


def prefix(nonce: int, sentences: int) -> str:
    return f"Inventory {nonce}. " + "".join(sentence(i) for i in range(sentences))


def suffix(j: int) -> str:
    return f"\nQuestion {j}: which shelf holds the most {GOODS[j % len(GOODS)]}?\nAnswer:"


def banned(eog: list[int]) -> dict:
    return {"logit_bias": {str(t): -100 for t in eog}, "ignore_eos": True}


def aggregate_tps(server: Server, streams: int, extra: dict) -> tuple[float, int]:
    """Runs `streams` concurrent requests; (generated tokens / wall second, total generated tokens)."""
    results: list[tuple[float, float, int]] = [None] * streams  # (sent, answered, completion tokens)
    errors: list[BaseException] = []
    start = threading.Barrier(streams)

    def one(i: int) -> None:
        try:
            body = {"prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": MAX_TOKENS, "temperature": 0, **extra}
            start.wait()
            t0 = time.perf_counter()
            answer = server.complete(body)
            results[i] = (t0, time.perf_counter(), int(answer["usage"]["completion_tokens"]))
        except BaseException as e:  # reported by the caller
            errors.append(e)
            start.abort()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{server.name}, {streams} streams: {errors[0]}")
    tokens = sum(r[2] for r in results)
    wall = max(r[1] for r in results) - min(r[0] for r in results)
    return tokens / wall, tokens


def ttft_pair(server: Server, nonce: int, sentences: int, extra: dict) -> tuple[float, float, dict]:
    """Seconds to the first token for a new prefix, then for the same prefix with another suffix."""
    text = prefix(nonce, sentences)
    body = {"max_tokens": 4, "temperature": 0, **extra}
    cold, _ = server.first_token(dict(body, prompt=text + suffix(2 * nonce)))
    warm, last = server.first_token(dict(body, prompt=text + suffix(2 * nonce + 1)))
    return cold, warm, last.get("timings", {})


def calibrate(server: Server, extra: dict) -> tuple[int, int]:
    """The fewest sentences whose prefix reaches PREFIX_TOKENS tokens; (sentences, prompt tokens)."""
    sentences = 10
    while True:
        answer = server.complete({"prompt": prefix(999999, sentences), "max_tokens": 1, "temperature": 0, **extra})
        n = int(answer["usage"]["prompt_tokens"])
        if n >= PREFIX_TOKENS:
            return sentences, n
        per = max(1.0, (n - 5) / sentences)
        sentences += max(1, int((PREFIX_TOKENS - n) / per))


def cpu_lines(tessel: str) -> list[str]:
    p = subprocess.run([tessel, "info", "--system"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    keys = ("cpu:", "arch:", "physical cores:", "usable tier:")
    return [l for l in p.stdout.splitlines() if l.startswith(keys)]


def cell(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{med:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})" if len(values) > 1 else f"{med:{fmt}}"


def ratio(a: list[float], b: list[float]) -> float | None:
    return statistics.median(a) / statistics.median(b) if a and b else None


def check(value: float | None, bar: float, at_most: bool = False) -> str:
    if value is None:
        return "-"
    ok = value <= bar if at_most else value >= bar
    return f"{value:.2f} {'pass' if ok else 'FAIL'}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", default=str(REPO / "build/bin/tessel"))
    ap.add_argument("--llama-server", default=None, help="default: scripts/peer/build-llama.sh's llama-server")
    ap.add_argument("-m", "--model", default=None, help="default: scripts/default-model.sh")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-np", "--parallel", type=int, default=8)
    ap.add_argument("-c", "--ctx", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", default=None, help="also write the record (command, host, table) to this file")
    args = ap.parse_args()

    tessel = args.tessel
    model = args.model or subprocess.run(["bash", str(REPO / "scripts/default-model.sh"), tessel],
                                         stdout=subprocess.PIPE, check=True, text=True).stdout.strip()
    llama = args.llama_server or str(Path(subprocess.run(["bash", str(REPO / "scripts/peer/build-llama.sh")],
                                                         stdout=subprocess.PIPE, check=True, text=True)
                                         .stdout.strip()) / "llama-server")
    extra = banned(eog_token_ids(Path(model)))
    common = ["-m", model, "-t", str(args.threads), "-np", str(args.parallel), "-c", str(args.ctx), "--host", "127.0.0.1"]
    logs = Path(tempfile.mkdtemp(prefix="tessel-bench-server-"))

    def make(name: str, cmd: list[str]) -> Server:
        port = free_port()
        return Server(name, cmd + common + ["--port", str(port)], port, logs / f"{name}.log")

    servers = [make("tessel", [tessel, "serve"]), make("llama-server", [llama])]
    nocache = make("tessel-no-cache", [tessel, "serve", "--no-prompt-cache"])
    tps: dict[tuple[str, int], list[float]] = {}
    cold: dict[str, list[float]] = {}
    warm: dict[str, list[float]] = {}
    cache_n: dict[str, set] = {}
    nonces = itertools.count(1)
    load_before = os.getloadavg()
    try:
        for s in servers:
            print(f"server: starting {s.name}: {shlex.join(s.cmd)}", file=sys.stderr)
            s.start()
            aggregate_tps(s, args.parallel, extra)  # warm-up: every slot once
        sentences, prefix_tokens = calibrate(servers[0], extra)
        for streams in STREAMS:
            for rep in range(args.reps):
                for s in servers:
                    value, tokens = aggregate_tps(s, streams, extra)
                    if tokens != streams * MAX_TOKENS:
                        print(f"server: {s.name} generated {tokens} tokens, not {streams * MAX_TOKENS}", file=sys.stderr)
                    tps.setdefault((s.name, streams), []).append(value)
                    print(f"server: {s.name:13s} {streams} streams rep {rep + 1}: {value:7.1f} t/s", file=sys.stderr)

        def ttft_round(s: Server) -> None:
            for _ in range(TTFT_PAIRS):
                c, w, timings = ttft_pair(s, next(nonces), sentences, extra)
                cold.setdefault(s.name, []).append(c * 1e3)
                warm.setdefault(s.name, []).append(w * 1e3)
                cache_n.setdefault(s.name, set()).add(timings.get("cache_n"))
                print(f"server: {s.name:13s} TTFT {c * 1e3:7.1f} ms new prefix, {w * 1e3:7.1f} ms again "
                      f"(cache_n {timings.get('cache_n')}, prompt_n {timings.get('prompt_n')})", file=sys.stderr)

        for rep in range(args.reps):
            for s in servers:
                ttft_round(s)
        for s in servers:
            s.stop()
        print(f"server: starting {nocache.name}: {shlex.join(nocache.cmd)}", file=sys.stderr)
        nocache.start()
        for rep in range(args.reps):
            ttft_round(nocache)
    except RuntimeError as e:
        print(f"server: {e}\n(logs in {logs})", file=sys.stderr)
        return 1
    finally:
        for s in servers + [nocache]:
            s.stop()

    shutil.rmtree(logs, ignore_errors=True)  # the servers' logs are kept only when a run fails
    load_after = os.getloadavg()
    t, l = "tessel", "llama-server"
    rows = [f"| aggregate t/s, {n} stream{'s' if n > 1 else ''} | {cell(tps[(t, n)], '.1f')} | "
            f"{cell(tps[(l, n)], '.1f')} | {ratio(tps[(t, n)], tps[(l, n)]):.2f} |" for n in STREAMS]
    rows.append(f"| TTFT ms, new {prefix_tokens}-token prefix | {cell(cold[t], '.1f')} | {cell(cold[l], '.1f')} | "
                f"{ratio(cold[t], cold[l]):.2f} |")
    rows.append(f"| TTFT ms, same prefix again | {cell(warm[t], '.1f')} | {cell(warm[l], '.1f')} | "
                f"{ratio(warm[t], warm[l]):.2f} |")
    rows.append(f"| TTFT ms, same prefix again, tessel --no-prompt-cache | {cell(warm[nocache.name], '.1f')} | - | - |")
    rows.append(f"| cache_n reported on the repeat | {sorted(cache_n[t], key=str)} | {sorted(cache_n[l], key=str)} | - |")
    table = ["| config | tessel | llama-server | tessel / llama-server |", "| --- | --- | --- | --- |", *rows]
    bars = ["| bar | tessel | llama-server |", "| --- | --- | --- |",
            f"| aggregate 4 streams / 1 stream >= 2.5 | {check(ratio(tps[(t, 4)], tps[(t, 1)]), 2.5)} | "
            f"{check(ratio(tps[(l, 4)], tps[(l, 1)]), 2.5)} |",
            f"| TTFT cached / uncached <= 0.3 | {check(ratio(warm[t], cold[t]), 0.3, True)} | "
            f"{check(ratio(warm[l], cold[l]), 0.3, True)} |",
            *[f"| tessel / llama-server aggregate t/s >= 1.0, {n} stream{'s' if n > 1 else ''} | "
              f"{check(ratio(tps[(t, n)], tps[(l, n)]), 1.0)} | - |" for n in STREAMS]]
    notes = (f"Median (min-max) over {args.reps} reps; TTFT over {args.reps * TTFT_PAIRS} pairs per server. "
             f"-t {args.threads} -np {args.parallel} -c {args.ctx}, max_tokens {MAX_TOKENS}, greedy, "
             f"EOG/control tokens banned (logit_bias -100, ignore_eos).")
    report = "\n".join(table) + "\n\n" + "\n".join(bars) + "\n\n" + notes + "\n"
    print(report)
    if args.out:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                             text=True).stdout.strip()
        head = [f"# tessel serve vs llama-server (issue 27), {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", "",
                "```sh", "python3 " + shlex.join(["bench/server.py", *sys.argv[1:]]), "```", "",
                *[f"- {l}" for l in cpu_lines(tessel)],
                f"- load average (1, 5, 15 min) before the run: {' '.join(f'{x:.2f}' for x in load_before)}, "
                f"after: {' '.join(f'{x:.2f}' for x in load_after)}",
                f"- tessel revision {rev}; llama-server: {llama}", f"- model: {Path(model).name}", ""]
        Path(args.out).write_text("\n".join(head) + "\n" + report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
