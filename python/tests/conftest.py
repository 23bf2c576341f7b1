"""Fixtures of the tessel Python tests: the expectations api_expect writes (llama.cpp's reference
data and the C++ API's results, tests/api/api_expect.cpp) and the tessel CLI, both named by
environment variables (scripts/test-python.sh sets them). A missing variable fails the test
that needs it, saying what to set: these tests never pass without having run."""
from __future__ import annotations

import os
from pathlib import Path

import pytest


def _required_env(name: str, what: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: it must name {what} (scripts/test-python.sh sets it)", pytrace=False)
    return value


def _parse(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition(" ")
        if key in ("model", "utf8_text", "prompt_text", "cpp_greedy_text"):
            out[key] = bytes.fromhex(rest).decode("utf-8")
        elif key in ("ref_top1_margin",):
            out[key] = float(rest)
        elif key in ("n_vocab", "ref_top1"):
            out[key] = int(rest)
        else:
            values = rest.split()[1:]
            out[key] = [float(v) for v in values] if key.endswith("logits") else [int(v) for v in values]
    return out


@pytest.fixture(scope="session")
def expect() -> dict:
    return _parse(Path(_required_env("TESSEL_API_EXPECT", "the file api_expect wrote")))


@pytest.fixture(scope="session")
def model_path(expect) -> str:
    return expect["model"]


@pytest.fixture(scope="session")
def model(model_path):
    import tessel

    return tessel.Model(model_path)


@pytest.fixture(scope="session")
def cli() -> str:
    return _required_env("TESSEL_CLI", "the built tessel binary")
