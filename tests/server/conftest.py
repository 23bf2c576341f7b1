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
# What a sanitizer build prints when it finds a bug (ASan/LSan/TSan reports, UBSan's "runtime error:").
SANITIZER_MARKS = ["AddressSanitizer", "LeakSanitizer", "ThreadSanitizer", "runtime error:"]


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
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
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

    def sanitizer_reports(self):
        return [line for line in self.log if any(mark in line for mark in SANITIZER_MARKS)]

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
        self._reader.join(10.0)  # stderr to its end: a sanitizer reports at exit
        return self.proc.returncode


def _stop_all(servers):
    """Stops every server; one that exits non-zero or printed a sanitizer report fails the test."""
    bad = []
    for s in servers:
        try:
            rc = s.stop()
        except AssertionError as e:  # it hung: killed, and the others are still stopped
            bad.append(str(e))
            continue
        if rc != 0 or s.sanitizer_reports():
            bad.append(f"tessel serve {' '.join(s.proc.args[2:])}: exit code {rc}; stderr:\n{s.text()[-8000:]}")
    assert not bad, "\n".join(bad)


def _starter():
    """A start(*args, env=None) -> Server function and the list of the servers it started."""
    started = []

    def start(*args, env=None):
        s = Server(list(args), env=env)
        started.append(s)
        return s

    return start, started


@pytest.fixture
def start_server():
    """start_server(*args, env=None) -> Server; every server started is stopped (SIGTERM) after the test,
    which fails if one exits non-zero or printed a sanitizer report."""
    start, started = _starter()
    yield start
    _stop_all(started)


@pytest.fixture(scope="module")
def start_module_server():
    """As start_server, but the servers live until the module's last test: one server for a group of tests."""
    start, started = _starter()
    yield start
    _stop_all(started)
