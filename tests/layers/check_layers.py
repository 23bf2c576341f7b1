#!/usr/bin/env python3
"""Checks that the include rule between layers is exactly the CMake link graph.

usage: check_layers.py BUILD_DIR

BUILD_DIR/layer-graph.txt (written by src/CMakeLists.txt) lists each layer target with its
source folders and the layers it links PUBLIC and PRIVATE. A layer may include the headers of
itself, of the layers it links, and of what those link PUBLIC (transitively). For every pair of
layers (A, B) this compiles, with the flags of one of A's own sources (compile_commands.json),
a probe that includes one header of B: it must compile when B is allowed to A (the allowed headers
are probed together, then one by one only if that fails) and must fail with "No such file or
directory" for that header when it is not. The same probes, with the flags of the
CLI's user commands (tools/tessel/*.cpp) and of the tools' shared code (tools/common/), must
fail for every layer: those use the public API (include/) only. Exit 0 when every probe agrees, 1
otherwise (each disagreement printed), 2 on a usage or setup error.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile


def read_graph(build):
    layers = {}
    with open(os.path.join(build, "layer-graph.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            name, dirs, public, private = line.split("|")
            split = lambda s: [x for x in s.split(";") if x]
            layers[name] = {"dirs": split(dirs), "public": split(public), "private": split(private)}
    return layers


def allowed(layers, name):
    """name itself, its direct links, and everything they link PUBLIC, transitively."""
    seen = {name}
    todo = layers[name]["public"] + layers[name]["private"]
    while todo:
        dep = todo.pop()
        if dep in seen:
            continue
        seen.add(dep)
        todo.extend(layers[dep]["public"])
    return seen


def first_header(src, dirs):
    for d in dirs:
        for entry in sorted(os.listdir(os.path.join(src, d))):
            if entry.endswith((".hpp", ".h")):
                return f"{d}/{entry}"
    return None


def probe_command(commands, root, dirs):
    """The compile command of one source directly in one of `dirs` (relative to `root`, a
    sub-folder counting only for layers), as an argument list without -o/-c."""
    for c in commands:
        rel = os.path.relpath(c["file"], root)
        if any(rel.startswith(d + "/") for d in dirs):
            args = shlex.split(c["command"])
            out, skip = [], False
            for a in args:
                if skip:
                    skip = False
                    continue
                if a in ("-o", "-c"):
                    skip = True
                    continue
                if a in ("-MD", "-MMD") or a.startswith(("-MF", "-MT", "-MQ")):
                    continue
                out.append(a)
            return out, rel.endswith(".c")
    return None, False


def compile_probe(tmp, cmd, is_c, header_list, build):
    """Compiles (syntax only) a probe that includes header_list, with the flags in cmd."""
    probe = os.path.join(tmp, "probe.c" if is_c else "probe.cpp")
    with open(probe, "w", encoding="utf-8") as f:
        f.writelines(f'#include "{h}"\n' for h in header_list)
    return subprocess.run(cmd + ["-fsyntax-only", probe], capture_output=True, text=True, cwd=build)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = sys.argv[1]
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    src = os.path.realpath(src)
    layers = read_graph(build)
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = json.load(f)
    headers = {name: first_header(src, l["dirs"]) for name, l in layers.items()}
    failures, probes = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for a, la in sorted(layers.items()):
            cmd, is_c = probe_command(commands, src, la["dirs"])
            if cmd is None:
                print(f"check_layers: no compile command for a source of {a}", file=sys.stderr)
                return 2
            ok_set = allowed(layers, a)
            # The allowed headers together in one probe (a full parse each, so one compile for all);
            # only when that fails, one by one to name the header.
            allowed_headers = [headers[b] for b in sorted(ok_set) if not (is_c and not headers[b].endswith(".h"))]
            if compile_probe(tmp, cmd, is_c, allowed_headers, build).returncode != 0:
                for header in allowed_headers:
                    r = compile_probe(tmp, cmd, is_c, [header], build)
                    probes += 1
                    if r.returncode != 0:
                        failures.append(f"{a} links the layer of {header} but cannot include it:\n{r.stderr.strip()}")
            probes += 1
            # Each forbidden header alone: it must fail for that header's absence.
            for b in sorted(set(layers) - ok_set):
                header = headers[b]
                r = compile_probe(tmp, cmd, is_c, [header], build)
                probes += 1
                if not (r.returncode != 0 and f"{header}: No such file or directory" in r.stderr):
                    what = "compiles" if r.returncode == 0 else "fails for another reason:\n" + r.stderr.strip()
                    failures.append(f"{a} does not link {b}, yet an include of {header} {what}")
            print(f"{a:20s} may include: {', '.join(sorted(x.removeprefix('tessel_') for x in ok_set))}")
        # Public-API-only code: the user commands and the tools' shared code.
        tools = os.path.realpath(os.path.join(src, "..", "tools"))
        for folder in ("tessel", "common"):
            cmd, _ = probe_command([c for c in commands if "/dev/" not in c["file"]], tools, [folder])
            if cmd is None:
                print(f"check_layers: no compile command for a source in tools/{folder}", file=sys.stderr)
                return 2
            for b in sorted(layers):
                header = headers[b]
                r = compile_probe(tmp, cmd, False, [header], build)
                probes += 1
                if not (r.returncode != 0 and f"{header}: No such file or directory" in r.stderr):
                    failures.append(f"tools/{folder} uses the public API only, yet an include of {header} "
                                    + ("compiles" if r.returncode == 0 else "fails for another reason:\n" + r.stderr.strip()))
            print(f"{'tools/' + folder:20s} may include: the public API only")
    for f in failures:
        print("FAIL:", f)
    print(f"check_layers: {probes} probes, {len(failures)} disagreements with the link graph")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
