"""InitProducerId: a producer id for an idempotent producer, from the allocator the HTTP API uses.

An idempotent producer (no ``transactional_id``) gets a fresh cluster-unique id from
``allocate_producer_id`` and epoch 0, exactly what ``POST …/producer-ids`` answers.
The id and epoch a client may send (v3+, KIP-360, after an ``UNKNOWN_PRODUCER_ID`` or
a sequence gap) are ignored on purpose: Kafka's coordinator does the same for a
producer without a transactional id ("always blindly accept the request and return a
new producerId"), and a new id starts new sequences, so no batch of the old id can be
mistaken for one of the new. Duplicate detection itself stays where it is: the
partition's producer state checks id, epoch and sequence of every appended batch
(``DUPLICATE_SEQUENCE_NUMBER`` answers a retried batch with its original offsets,
``OUT_OF_ORDER_SEQUENCE_NUMBER`` refuses a gap), for Kafka and HTTP producers alike.

Only a principal that may WRITE some topic gets an id (Kafka's rule, and
``POST …/producer-ids``'s): anyone else is answered ``CLUSTER_AUTHORIZATION_FAILED``
and nothing is allocated, so a user without ACLs cannot drain the id space.

A ``transactional_id`` goes to the transaction coordinator
(``broker.kafka.transactions``): it fences every older incarnation of the id, as Kafka's does.

The allocator is a compare-and-set on the metadata store: when the store cannot be
reached the answer is ``COORDINATOR_NOT_AVAILABLE``, which clients retry (Kafka's
answer while its producer-id block cannot be fetched), not a closed connection.
"""

from __future__ import annotations

from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i64

from broker.cluster.store import MetadataStoreError
from broker.errors import HighwaterError
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.kafka.transactions import init_transactional_producer_id
from broker.security.acl import AclOperation, ResourceType

log = structlog.get_logger(__name__)

API_KEY = 22
NEW_PRODUCER_EPOCH = 0
NO_PRODUCER_ID = -1


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    if request.body.transactional_id is not None:
        return _answer(version, *await init_transactional_producer_id(context, request))
    if not authz.authorized_for_some(context.node, AclOperation.WRITE, ResourceType.TOPIC):
        return _answer(version, ErrorCode.cluster_authorization_failed)
    try:
        producer_id = await context.node.controller_gateway.allocate_producer_id()
    except HighwaterError as error:
        return _answer(version, kafka_error_code(error))
    except MetadataStoreError as error:
        log.warning("kafka.producer_id_unavailable", error=str(error))
        return _answer(version, ErrorCode.coordinator_not_available)
    return _answer(version, ErrorCode.none, producer_id, NEW_PRODUCER_EPOCH)


def _answer(version: int, error_code: ErrorCode, producer_id: int = NO_PRODUCER_ID, epoch: int = -1) -> Any:
    return build(
        shape(API_KEY, version, "InitProducerIdResponse"),
        throttle_time=NO_THROTTLE,
        error_code=error_code,
        producer_id=i64(producer_id),
        producer_epoch=i16(epoch),
    )
