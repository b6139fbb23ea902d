"""``Consumer``: the asyncio consumer, shaped after aiokafka's ``AIOKafkaConsumer``.

    async with Consumer("http://127.0.0.1:9092", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        async for record in consumer:
            ...

Manual assignment only for now: ``group_id`` (subscribe, commit) needs the group
coordinator. The assignment lives in ``SubscriptionState`` and is changed only
through ``_set_assignment``, which group membership will call on each rebalance.

``position(tp)`` is the offset of the next record ``getmany`` hands out for ``tp``;
records are handed out in offset order per partition and never at or above the high
watermark. Settings are ``config.client.ConsumerSettings`` keyword arguments.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Self

from broker.client.http import ClusterClient, now_ms
from broker.client.types import TopicPartition
from config.client import ConsumerSettings
from consumer.fetcher import Fetcher, FetchLimits
from consumer.positions import SubscriptionState
from consumer.records import ConsumerRecord

DEFAULT_METADATA_MAX_AGE_MS = 300_000
"""Kafka's ``metadata.max.age.ms``; a keyword argument until ``ConsumerSettings`` carries it."""
ITERATION_POLL_MS = 1000
"""How long one ``async for`` step waits per poll before polling again."""


class Consumer:
    def __init__(self, servers: str | Sequence[str], **settings: Any) -> None:
        servers_text = servers if isinstance(servers, str) else ",".join(servers)
        metadata_max_age_ms = int(settings.pop("metadata_max_age_ms", DEFAULT_METADATA_MAX_AGE_MS))
        self.settings = ConsumerSettings(bootstrap_servers=servers_text, **settings)
        config = self.settings
        if config.group_id is not None:
            raise ValueError(
                f"group_id={config.group_id!r}: consumer groups need the group coordinator, which this "
                "cluster does not run yet; use assign() without a group_id"
            )
        self._client = ClusterClient(
            config.bootstrap_urls,
            request_timeout_ms=config.request_timeout_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            client_id=config.client_id,
        )
        self._subscriptions = SubscriptionState(config.auto_offset_reset)
        limits = FetchLimits(
            fetch_max_bytes=config.fetch_max_bytes,
            max_partition_fetch_bytes=config.max_partition_fetch_bytes,
            fetch_max_wait_ms=config.fetch_max_wait_ms,
            retry_backoff_ms=config.retry_backoff_ms,
        )
        self._fetcher = Fetcher(self._client, self._subscriptions, limits)
        self._iteration_buffer: deque[ConsumerRecord] = deque()
        self._started = False
        self._closed = False

    @property
    def client(self) -> ClusterClient:
        return self._client

    @property
    def fetches_completed(self) -> int:
        return self._fetcher.fetches_completed

    async def start(self) -> None:
        if self._started:
            return
        await self._client.cluster_id()
        self._started = True
        self._fetcher.sync_workers()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._fetcher.close()
        await self._client.close()

    # ------------------------------------------------------------------ assignment

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions; positions of partitions kept stay, new ones follow ``auto_offset_reset``."""
        self._set_assignment([TopicPartition(*tp) for tp in partitions])

    def _set_assignment(self, partitions: list[TopicPartition]) -> None:
        self._subscriptions.assign(partitions)
        self._iteration_buffer = deque(r for r in self._iteration_buffer if (r.topic, r.partition) in set(partitions))
        if self._started:
            self._fetcher.sync_workers()

    def assignment(self) -> set[TopicPartition]:
        return set(self._subscriptions.assigned())

    # ------------------------------------------------------------------ positions

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read ``tp`` from ``offset`` on; records already fetched past the old position are dropped."""
        self._subscriptions.seek(tp, offset)
        self._after_seek(tp)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Move to the log start offset of each partition (all assigned ones if none named)."""
        await self._seek_to("earliest", partitions)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Move to the high watermark of each partition: only records produced from now on are read."""
        await self._seek_to("latest", partitions)

    async def _seek_to(self, strategy: str, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions or self._subscriptions.assigned():
            offsets = await self._client.list_offsets(tp)
            self.seek(tp, offsets.earliest_offset if strategy == "earliest" else offsets.latest_offset)

    def _after_seek(self, tp: TopicPartition) -> None:
        self._iteration_buffer = deque(r for r in self._iteration_buffer if (r.topic, r.partition) != tp)
        if self._started:
            self._fetcher.restart(tp)

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record to be handed out, resetting per ``auto_offset_reset`` if none is set."""
        if self._subscriptions.position(tp) is None:
            await self._fetcher.reset_position(tp)
            self._fetcher.raise_error()
        position = self._subscriptions.position(tp)
        assert position is not None
        return position

    def highwater(self, tp: TopicPartition) -> int | None:
        """The partition's high watermark as of the last fetch answer (``None`` before one)."""
        return self._subscriptions.state(tp).high_watermark

    def last_leader_epoch(self, tp: TopicPartition) -> int | None:
        return self._subscriptions.state(tp).last_leader_epoch

    # ------------------------------------------------------------------ reading

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records by partition, at most ``max_records`` (default ``max_poll_records``).

        Returns as soon as any record is available, or empty after ``timeout_ms``.
        Raises errors the fetchers met (``OffsetOutOfRangeError``, ``LogTruncationError`` ...).
        """
        await self.start()
        limit = max_records or self.settings.max_poll_records
        only = set(partitions) if partitions else None
        deadline_ms = now_ms() + timeout_ms
        while True:
            self._fetcher.raise_error()
            records = self._fetcher.drain(limit, only)
            remaining_ms = deadline_ms - now_ms()
            if records or remaining_ms <= 0:
                return records
            await self._fetcher.wait_for_data(remaining_ms / 1000)

    async def getone(self) -> ConsumerRecord:
        """The next record of any assigned partition, waiting as long as it takes."""
        while not self._iteration_buffer:
            batches = await self.getmany(timeout_ms=ITERATION_POLL_MS)
            for records in batches.values():
                self._iteration_buffer.extend(records)
        return self._iteration_buffer.popleft()

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self

    async def __anext__(self) -> ConsumerRecord:
        if self._closed:
            raise StopAsyncIteration
        return await self.getone()
