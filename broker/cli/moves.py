"""What the move commands share: the cluster's assignment as a plan sees it, starting moves, following them.

``partitions reassign``, ``brokers drain`` and ``brokers balance`` all hand targets to
``POST …/reassignment:alter`` (all or nothing) and then, unless told not to wait, follow
the moving partitions with a progress bar until none is moving: the bar counts bytes
copied, each new replica's log bytes against its leader's (each broker's ``log-dirs``),
summed over the moves, and the rate they are copied at.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TransferSpeedColumn

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


def copied_bytes(
    partitions: Iterable[dict], moving: Mapping[Partition, dict], sizes: Mapping[int, Mapping[Partition, int]]
) -> tuple[int, int]:
    """(bytes copied, bytes to copy) over the adding replicas of the moving partitions.

    ``sizes``: broker id -> its replicas' log bytes. A new replica's copy counts up to
    its leader's log (a leader whose retention deleted a segment meanwhile holds less).
    """
    copied = total = 0
    for partition in partitions:
        key = (partition["topic_name"], partition["partition_id"])
        move = moving.get(key)
        if move is None:
            continue
        leader_bytes = sizes.get(partition.get("leader_id", -1), {}).get(key, 0)
        for replica in move["adding_replicas"]:
            total += leader_bytes
            copied += min(sizes.get(replica, {}).get(key, 0), leader_bytes)
    return copied, total


async def _sizes(client: AdminClient, partitions: Iterable[dict], moving: Mapping[Partition, dict]) -> dict:
    """The log bytes of every broker that leads a moving partition or copies one."""
    involved = {p.get("leader_id", -1) for p in partitions if (p["topic_name"], p["partition_id"]) in moving}
    involved.update(replica for move in moving.values() for replica in move["adding_replicas"])
    return {broker: await client.replica_sizes(broker) for broker in sorted(involved) if broker >= 0}


async def follow(client: AdminClient, console: Console, what: str) -> None:
    """Until no partition is moving: a bar of bytes copied, the copy rate, and the number of moves left."""
    deadline = time.monotonic() + FOLLOW_TIMEOUT_S
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(what, total=None)
        while time.monotonic() < deadline:
            moving = {(m["topic_name"], m["partition_id"]): m for m in await client.list_reassignments()}
            if not moving:
                progress.update(task, description=f"{what}: done", completed=progress.tasks[0].total or 1)
                return
            partitions = await client.describe_all_partitions()
            copied, total = copied_bytes(partitions, moving, await _sizes(client, partitions, moving))
            progress.update(
                task, description=f"{what}: {len(moving)} partition(s) moving", completed=copied, total=max(total, 1)
            )
            await asyncio.sleep(POLL_S)
    raise RequestTimedOut(f"moves still under way after {FOLLOW_TIMEOUT_S:.0f} s; follow them with --verify")
