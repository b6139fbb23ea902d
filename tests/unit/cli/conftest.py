"""Fixtures for the CLI tests: a REST server on 127.0.0.1, a port nothing listens on, logging put back."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator

import pytest
import structlog

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


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The root logger and structlog as they were: a test that configures logging leaves no trace."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()
