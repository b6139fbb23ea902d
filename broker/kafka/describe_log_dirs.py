"""DescribeLogDirs (35): this broker's log directory and the bytes of each replica in it, as the HTTP route answers.

Kafka's admin clients ask every broker for its own; the figures come from
``broker.node.log_dirs`` (the HTTP ``GET …/brokers/{b}/log-dirs``'s). DESCRIBE on the
cluster, else ``CLUSTER_AUTHORIZATION_FAILED`` and no directory (v3+; an older version,
which has no place for the error, gets no directory). ``topics`` null asks for every replica, else
for the partitions named (those this broker does not hold are left out, as Kafka does).
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.node.log_dirs import ReplicaBytes
from broker.security.acl import AclOperation

API_KEY = 35


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    response_class = shape(API_KEY, version, "DescribeLogDirsResponse")
    if authz.cluster_refusal(context.node, AclOperation.DESCRIBE) is not None:
        return build(
            response_class, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed, results=()
        )
    usage = context.node.replicas.log_dir_usage()
    asked = request.body.topics
    wanted = None if asked is None else {(t.topic, int(p)) for t in asked for p in t.partitions}
    replicas = [r for r in usage.replicas if wanted is None or (r.topic, r.partition) in wanted]
    result = build(
        shape(API_KEY, version, "DescribeLogDirsResult"),
        error_code=ErrorCode.none,
        log_dir=usage.path,
        topics=_topics(version, replicas),
        total_bytes=i64(usage.total_bytes),
        usable_bytes=i64(usage.usable_bytes),
    )
    return build(response_class, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=(result,))


def _topics(version: int, replicas: list[ReplicaBytes]) -> tuple[Any, ...]:
    topic_class = shape(API_KEY, version, "DescribeLogDirsTopic")
    partition_class = shape(API_KEY, version, "DescribeLogDirsPartition")
    return tuple(
        build(
            topic_class,
            name=topic,
            partitions=tuple(
                build(
                    partition_class,
                    partition_index=i32(replica.partition),
                    partition_size=i64(replica.size_bytes),
                    offset_lag=i64(replica.offset_lag),
                    is_future_key=False,
                )
                for replica in held
            ),
        )
        for topic, held in groupby(replicas, key=lambda replica: replica.topic)
    )
