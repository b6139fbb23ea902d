"""Authorization at the Kafka door: the connection's principal against the one authorizer.

``authorized`` is the one check every Kafka handler makes, whatever its API: the
session's principal and host (``authn.SESSION``) against ``NodeSecurity.decide`` —
the same ACLs, super users and ``allow_if_no_acl`` as the HTTP door — with an
``audit.denied`` event for every refusal. With ``authentication = "none"`` it allows
everything, as at the HTTP door.

The per-topic APIs of the first step are guarded around their handlers, as Kafka's
``KafkaApis`` does it: ``split`` takes the topics the principal may not use out of
the request, the handler runs on the rest, and ``with_refusals`` adds those topics
back to the answer with ``TOPIC_AUTHORIZATION_FAILED`` on each partition asked for.
So a refused topic is never read, written or even looked up (its existence is not
revealed), and the handler never sees it. The operations are Kafka's:

- Produce: WRITE; Fetch: READ;
- ListOffsets and OffsetForLeaderEpoch: DESCRIBE;
- Metadata: DESCRIBE per topic — a listing of all topics keeps only those the
  principal may DESCRIBE; a topic asked for by name answers
  ``TOPIC_AUTHORIZATION_FAILED`` without its id (``metadata_visible``), one asked for by
  id ``UNKNOWN_TOPIC_ID`` without its name (the handler's).

The admin and producer-id APIs check inside their handlers, per topic or resource, as
the HTTP routes do (``may`` for a check whose refusal is not yet an answer,
``authorized_for_some`` for InitProducerId's "WRITE on some topic").

``split`` and ``with_refusals`` are pure (the decision is the predicate passed in).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from broker.kafka.authn import SESSION
from broker.kafka.context import KafkaNode
from broker.kafka.shapes import ZERO_UUID, build, shape
from broker.security.acl import AclOperation, Resource, ResourceType
from broker.security.principal import ANONYMOUS, Principal

audit = structlog.get_logger("highwater.audit")

REFUSED = ErrorCode.topic_authorization_failed


def authorized(node: KafkaNode, operation: AclOperation, resource: Resource) -> bool:
    """May this connection's principal do ``operation`` on ``resource``? Refusals are audited."""
    session = SESSION.get(None)
    principal = session.principal if session is not None and session.principal is not None else ANONYMOUS
    host = session.host if session is not None else "unknown"
    decision = node.security.decide(principal, host, operation, resource)
    if not decision:
        audit.warning(
            "audit.denied",
            door="kafka",
            principal=str(principal),
            source=host,
            operation=operation.value,
            resource_type=resource.type.value,
            resource_name=resource.name,
            reason=decision.reason,
        )
    return bool(decision)


@dataclass(frozen=True)
class TopicRule:
    """Where one API's request and response keep topics and partitions, and the operation it needs."""

    operation: AclOperation
    request_topics: str
    request_topic_name: str
    request_partitions: str
    request_partition_index: str
    response_topics: str
    response_topic_class: str
    response_topic_name: str
    response_partitions: str
    response_partition_class: str
    refused_partition: dict[str, Any]
    """The refused partition's fields besides its index (named ``response_partition_index``) and error."""
    response_partition_index: str


RULES: dict[int, TopicRule] = {
    0: TopicRule(
        AclOperation.WRITE, "topic_data", "name", "partition_data", "index",
        "responses", "TopicProduceResponse", "name", "partition_responses", "PartitionProduceResponse",
        {"base_offset": i64(-1), "log_append_time": None, "log_start_offset": i64(-1), "record_errors": (),
         "error_message": None},
        "index",
    ),
    1: TopicRule(
        AclOperation.READ, "topics", "topic", "partitions", "partition",
        "responses", "FetchableTopicResponse", "topic", "partitions", "PartitionData",
        {"high_watermark": i64(-1), "last_stable_offset": i64(-1), "log_start_offset": i64(-1),
         "aborted_transactions": None, "preferred_read_replica": i32(-1), "records": b""},
        "partition_index",
    ),
    2: TopicRule(
        AclOperation.DESCRIBE, "topics", "name", "partitions", "partition_index",
        "topics", "ListOffsetsTopicResponse", "name", "partitions", "ListOffsetsPartitionResponse",
        {"timestamp": i64(-1), "offset": i64(-1), "leader_epoch": i32(-1)},
        "partition_index",
    ),
    23: TopicRule(
        AclOperation.DESCRIBE, "topics", "topic", "partitions", "partition",
        "topics", "OffsetForLeaderTopicResult", "topic", "partitions", "EpochEndOffset",
        {"leader_epoch": i32(-1), "end_offset": i64(-1)},
        "partition",
    ),
}  # fmt: skip
"""api_key -> its rule, for Produce, Fetch, ListOffsets and OffsetForLeaderEpoch."""

Refused = list[tuple[str, list[int]]]
"""(topic, partition indexes asked for) of every topic taken out of a request."""


def split(rule: TopicRule, body: Any, allowed: Callable[[str], bool]) -> tuple[Any, Refused]:
    """``body`` without the topics ``allowed`` refuses, and those topics with their partitions (pure).

    ``allowed`` is asked once per distinct topic name.
    """
    verdicts: dict[str, bool] = {}
    kept, refused = [], []
    for topic in getattr(body, rule.request_topics):
        name = getattr(topic, rule.request_topic_name)
        if name not in verdicts:
            verdicts[name] = allowed(name)
        if verdicts[name]:
            kept.append(topic)
        else:
            indexes = [getattr(p, rule.request_partition_index) for p in getattr(topic, rule.request_partitions)]
            refused.append((name, indexes))
    if not refused:
        return body, refused
    return dataclasses.replace(body, **{rule.request_topics: tuple(kept)}), refused


def with_refusals(rule: TopicRule, api_key: int, version: int, response: Any, refused: Refused) -> Any:
    """``response`` with every refused topic added, each partition ``TOPIC_AUTHORIZATION_FAILED`` (pure)."""
    if not refused:
        return response
    partition_class = shape(api_key, version, rule.response_partition_class)
    topic_class = shape(api_key, version, rule.response_topic_class)
    added = tuple(
        build(
            topic_class,
            **{
                rule.response_topic_name: name,
                rule.response_partitions: tuple(
                    build(
                        partition_class,
                        **{rule.response_partition_index: i32(index), "error_code": REFUSED},
                        **rule.refused_partition,
                    )
                    for index in indexes
                ),
            },
        )
        for name, indexes in refused
    )
    return dataclasses.replace(response, **{rule.response_topics: (*getattr(response, rule.response_topics), *added)})


def metadata_visible(response: Any, listed_all: bool, allowed: Callable[[str], bool]) -> Any:
    """A Metadata answer as the principal may see it (pure): see the module docstring."""
    topics = []
    for topic in response.topics:
        if topic.name is None or allowed(topic.name):
            topics.append(topic)
        elif not listed_all:
            topics.append(dataclasses.replace(topic, error_code=REFUSED, partitions=(), **_hidden_fields(topic)))
    return dataclasses.replace(response, topics=tuple(topics))


def _hidden_fields(topic: Any) -> dict[str, Any]:
    """What a refused topic's entry must not tell: whether it is internal, and its id."""
    hidden: dict[str, Any] = {"is_internal": False} if hasattr(topic, "is_internal") else {}
    if hasattr(topic, "topic_id"):
        hidden["topic_id"] = ZERO_UUID
    return hidden


def may(node: KafkaNode, operation: AclOperation, resource: Resource) -> bool:
    """``authorized`` without the audit event: for a first choice whose refusal is no refusal yet.

    CreateTopics asks CREATE on the cluster this way and only then, audited, on the topic
    (the HTTP route's ``may`` then ``require``); DeleteTopics asks DESCRIBE this way after
    a refused DELETE, to choose between "refused" and "no such topic".
    """
    principal, host = _who()
    return bool(node.security.decide(principal, host, operation, resource))


def authorized_for_some(node: KafkaNode, operation: AclOperation, resource_type: ResourceType) -> bool:
    """May this connection's principal do ``operation`` on some resource of ``resource_type``? Refusals are audited.

    Kafka's ``authorizeByResourceType`` (``NodeSecurity.allows_any``): InitProducerId
    asks it for WRITE on topics, as ``POST …/producer-ids`` does.
    """
    principal, host = _who()
    if node.security.allows_any(principal, host, operation, resource_type):
        return True
    audit.warning(
        "audit.denied",
        door="kafka",
        principal=str(principal),
        source=host,
        operation=operation.value,
        resource_type=resource_type.value,
        resource_name=None,
        reason=f"no {operation.value} on any {resource_type.value.lower()}",
    )
    return False


def refusal_message(operation: AclOperation, resource: Resource) -> str:
    """The text a refusal carries where the response has a message field, worded as the HTTP API's 403."""
    principal, _ = _who()
    return f"{principal} is not authorized to {operation.value} {resource.type.value.lower()} '{resource.name}'"


def cluster_refusal(node: KafkaNode, operation: AclOperation) -> tuple[ErrorCode, str] | None:
    """None when the principal may do ``operation`` on the cluster (the security admin APIs' one check);
    else ``CLUSTER_AUTHORIZATION_FAILED`` and its message. Refusals are audited."""
    if authorized(node, operation, Resource.cluster()):
        return None
    return ErrorCode.cluster_authorization_failed, refusal_message(operation, Resource.cluster())


def audit_change(event: str, **fields: Any) -> None:
    """An ``audit.*`` event of a security change made at the Kafka door, naming who made it (as the
    HTTP routes' events do)."""
    principal, host = _who()
    audit.info(event, door="kafka", principal=str(principal), source=host, **fields)


def principal_name() -> str:
    """The connection's principal as Kafka writes it (``User:alice``; ``User:ANONYMOUS`` before any)."""
    return str(_who()[0])


def _who() -> tuple[Principal, str]:
    """The connection's principal (``User:ANONYMOUS`` before any) and host, from ``authn.SESSION``."""
    session = SESSION.get(None)
    principal = session.principal if session is not None and session.principal is not None else ANONYMOUS
    return principal, session.host if session is not None else "unknown"


NO_AUTHORIZED_OPERATIONS = -(2**31)
"""Kafka's value of an ``authorized_operations`` field the request did not ask for."""
OPERATION_CODES = {
    AclOperation.READ: 3,
    AclOperation.WRITE: 4,
    AclOperation.CREATE: 5,
    AclOperation.DELETE: 6,
    AclOperation.ALTER: 7,
    AclOperation.DESCRIBE: 8,
    AclOperation.DESCRIBE_CONFIGS: 10,
    AclOperation.ALTER_CONFIGS: 11,
}
"""Kafka's codes of the operations highwater authorizes: a bit each in an ``authorized_operations`` field."""
APPLICABLE = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
}
"""The operations Kafka reports for each resource type (those highwater has; no CLUSTER_ACTION or IDEMPOTENT_WRITE)."""


def authorized_operations(node: KafkaNode, resource: Resource, asked: bool) -> int:
    """Kafka's ``authorized_operations`` bit field of ``resource`` for this connection's principal
    (``1 << code`` per operation it may do), or ``NO_AUTHORIZED_OPERATIONS`` when not ``asked``.
    Not audited: it describes, it refuses nothing."""
    if not asked:
        return NO_AUTHORIZED_OPERATIONS
    bits = 0
    for operation in APPLICABLE[resource.type]:
        if may(node, operation, resource):
            bits |= 1 << OPERATION_CODES[operation]
    return bits
