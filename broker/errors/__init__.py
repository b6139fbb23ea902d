"""Kafka-style errors shared by the broker, the HTTP layer and the clients.

Every error a client can see is one of these. Each carries Kafka's error name, an
integer ``error_code`` (REST Proxy v3 codes where they exist, else the HTTP status
times 100 plus a small number, as the REST Proxy does), the HTTP status it maps to,
and whether retrying can help. The HTTP layer turns them into
``{"error_code", "error", "message", "retriable"}`` bodies; nothing else may reach a
client, so a bug never leaks a traceback. ``broker.error_table`` lists the ones a
broker answers with and encodes and decodes those bodies.

Errors that leave the outcome of a write unknown (the record may or may not have
been appended) say so in their message: ``REQUEST_TIMED_OUT``,
``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` and ``NOT_LEADER_OR_FOLLOWER`` after append.
"""

from __future__ import annotations

from typing import Any


class HighwaterError(Exception):
    """Base of every client-visible error."""

    # Class-level defaults each subclass sets; an instance may override them (an error decoded from a body).
    name: str = "UNKNOWN_SERVER_ERROR"
    error_code: int = 50001
    http_status: int = 500
    retriable: bool = False

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidRequest(HighwaterError):
    name = "INVALID_REQUEST"
    error_code = 40001
    http_status = 400


class InvalidAcl(InvalidRequest):
    """An ACL binding or filter the REST Proxy v3 ACL routes refuse: 400, as the spec answers it, with 40002.

    40002 is the REST Proxy's code for a request Kafka refused as invalid, and Kafka refuses a
    bad ACL binding (a CLUSTER resource not named ``kafka-cluster``) with ``INVALID_REQUEST``;
    the spec's own example of a refused ACL carries it. The name stays ``INVALID_REQUEST``, so
    clients and the Kafka listener treat it as the request error it is.
    """

    error_code = 40002


class InvalidTopic(HighwaterError):
    name = "INVALID_TOPIC_EXCEPTION"
    error_code = 40002
    http_status = 400


class InvalidPartitions(HighwaterError):
    name = "INVALID_PARTITIONS"
    error_code = 40003
    http_status = 400


class InvalidReplicationFactor(HighwaterError):
    name = "INVALID_REPLICATION_FACTOR"
    error_code = 40004
    http_status = 400


class InvalidReplicaAssignment(HighwaterError):
    """A manual replica assignment Kafka's rules refuse (``broker.cluster.replica_assignment``); 400 with 40002,
    the REST Proxy's code for a topic creation Kafka refused, shared with ``InvalidTopic``."""

    name = "INVALID_REPLICA_ASSIGNMENT"
    error_code = 40002
    http_status = 400


class InvalidConfig(HighwaterError):
    name = "INVALID_CONFIG"
    error_code = 40005
    http_status = 400


class CorruptRecord(HighwaterError):
    """A record batch failed its header or CRC check; nothing of it was appended."""

    name = "CORRUPT_MESSAGE"
    error_code = 40006
    http_status = 400


class UnknownTopicOrPartition(HighwaterError):
    name = "UNKNOWN_TOPIC_OR_PARTITION"
    error_code = 40403
    http_status = 404


class UnknownTopic(UnknownTopicOrPartition):
    error_code = 40403


class UnknownPartition(UnknownTopicOrPartition):
    error_code = 40402


class NotFound(HighwaterError):
    name = "NOT_FOUND"
    error_code = 40400
    http_status = 404


class UnknownCluster(NotFound):
    """The REST Proxy's 40401: the cluster id in the path is not this cluster's."""

    error_code = 40401


class MethodNotAllowed(HighwaterError):
    name = "METHOD_NOT_ALLOWED"
    error_code = 40500
    http_status = 405


class RequestBodyTimedOut(HighwaterError):
    """The client stopped sending its request body; the connection is closed after the answer."""

    name = "REQUEST_TIMEOUT"
    error_code = 40801
    http_status = 408


class TopicAlreadyExists(HighwaterError):
    """400 with 40002, as the REST Proxy answers it: its ``error_code`` for a request Kafka refused as invalid,
    shared with ``InvalidTopic``; the ``error`` name tells the two apart."""

    name = "TOPIC_ALREADY_EXISTS"
    error_code = 40002
    http_status = 400


class RecordTooLarge(HighwaterError):
    name = "MESSAGE_TOO_LARGE"
    error_code = 41301
    http_status = 413


class RequestTooLarge(HighwaterError):
    name = "REQUEST_TOO_LARGE"
    error_code = 41302
    http_status = 413


class UnsupportedMediaType(HighwaterError):
    name = "UNSUPPORTED_MEDIA_TYPE"
    error_code = 41501
    http_status = 415


class OffsetOutOfRange(HighwaterError):
    """The offset lies outside [log_start_offset, log_end_offset]; the body names the range."""

    name = "OFFSET_OUT_OF_RANGE"
    error_code = 41601
    http_status = 416


class OffsetNotAvailable(HighwaterError):
    """Kafka's OFFSET_NOT_AVAILABLE: the leader holds the offset but its high watermark has not reached it yet.

    Retriable: the high watermark catches up once the in-sync replicas fetch (after a
    leader election, within a fetch round or two).
    """

    name = "OFFSET_NOT_AVAILABLE"
    error_code = 50306
    http_status = 503
    retriable = True


class UnprocessableEntity(HighwaterError):
    name = "UNPROCESSABLE_ENTITY"
    error_code = 42201
    http_status = 422


class FencedLeaderEpoch(HighwaterError):
    name = "FENCED_LEADER_EPOCH"
    error_code = 40901
    http_status = 409


class UnknownLeaderEpoch(HighwaterError):
    name = "UNKNOWN_LEADER_EPOCH"
    error_code = 40903
    http_status = 409
    retriable = True


class NotLeaderOrFollower(HighwaterError):
    """This broker does not lead the partition; ``leader_id``/``leader_url`` say who does."""

    name = "NOT_LEADER_OR_FOLLOWER"
    error_code = 42101
    http_status = 421
    retriable = True


class LeaderNotAvailable(HighwaterError):
    name = "LEADER_NOT_AVAILABLE"
    error_code = 50302
    http_status = 503
    retriable = True


class NotEnoughReplicas(HighwaterError):
    """Refused before append: nothing was written."""

    name = "NOT_ENOUGH_REPLICAS"
    error_code = 50303
    http_status = 503
    retriable = True


class NotEnoughReplicasAfterAppend(HighwaterError):
    """Appended on the leader, but the in-sync replicas fell below the minimum: outcome unknown."""

    name = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    error_code = 50304
    http_status = 503
    retriable = True


class RequestTimedOut(HighwaterError):
    name = "REQUEST_TIMED_OUT"
    error_code = 50401
    http_status = 504
    retriable = True


class ServiceUnavailable(HighwaterError):
    name = "SERVICE_UNAVAILABLE"
    error_code = 50003
    http_status = 503
    retriable = True


class KafkaStorageError(HighwaterError):
    name = "KAFKA_STORAGE_ERROR"
    error_code = 50002
    http_status = 500
    retriable = True


class OutOfOrderSequence(HighwaterError):
    name = "OUT_OF_ORDER_SEQUENCE_NUMBER"
    error_code = 42202
    http_status = 422


class InvalidProducerEpoch(HighwaterError):
    name = "INVALID_PRODUCER_EPOCH"
    error_code = 40904
    http_status = 409


class StaleBrokerEpoch(HighwaterError):
    """A replica fetch from an incarnation of the follower broker older than one the leader
    has seen (KIP-903). Retriable: a live follower's next fetch carries its current epoch."""

    name = "STALE_BROKER_EPOCH"
    error_code = 40905
    http_status = 409
    retriable = True


class UnexpectedAppendOffset(HighwaterError):
    """A follower append does not start at the log end offset; nothing was written."""

    name = "UNEXPECTED_APPEND_OFFSET"
    error_code = 50010
    http_status = 500


class NotController(HighwaterError):
    """This broker is not (or no longer) the active controller; retry on the controller."""

    name = "NOT_CONTROLLER"
    error_code = 50305
    http_status = 503
    retriable = True


BASIC_CHALLENGE = 'Basic realm="highwater", charset="UTF-8"'


class AuthenticationFailed(HighwaterError):
    """No credentials, wrong ones, or a certificate the broker does not accept.

    Answered with ``WWW-Authenticate: <challenge>`` (RFC 9110 requires one on every 401);
    the challenge names the scheme the broker takes and is never part of the body.
    """

    name = "AUTHENTICATION_FAILED"
    error_code = 40101
    http_status = 401

    def __init__(self, message: str, *, challenge: str = BASIC_CHALLENGE, **details: Any):
        super().__init__(message, **details)
        self.challenge = challenge


class TopicAuthorizationFailed(HighwaterError):
    name = "TOPIC_AUTHORIZATION_FAILED"
    error_code = 40301
    http_status = 403


class GroupAuthorizationFailed(HighwaterError):
    name = "GROUP_AUTHORIZATION_FAILED"
    error_code = 40302
    http_status = 403


class ClusterAuthorizationFailed(HighwaterError):
    name = "CLUSTER_AUTHORIZATION_FAILED"
    error_code = 40303
    http_status = 403


class ResourceNotFound(NotFound):
    """A user, ACL or quota the request names does not exist (Kafka's ``RESOURCE_NOT_FOUND``)."""

    name = "RESOURCE_NOT_FOUND"
    error_code = 40404


class ThrottlingQuotaExceeded(HighwaterError):
    """Over a rate the broker enforces: a principal far over its byte-rate quota, or a source over its failed logins."""

    name = "THROTTLING_QUOTA_EXCEEDED"
    error_code = 42901
    http_status = 429
    retriable = True


OUTCOME_UNKNOWN = (
    "The outcome is unknown: the records may or may not have been written. "
    "Retry with an idempotent producer to be sure they are written exactly once."
)
