#!/usr/bin/env python3
"""Constrained generation end to end: `tessel run --json-schema` outputs validated by jsonschema.

For each schema below, the default model (SmolLM2-135M-Instruct) generates once greedily and once
per seed at --temp 0.8 (--seeds for the first schema, --other-seeds for the rest, to keep CI short);
every output must parse as JSON and validate against the schema
(Python's jsonschema, the reference implementation independent of tessel's grammar). The token
limit is far above what the schemas allow, so a run that stops at it fails too.

    "$(scripts/pyenv.sh reference)" scripts/reference/json_schema_outputs.py --tessel build/bin/tessel [--seeds 20] [--other-seeds 5]

CTest runs it as smollm2.json_schema_outputs (label smollm2) through run-reference.sh.
"""
import argparse
import concurrent.futures
import json
import subprocess
import sys
from pathlib import Path

import jsonschema

REPO = Path(__file__).resolve().parents[2]

# Every string is bounded (maxLength or an enum) so any output ends well within the token limit.
SCHEMAS = {
    "person": {
        "prompt": "Describe a fictional person as JSON.",
        "schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 24},
                "age": {"type": "integer", "minimum": 0},
                "student": {"type": "boolean"},
                "role": {"enum": ["admin", "user", "guest"]},
                "skills": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3},
            },
            "required": ["name", "age", "student", "role", "skills"],
            "additionalProperties": False,
        },
    },
    "items": {
        "prompt": "List a few products with their prices as JSON.",
        "schema": {
            "type": "array",
            "minItems": 2,
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "label": {"type": "string", "maxLength": 12},
                    "price": {"type": "number"},
                },
                "required": ["id", "label"],
                "additionalProperties": False,
            },
        },
    },
    "nested": {
        "prompt": "Give a user with an address as JSON.",
        "schema": {
            "type": "object",
            "properties": {
                "user": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "maxLength": 16},
                        "address": {
                            "type": "object",
                            "properties": {
                                "city": {"type": "string", "maxLength": 16},
                                "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                            },
                            "required": ["city", "zip"],
                            "additionalProperties": False,
                        },
                    },
                    "required": ["name", "address"],
                    "additionalProperties": False,
                },
                "active": {"type": ["boolean", "null"]},
            },
            "required": ["user"],
            "additionalProperties": False,
        },
    },
}


def generate(tessel, model, prompt, schema, temp, seed, n_predict):
    cmd = [tessel, "run", "-p", prompt, "-n", str(n_predict), "--temp", str(temp), "--seed", str(seed),
           "-t", "1", "--json-schema", json.dumps(schema)]
    if model:
        cmd += ["-m", str(model)]
    return cmd, subprocess.run(cmd, capture_output=True, timeout=300)


def check(name, spec, temp, seed, out):
    cmd, r = out
    where = f"{name} temp={temp} seed={seed}"
    if r.returncode != 0:
        return f"{where}: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-400:]}"
    try:
        text = r.stdout.decode().rstrip("\n")
    except UnicodeDecodeError as e:
        return f"{where}: not UTF-8 ({e}): {r.stdout!r}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        return f"{where}: not JSON ({e}): {text!r}"
    try:
        jsonschema.validate(value, spec["schema"])
    except jsonschema.ValidationError as e:
        return f"{where}: invalid ({e.message}): {text!r}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--tessel", default=str(REPO / "build/bin/tessel"))
    ap.add_argument("--model", type=Path, help="default: the cached default model")
    ap.add_argument("--seeds", type=int, default=20, help="sampled runs of the first schema (plus one greedy)")
    ap.add_argument("--other-seeds", type=int, default=5, help="sampled runs of each other schema (plus one greedy)")
    ap.add_argument("-n", "--n-predict", type=int, default=400, help="token limit per run")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="runs at a time (one thread each)")
    args = ap.parse_args()

    runs = [(name, spec, 0.0, 0) for name, spec in SCHEMAS.items()]
    for i, (name, spec) in enumerate(SCHEMAS.items()):
        runs += [(name, spec, 0.8, seed) for seed in range(1, (args.seeds if i == 0 else args.other_seeds) + 1)]
    failures = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [(run, pool.submit(generate, args.tessel, args.model, run[1]["prompt"], run[1]["schema"], run[2],
                                     run[3], args.n_predict)) for run in runs]
        for (name, spec, temp, seed), future in futures:
            problem = check(name, spec, temp, seed, future.result())
            if problem:
                failures.append(problem)
                print("FAIL", problem)
            elif temp == 0.0 or seed == 1:
                print(f"ok {name} temp={temp} seed={seed}: {future.result()[1].stdout.decode().strip()}")
    print(f"{len(runs) - len(failures)} of {len(runs)} outputs valid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
