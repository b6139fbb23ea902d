"""``highwater quotas set|list|remove``: per-user byte-rate quotas, through a broker or straight into the store.

Rates are bytes per second with Kafka's names (``producer_byte_rate``,
``consumer_byte_rate``); a rate left out is unlimited in that direction, and ``set``
replaces both, so setting only one clears the other.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from broker.cli.common import fail
from broker.cli.security_target import MetadataOption, OnlineServerOption, choose_target
from broker.cluster.security_keys import check_quota_principal
from broker.cluster.security_store import SecurityStore
from broker.errors import HighwaterError, ResourceNotFound
from broker.security.quota_limits import QuotaLimits, limits_to_wire

quotas_app = typer.Typer(
    help="Set, list and remove byte-rate quotas (online with -s, or offline with --metadata).",
    no_args_is_help=True,
)
stdout_console = Console(highlight=False, soft_wrap=True)


def _rate(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


@quotas_app.command("set")
def set_quota(
    ctx: typer.Context,
    principal: Annotated[str, typer.Argument(help="User:<name>.")],
    producer_byte_rate: Annotated[
        int | None, typer.Option("--producer-byte-rate", help="Bytes per second the user may produce.")
    ] = None,
    consumer_byte_rate: Annotated[
        int | None, typer.Option("--consumer-byte-rate", help="Bytes per second the user may fetch.")
    ] = None,
    server: OnlineServerOption = None,
    metadata: MetadataOption = None,
) -> None:
    """Set a user's quota (at least one rate; a rate left out is unlimited)."""
    target = choose_target(ctx, server, metadata)
    try:
        check_quota_principal(principal)
        limits = QuotaLimits(producer_byte_rate, consumer_byte_rate)
    except HighwaterError as error:
        raise fail(error.message) from None

    async def offline(store: SecurityStore) -> None:
        await store.set_quota(principal, limits)

    target.run(lambda client: client.set_quota(principal, producer_byte_rate, consumer_byte_rate), offline)
    stdout_console.print(
        f"set quota of {principal}: producer_byte_rate {_rate(producer_byte_rate)}, "
        f"consumer_byte_rate {_rate(consumer_byte_rate)}"
    )


@quotas_app.command("list")
def list_quotas(ctx: typer.Context, server: OnlineServerOption = None, metadata: MetadataOption = None) -> None:
    """List every principal's quota."""
    target = choose_target(ctx, server, metadata)

    async def offline(store: SecurityStore) -> list[dict]:
        return [{"principal": p, **limits_to_wire(limits)} for p, limits in (await store.quotas()).items()]

    rows = target.run(lambda client: client.list_quotas(), offline)
    table = Table("PRINCIPAL", "PRODUCER_BYTE_RATE", "CONSUMER_BYTE_RATE", box=None, header_style="bold")
    for row in sorted(rows, key=lambda r: r["principal"]):
        table.add_row(row["principal"], _rate(row.get("producer_byte_rate")), _rate(row.get("consumer_byte_rate")))
    stdout_console.print(table)


@quotas_app.command("remove")
def remove_quota(
    ctx: typer.Context,
    principal: Annotated[str, typer.Argument(help="User:<name>.")],
    server: OnlineServerOption = None,
    metadata: MetadataOption = None,
) -> None:
    """Remove a user's quota: its rates become unlimited."""
    target = choose_target(ctx, server, metadata)

    async def offline(store: SecurityStore) -> None:
        if not await store.remove_quota(principal):
            raise ResourceNotFound(f"no quota for {principal}")

    target.run(lambda client: client.delete_quota(principal), offline)
    stdout_console.print(f"removed quota of {principal}")
