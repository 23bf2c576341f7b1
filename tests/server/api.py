"""OpenAI's Python client pointed at a `tessel serve`, and the few values the tests share."""
import os
import re
import subprocess

import openai

# Prompts whose greedy answers run past 64 tokens: a request with a small max_tokens ends at "length".
POEM = "Write a short poem about the sea."
STORY = "Tell me a long story about a dragon and a knight."
ENGINE = "Explain how a car engine works, in detail."
# A raw prompt the model continues by counting for hundreds of tokens: a long generation on demand.
COUNTING = "1, 2, 3, 4, 5, 6, 7, 8,"


def client(server, key="x"):
    """No retries (a 503 or 401 must reach the test) and a timeout that fits a slow sanitizer build."""
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0, timeout=120.0)


def model_id():
    """The id the server reports: the model file's basename."""
    return os.path.basename(os.environ["TESSEL_MODEL"])


def user(text):
    return [{"role": "user", "content": text}]


def batch_invariant_env():
    """The environment of a server whose tokens must not depend on the batch or the prompt cache: its
    split cache guarantees that at the avx2 and scalar tiers (docs/server.md), so a CPU with a higher tier
    is capped at avx2; other architectures run scalar."""
    out = subprocess.run([os.environ["TESSEL_CLI"], "info", "--system"], capture_output=True, text=True, check=True).stdout
    best = re.search(r"^best tier: (\S+)", out, re.MULTILINE).group(1)
    if best in ("scalar", "avx2"):
        return {}
    return {"TESSEL_CPU_ISA": "avx2" if best.startswith("avx512") or best == "amx" else "scalar"}
