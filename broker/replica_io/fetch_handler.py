"""The leader's side of a replica fetch: record each follower's position, send the bytes.

Kafka's ``ReplicaManager.fetchMessages`` for a follower: every partition of the
request is validated and recorded first (the fetch offset *is* the follower's LEO,
which may raise the HW or propose an ISR expansion), then the stored batches from
that offset up to the leader's LEO are sent as they are. When no partition has
anything to send, the fetch waits up to ``max_wait_ms`` and returns as soon as any
of them is appended to (a long poll), so a caught-up follower learns of a new
record within one round trip.

What each partition is answered (refused, a diverging epoch, records from an offset)
is decided by the pure ``PartitionReplica``; this module reads the bytes and waits.

Where a read runs (``Partition.read_log``): a fetch that starts at the leader's LEO (a
caught-up follower) reads on the event loop, capped at ``TAIL_READ_MAX_BYTES`` (one whole
batch at least, as every read): at the LEO the read returns nothing without touching the disk, and after
the long poll wakes it returns what was appended meanwhile, still in the page cache.
Sending that at once, without a hop to the executor and back, is what a lone acks=all
produce waits for. A follower behind the LEO may read cold data: the executor.
The follower's broker epoch (KIP-903) is checked per partition by the core against
the epoch this broker's metadata holds for that follower (``RegisteredBrokerEpoch``);
this module only passes the two numbers.

A follower's replica that a move is adding, not yet in sync, is throttled (Kafka's
``leader.replication.throttled.rate``, ``broker.replication.throttle``): while the
leader's quota is in debt its partition is read for nobody and left out of the answer,
and the long poll waits no longer than the debt lasts; each read for it asks for at
most ``round_bytes``, and what it is sent counts against the quota.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from broker.clock import wall_clock_ms
from broker.errors import HighwaterError, NotLeaderOrFollower
from broker.replica_io.partition import Partition
from broker.replica_io.trace import trace
from broker.replication import FetchRequestFields
from broker.replication.fetch_session import LeaderSessions, PartitionKey, SessionRefused
from broker.replication.fetch_wire import FetchPartition, FetchPartitionResponse, FetchRequest, FetchResponse
from broker.replication.throttle import ReplicationQuota
from broker.waiting import wait_event

log = structlog.get_logger(__name__)

PartitionLookup = Callable[[str, int], "Partition | None"]
RegisteredBrokerEpoch = Callable[[int], int]
"""Broker id -> its broker epoch in the metadata seen here, or ``UNKNOWN_BROKER_EPOCH``."""


def _error_response(fp: FetchPartition, error: HighwaterError, partition: Partition | None) -> FetchPartitionResponse:
    return FetchPartitionResponse(
        topic=fp.topic,
        partition=fp.partition,
        high_watermark=partition.high_watermark if partition else -1,
        log_start_offset=partition.log_start_offset if partition else -1,
        log_end_offset=partition.log_end_offset if partition else -1,
        error=error,
    )


@dataclass(slots=True)
class _Recorded:
    """A partition recorded this round, to be read from ``offset``.

    ``repeated_at`` is the replica's generation when the core recorded a repeated fetch
    in O(1) (else None): only then may the partition become quiet, and only while that
    generation holds.
    """

    partition: Partition
    fp: FetchPartition
    offset: int
    at_tail: bool
    repeated_at: int | None


def _record_fetch(
    request: FetchRequest,
    fp: FetchPartition,
    partition: Partition | None,
    registered_broker_epoch: int,
    *,
    repeated: bool,
) -> FetchPartitionResponse | _Recorded:
    """Validate and record one partition: the refusal to answer, or where to read from.

    ``repeated``: the session holds ``fp`` from an earlier request and this one did not
    name it; the core records that in O(1) when it can (``on_repeated_follower_fetch``).
    A partition this broker does not know yet (its record has not arrived here) is a
    retriable NOT_LEADER_OR_FOLLOWER, as Kafka answers, so the follower retries.
    """
    if partition is None:
        return _error_response(
            fp, NotLeaderOrFollower(f"{fp.topic}-{fp.partition} has no replica on this broker yet"), None
        )
    if repeated and partition.record_repeated_follower_fetch(
        request.replica_id,
        fp.fetch_offset,
        fp.current_leader_epoch,
        broker_epoch=request.broker_epoch,
        registered_broker_epoch=registered_broker_epoch,
    ):
        return _Recorded(
            partition, fp, fp.fetch_offset, fp.fetch_offset >= partition.log_end_offset, partition.generation
        )
    fields = FetchRequestFields(
        replica_id=request.replica_id,
        fetch_offset=fp.fetch_offset,
        last_fetched_epoch=fp.last_fetched_epoch,
        current_leader_epoch=fp.current_leader_epoch,
        log_start_offset=fp.log_start_offset,
    )
    trace(
        "leader.fetch_received",
        topic=fp.topic,
        partition=fp.partition,
        replica_id=request.replica_id,
        offset=fp.fetch_offset - 1,
        leader_epoch=fp.current_leader_epoch,
    )
    outcome = partition.record_follower_fetch(
        fields, broker_epoch=request.broker_epoch, registered_broker_epoch=registered_broker_epoch
    )
    if outcome.error is not None or outcome.diverging_epoch is not None:
        return FetchPartitionResponse(
            topic=fp.topic,
            partition=fp.partition,
            high_watermark=outcome.high_watermark,
            log_start_offset=outcome.log_start_offset,
            log_end_offset=outcome.log_end_offset,
            error=outcome.error,
            diverging_epoch=outcome.diverging_epoch,
        )
    return _Recorded(partition, fp, fp.fetch_offset, fp.fetch_offset >= partition.log_end_offset, None)


async def _read(
    partition: Partition, fp: FetchPartition, offset: int, max_bytes: int, *, at_tail: bool
) -> FetchPartitionResponse:
    """The batches from ``offset``; on the event loop when the fetch started at the LEO (``at_tail``).

    A follower holding everything (``offset`` at the LEO) is answered without a read.
    """
    high_watermark = partition.high_watermark
    if offset >= partition.log_end_offset:
        return FetchPartitionResponse(
            topic=fp.topic,
            partition=fp.partition,
            high_watermark=high_watermark,
            log_start_offset=partition.log_start_offset,
            log_end_offset=partition.log_end_offset,
        )
    try:
        result = await partition.read_log(offset, max_bytes, None, at_tail=at_tail)
    except HighwaterError as error:
        return _error_response(fp, error, partition)
    return FetchPartitionResponse(
        topic=fp.topic,
        partition=fp.partition,
        high_watermark=high_watermark,
        log_start_offset=partition.log_start_offset,
        log_end_offset=partition.log_end_offset,
        records=result.data,
    )


async def serve_replica_fetch(
    request: FetchRequest,
    lookup: PartitionLookup,
    registered_broker_epoch: RegisteredBrokerEpoch,
    sessions: LeaderSessions,
    quota: ReplicationQuota | None = None,
    *,
    clock_ms: Callable[[], int] = wall_clock_ms,
) -> FetchResponse:
    """Answer one follower fetch covering many partitions; long-polls when nothing is new.

    Every active partition of the follower's session is validated and recorded, and read
    when the follower lacks records (unless it is throttled and ``quota`` is in debt); the
    answer names only those the session says have news (all of them in a full fetch).
    Quiet partitions (``fetch_session``) are not looked at: the round is stamped once at
    ``clock_ms`` (the partitions' clock), and their followers' states count it; one stirred
    while the fetch waits wakes it and is recorded and read then.
    """
    quota = quota or ReplicationQuota()
    session = sessions.open(request)
    if isinstance(session, SessionRefused):
        log.info("replica_fetch.session_refused", replica_id=request.replica_id, error=session.error.name)
        return FetchResponse([], request.session_id, session.error)
    follower_broker_epoch = registered_broker_epoch(request.replica_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait_ms / 1000
    for key in session.take_released():
        if (partition := lookup(*key)) is not None:
            partition.unwatch_quiet(request.replica_id)
    session.begin_round(clock_ms(), request.broker_epoch, follower_broker_epoch)
    appended = asyncio.Event()
    session.wake = appended.set
    watched: list[Partition] = []
    refused: list[FetchPartitionResponse] = []
    to_read: dict[PartitionKey, _Recorded] = {}
    """What to read per partition; a partition stirred while the request waits is read anew."""
    named = None if session.answers_all else {(fp.topic, fp.partition) for fp in request.partitions}

    def record(key: PartitionKey) -> None:
        partition = lookup(*key)
        if partition is not None:
            watched.append(partition)
        repeated = named is not None and key not in named
        outcome = _record_fetch(request, session.partitions[key], partition, follower_broker_epoch, repeated=repeated)
        if isinstance(outcome, FetchPartitionResponse):
            refused.append(outcome)
        else:
            to_read[key] = outcome

    def read_stirred(key: PartitionKey) -> None:
        """A partition stirred out of quiet while this request waits: read, not recorded.

        It was quiet when the request arrived, so the request's fetch of it is what the
        session already holds; recording it now would count a fetch sent before the change
        as one made after it (after a controlled shutdown took the follower out of the ISR,
        that put it straight back in). The follower's next request records it.
        """
        partition = lookup(*key)
        if partition is not None:
            watched.append(partition)
            fp = session.partitions[key]
            to_read[key] = _Recorded(partition, fp, fp.fetch_offset, True, None)

    try:
        for key in list(session.active):
            record(key)
        session.take_stirred()  # stirred before now (the refresh's too): active, so just recorded
        throttled = (
            {key for key, r in to_read.items() if r.partition.throttles(request.replica_id)} if quota.limited else set()
        )
        while True:
            appended.clear()
            for key in session.take_stirred():
                read_stirred(key)
            for partition in watched:
                partition.appended.register(appended)
            news = list(refused)
            debt_s = quota.wait_s(loop.time()) if throttled else 0.0
            for recorded in to_read.values():
                partition, fp, offset = recorded.partition, recorded.fp, recorded.offset
                key = (fp.topic, fp.partition)
                if key in throttled and debt_s > 0:
                    continue
                if offset >= partition.log_end_offset and session.knows(
                    key,
                    partition.high_watermark,
                    partition.log_start_offset,
                    partition.log_end_offset,
                ):
                    if recorded.repeated_at == partition.generation and key in session.active:
                        session.mark_quiet(key, partition.generation)
                        partition.watch_quiet(request.replica_id, session)
                    continue
                if key in throttled:
                    answer = await _read(
                        partition, fp, offset, quota.round_bytes(request.max_bytes), at_tail=recorded.at_tail
                    )
                    quota.record(len(answer.records), loop.time())
                else:
                    answer = await _read(partition, fp, offset, request.max_bytes, at_tail=recorded.at_tail)
                if session.has_news(answer):
                    news.append(answer)
            remaining = deadline - loop.time()
            if (
                refused
                or any(answer.records for answer in news)
                or remaining <= 0
                or any(partition.appended.ended for partition in watched)
            ):
                session.answered(news)
                return FetchResponse(news, session.session_id)
            await wait_event(appended, min(remaining, debt_s) if debt_s > 0 else remaining)
            trace("leader.fetch_woken", replica_id=request.replica_id)
    finally:
        session.wake = None
        for partition in watched:
            partition.appended.unregister(appended)
