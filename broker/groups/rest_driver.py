"""The coordinator's side of REST Proxy v2 consumer instances: persistence, membership, reads.

The rules are in ``broker.groups.rest_instances`` (pure); this module does the I/O
around them, on the group's coordinator only (the v2 routes forward every call there).

* Persistence: create, subscribe, assign, unsubscribe and delete write the instance's
  record to ``__consumer_offsets`` with acks=all *before* the in-memory instance changes,
  so a refused or failed write changes nothing, and a new coordinator replays exactly
  the acknowledged state.
* Membership: a subscribed instance is a KIP-848 member of its group named after the
  instance. The coordinator heartbeats for it (``reconcile``) on every call and on every
  expiry tick, acknowledging revocations at once (no read is in flight then: reads hold
  the instance's lock, and a locked instance is skipped by the tick), so REST and library
  members rebalance together.
* Serialization: every call that reads or moves positions holds the instance's
  ``asyncio.Lock``, so two concurrent reads never return the same records.
* Reads go through the node's read path (``GroupHost.fetch``, HW-bounded, from the
  partition's leader wherever it is) and are cut at the high watermark again when
  rendered (``rest_records``).
* A read gathers until ``fetch.min.bytes`` of records are readable or its timeout elapses
  (``rest_gathering`` decides; the waiting is the partitions' long poll on their HW).
* Auto-commit (``auto.commit.enable``): a read commits, with acks=all and before its
  answer is sent, the offset after the last record it returns for each partition it
  returned records from. If that commit fails the read answers the error and no position
  moves, so the same records come again; a reply lost after the commit is lost to the
  client (Kafka's auto-commit is at-most-once in that window too).
* Expiry: an instance idle past its ``consumer.instance.timeout.ms`` is removed from
  memory and the group at once (a rebalance follows) and its tombstone written.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable
from copy import copy
from typing import TYPE_CHECKING, Protocol

import structlog

from broker.acks import Acks
from broker.errors import OffsetOutOfRange
from broker.groups.assignors import TopicPartition
from broker.groups.membership import JOIN_EPOCH, HeartbeatRequest
from broker.groups.rest_gathering import Gathering
from broker.groups.rest_instances import (
    InstanceConfig,
    InstanceKey,
    RestInstance,
    RestInstanceError,
    instance_not_found,
    start_offset,
)
from broker.groups.rest_records import render_span
from broker.isolation import Isolation
from broker.record.codec import RecordInput, encode_batch

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any

    from broker.descriptions import FetchResult
    from broker.groups.host import GroupHost
    from broker.groups.membership import HeartbeatResponse
    from broker.groups.shard import GroupState, OffsetsShard
    from broker.replica_io.partition import Partition

log = structlog.get_logger(__name__)

REST_CLIENT_ID = "rest-proxy-v2"
WRITE_TIMEOUT_MS = 5000


def _remaining_ms(deadline: float) -> int:
    """Milliseconds left until ``deadline`` (``time.monotonic``), rounded up: 0 only once it has passed."""
    return math.ceil((deadline - time.monotonic()) * 1000)


class InstanceCoordinator(Protocol):
    """What the driver uses of the group coordinator that owns it (``GroupCoordinator``): the same fencing,
    membership and commit rules every group member goes through, so an instance gets no path of its own."""

    host: GroupHost

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None: ...

    def led_partition(self, shard: OffsetsShard) -> Partition: ...

    def refuse_classic(self, shard: OffsetsShard, group_id: str) -> None: ...

    def heartbeat(
        self, shard: OffsetsShard, group_id: str, request: HeartbeatRequest, assignor: str
    ) -> HeartbeatResponse: ...

    async def commit(
        self,
        shard: OffsetsShard,
        group_id: str,
        member_id: str | None,
        member_epoch: int | None,
        offsets: list[tuple[str, int, int, str]],
    ) -> None: ...


class RestInstanceDriver:
    """``GroupCoordinator.rest``: the v2 instances of the groups this broker coordinates."""

    def __init__(self, coordinator: InstanceCoordinator) -> None:
        self.coordinator = coordinator
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._creating: set[tuple[str, str]] = set()

    def is_busy(self, instance: RestInstance) -> bool:
        lock = self._locks.get((instance.group_id, instance.name))
        return lock is not None and lock.locked()

    @contextlib.asynccontextmanager
    async def locked(self, shard: OffsetsShard, group_id: str, name: str, now_ms: int) -> AsyncIterator[RestInstance]:
        """The instance, held alone for the block (404 40403 when there is none).

        A lock exists only for an instance that exists, so names made up by callers cost
        nothing; one deleted while the caller waited is looked up again and is gone.
        """
        self.instance(shard, group_id, name, now_ms)
        async with self._locks.setdefault((group_id, name), asyncio.Lock()):
            yield self.instance(shard, group_id, name, now_ms)

    async def change(
        self, shard: OffsetsShard, group_id: str, name: str, now_ms: int, mutate: Callable[[RestInstance], None]
    ) -> None:
        """``mutate`` a copy (it may refuse), persist the copy, then make it the instance."""
        async with self.locked(shard, group_id, name, now_ms) as instance:
            changed = copy(instance)
            changed.positions = dict(instance.positions)
            mutate(changed)
            await self._write(shard, InstanceKey(group_id, name), changed.record_value(), now_ms)
            state = shard.group(group_id)
            state.rest_instances[name] = changed
            self.reconcile(shard, state, changed)

    # ------------------------------------------------------------ lookup and persistence

    def instance(self, shard: OffsetsShard, group_id: str, name: str, now_ms: int) -> RestInstance:
        """The live instance, its idle clock restarted; 404 40403 when there is none."""
        self.coordinator.led_partition(shard)
        state = shard.groups.get(group_id)
        instance = state.rest_instances.get(name) if state is not None else None
        if instance is None:
            raise instance_not_found(group_id, name)
        instance.touch(now_ms)
        return instance

    async def _write(self, shard: OffsetsShard, key: InstanceKey, value: bytes | None, now_ms: int) -> None:
        batch = encode_batch([RecordInput(key.encode(), value, (), now_ms)])
        await self.coordinator.led_partition(shard).append(batch, Acks.ALL, WRITE_TIMEOUT_MS)

    async def create(
        self, shard: OffsetsShard, group_id: str, name: str, config: InstanceConfig, now_ms: int
    ) -> RestInstance:
        self.coordinator.led_partition(shard)
        self.coordinator.refuse_classic(shard, group_id)
        state = shard.group(group_id)
        if name in state.rest_instances or (group_id, name) in self._creating:
            raise RestInstanceError(409, 40902, f"consumer instance {name!r} already exists in group {group_id!r}")
        self._creating.add((group_id, name))
        try:
            instance = RestInstance(group_id, name, config, now_ms)
            await self._write(shard, InstanceKey(group_id, name), instance.record_value(), now_ms)
            shard.groups.setdefault(group_id, state).rest_instances[name] = instance
        finally:
            self._creating.discard((group_id, name))
        log.info("rest_v2.instance_created", group_id=group_id, instance=name, format=config.format)
        return instance

    async def delete(self, shard: OffsetsShard, group_id: str, name: str, now_ms: int) -> None:
        async with self.locked(shard, group_id, name, now_ms) as instance:
            await self._write(shard, InstanceKey(group_id, name), None, now_ms)
            self._forget(shard.group(group_id), instance, "deleted")

    async def remove_all(self, shard: OffsetsShard, state: GroupState, now_ms: int) -> None:
        """Group deletion: every instance's tombstone in one acks=all batch, then the instances are gone."""
        instances = list(state.rest_instances.values())
        if not instances:
            return
        keys = [InstanceKey(instance.group_id, instance.name).encode() for instance in instances]
        batch = encode_batch([RecordInput(key, None, (), now_ms) for key in keys])
        await self.coordinator.led_partition(shard).append(batch, Acks.ALL, WRITE_TIMEOUT_MS)
        for instance in instances:
            self._forget(state, instance, "group_deleted")

    def _forget(self, state: GroupState, instance: RestInstance, reason: str) -> None:
        state.rest_instances.pop(instance.name, None)
        self._locks.pop((instance.group_id, instance.name), None)
        if instance.member_id in state.membership.members:
            state.membership.remove_member(instance.member_id, f"rest_instance_{reason}")
        log.info("rest_v2.instance_removed", group_id=instance.group_id, instance=instance.name, reason=reason)

    # ------------------------------------------------------------ membership

    def reconcile(self, shard: OffsetsShard, state: GroupState, instance: RestInstance) -> frozenset[TopicPartition]:
        """The partitions the instance owns now; a subscribed instance heartbeats (joining if it is
        not a member, e.g. after a coordinator failover) and releases what it is asked to revoke.

        The member's session and rebalance timeouts allow for the longest read (a long-poll
        and its auto-commit), during which the tick leaves a busy instance alone: the member
        is removed by the instance's own idle rule, never expelled in the middle of a read.
        """
        if instance.assignment is not None:
            return instance.assignment
        membership = state.membership
        member = membership.members.get(instance.member_id)
        if instance.subscription is None:
            if member is not None:
                membership.remove_member(instance.member_id, "rest_instance_unsubscribed")
            instance.positions.clear()
            return frozenset()
        subscription = (
            None if member is not None and member.subscription == instance.subscription else instance.subscription
        )
        busy_ms = self.coordinator.host.settings.fetch_max_wait_ms + WRITE_TIMEOUT_MS
        request = HeartbeatRequest(
            instance.member_id,
            member.member_epoch if member is not None else JOIN_EPOCH,
            subscription,
            frozenset(member.assigned) if member is not None else None,
            REST_CLIENT_ID,
            instance.config.instance_timeout_ms + busy_ms,
            busy_ms,
            instance.config.isolation.committed,
        )
        answer = self.coordinator.heartbeat(shard, instance.group_id, request, membership.assignor)
        instance.retain_positions(answer.assignment)
        return answer.assignment

    def member_epoch(self, state: GroupState, instance: RestInstance) -> tuple[str | None, int | None]:
        """Who commits for the instance: its member (subscribed), or nobody (manual assignment)."""
        member = state.membership.members.get(instance.member_id)
        return (member.member_id, member.member_epoch) if member is not None else (None, None)

    def tick(self, shard: OffsetsShard, state: GroupState, now_ms: int) -> None:
        """From the expiry loop: remove idle instances, keep the others' membership current.

        Skipped while the shard loads: replayed instances get their idle clocks only when it completes.
        """
        if not shard.loaded:
            return
        for instance in list(state.rest_instances.values()):
            if self.is_busy(instance):
                continue
            if instance.is_idle(now_ms):
                self._forget(state, instance, "expired")
                self.coordinator.spawn(self._tombstone(shard, instance, now_ms))
                continue
            with contextlib.suppress(Exception):
                self.reconcile(shard, state, instance)

    async def _tombstone(self, shard: OffsetsShard, instance: RestInstance, now_ms: int) -> None:
        """An expired instance's tombstone; if it fails (deposed), the next coordinator expires it again."""
        try:
            await self._write(shard, InstanceKey(instance.group_id, instance.name), None, now_ms)
        except Exception as error:  # noqa: BLE001 - logged; the instance is already gone from this coordinator
            log.info("rest_v2.tombstone_failed", group_id=instance.group_id, instance=instance.name, error=str(error))

    # ------------------------------------------------------------ positions and reads

    async def ranges(self, topic: str, isolation: Isolation = Isolation.READ_UNCOMMITTED) -> dict[int, tuple[int, int]]:
        """``partition -> (log_start_offset, end)`` as the leaders describe them; the end is the high
        watermark, or the last stable offset for ``read_committed``."""
        described = await self.coordinator.host.describer.leader_descriptions(topic)
        return {
            p: (d.log_start_offset, isolation.visible_end(d.high_watermark, d.last_stable_offset))
            for p, d in described.items()
        }

    async def starts(
        self, state: GroupState, instance: RestInstance, owned: frozenset[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Where each owned partition's next read starts (``rest_instances.start_offset``).

        A start resolved from the commit or the reset policy becomes the position at once, as
        Kafka's consumer sets it: with ``latest``, records appended after an empty read are
        then read next time, not skipped by resolving ``latest`` again.
        """
        result: dict[TopicPartition, int] = {}
        unknown = sorted(tp for tp in owned if tp not in instance.positions)
        for tp in owned:
            if tp in instance.positions:
                result[tp] = instance.positions[tp]
        for topic in sorted({t for t, _ in unknown}):
            ranges = await self.ranges(topic, instance.config.isolation)
            for tp in (tp for tp in unknown if tp[0] == topic):
                if tp[1] not in ranges:
                    continue
                committed = state.position(tp)
                low, high = ranges[tp[1]]
                result[tp] = instance.positions[tp] = start_offset(
                    None, committed.offset if committed else None, low, high, instance.config.auto_offset_reset
                )
        return result

    async def _fetch(
        self, instance: RestInstance, tp: TopicPartition, offset: int, max_bytes: int, timeout_ms: int
    ) -> FetchResult:
        isolation = instance.config.isolation
        return await self.coordinator.host.router.fetch(
            tp[0], tp[1], offset, max_bytes, timeout_ms, isolation=isolation
        )

    async def read(
        self,
        shard: OffsetsShard,
        group_id: str,
        name: str,
        timeout_ms: int,
        max_bytes: int,
        now_ms: int,
        authorize: Callable[[str], None],
    ) -> list[dict]:
        """One v2 records read (see the module docstring for serialization and auto-commit);
        ``authorize`` raises unless the caller may read the topic (checked before any fetch)."""
        async with self.locked(shard, group_id, name, now_ms) as instance:
            state = shard.group(group_id)
            owned = self.reconcile(shard, state, instance)
            for topic in sorted({topic for topic, _ in owned}):
                authorize(topic)
            starts = await self.starts(state, instance, owned)
            gathering = Gathering(starts, instance.config.fetch_min_bytes, max_bytes)
            await self._gather(instance, gathering, timeout_ms)
            offsets = gathering.committable()
            if instance.config.auto_commit and offsets:
                member_id, epoch = self.member_epoch(state, instance)
                await self.coordinator.commit(shard, group_id, member_id, epoch, offsets)
            for tp, span in gathering.spans.items():
                instance.advance(tp, starts[tp], span.next_offset)
            return gathering.records()

    async def _gather(self, instance: RestInstance, gathering: Gathering, timeout_ms: int) -> None:
        """A round without waiting, then long polls until ``gathering.is_done`` (the rule is there).

        The waiting is the partitions' own long poll (the leader's read wakes when its high
        watermark moves), never a sleep: a read is answered as soon as the records that end it
        are below the HW, and at ``timeout_ms`` at the latest.
        """
        deadline = time.monotonic() + timeout_ms / 1000
        await self._fetch_round(instance, gathering)
        while not gathering.is_done(_remaining_ms(deadline)):
            await self._long_poll(instance, gathering, _remaining_ms(deadline))

    async def _fetch_round(self, instance: RestInstance, gathering: Gathering) -> None:
        """Partitions in order, without waiting, each given what is left of ``max_bytes``; out-of-range positions reset."""
        for tp, offset in gathering.cursors().items():
            if gathering.budget_bytes <= 0:
                break
            try:
                result = await self._fetch(instance, tp, offset, gathering.budget_bytes, 0)
            except OffsetOutOfRange:
                self._out_of_range(instance, gathering, tp)
                continue
            self._add(instance, gathering, tp, offset, result)

    async def _long_poll(self, instance: RestInstance, gathering: Gathering, timeout_ms: int) -> None:
        """Wait up to ``timeout_ms`` for a partition to have records past what was gathered, and add them.

        Every partition long-polls at once; the first to answer ends the wait (the others are
        cancelled and asked again by the next poll, if the read goes on). A partition whose
        fetch fails is read no more in this read, so a failing partition cannot spin the loop.
        """
        cursors = gathering.cursors()
        budget = gathering.budget_bytes
        tasks = {
            asyncio.create_task(self._fetch(instance, tp, offset, budget, timeout_ms)): tp
            for tp, offset in cursors.items()
        }
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in sorted(done, key=tasks.__getitem__):
            tp = tasks[task]
            error = task.exception()
            if isinstance(error, OffsetOutOfRange):
                self._out_of_range(instance, gathering, tp)
            elif error is not None:
                log.info("rest_v2.read_partition_failed", topic=tp[0], partition=tp[1], error=str(error))
                gathering.drop(tp)
            else:
                self._add(instance, gathering, tp, cursors[tp], task.result())

    @staticmethod
    def _add(
        instance: RestInstance, gathering: Gathering, tp: TopicPartition, offset: int, result: FetchResult
    ) -> None:
        isolation = instance.config.isolation
        span = render_span(
            tp[0],
            tp[1],
            result.data,
            offset,
            isolation.visible_end(result.high_watermark, result.last_stable_offset),
            instance.config.format,
            gathering.budget_bytes,
            first_always_fits=not gathering.has_records,
            aborted=result.aborted if isolation.committed else None,
        )
        gathering.add(tp, span)

    @staticmethod
    def _out_of_range(instance: RestInstance, gathering: Gathering, tp: TopicPartition) -> None:
        """The position is outside the log (retention deleted it): the next read resolves it again."""
        if tp not in gathering.spans:
            instance.positions.pop(tp, None)
        gathering.drop(tp)

    async def commit(
        self,
        shard: OffsetsShard,
        group_id: str,
        name: str,
        consumed: list[tuple[str, int, int, str]] | None,
        now_ms: int,
    ) -> None:
        """v2 commit (``RestInstance.commit_offsets``), fenced as the instance's member if it is one."""
        async with self.locked(shard, group_id, name, now_ms) as instance:
            state = shard.group(group_id)
            self.reconcile(shard, state, instance)
            member_id, epoch = self.member_epoch(state, instance)
            await self.coordinator.commit(shard, group_id, member_id, epoch, instance.commit_offsets(consumed))

    async def check_range(self, tp: TopicPartition, offset: int) -> None:
        """A seek target must lie in ``[log_start_offset, high_watermark]`` (416 41601 otherwise, as an out-of-range read)."""
        low, high = (await self.ranges(tp[0])).get(tp[1], (0, -1))
        if not low <= offset <= high:
            raise RestInstanceError(
                416, 41601, f"offset {offset} of {tp[0]}-{tp[1]} is outside its readable range {low}..{high}"
            )
