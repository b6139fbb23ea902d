"""Fixtures for the CLI tests: a REST server on 127.0.0.1 and a port nothing listens on."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from tests.unit.cli.rest_server import RestServer


@pytest.fixture(autouse=True)
def clean_highwater_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HIGHWATER_"):
            monkeypatch.delenv(name)


@pytest.fixture
def rest_server() -> Iterator[RestServer]:
    server = RestServer().start()
    yield server
    server.stop()


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL whose port was just bound and released, so connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
