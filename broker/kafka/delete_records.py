"""DeleteRecords (21): every record of a partition below an offset goes; each partition answers its low watermark.

The same operation as ``POST …/partitions/{p}/records:delete`` (``Partition.delete_records``
through ``Router.delete_records``), run on the partition's leader: a client sends each
partition to its leader, and a broker that does not lead one answers it
``NOT_LEADER_OR_FOLLOWER``. An offset of -1 means the high watermark; past it is
``OFFSET_OUT_OF_RANGE``. DELETE on the topic, as Kafka's (a principal that may not even
DESCRIBE it is told it does not exist); internal topics are ``INVALID_TOPIC_EXCEPTION``.
The partitions run at once, each waiting up to the request's timeout for its in-sync
replicas to follow (``REQUEST_TIMED_OUT`` and low watermark -1 if they did not).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from broker.kafka.admin import delete_refused
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import NO_THROTTLE, build, millis, shape
from broker.topics.policy import check_delete_records

API_KEY = 21
UNKNOWN_LOW_WATERMARK = -1


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    timeout_ms = max(0, millis(request.body.timeout))
    topic_class = shape(API_KEY, version, "DeleteRecordsTopicResult")
    partition_class = shape(API_KEY, version, "DeleteRecordsPartitionResult")
    topics = []
    for topic in request.body.topics:
        refused = delete_refused(context, topic.name)
        answers = await asyncio.gather(
            *(
                _delete(context, topic.name, asked.partition_index, asked.offset, timeout_ms, refused)
                for asked in topic.partitions
            )
        )
        partitions = tuple(
            build(partition_class, partition_index=i32(asked.partition_index), low_watermark=i64(low), error_code=code)
            for asked, (code, low) in zip(topic.partitions, answers, strict=True)
        )
        topics.append(build(topic_class, name=topic.name, partitions=partitions))
    return build(shape(API_KEY, version, "DeleteRecordsResponse"), throttle_time=NO_THROTTLE, topics=tuple(topics))


async def _delete(
    context: RequestContext,
    topic: str,
    partition: int,
    before_offset: int,
    timeout_ms: int,
    refused: tuple[ErrorCode, str | None] | None,
) -> tuple[ErrorCode, int]:
    """(error code, low watermark) of one partition."""
    if refused is not None:
        return refused[0], UNKNOWN_LOW_WATERMARK
    try:
        check_delete_records(topic)
        low_watermark = await context.node.router.delete_records(topic, partition, before_offset, timeout_ms)
    except Exception as error:  # noqa: BLE001 - each partition answers its own error
        return kafka_error_code(error), UNKNOWN_LOW_WATERMARK
    return ErrorCode.none, low_watermark
