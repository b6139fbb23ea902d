"""``highwater transactions list|describe``: the cluster's transactional ids over the REST API.

``list`` prints what ``kafka-transactions --list`` prints (id, coordinator, producer
id, state), plus the epoch and how long an open transaction has been open; ``describe``
adds the timeout and the partitions of the open transaction, as
``kafka-transactions describe`` does.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from broker.cli.common import DEFAULT_SERVER, ServerOption, run_client, security_options
from broker.client.admin import AdminClient
from broker.client.security import ClientSecurity
from broker.clock import wall_clock_ms

transactions_app = typer.Typer(help="List and describe transactional ids and their transactions.", no_args_is_help=True)
stdout_console = Console(highlight=False, soft_wrap=True)


def open_for(transaction: dict, now_ms: int) -> str:
    """How long the transaction has been open (``-`` when none is)."""
    started = transaction.get("transaction_start_time_ms")
    return "-" if started is None else f"{max(0, now_ms - int(started)) / 1000:.1f} s"


@transactions_app.command("list")
@security_options
def list_transactions(
    server: ServerOption = DEFAULT_SERVER,
    state: Annotated[
        list[str] | None, typer.Option(help="only this state (Empty, Ongoing, PrepareCommit, …); repeatable")
    ] = None,
    *,
    security: ClientSecurity,
) -> None:
    """List the cluster's transactional ids, each with its producer and the state of its transaction."""
    transactions = run_client(server, lambda client: client.list_transactions(state), security)
    now_ms = wall_clock_ms()
    table = Table("TRANSACTIONAL-ID", "PRODUCER-ID", "EPOCH", "STATE", "OPEN-FOR", box=None, header_style="bold")
    for transaction in transactions:
        table.add_row(
            transaction["transactional_id"],
            str(transaction["producer_id"]),
            str(transaction["producer_epoch"]),
            transaction["state"],
            open_for(transaction, now_ms),
        )
    stdout_console.print(table)


@transactions_app.command("describe")
@security_options
def describe_transaction(
    transactional_id: str,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """One transactional id: its producer, the state and timeout of its transaction, the partitions in it."""

    async def action(client: AdminClient) -> dict:
        return await client.describe_transaction(transactional_id)

    transaction = run_client(server, action, security)
    partitions = ", ".join(f"{p['topic_name']}-{p['partition_id']}" for p in transaction["partitions"]) or "-"
    table = Table("FIELD", "VALUE", box=None, header_style="bold")
    for field, value in (
        ("transactional id", transaction["transactional_id"]),
        ("producer id", str(transaction["producer_id"])),
        ("producer epoch", str(transaction["producer_epoch"])),
        ("state", transaction["state"]),
        ("timeout", f"{transaction['transaction_timeout_ms']} ms"),
        ("open for", open_for(transaction, wall_clock_ms())),
        ("partitions", partitions),
    ):
        table.add_row(field, value)
    stdout_console.print(table)
