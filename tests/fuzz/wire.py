"""Raw HTTP for the binary fuzz tests: exact bytes out, status and body back, a hang is a failure;
and ``Target``, the partition under fuzz whose stored bytes must never change.

``http.client`` on a socket with a timeout: if a broker neither answers nor closes
within ``ANSWER_TIMEOUT_S``, the call raises ``TimeoutError`` and the test fails, which
is how these tests prove no input leaves a request hanging.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

ANSWER_TIMEOUT_S = 10.0
BATCH = "application/vnd.kafka.batch.v2"


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> dict:
        return json.loads(self.body)


def post(
    url: str,
    body: bytes,
    content_type: str,
    timeout_s: float = ANSWER_TIMEOUT_S,
    headers: dict[str, str] | None = None,
) -> Answer:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout_s)
    try:
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", path, body=body, headers={"Content-Type": content_type, **(headers or {})})
        response = connection.getresponse()
        return Answer(response.status, response.read(), dict(response.getheaders()))
    finally:
        connection.close()


def get(url: str, accept: str = "application/json", timeout_s: float = ANSWER_TIMEOUT_S) -> Answer:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout_s)
    try:
        connection.request("GET", parts.path + f"?{parts.query}", headers={"Accept": accept})
        response = connection.getresponse()
        return Answer(response.status, response.read(), dict(response.getheaders()))
    finally:
        connection.close()


def trickle(
    url: str,
    body: bytes,
    content_type: str,
    sent_bytes: int,
    pause_s: float,
    timeout_s: float = ANSWER_TIMEOUT_S,
    headers: dict[str, str] | None = None,
) -> tuple[int | None, float]:
    """Announce ``len(body)`` bytes, send the first ``sent_bytes`` one by one ``pause_s`` apart, then stall.

    Returns the status line's code (None if the broker closed without answering) and
    how long the answer took after the sender stalled.
    """
    parts = urlsplit(url)
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    head = (
        f"POST {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    ).encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout_s) as sock:
        sock.sendall(head)
        for index in range(sent_bytes):
            sock.sendall(body[index : index + 1])
            # The slowness is the input under test: a sender's pace, with nothing to wait for.
            time.sleep(pause_s)
        stalled = time.monotonic()
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
        waited_s = time.monotonic() - stalled
    if not reply.startswith(b"HTTP/1.1 "):
        return None, waited_s
    return int(reply.split(b" ", 2)[1]), waited_s


@dataclass
class Target:
    partition_url: str
    stored: bytes
    """The raw batches written before fuzzing, as the leader serves them."""

    def log_end_offset(self) -> int:
        answer = get(f"{self.partition_url}/offset")
        assert answer.status == 200, answer.body
        return answer.json()["log_end_offset"]

    def raw_from_zero(self) -> bytes:
        answer = get(f"{self.partition_url}/records?offset=0&max_bytes=1048576", accept=BATCH)
        assert answer.status == 200, answer.body
        return answer.body
