"""InitProducerId, CreateTopics, DeleteTopics, DescribeConfigs and DescribeCluster, every supported
version: encoded by kio as a client sends them, answered by the real handlers against a stand-in
node, decoded by kio as the client decodes them.

The stand-in creates topics with the real rules (config parsing, placement over three
brokers), so the error codes pinned here are the ones the node's refusals become.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from broker.cluster.placement import assign_replicas
from broker.cluster.records import TopicRecord, legacy_topic_id
from broker.cluster.replica_assignment import check_brokers
from broker.cluster.store import StoreUnavailableError
from broker.descriptions import TopicDescription
from broker.errors import TopicAlreadyExists, UnknownTopic
from broker.kafka.admin import CONFIGS_SINCE
from broker.kafka.apis import SUPPORTED
from broker.kafka.codec import decode_response
from broker.kafka.context import KafkaNode
from broker.kafka.dispatch import Dispatcher, Routed, route
from broker.security.acl import Resource, ResourceType
from broker.security.authorizer import Decision
from broker.topics import cluster_defaults
from broker.topics.config_entries import ConfigSource
from broker.topics.configs import TopicConfigs
from broker.topics.new_topic import NewTopic
from broker.topics.throttle_rates import per_broker_altered
from config.broker import BrokerSettings
from config.topic import TopicDefaults
from tests.unit.kafka import requests
from tests.unit.kafka.requests import build, millis, request_class
from tests.unit.kafka.stand_in import TOPIC, OpenSecurity, StandInNode

INIT_PRODUCER_ID, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER = 22, 19, 20, 32, 60


@dataclass
class AdminStandIn(StandInNode):
    """The stand-in as the controller gateway too: topics created, deleted and altered with the real rules
    (config parsing, placement over three brokers, ``TopicConfigs.altered``, ``cluster_defaults.altered``)."""

    next_producer_id: int = 4000
    topics: dict[str, dict[str, str]] = field(default_factory=lambda: {TOPIC: {"retention.ms": "60000"}})
    created: list[tuple[str, int, int, dict[str, str]]] = field(default_factory=list)
    assigned: dict[str, list[list[int]]] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    altered: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    """Each alter done, the cluster-wide ones under the empty name."""

    def __post_init__(self) -> None:
        self.settings = BrokerSettings(node_id=1, topic_defaults=TopicDefaults(partitions=2, replication_factor=3))
        self.topic_configs = TopicConfigs(self.settings.topic_defaults)

    @property
    def controller_gateway(self) -> AdminStandIn:
        return self

    async def alter_topic_configs(
        self, name: str, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]:
        configs = self.topic_configs.altered(self.topic(name), changes)
        if not validate_only:
            self.topics[name] = configs
            self.altered.append((name, changes))
        return configs

    async def alter_cluster_configs(
        self, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]:
        configs = cluster_defaults.altered(
            self.topic_configs.static_defaults, self.topic_configs.dynamic_defaults, changes
        )
        if not validate_only:
            self.topic_configs.apply_cluster_configs(configs)
            self.altered.append(("", changes))
        return configs

    async def alter_broker_configs(
        self, broker_id: int, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]:
        configs = per_broker_altered(self.own_configs, changes)
        if not validate_only:
            self.own_configs = configs
            self.altered.append((str(broker_id), changes))
        return configs

    async def allocate_producer_id(self) -> int:
        self.next_producer_id += 1
        return self.next_producer_id - 1

    def check_new_topic(self, topic: NewTopic) -> None:
        self.topic_configs.parse(topic.configs)
        if topic.assignment is None:
            assign_replicas(topic.partitions_count, topic.replication_factor, [(1, None), (2, None), (3, None)])
        else:
            check_brokers(topic.assignment, {1, 2, 3}, {1, 2, 3})
        if topic.name in self.topics:
            raise TopicAlreadyExists(f"topic '{topic.name}' already exists")

    async def create_topic(self, topic: NewTopic) -> TopicDescription:
        self.check_new_topic(topic)
        self.topics[topic.name] = topic.configs
        self.created.append((topic.name, topic.partitions_count, topic.replication_factor, topic.configs))
        if topic.assignment is not None:
            self.assigned[topic.name] = topic.assignment
        return TopicDescription(
            topic.name, [], topic.replication_factor, self.topic_configs.effective(topic.configs), False
        )

    async def delete_topic(self, name: str) -> None:
        self.topic(name)
        del self.topics[name]
        self.deleted.append(name)

    def topic(self, name: str) -> TopicRecord:
        """Every topic of the stand-in has replication factor 3 and the configs it was given."""
        if name not in self.topics:
            raise UnknownTopic(f"topic '{name}' does not exist", topic_name=name)
        return TopicRecord(
            name=name,
            topic_id=legacy_topic_id(name),
            partitions_count=1,
            replication_factor=3,
            configs=self.topics[name],
        )

    def known_topic(self, name: str) -> TopicRecord | None:
        return self.topic(name) if name in self.topics else None

    def topic_names_by_id(self) -> dict[uuid.UUID, str]:
        return {legacy_topic_id(name): name for name in self.topics}


def versions(api_key: int) -> list[int]:
    span = SUPPORTED[api_key]
    return list(range(span.min_version, span.max_version + 1))


def exchange(node: StandInNode, api_key: int, version: int, body: Any) -> Any:
    routed = route(requests.frame(api_key, version, body, correlation_id=99))
    assert isinstance(routed, Routed)
    # the stand-in is the part of a ``KafkaNode`` these handlers call
    payload, _ = asyncio.run(Dispatcher(cast(KafkaNode, node)).answer(routed))
    assert payload is not None
    correlation_id, response = decode_response(payload, load_response_schema(api_key, version))
    assert correlation_id == 99
    return response


def init_producer_id(version: int, transactional_id: str | None = None) -> Any:
    return build(
        request_class(INIT_PRODUCER_ID, version, "InitProducerIdRequest"),
        transactional_id=transactional_id,
        transaction_timeout=millis(60000),
        producer_id=-1,
        producer_epoch=-1,
    )


def create_topics(
    version: int,
    topics: list[tuple[str, int, int, dict[str, str | None]]],
    validate_only: bool = False,
    assignments: tuple = (),
) -> Any:
    topic_class = request_class(CREATE_TOPICS, version, "CreatableTopic")
    config_class = request_class(CREATE_TOPICS, version, "CreatableTopicConfig")
    creatable = tuple(
        build(
            topic_class,
            name=name,
            num_partitions=partitions,
            replication_factor=replication,
            assignments=assignments,
            configs=tuple(build(config_class, name=k, value=v) for k, v in configs.items()),
        )
        for name, partitions, replication, configs in topics
    )
    return build(
        request_class(CREATE_TOPICS, version, "CreateTopicsRequest"),
        topics=creatable,
        timeout=millis(10000),
        validate_only=validate_only,
    )


def delete_topics(version: int, names: list[str | None]) -> Any:
    request = request_class(DELETE_TOPICS, version, "DeleteTopicsRequest")
    if version >= 6:
        state = request_class(DELETE_TOPICS, version, "DeleteTopicState")
        topics = tuple(build(state, name=n, topic_id=uuid.UUID(int=0) if n else uuid.uuid4()) for n in names)
        return build(request, topics=topics, timeout=millis(10000))
    return build(request, topic_names=tuple(names), timeout=millis(10000))


def describe_configs(
    version: int, resources: list[tuple[int, str, tuple[str, ...] | None]], synonyms: bool = False
) -> Any:
    resource_class = request_class(DESCRIBE_CONFIGS, version, "DescribeConfigsResource")
    return build(
        request_class(DESCRIBE_CONFIGS, version, "DescribeConfigsRequest"),
        resources=tuple(
            build(resource_class, resource_type=t, resource_name=n, configuration_keys=k) for t, n, k in resources
        ),
        include_synonyms=synonyms,
        include_documentation=True,
    )


# ------------------------------------------------------------------ InitProducerId


@pytest.mark.parametrize("version", versions(INIT_PRODUCER_ID))
def test_an_idempotent_producer_gets_a_fresh_id_from_the_allocator_and_epoch_0(version: int) -> None:
    node = AdminStandIn()
    first = exchange(node, INIT_PRODUCER_ID, version, init_producer_id(version))
    second = exchange(node, INIT_PRODUCER_ID, version, init_producer_id(version))
    assert (first.error_code, first.producer_id, first.producer_epoch) == (ErrorCode.none, 4000, 0)
    assert (second.producer_id, second.producer_epoch) == (4001, 0)


class NoTransactionalIds(OpenSecurity):
    """Every decision allows, except any on a transactional id."""

    def decide(self, principal: object, host: str, operation: object, resource: object) -> Decision:
        if isinstance(resource, Resource) and resource.type is ResourceType.TRANSACTIONAL_ID:
            return Decision(False, "no ACL on the transactional id")
        return super().decide(principal, host, operation, resource)


@pytest.mark.parametrize("version", versions(INIT_PRODUCER_ID))
def test_a_transactional_id_without_write_on_it_is_refused_and_no_id_is_allocated(version: int) -> None:
    node = AdminStandIn(security=NoTransactionalIds())
    response = exchange(node, INIT_PRODUCER_ID, version, init_producer_id(version, transactional_id="tx-1"))
    assert response.error_code == ErrorCode.transactional_id_authorization_failed
    assert (response.producer_id, response.producer_epoch) == (-1, -1)
    assert node.next_producer_id == 4000


@dataclass
class StoreDownStandIn(AdminStandIn):
    async def allocate_producer_id(self) -> int:
        raise StoreUnavailableError("etcd is unreachable")


def test_an_unreachable_store_is_a_retriable_coordinator_not_available_not_a_closed_connection() -> None:
    response = exchange(StoreDownStandIn(), INIT_PRODUCER_ID, 4, init_producer_id(4))
    assert (response.error_code, response.producer_id) == (ErrorCode.coordinator_not_available, -1)


# ------------------------------------------------------------------ CreateTopics


@pytest.mark.parametrize("version", versions(CREATE_TOPICS))
def test_create_topics_creates_through_the_node_and_answers_counts_and_config_sources(version: int) -> None:
    node = AdminStandIn()
    response = exchange(
        node, CREATE_TOPICS, version, create_topics(version, [("fresh", 4, 3, {"retention.ms": "1000"})])
    )
    [result] = response.topics
    assert (result.name, result.error_code, result.error_message) == ("fresh", ErrorCode.none, None)
    assert node.created == [("fresh", 4, 3, {"retention.ms": "1000"})]
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (4, 3)
        sources = {c.name: (c.value, c.config_source) for c in result.configs}
        assert sources["retention.ms"] == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
        assert sources["cleanup.policy"] == ("delete", ConfigSource.DEFAULT_CONFIG)


def test_minus_one_takes_the_broker_defaults_and_a_null_config_value_is_the_default() -> None:
    node = AdminStandIn()
    response = exchange(node, CREATE_TOPICS, 7, create_topics(7, [("defaults", -1, -1, {"segment.ms": None})]))
    assert response.topics[0].error_code == ErrorCode.none
    assert node.created == [("defaults", 2, 3, {})]


@pytest.mark.parametrize("version", versions(CREATE_TOPICS))
def test_validate_only_checks_everything_and_creates_nothing(version: int) -> None:
    node = AdminStandIn()
    body = create_topics(version, [("checked", 3, 3, {}), (TOPIC, 1, 1, {})], validate_only=True)
    response = exchange(node, CREATE_TOPICS, version, body)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("checked", ErrorCode.none),
        (TOPIC, ErrorCode.topic_already_exists),
    ]
    assert node.created == []
    assert "checked" not in node.topics


@pytest.mark.parametrize(
    ("topic", "code", "in_message"),
    [
        (("taken", 1, 1, {}), ErrorCode.topic_already_exists, "already exists"),
        (("p0", 0, 1, {}), ErrorCode.invalid_partitions, "at least 1"),
        (("rf4", 1, 4, {}), ErrorCode.invalid_replication_factor, "larger than the 3 live brokers"),
        (("badcfg", 1, 1, {"retention.ms": "soon"}), ErrorCode.invalid_config, "retention.ms"),
        (("unknowncfg", 1, 1, {"no.such.config": "1"}), ErrorCode.invalid_config, "no.such.config"),
        (("nullunknown", 1, 1, {"no.such.config": None}), ErrorCode.invalid_config, "no.such.config"),
    ],
)
def test_each_refusal_is_that_topics_error_with_the_nodes_message(
    topic: tuple[str, int, int, dict[str, str | None]], code: ErrorCode, in_message: str
) -> None:
    node = AdminStandIn()
    node.topics["taken"] = {}
    response = exchange(node, CREATE_TOPICS, 7, create_topics(7, [topic, ("fine", 1, 1, {})]))
    refused, fine = response.topics
    assert (refused.name, refused.error_code) == (topic[0], code)
    assert in_message in refused.error_message
    assert (refused.num_partitions, refused.replication_factor) == (-1, -1)
    assert fine.error_code == ErrorCode.none
    assert [c[0] for c in node.created] == ["fine"]


def test_a_topic_named_twice_is_refused_for_both_copies() -> None:
    node = AdminStandIn()
    response = exchange(node, CREATE_TOPICS, 4, create_topics(4, [("twice", 1, 1, {}), ("twice", 1, 1, {})]))
    assert [t.error_code for t in response.topics] == [ErrorCode.invalid_request] * 2
    assert node.created == []


def assignments(version: int, *lists: tuple[int, tuple[int, ...]]) -> tuple:
    assignment_class = request_class(CREATE_TOPICS, version, "CreatableReplicaAssignment")
    return tuple(build(assignment_class, partition_index=p, broker_ids=brokers) for p, brokers in lists)


@pytest.mark.parametrize("version", versions(CREATE_TOPICS))
def test_a_manual_assignment_creates_the_topic_as_assigned_and_answers_its_counts(version: int) -> None:
    node = AdminStandIn()
    placed = assignments(version, (1, (3, 1)), (0, (2, 3)))
    response = exchange(node, CREATE_TOPICS, version, create_topics(version, [("placed", -1, -1, {})], False, placed))
    [result] = response.topics
    assert result.error_code == ErrorCode.none, result.error_message
    if version >= CONFIGS_SINCE:
        assert (result.num_partitions, result.replication_factor) == (2, 2)
    assert node.assigned == {"placed": [[2, 3], [3, 1]]}
    assert node.created == [("placed", 2, 2, {})]


@pytest.mark.parametrize(
    ("counts", "lists", "code", "message"),
    [
        ((2, -1), ((0, (1,)), (1, (2,))), ErrorCode.invalid_request, "cannot be combined with partitions_count (2)"),
        ((-1, 1), ((0, (1,)),), ErrorCode.invalid_request, "cannot be combined with replication_factor (1)"),
        ((-1, -1), ((0, (1,)), (0, (2,))), ErrorCode.invalid_replica_assignment, "assigned more than once"),
        ((-1, -1), ((1, (1,)),), ErrorCode.invalid_replica_assignment, "partition 0 is missing"),
        ((-1, -1), ((0, (1, 2)), (1, (3,))), ErrorCode.invalid_replica_assignment, "has 1 replica(s)"),
        ((-1, -1), ((0, (2, 2)),), ErrorCode.invalid_replica_assignment, "names broker 2 more than once"),
        ((-1, -1), ((0, (4,)),), ErrorCode.invalid_replica_assignment, "broker 4, which is not a registered"),
    ],
)
@pytest.mark.parametrize("validate_only", [False, True])
def test_a_refused_manual_assignment_is_that_topics_error_and_creates_nothing(
    counts: tuple[int, int], lists: tuple, code: ErrorCode, message: str, validate_only: bool
) -> None:
    node = AdminStandIn()
    partitions, replication = counts
    body = create_topics(7, [("placed", partitions, replication, {})], validate_only, assignments(7, *lists))
    [result] = exchange(node, CREATE_TOPICS, 7, body).topics
    assert result.error_code == code and message in (result.error_message or ""), result
    assert node.created == []


@dataclass
class StoreDownForTopics(AdminStandIn):
    async def create_topic(self, topic: NewTopic) -> TopicDescription:
        if topic.name == "unlucky":
            raise StoreUnavailableError("etcd is unreachable at 10.0.0.7:2379")
        return await super().create_topic(topic)


def test_an_unexpected_failure_is_that_topics_unknown_server_error_without_its_text() -> None:
    node = StoreDownForTopics()
    response = exchange(node, CREATE_TOPICS, 7, create_topics(7, [("unlucky", 1, 1, {}), ("lucky", 1, 1, {})]))
    unlucky, lucky = response.topics
    assert (unlucky.error_code, unlucky.error_message) == (ErrorCode.unknown_server_error, None)
    assert lucky.error_code == ErrorCode.none
    assert [c[0] for c in node.created] == ["lucky"]


# ------------------------------------------------------------------ DeleteTopics


@pytest.mark.parametrize("version", versions(DELETE_TOPICS))
def test_delete_topics_deletes_through_the_node_and_answers_per_topic(version: int) -> None:
    node = AdminStandIn()
    response = exchange(node, DELETE_TOPICS, version, delete_topics(version, [TOPIC, "never-was"]))
    assert [(r.name, r.error_code) for r in response.responses] == [
        (TOPIC, ErrorCode.none),
        ("never-was", ErrorCode.unknown_topic_or_partition),
    ]
    assert node.deleted == [TOPIC]


def test_an_id_no_topic_has_is_unknown_topic_id_and_deletes_nothing() -> None:
    node = AdminStandIn()
    response = exchange(node, DELETE_TOPICS, 6, delete_topics(6, [None]))
    assert response.responses[0].error_code == ErrorCode.unknown_topic_id
    assert node.deleted == []


def test_a_topic_named_by_its_id_alone_is_deleted_and_answered_with_its_name() -> None:
    node = AdminStandIn()
    request = build(
        request_class(DELETE_TOPICS, 6, "DeleteTopicsRequest"),
        topics=(
            build(request_class(DELETE_TOPICS, 6, "DeleteTopicState"), name=None, topic_id=legacy_topic_id(TOPIC)),
        ),
        timeout=millis(10000),
    )
    [result] = exchange(node, DELETE_TOPICS, 6, request).responses
    assert (result.name, result.topic_id, result.error_code) == (TOPIC, legacy_topic_id(TOPIC), ErrorCode.none)
    assert node.deleted == [TOPIC]


@pytest.mark.parametrize("version", [v for v in versions(CREATE_TOPICS) if v >= 7])
def test_create_topics_answers_the_new_topics_id(version: int) -> None:
    node = AdminStandIn()
    [result] = exchange(node, CREATE_TOPICS, version, create_topics(version, [("fresh", 1, 3, {})])).topics
    assert result.topic_id == legacy_topic_id("fresh")


# ------------------------------------------------------------------ DescribeConfigs


@pytest.mark.parametrize("version", versions(DESCRIBE_CONFIGS))
def test_describe_configs_of_a_topic_labels_overrides_and_defaults(version: int) -> None:
    node = AdminStandIn()
    response = exchange(node, DESCRIBE_CONFIGS, version, describe_configs(version, [(2, TOPIC, None)], synonyms=True))
    [result] = response.results
    assert (result.error_code, result.resource_name) == (ErrorCode.none, TOPIC)
    configs = {c.name: c for c in result.configs}
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert [(s.name, s.value) for s in configs["retention.ms"].synonyms] == [
        ("retention.ms", "60000"),
        ("log.retention.ms", "604800000"),
    ]
    assert configs["min.insync.replicas"].value == "1"
    assert configs["min.insync.replicas"].config_source == ConfigSource.DEFAULT_CONFIG
    if version >= 3:
        assert configs["min.insync.replicas"].documentation == "acks=all needs this many in-sync replicas"


@pytest.mark.parametrize("version", versions(DESCRIBE_CONFIGS))
def test_describe_configs_lists_every_topic_config_as_the_http_api_does(version: int) -> None:
    """``compression.type`` included: the Kafka door's entries are the HTTP API's (``TopicConfigs.describe``)."""
    node = AdminStandIn()
    node.topics["zstd-topic"] = {"compression.type": "zstd", "retention.ms": "5000"}
    body = describe_configs(version, [(2, "zstd-topic", None)], synonyms=True)
    [result] = exchange(node, DESCRIBE_CONFIGS, version, body).results
    assert result.error_code == ErrorCode.none
    http = node.topic_configs.describe(node.topics["zstd-topic"])
    assert [(c.name, c.value, c.config_source) for c in result.configs] == [(e.name, e.value, e.source) for e in http]
    if version >= 1:
        listed = [[(s.name, s.value, s.source) for s in c.synonyms] for c in result.configs]
        assert listed == [[(s.name, s.value, s.source) for s in e.synonyms] for e in http]
    compression = next(c for c in result.configs if c.name == "compression.type")
    assert (compression.value, compression.config_source) == ("zstd", ConfigSource.DYNAMIC_TOPIC_CONFIG)


@pytest.mark.parametrize("version", [v for v in versions(CREATE_TOPICS) if v >= 5])
def test_create_topics_with_a_compression_type_answers_it_among_the_configs(version: int) -> None:
    node = AdminStandIn()
    body = create_topics(version, [("zstd-topic", 1, 3, {"compression.type": "zstd"})])
    [result] = exchange(node, CREATE_TOPICS, version, body).topics
    assert (result.error_code, result.error_message) == (ErrorCode.none, None)
    sources = {c.name: (c.value, c.config_source) for c in result.configs}
    assert sources["compression.type"] == ("zstd", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert set(sources) == {e.name for e in node.topic_configs.describe({})}


def test_a_null_compression_type_at_creation_is_the_default() -> None:
    node = AdminStandIn()
    [result] = exchange(node, CREATE_TOPICS, 7, create_topics(7, [("plain", 1, 3, {"compression.type": None})])).topics
    assert result.error_code == ErrorCode.none
    assert {c.name: c.value for c in result.configs}["compression.type"] == "producer"


def test_describe_configs_filters_by_key_and_answers_each_resource_on_its_own() -> None:
    node = AdminStandIn()
    resources: list[tuple[int, str, tuple[str, ...] | None]] = [
        (2, TOPIC, ("retention.ms", "no.such")),
        (2, "missing", None),
        (4, "1", ("num.partitions",)),
        (4, "2", None),
        (8, "1", None),
    ]
    response = exchange(node, DESCRIBE_CONFIGS, 4, describe_configs(4, resources))
    topic, missing, broker, other_broker, logger = response.results
    assert [(c.name, c.value) for c in topic.configs] == [("retention.ms", "60000")]
    assert (missing.error_code, missing.configs) == (ErrorCode.unknown_topic_or_partition, ())
    assert [(c.name, c.value, c.config_source) for c in broker.configs] == [
        ("num.partitions", "2", ConfigSource.STATIC_BROKER_CONFIG)
    ]
    assert other_broker.error_code == ErrorCode.invalid_request
    assert "unexpected broker id" in other_broker.error_message
    assert logger.error_code == ErrorCode.invalid_request


# ------------------------------------------------------------------ DescribeCluster


@pytest.mark.parametrize("version", versions(DESCRIBE_CLUSTER))
def test_describe_cluster_lists_brokers_with_a_kafka_listener_and_the_controller(version: int) -> None:
    node = AdminStandIn()
    body = build(
        request_class(DESCRIBE_CLUSTER, version, "DescribeClusterRequest"),
        include_cluster_authorized_operations=False,
        endpoint_type=1,
        include_fenced_brokers=False,
    )
    response = exchange(node, DESCRIBE_CLUSTER, version, body)
    assert (response.error_code, response.cluster_id, response.controller_id) == (ErrorCode.none, "stand-in-cluster", 2)
    assert [(b.broker_id, b.host, b.port, b.rack) for b in response.brokers] == [(1, "127.0.0.1", 19092, "rack-a")]


def test_describe_cluster_for_controllers_is_an_unsupported_endpoint_type() -> None:
    node = AdminStandIn()
    body = build(
        request_class(DESCRIBE_CLUSTER, 1, "DescribeClusterRequest"),
        include_cluster_authorized_operations=False,
        endpoint_type=2,
    )
    response = exchange(node, DESCRIBE_CLUSTER, 1, body)
    assert response.error_code == ErrorCode.unsupported_endpoint_type
    assert response.brokers == ()
