"""A raw Kafka connection for tests: frames out, frames back, and whether the broker closed it."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kio.index import load_response_schema
from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsResponseV3

from broker.kafka.codec import decode_response, encode_request
from broker.kafka.framing import encode_frame
from tests.unit.kafka import requests

TIMEOUT_S = 10.0


class Connection:
    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive_frame(self) -> bytes | None:
        """The next response payload, or None once the broker closed the connection."""
        prefix = self._exactly(4)
        if prefix is None:
            return None
        (size,) = struct.unpack(">i", prefix)
        return self._exactly(size)

    def _exactly(self, count: int) -> bytes | None:
        data = b""
        while len(data) < count:
            try:
                chunk = self.sock.recv(count - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def closed_by_broker(self) -> bool:
        return self.receive_frame() is None

    def api_versions_answer(self, correlation_id: int = 77) -> ApiVersionsResponseV3:
        self.send(encode_frame(encode_request(correlation_id, requests.api_versions(3))))
        payload = self.receive_frame()
        assert payload is not None, "a healthy connection was closed"
        got, response = decode_response(payload, ApiVersionsResponseV3)
        assert got == correlation_id
        return response

    def close(self) -> None:
        self.sock.close()

    def call(self, request: Any, correlation_id: int = 5) -> Any:
        """Send ``request`` (a kio request) and decode its answer as the same API and version."""
        self.send(encode_frame(encode_request(correlation_id, request)))
        payload = self.receive_frame()
        assert payload is not None, "the broker closed the connection"
        got, response = decode_response(payload, load_response_schema(request.__api_key__, request.__version__))
        assert got == correlation_id
        return response
