"""Pieces shared by the ``highwater`` client commands: the ``--server`` option and error exits.

Client commands fail with exit code 1 and one line on stderr (``highwater: cannot reach
broker at http://127.0.0.1:9092: connection refused``, or the broker's ``error`` and
``message``), never a traceback: the operator's next step is in that line.

``--server`` (or ``HIGHWATER_SERVER``) takes ``host:port``, meaning ``http://host:port``,
or an http(s) URL (``broker.cli.client.broker_url``); anything else stops the command before
it sends a request, with one line and exit code 2, like any other bad setting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console

from broker.cli.client import DEFAULT_SERVER, BrokerError, BrokerUnreachable, RestClient, broker_url

T = TypeVar("T")

EXIT_CLIENT_ERROR = 1
EXIT_BAD_SETTINGS = 2

stderr_console = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = EXIT_CLIENT_ERROR) -> typer.Exit:
    """Print ``highwater: <message>`` on stderr and return the Exit to raise."""
    stderr_console.print(f"highwater: {message}", markup=False)
    return typer.Exit(code)


def server_url_option(value: str | None) -> str | None:
    """The ``--server`` callback: the broker's base URL, or one line and exit code 2."""
    if value is None:
        return None
    try:
        return broker_url(value)
    except ValueError as error:
        raise fail(f"--server: {error}", EXIT_BAD_SETTINGS) from None


ServerOption = Annotated[
    str,
    typer.Option(
        "--server",
        "-s",
        envvar="HIGHWATER_SERVER",
        help="Any broker of the cluster: host:port or http(s)://host:port.",
        show_default=True,
        callback=server_url_option,
    ),
]


def run_client(server: str, action: Callable[[RestClient], Awaitable[T]]) -> T:
    """Run ``action`` with a connected client in one event loop; map failures to one line + exit 1."""

    async def session() -> T:
        async with RestClient(server) as client:
            return await action(client)

    try:
        return asyncio.run(session())
    except BrokerUnreachable as error:
        raise fail(str(error)) from None
    except BrokerError as error:
        raise fail(f"{error.error}: {error.message}") from None


__all__ = ["DEFAULT_SERVER", "ServerOption", "fail", "run_client", "server_url_option", "stderr_console"]
