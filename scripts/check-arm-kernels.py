#!/usr/bin/env python3
"""Runs the aarch64 matrix-product kernels under QEMU on every CPU model and tier cap CI covers.

usage: check-arm-kernels.py BUILD_DIR   (an aarch64 tree with bin/tessel built)

Per configuration (a QEMU -cpu value, an optional TESSEL_CPU_ISA cap, TESSEL_CPU_MATRIX_THREADS):
  - `tessel info --kernels` must report the expected usable tier and pick, for a 512-row product,
    a Q4_0 kernel of that tier;
  - `tessel test-ops --ci -o MUL_MAT,MUL_MAT_ID` (threads 1,2) must pass, and every kernel of that
    tier that info lists as runnable must have run at least one case (its GEMM or GEMV name in a
    case line); the tally of case lines per kernel tier is printed.
Exits 1 on the first failed configuration, printing what was expected and the tool's output.
"""
import collections
import os
import re
import subprocess
import sys
import time

QEMU = ["qemu-aarch64-static"]
QEMU_ENV = ["-L", "/", "-E", "LD_LIBRARY_PATH=/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/usr/aarch64-linux-gnu/lib"]
TIERS = ["neon", "dotprod", "i8mm", "sve", "sme"]

# (QEMU -cpu value, TESSEL_CPU_ISA cap or None, expected usable tier, extra environment, threads)
CONFIGS = [
    ("cortex-a72", None, "neon", {}, "1,2"),           # no dotprod: plain NEON
    ("neoverse-n1", None, "dotprod", {}, "1,2"),       # dotprod, no i8mm or SVE: the chain falls back
    ("max", "neon", "neon", {}, "1,2"),
    ("max", "dotprod", "dotprod", {}, "1,2"),
    ("max", "i8mm", "i8mm", {}, "1,2"),
    ("max,sve-default-vector-length=16", "sve", "sve", {}, "1,2"),   # 128-bit SVE
    ("max,sve-default-vector-length=32", "sve", "sve", {}, "1,2"),   # 256-bit
    ("max,sve-default-vector-length=64", "sve", "sve", {}, "1,2"),   # 512-bit
    ("max", "sme", "sme", {"TESSEL_CPU_MATRIX_THREADS": "0"}, "1,2"),  # SME at QEMU's default 256 bits
    ("max,sme-default-vector-length=16", "sme", "sme", {"TESSEL_CPU_MATRIX_THREADS": "0"}, "2"),  # 4 ZA tiles
    ("max,sme-default-vector-length=64", "sme", "sme", {"TESSEL_CPU_MATRIX_THREADS": "0"}, "2"),  # 1 tile
    # co-execution: one thread on the matrix unit, the others on the chain's next kernel
    ("max", None, "sme", {"TESSEL_CPU_MATRIX_THREADS": "1"}, "2,3"),
]

CASE = re.compile(r"^\s+CPU/\d+t\s.*\s(\S+_(neon|dotprod|i8mm|sve|sme|ref))\s+nmse=")


def run(tessel, cpu, env, args):
    e = dict(os.environ)
    e.update(env)
    p = subprocess.run(QEMU + ["-cpu", cpu] + QEMU_ENV + [tessel] + args, env=e, capture_output=True, text=True, timeout=900)
    return p.returncode, p.stdout + p.stderr


def tier_kernels(info, tier):
    """The runnable kernels of `tier` in `info --kernels` output, as (gemm name, gemv name)."""
    out = []
    for line in info.splitlines():
        m = re.match(r"^\s+(\S+)\s+(\S+)\s+(packed|rows)\s+tier (\S+)\s.*run: yes", line)
        if m and m.group(4) == tier:
            out.append((m.group(1), m.group(2)))
    return out


def check(tessel, cpu, cap, tier, extra, threads):
    env = dict(extra)
    if cap:
        env["TESSEL_CPU_ISA"] = cap
    label = f"-cpu {cpu}" + (f" TESSEL_CPU_ISA={cap}" if cap else "") + "".join(f" {k}={v}" for k, v in extra.items())
    t0 = time.time()
    rc, info = run(tessel, cpu, env, ["info", "--kernels"])
    head = info.splitlines()[0] if info else ""
    problems = []
    if rc != 0 or f"usable tier {tier}," not in head:
        problems.append(f"info --kernels: expected usable tier {tier}, got: {head!r} (exit {rc})")
    pick = re.search(r"^Q4_0 .*?packed chain M=512\s+-> ([^\s:]+)", info, re.S | re.M)
    if not pick or not pick.group(1).endswith("_" + tier):
        problems.append(f"info --kernels: a 512-row Q4_0 product should run a {tier} kernel, picks {pick.group(1) if pick else 'nothing'}")
    expected = tier_kernels(info, tier)
    if not expected:
        problems.append(f"info --kernels lists no runnable {tier} kernel")
    rc, ops = run(tessel, cpu, env, ["test-ops", "--ci", "-o", "MUL_MAT,MUL_MAT_ID", "--threads", threads])
    if rc != 0:
        problems.append("test-ops failed:\n" + "\n".join(l for l in ops.splitlines() if "FAIL" in l))
    ran = collections.Counter()
    per_tier = collections.Counter()
    for line in ops.splitlines():
        m = CASE.match(line)
        if m:
            ran[m.group(1)] += 1
            per_tier[m.group(2)] += 1
    missing = [g for g, v in expected if ran[g] + ran[v] == 0]
    if missing:
        problems.append(f"{tier} kernels that ran no test-ops case: {', '.join(missing)}")
    summary = " ".join(l.split(": ", 1)[1] for l in ops.splitlines() if re.match(r"^CPU/\d+t: ", l))
    tally = ", ".join(f"{t} {per_tier[t]}" for t in TIERS + ["ref"] if per_tier[t])
    print(f"-- {label}: {len(expected)} {tier} kernels, case lines by kernel tier: {tally} ({time.time() - t0:.0f} s)")
    if problems:
        print(f"FAILED {label}:")
        for p in problems:
            print("  " + p)
        print("\n".join(info.splitlines()[:12]))
        return False
    return True


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tessel = os.path.join(sys.argv[1], "bin", "tessel")
    if not os.path.exists(tessel):
        print(f"check-arm-kernels: {tessel} not found (build the aarch64 tree's tessel_cli first)", file=sys.stderr)
        return 2
    ok = all(check(tessel, *c) for c in CONFIGS)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
