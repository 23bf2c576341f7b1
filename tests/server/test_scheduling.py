"""Slots and the queue: continuous batching, a client going away, a full queue, SIGTERM or SIGINT mid-stream."""
import contextlib
import http.client
import json
import signal
import threading
import time

import pytest

import api
import prometheus
import raw_http


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server("-np", "2", "-c", "4096", env=api.batch_invariant_env())


def timed_stream(server, body, out):
    """Streams a chat; out gets the text, the times of its content chunks and the finish reason."""
    s = raw_http.Stream(server.url, "/v1/chat/completions", {**body, "stream": True})
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


def wait_metric(server, name, value, within=10.0):
    """Polls /metrics until `name` equals `value`; fails after `within` seconds."""
    t0 = time.monotonic()
    while prometheus.scrape(server.url)[name] != value:
        assert time.monotonic() - t0 < within, f"{name} did not reach {value} in {within} s"
        time.sleep(0.02)


def test_two_streams_decode_together(server):
    # Stories whose greedy tokens hit near-ties within 48 tokens: with a cache shared by the slots they
    # changed with the batch; split per slot, each is the same alone or decoded with the other.
    bodies = [{"messages": api.user(p), "max_tokens": 48, "temperature": 0} for p in (api.STORY, api.ENGINE)]
    alone = [raw_http.post(server.url, "/v1/chat/completions", b).json()["choices"][0]["message"]["content"] for b in bodies]
    outs = [{}, {}]
    threads = [threading.Thread(target=timed_stream, args=(server, b, o)) for b, o in zip(bodies, outs)]
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
    wait_metric(server, "tessel_slots_busy", 0, within=5.0)


def test_non_stream_disconnect_frees_the_slot(server):
    s = raw_http.Stream(server.url, "/v1/completions", {"prompt": api.COUNTING, "max_tokens": 2000, "temperature": 0})
    wait_metric(server, "tessel_slots_busy", 1)
    time.sleep(0.5)
    s.close()
    wait_metric(server, "tessel_slots_busy", 0, within=5.0)


def test_full_queue_answers_503(start_server):
    s = start_server("-np", "1", "--queue", "1")
    body = {"prompt": api.COUNTING, "max_tokens": 150, "temperature": 0}
    running = raw_http.Stream(s.url, "/v1/completions", body)
    wait_metric(s, "tessel_slots_busy", 1)
    queued = raw_http.Stream(s.url, "/v1/completions", body)
    wait_metric(s, "tessel_queue_length", 1)
    full = raw_http.post(s.url, "/v1/completions", body)
    assert full.status == 503, full.body
    assert int(full.headers["retry-after"]) >= 0
    assert full.json()["error"]["type"] == "unavailable_error"
    for r in (running, queued):
        assert r.status == 200
        assert json.loads(r.response().read())["usage"]["completion_tokens"] == 150
        r.close()


def test_queue_0_serves_free_slots(start_server):
    """--queue 0: nothing waits, but a request that finds a free slot runs."""
    s = start_server("-np", "1", "--queue", "0")
    r = raw_http.post(s.url, "/v1/completions", {"prompt": "Hello", "max_tokens": 2})
    assert r.status == 200, r.body


def test_disconnect_while_queued_leaves_the_queue(start_server):
    s = start_server("-np", "1", "--queue", "2")
    body = {"prompt": api.COUNTING, "max_tokens": 300, "temperature": 0}
    running = raw_http.Stream(s.url, "/v1/completions", body)
    wait_metric(s, "tessel_slots_busy", 1)
    queued = raw_http.Stream(s.url, "/v1/completions", body)
    wait_metric(s, "tessel_queue_length", 1)
    queued.close()
    wait_metric(s, "tessel_queue_length", 0, within=3.0)
    assert s.stop() == 0  # also ends the running request
    running.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_during_stream_exits_0(start_server, sig):
    s = start_server("-np", "1")
    st = raw_http.Stream(s.url, "/v1/completions", {"prompt": api.COUNTING, "max_tokens": 2000, "temperature": 0,
                                                    "stream": True}, timeout=10.0)
    events = st.events()
    for _ in range(2):
        next(events)
    t0 = time.monotonic()
    s.proc.send_signal(sig)
    assert s.proc.wait(10.0) == 0
    assert time.monotonic() - t0 < 5.0
    # the stream ends (an error event and [DONE], or the connection cut) rather than hanging
    with contextlib.suppress(OSError, http.client.HTTPException):
        for _ in events:
            pass
    st.close()
