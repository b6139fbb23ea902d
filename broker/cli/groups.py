"""``highwater groups list|describe|reset-offsets``: consumer groups over the REST API.

``describe`` prints what ``kafka-consumer-groups --describe`` prints, plus the time lag
and the Burrow status. ``reset-offsets`` computes the new offsets from the partition
leaders (log start offset, high watermark, or the first offset at a timestamp) and
commits them as a stateless commit, which the coordinator refuses while the group has
active members — the same rule Kafka applies.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from broker.cli.common import (
    DEFAULT_SERVER,
    ServerOption,
    fail,
    run_client,
    security_options,
)
from broker.client.admin import AdminClient
from broker.client.security import ClientSecurity
from broker.groups.errors import GroupIdNotFound, NonEmptyGroup

groups_app = typer.Typer(help="List and describe consumer groups, reset their offsets.", no_args_is_help=True)
stdout_console = Console(highlight=False, soft_wrap=True)


def _cell(value: Any) -> str:
    """``-`` for what is not there: null, or the ``""`` of a partition no member owns."""
    return "-" if value is None or value == "" else str(value)


def _worst_partition(summary: dict) -> str:
    """The summary's worst partition, ``-`` when no lag is known (its topic ``""``, its id -1)."""
    topic = summary["max_lag_topic_name"]
    return f"{topic}-{summary['max_lag_partition_id']}" if topic else "-"


@groups_app.command("list")
@security_options
def list_groups(
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """List the cluster's consumer groups."""
    groups = run_client(
        server,
        lambda client: client.list_groups(),
        security,
    )
    table = Table("GROUP", "STATE", "MEMBERS", "COMMITTED-PARTITIONS", "COORDINATOR", box=None, header_style="bold")
    for group in groups:
        table.add_row(
            group["consumer_group_id"],
            group["state"],
            str(group["members_count"]),
            str(group["committed_partitions"]),
            str(group["coordinator_id"]),
        )
    stdout_console.print(table)


def lag_table(rows: list[dict]) -> Table:
    table = Table(
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "LAG-MS",
        "CONSUMER-ID",
        "STATUS",
        box=None,
        header_style="bold",
    )
    for row in rows:
        table.add_row(
            row["topic_name"],
            str(row["partition_id"]),
            _cell(row["current_offset"]),
            _cell(row["log_end_offset"]),
            _cell(row["lag"]),
            _cell(row["lag_ms"]),
            _cell(row["consumer_id"]),
            row["status"],
        )
    return table


@groups_app.command("describe")
@security_options
def describe_group(
    group: str,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Per-partition committed offset, high watermark, lag, time lag, owner and status."""

    async def action(client: AdminClient) -> tuple[list[dict], dict]:
        return await client.group_lags(group), await client.group_lag_summary(group)

    rows, summary = run_client(server, action, security)
    stdout_console.print(lag_table(rows))
    stdout_console.print(
        f"group {group}: status {summary['status']}, total lag {summary['total_lag']}, max lag "
        f"{summary['max_lag']} ({_worst_partition(summary)})"
    )


def parse_datetime_ms(text: str) -> int:
    """ISO 8601 (``2024-05-01T12:00:00``, UTC unless an offset is given) or milliseconds since the epoch."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise fail(f"--to-datetime expects ISO 8601 or epoch milliseconds (got {text!r})") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


async def _target_offset(client: AdminClient, topic: str, partition: dict, mode: str, value: int | None) -> int:
    start, high_watermark = partition["log_start_offset"], partition["high_watermark"]
    if mode == "earliest":
        return start
    if mode == "latest":
        return high_watermark
    if mode == "offset":
        assert value is not None
        return min(max(value, start), high_watermark)
    assert value is not None
    at = await client.offset_at(topic, partition["partition_id"], value)
    return high_watermark if at is None else at


async def _plan_reset(client: AdminClient, group: str, topic: str | None, mode: str, value: int | None) -> list[dict]:
    try:
        described = await client.describe_group(group)
    except GroupIdNotFound:
        if topic is None:
            raise
        described = {"members_count": 0}
    if described["members_count"]:
        raise NonEmptyGroup(f"group {group} has {described['members_count']} active member(s)")
    if topic is not None:
        topics = [topic]
    else:
        committed = await client.committed_offsets(group)
        topics = sorted({entry["topic_name"] for entry in committed})
    plan = []
    for name in topics:
        for partition in await client.list_partitions(name):
            offset = await _target_offset(client, name, partition, mode, value)
            plan.append({"topic_name": name, "partition_id": partition["partition_id"], "offset": offset})
    return plan


@groups_app.command("reset-offsets")
@security_options
def reset_offsets(
    group: str,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="Log start offset.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="High watermark.")] = False,
    to_offset: Annotated[int | None, typer.Option("--to-offset", min=0, help="This offset (clamped).")] = None,
    to_datetime: Annotated[str | None, typer.Option("--to-datetime", help="First offset at/after this time.")] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="Only this topic (default: committed ones).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the new offsets, commit nothing.")] = False,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Move a group's committed offsets (only while it has no active members)."""
    chosen = [
        name
        for name, given in (
            ("earliest", to_earliest),
            ("latest", to_latest),
            ("offset", to_offset is not None),
            ("datetime", to_datetime is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise fail("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime")
    mode = chosen[0]
    value = to_offset if mode == "offset" else parse_datetime_ms(to_datetime) if to_datetime is not None else None

    async def action(client: AdminClient) -> list[dict]:
        plan = await _plan_reset(client, group, topic, mode, value)
        if not dry_run and plan:
            await client.commit_offsets(group, plan)
        return plan

    plan = run_client(server, action, security)
    table = Table("TOPIC", "PARTITION", "NEW-OFFSET", box=None, header_style="bold")
    for entry in plan:
        table.add_row(entry["topic_name"], str(entry["partition_id"]), str(entry["offset"]))
    stdout_console.print(table)
    stdout_console.print(("would reset" if dry_run else "reset") + f" {len(plan)} partition(s) of group {group}")
