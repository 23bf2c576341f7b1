#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_model_load and fuzz_tokenizer (a few inputs of tens of bytes).

    python3 tests/fuzz/make_seeds.py OUT_DIR     # writes OUT_DIR/model_load/* and OUT_DIR/tokenizer/*

Their inputs are programs of choices (tests/fuzz/fuzz_input.hpp), not files: each seed names a
starting model or pre-tokenizer, a few options and mutations, and a text. Indices into the fuzz
targets' tables (kKeys, kFloats, ...) are written as the tables stand in fuzz_model_load.cpp; if the
tables change, a seed still drives a valid run, only a different one (the seeds ctx_2_40 and
inf_eps_huge_base hold out-of-range values that the load rejects: they keep those
paths in the corpus). scripts/test.sh writes the seeds into a fresh folder at each run, so no seed
files are committed.
"""
import os
import sys


def model_load_seeds():
    def seed(geometry, options, cache, mutations, text):
        return bytes([geometry, options, cache, len(mutations)]) + b"".join(mutations) + text

    decode = 0x08
    # mutation op 0: a known key (index in kKeys) gets a value of a type; FLOAT32 = 6, FLOAT64 = 12,
    # then the index in kFloats (16: 1e300, 18: inf, 20: nan)
    eps, freq_base, context_length = 2, 1, 0
    set_float32 = lambda key, f: bytes([0, key, 6, f])
    set_float64 = lambda key, f: bytes([0, key, 12, f])
    set_uint64 = lambda key, i: bytes([0, key, 10, i])  # UINT64 = 10, index in kInts (28: 2^40)
    replace_token = lambda at, text: bytes([4, 0, at, len(text)]) + text  # op 4, replace
    special_id = lambda key, how, arg: bytes([7, key, how, arg])  # op 7
    return {
        "plain": seed(0, decode, 0x00, [], b"hello the world"),
        "special": seed(1, decode | 0x30 | 0x07, 0x10, [], b"<s>hi<|im_end|> [X]"),
        "fa_off_ubatch2": seed(2, decode | 0x80 | 0x40, 0x00, [], b"and 12 on"),
        "kquant_q8_cache": seed(3, decode | 0x30, 0x21, [], b"the"),
        "inf_eps_huge_base": seed(0, decode, 0x00, [set_float32(eps, 18), set_float64(freq_base, 16)], b"or"),
        "ctx_2_40": seed(0, decode, 0x00, [set_uint64(context_length, 28)], b"he"),
        "vocab_edits": seed(1, decode, 0x00, [replace_token(3, b"a b"), special_id(0, 0, 70)], b"a b"),
    }


def tokenizer_seeds():
    texts = [
        b"Hello world, it's 2024! \xc3\xa9t\xc3\xa9 caf\xc3\xa9\n\n  x",
        "日本語の文章 and 中文 mixed 123456789 \u2014 \U0001F999 emoji".encode(),
        b"don't  WE'LL\t\ttabs\r\nlines   \n",
        b"<s>[USER] hi<|endoftext|><unk> \xe2\x96\x81\xe2\x96\x81",
        b"\xff\xfe invalid \xc3 utf-8 \xed\xa0\x80 \xf4\x90\x80\x80",
    ]
    seeds = {}
    for spec in range(9):  # one per pre-tokenizer (selector % number of closed vocabularies); 8: gemma4
        seeds[f"closed_{spec}"] = bytes([spec, spec & 7]) + texts[spec % len(texts)]
    # the closed SentencePiece vocabulary after the 9 pre-tokenizers: 9 with the space prefix, 10
    # without (options: bit 0 BOS, 1 EOS, 2 parse special)
    seeds["closed_spm_9"] = bytes([9, 0x00]) + texts[1] + " \u2581x".encode()
    seeds["closed_spm_10"] = bytes([10, 0x07]) + texts[3] + texts[4]
    # an input vocabulary: 4 tokens (kind byte: bit 0 = a byte symbol, else a length-prefixed text;
    # kind >> 1 = 1: Normal), 2 merges (left, right, flag 1 = "left right"), specials byte 0x01 (a
    # BOS id) and its id, text
    vocab = bytes([3, 3, ord("a"), 3, ord("b"), 2, 2]) + b"ab" + bytes([3, ord("c")])
    merges = bytes([2, 0, 1, 1, 2, 3, 1])
    seeds["input_vocab"] = bytes([0x80]) + vocab + merges + bytes([0x01, 0]) + b"abc cab"
    # the same as SentencePiece (selector bit 6): per token a kind byte (13: a byte token <0xXX> of
    # type Byte; 2: a text of type Normal), its byte or text, and the index of its score (0: 0,
    # 1: -1, 3: 1); no merges
    spm_vocab = bytes([3, 13, ord("a"), 0, 13, ord("b"), 0, 2, 2]) + b"ab" + bytes([1, 2, 4]) + "▁a".encode() + bytes([3])
    seeds["input_vocab_spm"] = bytes([0xC0]) + spm_vocab + bytes([0x01, 0]) + b"abc ab"
    return seeds


def jinja_seeds():
    """fuzz_jinja: an options byte (bit 0 add_generation_prompt, bit 1 tools) and a template using
    the constructs chat templates use."""
    templates = {
        "loop": "{% for m in messages %}{{ loop.index }}{{ m.role | upper }}:{{ m.content | trim }}\n{% endfor %}",
        "ns": "{%- set ns = namespace(i=0) -%}{% for m in messages[::-1] %}{% if m.role == 'user' %}"
              "{% set ns.i = loop.index0 %}{% endif %}{% endfor %}{{ ns.i }}",
        "tools": "{% if tools %}{% for t in tools %}{{ t | tojson(indent=2) }}{% endfor %}{% endif %}"
                 "{% for m in messages %}{% if m.tool_calls is defined %}{{ m.tool_calls[0].function.arguments | tojson }}"
                 "{% endif %}{% endfor %}",
        "methods": "{{ messages[4].content.split('</think>')[-1].lstrip('\\n') }}{{ bos_token ~ eos_token }}"
                   "{{ strftime_now('%d %b %Y') }}{{ messages[0].get('role', 'x') }}",
        "macro": "{% macro m(x, y='d') %}[{{ x }}{{ y }}]{% endmacro %}{{ m(1) }}{{ m(2, y=3) }}"
                 "{% if add_generation_prompt %}{{ raise_exception('stop') }}{% endif %}",
    }
    return {name: bytes([3]) + text.encode() for name, text in templates.items()}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_seeds.py OUT_DIR")
    for name, seeds in (("model_load", model_load_seeds()), ("tokenizer", tokenizer_seeds()), ("jinja", jinja_seeds())):
        folder = os.path.join(sys.argv[1], name)
        os.makedirs(folder, exist_ok=True)
        for seed_name, data in seeds.items():
            with open(os.path.join(folder, seed_name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
