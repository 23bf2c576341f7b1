"""Plain HTTP to `tessel serve` with the stdlib's http.client: status codes, headers and SSE events
exactly as sent, which the openai client hides (it retries, raises typed errors and drops `[DONE]`)."""
import http.client
import json
import socket
import urllib.parse


class Reply:
    """A finished response: status, headers (lower-case names) and the body's bytes."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)


def _connect(url, timeout):
    u = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)


def _encode(body):
    """A dict/list is sent as JSON; bytes or str as given (malformed JSON, oversized bodies)."""
    return body if body is None or isinstance(body, (bytes, str)) else json.dumps(body)


def request(url, method, path, body=None, headers=None, timeout=120.0):
    conn = _connect(url, timeout)
    try:
        conn.request(method, path, body=_encode(body), headers={"Content-Type": "application/json", **(headers or {})})
        r = conn.getresponse()
        return Reply(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    finally:
        conn.close()


def get(url, path, **kw):
    return request(url, "GET", path, **kw)


def post(url, path, body, **kw):
    return request(url, "POST", path, body, **kw)


class Stream:
    """A POST whose response is read incrementally (SSE, or a body not read at all); close() drops
    the TCP connection at once, as a client that goes away would."""

    def __init__(self, url, path, body, headers=None, timeout=120.0):
        self._conn = _connect(url, timeout)
        self._conn.request("POST", path, body=_encode(body), headers={"Content-Type": "application/json", **(headers or {})})
        self._sock = self._conn.sock  # getresponse() may hand the socket to the response: keep it to shut it down
        self._response = None

    def response(self):
        if self._response is None:
            self._response = self._conn.getresponse()
        return self._response

    @property
    def status(self):
        return self.response().status

    def header(self, name):
        return self.response().getheader(name)

    def events(self):
        """Each `data:` payload in order: a parsed JSON object, or the string "[DONE]"; SSE comments
        (": keep-alive") and blank separator lines are skipped."""
        for raw in self.response():
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line or line.startswith(":"):
                continue
            assert line.startswith("data: "), f"not an SSE data line: {line!r}"
            payload = line[len("data: "):]
            yield payload if payload == "[DONE]" else json.loads(payload)

    def close(self):
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the server closed it first
        self._sock.close()
        if self._response is not None:
            self._response.close()
        self._conn.close()
