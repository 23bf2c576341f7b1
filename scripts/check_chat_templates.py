#!/usr/bin/env python3
"""Render chat templates with Jinja and print (or check) the expected strings of tessel's test.

tessel formats chats without a Jinja engine (src/runtime/chat_template.cpp). Its unit test
tests/unit/chat_template_test.cpp hard-codes, per template and conversation, the text the real
Jinja template renders. This script produces those rows:

    python3 scripts/check_chat_templates.py [--template NAME=PATH ...]          # print rows
    python3 scripts/check_chat_templates.py --check tests/unit/chat_template_test.cpp [...]

Templates: every *.jinja in $TESSEL_SHARED_DIR/peer-data/chat-templates/ (default ../shared),
plus any --template NAME=PATH (e.g. SmolLM2's tokenizer.chat_template, read with
`tessel info FILE --json`). --check fails when a rendered row is not in the test file verbatim.

Rendering follows HF transformers: jinja2 sandbox with trim_blocks and lstrip_blocks,
bos_token = "" (tessel leaves BOS to the tokenizer), eos_token = "<|endoftext|>" (the EOS text
of the Phi-3 models, the only template here that uses it). Gemma's template rejects system
messages; tessel folds the system text into the first user turn, so for Gemma the "system"
case renders that folded conversation. Needs jinja2 (pip install jinja2 in any venv).
"""
import argparse
import json
import os
import pathlib
import sys

import jinja2
import jinja2.sandbox

# Must match the conversations in tests/unit/chat_template_test.cpp.
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


def gemma_folded(messages):
    """The conversation tessel renders for Gemma: system text moved into the next user turn."""
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


def render(source, messages, add_generation_prompt):
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    env.filters["tojson"] = lambda v, indent=None: json.dumps(v, indent=indent)
    return env.from_string(source).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                          bos_token="", eos_token="<|endoftext|>")


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--template", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--check", metavar="TEST_CPP")
    args = parser.parse_args()

    shared = pathlib.Path(os.environ.get("TESSEL_SHARED_DIR",
                                         pathlib.Path(__file__).resolve().parents[1].parent / "shared"))
    peer_dir = shared / "peer-data" / "chat-templates"
    if not peer_dir.is_dir():
        sys.exit(f"{peer_dir} not found (set TESSEL_SHARED_DIR)")
    templates = {p.name: p.read_text(encoding="utf-8") for p in sorted(peer_dir.glob("*.jinja"))}
    for spec in args.template:
        name, _, path = spec.partition("=")
        templates[name] = pathlib.Path(path).read_text(encoding="utf-8")

    rows = []
    for name, source in templates.items():
        for case, messages, gen in CASES:
            if "<start_of_turn>" in source:
                messages = gemma_folded(messages)
            rows.append(f'{{"{name}", "{case}", {cpp_literal(render(source, messages, gen))}}},')

    if not args.check:
        print("\n".join(rows))
        return
    test_text = pathlib.Path(args.check).read_text(encoding="utf-8")
    missing = [row for row in rows if row not in test_text]
    for row in missing:
        print("MISSING:", row)
    print(f"{len(rows) - len(missing)}/{len(rows)} rendered rows found in {args.check}")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
