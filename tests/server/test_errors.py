"""Bad requests get a 4xx with OpenAI's error JSON whose message names the problem."""
import os
import re
import subprocess

import pytest

import api
import raw_http

CHAT = "/v1/chat/completions"
MSGS = api.user("Hi")


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server()


@pytest.fixture(scope="module")
def small_server(start_module_server):
    """A 128-token context and a 4 KiB body limit."""
    return start_module_server("-c", "128", "--max-body", "4096")


def assert_error(r, status, kind, names):
    """The reply is `status` with the error shape; its message (or param) names one of `names`."""
    assert r.status == status, (r.status, r.body)
    body = r.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert set(err) >= {"message", "type", "param", "code"}, err
    assert err["type"] == kind, err
    assert err["code"] is None, err
    assert isinstance(err["message"], str) and err["message"], err
    named = [n for n in names if re.search(rf"\b{re.escape(n)}\b", err["message"], re.IGNORECASE) or err["param"] == n]
    assert named, f"the message names none of {names}: {err}"


BAD_REQUESTS = [
    # (path, body, words of which the message names one)
    (CHAT, b'{"messages": [{"role": "user", "content": "Hi"}', ["json"]),
    (CHAT, b"", ["json", "body", "empty"]),
    (CHAT, [1, 2], ["object", "json"]),
    (CHAT, {"max_tokens": 2}, ["messages"]),
    (CHAT, {"messages": "Hi"}, ["messages"]),
    (CHAT, {"messages": []}, ["messages"]),
    (CHAT, {"messages": [{"content": "Hi"}]}, ["role"]),
    (CHAT, {"messages": [{"role": "user", "content": 5}]}, ["content"]),
    (CHAT, {"messages": MSGS, "temperature": "hot"}, ["temperature"]),
    (CHAT, {"messages": MSGS, "max_tokens": "ten"}, ["max_tokens"]),
    (CHAT, {"messages": MSGS, "stream": "yes"}, ["stream"]),
    (CHAT, {"messages": MSGS, "top_p": 2}, ["top_p"]),
    (CHAT, {"messages": MSGS, "top_p": -0.5}, ["top_p"]),
    (CHAT, {"messages": MSGS, "min_p": 1.5}, ["min_p"]),
    (CHAT, {"messages": MSGS, "top_k": "many"}, ["top_k"]),
    (CHAT, {"messages": MSGS, "repeat_penalty": -1}, ["repeat_penalty"]),
    (CHAT, {"messages": MSGS, "seed": "abc"}, ["seed"]),
    (CHAT, {"messages": MSGS, "stop": 5}, ["stop"]),
    (CHAT, {"messages": MSGS, "logit_bias": {"not-a-token": 1}}, ["logit_bias"]),
    (CHAT, {"messages": MSGS, "n": 2}, ["n"]),
    # JSON has no NaN: a strict parser rejects the body, a lenient one the value
    (CHAT, b'{"messages": [{"role": "user", "content": "Hi"}], "temperature": NaN}', ["temperature", "json"]),
    (CHAT, {"messages": [{"role": 1, "content": "Hi"}]}, ["role"]),
    (CHAT, {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, ["content"]),
    (CHAT, {"messages": MSGS, "max_tokens": -2}, ["max_tokens"]),
    (CHAT, {"messages": MSGS, "stop": [f"s{i}" for i in range(17)]}, ["stop"]),
    (CHAT, {"messages": MSGS, "logit_bias": {"99999999": 1}}, ["logit_bias"]),
    (CHAT, {"messages": MSGS, "stream_options": True}, ["stream_options"]),
    ("/v1/completions", {"max_tokens": 2}, ["prompt"]),
    ("/v1/completions", {"prompt": ""}, ["prompt"]),
    ("/v1/completions", {"prompt": []}, ["prompt"]),
    ("/v1/completions", {"prompt": [504, 99999999]}, ["prompt"]),
    ("/v1/completions", {"prompt": [-1]}, ["prompt"]),
    ("/v1/completions", {"prompt": 7}, ["prompt"]),
    ("/v1/completions", {"prompt": "Hi", "temperature": "x"}, ["temperature"]),
]


@pytest.mark.parametrize("path,body,names", BAD_REQUESTS, ids=[str(i) for i in range(len(BAD_REQUESTS))])
def test_bad_request(server, path, body, names):
    assert_error(raw_http.post(server.url, path, body), 400, "invalid_request_error", names)


def test_server_keeps_serving_after_errors(server):
    r = raw_http.post(server.url, CHAT, {"messages": MSGS, "max_tokens": 2})
    assert r.status == 200, r.body


@pytest.mark.parametrize("method,path", [("GET", "/v1/nothing"), ("POST", "/v1/embeddingz"), ("GET", "/v2/models")])
def test_unknown_route(server, method, path):
    r = raw_http.request(server.url, method, path, body=b"{}" if method == "POST" else None)
    assert_error(r, 404, "not_found_error", [path.rsplit("/", 1)[-1], path, "route", "not found"])


def test_prompt_longer_than_context(small_server):
    prompt = "hello " * 300  # ~300 tokens in a 128-token context, in 1.8 KB of body
    r = raw_http.post(small_server.url, "/v1/completions", {"prompt": prompt, "max_tokens": 2})
    assert_error(r, 400, "invalid_request_error", ["context", "prompt"])
    r = raw_http.post(small_server.url, CHAT, {"messages": api.user(prompt), "max_tokens": 2})
    assert_error(r, 400, "invalid_request_error", ["context", "prompt"])
    # a streamed request is refused the same way, before any SSE
    r = raw_http.post(small_server.url, "/v1/completions", {"prompt": prompt, "max_tokens": 2, "stream": True})
    assert_error(r, 400, "invalid_request_error", ["context", "prompt"])
    assert r.headers["content-type"].startswith("application/json")
    # a prompt that fits still works
    r = raw_http.post(small_server.url, "/v1/completions", {"prompt": "hello " * 20, "max_tokens": 2})
    assert r.status == 200, r.body


def test_body_over_max_body(small_server):
    body = {"prompt": "x" * 5000, "max_tokens": 1}
    assert_error(raw_http.post(small_server.url, "/v1/completions", body), 413, "invalid_request_error",
                 ["body", "large", "max-body", "bytes"])
    r = raw_http.post(small_server.url, "/v1/completions", {"prompt": "x" * 100, "max_tokens": 1})
    assert r.status == 200, r.body


def test_generation_ends_at_the_context(small_server):
    """A prompt that fits, but leaves less room than max_tokens: "length" once the slot's 128 cells are
    full (the last token is sampled from the last cell's logits, never decoded: 129 tokens at most)."""
    r = raw_http.post(small_server.url, "/v1/completions", {"prompt": api.COUNTING * 4, "max_tokens": 500, "temperature": 0})
    assert r.status == 200, r.body
    u = r.json()["usage"]
    assert r.json()["choices"][0]["finish_reason"] == "length"
    assert 128 <= u["total_tokens"] <= 129, u


def test_a_port_in_use_is_an_error(server):
    """A second server on a bound port fails (httplib's default SO_REUSEPORT would let it share the port)."""
    port = server.url.rsplit(":", 1)[1]
    r = subprocess.run([os.environ["TESSEL_CLI"], "serve", "-m", os.environ["TESSEL_MODEL"], "--port", port],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr, r.stderr
