"""Produce: each partition's record batches go to the node's router (``produce``) as the client sent them.

Kafka's ``acks`` number maps to highwater's ``Acks`` (0, 1, -1 = all); anything else
is ``INVALID_REQUIRED_ACKS`` for every partition, as in Kafka. The batches are not
decoded here: the node checks header and CRC, stamps offsets and epoch, and appends
the bytes it was given. Requests go only to a partition's leader (``forward`` off):
a broker that does not lead it answers ``NOT_LEADER_OR_FOLLOWER`` and the client
refreshes its metadata, as with Kafka. Partitions of one request are appended
concurrently; each gets its own error code. A request for one partition (a lone write)
awaits its append directly: no task, so the answer leaves at the partition's completion
instead of two loop turns later.

acks=0 gets no response at all (Kafka sends none). When an acks=0 produce fails for
some partition the connection is closed instead, as Kafka does: it is the only signal
such a client gets, and it makes the client refresh its metadata (a new leader).
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from broker.acks import Acks
from broker.errors import HighwaterError
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import CloseConnection, RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import NO_THROTTLE, build, millis, shape, timestamp

log = structlog.get_logger(__name__)

API_KEY = 0
KAFKA_ACKS = {0: Acks.ZERO, 1: Acks.ONE, -1: Acks.ALL}


async def handle(context: RequestContext, request: DecodedRequest) -> Any | None:
    body = request.body
    version = request.prefix.api_version
    acks = KAFKA_ACKS.get(body.acks)
    timeout_ms = millis(body.timeout)
    transactional_id = getattr(body, "transactional_id", None)
    jobs = [
        (
            topic.name,
            partition.index,
            _produce_one(context, topic.name, partition.index, partition.records, acks, timeout_ms, transactional_id),
        )
        for topic in body.topic_data
        for partition in topic.partition_data
    ]
    if len(jobs) == 1:
        outcomes = [await jobs[0][2]]
    else:
        outcomes = await asyncio.gather(*(job for _, _, job in jobs))
    if acks is Acks.ZERO:
        failed = [(t, i, o[0].name) for (t, i, _), o in zip(jobs, outcomes, strict=True) if o[0] != ErrorCode.none]
        if failed:
            raise CloseConnection(f"acks=0 produce failed for {failed}")
        return None
    by_topic: dict[str, list[Any]] = {}
    partition_class = shape(API_KEY, version, "PartitionProduceResponse")
    for (topic, index, _), (error_code, base_offset, append_time_ms, log_start_offset, message) in zip(
        jobs, outcomes, strict=True
    ):
        by_topic.setdefault(topic, []).append(
            build(
                partition_class,
                index=i32(index),
                error_code=error_code,
                base_offset=i64(base_offset),
                log_append_time=timestamp(append_time_ms),
                log_start_offset=i64(log_start_offset),
                record_errors=(),
                error_message=message,
            )
        )
    topic_class = shape(API_KEY, version, "TopicProduceResponse")
    return build(
        shape(API_KEY, version, "ProduceResponse"),
        responses=tuple(
            build(topic_class, name=name, partition_responses=tuple(parts)) for name, parts in by_topic.items()
        ),
        throttle_time=NO_THROTTLE,
    )


async def _produce_one(
    context: RequestContext,
    topic: str,
    partition: int,
    records: bytes | None,
    acks: Acks | None,
    timeout_ms: int,
    transactional_id: str | None,
) -> tuple[ErrorCode, int, int, int, str | None]:
    """(error code, base offset, log append time, log start offset, message) of one partition's append."""
    if acks is None:
        return ErrorCode.invalid_required_acks, -1, -1, -1, "acks must be 0, 1 or -1"
    if not records:
        return ErrorCode.corrupt_message, -1, -1, -1, "no record batch for this partition"
    try:
        result = await context.node.router.produce(
            topic, partition, records, acks, timeout_ms, forward=False, transactional_id=transactional_id
        )
    except Exception as error:  # every failure is this partition's error code, never the connection's
        if not isinstance(error, HighwaterError):
            log.exception("kafka.produce_failed", topic=topic, partition=partition)
            return ErrorCode.unknown_server_error, -1, -1, -1, None
        return kafka_error_code(error), -1, -1, -1, error.message
    return (
        ErrorCode.none,
        result.base_offset,
        result.log_append_time_ms,
        context.node.leaders.log_start_offset(topic, partition),
        None,
    )
