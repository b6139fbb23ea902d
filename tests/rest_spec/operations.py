"""Every operation of the REST Proxy v3 spec, and highwater's verdict on each: the one table.

A row names the operation as the spec does (its ``operationId``; the spec leaves some
unnamed, and those get a name here in the same style, marked ``named_by_spec=False``),
its request model and its answer model per status, all from ``tests.rest_spec.models``.
The verdict is one of:

* ``implemented``: served with the spec's shapes; the conformance suite drives it
  against a live cluster and validates every answer against these models;
* ``different``: served, validated the same way, but something a client may meet
  differs from the spec; ``reason`` says what and why;
* ``not_served``: no route; ``reason`` says why.

``docs/rest-compat.md`` is rendered from this table (``tests.rest_spec.render``), and the
suite fails when an ``implemented`` or ``different`` row was not exercised, so the
table, the document and the broker cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from tests.rest_spec import models as m

Verdict = Literal["implemented", "different", "not_served"]
Answers = Mapping[int, type[BaseModel] | None]
"""Status to the model of its JSON body; None for an answer without one (204, the spec's 201 of an ACL)."""

SPEC_PREFIX = "/v3"
"""The spec's paths are relative to its server URL, which ends in ``/v3``."""
COMMON_ERRORS = (400, 401, 403, 404)
"""Error statuses of every operation, with the ``Error`` body: those the spec lists everywhere (its 429 is an
HTML page), and 404 for a path naming an unknown cluster (or topic, group...), which the spec's 404 body
covers though some operations leave it out of their list."""
INVALID_BODY = 422
GENERAL_DIFFERENCES = (
    "A body that is JSON but not the operation's shape (a string where a number goes, an unknown field) answers "
    "422 UNPROCESSABLE_ENTITY naming each failing field; the spec answers 400 for some of these. The ACL "
    "operations answer the spec's 400 (error_code 40002) for such a body, and for an ACL or filter refused. A body "
    "that is not JSON at all answers 400, as in the spec.",
    "Error bodies carry the spec's error_code and message, plus error (Kafka's error name, which tells apart "
    "errors that share a code, such as 40002) and retriable.",
    "Every answer may carry fields the spec does not name (high watermark, log end offset, lag in ms, Burrow "
    "status, inline ids next to the spec's links), and a success the spec gives no body may carry one (a created "
    "ACL answers its AclData); none of the spec's fields is renamed or retyped.",
    "Collections come whole in one answer: metadata.next is always null.",
    "Produce takes highwater's acks and timeout_ms query parameters; with acks=0 (fire and forget) a record is "
    "answered 202 before it is appended, its offset null. Without them a produce waits for acks=all (the "
    "Kafka producer's default since 3.0) and answers the spec's 200 (207 for records:batch).",
)
"""What holds for every served operation; rendered above the table."""


@dataclass(frozen=True, slots=True)
class SpecOperation:
    method: str
    path: str
    """As the spec writes it, below ``SPEC_PREFIX``."""
    name: str
    request: type[BaseModel] | None
    answers: Answers
    verdict: Verdict
    reason: str = ""
    named_by_spec: bool = True
    refusal: int | None = None
    """For an operation that never succeeds in highwater (a read-only config's alter, a reassignment that is never
    under way): the error status it answers a well-formed request with, which then counts as exercising it."""

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def served(self) -> bool:
        return self.verdict != "not_served"

    def model_for(self, status: int) -> type[BaseModel] | None:
        """The model a ``status`` answer is held to; a status the spec does not list for this operation fails."""
        if status not in self.answers:
            raise AssertionError(
                f"{self.key} answered {status}, a status the spec does not list: {sorted(self.answers)}"
            )
        return self.answers[status]


def answers(success: Mapping[int, type[BaseModel] | None], *more_errors: int) -> Answers:
    """The success answers, then the spec's ``Error`` body for its common error statuses and ``more_errors``."""
    return {**success, **dict.fromkeys((*COMMON_ERRORS, *more_errors), m.Error)}


@dataclass(frozen=True, slots=True)
class Op:
    """Shorthand for building the table: the verdict last, as it is what changes."""

    method: str
    path: str
    name: str
    success: Mapping[int, type[BaseModel] | None]
    verdict: Verdict
    reason: str = ""
    request: type[BaseModel] | None = None
    errors: tuple[int, ...] = ()
    named_by_spec: bool = True
    refusal: int | None = None

    def row(self) -> SpecOperation:
        return SpecOperation(
            self.method,
            self.path,
            self.name,
            self.request,
            answers(self.success, *self.errors),
            self.verdict,
            self.reason,
            self.named_by_spec,
            self.refusal,
        )


C = "/clusters/{cluster_id}"
T = C + "/topics/{topic_name}"
P = T + "/partitions/{partition_id}"
G = C + "/consumer-groups/{consumer_group_id}"
B = C + "/brokers/{broker_id}"
UNCOMMITTED_LAG = (
    "a partition the group subscribes to but never committed to is listed too, with current_offset and lag null "
    "(the spec's rows are integers, Confluent lists committed partitions only): hiding it would hide a consumer "
    "that never started; every committed row has the spec's shape"
)

BROKER_CONFIGS = (
    "lists the topic defaults the broker applies, under Kafka's broker config names, broker.id and the two "
    "replication throttle rates; a value set for this broker alone is DYNAMIC_BROKER_CONFIG, one set cluster-wide "
    "(/broker-configs) DYNAMIC_DEFAULT_BROKER_CONFIG, the others STATIC_BROKER_CONFIG or DEFAULT_CONFIG; every one "
    "but the throttle rates is is_read_only for one broker: topic defaults are set cluster-wide only, so every "
    "replica of a partition follows the same rules whichever broker holds it"
)
BROKER_CONFIGS_READ_ONLY = (
    "only leader.replication.throttled.rate and follower.replication.throttled.rate can be set for one broker (see "
    "the listing): an alter of any other config for one broker answers 400 with error_code 40005 (INVALID_CONFIG), "
    "nothing changed; set it cluster-wide with /broker-configs"
)
TOPIC_CONFIG_ALTERS = (
    "compression.type is kept and listed with Kafka's values, but the broker never re-encodes batches, so every "
    "value behaves as producer"
)
REASSIGNMENTS = (
    "a move is started, replaced or cancelled by highwater's own POST /v3/clusters/{cluster_id}/topics/-/partitions/-/"
    "reassignment:alter (the spec has no write); the conformance run starts none"
)

_OPS = (
    Op("GET", "/clusters", "listKafkaClusters", {200: m.ClusterDataList}, "implemented"),
    Op("GET", C, "getKafkaCluster", {200: m.ClusterData}, "implemented"),
    Op(
        "POST",
        C + "/acls:batch",
        "batchCreateKafkaAcls",
        {201: None},
        "implemented",
        request=m.CreateAclRequestDataList,
    ),
    Op("GET", C + "/acls", "getKafkaAcls", {200: m.AclDataList}, "implemented"),
    Op("POST", C + "/acls", "createKafkaAcls", {201: None}, "implemented", request=m.CreateAclRequestData),
    Op("DELETE", C + "/acls", "deleteKafkaAcls", {200: m.DeleteAclsResponse}, "implemented"),
    Op("GET", C + "/broker-configs", "listKafkaClusterConfigs", {200: m.ClusterConfigDataList}, "implemented"),
    Op(
        "POST",
        C + "/broker-configs:alter",
        "updateKafkaClusterConfigs",
        {204: None},
        "implemented",
        request=m.AlterConfigBatchRequestData,
        errors=(INVALID_BODY,),
    ),
    Op("GET", C + "/broker-configs/{name}", "getKafkaClusterConfig", {200: m.ClusterConfigData}, "implemented"),
    Op(
        "PUT",
        C + "/broker-configs/{name}",
        "updateKafkaClusterConfig",
        {204: None},
        "implemented",
        request=m.UpdateConfigRequestData,
        errors=(INVALID_BODY,),
    ),
    Op("DELETE", C + "/broker-configs/{name}", "deleteKafkaClusterConfig", {204: None}, "implemented"),
    Op("GET", C + "/brokers", "listKafkaBrokers", {200: m.BrokerDataList}, "implemented", named_by_spec=False),
    Op("GET", B, "getKafkaBroker", {200: m.BrokerData}, "implemented", named_by_spec=False),
    Op(
        "GET",
        C + "/brokers/-/configs",
        "listKafkaAllBrokerConfigs",
        {200: m.BrokerConfigDataList},
        "different",
        BROKER_CONFIGS,
        named_by_spec=False,
    ),
    Op(
        "GET",
        B + "/configs",
        "listKafkaBrokerConfigs",
        {200: m.BrokerConfigDataList},
        "different",
        BROKER_CONFIGS,
        named_by_spec=False,
    ),
    Op(
        "POST",
        B + "/configs:alter",
        "updateKafkaBrokerConfigBatch",
        {204: None},
        "different",
        BROKER_CONFIGS_READ_ONLY + "; an empty alter answers 204",
        m.AlterConfigBatchRequestData,
        errors=(INVALID_BODY,),
        named_by_spec=False,
    ),
    Op(
        "GET",
        B + "/configs/{name}",
        "getKafkaBrokerConfig",
        {200: m.BrokerConfigData},
        "different",
        BROKER_CONFIGS,
        named_by_spec=False,
    ),
    Op(
        "PUT",
        B + "/configs/{name}",
        "updateKafkaBrokerConfig",
        {204: None},
        "different",
        BROKER_CONFIGS_READ_ONLY,
        m.UpdateConfigRequestData,
        errors=(INVALID_BODY,),
        named_by_spec=False,
        refusal=400,
    ),
    Op(
        "DELETE",
        B + "/configs/{name}",
        "deleteKafkaBrokerConfig",
        {204: None},
        "different",
        BROKER_CONFIGS_READ_ONLY,
        named_by_spec=False,
        refusal=400,
    ),
    Op(
        "GET",
        B + "/partition-replicas",
        "searchKafkaReplicasByBroker",
        {200: m.ReplicaDataList},
        "implemented",
        named_by_spec=False,
    ),
    Op("GET", C + "/consumer-groups", "listKafkaConsumerGroups", {200: m.ConsumerGroupDataList}, "implemented"),
    Op("GET", G, "getKafkaConsumerGroup", {200: m.ConsumerGroupData}, "implemented"),
    Op("GET", G + "/consumers", "listKafkaConsumers", {200: m.ConsumerDataList}, "implemented"),
    Op(
        "GET",
        G + "/lag-summary",
        "getKafkaConsumerGroupLagSummary",
        {200: m.ConsumerGroupLagSummaryData},
        "implemented",
    ),
    Op("GET", G + "/lags", "listKafkaConsumerLags", {200: m.ConsumerLagDataList}, "different", UNCOMMITTED_LAG),
    Op(
        "GET",
        G + "/lags/{topic_name}/partitions/{partition_id}",
        "getKafkaConsumerLag",
        {200: m.ConsumerLagData},
        "different",
        UNCOMMITTED_LAG,
    ),
    Op("GET", G + "/consumers/{consumer_id}", "getKafkaConsumer", {200: m.ConsumerData}, "implemented"),
    Op(
        "GET",
        G + "/consumers/{consumer_id}/assignments",
        "listKafkaConsumerAssignment",
        {200: m.ConsumerAssignmentDataList},
        "implemented",
    ),
    Op(
        "GET",
        G + "/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}",
        "getKafkaConsumerAssignment",
        {200: m.ConsumerAssignmentData},
        "implemented",
    ),
    Op("GET", C + "/topics", "listKafkaTopics", {200: m.TopicDataList}, "implemented"),
    Op(
        "POST",
        C + "/topics",
        "createKafkaTopic",
        {200: m.TopicData, 201: m.TopicData},
        "implemented",
        request=m.CreateTopicRequestData,
        errors=(INVALID_BODY,),
    ),
    Op("GET", T, "getKafkaTopic", {200: m.TopicData}, "implemented"),
    Op(
        "PATCH",
        T,
        "updatePartitionCountKafkaTopic",
        {200: m.TopicData},
        "implemented",
        request=m.UpdatePartitionCountRequestData,
        errors=(INVALID_BODY,),
    ),
    Op("DELETE", T, "deleteKafkaTopic", {204: None}, "implemented"),
    Op("GET", T + "/configs", "listKafkaTopicConfigs", {200: m.TopicConfigDataList}, "implemented"),
    Op(
        "POST",
        T + "/configs:alter",
        "updateKafkaTopicConfigBatch",
        {204: None},
        "different",
        TOPIC_CONFIG_ALTERS,
        m.AlterConfigBatchRequestData,
        errors=(INVALID_BODY,),
    ),
    Op("GET", T + "/configs/{name}", "getKafkaTopicConfig", {200: m.TopicConfigData}, "implemented"),
    Op(
        "PUT",
        T + "/configs/{name}",
        "updateKafkaTopicConfig",
        {204: None},
        "different",
        TOPIC_CONFIG_ALTERS,
        m.UpdateConfigRequestData,
        errors=(INVALID_BODY,),
    ),
    Op("DELETE", T + "/configs/{name}", "deleteKafkaTopicConfig", {204: None}, "different", TOPIC_CONFIG_ALTERS),
    Op(
        "GET",
        P + "/offset",
        "listKafkaPartitionOffsets",
        {200: m.PartitionWithOffsetsData},
        "implemented",
    ),
    Op("GET", T + "/partitions", "listKafkaPartitions", {200: m.PartitionDataList}, "implemented"),
    Op("GET", P, "getKafkaPartition", {200: m.PartitionData}, "implemented"),
    Op(
        "GET",
        C + "/topics/-/partitions/-/reassignment",
        "listKafkaAllReassignments",
        {200: m.ReassignmentDataList},
        "different",
        REASSIGNMENTS + ", so its list is empty",
        named_by_spec=False,
    ),
    Op(
        "GET",
        T + "/partitions/-/reassignment",
        "searchKafkaReassignmentsByTopic",
        {200: m.ReassignmentDataList},
        "different",
        REASSIGNMENTS + ", so its list is empty",
        named_by_spec=False,
    ),
    Op(
        "GET",
        P + "/reassignment",
        "getKafkaReassignment",
        {200: m.ReassignmentData},
        "different",
        REASSIGNMENTS + ", so every partition answers 404, as the REST Proxy answers when none is under way",
        named_by_spec=False,
        refusal=404,
    ),
    Op(
        "GET",
        P + "/replicas",
        "listKafkaReplicas",
        {200: m.ReplicaDataList},
        "implemented",
        named_by_spec=False,
    ),
    Op(
        "GET",
        P + "/replicas/{broker_id}",
        "getKafkaReplica",
        {200: m.ReplicaData},
        "implemented",
        named_by_spec=False,
    ),
    Op(
        "GET",
        C + "/topics/-/configs",
        "listKafkaAllTopicConfigs",
        {200: m.TopicConfigDataList},
        "implemented",
    ),
    Op(
        "POST",
        T + "/records",
        "produceRecord",
        {200: m.ProduceResponse},
        "implemented",
        request=m.ProduceRequest,
        errors=(413, 415, INVALID_BODY),
    ),
    Op(
        "POST",
        T + "/records:batch",
        "produceRecordsBatch",
        {207: m.ProduceBatchResponse},
        "implemented",
        request=m.ProduceBatchRequest,
        errors=(413, 415, INVALID_BODY),
    ),
)

OPERATIONS: tuple[SpecOperation, ...] = tuple(op.row() for op in _OPS)
"""All 50 operations of the spec, in its order."""
BY_KEY: dict[str, SpecOperation] = {op.key: op for op in OPERATIONS}
BY_NAME: dict[str, SpecOperation] = {op.name: op for op in OPERATIONS}
