"""The follower's side: one fetch loop per leader broker, covering every partition it leads.

Kafka's ``ReplicaFetcherThread``: this broker sends one long-poll fetch at a time to
each broker that leads partitions it follows, carrying per partition its LEO as the
fetch offset, the latest epoch in its own epoch cache and the leader epoch it
believes current. The pure ``PartitionReplica`` decides what each partition fetches
and turns each answer into actions (append, truncate, restart at the leader's log
start, adopt the leader's HW) that the ``Partition`` performs under its log lock;
this loop only carries the bytes, through a ``FetchTransport`` (``fetch_transport``: HTTP
in the broker, whatever a test or a simulation gives it).

A partition whose fetch was fenced is left out of the loop until a newer partition
record reaches it (the core's ``fenced``).

The fetches run in an incremental fetch session (``broker.replication.fetch_session``):
a request names only the partitions whose fields changed, an answer only those with
news; a failed request or a refused session starts over with a full fetch.

Replicas a move is adding here, not yet in sync, are throttled (Kafka's
``follower.replication.throttled.rate``, ``broker.replication.throttle``): while the
broker's quota is in debt they are left out of the fetch, and the fetch of the others
waits at the leader no longer than the debt lasts; a round that carries them asks for
at most ``round_bytes``, and the bytes they receive are counted against the quota.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable

import structlog

from broker.backoff import Backoff
from broker.errors import HighwaterError
from broker.replica_io.fetch_transport import FetchTransport, FetchTransportError
from broker.replica_io.partition import Partition
from broker.replication import FetchRequestFields, PartitionFetchResponse, fetched_last_offset
from broker.replication.fetch_session import FollowerSession, SessionRequest
from broker.replication.fetch_wire import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
)
from broker.replication.throttle import ReplicationQuota
from broker.waiting import wait_event

log = structlog.get_logger(__name__)

FETCH_BACKOFF_INITIAL_S = 0.05
FETCH_BACKOFF_MAX_S = 0.25
"""A failed fetch, or an answer with partition errors, waits before the next: 50 ms, then
doubling to 250 ms while failures go on; an answer that applied cleanly starts again at 50 ms."""
THROTTLE_RECHECK_S = 1.0
"""A fetcher holding back only throttled partitions looks again at least this often (a rate may change)."""


class ReplicaFetcher:
    """Fetches from one leader broker for every partition this broker follows there."""

    def __init__(
        self,
        *,
        leader_id: int,
        local_broker_id: int,
        broker_epoch: Callable[[], int],
        transport: FetchTransport,
        max_wait_ms: int,
        max_bytes: int,
        quota: ReplicationQuota | None = None,
    ) -> None:
        self.leader_id = leader_id
        self._local_broker_id = local_broker_id
        self._broker_epoch = broker_epoch
        self._transport = transport
        self._session = FollowerSession()
        self._max_wait_ms = max_wait_ms
        self._max_bytes = max_bytes
        self._quota = quota or ReplicationQuota()
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._fields: dict[tuple[str, int], tuple[Partition, FetchRequestFields]] = {}
        self._wire: dict[tuple[str, int], FetchPartition] = {}
        """Each fetched partition's request entry, rebuilt only when its fields are (``_refresh_stale``)."""
        self._stale: set[tuple[str, int]] = set()
        self._changed = asyncio.Event()
        self._backoff = Backoff(FETCH_BACKOFF_INITIAL_S, FETCH_BACKOFF_MAX_S)
        self._task = asyncio.create_task(self._run(), name=f"replica-fetcher-{leader_id}")

    def add(self, partition: Partition) -> None:
        """Fetch ``partition`` here; called after every record applied to it, so its fields are recomputed."""
        key = (partition.topic, partition.partition)
        self.partitions[key] = partition
        self._stale.add(key)
        self._changed.set()

    def remove(self, partition: Partition) -> None:
        key = (partition.topic, partition.partition)
        self.partitions.pop(key, None)
        self._fields.pop(key, None)
        self._wire.pop(key, None)
        self._stale.discard(key)

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _refresh_stale(self) -> None:
        """Recompute the fields (and request entry) of every stale partition; the others keep theirs.

        A partition's fetch fields change only when its log or its record does: when an
        answer was applied to it (``_run`` marks those stale) or when a record reached it
        (``add``). The others keep the fields they had, so a round costs what changed.
        """
        while self._stale:
            key = self._stale.pop()
            partition = self.partitions.get(key)
            if partition is None:
                continue
            fields = await partition.fetch_request()
            if self.partitions.get(key) is partition and fields is not None and partition.leader_id == self.leader_id:
                self._fields[key] = (partition, fields)
                self._wire[key] = _wire_partition(partition, fields)
            else:
                self._fields.pop(key, None)
                self._wire.pop(key, None)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._refresh_stale()
            if not self._fields or not self._transport.reachable(self.leader_id):
                self._changed.clear()
                await wait_event(self._changed, 1.0)
                continue
            throttled = self._throttled()
            debt_s = self._quota.wait_s(loop.time()) if throttled else 0.0
            wire: dict[tuple[str, int], FetchPartition] = self._wire
            if debt_s > 0:
                wire = {key: entry for key, entry in wire.items() if key not in throttled}
                throttled = set()
                if not wire:
                    self._changed.clear()
                    await wait_event(self._changed, min(debt_s, THROTTLE_RECHECK_S))
                    continue
            request = self._session.build(wire)
            try:
                response = await self._transport.send(self.leader_id, self._request(request, bool(throttled), debt_s))
            except FetchTransportError as error:
                self._session.reset()
                log.warning("replica_fetch.failed", leader_id=self.leader_id, error=str(error))
                await asyncio.sleep(self._backoff.next_delay())
                continue
            self._session.on_answered(response.session_id, response.session_error)
            if response.session_error:
                log.info(
                    "replica_fetch.session_restarted",
                    leader_id=self.leader_id,
                    session_id=request.session_id,
                    session_epoch=request.session_epoch,
                    error=response.session_error,
                )
                continue
            if throttled:
                moved = sum(len(r.records) for r in response.partitions if (r.topic, r.partition) in throttled)
                self._quota.record(moved, loop.time())
            answered = self._answered(response.partitions)
            self._stale.update((partition.topic, partition.partition) for (partition, _), _ in answered)
            if await apply_responses(self.leader_id, answered):
                await asyncio.sleep(self._backoff.next_delay())
            else:
                self._backoff.reset()

    def _throttled(self) -> set[tuple[str, int]]:
        """The fetched partitions whose replica here a move is adding and that are not in sync yet."""
        if not self._quota.limited:
            return set()
        return {key for key, (partition, _) in self._fields.items() if partition.throttles(self._local_broker_id)}

    def _answered(
        self, responses: list[FetchPartitionResponse]
    ) -> list[tuple[tuple[Partition, FetchRequestFields], FetchPartitionResponse]]:
        """Pair each answered partition with the fields it was fetched with (the session names only those with news).

        A partition answered but no longer fetched here (removed meanwhile) is dropped.
        """
        fields = self._fields
        return [(sent, r) for r in responses if (sent := fields.get((r.topic, r.partition))) is not None]

    def _request(self, session_request: SessionRequest, carries_throttled: bool, debt_s: float) -> FetchRequest:
        """The wire request: asking for ``round_bytes`` when it carries throttled partitions, and
        waiting at the leader no longer than the quota's debt (``debt_s``) when it holds them back."""
        max_wait_ms = min(self._max_wait_ms, math.ceil(debt_s * 1000)) if debt_s > 0 else self._max_wait_ms
        return FetchRequest(
            replica_id=self._local_broker_id,
            broker_epoch=self._broker_epoch(),
            max_wait_ms=max_wait_ms,
            max_bytes=self._quota.round_bytes(self._max_bytes) if carries_throttled else self._max_bytes,
            partitions=session_request.partitions,
            session_id=session_request.session_id,
            session_epoch=session_request.session_epoch,
            forgotten=session_request.forgotten,
        )


async def apply_responses(
    leader_id: int, answered: list[tuple[tuple[Partition, FetchRequestFields], FetchPartitionResponse]]
) -> bool:
    """Apply each partition's answer; True when fetching should back off.

    The partitions run concurrently, so the fsyncs of several partitions (each in a
    worker thread) overlap instead of queueing one behind the other before the next
    fetch can report any of them. Each partition's own work stays ordered by its log
    lock. A lone partition is awaited directly: no task, no extra loop turn, and a small
    answer's fsync on the loop (``partition.INLINE_FLUSH_MAX_BYTES``).
    """
    if not answered:
        return False
    if len(answered) == 1:
        return await _apply_one(leader_id, *answered[0], lone=True)
    return any(await asyncio.gather(*(_apply_one(leader_id, *pair, lone=False) for pair in answered)))


async def _apply_one(
    leader_id: int, sent: tuple[Partition, FetchRequestFields], response: FetchPartitionResponse, *, lone: bool
) -> bool:
    partition, fields = sent
    try:
        return await partition.apply_fetch_response(fields, _core_response(response), response.records, lone=lone)
    except HighwaterError as error:
        log.warning(
            "replica_fetch.apply_failed",
            topic=partition.topic,
            partition=partition.partition,
            leader_id=leader_id,
            error=str(error),
        )
        return True


def _wire_partition(partition: Partition, fields: FetchRequestFields) -> FetchPartition:
    return FetchPartition(
        topic=partition.topic,
        partition=partition.partition,
        fetch_offset=fields.fetch_offset,
        last_fetched_epoch=fields.last_fetched_epoch,
        current_leader_epoch=fields.current_leader_epoch,
        log_start_offset=fields.log_start_offset,
    )


def _core_response(response: FetchPartitionResponse) -> PartitionFetchResponse:
    return PartitionFetchResponse(
        high_watermark=response.high_watermark,
        log_start_offset=response.log_start_offset,
        log_end_offset=response.log_end_offset,
        error=response.error,
        diverging_epoch=response.diverging_epoch,
        records_last_offset=fetched_last_offset(response.records) if response.records else None,
    )


class ReplicaFetcherManager:
    """One ``ReplicaFetcher`` per leader broker; moves partitions between them on role change."""

    def __init__(self, **fetcher_kwargs) -> None:
        self._fetcher_kwargs = fetcher_kwargs
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._closed = False

    def update(self, partition: Partition) -> None:
        """Call after every record applied to ``partition``; idempotent."""
        if self._closed:
            return
        state = partition.core.follower_state
        leader_id = state.leader_id if state is not None else None
        for other in self._fetchers.values():
            if other.leader_id != leader_id:
                other.remove(partition)
        if leader_id is None or leader_id < 0:
            return
        fetcher = self._fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self._fetchers[leader_id] = ReplicaFetcher(leader_id=leader_id, **self._fetcher_kwargs)
        fetcher.add(partition)

    def remove(self, partition: Partition) -> None:
        for fetcher in self._fetchers.values():
            fetcher.remove(partition)

    async def close(self) -> None:
        """Stop every fetcher; later role changes start none (the broker is stopping)."""
        self._closed = True
        for fetcher in self._fetchers.values():
            await fetcher.close()
        self._fetchers.clear()
