"""Where ``highwater users|acls|quotas`` act: a running cluster (``-s``) or its metadata store (``--metadata``).

Online (``-s/--server`` or ``HIGHWATER_SERVER``), the command calls the admin routes of
any broker, which check the caller's rights. Offline (``--metadata URL``), it writes the
store directly through ``SecurityStore``: that is how the first admin user and its ACLs
are created before any broker runs (or when every admin is locked out), and it needs
only access to the store, which already grants everything.

Exactly one of the two is used: both given, or neither, stops the command with one line
and exit code 2. ``HIGHWATER_SERVER`` from the environment yields to an explicit
``--metadata``, so an operator's usual environment does not block offline use.
Errors end the command with one line and exit code 1, as every client command does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar

import typer

from broker.cli.common import EXIT_BAD_SETTINGS, error_line, fail, run_client, server_url_option
from broker.client.admin import AdminClient
from broker.cluster.security_store import SecurityStore
from broker.cluster.store import MetadataStoreError
from broker.errors import HighwaterError
from config import variables
from config.store_url import parse_store_url

T = TypeVar("T")

OnlineServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        "-s",
        envvar=variables.SERVER,
        help="Any broker of the cluster: host:port or http(s)://host:port. Give this or --metadata.",
        callback=server_url_option,
    ),
]
MetadataOption = Annotated[
    str | None,
    typer.Option(
        "--metadata",
        help="Write the metadata store directly, no broker needed (sqlite:///abs/file.db or etcd://host:port,...).",
    ),
]


@dataclass(frozen=True)
class Target:
    """A chosen destination: exactly one of ``server`` and ``metadata`` is set."""

    server: str | None
    metadata: str | None

    def run(
        self,
        online: Callable[[AdminClient], Awaitable[T]],
        offline: Callable[[SecurityStore], Awaitable[T]],
    ) -> T:
        """Run ``online`` against the broker or ``offline`` against the store, whichever was chosen."""
        if self.server is not None:
            return run_client(self.server, online)
        assert self.metadata is not None
        return run_offline(self.metadata, offline)


def choose_target(ctx: typer.Context, server: str | None, metadata: str | None) -> Target:
    """The one destination the options name, or one line and exit code 2."""
    source = ctx.get_parameter_source("server")
    # By name: typer may ship its own copy of click, whose ParameterSource enum is another class.
    if metadata is not None and source is not None and source.name == "ENVIRONMENT":
        server = None
    if (server is None) == (metadata is None):
        which = "both" if server is not None else "neither"
        raise fail(
            f"give exactly one of --server/-s (a running broker) and --metadata (the store); got {which}",
            EXIT_BAD_SETTINGS,
        )
    return Target(server, metadata)


def run_offline(metadata: str, action: Callable[[SecurityStore], Awaitable[T]]) -> T:
    """Run ``action`` on the store at ``metadata`` in one event loop; failures become one line and exit 1.

    Logging goes to stderr at warning level first: the store logs its opening and closing
    at info, which would otherwise mix with the command's output.
    """
    try:
        parse_store_url(metadata)
    except ValueError as error:
        raise fail(f"--metadata: {error}", EXIT_BAD_SETTINGS) from None
    from broker.cluster.store_url import open_store
    from broker.logging_setup import configure_logging

    configure_logging("warning")

    async def session() -> T:
        store = await open_store(metadata)
        try:
            return await action(SecurityStore(store))
        finally:
            await store.close()

    try:
        return asyncio.run(session())
    except HighwaterError as error:
        raise fail(error_line(error)) from None
    except MetadataStoreError as error:
        raise fail(f"metadata store {metadata}: {error}") from None
