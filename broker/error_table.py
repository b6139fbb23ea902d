"""The one table of errors a broker answers with, and the two directions of their JSON body.

A row is an error class; its Kafka name, ``error_code``, HTTP status and retriability
are the class's attributes (``broker.errors``, ``broker.errors.groups``). The broker
encodes every error response with ``error_body``; the clients, the forwarding broker
and the Spark connector turn a body back into an exception with ``decode_error_body``,
so ``except NotLeaderOrFollower`` works on every side of a hop.

Invariants, checked by ``tests/unit/test_error_table.py``:

- every row's name appears once in the table, and so does every row's ``error_code``
  except where the REST Proxy gives several errors one code (40002: the request was
  refused as invalid, for ``INVALID_TOPIC_EXCEPTION``, ``TOPIC_ALREADY_EXISTS`` and
  ``INVALID_REPLICA_ASSIGNMENT``);
  bodies decode by name, so a shared code is never ambiguous;
- every other ``HighwaterError`` a broker raises refines a row: it subclasses the
  row's class under the row's name (``UnknownPartition`` is an
  ``UNKNOWN_TOPIC_OR_PARTITION`` with ``error_code`` 40402) and decodes as that row's
  class, with the ``error_code`` and HTTP status it was sent with;
- errors of the client libraries (``broker.client``, ``producer``, ``consumer``) are
  raised by the library itself and never arrive in a body, so they are no rows (their
  codes repeat the broker error each is a kind of: as rows they would make a code
  ambiguous); none of them takes a row's name unless it refines that row.

A body whose name is in no row (a newer broker's error) still decodes, to a plain
``HighwaterError`` carrying the body's name, code, status and retriability.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker.errors import (
    AuthenticationFailed,
    ClusterAuthorizationFailed,
    CorruptRecord,
    FencedLeaderEpoch,
    GroupAuthorizationFailed,
    HighwaterError,
    InvalidConfig,
    InvalidPartitions,
    InvalidProducerEpoch,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidTopic,
    KafkaStorageError,
    LeaderNotAvailable,
    MethodNotAllowed,
    NotController,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotFound,
    NotLeaderOrFollower,
    OffsetNotAvailable,
    OffsetOutOfRange,
    OutOfOrderSequence,
    RecordTooLarge,
    RequestBodyTimedOut,
    RequestTimedOut,
    RequestTooLarge,
    ResourceNotFound,
    ServiceUnavailable,
    StaleBrokerEpoch,
    ThrottlingQuotaExceeded,
    TopicAlreadyExists,
    TopicAuthorizationFailed,
    UnexpectedAppendOffset,
    UnknownLeaderEpoch,
    UnknownTopicOrPartition,
    UnprocessableEntity,
    UnsupportedMediaType,
)
from broker.errors.groups import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    FencedMemberEpoch,
    GroupIdNotFound,
    NonEmptyGroup,
    NotCoordinator,
    StaleMemberEpoch,
    UnknownMemberId,
    UnsupportedAssignor,
)
from broker.errors.transactions import (
    ConcurrentTransactions,
    InvalidProducerIdMapping,
    InvalidRecord,
    InvalidTransactionTimeout,
    InvalidTxnState,
    ProducerFenced,
    TransactionalIdAuthorizationFailed,
    TransactionalIdNotFound,
)

_ENVELOPE_FIELDS = ("error_code", "error", "message", "retriable")
"""The fields every error body has; any other field of a body is one of the error's ``details``."""

ERROR_TABLE: tuple[type[HighwaterError], ...] = (
    HighwaterError,
    InvalidRequest,
    InvalidTopic,
    InvalidPartitions,
    InvalidReplicationFactor,
    InvalidReplicaAssignment,
    InvalidConfig,
    CorruptRecord,
    NotFound,
    UnknownTopicOrPartition,
    MethodNotAllowed,
    RequestBodyTimedOut,
    FencedLeaderEpoch,
    TopicAlreadyExists,
    UnknownLeaderEpoch,
    InvalidProducerEpoch,
    StaleBrokerEpoch,
    RecordTooLarge,
    RequestTooLarge,
    UnsupportedMediaType,
    OffsetOutOfRange,
    NotLeaderOrFollower,
    UnprocessableEntity,
    OutOfOrderSequence,
    KafkaStorageError,
    ServiceUnavailable,
    UnexpectedAppendOffset,
    LeaderNotAvailable,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotController,
    OffsetNotAvailable,
    RequestTimedOut,
    UnsupportedAssignor,
    UnknownMemberId,
    GroupIdNotFound,
    FencedMemberEpoch,
    StaleMemberEpoch,
    NonEmptyGroup,
    NotCoordinator,
    CoordinatorNotAvailable,
    CoordinatorLoadInProgress,
    AuthenticationFailed,
    TopicAuthorizationFailed,
    GroupAuthorizationFailed,
    ClusterAuthorizationFailed,
    ResourceNotFound,
    ThrottlingQuotaExceeded,
    InvalidTxnState,
    InvalidRecord,
    ProducerFenced,
    InvalidProducerIdMapping,
    ConcurrentTransactions,
    InvalidTransactionTimeout,
    TransactionalIdNotFound,
    TransactionalIdAuthorizationFailed,
)
"""Every error a broker answers with: the broker's own, the group coordinator's, then the transactions'."""

_BY_NAME: dict[str, type[HighwaterError]] = {row.name: row for row in ERROR_TABLE}


def error_body(error: HighwaterError) -> dict[str, Any]:
    """The JSON body a broker answers ``error`` with: the envelope, then the error's details."""
    return {
        "error_code": error.error_code,
        "error": error.name,
        "message": error.message,
        "retriable": error.retriable,
        **error.details,
    }


def decode_error_body(body: object, http_status: int) -> HighwaterError | None:
    """The error a broker's JSON error body, answered with ``http_status``, stands for.

    It keeps the ``error_code`` and the status it arrived with, so a broker that passes
    it on (``broker.node.forwarding``) answers exactly what it was answered. ``None`` when
    ``body`` is not an error body (a proxy's page, a crash): only the caller knows what
    such an answer means to it.
    """
    if not isinstance(body, Mapping) or not isinstance(body.get("error"), str):
        return None
    details = {key: value for key, value in body.items() if key not in _ENVELOPE_FIELDS}
    error = error_from_name(body["error"], str(body.get("message", "")), **details)
    if body["error"] not in _BY_NAME:
        error.retriable = bool(body.get("retriable", False))
    code = body.get("error_code")
    if isinstance(code, int) and not isinstance(code, bool):
        error.error_code = code
    error.http_status = http_status
    return error


def error_from_name(name: str, message: str, **details: Any) -> HighwaterError:
    """The error of the row named ``name``, or a plain ``HighwaterError`` under that name.

    Alone, it serves a wire format that carries only a name and a message (the binary
    replica fetch).
    """
    row = _BY_NAME.get(name)
    if row is not None:
        return row(message, **details)
    error = HighwaterError(message, **details)
    error.name = name
    return error
