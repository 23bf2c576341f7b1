"""The tessel Python package on the default model (SmolLM2-135M-Instruct Q4_1), against the same
references as tests/api/c_api_test.c: llama.cpp's tokens and logits, the C++ API's own logits and
greedy tokens (bit for bit), and `tessel run --temp 0`'s output for the same prompt."""
from __future__ import annotations

import array
import os
import subprocess
from importlib import metadata

import pytest

import tessel

# tests/smollm2/smollm2_test.cpp: full logit vectors within this NMSE of llama.cpp's.
MAX_NMSE = 8e-2
# llama.cpp's top-1 is compared where its top-2 margin is at least this (smollm2_test.cpp's kFlipMargin).
FLIP_MARGIN = 0.5


def exact_context(model):
    """As api_expect's C++ run: one thread, flash attention off (the same numbers bit for bit)."""
    return tessel.Context(model, n_ctx=256, n_threads=1, flash_attn="off")


def test_version_and_devices():
    assert tessel.version() == metadata.version("tessel")
    devs = tessel.devices()
    assert devs[0]["name"] == "CPU" and devs[0]["kind"] == "cpu" and devs[0]["memory_total"] > 0


def test_tokenize_matches_llama_cpp(model, expect):
    assert model.tokenize(expect["utf8_text"]) == expect["utf8_tokens"]


def test_detokenize_gives_the_text_back(model, expect):
    ids = model.tokenize(expect["utf8_text"], add_special=False)
    assert model.detokenize(ids) == expect["utf8_text"]


def test_logits_match_cpp_api_and_llama_cpp(model, expect):
    ctx = exact_context(model)
    ctx.decode(expect["prompt_tokens"])
    got = ctx.logits()
    assert got == array.array("f", expect["cpp_logits"])
    if expect["ref_top1_margin"] >= FLIP_MARGIN:
        assert max(range(len(got)), key=got.__getitem__) == expect["ref_top1"]
    ctx.kv_clear()
    ctx.decode(expect["full_tokens"])
    got, want = ctx.logits(), expect["full_logits"]
    nmse = sum((g - w) ** 2 for g, w in zip(got, want)) / sum(w * w for w in want)
    assert nmse <= MAX_NMSE


def test_greedy_matches_cpp_api(model, expect):
    ctx = exact_context(model)
    text = "".join(tessel.generate(ctx, expect["prompt_tokens"], n_predict=len(expect["cpp_greedy"]), temp=0))
    assert text == expect["cpp_greedy_text"]


def test_greedy_matches_tessel_run(model, model_path, expect, cli):
    n = 24
    run = subprocess.run([cli, "run", "-m", model_path, "-p", expect["prompt_text"], "-n", str(n), "--temp", "0"],
                         capture_output=True, check=False)
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    pieces = list(tessel.generate(model, expect["prompt_text"], n_predict=n, temp=0))
    assert len(pieces) > 1  # streamed, not one block
    assert "".join(pieces) + "\n" == run.stdout.decode("utf-8")  # `tessel run` ends its output with a newline


def test_kv_edit_then_same_decode_gives_same_logits(model, expect):
    ctx = exact_context(model)
    prompt = expect["prompt_tokens"]
    ctx.decode(prompt)
    ctx.decode([expect["cpp_greedy"][0]], pos=len(prompt))
    first = ctx.logits()
    ctx.kv_seq_rm(0, len(prompt))
    assert ctx.kv_seq_pos_max(0) == len(prompt) - 1
    ctx.decode([expect["cpp_greedy"][0]], pos=len(prompt))
    assert ctx.logits() == first
    assert max(range(len(first)), key=first.__getitem__) == expect["cpp_greedy"][1]


def test_chat_template_renders_the_jinja_output(model):
    # The SmolLM2-135M-Instruct "system" row of tests/unit/chat_template_test.cpp.
    messages = [{"role": "system", "content": "You answer in one word."}, {"role": "user", "content": "Capital of France?"}]
    assert model.apply_chat_template(messages) == (
        "<|im_start|>system\nYou answer in one word.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n"
        "<|im_start|>assistant\n")
    with pytest.raises(tessel.Error) as e:
        tessel.apply_chat_template("{{ no known template }}", messages)
    assert e.value.status == "unsupported"


def test_errors_name_the_file_and_argument(model_path, tmp_path):
    missing = str(tmp_path / "no-such-model.gguf")
    with pytest.raises(tessel.Error) as e:
        tessel.Model(missing)
    assert e.value.status == "io" and missing in e.value.message
    with pytest.raises(tessel.Error) as e:
        tessel.Model(model_path, device="tpu7")
    assert e.value.status == "invalid-argument" and "unknown device 'tpu7'" in e.value.message
    vocab = tessel.Model(model_path, vocab_only=True)
    assert vocab.info["vocab_only"] and vocab.tokenize("hi")
    with pytest.raises(tessel.Error) as e:
        tessel.Context(vocab)
    assert e.value.status == "invalid-argument" and "vocab_only" in e.value.message


def test_progress_reports_and_cancels(model_path):
    seen = []
    tessel.Model(model_path, progress=lambda f: seen.append(f) or True)
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    with pytest.raises(tessel.Error) as e:
        tessel.Model(model_path, progress=lambda f: f < 0.5)
    assert e.value.status == "cancelled" and model_path in e.value.message

    def boom(fraction):
        raise KeyError("from the callback")

    with pytest.raises(KeyError):
        tessel.Model(model_path, progress=boom)


def test_library_comes_from_tessel_library(monkeypatch, tmp_path):
    from tessel import _lib

    assert tessel.library_path() == os.environ["TESSEL_LIBRARY"]
    monkeypatch.setenv("TESSEL_LIBRARY", str(tmp_path / "missing.so"))
    with pytest.raises(tessel.LibraryNotFound, match="missing.so"):
        _lib.find_library()
