"""``highwater groups list|describe|reset-offsets``: consumer groups over the REST API.

``describe`` prints what ``kafka-consumer-groups --describe`` prints, plus the time lag
and the Burrow status. ``reset-offsets`` computes the new offsets from the partition
leaders (log start offset, high watermark, or the first offset at a timestamp) and
commits them as a stateless commit, which the coordinator refuses while the group has
active members — the same rule Kafka applies.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.measure import Measurement
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
from broker.errors.groups import GroupIdNotFound, NonEmptyGroup

groups_app = typer.Typer(help="List and describe consumer groups, reset their offsets.", no_args_is_help=True)
stdout_console = Console(highlight=False, soft_wrap=True)


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


LAG_FIELDS = {
    "TOPIC": "topic_name",
    "PARTITION": "partition_id",
    "CURRENT-OFFSET": "current_offset",
    "LOG-END-OFFSET": "log_end_offset",
    "LAG": "lag",
    "LAG-MS": "lag_ms",
    "CONSUMER-ID": "consumer_id",
    "STATUS": "status",
}
"""``kafka-consumer-groups --describe``'s column names, plus the time lag and the Burrow status -> the row's field."""
OWNER_COLUMNS = ("TOPIC", "PARTITION", "CONSUMER-ID")
TEXT_COLUMNS = frozenset({"TOPIC", "CONSUMER-ID", "STATUS"})
FOLDED_COLUMNS = frozenset({"TOPIC", "CONSUMER-ID"})
"""Free text of any length (a member id is ``<client id>-<uuid>``), folded onto more lines when it must."""
UNBOUNDED_WIDTH = 10_000
"""Wider than any table: measuring within it gives a table's natural width."""


def lag_table(rows: list[dict], columns: tuple[str, ...] = tuple(LAG_FIELDS)) -> Table:
    """One row per partition of the group with ``columns``; a header is never cut.

    Every column is at least as wide as its header (``min_width``) and numbers never
    wrap; only a topic or consumer id folds onto further lines when space runs out.
    """
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in columns:
        table.add_column(
            column,
            min_width=len(column),
            no_wrap=column not in FOLDED_COLUMNS,
            overflow="fold",
            justify="left" if column in TEXT_COLUMNS else "right",
        )
    for row in rows:
        table.add_row(*(cell(row[LAG_FIELDS[column]]) for column in columns))
    return table


def lag_tables(console: Console, rows: list[dict]) -> list[Table]:
    """The lag table as it fits ``console``: whole when it does, else without CONSUMER-ID plus an owners table.

    The eight headers alone need 82 columns, and a member id is some 45 characters more:
    on an 80-column terminal the lag comes in one table and who owns each partition in a
    second, so every header and every id stays whole (an id folded over lines cannot be copied).
    """
    whole = lag_table(rows)
    unbounded = console.options.update_width(UNBOUNDED_WIDTH)
    if Measurement.get(console, unbounded, whole).maximum <= console.width:
        return [whole]
    lag_only = tuple(column for column in LAG_FIELDS if column != "CONSUMER-ID")
    owned = [row for row in rows if row["consumer_id"]]
    return [lag_table(rows, lag_only), *([lag_table(owned, OWNER_COLUMNS)] if owned else [])]


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
    for table in lag_tables(stdout_console, rows):
        stdout_console.print(table)
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
