"""``Consumer``: the asyncio consumer, shaped after aiokafka's ``AIOKafkaConsumer``.

    async with Consumer("http://127.0.0.1:9092", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        async for record in consumer:
            ...

With a ``group_id`` the consumer joins a consumer group instead (KIP-848: the
coordinator assigns, the member reconciles, see ``consumer.group``):

    async with Consumer(servers, group_id="billing", auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["orders"])          # or subscribe(pattern=r"orders-.*")
        async for record in consumer:
            ...                                 # positions auto-committed every auto_commit_interval_ms

A partition a group member acquires starts at the group's committed offset (else
``auto_offset_reset``). ``commit()`` commits the *consumed* position of every assigned
partition: the offset after the last record handed to the application (records the
iterator holds but has not yielded yet do not count). With ``enable_auto_commit``
that happens every ``auto_commit_interval_ms``, before a revoked partition is given up,
and on ``close``; like aiokafka (not the Java client), auto-commit runs in the
background, so a record counts as consumed once ``getmany`` returned it.

The assignment lives in ``SubscriptionState`` and is changed only through
``_set_assignment``: by ``assign`` or by group membership on each rebalance.

``position(tp)`` is the offset of the next record ``getmany`` hands out for ``tp``;
records are handed out in offset order per partition and never at or above the high
watermark. Settings are ``config.client.ConsumerSettings`` keyword arguments; a refused
one raises ``ClientConfigError`` (a ``ValueError``) naming it, the value given and what
is allowed.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Self

from broker.client.groups import GroupClient
from broker.client.http import ClusterClient
from broker.client.library_log import library_logger
from broker.client.settings import build_settings
from broker.client.types import ConsumerGroupMetadata, TopicPartition
from broker.clock import monotonic_ms
from broker.errors import HighwaterError
from broker.isolation import Isolation
from config.client import ConsumerSettings
from consumer.commits import AutoCommitter, OffsetCommitter
from consumer.fetcher import Fetcher, FetchLimits, latest_offset
from consumer.group import GroupMember, MembershipTimings
from consumer.membership import MemberState, Subscription
from consumer.positions import SubscriptionState
from consumer.records import ConsumerRecord
from consumer.unknown_topics import UnknownTopics

log = library_logger(__name__)

ITERATION_POLL_MS = 1000
"""How long one ``async for`` step waits per poll before polling again."""


class Consumer:
    def __init__(self, servers: str | Sequence[str], **settings: Any) -> None:
        self.settings = build_settings(ConsumerSettings, "consumer", servers, settings)
        config = self.settings
        self._client = ClusterClient(
            config.bootstrap_urls,
            request_timeout_ms=config.request_timeout_ms,
            metadata_max_age_ms=config.metadata_max_age_ms,
            unresponsive_backoff_ms=config.unresponsive_backoff_ms,
            client_id=config.client_id,
            **config.security_options(),
        )
        self._subscriptions = SubscriptionState(config.auto_offset_reset)
        limits = FetchLimits(
            fetch_max_bytes=config.fetch_max_bytes,
            max_partition_fetch_bytes=config.max_partition_fetch_bytes,
            fetch_max_wait_ms=config.fetch_max_wait_ms,
            retry_backoff_ms=config.retry_backoff_ms,
        )
        lookup = self._committed_offset if config.group_id is not None else None
        self._unknown = UnknownTopics(self._client)
        self._isolation = Isolation(config.isolation_level)
        self._fetcher = Fetcher(self._client, self._subscriptions, limits, self._unknown, lookup, self._isolation)
        self._iteration_buffer: deque[ConsumerRecord] = deque()
        self._started = False
        self._closed = False
        self._init_group(config)

    def _init_group(self, config: ConsumerSettings) -> None:
        self._groups = GroupClient(self._client)
        self._member_state = MemberState(uuid.uuid4().hex, config.isolation_level)
        self._group_member: GroupMember | None = None
        self._assignment_version = 0
        self._committed_fetch: tuple[int, asyncio.Task[dict[TopicPartition, int]]] | None = None
        self._committer: OffsetCommitter | None = None
        self._auto_committer: AutoCommitter | None = None
        if config.group_id is None:
            return
        self._committer = OffsetCommitter(
            self._groups,
            config.group_id,
            lambda: self._member_state if self._member_state.subscription is not None else None,
            config.retry_backoff_ms,
            config.request_timeout_ms,
        )
        if config.enable_auto_commit:
            self._auto_committer = AutoCommitter(self._commit_consumed, config.auto_commit_interval_ms, config.group_id)

    @property
    def client(self) -> ClusterClient:
        return self._client

    @property
    def fetches_completed(self) -> int:
        return self._fetcher.fetches_completed

    async def start(self) -> None:
        """Connect: learn the cluster id, then start fetching, committing and heartbeating.

        A start that fails leaves no HTTP session open (``async with`` never reaches
        ``close`` then, and a script that stops at the error never calls it); the next
        ``start`` or ``getmany`` reconnects.
        """
        if self._started:
            return
        try:
            await self._client.cluster_id()
        except BaseException:
            await self._client.close()
            raise
        self._started = True
        self._fetcher.sync_workers()
        if self._auto_committer is not None:
            self._auto_committer.start()
        if self._member_state.subscription is not None:
            self._join()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._auto_committer is not None:
            await self._auto_committer.stop()
        if self._group_member is not None:
            await self._group_member.stop()
        if self._auto_committer is not None and self._started:
            await self._commit_consumed_logging_failure("close")
        if self._group_member is not None:
            await self._group_member.leave()
        await self._fetcher.close()
        await self._client.close()

    # ------------------------------------------------------------------ assignment

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions; positions of partitions kept stay, new ones start at the
        group's committed offset (with a ``group_id``) or follow ``auto_offset_reset``."""
        if self._member_state.subscription is not None:
            raise ValueError("this consumer is subscribed; unsubscribe() before assign()")
        self._set_assignment([TopicPartition(*tp) for tp in partitions])

    def _set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = list(partitions)
        self._subscriptions.assign(wanted, from_committed=self.settings.group_id is not None)
        self._unknown.assigned(wanted)
        self._assignment_version += 1
        kept = set(wanted)
        self._iteration_buffer = deque(r for r in self._iteration_buffer if (r.topic, r.partition) in kept)
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
        """Move to the high watermark of each partition (the last stable offset with ``read_committed``):
        only records produced from now on are read."""
        await self._seek_to("latest", partitions)

    async def _seek_to(self, strategy: str, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions or self._subscriptions.assigned():
            offsets = await self._client.list_offsets(tp)
            self.seek(
                tp, offsets.earliest_offset if strategy == "earliest" else latest_offset(offsets, self._isolation)
            )

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
        Raises errors the fetchers met (``OffsetOutOfRangeError``, ``LogTruncationError`` ...),
        and ``UnknownTopic``/``UnknownPartition`` (``UNKNOWN_TOPIC_OR_PARTITION``) once for an
        assigned or subscribed topic or partition this poll confirmed does not exist
        (``consumer.unknown_topics``).
        """
        await self.start()
        limit = max_records or self.settings.max_poll_records
        only = set(partitions) if partitions else None
        deadline_ms = monotonic_ms() + timeout_ms
        while True:
            self._fetcher.raise_error()
            if self._group_member is not None:
                self._group_member.raise_error()
            if self._unknown.suspected:
                await self._unknown.check()
            records = self._fetcher.drain(limit, only)
            remaining_ms = deadline_ms - monotonic_ms()
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

    # ------------------------------------------------------------------ group membership

    def subscribe(self, topics: Iterable[str] = (), *, pattern: str | re.Pattern[str] | None = None) -> None:
        """Join the group (``group_id``) for ``topics``, or for every topic whose whole name matches ``pattern``.

        The coordinator assigns partitions; ``assignment()`` shows the current share.
        A pattern is evaluated by the coordinator, so topics created later join the
        subscription at once. A named topic the cluster does not have when a poll checks
        makes that ``getmany`` raise ``UnknownTopic`` (once); a pattern never does.
        Subscribing again replaces the subscription.
        """
        group_id = self._require_group("subscribe")
        if self._member_state.subscription is None and self._subscriptions.assigned():
            raise ValueError("this consumer has a manual assignment; assign([]) before subscribe()")
        if isinstance(topics, str):
            topics = [topics]
        if isinstance(pattern, re.Pattern):
            pattern = pattern.pattern
        subscription = Subscription(pattern=pattern) if pattern is not None else Subscription(frozenset(topics))
        self._member_state.subscribe(subscription)
        self._unknown.subscribed(subscription.topics or ())
        log.debug("consumer_subscribed group_id=%s subscription=%s", group_id, subscription.body())
        if self._started:
            self._join()

    def subscription(self) -> Subscription | None:
        return self._member_state.subscription

    @property
    def member_id(self) -> str:
        """This consumer's id in its group (the ``consumer_id`` of the groups API)."""
        return self._member_state.member_id

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member as it is now, for ``Producer.send_offsets_to_transaction`` (Kafka's ``groupMetadata()``)."""
        group_id = self._require_group("group_metadata")
        return ConsumerGroupMetadata(group_id, self.member_id, self.member_epoch)

    @property
    def member_epoch(self) -> int:
        """The member epoch held now: 0 while joining, rising with each assignment the member reconciles to."""
        return self._member_state.member_epoch

    async def unsubscribe(self) -> None:
        """Commit what was consumed (with auto-commit), leave the group, and give up every partition."""
        self._unknown.subscribed(())
        if self._group_member is None:
            self._member_state.left()
            return
        await self._group_member.stop()
        if self._auto_committer is not None:
            await self._commit_consumed_logging_failure("unsubscribe")
        await self._group_member.leave()
        self._group_member = None

    def _join(self) -> None:
        assert self.settings.group_id is not None
        if self._group_member is None:
            config = self.settings
            timings = MembershipTimings(
                session_timeout_ms=config.session_timeout_ms,
                rebalance_timeout_ms=config.max_poll_interval_ms,
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                retry_backoff_ms=config.retry_backoff_ms,
                client_id=config.client_id,
            )
            self._group_member = GroupMember(self._groups, self.settings.group_id, self._member_state, self, timings)
            self._group_member.start()
        self._group_member.wake()

    def _require_group(self, action: str) -> str:
        if self.settings.group_id is None:
            raise ValueError(f"{action}() needs a group_id")
        return self.settings.group_id

    # AssignmentListener: called by the heartbeat loop (consumer.group.GroupMember).

    async def revoke_partitions(self, partitions: frozenset[TopicPartition]) -> None:
        consumed = self._consumed_positions(partitions)
        self._set_assignment(tp for tp in self._subscriptions.assigned() if tp not in partitions)
        if self._auto_committer is not None and consumed:
            await self._commit_logging_failure(consumed, "revocation")

    def acquire_partitions(self, partitions: frozenset[TopicPartition]) -> None:
        self._set_assignment([*self._subscriptions.assigned(), *sorted(partitions)])

    def lose_partitions(self, partitions: frozenset[TopicPartition]) -> None:
        if partitions:
            self._set_assignment(tp for tp in self._subscriptions.assigned() if tp not in partitions)

    # ------------------------------------------------------------------ committed offsets

    def _consumed_positions(self, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, int]:
        """Per partition, the offset after the last record the application received."""
        wanted = self._subscriptions.assigned() if partitions is None else partitions
        positions: dict[TopicPartition, int] = {}
        for tp in wanted:
            if self._subscriptions.is_assigned(tp) and self._subscriptions.position(tp) is not None:
                positions[tp] = self._subscriptions.position(tp)  # type: ignore[assignment]
        for record in reversed(self._iteration_buffer):
            tp = TopicPartition(record.topic, record.partition)
            if tp in positions:
                positions[tp] = min(positions[tp], record.offset)
        return positions

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (default: the consumed position of every assigned partition) and wait for it.

        An offset is the next one to read. Raises ``CommitFailedError`` when this member
        was expelled from the group meanwhile (the partitions may have a new owner).
        """
        self._require_group("commit")
        assert self._committer is not None
        await self._committer.commit(self._consumed_positions() if offsets is None else dict(offsets))

    def commit_async(self, offsets: Mapping[TopicPartition, int] | None = None) -> asyncio.Task[None]:
        """Start a commit of ``offsets`` (default: consumed positions, taken now); await the task to see its outcome."""
        self._require_group("commit_async")
        assert self._committer is not None
        wanted = self._consumed_positions() if offsets is None else dict(offsets)
        return asyncio.get_running_loop().create_task(self._committer.commit(wanted), name="commit-async")

    async def committed(self, tp: TopicPartition) -> int | None:
        """The group's committed offset of ``tp`` as the coordinator has it now (``None``: never committed)."""
        self._require_group("committed")
        assert self._committer is not None
        return (await self._committer.committed()).get(TopicPartition(*tp))

    async def _committed_offset(self, tp: TopicPartition) -> int | None:
        """For the fetcher's first position of ``tp``: concurrent lookups share one request.

        A request is shared only within one assignment version: a partition acquired
        after a request left must not see offsets read before its previous owner's
        final commit.
        """
        assert self._committer is not None
        shared = self._committed_fetch
        if shared is None or shared[0] != self._assignment_version or shared[1].done():
            task = asyncio.get_running_loop().create_task(self._committer.committed())
            shared = self._committed_fetch = (self._assignment_version, task)
        return (await asyncio.shield(shared[1])).get(tp)

    async def _commit_consumed(self) -> None:
        """Auto-commit: the consumed positions that moved since the last commit."""
        committer = self._committer
        assert committer is not None

        def moved() -> dict[TopicPartition, int]:
            last = committer.last_committed
            return {tp: offset for tp, offset in self._consumed_positions().items() if last.get(tp) != offset}

        await committer.commit(moved)

    async def _commit_consumed_logging_failure(self, reason: str) -> None:
        try:
            await self._commit_consumed()
        except HighwaterError as error:
            log.warning("auto_commit_failed group_id=%s reason=%s error=%s", self.settings.group_id, reason, error.name)

    async def _commit_logging_failure(self, offsets: dict[TopicPartition, int], reason: str) -> None:
        assert self._committer is not None
        try:
            await self._committer.commit(offsets)
        except HighwaterError as error:
            log.warning("auto_commit_failed group_id=%s reason=%s error=%s", self.settings.group_id, reason, error.name)
