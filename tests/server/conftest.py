"""Fixtures of the `tessel serve` tests: start a server on 127.0.0.1 (a free port) and stop it with SIGTERM.

Environment (scripts/test-server.sh sets both):
  TESSEL_CLI    the tessel binary (a release or a sanitizer build)
  TESSEL_MODEL  the GGUF model to serve (the default model, SmolLM2-135M-Instruct Q4_1)
"""
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request

import pytest

LISTENING = re.compile(r"listening on http://([0-9.]+):([0-9]+)")


class Server:
    """A running `tessel serve`; `url` is its base URL (http://127.0.0.1:PORT)."""

    def __init__(self, args, env=None, ready_timeout=180.0):
        cli = os.environ["TESSEL_CLI"]
        model = os.environ["TESSEL_MODEL"]
        cmd = [cli, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0", *args]
        self.log = []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self._found = threading.Event()
        self.url = None
        threading.Thread(target=self._read_stderr, daemon=True).start()
        deadline = time.monotonic() + ready_timeout
        while not self._found.wait(0.1):
            if self.proc.poll() is not None:
                raise RuntimeError(f"tessel serve exited with {self.proc.returncode} before listening:\n" + self.text())
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("tessel serve did not start listening in time:\n" + self.text())
        # the line is printed once the socket is bound: /health must answer now
        with urllib.request.urlopen(self.url + "/health", timeout=30) as r:
            assert r.status == 200

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.log.append(line)
            m = LISTENING.search(line)
            if m and self.url is None:
                self.url = f"http://{m.group(1)}:{m.group(2)}"
                self._found.set()

    def text(self):
        return "".join(self.log)

    def stop(self, timeout=60.0):
        """SIGTERM, then the exit code (a clean shutdown is 0); kills it after `timeout` seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"tessel serve did not exit within {timeout} s of SIGTERM:\n" + self.text())
        return self.proc.returncode


@pytest.fixture
def start_server():
    """start_server(*args, env=None) -> Server; every server started is stopped (SIGTERM) after the test."""
    started = []

    def start(*args, env=None):
        s = Server(list(args), env=env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
