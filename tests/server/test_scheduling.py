"""Slots and the queue: continuous batching, a client going away, a full queue, SIGTERM mid-stream."""
import http.client
import threading
import time

import pytest

import api
import prometheus
import raw_http


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server("-np", "2", "-c", "4096")


def chat_body(text, n, stream=False):
    return {"messages": api.user(text), "max_tokens": n, "temperature": 0, "stream": stream}


def timed_stream(server, body, out):
    """Streams a chat; out gets the text, the times of its content chunks and the finish reason."""
    s = raw_http.Stream(server.url, "/v1/chat/completions", body)
    try:
        assert s.status == 200
        out["times"], pieces = [], []
        for e in s.events():
            if e == "[DONE]":
                break
            choice = e["choices"][0]
            if choice["delta"].get("content"):
                out["times"].append(time.monotonic())
                pieces.append(choice["delta"]["content"])
            if choice["finish_reason"]:
                out["finish"] = choice["finish_reason"]
        out["end"] = time.monotonic()
        out["text"] = "".join(pieces)
    finally:
        s.close()


def wait_idle(server, within):
    """Seconds until /metrics shows no busy slot; fails after `within` seconds."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        if prometheus.scrape(server.url)["tessel_slots_busy"] == 0:
            return time.monotonic() - t0
        time.sleep(0.1)
    raise AssertionError(f"a slot is still busy {within} s after its client went away")


def test_two_streams_decode_together(server):
    prompts = [api.STORY, api.ENGINE]
    alone = []
    for p in prompts:
        r = raw_http.post(server.url, "/v1/chat/completions", chat_body(p, 48))
        alone.append(r.json()["choices"][0]["message"]["content"])
    outs = [{}, {}]
    threads = [threading.Thread(target=timed_stream, args=(server, chat_body(p, 48, True), o)) for p, o in zip(prompts, outs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(o.get("finish") == "length" for o in outs), outs
    # both had produced tokens before either finished
    assert max(o["times"][0] for o in outs) < min(o["end"] for o in outs)
    assert [o["text"] for o in outs] == alone


def test_stream_disconnect_frees_the_slot(server):
    # counting for 2000 tokens takes tens of seconds: the slot must be free long before
    s = raw_http.Stream(server.url, "/v1/completions", {"prompt": api.COUNTING, "max_tokens": 2000, "temperature": 0,
                                                        "stream": True})
    events = s.events()
    for _ in range(2):
        assert next(events)["choices"][0]["finish_reason"] is None
    assert prometheus.scrape(server.url)["tessel_slots_busy"] == 1
    s.close()
    assert wait_idle(server, within=5.0) < 5.0


def test_non_stream_disconnect_frees_the_slot(server):
    s = raw_http.Stream(server.url, "/v1/completions", {"prompt": api.COUNTING, "max_tokens": 2000, "temperature": 0})
    t0 = time.monotonic()
    while prometheus.scrape(server.url)["tessel_slots_busy"] != 1:
        assert time.monotonic() - t0 < 10, "the request never took a slot"
        time.sleep(0.05)
    time.sleep(0.5)
    s.close()
    assert wait_idle(server, within=5.0) < 5.0


def test_full_queue_answers_503(start_server):
    s = start_server("-np", "1", "--queue", "1")
    replies = [None] * 3

    def ask(i):
        replies[i] = raw_http.post(s.url, "/v1/completions", {"prompt": api.COUNTING, "max_tokens": 100, "temperature": 0})

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    # one request decodes, one waits in the queue, the third finds the queue full
    assert sorted(r.status for r in replies) == [200, 200, 503], [(r.status, r.body) for r in replies]
    full = next(r for r in replies if r.status == 503)
    assert int(full.headers["retry-after"]) >= 0
    assert full.json()["error"]["type"] == "unavailable_error"


def test_sigterm_during_stream_exits_0(start_server):
    s = start_server("-np", "1")
    st = raw_http.Stream(s.url, "/v1/completions", {"prompt": api.COUNTING, "max_tokens": 2000, "temperature": 0,
                                                    "stream": True}, timeout=10.0)
    events = st.events()
    for _ in range(2):
        next(events)
    t0 = time.monotonic()
    assert s.stop(timeout=10.0) == 0
    assert time.monotonic() - t0 < 5.0
    # the stream ends (the server ended it, or closed the connection) rather than hanging
    try:
        for _ in events:
            pass
    except (OSError, http.client.HTTPException) as e:
        print("stream cut by the shutdown:", e)
    st.close()
