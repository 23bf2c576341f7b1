#!/usr/bin/env python3
"""Render chat templates with Python's jinja2 as HF transformers does, and compare tessel with it.

Two uses:

  Conformance of tessel's Jinja interpreter (src/jinja), the ctest `chat_template_conformance`:
    python3 scripts/check_chat_templates.py --tessel build/bin/tessel [--model-template default|MODEL.gguf]
  renders every template x message set with jinja2 and with `tessel render-template`, and fails
  unless every output is byte-identical (or both raise the same raise_exception message).

  Rows of the built-in formats' test (tests/unit/chat_template_test.cpp, kRendered):
    python3 scripts/check_chat_templates.py [--template NAME=PATH ...]          # print rows
    python3 scripts/check_chat_templates.py --check tests/unit/chat_template_test.cpp [...]
  (bos_token "", eos_token "<|endoftext|>", no strftime_now, Gemma's system text folded into the
  next user turn.)

Templates: every *.jinja in $TESSEL_SHARED_DIR/peer-data/chat-templates/ (default ../shared
beside the repository), any --template NAME=PATH, and with --model-template the
tokenizer.chat_template of a GGUF (read with `tessel info FILE --json`; 'default': the cached
default model, SmolLM2-135M-Instruct).

The environment is HF transformers' (chat_template_utils): ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and the loopcontrols extension; tojson = json.dumps(ensure_ascii=False,
indent=...); raise_exception; strftime_now (here a fixed date, 2024-09-05, as --date gives tessel).
Needs python3-jinja2 (Debian) or jinja2 from PyPI; a missing jinja2 is a failure, not a skip.
"""
import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import jinja2
import jinja2.ext
import jinja2.sandbox

FIXED_DATE = datetime.datetime(2024, 9, 5, 12, 0, 0)

# --- message sets of the conformance check -------------------------------------------------------
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city — «quoted» \"text\"",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                       "required": ["city"]},
    },
}]
TOOL_CALL = [
    {"role": "system", "content": "You call tools."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
    {"role": "tool", "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
]
MESSAGE_SETS = {  # name: (context without bos/eos, needs a template that knows tools)
    "system_user": ({"messages": [{"role": "system", "content": "You answer in one word."},
                                  {"role": "user", "content": "Capital of France?"}],
                     "add_generation_prompt": True}, False),
    "multi_turn": ({"messages": [{"role": "user", "content": "What is 2+2?"},
                                 {"role": "assistant", "content": " 4. "},
                                 {"role": "user", "content": "  And 3+3?\n"}],
                    "add_generation_prompt": True}, False),
    "multi_turn_no_gen": ({"messages": [{"role": "user", "content": "Hi"},
                                        {"role": "assistant", "content": "Hello! How can I help?"}],
                           "add_generation_prompt": False}, False),
    "unicode": ({"messages": [{"role": "user", "content": "Grüße, 世界 🌍 — naïve café\u00a0\t"},
                              {"role": "assistant", "content": "Привет, 안녕하세요"},
                              {"role": "user", "content": "\u3000ok?"}],
                 "add_generation_prompt": True}, False),
    "jinja_text": ({"messages": [{"role": "user", "content": "Print {{x}} and {% if y %}{# z #}'\"\\n"}],
                    "add_generation_prompt": True}, False),
    "tool_call": ({"messages": TOOL_CALL, "tools": TOOLS, "add_generation_prompt": True}, True),
}
BOS, EOS = "<BOS>", "<EOS>"

# --- the built-in formats' rows (tests/unit/chat_template_test.cpp) ------------------------------
THREE_TURNS = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": " 4. "},
    {"role": "user", "content": "  And 3+3?\n"},
]
SYSTEM = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "Capital of France?"},
]
CASES = [  # (case name, messages, add_generation_prompt)
    ("three_turns", THREE_TURNS, True),
    ("three_turns_no_gen", THREE_TURNS, False),
    ("system", SYSTEM, True),
]


def environment(strftime_now=True):
    """HF's environment; without strftime_now for the built-in rows (their Llama 3 date is the
    template's fallback, 26 Jul 2024)."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    if strftime_now:
        env.globals["strftime_now"] = lambda fmt: FIXED_DATE.strftime(fmt)
    return env


def render(source, context, strftime_now=True):
    return environment(strftime_now).from_string(source).render(**context)


def gemma_folded(messages):
    """The conversation tessel's built-in Gemma format renders: system text moved into the next user turn."""
    out, pending = [], ""
    for m in messages:
        if m["role"] == "system":
            pending = m["content"].strip()
        elif m["role"] == "user" and pending:
            out.append({"role": "user", "content": pending + "\n\n" + m["content"].strip()})
            pending = ""
        else:
            out.append(m)
    return out


def cpp_literal(text):
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def builtin_rows(templates, check):
    rows = []
    for name, source in templates.items():
        for case, messages, gen in CASES:
            if "<start_of_turn>" in source:
                messages = gemma_folded(messages)
            text = render(source, {"messages": messages, "add_generation_prompt": gen, "bos_token": "",
                                   "eos_token": "<|endoftext|>"}, strftime_now=False)
            rows.append(f'{{"{name}", "{case}", {cpp_literal(text)}}},')
    if not check:
        print("\n".join(rows))
        return 0
    test_text = pathlib.Path(check).read_text(encoding="utf-8")
    missing = [row for row in rows if row not in test_text]
    for row in missing:
        print("MISSING:", row)
    print(f"{len(rows) - len(missing)}/{len(rows)} rendered rows found in {check}")
    return 1 if missing else 0


def conformance(tessel, templates):
    passed, failed = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, source in templates.items():
            tmpl_path = pathlib.Path(tmp) / "template.jinja"
            tmpl_path.write_text(source, encoding="utf-8")
            for set_name, (context, needs_tools) in MESSAGE_SETS.items():
                if needs_tools and "tool" not in source:
                    continue
                context = dict(context, bos_token=BOS, eos_token=EOS)
                ctx_path = pathlib.Path(tmp) / "context.json"
                ctx_path.write_text(json.dumps(context, ensure_ascii=False), encoding="utf-8")
                try:
                    expected, expected_error = render(source, context).encode("utf-8"), None
                except jinja2.exceptions.TemplateError as e:
                    expected, expected_error = None, str(e)
                got = subprocess.run([tessel, "render-template", str(tmpl_path), str(ctx_path), "--date", "2024-09-05"],
                                     capture_output=True, check=False)
                if expected_error is not None:
                    ok = got.returncode != 0 and expected_error in got.stderr.decode("utf-8", "replace")
                    what = f"raises {expected_error!r}"
                else:
                    ok = got.returncode == 0 and got.stdout == expected
                    what = f"{len(expected)} bytes"
                if ok:
                    passed += 1
                    print(f"ok   {name} x {set_name}: identical ({what})")
                else:
                    failed += 1
                    print(f"FAIL {name} x {set_name}: jinja2 {what}")
                    print(f"  jinja2: {expected!r}" if expected is not None else f"  jinja2 raised: {expected_error}")
                    print(f"  tessel (exit {got.returncode}): {got.stdout!r}\n  stderr: {got.stderr.decode()!r}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


# The default model's file in tessel's cache (tools/common/model_fetch.cpp: model_cache_dir and
# default_model_source).
DEFAULT_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path():
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = pathlib.Path(xdg) if xdg.startswith("/") else pathlib.Path.home() / ".cache"
    path = base / "tessel" / "models" / DEFAULT_MODEL
    if not path.is_file():
        sys.exit(f"{path} not found: run `tessel run -p hi -n 1` once to fetch the default model")
    return str(path)


def model_template(tessel, gguf):
    info = subprocess.run([tessel, "info", gguf, "--json"], capture_output=True, check=True, text=True)
    template = json.loads(info.stdout)["metadata"].get("tokenizer.chat_template")
    if not template:
        sys.exit(f"{gguf} has no tokenizer.chat_template")
    return template


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--template", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--model-template", metavar="GGUF",
                        help="add this model's tokenizer.chat_template ('default': the cached default model)")
    parser.add_argument("--tessel", metavar="BIN", help="check `BIN render-template` against jinja2")
    parser.add_argument("--check", metavar="TEST_CPP")
    args = parser.parse_args()

    shared = pathlib.Path(os.environ.get("TESSEL_SHARED_DIR",
                                         pathlib.Path(__file__).resolve().parents[1].parent / "shared"))
    peer_dir = shared / "peer-data" / "chat-templates"
    if not peer_dir.is_dir():
        sys.exit(f"{peer_dir} not found (set TESSEL_SHARED_DIR)")
    templates = {p.name: p.read_text(encoding="utf-8") for p in sorted(peer_dir.glob("*.jinja"))}
    if not templates:
        sys.exit(f"no *.jinja in {peer_dir}")
    for spec in args.template:
        name, _, path = spec.partition("=")
        templates[name] = pathlib.Path(path).read_text(encoding="utf-8")
    if args.model_template:
        if not args.tessel:
            sys.exit("--model-template needs --tessel BIN (to read the GGUF)")
        gguf = default_model_path() if args.model_template == "default" else args.model_template
        templates[pathlib.Path(gguf).name] = model_template(args.tessel, gguf)

    sys.exit(conformance(args.tessel, templates) if args.tessel else builtin_rows(templates, args.check))


if __name__ == "__main__":
    main()
