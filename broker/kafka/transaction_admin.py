"""What admin tools ask about transactions: ListTransactions, DescribeTransactions, DescribeProducers.

- ListTransactions: the transactional ids this broker coordinates (an admin client asks
  every broker, as for ListGroups), filtered by state, producer id and, from version 1,
  by how long the transaction has run; only ids the principal may DESCRIBE.
- DescribeTransactions: each id from its coordinator (``NOT_COORDINATOR`` elsewhere, so
  the client looks it up), DESCRIBE on the id, else ``TRANSACTIONAL_ID_AUTHORIZATION_FAILED``.
- DescribeProducers: each partition's leader lists the producers it knows and the first
  offset of the transaction each has open there (``kafka-transactions.sh find-hanging``
  reads it); READ on the topic, else ``TOPIC_AUTHORIZATION_FAILED``.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId
from kio.static.primitive import i16, i32, i64

from broker.clock import wall_clock_ms
from broker.errors import HighwaterError
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import EPOCH, NO_THROTTLE, build, shape, timestamp
from broker.security.acl import AclOperation, Resource
from broker.transactions.metadata import NO_START, TxnState

DESCRIBE_PRODUCERS = 61
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
NO_START_TIME = EPOCH - datetime.timedelta(milliseconds=1)
"""-1 on the wire: a transactional id with no transaction open (an error entry keeps the schema's default, 0)."""


def _may_describe(context: RequestContext, transactional_id: str) -> bool:
    return authz.may(context.node, AclOperation.DESCRIBE, Resource.transactional_id(transactional_id))


async def list_transactions(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    known_states = {state.value for state in TxnState}
    wanted_states = set(body.state_filters)
    wanted_ids = {int(pid) for pid in body.producer_id_filters}
    min_duration_ms = int(getattr(body, "duration_filter", -1))
    now = wall_clock_ms()
    found = []
    for state in sorted(context.node.transactions.describe(), key=lambda s: s.transactional_id):
        if wanted_states and state.state.value not in wanted_states:
            continue
        if wanted_ids and state.producer_id not in wanted_ids:
            continue
        if min_duration_ms >= 0 and (state.started_ms == NO_START or now - state.started_ms < min_duration_ms):
            continue
        if not _may_describe(context, state.transactional_id):
            continue
        found.append(
            build(
                shape(LIST_TRANSACTIONS, version, "TransactionState"),
                transactional_id=state.transactional_id,
                producer_id=ProducerId(state.producer_id),
                transaction_state=state.state.value,
            )
        )
    return build(
        shape(LIST_TRANSACTIONS, version, "ListTransactionsResponse"),
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        unknown_state_filters=tuple(sorted(wanted_states - known_states)),
        transaction_states=tuple(found),
    )


async def describe_transactions(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    entry_class = shape(DESCRIBE_TRANSACTIONS, version, "TransactionState")
    topic_class = shape(DESCRIBE_TRANSACTIONS, version, "TopicData")
    answers = []
    for transactional_id in request.body.transactional_ids:
        empty = {
            "transactional_id": transactional_id,
            "transaction_state": "",
            "transaction_timeout": datetime.timedelta(0),
            "transaction_start_time": EPOCH,
            "producer_id": ProducerId(-1),
            "producer_epoch": i16(-1),
            "topics": (),
        }
        if not _may_describe(context, transactional_id):
            code = ErrorCode.transactional_id_authorization_failed
            answers.append(build(entry_class, error_code=code, **empty))
            continue
        try:
            state = await context.node.transactions.state_of(transactional_id)
        except HighwaterError as error:
            answers.append(build(entry_class, error_code=kafka_error_code(error), **empty))
            continue
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(state.partitions):
            topics.setdefault(topic, []).append(partition)
        answers.append(
            build(
                entry_class,
                error_code=ErrorCode.none,
                transactional_id=transactional_id,
                transaction_state=state.state.value,
                transaction_timeout=datetime.timedelta(milliseconds=state.timeout_ms),
                transaction_start_time=timestamp(state.started_ms) or NO_START_TIME,
                producer_id=ProducerId(state.producer_id),
                producer_epoch=i16(state.producer_epoch),
                topics=tuple(
                    build(topic_class, topic=name, partitions=tuple(i32(p) for p in parts))
                    for name, parts in topics.items()
                ),
            )
        )
    return build(
        shape(DESCRIBE_TRANSACTIONS, version, "DescribeTransactionsResponse"),
        throttle_time=NO_THROTTLE,
        transaction_states=tuple(answers),
    )


async def describe_producers(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    partition_class = shape(DESCRIBE_PRODUCERS, version, "PartitionResponse")
    producer_class = shape(DESCRIBE_PRODUCERS, version, "ProducerState")
    topics = []
    for topic in request.body.topics:
        allowed = authz.authorized(context.node, AclOperation.READ, Resource.topic(topic.name))
        partitions = []
        for index in topic.partition_indexes:
            if not allowed:
                partitions.append(
                    build(partition_class, partition_index=index, error_code=authz.REFUSED, active_producers=())
                )
                continue
            try:
                producers = await context.node.leaders.active_producers(topic.name, int(index))
            except HighwaterError as error:
                partitions.append(
                    build(
                        partition_class,
                        partition_index=index,
                        error_code=kafka_error_code(error),
                        error_message=error.message,
                        active_producers=(),
                    )
                )
                continue
            partitions.append(
                build(
                    partition_class,
                    partition_index=index,
                    error_code=ErrorCode.none,
                    active_producers=tuple(
                        build(
                            producer_class,
                            producer_id=ProducerId(p.producer_id),
                            producer_epoch=i32(p.producer_epoch),
                            last_sequence=i32(p.last_sequence),
                            last_timestamp=i64(-1),
                            coordinator_epoch=i32(-1),
                            current_txn_start_offset=i64(p.transaction_start_offset),
                        )
                        for p in producers
                    ),
                )
            )
        topics.append(
            build(shape(DESCRIBE_PRODUCERS, version, "TopicResponse"), name=topic.name, partitions=tuple(partitions))
        )
    return build(
        shape(DESCRIBE_PRODUCERS, version, "DescribeProducersResponse"), throttle_time=NO_THROTTLE, topics=tuple(topics)
    )
