"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455): Kafka's own tools move partitions.

Both are the HTTP API's twins (``routes_reassignments``): a move goes to the controller
gateway's ``alter_reassignments``, a listing reads the partition records, so Kafka's
``kafka-reassign-partitions.sh``, ``AdminClient.alter_partition_reassignments`` and the
REST API meet one set of rules. As in Kafka, each partition of an alter is answered on
its own (a refused partition moves nothing, the others go ahead), where the HTTP write
is all or nothing:

- ``replicas`` starts or replaces a move; null cancels one, and cancelling a partition
  that is not moving is ``NO_REASSIGNMENT_IN_PROGRESS``;
- an unknown topic or partition is ``UNKNOWN_TOPIC_OR_PARTITION``, a target the
  controller refuses (a broker that is not alive or named twice, fewer replicas than the
  topic's min.insync.replicas) is ``INVALID_REPLICA_ASSIGNMENT`` with the controller's
  message;
- a target of another length than the partition's replicas changes its replication
  factor, unless the request says ``allow_replication_factor_change`` false (v1,
  KIP-860): then it is ``INVALID_REPLICATION_FACTOR`` and nothing moves. The flag is
  answered as asked.

A listing names every moving partition (``topics`` null) or those asked for (named
partitions that do not exist, or do not move, are left out, as Kafka leaves them),
with the whole replica set during the move and the replicas it adds and removes.

Authorization is Kafka's and the HTTP routes': ALTER on the cluster to move, DESCRIBE
on the cluster to list; a refusal is ``CLUSTER_AUTHORIZATION_FAILED`` for the request
and every partition in it.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker.cluster.reassignment import PartitionMove, is_moving, original_replicas
from broker.errors import HighwaterError
from broker.kafka import authz
from broker.kafka.admin import refusal
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation, Resource

ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46


async def alter_partition_reassignments(context: RequestContext, request: DecodedRequest) -> Any:
    version, body = request.prefix.api_version, request.body
    refused: tuple[ErrorCode, str | None] | None = None
    if not authz.authorized(context.node, AclOperation.ALTER, Resource.cluster()):
        refused = ErrorCode.cluster_authorization_failed, authz.refusal_message(AclOperation.ALTER, Resource.cluster())
    topic_class = shape(ALTER_PARTITION_REASSIGNMENTS, version, "ReassignableTopicResponse")
    partition_class = shape(ALTER_PARTITION_REASSIGNMENTS, version, "ReassignablePartitionResponse")
    allow_replication_factor_change = getattr(body, "allow_replication_factor_change", True)
    topics = []
    for topic in body.topics:
        partitions = []
        for asked in topic.partitions:
            replicas = None if asked.replicas is None else [int(broker) for broker in asked.replicas]
            error_code, message = refused or await _move(
                context, topic.name, asked.partition_index, replicas, allow_replication_factor_change
            )
            partitions.append(
                build(
                    partition_class,
                    partition_index=i32(asked.partition_index),
                    error_code=error_code,
                    error_message=message,
                )
            )
        topics.append(build(topic_class, name=topic.name, partitions=tuple(partitions)))
    error_code, message = refused or (ErrorCode.none, None)
    return build(
        shape(ALTER_PARTITION_REASSIGNMENTS, version, "AlterPartitionReassignmentsResponse"),
        throttle_time=NO_THROTTLE,
        error_code=error_code,
        error_message=message,
        allow_replication_factor_change=allow_replication_factor_change,
        responses=tuple(topics),
    )


async def _move(
    context: RequestContext, topic: str, partition: int, replicas: list[int] | None, allow_rf_change: bool
) -> tuple[ErrorCode, str | None]:
    node = context.node
    try:
        record = node.catalog.partition_record(topic, partition)
        if replicas is None and not is_moving(record):
            return ErrorCode.no_reassignment_in_progress, f"no reassignment is in progress for {topic}-{partition}"
        current = len(original_replicas(record))
        if replicas is not None and not allow_rf_change and len(replicas) != current:
            return ErrorCode.invalid_replication_factor, (
                f"{topic}-{partition}: the target changes its replication factor from {current} to {len(replicas)} "
                "but allow_replication_factor_change is false"
            )
        await node.controller_gateway.alter_reassignments(
            [PartitionMove(topic=topic, partition=partition, replicas=replicas)]
        )
    except Exception as error:  # noqa: BLE001 - each partition answers its own error
        return refusal(error, "reassign", topic)
    return ErrorCode.none, None


async def list_partition_reassignments(context: RequestContext, request: DecodedRequest) -> Any:
    version, body = request.prefix.api_version, request.body
    response_class = shape(LIST_PARTITION_REASSIGNMENTS, version, "ListPartitionReassignmentsResponse")
    if not authz.authorized(context.node, AclOperation.DESCRIBE, Resource.cluster()):
        message = authz.refusal_message(AclOperation.DESCRIBE, Resource.cluster())
        return build(
            response_class,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message=message,
            topics=(),
        )
    catalog = context.node.catalog
    asked = (
        {name: None for name in catalog.topic_names()}
        if body.topics is None
        else {topic.name: {int(p) for p in topic.partition_indexes} for topic in body.topics}
    )
    topic_class = shape(LIST_PARTITION_REASSIGNMENTS, version, "OngoingTopicReassignment")
    partition_class = shape(LIST_PARTITION_REASSIGNMENTS, version, "OngoingPartitionReassignment")
    topics = []
    for name, wanted in sorted(asked.items()):
        try:
            count = catalog.partition_count(name)
            records = [catalog.partition_record(name, p) for p in range(count) if wanted is None or p in wanted]
        except HighwaterError:
            continue
        moving = [
            build(
                partition_class,
                partition_index=i32(record.partition),
                replicas=tuple(i32(b) for b in record.replicas),
                adding_replicas=tuple(i32(b) for b in record.adding_replicas),
                removing_replicas=tuple(i32(b) for b in record.removing_replicas),
            )
            for record in records
            if is_moving(record)
        ]
        if moving:
            topics.append(build(topic_class, name=name, partitions=tuple(moving)))
    return build(
        response_class, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=tuple(topics)
    )
