"""Pieces shared by the ``highwater`` client commands: the ``--server`` option and error exits.

Client commands fail with exit code 1 and one line on stderr, never a traceback: the
operator's next step is in that line. The line is ``highwater: cannot reach broker at
http://127.0.0.1:9092: <reason>`` when the broker gave no answer, its error name and
message (``UNKNOWN_TOPIC_OR_PARTITION: ...``) when it answered with an error, and
``HTTP_<status>: <start of the answer>`` when what answered is not the broker's API.
Two reasons carry the next step: a refused connection on this machine says no broker
listens there and that ``make run`` starts one; a connection closed without an answer
by an address that answers the Kafka protocol (``broker.cli.kafka_probe``) says it is a
Kafka listener and where the HTTP API is.

``--server`` (or ``HIGHWATER_SERVER``) takes ``host:port``, meaning ``http://host:port``,
or an http(s) URL (``broker.cli.address``); anything else stops the command before
it sends a request, with one line and exit code 2, like any other bad setting.

Security options, the same names as every client's: ``--username`` (``HIGHWATER_USERNAME``)
with the password from ``HIGHWATER_PASSWORD`` (only the environment: a flag would show
in ``ps`` and shell history), and ``--ssl-ca-file``/``--ssl-cert-file``/``--ssl-key-file``
(``HIGHWATER_SSL_CA_FILE``...) for ``https://`` brokers. A command that does not declare
the flags still honours the environment (``run_client`` without ``security``).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from yarl import URL

from broker.cli.address import DEFAULT_SERVER, broker_url
from broker.cli.kafka_probe import speaks_kafka
from broker.client.admin import AdminClient
from broker.client.errors import BrokerUnreachable, TlsHandshakeFailed
from broker.client.http import CLOSED_BY_BROKER, CONNECTION_REFUSED, ClusterClient
from broker.client.security import ClientSecurity
from broker.errors import HighwaterError
from config import variables

T = TypeVar("T")

EXIT_CLIENT_ERROR = 1
EXIT_BAD_SETTINGS = 2
REQUEST_TIMEOUT_MS = 60_000
CONNECT_TIMEOUT_MS = 5_000
"""A broker that does not accept the connection within this is reported at once, not after the request timeout."""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
NOTHING_LISTENING_HINT = "no broker is listening there"
MAKE_RUN_HINT = "make run starts a local cluster on 127.0.0.1:9092"
KAFKA_LISTENER_HINT = (
    "this is a Kafka listener (it answers the Kafka protocol, not HTTP); highwater's HTTP API is on "
    "another port (make run: 9092-9094, each Kafka port - 10000)"
)

stderr_console = Console(stderr=True, highlight=False, soft_wrap=True)


def cell(value: object) -> str:
    """A table cell: ``-`` for what is not there (null, or the ``""`` of a partition no member owns)."""
    return "-" if value is None or value == "" else str(value)


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
        envvar=variables.SERVER,
        help="Any broker of the cluster: host:port or http(s)://host:port.",
        show_default=True,
        callback=server_url_option,
    ),
]


UsernameOption = Annotated[
    str | None,
    typer.Option(
        "--username",
        envvar=variables.USERNAME,
        help=f"User for HTTP Basic authentication; the password is read from {variables.PASSWORD} only.",
    ),
]
SslCaFileOption = Annotated[
    Path | None,
    typer.Option(
        "--ssl-ca-file", envvar=variables.SSL_CA_FILE, help="PEM CA bundle for https brokers (default: system)."
    ),
]
SslCertFileOption = Annotated[
    Path | None,
    typer.Option("--ssl-cert-file", envvar=variables.SSL_CERT_FILE, help="PEM client certificate (mTLS)."),
]
SslKeyFileOption = Annotated[
    Path | None,
    typer.Option("--ssl-key-file", envvar=variables.SSL_KEY_FILE, help="PEM private key of --ssl-cert-file."),
]


def client_security(
    username: str | None, ssl_ca_file: Path | None, ssl_cert_file: Path | None, ssl_key_file: Path | None
) -> ClientSecurity:
    """A command's security flags (typer already fell back to their variables) plus ``HIGHWATER_PASSWORD``."""
    return ClientSecurity.from_environment(
        username=username, ssl_ca_file=ssl_ca_file, ssl_cert_file=ssl_cert_file, ssl_key_file=ssl_key_file
    )


_SECURITY_PARAMETERS = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    for name, annotation in (
        ("username", UsernameOption),
        ("ssl_ca_file", SslCaFileOption),
        ("ssl_cert_file", SslCertFileOption),
        ("ssl_key_file", SslKeyFileOption),
    )
)


def security_options(command: Callable[..., T]) -> Callable[..., T]:
    """Give a client command the four security flags, received as one ``security: ClientSecurity``.

    Typer reads a command's options from its signature, so the flags are declared here
    once instead of in every command: the command declares a keyword-only ``security``,
    and typer sees ``--username``/``--ssl-*`` in its place.
    """
    signature = inspect.signature(command, eval_str=True)
    kept = [parameter for name, parameter in signature.parameters.items() if name != "security"]

    @functools.wraps(command)
    def with_security(
        *args: object,
        username: str | None = None,
        ssl_ca_file: Path | None = None,
        ssl_cert_file: Path | None = None,
        ssl_key_file: Path | None = None,
        **kwargs: object,
    ) -> T:
        security = client_security(username, ssl_ca_file, ssl_cert_file, ssl_key_file)
        return command(*args, security=security, **kwargs)

    exposed = signature.replace(parameters=[*kept, *_SECURITY_PARAMETERS])
    with_security.__signature__ = exposed  # type: ignore[attr-defined]
    with_security.__annotations__ = {
        parameter.name: parameter.annotation for parameter in exposed.parameters.values()
    } | {"return": exposed.return_annotation}
    return with_security


def run_client(server: str, action: Callable[[AdminClient], Awaitable[T]], security: ClientSecurity | None = None) -> T:
    """Run ``action`` with a client of ``server`` in one event loop; map failures to one line + exit 1.

    ``security`` defaults to the environment's (``ClientSecurity.from_environment()``); unusable
    security options (a missing CA file, a password without a user) stop with exit code 2.
    """
    options = (security or ClientSecurity.from_environment()).client_options()
    try:
        client = ClusterClient(
            [server], request_timeout_ms=REQUEST_TIMEOUT_MS, connect_timeout_ms=CONNECT_TIMEOUT_MS, **options
        )
    except ValueError as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None

    async def session() -> T:
        try:
            return await action(AdminClient(client))
        finally:
            await client.close()

    try:
        return asyncio.run(session())
    except (BrokerUnreachable, TlsHandshakeFailed) as error:
        raise fail(unreachable_line(server, error.details.get("reason", error.message))) from None
    except HighwaterError as error:
        raise fail(error_line(error)) from None
    except json.JSONDecodeError as error:
        raise fail(f"BAD_RESPONSE: not JSON: {error.doc.strip()[:200]}") from None


def unreachable_line(server: str, reason: str) -> str:
    """``cannot reach broker at <server>: <reason>``, with the next step where the reason tells it."""
    url = URL(server)
    if reason == CONNECTION_REFUSED:
        hint = f"; {NOTHING_LISTENING_HINT}" + (f" ({MAKE_RUN_HINT})" if url.host in LOOPBACK_HOSTS else "")
        return f"cannot reach broker at {server}: {reason}{hint}"
    if reason.startswith(CLOSED_BY_BROKER) and _speaks_kafka(url):
        return f"cannot reach broker at {server}: {KAFKA_LISTENER_HINT}"
    return f"cannot reach broker at {server}: {reason}"


def _speaks_kafka(url: URL) -> bool:
    return url.host is not None and url.port is not None and speaks_kafka(url.host, url.port)


def error_line(error: HighwaterError) -> str:
    """The broker's error name and message, or the HTTP status and the start of an answer that is not the API."""
    if "answer" in error.details:
        return f"HTTP_{error.details.get('http_status')}: {error.details['answer']}"
    return f"{error.name}: {error.message}"


__all__ = [
    "DEFAULT_SERVER",
    "ClientSecurity",
    "ServerOption",
    "SslCaFileOption",
    "SslCertFileOption",
    "SslKeyFileOption",
    "UsernameOption",
    "client_security",
    "fail",
    "run_client",
    "server_url_option",
    "stderr_console",
]
