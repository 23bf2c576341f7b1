"""The OpenAI-compatible routes through OpenAI's own Python client: response shapes, greedy results
against `tessel run`, streaming, stop strings, max_tokens, the model list and the API key."""
import os
import subprocess

import openai
import pytest

import api
import raw_http


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server("-np", "2", "-c", "4096", "-n", "7", env=api.batch_invariant_env())


@pytest.fixture(scope="module")
def oa(server):
    return api.client(server)


@pytest.fixture(scope="module")
def fresh(start_module_server):
    """Each request decoded from an empty cache by one sequence, as `tessel run` decodes: the same kernels
    on the same batch sizes, so greedy texts equal run's at every CPU tier (a reused prefix leaves a
    smaller batch to decode, which tiers above avx2 compute with other kernels)."""
    return api.client(start_module_server("-np", "1", "--no-prompt-cache"))


def cli_greedy(prompt, n, raw, *extra):
    """`tessel run`'s greedy text for the prompt (raw: no chat template), without the newline run ends with."""
    cmd = [os.environ["TESSEL_CLI"], "run", "-m", os.environ["TESSEL_MODEL"], "-p", prompt, "-n", str(n),
           "--temp", "0", "--no-escape", *extra] + (["--no-chat"] if raw else ["--chat"])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300).stdout
    assert out.endswith("\n")
    return out[:-1]


def test_chat_completion_shape(oa):
    r = oa.chat.completions.create(model="anything", messages=api.user(api.POEM), max_tokens=24, temperature=0)
    assert r.object == "chat.completion"
    assert r.id.startswith("chatcmpl-")
    assert r.model == api.model_id()
    assert len(r.choices) == 1
    c = r.choices[0]
    assert c.index == 0
    assert c.message.role == "assistant"
    assert isinstance(c.message.content, str) and c.message.content.strip()
    # the poem runs past 24 tokens (see api.POEM)
    assert c.finish_reason == "length"
    assert r.usage.completion_tokens == 24
    assert r.usage.prompt_tokens > 0
    assert r.usage.prompt_tokens + r.usage.completion_tokens == r.usage.total_tokens


def test_chat_ends_by_itself_with_stop(oa):
    r = oa.chat.completions.create(model="m", messages=api.user("Say only the word yes."), max_tokens=64, temperature=0)
    assert r.choices[0].finish_reason == "stop"
    assert 0 < r.usage.completion_tokens < 64


def test_greedy_is_repeatable(oa):
    ask = dict(model="m", messages=api.user(api.STORY), max_tokens=20, temperature=0)
    first = oa.chat.completions.create(**ask).choices[0].message.content
    assert first
    assert oa.chat.completions.create(**ask).choices[0].message.content == first


def test_seeded_sampling_is_repeatable(oa):
    ask = dict(model="m", messages=api.user(api.STORY), max_tokens=20, temperature=1.0, seed=1234)
    first = oa.chat.completions.create(**ask).choices[0].message.content
    assert oa.chat.completions.create(**ask).choices[0].message.content == first


@pytest.mark.parametrize("prompt", ["The capital of France is", "def fibonacci(n):\n"])
def test_completion_equals_cli_run(fresh, prompt):
    r = fresh.completions.create(model="m", prompt=prompt, max_tokens=24, temperature=0)
    assert r.object == "text_completion"
    assert r.choices[0].text == cli_greedy(prompt, 24, raw=True)
    assert r.usage.completion_tokens == 24 and r.choices[0].finish_reason == "length"


def test_chat_equals_cli_run(fresh):
    r = fresh.chat.completions.create(model="m", messages=api.user(api.ENGINE), max_tokens=24, temperature=0)
    assert r.choices[0].message.content == cli_greedy(api.ENGINE, 24, raw=False)


def test_chat_with_system_equals_cli_run(fresh):
    system, question = "You are a pirate. Answer like one.", "Where is the treasure?"
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    r = fresh.chat.completions.create(model="m", messages=msgs, max_tokens=24, temperature=0)
    assert r.choices[0].message.content == cli_greedy(question, 24, False, "--system-prompt", system)


def test_logit_bias_equals_cli_run(fresh):
    prompt = "The capital of France is"
    paris, banana = 7042, 21285  # the ids of " Paris" and " banana" in SmolLM2's vocabulary
    r = fresh.completions.create(model="m", prompt=prompt, max_tokens=3, temperature=0, logit_bias={str(banana): 100})
    assert r.choices[0].text == " banana banana banana"
    r = fresh.completions.create(model="m", prompt=prompt, max_tokens=6, temperature=0, logit_bias={str(paris): -100})
    assert r.choices[0].text == cli_greedy(prompt, 6, True, "-l", f"{paris}-100")
    assert "Paris" not in r.choices[0].text


def test_default_max_tokens_is_n(oa):
    """No max_tokens: the server's -n (7 here)."""
    r = oa.completions.create(model="m", prompt=api.COUNTING, temperature=0)
    assert r.usage.completion_tokens == 7 and r.choices[0].finish_reason == "length"


def test_multibyte_text_streams_whole_characters(fresh):
    # Japanese: 3-byte characters spread over several byte-level tokens
    ask = dict(model="m", messages=api.user("Say hello in Japanese."), max_tokens=24, temperature=0)
    whole = fresh.chat.completions.create(**ask).choices[0].message.content
    assert whole == cli_greedy("Say hello in Japanese.", 24, raw=False)
    assert any(ord(ch) > 0x3000 for ch in whole), whole
    pieces = [c.choices[0].delta.content or "" for c in fresh.chat.completions.create(**ask, stream=True) if c.choices]
    assert not [p for p in pieces if "\ufffd" in p], pieces
    assert "".join(pieces) == whole


def test_completion_prompt_forms_agree(server):
    """A prompt given as a string, a one-string list and token ids give the same greedy text."""
    texts = []
    # the ids: `tessel tokenize` of the text (SmolLM2 adds no BOS)
    for prompt in ["The capital of France is", ["The capital of France is"], [504, 3575, 282, 4649, 314]]:
        r = raw_http.post(server.url, "/v1/completions", {"prompt": prompt, "max_tokens": 8, "temperature": 0})
        assert r.status == 200, r.body
        texts.append(r.json()["choices"][0]["text"])
    assert texts[0] and texts[0] == texts[1] == texts[2]


def test_content_parts_equal_a_string(server):
    """OpenAI's content as an array of text parts is the parts' text joined."""
    texts = []
    for content in ["Name a color.", [{"type": "text", "text": "Name a "}, {"type": "text", "text": "color."}]]:
        r = raw_http.post(server.url, "/v1/chat/completions",
                          {"messages": [{"role": "user", "content": content}], "max_tokens": 8, "temperature": 0})
        assert r.status == 200, r.body
        texts.append(r.json()["choices"][0]["message"]["content"])
    assert texts[0] and texts[0] == texts[1]


def test_chat_stream_matches_non_stream(oa):
    ask = dict(model="m", messages=api.user(api.POEM), max_tokens=24, temperature=0)
    whole = oa.chat.completions.create(**ask).choices[0].message.content
    chunks = list(oa.chat.completions.create(**ask, stream=True, stream_options={"include_usage": True}))
    with_choices = [c for c in chunks if c.choices]
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert with_choices[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in with_choices) == whole
    assert [c.choices[0].finish_reason for c in with_choices[:-1]] == [None] * (len(with_choices) - 1)
    assert with_choices[-1].choices[0].finish_reason == "length"
    # the usage chunk comes after the last choice chunk and has no choices
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 24
    assert chunks[-1].usage.prompt_tokens + 24 == chunks[-1].usage.total_tokens
    assert len({c.id for c in chunks}) == 1


def test_completion_stream_sse_framing(server):
    """The raw SSE: its content type, completion chunks, the timings on the last one and the final [DONE]."""
    body = {"prompt": "The capital of France is", "max_tokens": 12, "temperature": 0}
    whole = raw_http.post(server.url, "/v1/completions", body).json()["choices"][0]["text"]
    s = raw_http.Stream(server.url, "/v1/completions", {**body, "stream": True})
    try:
        assert s.status == 200
        assert s.header("Content-Type").startswith("text/event-stream")
        events = list(s.events())
    finally:
        s.close()
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(c["object"] == "text_completion" for c in chunks)
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["timings"]["predicted_n"] == 12


def pick_stop(text):
    """A 4-character piece from the second half of `text` whose first occurrence is where it is taken."""
    for p in range(len(text) // 2, len(text) - 4):
        if text.find(text[p:p + 4]) == p:
            return p, text[p:p + 4]
    raise AssertionError(f"no stop string candidate in {text!r}")


def test_stop_string(oa):
    ask = dict(model="m", messages=api.user(api.ENGINE), max_tokens=32, temperature=0)
    whole = oa.chat.completions.create(**ask).choices[0].message.content
    p, stop = pick_stop(whole)
    for stops in [stop, ["zq#not-in-the-text", stop]]:
        r = oa.chat.completions.create(**ask, stop=stops)
        assert r.choices[0].message.content == whole[:p], (stop, whole)
        assert r.choices[0].finish_reason == "stop"
        chunks = [c for c in oa.chat.completions.create(**ask, stop=stops, stream=True) if c.choices]
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == whole[:p], (stop, whole)
        assert chunks[-1].choices[0].finish_reason == "stop"


def test_max_tokens_ends_with_length(oa):
    r = oa.completions.create(model="m", prompt=api.COUNTING, max_tokens=3, temperature=0)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 3
    # max_completion_tokens is the newer name of the same limit
    r = oa.chat.completions.create(model="m", messages=api.user(api.POEM), max_completion_tokens=5, temperature=0)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 5


def test_models_list(oa):
    models = oa.models.list().data
    assert len(models) == 1
    assert models[0].id == api.model_id()
    assert models[0].object == "model"
    assert models[0].owned_by == "tessel"


def test_route_aliases(server):
    """/chat/completions and /completions are the /v1 routes under their short names."""
    msgs = {"messages": api.user(api.POEM), "max_tokens": 6, "temperature": 0}
    long_r, short_r = (raw_http.post(server.url, p, msgs) for p in ("/v1/chat/completions", "/chat/completions"))
    assert short_r.status == 200
    assert short_r.json()["choices"][0]["message"] == long_r.json()["choices"][0]["message"]
    r = raw_http.post(server.url, "/completions", {"prompt": "Hello", "max_tokens": 2})
    assert r.status == 200 and r.json()["object"] == "text_completion"


def test_unknown_fields_are_ignored(server):
    body = {"messages": api.user("Hi"), "max_tokens": 2, "foo": {"bar": [1, 2]}, "tool_choice_x": None, "user": "u1"}
    r = raw_http.post(server.url, "/v1/chat/completions", body)
    assert r.status == 200, r.body
    assert r.json()["usage"]["completion_tokens"] <= 2


def test_api_key(start_server):
    s = start_server("--api-key", "sesame")
    with pytest.raises(openai.AuthenticationError) as e:
        api.client(s, key="wrong").chat.completions.create(model="m", messages=api.user("Hi"), max_tokens=2)
    assert e.value.status_code == 401
    r = raw_http.get(s.url, "/v1/models")
    assert r.status == 401 and r.json()["error"]["type"] == "authentication_error"
    r = api.client(s, key="sesame").chat.completions.create(model="m", messages=api.user("Hi"), max_tokens=2)
    assert r.choices[0].message.content is not None
    h = raw_http.get(s.url, "/health")
    assert h.status == 200 and h.json() == {"status": "ok"}
