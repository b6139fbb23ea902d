"""Fetch: records below the high watermark, through the node's router (``fetch``), with Kafka's long poll.

The node's read already stops at the HW, so nothing at or above it reaches a Kafka
consumer either. With ``isolation_level`` 1 (``read_committed``) it stops at the last
stable offset instead, and the answer lists the aborted transactions with records in
it, so the client drops their records, as Kafka's consumers do. Every answer carries
the partition's ``last_stable_offset``. Batches go out as the log holds them.

Long poll, as Kafka's ``DelayedFetch``: a first pass reads every partition without
waiting; if that found fewer than ``min_bytes`` and ``max_wait_ms`` allows, every
partition long-polls at once and the first to return data (or an error) ends the
wait, after which one more pass without waiting collects what every partition has.
The response stays under ``max_bytes`` except that the first batch found is always
sent (KIP-74), so a batch larger than the limit cannot stall a consumer.

Fetch sessions (KIP-227, v7+) are kept by ``fetch_sessions``: a full fetch opens one, an
incremental fetch names only what changed and is answered only with news. Each request
is authorized again: the guard checks the partitions it names, and a session's other
partitions whose topic the principal may no longer READ answer
``TOPIC_AUTHORIZATION_FAILED``. Only a partition's leader answers (no forwarding).

The answer, and only it, counts in the console's traffic (``broker.console.activity``):
the long poll's passes read records that the final pass reads again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId
from kio.static.primitive import i32, i64

from broker.clock import wall_clock_ms
from broker.isolation import Isolation
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.fencing import NO_EPOCH, require_leader_epoch
from broker.kafka.fetch_sessions import SESSIONLESS, FetchPosition, PartitionKey, SessionError
from broker.kafka.shapes import NO_THROTTLE, build, millis, shape
from broker.replication.fetch_session import SESSIONLESS_EPOCH
from broker.security.acl import AclOperation, Resource

API_KEY = 1


Ask = tuple[PartitionKey, FetchPosition]
"""One partition to read and where: the pairs a fetch session keeps (``FetchContext.reads``)."""


@dataclass(frozen=True)
class PartitionRead:
    error_code: ErrorCode
    data: bytes = b""
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1
    aborted: tuple[tuple[int, int], ...] = ()


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    body = request.body
    version = request.prefix.api_version
    named = [
        (
            (topic.topic, p.partition),
            FetchPosition(p.fetch_offset, p.partition_max_bytes, getattr(p, "current_leader_epoch", NO_EPOCH)),
        )
        for topic in body.topics
        for p in topic.partitions
    ]
    forgotten = [(t.topic, p) for t in getattr(body, "forgotten_topics_data", ()) or () for p in t.partitions]
    owner, now_ms = authz.principal_name(), wall_clock_ms()
    sessions = context.fetch_sessions
    fetch = sessions.begin(
        getattr(body, "session_id", SESSIONLESS),
        getattr(body, "session_epoch", SESSIONLESS_EPOCH),
        owner,
        named,
        forgotten,
        now_ms,
    )
    if fetch.error != SessionError.NONE:
        return _response(version, ErrorCode(fetch.error), SESSIONLESS, [], [])
    asks = fetch.reads
    max_wait_ms = min(millis(body.max_wait), context.node.settings.fetch_max_wait_ms)
    isolation = Isolation.from_kafka(body.isolation_level)
    refused = _refused_in_session(context, fetch.reads, {key for key, _ in named}) if fetch.incremental else set()
    reads = await _read_all(context, asks, 0, isolation, refused)
    if max_wait_ms > 0 and not _has_error(reads) and sum(len(r.data) for r in reads) < max(body.min_bytes, 1):
        await _wait_for_any(context, [ask for ask in asks if ask[0] not in refused], max_wait_ms, isolation)
        reads = await _read_all(context, asks, 0, isolation, refused)
    answered = _within(reads, body.max_bytes)
    results = [
        (bool(r.data) or r.error_code != ErrorCode.none, (r.high_watermark, r.last_stable_offset, r.log_start_offset))
        for r in answered
    ]
    session_id, included = sessions.answered(fetch, results, owner, now_ms)
    traffic = context.node.console.traffic
    for ((topic, _), position), read in zip(asks, answered, strict=True):
        traffic.fetched_batches(topic, position.fetch_offset, read.data)
    kept = [(ask, read) for ask, read, keep in zip(asks, answered, included, strict=True) if keep]
    return _response(version, ErrorCode.none, session_id, [a for a, _ in kept], [r for _, r in kept])


def _refused_in_session(context: RequestContext, reads: tuple[Ask, ...], named: set[PartitionKey]) -> set[PartitionKey]:
    """The session's partitions this request did not name whose topic the principal may no longer READ:
    each request is authorized again, as Kafka does (the guard checked the named ones)."""
    topics = {key[0] for key, _ in reads if key not in named}
    refused = {
        topic for topic in topics if not authz.authorized(context.node, AclOperation.READ, Resource.topic(topic))
    }
    return {key for key, _ in reads if key[0] in refused and key not in named}


def _has_error(reads: list[PartitionRead]) -> bool:
    """An error is news for the client: answer at once, as Kafka does."""
    return any(read.error_code != ErrorCode.none for read in reads)


async def _read_all(
    context: RequestContext,
    asks: Sequence[Ask],
    timeout_ms: int,
    isolation: Isolation,
    refused: set[PartitionKey],
) -> list[PartitionRead]:
    return list(
        await asyncio.gather(
            *(
                _refusal() if key in refused else _read(context, key, position, timeout_ms, isolation)
                for key, position in asks
            )
        )
    )


async def _refusal() -> PartitionRead:
    return PartitionRead(ErrorCode.topic_authorization_failed)


async def _read(
    context: RequestContext, key: PartitionKey, position: FetchPosition, timeout_ms: int, isolation: Isolation
) -> PartitionRead:
    node = context.node
    topic, partition = key
    try:
        leader_epoch = node.leaders.leader_state(topic, partition).leader_epoch
        require_leader_epoch(topic, partition, position.current_leader_epoch, leader_epoch)
        result = await node.router.fetch(
            topic, partition, position.fetch_offset, position.max_bytes, timeout_ms, forward=False, isolation=isolation
        )
    except Exception as error:  # noqa: BLE001 - each partition answers its own error; the request goes on
        return PartitionRead(kafka_error_code(error))
    return PartitionRead(
        ErrorCode.none,
        result.data,
        result.high_watermark,
        result.log_start_offset,
        result.last_stable_offset,
        result.aborted,
    )


async def _wait_for_any(context: RequestContext, asks: Sequence[Ask], max_wait_ms: int, isolation: Isolation) -> None:
    """Return once one partition has data or an error, or after ``max_wait_ms``."""
    polls = {asyncio.ensure_future(_read(context, key, position, max_wait_ms, isolation)) for key, position in asks}
    try:
        pending = polls
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if any(task.result().data or task.result().error_code != ErrorCode.none for task in done):
                return
    finally:
        for task in polls:
            task.cancel()
        await asyncio.gather(*polls, return_exceptions=True)


def _within(reads: list[PartitionRead], max_bytes: int) -> list[PartitionRead]:
    """Drop data past ``max_bytes`` (the first non-empty partition always keeps its data)."""
    kept: list[PartitionRead] = []
    total = 0
    for read in reads:
        over = read.data and total and total + len(read.data) > max_bytes
        kept.append(
            PartitionRead(read.error_code, b"", read.high_watermark, read.log_start_offset, read.last_stable_offset)
            if over
            else read
        )
        total += len(kept[-1].data)
    return kept


def _response(
    version: int, error_code: ErrorCode, session_id: int, asks: Sequence[Ask], reads: list[PartitionRead]
) -> Any:
    partition_class = shape(API_KEY, version, "PartitionData")
    aborted_class = shape(API_KEY, version, "AbortedTransaction")
    by_topic: dict[str, list[Any]] = {}
    for ((topic, partition), _), read in zip(asks, reads, strict=True):
        by_topic.setdefault(topic, []).append(
            build(
                partition_class,
                partition_index=i32(partition),
                error_code=read.error_code,
                high_watermark=i64(read.high_watermark),
                last_stable_offset=i64(read.last_stable_offset),
                log_start_offset=i64(read.log_start_offset),
                aborted_transactions=tuple(
                    build(aborted_class, producer_id=ProducerId(producer_id), first_offset=i64(first_offset))
                    for producer_id, first_offset in read.aborted
                )
                or None,
                preferred_read_replica=i32(-1),
                records=read.data,
            )
        )
    topic_class = shape(API_KEY, version, "FetchableTopicResponse")
    return build(
        shape(API_KEY, version, "FetchResponse"),
        throttle_time=NO_THROTTLE,
        error_code=error_code,
        session_id=i32(session_id),
        responses=tuple(build(topic_class, topic=name, partitions=tuple(parts)) for name, parts in by_topic.items()),
    )
