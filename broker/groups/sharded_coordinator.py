"""``ShardedCoordinator``: what the group and transaction coordinators share.

Each keeps one shard per partition of its internal topic that this broker leads: a new
shard when the broker becomes that partition's leader at a new leader epoch, loaded in
the background by replaying the partition (``_load``), and dropped when the broker stops
leading it (``_unloaded``), so a shard is only ever served by the leader of its epoch.
Each also runs tasks: loops started with the broker (``run_loop``) and background work
(``spawn``), all cancelled and awaited by ``stop``.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from broker.replica_io.partition import Partition


class Shard(Protocol):
    leader_epoch: int


S = TypeVar("S", bound=Shard)


class ShardedCoordinator(ABC, Generic[S]):
    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.shards: dict[int, S] = {}
        self._tasks: list[asyncio.Task] = []
        self._background: set[asyncio.Task] = set()

    def run_loop(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        """A loop that lives as long as the broker (``stop`` ends it)."""
        self._tasks.append(asyncio.create_task(coroutine, name=name))

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        """Background work, kept referenced until it ends (``stop`` cancels what is left)."""
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def stop(self) -> None:
        for task in [*self._tasks, *self._background]:
            task.cancel()
        for task in [*self._tasks, *self._background]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.shards.clear()

    def on_partition_role(self, partition: Partition) -> None:
        """Hook: the broker's replicas applied a partition record to ``partition``."""
        if partition.topic != self.topic:
            return
        shard = self.shards.get(partition.partition)
        if partition.is_leader:
            if shard is None or shard.leader_epoch != partition.leader_epoch:
                shard = self._new_shard(partition.partition, partition.leader_epoch)
                self.shards[partition.partition] = shard
                self.spawn(self._load(partition, shard))
        elif shard is not None:
            del self.shards[partition.partition]
            self._unloaded(shard)

    @abstractmethod
    def _new_shard(self, partition_id: int, leader_epoch: int) -> S: ...

    @abstractmethod
    async def _load(self, partition: Partition, shard: S) -> None:
        """Replay ``partition`` into ``shard``, then mark it loaded."""

    @abstractmethod
    def _unloaded(self, shard: S) -> None:
        """``shard``'s partition is led elsewhere now."""
