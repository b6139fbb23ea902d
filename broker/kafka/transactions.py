"""Kafka's transaction APIs for clients: InitProducerId with a transactional id, AddPartitionsToTxn,
EndTxn (and FindCoordinator for key type 1, in ``broker.kafka.groups``).

Each is the same call the coordinator (``broker.transactions.coordinator``) serves every
door with; this module only translates. Authorization is Kafka's: WRITE on the
TRANSACTIONAL_ID for each of them, and WRITE on every topic a transaction adds (a
refused topic gets ``TOPIC_AUTHORIZATION_FAILED`` and the others
``OPERATION_NOT_ATTEMPTED``, nothing added). A client that is not talking to the id's
coordinator gets ``NOT_COORDINATOR`` and looks it up again.

AddPartitionsToTxn is served up to version 3, the client versions; version 4 (a broker
verifying for a partition leader, KIP-890) is the brokers' own business here, done over
their internal API. AddOffsetsToTxn and TxnOffsetCommit (offsets inside a transaction)
are not advertised yet.
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
from broker.kafka.shapes import NO_THROTTLE, build, millis, shape
from broker.security.acl import AclOperation, Resource

log = structlog.get_logger(__name__)

INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
END_TXN = 26
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
