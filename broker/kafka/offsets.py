"""ListOffsets and OffsetForLeaderEpoch: offsets a consumer positions itself with, asked of the leader.

ListOffsets: ``-2`` (earliest) is the log start offset, ``-1`` (latest) the high
watermark (the last stable offset for ``isolation_level`` 1, ``read_committed``, as
Kafka answers it) — never the log end offset, so a consumer that starts "at the end" cannot
skip past records that are not yet visible, nor be placed above the HW — and any
other timestamp is the first offset below the HW whose record has that timestamp or
a later one (the node's ``offset_for_timestamp``), or -1 when there is none. While a
new leader's HW is still below the start of its epoch, "latest" (and a timestamp
found nowhere below that HW) is ``OFFSET_NOT_AVAILABLE``, retriable: the previous
leader may have answered a higher HW, and "latest" never goes backwards (KIP-207).
``-3`` (v7+, KIP-734) is the first record with the largest timestamp, answered with that
timestamp (-1 and -1 when there is none below the HW yet), and ``-4`` (v8+, KIP-405's
earliest local offset) the log start offset: every record is on the broker's own disk.
Every other answer's ``timestamp`` is -1: the node finds offsets by timestamp at batch
granularity and does not return the record's own timestamp.

OffsetForLeaderEpoch (KIP-101/KIP-320, librdkafka asks it after a leader change to
detect a truncated log): the largest epoch at or below the one asked for and the
offset where it ends, from the leader's epoch cache, exactly as a follower is told.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from broker.isolation import Isolation
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.fencing import NO_EPOCH, require_leader_epoch
from broker.kafka.shapes import NO_THROTTLE, build, shape

LIST_OFFSETS = 2
OFFSET_FOR_LEADER_EPOCH = 23
EARLIEST = -2
LATEST = -1
MAX_TIMESTAMP = -3
"""KIP-734 (v7+): the record with the largest timestamp, and that timestamp."""
EARLIEST_LOCAL = -4
"""KIP-405 (v8+): the earliest offset on the broker's own disk; every record is, so the log start."""
FIRST_MAX_TIMESTAMP = 7
FIRST_EARLIEST_LOCAL = 8


class Listed(NamedTuple):
    error_code: ErrorCode
    offset: int
    leader_epoch: int
    timestamp: int = -1


NOT_LISTED = Listed(ErrorCode.offset_not_available, -1, -1)


async def list_offsets(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    partition_class = shape(LIST_OFFSETS, version, "ListOffsetsPartitionResponse")
    topic_class = shape(LIST_OFFSETS, version, "ListOffsetsTopicResponse")
    isolation = Isolation.from_kafka(getattr(request.body, "isolation_level", 0))
    topics = []
    for topic in request.body.topics:
        partitions = []
        for asked in topic.partitions:
            listed = await _list_one(
                context,
                version,
                topic.name,
                asked.partition_index,
                asked.timestamp,
                getattr(asked, "current_leader_epoch", NO_EPOCH),
                isolation,
            )
            partitions.append(
                build(
                    partition_class,
                    partition_index=i32(asked.partition_index),
                    error_code=listed.error_code,
                    timestamp=i64(listed.timestamp),
                    offset=i64(listed.offset),
                    leader_epoch=i32(listed.leader_epoch),
                )
            )
        topics.append(build(topic_class, name=topic.name, partitions=tuple(partitions)))
    return build(shape(LIST_OFFSETS, version, "ListOffsetsResponse"), throttle_time=NO_THROTTLE, topics=tuple(topics))


async def _list_one(
    context: RequestContext,
    version: int,
    topic: str,
    partition: int,
    timestamp_ms: int,
    current_leader_epoch: int,
    isolation: Isolation,
) -> Listed:
    """One partition's answer: its error code, offset, leader epoch and (MAX_TIMESTAMP) timestamp."""
    node = context.node
    try:
        state = node.leaders.leader_state(topic, partition)
        require_leader_epoch(topic, partition, current_leader_epoch, state.leader_epoch)
        if timestamp_ms == EARLIEST or (timestamp_ms == EARLIEST_LOCAL and version >= FIRST_EARLIEST_LOCAL):
            return Listed(ErrorCode.none, state.log_start_offset, state.leader_epoch)
        if timestamp_ms == LATEST:
            if not state.latest_offset_available:
                return NOT_LISTED
            return Listed(
                ErrorCode.none,
                isolation.visible_end(state.high_watermark, state.last_stable_offset),
                state.leader_epoch,
            )
        if timestamp_ms == MAX_TIMESTAMP and version >= FIRST_MAX_TIMESTAMP:
            found = await node.router.max_timestamp_offset(topic, partition)
            if found is None:
                return Listed(ErrorCode.none, -1, -1)
            return Listed(ErrorCode.none, found[1], state.leader_epoch, found[0])
        if timestamp_ms < 0:
            return Listed(ErrorCode.unsupported_version, -1, -1)
        offset = await node.router.offset_for_timestamp(topic, partition, timestamp_ms)
    except Exception as error:  # noqa: BLE001 - each partition answers its own error
        return Listed(kafka_error_code(error), -1, -1)
    if offset is None and not state.latest_offset_available:
        return NOT_LISTED
    return Listed(ErrorCode.none, -1 if offset is None else offset, state.leader_epoch)


async def offset_for_leader_epoch(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    entry_class = shape(OFFSET_FOR_LEADER_EPOCH, version, "EpochEndOffset")
    topic_class = shape(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderTopicResult")
    topics = []
    for topic in request.body.topics:
        entries = []
        for asked in topic.partitions:
            error_code, epoch, end_offset = _epoch_end(
                context,
                topic.topic,
                asked.partition,
                asked.leader_epoch,
                getattr(asked, "current_leader_epoch", NO_EPOCH),
            )
            entries.append(
                build(
                    entry_class,
                    error_code=error_code,
                    partition=i32(asked.partition),
                    leader_epoch=i32(epoch),
                    end_offset=i64(end_offset),
                )
            )
        topics.append(build(topic_class, topic=topic.topic, partitions=tuple(entries)))
    return build(
        shape(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderEpochResponse"),
        throttle_time=NO_THROTTLE,
        topics=tuple(topics),
    )


def _epoch_end(
    context: RequestContext, topic: str, partition: int, leader_epoch: int, current_leader_epoch: int
) -> tuple[ErrorCode, int, int]:
    node = context.node
    try:
        state = node.leaders.leader_state(topic, partition)
        require_leader_epoch(topic, partition, current_leader_epoch, state.leader_epoch)
        epoch, end_offset = node.leaders.end_offset_for_epoch(topic, partition, leader_epoch)
    except Exception as error:  # noqa: BLE001 - each partition answers its own error
        return kafka_error_code(error), -1, -1
    return ErrorCode.none, epoch, end_offset
