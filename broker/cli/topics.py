"""``highwater topics create|list|describe|delete``: topic administration over the REST API."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from broker.cli.common import (
    DEFAULT_SERVER,
    ServerOption,
    cell,
    fail,
    run_client,
    security_options,
)
from broker.client.admin import AdminClient
from broker.client.security import ClientSecurity

topics_app = typer.Typer(help="Create, list, describe and delete topics.", no_args_is_help=True)
stdout_console = Console(highlight=False, soft_wrap=True)


def parse_config_pairs(pairs: list[str]) -> dict[str, str]:
    """``["retention.ms=1000", ...]`` -> ``{"retention.ms": "1000"}``; the broker validates the values."""
    configs: dict[str, str] = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name.strip():
            raise fail(f"--config expects NAME=VALUE (got {pair!r})")
        configs[name.strip()] = value.strip()
    return configs


@topics_app.command("create")
@security_options
def create_topic(
    name: Annotated[str, typer.Argument(help="Topic name: letters, digits, '.', '_' and '-'.")],
    partitions: Annotated[int | None, typer.Option("--partitions", "-p", min=1, help="Default: the broker's.")] = None,
    replication_factor: Annotated[
        int | None, typer.Option("--replication-factor", "-r", min=1, help="Default: the broker's.")
    ] = None,
    config: Annotated[
        list[str] | None, typer.Option("--config", "-c", help="Topic config NAME=VALUE (Kafka names), repeatable.")
    ] = None,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Create a topic."""
    configs = parse_config_pairs(config or [])

    async def action(client: AdminClient) -> dict:
        return await client.create_topic(name, partitions, replication_factor, configs)

    created = run_client(server, action, security)
    count = created.get("partitions_count", partitions) if isinstance(created, dict) else partitions
    stdout_console.print(f"created topic {name}" + (f" with {count} partition(s)" if count else ""))


@topics_app.command("list")
@security_options
def list_topics(
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """List the cluster's topics."""
    topics = run_client(
        server,
        lambda client: client.list_topics(),
        security,
    )
    table = Table("topic", "partitions", "replication factor", title=None, box=None, header_style="bold")
    for topic in sorted(topics, key=lambda t: t["topic_name"]):
        partitions, replication_factor = topic.get("partitions_count", ""), topic.get("replication_factor", "")
        table.add_row(topic["topic_name"], str(partitions), str(replication_factor))
    stdout_console.print(table)


PARTITION_COLUMNS = ("partition", "leader", "epoch", "replicas", "ISR", "log start", "HW", "LEO")
LIST_COLUMNS = frozenset({"replicas", "ISR"})


def _ids(values: list[int] | None) -> str:
    return ",".join(str(value) for value in values or [])


def partitions_table(topic: str, partitions: list[dict]) -> Table:
    """One row per partition: who leads in which epoch, who is in sync, and the three offsets of the log.

    The one rendering of a partition list, shared by ``topics describe`` and ``highwater
    dev``'s summary, so both show the same columns. Invariant shown:
    ``log start <= HW <= LEO`` on every row (the broker's, not checked here).
    """
    table = Table(
        title=f"topic {topic}",
        caption="HW: high watermark (consumers read below it); LEO: log end offset",
        header_style="bold",
    )
    for column in PARTITION_COLUMNS:
        table.add_column(column, justify="left" if column in LIST_COLUMNS else "right", no_wrap=True)
    for partition in sorted(partitions, key=lambda p: p["partition_id"]):
        leader = partition.get("leader_id")
        table.add_row(
            str(partition["partition_id"]),
            "none" if leader is None or leader < 0 else str(leader),
            cell(partition.get("leader_epoch")),
            _ids(partition.get("replica_ids")),
            _ids(partition.get("isr")),
            cell(partition.get("log_start_offset")),
            cell(partition.get("high_watermark")),
            cell(partition.get("log_end_offset")),
        )
    return table


@topics_app.command("describe")
@security_options
def describe_topic(
    name: str,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Show each partition's leader and epoch, replicas, ISR, log start offset, high watermark and log end offset."""
    partitions = run_client(
        server,
        lambda client: client.list_partitions(name),
        security,
    )
    stdout_console.print(partitions_table(name, partitions))


@topics_app.command("delete")
@security_options
def delete_topic(
    name: str,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Delete a topic and its data on every broker."""
    run_client(
        server,
        lambda client: client.delete_topic(name),
        security,
    )
    stdout_console.print(f"deleted topic {name}")
