"""Kafka's transaction APIs for clients: InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn (and FindCoordinator for key type 1, in
``broker.kafka.groups``).

Each is the same call the coordinator (``broker.transactions.coordinator``) serves every
door with; this module only translates. Authorization is Kafka's: WRITE on the
TRANSACTIONAL_ID for each of them, and WRITE on every topic a transaction adds (a
refused topic gets ``TOPIC_AUTHORIZATION_FAILED`` and the others
``OPERATION_NOT_ATTEMPTED``, nothing added). A client that is not talking to the id's
coordinator gets ``NOT_COORDINATOR`` and looks it up again.

AddPartitionsToTxn is served up to version 3, the client versions; version 4 (a broker
verifying for a partition leader, KIP-890) is the brokers' own business here, done over
their internal API.

Offsets inside a transaction (``send_offsets_to_transaction``): AddOffsetsToTxn adds the
group's ``__consumer_offsets`` partition to the transaction (READ on the group); then
TxnOffsetCommit, sent to the group's coordinator, writes the offsets as the
transaction's records there (READ on the group and on each topic), and they apply only
when the transaction's COMMIT marker reaches that partition
(``GroupCoordinator.transactional_commit``).
"""

from __future__ import annotations

from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker.errors import HighwaterError
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.groups import coordinating_shard, group_error_code
from broker.kafka.shapes import NO_THROTTLE, build, millis, shape
from broker.security.acl import AclOperation, Resource
from broker.topics.policy import OFFSETS_TOPIC

log = structlog.get_logger(__name__)

INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28
NO_PRODUCER_ID = -1


def may_write_transactional_id(context: RequestContext, transactional_id: str) -> bool:
    return authz.authorized(context.node, AclOperation.WRITE, Resource.transactional_id(transactional_id))


async def init_transactional_producer_id(
    context: RequestContext, request: DecodedRequest
) -> tuple[ErrorCode, int, int]:
    """(error code, producer id, epoch) for an InitProducerId that names a transactional id."""
    body = request.body
    transactional_id = body.transactional_id
    if not may_write_transactional_id(context, transactional_id):
        return ErrorCode.transactional_id_authorization_failed, NO_PRODUCER_ID, -1
    asked_id = getattr(body, "producer_id", NO_PRODUCER_ID)
    expected = None if asked_id == NO_PRODUCER_ID else (int(asked_id), int(body.producer_epoch))
    try:
        producer_id, epoch = await context.node.transactions.init_producer_id(
            transactional_id, millis(body.transaction_timeout), expected
        )
    except HighwaterError as error:
        log.info("kafka.init_producer_id_refused", transactional_id=transactional_id, error=error.message)
        return kafka_error_code(error), NO_PRODUCER_ID, -1
    return ErrorCode.none, producer_id, epoch


async def add_partitions_to_txn(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    transactional_id = body.v3_and_below_transactional_id
    asked = [(topic.name, int(partition)) for topic in body.v3_and_below_topics for partition in topic.partitions]
    codes: dict[tuple[str, int], ErrorCode]
    if not may_write_transactional_id(context, transactional_id):
        codes = dict.fromkeys(asked, ErrorCode.transactional_id_authorization_failed)
    else:
        refused = {tp for tp in asked if not authz.authorized(context.node, AclOperation.WRITE, Resource.topic(tp[0]))}
        if refused:
            codes = {
                tp: ErrorCode.topic_authorization_failed if tp in refused else ErrorCode.operation_not_attempted
                for tp in asked
            }
        else:
            try:
                await context.node.transactions.add_partitions(
                    transactional_id, int(body.v3_and_below_producer_id), int(body.v3_and_below_producer_epoch), asked
                )
                code = ErrorCode.none
            except HighwaterError as error:
                log.info("kafka.add_partitions_refused", transactional_id=transactional_id, error=error.message)
                code = kafka_error_code(error)
            codes = dict.fromkeys(asked, code)
    partition_class = shape(ADD_PARTITIONS_TO_TXN, version, "AddPartitionsToTxnPartitionResult")
    topic_class = shape(ADD_PARTITIONS_TO_TXN, version, "AddPartitionsToTxnTopicResult")
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(
            build(partition_class, partition_index=i32(partition), partition_error_code=code)
        )
    return build(
        shape(ADD_PARTITIONS_TO_TXN, version, "AddPartitionsToTxnResponse"),
        throttle_time=NO_THROTTLE,
        results_by_topic_v3_and_below=tuple(
            build(topic_class, name=name, results_by_partition=tuple(parts)) for name, parts in by_topic.items()
        ),
    )


async def add_offsets_to_txn(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    code = ErrorCode.none
    if not may_write_transactional_id(context, body.transactional_id):
        code = ErrorCode.transactional_id_authorization_failed
    elif not authz.authorized(context.node, AclOperation.READ, Resource.group(body.group_id)):
        code = ErrorCode.group_authorization_failed
    else:
        try:
            partition = await context.node.groups.offsets_partition(body.group_id)
            await context.node.transactions.add_partitions(
                body.transactional_id, int(body.producer_id), int(body.producer_epoch), [(OFFSETS_TOPIC, partition)]
            )
        except HighwaterError as error:
            log.info("kafka.add_offsets_refused", transactional_id=body.transactional_id, error=error.message)
            code = kafka_error_code(error)
    return build(
        shape(ADD_OFFSETS_TO_TXN, version, "AddOffsetsToTxnResponse"), throttle_time=NO_THROTTLE, error_code=code
    )


async def txn_offset_commit(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    asked = [(topic.name, p) for topic in body.topics for p in topic.partitions]
    code = ErrorCode.none
    refused: set[str] = set()
    if not may_write_transactional_id(context, body.transactional_id):
        code = ErrorCode.transactional_id_authorization_failed
    elif not authz.authorized(context.node, AclOperation.READ, Resource.group(body.group_id)):
        code = ErrorCode.group_authorization_failed
    else:
        refused = {
            name
            for name in {name for name, _ in asked}
            if not authz.authorized(context.node, AclOperation.READ, Resource.topic(name))
        }
        offsets = [
            (name, int(p.partition_index), int(p.committed_offset), p.committed_metadata or "")
            for name, p in asked
            if name not in refused
        ]
        try:
            shard = await coordinating_shard(context, body.group_id)
            await context.node.groups.transactional_commit(
                shard,
                body.group_id,
                body.transactional_id,
                int(body.producer_id),
                int(body.producer_epoch),
                getattr(body, "member_id", ""),
                int(getattr(body, "generation_id", -1)),
                offsets,
            )
        except Exception as error:  # noqa: BLE001 - the error is the answer
            code = group_error_code(error)
    partition_class = shape(TXN_OFFSET_COMMIT, version, "TxnOffsetCommitResponsePartition")
    by_topic: dict[str, list[Any]] = {}
    for name, p in asked:
        answer = authz.REFUSED if name in refused else code
        by_topic.setdefault(name, []).append(
            build(partition_class, partition_index=p.partition_index, error_code=answer)
        )
    topic_class = shape(TXN_OFFSET_COMMIT, version, "TxnOffsetCommitResponseTopic")
    return build(
        shape(TXN_OFFSET_COMMIT, version, "TxnOffsetCommitResponse"),
        throttle_time=NO_THROTTLE,
        topics=tuple(build(topic_class, name=name, partitions=tuple(parts)) for name, parts in by_topic.items()),
    )


async def end_txn(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    code = ErrorCode.none
    if not may_write_transactional_id(context, body.transactional_id):
        code = ErrorCode.transactional_id_authorization_failed
    else:
        try:
            await context.node.transactions.end_transaction(
                body.transactional_id, int(body.producer_id), int(body.producer_epoch), bool(body.committed)
            )
        except HighwaterError as error:
            log.info("kafka.end_txn_refused", transactional_id=body.transactional_id, error=error.message)
            code = kafka_error_code(error)
    return build(shape(END_TXN, version, "EndTxnResponse"), throttle_time=NO_THROTTLE, error_code=code)
