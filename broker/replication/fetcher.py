"""The follower's side: one fetch loop per leader broker, covering every partition it leads.

Kafka's ``ReplicaFetcherThread``: this broker sends one long-poll fetch at a time to
each broker that leads partitions it follows, carrying per partition its LEO as the
fetch offset, the latest epoch in its own epoch cache and the leader epoch it
believes current. The pure ``FollowerState`` turns each answer into actions
(append, truncate, restart at the leader's log start, adopt the leader's HW) that
the ``Partition`` performs under its log lock.

A partition whose fetch was fenced waits out of the loop until its partition record
changes (``ReplicaFetcherManager.update``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import aiohttp
import structlog

from broker.errors import HighwaterError
from broker.partition import Partition
from broker.record.header import iter_batches
from broker.replication.actions import (
    AppendRecords,
    AwaitLeaderChange,
    RetryAfterBackoff,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateFollowerOffsets,
)
from broker.replication.fetch_wire import (
    CONTENT_TYPE,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    decode_response,
    encode_request,
)
from broker.replication.follower import LocalLogView, PartitionFetchResponse
from broker.storage.log_config import FLUSH_FSYNC
from broker.waiting import wait_event

log = structlog.get_logger(__name__)

FETCH_BACKOFF_S = 0.25

LeaderUrl = Callable[[int], "str | None"]


async def _fsync_before_next_fetch(partition: Partition) -> None:
    """Under the ``fsync`` flush policy a follower fsyncs what it appended before it fetches again.

    The next fetch offset is this replica's LEO as the leader sees it, and the leader
    raises the HW (and answers acks=all) on it. Without the fsync, a power loss on the
    followers drops records the leader already acknowledged; once the leader is gone too,
    a follower elected from the ISR lacks them (found by tests/simulation). The other
    policies accept that loss by design.
    """
    if partition.log.config.flush_policy == FLUSH_FSYNC:
        await asyncio.get_running_loop().run_in_executor(None, partition.log.flush)


def _records_last_offset(records: bytes) -> int | None:
    last = None
    for header in iter_batches(records, check_crc=False):
        last = header.last_offset
    return last


class ReplicaFetcher:
    """Fetches from one leader broker for every partition this broker follows there."""

    def __init__(
        self,
        *,
        leader_id: int,
        local_broker_id: int,
        broker_epoch: Callable[[], int],
        leader_url: LeaderUrl,
        session: aiohttp.ClientSession,
        max_wait_ms: int,
        max_bytes: int,
    ) -> None:
        self.leader_id = leader_id
        self._local_broker_id = local_broker_id
        self._broker_epoch = broker_epoch
        self._leader_url = leader_url
        self._session = session
        self._max_wait_ms = max_wait_ms
        self._max_bytes = max_bytes
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.fenced: set[tuple[str, int]] = set()
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name=f"replica-fetcher-{leader_id}")

    def add(self, partition: Partition) -> None:
        key = (partition.topic, partition.partition)
        self.partitions[key] = partition
        self.fenced.discard(key)
        self._changed.set()

    def remove(self, partition: Partition) -> None:
        key = (partition.topic, partition.partition)
        self.partitions.pop(key, None)
        self.fenced.discard(key)

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def _fetchable(self) -> list[tuple[Partition, FetchPartition]]:
        fetchable = []
        for key, partition in self.partitions.items():
            state = partition.follower_state
            if key in self.fenced or state is None or state.leader_id != self.leader_id:
                continue
            fetchable.append(
                (
                    partition,
                    FetchPartition(
                        topic=partition.topic,
                        partition=partition.partition,
                        fetch_offset=partition.log.log_end_offset,
                        last_fetched_epoch=partition.log.epoch_cache.latest_epoch,
                        current_leader_epoch=state.leader_epoch,
                        log_start_offset=partition.log.log_start_offset,
                    ),
                )
            )
        return fetchable

    async def _run(self) -> None:
        while True:
            fetchable = self._fetchable()
            url = self._leader_url(self.leader_id)
            if not fetchable or url is None:
                self._changed.clear()
                await wait_event(self._changed, 1.0)
                continue
            try:
                responses = await self._fetch(url, [fp for _, fp in fetchable])
            except (TimeoutError, aiohttp.ClientError, OSError, HighwaterError) as error:
                log.warning("replica_fetch.failed", leader_id=self.leader_id, url=url, error=str(error))
                await asyncio.sleep(FETCH_BACKOFF_S)
                continue
            backoff = False
            for (partition, fp), response in zip(fetchable, responses):
                try:
                    backoff |= await self._apply(partition, fp, response)
                except HighwaterError as error:
                    log.warning(
                        "replica_fetch.apply_failed",
                        topic=partition.topic,
                        partition=partition.partition,
                        leader_id=self.leader_id,
                        error=str(error),
                    )
                    backoff = True
            if backoff:
                await asyncio.sleep(FETCH_BACKOFF_S)

    async def _fetch(self, url: str, partitions: list[FetchPartition]) -> list[FetchPartitionResponse]:
        request = FetchRequest(
            replica_id=self._local_broker_id,
            broker_epoch=self._broker_epoch(),
            max_wait_ms=self._max_wait_ms,
            max_bytes=self._max_bytes,
            partitions=partitions,
        )
        timeout = aiohttp.ClientTimeout(total=self._max_wait_ms / 1000 + 10)
        async with self._session.post(
            f"{url}/internal/fetch",
            data=encode_request(request),
            headers={"Content-Type": CONTENT_TYPE},
            timeout=timeout,
        ) as reply:
            body = await reply.read()
            if reply.status != 200:
                raise aiohttp.ClientResponseError(
                    reply.request_info, (), status=reply.status, message=body[:200].decode(errors="replace")
                )
        responses = decode_response(body)
        if len(responses) != len(partitions):
            raise aiohttp.ClientPayloadError(f"fetch answered {len(responses)} of {len(partitions)} partitions")
        return responses

    async def _apply(self, partition: Partition, fp: FetchPartition, response: FetchPartitionResponse) -> bool:
        """Perform what the follower state machine asks; True when the loop should back off."""
        state = partition.follower_state
        if state is None or state.leader_epoch != fp.current_leader_epoch:
            return False
        local = LocalLogView(partition.log.log_start_offset, partition.log.log_end_offset, partition.log.epoch_cache)
        if local.log_end_offset != fp.fetch_offset:
            return False
        actions = state.on_fetch_response(
            PartitionFetchResponse(
                high_watermark=response.high_watermark,
                log_start_offset=response.log_start_offset,
                log_end_offset=response.log_end_offset,
                error=response.error,
                diverging_epoch=response.diverging_epoch,
                records_last_offset=_records_last_offset(response.records) if response.records else None,
            ),
            local,
        )
        backoff = False
        for action in actions:
            if isinstance(action, AppendRecords):
                await partition.append_as_follower(response.records, action.expected_base_offset)
                await _fsync_before_next_fetch(partition)
            elif isinstance(action, TruncateTo):
                await partition.truncate_to(action.offset)
                state.on_log_truncated(partition.log.log_end_offset)
            elif isinstance(action, TruncateFullyAndStartAt):
                await partition.truncate_fully_and_start_at(action.offset)
            elif isinstance(action, UpdateFollowerOffsets):
                if action.log_start_offset > partition.log_start_offset:
                    await partition.advance_log_start_offset(action.log_start_offset)
                partition.hw_moved.notify()
            elif isinstance(action, RetryAfterBackoff):
                backoff = True
            elif isinstance(action, AwaitLeaderChange):
                log.warning(
                    "replica_fetch.fenced",
                    topic=partition.topic,
                    partition=partition.partition,
                    leader_id=self.leader_id,
                    leader_epoch=fp.current_leader_epoch,
                    error=str(action.error),
                )
                self.fenced.add((partition.topic, partition.partition))
        return backoff


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
        state = partition.follower_state
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
