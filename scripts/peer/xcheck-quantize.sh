#!/usr/bin/env bash
# Cross-check `tessel quantize` against llama.cpp's llama-quantize (peer build of the pinned sdist,
# scripts/peer/build-llama.sh) on the default model, SmolLM2-135M-Instruct Q4_1:
#
#   scripts/peer/xcheck-quantize.sh [TYPE...]     (default: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL MXFP4 Q4_K Q6_K F16)
#
# For each TYPE both tools quantize the model (--allow-requantize: its source is Q4_1/Q8_0, so
# this is requantization, dequantize -> f32 -> quantize, in both) with the same threads; then
# every tensor is compared by name: its type must match, and its data bytes are counted as
# identical or differing (by output type). MXFP4 is llama.cpp's MXFP4_MOE. Prints one markdown
# table; exits 1 when any tensor's type or shape differs, 0 otherwise (differing bytes are
# reported, not judged: tessel's K-quant and IQ4_NL quantizers are its own, see quant/quant.hpp).
# Not run by CI. Needs python3 (standard library) and the tessel binary (TESSEL, default
# build/bin/tessel). Files go to a temporary folder, removed at the end (TESSEL_XCHECK_KEEP=1
# keeps it). Threads: TESSEL_XCHECK_THREADS (default 2).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
tessel=${TESSEL:-build/bin/tessel}
threads=${TESSEL_XCHECK_THREADS:-2}
types=("$@")
[[ ${#types[@]} -gt 0 ]] || types=(Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL MXFP4 Q4_K Q6_K F16)

bin=$(scripts/peer/build-llama.sh)
model=$(scripts/default-model.sh "$tessel")

work=$(mktemp -d "${TMPDIR:-/tmp}/xcheck-quantize.XXXXXX")
[[ ${TESSEL_XCHECK_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT

for t in "${types[@]}"; do
    peer_type=$t
    [[ $t == MXFP4 ]] && peer_type=MXFP4_MOE
    echo "xcheck-quantize: $t: llama-quantize $peer_type, tessel quantize $t ($threads threads)" >&2
    "$bin/llama-quantize" --allow-requantize "$model" "$work/llama-$t.gguf" "$peer_type" "$threads" \
        >"$work/llama-$t.log" 2>&1 || { cat "$work/llama-$t.log" >&2; exit 1; }
    "$tessel" quantize --allow-requantize -t "$threads" "$model" "$work/tessel-$t.gguf" "$t" >"$work/tessel-$t.log"
    "$tessel" info --json "$work/llama-$t.gguf" >"$work/llama-$t.json"
    "$tessel" info --json "$work/tessel-$t.gguf" >"$work/tessel-$t.json"
done

python3 - "$work" "${types[@]}" <<'EOF'
import json, sys
from collections import Counter

work, types = sys.argv[1], sys.argv[2:]
print("| TYPE | tensors | type match | type differs | bytes identical | bytes differ (by type) | llama.cpp file | tessel file |")
print("|---|---|---|---|---|---|---|---|")
failed = False
for t in types:
    info = {}
    for tool in ("llama", "tessel"):
        with open(f"{work}/{tool}-{t}.json") as f:
            info[tool] = json.load(f)
    by_name = {tool: {x["name"]: x for x in info[tool]["tensors"]} for tool in info}
    if by_name["llama"].keys() != by_name["tessel"].keys():
        failed = True
        print(f"{t}: tensor names differ: {sorted(by_name['llama'].keys() ^ by_name['tessel'].keys())[:5]}", file=sys.stderr)
    match = differ = same = 0
    diff_types = Counter()
    files = {tool: open(f"{work}/{tool}-{t}.gguf", "rb") for tool in info}
    for name in sorted(by_name["llama"].keys() & by_name["tessel"].keys()):
        a, b = by_name["llama"][name], by_name["tessel"][name]
        if a["type"] != b["type"] or a["ne"] != b["ne"]:
            differ += 1
            failed = True
            print(f"{t}: {name}: llama.cpp {a['type']} {a['ne']}, tessel {b['type']} {b['ne']}", file=sys.stderr)
            continue
        match += 1
        data = []
        for tool, x in (("llama", a), ("tessel", b)):
            files[tool].seek(info[tool]["data_offset"] + x["offset"])
            data.append(files[tool].read(x["bytes"]))
        if data[0] == data[1]:
            same += 1
        else:
            diff_types[a["type"]] += 1
    for f in files.values():
        f.close()
    n = len(by_name["tessel"])
    diffs = ", ".join(f"{k} {v}" for k, v in sorted(diff_types.items())) or "-"
    ndiff = sum(diff_types.values())
    print(f"| {t} | {n} | {match} | {differ} | {same} | {ndiff} ({diffs}) | "
          f"{info['llama']['file_size']} | {info['tessel']['file_size']} |")
sys.exit(1 if failed else 0)
EOF
