"""An OpenAI-compatible server under test for bench/server.py: its process and its requests.

Standard library only. One `Server` is a running process (tessel serve or llama-server) on a free
127.0.0.1 port, its output in a log file; `complete` sends one non-stream /v1/completions request,
`first_token` one stream request and times its first content chunk.
"""
from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name: str, cmd: list[str], port: int, log: Path):
        self.name, self.cmd, self.port, self.log = name, cmd, port, log
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> None:
        """Starts the process and waits until GET /health answers 200 (llama-server: 503 while loading)."""
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} while starting:\n{self.log_tail()}")
            try:
                status, _ = self.request("GET", "/health", None, timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} not healthy after {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def connection(self, timeout: float = 600) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method: str, path: str, body: dict | None, timeout: float = 600) -> tuple[int, bytes]:
        conn = self.connection(timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def complete(self, body: dict) -> dict:
        """One non-stream /v1/completions request; its JSON answer."""
        status, data = self.request("POST", "/v1/completions", dict(body, stream=False))
        if status != 200:
            raise RuntimeError(f"{self.name}: /v1/completions answered {status}: {data[:500]!r}")
        return json.loads(data)

    def first_token(self, body: dict) -> tuple[float, dict]:
        """One stream /v1/completions request on a connection opened beforehand: seconds from sending it
        to the first chunk with text, and the last chunk that carried "timings" (or {})."""
        conn = self.connection()
        try:
            conn.connect()
            t0 = time.perf_counter()
            conn.request("POST", "/v1/completions", body=json.dumps(dict(body, stream=True)).encode(),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise RuntimeError(f"{self.name}: stream answered {resp.status}: {resp.read()[:500]!r}")
            ttft, last = None, {}
            while True:
                line = resp.readline()
                if not line:
                    break
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue  # blank separators, ": keep-alive" comments
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    break
                chunk = json.loads(payload)
                choices = chunk.get("choices") or []
                if ttft is None and choices and choices[0].get("text"):
                    ttft = time.perf_counter() - t0
                if "timings" in chunk:
                    last = chunk
            if ttft is None:
                raise RuntimeError(f"{self.name}: the stream ended without a text chunk")
            return ttft, last
        finally:
            conn.close()
