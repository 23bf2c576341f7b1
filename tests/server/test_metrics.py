"""GET /metrics: Prometheus text holding the contract's metrics, whose counters follow the requests served."""
import pytest

import api
import prometheus

METRICS = ["tessel_requests_total", "tessel_prompt_tokens_total", "tessel_tokens_predicted_total",
           "tessel_prompt_tokens_seconds", "tessel_predicted_tokens_seconds", "tessel_slots_busy",
           "tessel_slots_total", "tessel_queue_length", "tessel_prompt_cache_tokens_total"]


@pytest.fixture(scope="module")
def server(start_module_server):
    return start_module_server("-np", "3")


def test_metrics_present(server):
    m = prometheus.scrape(server.url)
    missing = [name for name in METRICS if name not in m]
    assert not missing, f"missing metrics: {missing}"
    assert m["tessel_slots_total"] == 3
    assert m["tessel_slots_busy"] == 0
    assert m["tessel_queue_length"] == 0


def test_counters_follow_a_request(server):
    before = prometheus.scrape(server.url)
    r = api.client(server).chat.completions.create(model="m", messages=api.user(api.POEM), max_tokens=10, temperature=0)
    after = prometheus.scrape(server.url)
    assert after["tessel_requests_total"] - before["tessel_requests_total"] == 1
    assert after["tessel_tokens_predicted_total"] - before["tessel_tokens_predicted_total"] == r.usage.completion_tokens
    decoded = r.model_extra["timings"]["prompt_n"]
    assert decoded <= after["tessel_prompt_tokens_total"] - before["tessel_prompt_tokens_total"] <= r.usage.prompt_tokens
    assert after["tessel_predicted_tokens_seconds"] > 0
    assert after["tessel_slots_busy"] == 0
