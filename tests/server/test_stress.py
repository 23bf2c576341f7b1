"""32 streaming clients against 4 slots for TESSEL_STRESS_SECONDS (default 60): every stream completes,
then SIGTERM exits 0 with no sanitizer report on stderr (CI runs it on the ASan build)."""
import os
import random
import threading
import time

import api
import prometheus
import raw_http

CLIENTS = 32
SUBJECTS = ["the moon", "a red bicycle", "bread", "the ocean", "a quiet library", "winter", "honeybees", "a clock"]
ASKS = ["Describe {} in one sentence.", "Write a haiku about {}.", "Give me three facts about {}.", "What rhymes with {}?"]


def one_stream(url, body):
    """Streams one chat to its end; returns None, or what went wrong."""
    s = raw_http.Stream(url, "/v1/chat/completions", body, timeout=600.0)
    try:
        if s.status != 200:
            return f"HTTP {s.status}: {s.response().read()[:300]!r}"
        finish, done = None, False
        for e in s.events():
            if e == "[DONE]":
                done = True
                break
            if e["choices"] and e["choices"][0]["finish_reason"]:
                finish = e["choices"][0]["finish_reason"]
        if finish not in ("stop", "length") or not done:
            return f"stream ended without a finish reason or [DONE] (finish {finish!r}, done {done})"
        return None
    finally:
        s.close()


def client(url, i, deadline, completed, failures):
    rng = random.Random(i)
    while time.monotonic() < deadline:
        prompt = rng.choice(ASKS).format(rng.choice(SUBJECTS)) + f" (request {completed[i]} of client {i})"
        body = {"messages": api.user(prompt), "max_tokens": rng.randint(8, 32), "stream": True,
                "temperature": rng.choice([0, 0.8]), "seed": rng.randint(0, 1000)}
        try:
            problem = one_stream(url, body)
        except Exception as e:  # any exception in a client is a failure of the test, reported with the rest
            problem = f"{type(e).__name__}: {e}"
        if problem:
            failures.append(f"client {i}: {problem}")
            return
        completed[i] += 1


def test_stress_concurrent_streams(start_server, capsys):
    seconds = float(os.environ.get("TESSEL_STRESS_SECONDS", "60"))
    server = start_server("-np", "4", "--queue", "32", "-c", "2048")
    completed, failures = [0] * CLIENTS, []
    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(server.url, i, t0 + seconds, completed, failures), daemon=True)
               for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, t0 + seconds + 600 - time.monotonic()))
    elapsed = time.monotonic() - t0
    with capsys.disabled():
        print(f"\nstress: {sum(completed)} streams completed in {elapsed:.1f} s by {CLIENTS} clients; "
              f"per client min {min(completed)} max {max(completed)}")
    assert not [t for t in threads if t.is_alive()], "clients still running 600 s after the deadline"
    assert not failures, "\n".join(failures)
    assert min(completed) > 0, completed
    m = prometheus.scrape(server.url)
    assert m["tessel_slots_busy"] == 0 and m["tessel_queue_length"] == 0, m
    assert m["tessel_requests_total"] >= sum(completed)
    rc = server.stop()
    reports = server.sanitizer_reports()
    assert rc == 0 and not reports, f"exit code {rc}, sanitizer reports {reports[:5]}; stderr:\n" + server.text()[-20000:]
