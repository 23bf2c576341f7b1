"""GET /metrics parsed as Prometheus' text format, strictly enough that a malformed line fails the test."""
import re

import raw_http

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(rf"^({NAME})(\{{[^}}]*\}})?[ \t]+(\S+)(?:[ \t]+-?[0-9]+)?$")
TYPE = re.compile(rf"^# TYPE {NAME} (counter|gauge|histogram|summary|untyped)$")


def parse(text):
    """{"name" or "name{labels}": value} of every sample line; asserts on any line that is neither a
    sample, a comment (# HELP, a well-formed # TYPE, other #) nor blank."""
    samples = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("# TYPE"):
            assert TYPE.match(line), f"malformed TYPE line: {line!r}"
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return samples


def scrape(url, headers=None):
    r = raw_http.get(url, "/metrics", headers=headers)
    assert r.status == 200, r.body
    assert r.headers.get("content-type", "").startswith("text/plain"), r.headers
    return parse(r.body.decode("utf-8"))
