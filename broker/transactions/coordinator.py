"""The transaction coordinator of one broker: the transactional ids of the ``__transaction_state``
partitions it leads.

Placement, loading and unloading mirror the group coordinator (``broker.groups.coordinator``):
a transactional id lives in partition ``abs(hashCode(id)) % n`` of ``__transaction_state``
(created on first use, compacted, replication factor min(3, live brokers)); its
coordinator is that partition's leader, which replays the partition into a shard when
it becomes leader and drops the shard at once when it stops being one.

Every decision is made by ``broker.transactions.transitions`` under the id's lock, and
written with acks=all before it is answered or acted on: a coordinator that fails after
answering leaves the decision to its successor. A decision to end a transaction
(``PrepareCommit``/``PrepareAbort``) is followed by its markers, one per partition of
the transaction, written by each partition's leader (``Partition.write_marker``: here,
or over ``POST /internal/txn-markers``) and asked again until every leader has written
its own; then the transaction is complete and the id may begin another. A new
coordinator resumes the markers of every transaction it loads in a prepare state.
Transactions open past their timeout are aborted by a loop, at a bumped epoch.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from broker.acks import Acks
from broker.backoff import Backoff
from broker.clock import wall_clock_ms
from broker.errors import HighwaterError, InvalidRequest, NotLeaderOrFollower
from broker.errors.groups import CoordinatorLoadInProgress, CoordinatorNotAvailable, NotCoordinator
from broker.errors.transactions import TransactionalIdNotFound
from broker.groups.internal_topic import InternalTopic, replay
from broker.groups.sharded_coordinator import ShardedCoordinator
from broker.record.codec import Record, RecordInput, encode_batch
from broker.record.control import TransactionMarker
from broker.record.header import BatchHeader
from broker.topics.policy import TRANSACTION_STATE_TOPIC
from broker.transactions import transitions
from broker.transactions.metadata import (
    TopicPartition,
    TransactionMetadata,
    TxnState,
    decode_key,
    partition_for_transactional_id,
)
from broker.waiting import RetryDeadline

if TYPE_CHECKING:
    from broker.groups.host import LocalReplicas
    from broker.replica_io.partition import Partition
    from broker.transactions.host import TransactionHost

log = structlog.get_logger(__name__)

TRANSACTION_STATE_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": str(100 * 1024 * 1024),
    "retention.ms": "-1",
    "retention.bytes": "-1",
}
WRITE_TIMEOUT_MS = 5000
MARKER_TIMEOUT_MS = 5000
MARKER_RETRY_INITIAL_S = 0.05
MARKER_RETRY_MAX_S = 1.0
PREPARE_WAIT_S = 5.0
"""How long a request finding the last transaction still completing waits for it before answering
``CONCURRENT_TRANSACTIONS``."""
ROUTE_WAIT_S = 5.0
ROUTE_RETRY_INITIAL_S = 0.05
ROUTE_RETRY_MAX_S = 0.4
PERMANENT_MARKER_REFUSALS = frozenset({"INVALID_TXN_STATE", "INVALID_PRODUCER_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION"})
"""A leader's answers that asking again cannot change: a stale marker, or a partition deleted since."""


@dataclass
class TransactionShard:
    """The transactional ids of one ``__transaction_state`` partition during one leader epoch."""

    partition: int
    leader_epoch: int
    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)
    locks: defaultdict[str, asyncio.Lock] = field(default_factory=lambda: defaultdict(asyncio.Lock))
    completions: dict[str, asyncio.Event] = field(default_factory=dict)
    """Set when the id's transaction in a prepare state completes (``TransactionCoordinator._wait_out_prepare``)."""
    loaded: bool = False

    def apply_record(self, key: bytes | None, value: bytes | None) -> None:
        transactional_id = decode_key(key) if key is not None else None
        if transactional_id is None:
            return
        if value is None:
            self.transactions.pop(transactional_id, None)
        else:
            self.transactions[transactional_id] = TransactionMetadata.decode(transactional_id, value)


def _replay(partition: Partition, shard: TransactionShard) -> None:
    """In the executor: every record from the log start to the log end, in order."""

    def apply(header: BatchHeader, records: list[Record]) -> None:
        for record in records:
            shard.apply_record(record.key, record.value)

    replay(partition.log, partition.log.log_start_offset, apply)


class TransactionCoordinator(ShardedCoordinator[TransactionShard]):
    """See the module docstring. ``node.transactions`` of every broker; ``host`` is that broker."""

    def __init__(self, host: TransactionHost) -> None:
        super().__init__(TRANSACTION_STATE_TOPIC)
        self.host = host
        self.state_topic = InternalTopic(
            host,
            TRANSACTION_STATE_TOPIC,
            TRANSACTION_STATE_CONFIGS,
            lambda: host.settings.transaction_state_num_partitions,
            "transactions/state-topic",
        )

    def start(self) -> None:
        self.run_loop(self._timeout_loop(), "transaction-timeouts")

    # ------------------------------------------------------------ loading

    def _new_shard(self, partition_id: int, leader_epoch: int) -> TransactionShard:
        return TransactionShard(partition_id, leader_epoch)

    def _unloaded(self, shard: TransactionShard) -> None:
        log.info("transactions.unloaded", partition=shard.partition, leader_epoch=shard.leader_epoch)

    async def _load(self, partition: Partition, shard: TransactionShard) -> None:
        started = time.monotonic()
        await asyncio.get_running_loop().run_in_executor(None, _replay, partition, shard)
        shard.loaded = True
        log.info(
            "transactions.loaded",
            partition=shard.partition,
            leader_epoch=shard.leader_epoch,
            transactional_ids=len(shard.transactions),
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )
        for state in list(shard.transactions.values()):
            if state.state.preparing:
                self.spawn(self._complete(shard, state))

    def _led_partition(self, shard: TransactionShard) -> Partition:
        partition = self.host.replicas.local_partition(TRANSACTION_STATE_TOPIC, shard.partition)
        if partition is None or not partition.is_leader or partition.leader_epoch != shard.leader_epoch:
            self.shards.pop(shard.partition, None)
            raise NotCoordinator(f"broker {self.host.node_id} no longer coordinates these transactions; retry")
        return partition

    # ------------------------------------------------------------ topic and routing

    def _partition_of(self, transactional_id: str) -> int:
        return partition_for_transactional_id(
            transactional_id, self.host.catalog.partition_count(TRANSACTION_STATE_TOPIC)
        )

    async def coordinator_id(self, transactional_id: str) -> int:
        """The broker that coordinates ``transactional_id`` now (the leader of its partition)."""
        _require_id(transactional_id)
        await self.state_topic.ensure()
        if not self.state_topic.ready():
            raise CoordinatorNotAvailable(f"{TRANSACTION_STATE_TOPIC} is being created; retry shortly")
        record = self.host.view.partitions.get((TRANSACTION_STATE_TOPIC, self._partition_of(transactional_id)))
        if record is None or record.leader < 0:
            raise CoordinatorNotAvailable(f"no coordinator for transactional id {transactional_id!r}; retry shortly")
        return record.leader

    async def shard_of(self, transactional_id: str) -> TransactionShard:
        """The loaded local shard of ``transactional_id``; ``NOT_COORDINATOR`` when another broker leads it."""
        _require_id(transactional_id)
        await self.state_topic.ensure()
        partition_id = self._partition_of(transactional_id)
        retry = RetryDeadline(ROUTE_WAIT_S, ROUTE_RETRY_INITIAL_S, ROUTE_RETRY_MAX_S)
        while True:
            shard = self.shards.get(partition_id)
            if shard is not None and shard.loaded:
                self._led_partition(shard)
                return shard
            record = self.host.view.partitions.get((TRANSACTION_STATE_TOPIC, partition_id))
            leader = record.leader if record is not None else -1
            if leader >= 0 and leader != self.host.node_id:
                raise NotCoordinator(
                    f"broker {self.host.node_id} does not coordinate transactional id {transactional_id!r}; "
                    f"broker {leader} does",
                    coordinator_id=leader,
                    coordinator_url=self.host.view.inter_broker_url(leader),
                )
            if not await retry.pause():
                if shard is not None:
                    raise CoordinatorLoadInProgress(f"the coordinator of {transactional_id!r} is still loading")
                raise CoordinatorNotAvailable(f"no coordinator for {transactional_id!r} right now; retry shortly")

    # ------------------------------------------------------------ requests

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None = None
    ) -> tuple[int, int]:
        """(producer id, epoch) of the new incarnation of ``transactional_id``."""
        shard = await self.shard_of(transactional_id)
        await self._wait_out_prepare(shard, transactional_id)
        async with shard.locks[transactional_id]:
            current = shard.transactions.get(transactional_id)
            new_id = (
                await self.host.controller_gateway.allocate_producer_id()
                if transitions.needs_producer_id(current)
                else None
            )
            step = transitions.init_producer_id(
                current,
                transactional_id,
                timeout_ms,
                max_timeout_ms=self.host.settings.transaction_max_timeout_ms,
                now_ms=wall_clock_ms(),
                new_producer_id=new_id,
                expected=expected,
            )
            state = await self._apply(shard, transactional_id, step)
        return state.producer_id, state.producer_epoch

    async def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[TopicPartition]
    ) -> None:
        for topic, partition in partitions:
            self.host.catalog.partition_record(topic, partition)
        shard = await self.shard_of(transactional_id)
        await self._wait_out_prepare(shard, transactional_id)
        async with shard.locks[transactional_id]:
            step = transitions.add_partitions(
                shard.transactions.get(transactional_id),
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                wall_clock_ms(),
            )
            await self._apply(shard, transactional_id, step)

    async def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> None:
        shard = await self.shard_of(transactional_id)
        async with shard.locks[transactional_id]:
            step = transitions.end_transaction(
                shard.transactions.get(transactional_id),
                transactional_id,
                producer_id,
                producer_epoch,
                commit,
                wall_clock_ms(),
            )
            await self._apply(shard, transactional_id, step)

    async def _wait_out_prepare(self, shard: TransactionShard, transactional_id: str) -> None:
        """While the id's last transaction is completing (its markers being written), wait for it.

        The next transaction may not begin before then (``CONCURRENT_TRANSACTIONS``), and a
        client told so backs off before asking again. Waiting here answers as soon as it
        completes; after ``PREPARE_WAIT_S`` the request goes on and is told to retry.
        """
        current = shard.transactions.get(transactional_id)
        if current is None or not current.state.preparing:
            return
        event = shard.completions.setdefault(transactional_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(PREPARE_WAIT_S):
                await event.wait()

    async def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str, partition: int
    ) -> int:
        """KIP-890: the serial of the open transaction holding ``topic-partition``, for its leader."""
        shard = await self.shard_of(transactional_id)
        current = shard.transactions.get(transactional_id)
        return transitions.verify_partition(current, transactional_id, producer_id, producer_epoch, (topic, partition))

    async def confirm_marker(self, transactional_id: str, producer_id: int, serial: int) -> bool:
        """Whether transaction ``serial`` of ``producer_id`` is the one being ended now."""
        shard = await self.shard_of(transactional_id)
        current = shard.transactions.get(transactional_id)
        return (
            current is not None
            and current.producer_id == producer_id
            and current.serial == serial
            and current.state.preparing
        )

    async def state_of(self, transactional_id: str) -> TransactionMetadata:
        """The id's state, from its coordinator: ``NOT_COORDINATOR`` elsewhere, ``TRANSACTIONAL_ID_NOT_FOUND``
        for an id no producer initialised."""
        shard = await self.shard_of(transactional_id)
        state = shard.transactions.get(transactional_id)
        if state is None:
            raise TransactionalIdNotFound(f"no producer was initialised with transactional id {transactional_id!r}")
        return state

    def describe(self) -> list[TransactionMetadata]:
        """Every transactional id this broker coordinates now."""
        return [state for shard in self.shards.values() if shard.loaded for state in shard.transactions.values()]

    # ------------------------------------------------------------ writing

    async def _apply(
        self, shard: TransactionShard, transactional_id: str, step: transitions.Step
    ) -> TransactionMetadata:
        """Write ``step``'s state (acks=all), apply it, start its markers; then raise its error, if any.

        The caller holds the id's lock. Returns the id's state after the step.
        """
        state = step.write
        if state is not None:
            await self._write(shard, state)
            if state.state.preparing:
                self.spawn(self._complete(shard, state))
        if step.error is not None:
            raise step.error
        return shard.transactions[transactional_id]

    async def _write(self, shard: TransactionShard, state: TransactionMetadata) -> None:
        timestamp = wall_clock_ms()
        batch = encode_batch([RecordInput(state.key(), state.value(), (), timestamp)])
        await self._led_partition(shard).append(batch, Acks.ALL, WRITE_TIMEOUT_MS)
        shard.transactions[state.transactional_id] = state
        if not state.state.preparing:
            completed = shard.completions.pop(state.transactional_id, None)
            if completed is not None:
                completed.set()
        log.info(
            "transactions.state_written",
            transactional_id=state.transactional_id,
            producer_id=state.producer_id,
            producer_epoch=state.producer_epoch,
            state=state.state.value,
            serial=state.serial,
            partitions=len(state.partitions),
        )

    async def _complete(self, shard: TransactionShard, state: TransactionMetadata) -> None:
        """Write every marker of a preparing transaction, then its completion; stops when the shard goes."""
        marker = TransactionMarker(
            state.producer_id, state.producer_epoch, state.state is TxnState.PREPARE_COMMIT, shard.leader_epoch
        )
        pending = set(state.partitions)
        backoff = Backoff(MARKER_RETRY_INITIAL_S, MARKER_RETRY_MAX_S)
        while pending:
            if self.shards.get(shard.partition) is not shard:
                return
            pending = await self._write_markers(marker, state, pending)
            if pending:
                await asyncio.sleep(backoff.next_delay())
        async with shard.locks[state.transactional_id]:
            if shard.transactions.get(state.transactional_id) != state:
                return
            await self._write(shard, transitions.complete(state, wall_clock_ms()))

    async def _write_markers(
        self, marker: TransactionMarker, state: TransactionMetadata, partitions: set[TopicPartition]
    ) -> set[TopicPartition]:
        """One round: each partition's leader asked once; returns the partitions still without their marker."""
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in partitions:
            record = self.host.view.partitions.get(tp)
            if record is None:
                log.warning("transactions.marker_partition_gone", topic=tp[0], partition=tp[1])
                continue
            by_leader[record.leader].append(tp)
        rounds = [self._markers_to(leader, marker, state, tps) for leader, tps in by_leader.items()]
        left: set[TopicPartition] = set()
        for remaining in await asyncio.gather(*rounds):
            left |= remaining
        return left

    async def _markers_to(
        self, leader: int, marker: TransactionMarker, state: TransactionMetadata, partitions: list[TopicPartition]
    ) -> set[TopicPartition]:
        if leader < 0:
            return set(partitions)
        if leader == self.host.node_id:
            answers = await write_local_markers(
                self.host.replicas, marker, state.serial, state.transactional_id, partitions
            )
        else:
            url = self.host.view.inter_broker_url(leader)
            if url is None:
                return set(partitions)
            try:
                body = await self.host.forwarder.json_call(
                    "POST",
                    f"{url}/internal/txn-markers",
                    marker_request(marker, state.serial, state.transactional_id, partitions),
                    timeout_s=MARKER_TIMEOUT_MS / 1000 + 5,
                )
            except HighwaterError as error:
                log.info("transactions.marker_leader_unreachable", leader_id=leader, error=error.message)
                return set(partitions)
            answers = {(topic, partition): error for topic, partition, error in body.get("results", [])}
        left: set[TopicPartition] = set()
        for tp in partitions:
            refusal = answers.get(tp)
            if refusal is None:
                continue
            if refusal in PERMANENT_MARKER_REFUSALS:
                log.error(
                    "transactions.marker_refused",
                    transactional_id=state.transactional_id,
                    topic=tp[0],
                    partition=tp[1],
                    error=refusal,
                )
                continue
            left.add(tp)
        return left

    # ------------------------------------------------------------ timeouts

    async def _timeout_loop(self) -> None:
        interval_s = self.host.settings.transaction_abort_timed_out_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval_s)
            for shard in list(self.shards.values()):
                if shard.loaded:
                    await self._abort_timed_out(shard)

    async def _abort_timed_out(self, shard: TransactionShard) -> None:
        for transactional_id in list(shard.transactions):
            async with shard.locks[transactional_id]:
                current = shard.transactions.get(transactional_id)
                step = transitions.expire(current, wall_clock_ms()) if current is not None else None
                if current is None or step is None:
                    continue
                log.info("transactions.timed_out", transactional_id=transactional_id, serial=current.serial)
                try:
                    await self._apply(shard, transactional_id, step)
                except HighwaterError as error:
                    log.warning(
                        "transactions.timeout_abort_failed", transactional_id=transactional_id, error=error.message
                    )
                    return


def _require_id(transactional_id: str) -> None:
    if not transactional_id:
        raise InvalidRequest("transactional id must not be empty")


def marker_request(
    marker: TransactionMarker, serial: int, transactional_id: str, partitions: list[TopicPartition]
) -> dict:
    """The body of ``POST /internal/txn-markers``: one marker, for each of ``partitions``."""
    return {
        "transactional_id": transactional_id,
        "producer_id": marker.producer_id,
        "producer_epoch": marker.producer_epoch,
        "committed": marker.committed,
        "coordinator_epoch": marker.coordinator_epoch,
        "serial": serial,
        "partitions": [[topic, partition] for topic, partition in partitions],
    }


async def write_local_markers(
    replicas: LocalReplicas,
    marker: TransactionMarker,
    serial: int,
    transactional_id: str,
    partitions: list[TopicPartition],
) -> dict[TopicPartition, str | None]:
    """Each partition's marker written by this broker's leader replica: its error name, or None once written."""

    async def one(tp: TopicPartition) -> str | None:
        local = replicas.local_partition(*tp)
        try:
            if local is None:
                raise NotLeaderOrFollower(f"this broker holds no replica of {tp[0]}-{tp[1]}")
            await local.write_marker(marker, serial, transactional_id, MARKER_TIMEOUT_MS)
        except HighwaterError as error:
            log.info("transactions.marker_not_written", topic=tp[0], partition=tp[1], error=error.message)
            return error.name
        return None

    results = await asyncio.gather(*(one(tp) for tp in partitions))
    return dict(zip(partitions, results, strict=True))
