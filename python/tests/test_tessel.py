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
    run = subprocess.run([cli, "run", "-m", model_path, "-p", expect["prompt_text"], "-n", str(n), "--temp", "0", "--no-chat"],
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
        tessel.apply_chat_template("{% include 'base.jinja' %}", messages)
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


def assert_invalid(excinfo, *words):
    """A tessel.Error "invalid-argument" (the C API's code) whose message has every word."""
    from tessel import _lib

    e = excinfo.value
    assert e.status == "invalid-argument" and e.code == _lib.TESSEL_ERROR_INVALID_ARGUMENT, e
    for word in words:
        assert word in e.message, (word, e.message)


def test_integers_outside_their_c_type_raise_instead_of_wrapping(model):
    ctx = tessel.Context(model, n_ctx=64)
    int32 = "-2147483648..2147483647"
    cases = [(lambda: ctx.decode([2**32 + 28]), ("tokens[0]", int32)),
             (lambda: ctx.decode([28], pos=2**32), ("pos", int32)),
             (lambda: ctx.decode([28, 28], pos=2**31 - 1), ("pos + len(tokens) - 1", int32)),
             (lambda: ctx.kv_seq_rm(0, 2**32), ("p0",)),
             (lambda: model.detokenize([2**32 + 28]), ("tokens[0]", int32)),
             (lambda: model.is_eog(2**40), ("token", int32)),
             (lambda: tessel.Sampler(10, top_k=2**40), ("top_k", int32)),
             (lambda: tessel.Context(model, n_threads=2**32), ("n_threads",)),
             (lambda: tessel.generate(model, "Hi", seed=2**33), ("seed", "0..4294967294")),
             (lambda: tessel.Sampler(10, seed=2**32 - 1), ("seed", "0..4294967294")),
             (lambda: tessel.Sampler(10, seed=-1), ("seed",))]
    for call, words in cases:
        with pytest.raises(tessel.Error) as e:
            call()
        assert_invalid(e, *words)
    assert tessel.Sampler(10, seed=2**32 - 2).seed == 2**32 - 2
    for call in (lambda: ctx.decode([True]), lambda: ctx.decode([28.0]), lambda: model.is_eog(1.5),
                 lambda: tessel.Sampler(10, top_k=True), lambda: tessel.Sampler(10, seed="1")):
        with pytest.raises(TypeError):
            call()


def test_text_arguments_are_str_or_bytes_only(model):
    for bad in (5, [1, 2], None):
        with pytest.raises(TypeError, match="text"):
            model.tokenize(bad)
    assert model.tokenize(bytearray(b"Hello")) == model.tokenize(b"Hello") == model.tokenize("Hello")


def test_closed_model_and_context_say_so(model_path):
    m2 = tessel.Model(model_path)
    ids = m2.tokenize("Hi")
    ctx = tessel.Context(m2, n_ctx=64)
    m2.close()
    ctx.decode(ids)  # the context keeps decoding
    assert len(ctx.logits()) == m2.n_vocab
    for call in (lambda: tessel.generate(ctx, "Hi"), lambda: m2.tokenize("Hi"), lambda: m2.detokenize(ids),
                 lambda: tessel.Context(m2)):
        with pytest.raises(tessel.Error) as e:
            call()
        assert_invalid(e, "the model was closed")
    ctx.close()
    for call in (ctx.logits, lambda: ctx.decode(ids), ctx.kv_clear, lambda: ctx.n_outputs):
        with pytest.raises(tessel.Error) as e:
            call()
        assert_invalid(e, "the context was closed")


def test_wrong_types_raise_type_error_and_bad_values_tessel_error(model, model_path):
    for call, match in ((lambda: tessel.Model(None), "path"), (lambda: tessel.Model(123), "path"),
                        (lambda: tessel.Model(model_path, devices="cpu"), "devices must be a list of device names"),
                        (lambda: tessel.Context("x"), "tessel.Model"),
                        (lambda: tessel.generate("x", "Hi"), "tessel.Model or tessel.Context"),
                        (lambda: tessel.generate(model, 5), "prompt"),
                        (lambda: tessel.Context(model, type_k=None), "type_k"),
                        (lambda: tessel.apply_chat_template("chatml", ["hi"]), r"messages\[0\]")):
        with pytest.raises(TypeError, match=match):
            call()
    for prompt in ("", []):
        with pytest.raises(tessel.Error) as e:
            tessel.generate(model, prompt)
        assert_invalid(e, "the prompt is empty")
    with pytest.raises(tessel.Error) as e:
        model.apply_chat_template([{"role": "user", "content": "Hi"}, {"role": "user"}])
    assert_invalid(e, "messages[1]", "'content'")
    with pytest.raises(tessel.Error) as e:
        tessel.Context(model, flash_attn="maybe")
    assert_invalid(e, "flash_attn")


def test_split_cache_gives_each_sequence_its_range(model):
    ctx = tessel.Context(model, n_ctx=256, kv_unified=False, n_seq_max=3)
    assert (ctx.n_ctx, ctx.n_ctx_seq) == (256, 64)  # 256 / 3 rounded down to a multiple of 32
    assert tessel.Context(model, n_ctx=256).n_ctx_seq == 256
    with pytest.raises(tessel.Error) as e:
        tessel.Context(model, n_ctx=256, kv_unified=False, n_seq_max=0)
    assert "n_seq_max" in e.value.message
