"""The prompt cache: a request sharing a prefix with the slot's last one decodes only the rest, and
greedy results do not depend on it (--no-prompt-cache decodes every prompt in full)."""
import pytest

import api
import prometheus
import raw_http

PREFIX = ("The lighthouse keeper kept a logbook of every ship that passed the rocky point. Over forty years "
          "he wrote down the weather, the tides, the names of the vessels and the cargo they carried, and "
          "sometimes a line about the sailors who waved from the decks. When he retired, the town library "
          "took the logbooks and a historian began to read them, one page at a time, looking for patterns.\n")
QUESTIONS = ["Question: What did the keeper write down?\nAnswer:", "Question: Who read the logbooks?\nAnswer:"]


def complete(server, prompt):
    r = raw_http.post(server.url, "/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0})
    assert r.status == 200, r.body
    return r.json()


@pytest.fixture(scope="module")
def cached(start_module_server):
    return start_module_server("-np", "1", env=api.batch_invariant_env())


@pytest.fixture(scope="module")
def uncached(start_module_server):
    return start_module_server("-np", "1", "--no-prompt-cache", env=api.batch_invariant_env())


def test_shared_prefix_is_reused(cached, uncached):
    prefix_tokens = complete(uncached, PREFIX)["usage"]["prompt_tokens"]
    assert prefix_tokens > 80
    cache_before = prometheus.scrape(cached.url)["tessel_prompt_cache_tokens_total"]
    first, second = (complete(cached, PREFIX + q) for q in QUESTIONS)
    t1, t2 = first["timings"], second["timings"]
    assert t1["cache_n"] == 0 and t1["prompt_n"] == first["usage"]["prompt_tokens"]
    # the second reuses (about) the whole prefix: a token may merge across the prefix's end
    assert t2["cache_n"] >= prefix_tokens - 2, t2
    assert t2["prompt_n"] < t1["prompt_n"]
    assert t2["cache_n"] + t2["prompt_n"] == second["usage"]["prompt_tokens"], (t2, second["usage"])
    cache_after = prometheus.scrape(cached.url)["tessel_prompt_cache_tokens_total"]
    assert cache_after - cache_before == t2["cache_n"]


def test_no_prompt_cache_decodes_everything(uncached):
    for q in QUESTIONS:
        r = complete(uncached, PREFIX + q)
        assert r["timings"]["cache_n"] == 0
        assert r["timings"]["prompt_n"] == r["usage"]["prompt_tokens"]


def test_cache_does_not_change_greedy_text(cached, uncached):
    for q in QUESTIONS + QUESTIONS[::-1]:
        with_cache, without = complete(cached, PREFIX + q), complete(uncached, PREFIX + q)
        assert with_cache["choices"][0]["text"] == without["choices"][0]["text"], q


def test_prefix_copied_from_a_busy_slot(start_server, uncached):
    """Slot 2 takes the shared prefix from slot 1 while slot 1 is still generating."""
    s = start_server("-np", "2", env=api.batch_invariant_env())
    counting = raw_http.Stream(s.url, "/v1/completions", {"prompt": PREFIX + "Count: 1, 2, 3, 4, 5,", "max_tokens": 1000,
                                                          "temperature": 0, "stream": True})
    events = counting.events()
    for _ in range(2):
        assert next(events)["choices"][0]["finish_reason"] is None
    prefix_tokens = complete(uncached, PREFIX)["usage"]["prompt_tokens"]
    r = complete(s, PREFIX + QUESTIONS[0])
    assert r["timings"]["cache_n"] >= prefix_tokens - 2, r["timings"]
    assert r["choices"][0]["text"] == complete(uncached, PREFIX + QUESTIONS[0])["choices"][0]["text"]
    assert prometheus.scrape(s.url)["tessel_slots_busy"] == 1  # slot 1 generated all along
    counting.close()
