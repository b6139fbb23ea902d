"""What the move commands share: the cluster's assignment as a plan sees it, starting moves, following them.

``partitions reassign``, ``brokers drain`` and ``brokers balance`` all hand targets to
``POST …/reassignment:alter`` (all or nothing) and then, unless told not to wait, follow
the moving partitions with a progress bar until none is moving: the bar counts records
copied, each new replica's log end offset against its leader's, summed over the moves
(the broker reports offsets, not bytes, per replica).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from broker.client.admin import AdminClient
from broker.errors import RequestTimedOut

Partition = tuple[str, int]
POLL_S = 0.5
FOLLOW_TIMEOUT_S = 3600.0


def assignment_of(partitions: Iterable[dict]) -> dict[Partition, list[int]]:
    """``(topic, partition)`` -> replicas, from partition descriptions (``AdminClient.describe_all_partitions``)."""
    return {(p["topic_name"], p["partition_id"]): list(p["replica_ids"]) for p in partitions}


def racks_of(brokers: Iterable[dict]) -> dict[int, str | None]:
    return {broker["broker_id"]: broker.get("rack") for broker in brokers}


def targets(moves: Mapping[Partition, list[int] | None]) -> list[dict]:
    """The alter body's rows, in topic and partition order."""
    return [
        {"topic_name": topic, "partition_id": partition, "replicas": replicas}
        for (topic, partition), replicas in sorted(moves.items())
    ]


def _copied(partitions: Iterable[dict], moving: Mapping[Partition, dict]) -> tuple[int, int]:
    """(records copied, records to copy) over the adding replicas of the moving partitions."""
    copied = total = 0
    for partition in partitions:
        move = moving.get((partition["topic_name"], partition["partition_id"]))
        if move is None:
            continue
        offsets = {row["broker_id"]: row["log_end_offset"] for row in partition.get("replicas_state") or []}
        leader_end = partition.get("log_end_offset", 0)
        for replica in move["adding_replicas"]:
            total += leader_end
            copied += min(max(offsets.get(replica, 0), 0), leader_end)
    return copied, total


async def follow(client: AdminClient, console: Console, what: str) -> None:
    """Until no partition is moving: a bar of records copied, and the number of moves left."""
    deadline = time.monotonic() + FOLLOW_TIMEOUT_S
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(what, total=None)
        while time.monotonic() < deadline:
            moving = {(m["topic_name"], m["partition_id"]): m for m in await client.list_reassignments()}
            if not moving:
                progress.update(task, description=f"{what}: done", completed=progress.tasks[0].total or 1)
                return
            copied, total = _copied(await client.describe_all_partitions(), moving)
            progress.update(
                task, description=f"{what}: {len(moving)} partition(s) moving", completed=copied, total=max(total, 1)
            )
            await asyncio.sleep(POLL_S)
    raise RequestTimedOut(f"moves still under way after {FOLLOW_TIMEOUT_S:.0f} s; follow them with --verify")
