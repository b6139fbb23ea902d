"""IncrementalAlterConfigs and AlterConfigs: the pure translation of a request into changes, and every
supported version encoded by kio as a client sends it, answered by the real handler against the admin
stand-in (whose gateway alters with the real ``TopicConfigs.altered`` rules), decoded by kio.
"""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.errors import InvalidConfig, InvalidRequest
from broker.kafka.alter_configs import (
    ALTER_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    OpType,
    incremental_changes,
    replacement_changes,
)
from broker.topics.config_entries import ConfigSource
from tests.unit.kafka.requests import build, request_class
from tests.unit.kafka.stand_in import TOPIC
from tests.unit.kafka.test_kadmin import DESCRIBE_CONFIGS, AdminStandIn, describe_configs, exchange, versions

TOPIC_TYPE, BROKER_TYPE, LOGGER_TYPE = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = OpType.SET, OpType.DELETE, OpType.APPEND, OpType.SUBTRACT

Entries = list[tuple[str, int, str | None]]


def incremental_alter(version: int, resources: list[tuple[int, str, Entries]], validate_only: bool = False) -> Any:
    config_class = request_class(INCREMENTAL_ALTER_CONFIGS, version, "AlterableConfig")
    resource_class = request_class(INCREMENTAL_ALTER_CONFIGS, version, "AlterConfigsResource")
    return build(
        request_class(INCREMENTAL_ALTER_CONFIGS, version, "IncrementalAlterConfigsRequest"),
        resources=tuple(
            build(
                resource_class,
                resource_type=kind,
                resource_name=name,
                configs=tuple(build(config_class, name=n, config_operation=op, value=v) for n, op, v in entries),
            )
            for kind, name, entries in resources
        ),
        validate_only=validate_only,
    )


def legacy_alter(
    version: int, resources: list[tuple[int, str, list[tuple[str, str | None]]]], validate_only: bool = False
) -> Any:
    config_class = request_class(ALTER_CONFIGS, version, "AlterableConfig")
    resource_class = request_class(ALTER_CONFIGS, version, "AlterConfigsResource")
    return build(
        request_class(ALTER_CONFIGS, version, "AlterConfigsRequest"),
        resources=tuple(
            build(
                resource_class,
                resource_type=kind,
                resource_name=name,
                configs=tuple(build(config_class, name=n, value=v) for n, v in entries),
            )
            for kind, name, entries in resources
        ),
        validate_only=validate_only,
    )


def outcomes(response: Any) -> list[tuple[int, str, ErrorCode]]:
    return [(r.resource_type, r.resource_name, r.error_code) for r in response.responses]


# ------------------------------------------------------------------ the translation (pure)


def test_set_is_the_value_and_delete_a_reset_whatever_value_it_carries() -> None:
    entries: Entries = [
        ("retention.ms", SET, "1000"),
        ("segment.ms", DELETE, "ignored"),
        ("cleanup.policy", DELETE, None),
    ]
    assert incremental_changes(entries) == {"retention.ms": "1000", "segment.ms": None, "cleanup.policy": None}


@pytest.mark.parametrize("op", [APPEND, SUBTRACT])
def test_append_and_subtract_are_invalid_config_naming_it_as_no_config_is_a_list(op: OpType) -> None:
    with pytest.raises(InvalidConfig, match=f"cannot {op.name} config cleanup.policy: its type is not LIST") as raised:
        incremental_changes([("retention.ms", SET, "1"), ("cleanup.policy", op, "compact")])
    assert raised.value.details["config"] == "cleanup.policy"


def test_an_unknown_operation_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match=r"unknown operation type 9 for config retention\.ms"):
        incremental_changes([("retention.ms", 9, "1")])


def test_a_config_given_twice_is_an_invalid_request_in_both_apis() -> None:
    with pytest.raises(InvalidRequest, match=r"duplicate config keys: retention\.ms"):
        incremental_changes([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)])
    with pytest.raises(InvalidRequest, match=r"duplicate config keys: retention\.ms"):
        replacement_changes({}, [("retention.ms", "1"), ("retention.ms", "2")])


def test_a_null_value_is_an_invalid_request_but_for_a_delete() -> None:
    with pytest.raises(InvalidRequest, match=r"null value not supported for: segment\.ms"):
        incremental_changes([("segment.ms", SET, None)])
    with pytest.raises(InvalidRequest, match=r"null value not supported for: segment\.ms"):
        replacement_changes({}, [("segment.ms", None)])


def test_the_legacy_alter_resets_every_override_it_does_not_give_in_any_spelling() -> None:
    current = {"retention.ms": "1", "segment_ms": "2", "compression.type": "zstd"}
    given: list[tuple[str, str | None]] = [("segment.ms", "3"), ("max.message.bytes", "4")]
    assert replacement_changes(current, given) == {
        "retention.ms": None,
        "compression.type": None,
        "segment.ms": "3",
        "max.message.bytes": "4",
    }
    assert replacement_changes(current, []) == dict.fromkeys(current)


def test_the_legacy_alter_passes_an_unknown_name_on_for_the_alter_to_refuse() -> None:
    assert replacement_changes({"retention.ms": "1"}, [("no.such", "1")]) == {"retention.ms": None, "no.such": "1"}


# ------------------------------------------------------------------ IncrementalAlterConfigs, every version


@pytest.mark.parametrize("validate_only", [False, True])
@pytest.mark.parametrize("version", versions(INCREMENTAL_ALTER_CONFIGS))
def test_incremental_alter_sets_and_resets_a_topics_configs(version: int, validate_only: bool) -> None:
    node = AdminStandIn()
    entries: Entries = [("max.message.bytes", SET, "2048"), ("retention.ms", DELETE, None)]
    response = exchange(
        node,
        INCREMENTAL_ALTER_CONFIGS,
        version,
        incremental_alter(version, [(TOPIC_TYPE, TOPIC, entries)], validate_only),
    )
    assert outcomes(response) == [(TOPIC_TYPE, TOPIC, ErrorCode.none)]
    assert response.responses[0].error_message is None
    if validate_only:
        assert node.topics[TOPIC] == {"retention.ms": "60000"}
        assert node.controller_gateway.altered == []
    else:
        assert node.topics[TOPIC] == {"max.message.bytes": "2048"}
        assert node.controller_gateway.altered == [(TOPIC, {"max.message.bytes": "2048", "retention.ms": None})]


def test_describe_configs_then_answers_the_alter_topic_entries_alterable_broker_entries_read_only_but_rates() -> None:
    node = AdminStandIn()
    exchange(
        node,
        INCREMENTAL_ALTER_CONFIGS,
        1,
        incremental_alter(1, [(TOPIC_TYPE, TOPIC, [("max.message.bytes", SET, "2048")])]),
    )
    topic, broker = exchange(
        node, DESCRIBE_CONFIGS, 4, describe_configs(4, [(TOPIC_TYPE, TOPIC, None), (BROKER_TYPE, "1", None)])
    ).results
    assert {c.name: c.value for c in topic.configs}["max.message.bytes"] == "2048"
    assert {c.read_only for c in topic.configs} == {False}
    assert {c.name for c in broker.configs if not c.read_only} == {
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
    }


@pytest.mark.parametrize("validate_only", [False, True])
def test_each_resource_gets_its_own_error_and_a_refused_one_changes_nothing(validate_only: bool) -> None:
    node = AdminStandIn()
    node.topics["other"] = {}
    node.topics["third"] = {}
    resources: list[tuple[int, str, Entries]] = [
        (TOPIC_TYPE, TOPIC, [("retention.ms", SET, "soon"), ("segment.ms", SET, "1000")]),
        (TOPIC_TYPE, "missing", [("retention.ms", SET, "1")]),
        (TOPIC_TYPE, "other", [("min.insync.replicas", SET, "4")]),
        (TOPIC_TYPE, "third", [("retention.ms", APPEND, "1")]),
        (TOPIC_TYPE, "fine", [("segment.ms", SET, "5000")]),
    ]
    node.topics["fine"] = {}
    response = exchange(node, INCREMENTAL_ALTER_CONFIGS, 1, incremental_alter(1, resources, validate_only))
    assert [r.error_code for r in response.responses] == [
        ErrorCode.invalid_config,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_config,
        ErrorCode.invalid_config,
        ErrorCode.none,
    ]
    bad_value, _, too_many, appended, _ = response.responses
    assert "retention.ms" in bad_value.error_message
    assert "min.insync.replicas" in too_many.error_message
    assert "retention.ms" in appended.error_message
    assert (node.topics[TOPIC], node.topics["other"], node.topics["third"]) == ({"retention.ms": "60000"}, {}, {})
    assert node.topics["fine"] == ({} if validate_only else {"segment.ms": "5000"})


def test_a_config_given_twice_or_a_resource_named_twice_is_an_invalid_request_and_nothing_changes() -> None:
    node = AdminStandIn()
    resources: list[tuple[int, str, Entries]] = [
        (TOPIC_TYPE, TOPIC, [("segment.ms", SET, "1000"), ("segment.ms", DELETE, None)]),
        (BROKER_TYPE, "1", []),
        (BROKER_TYPE, "1", []),
    ]
    response = exchange(node, INCREMENTAL_ALTER_CONFIGS, 1, incremental_alter(1, resources))
    assert [r.error_code for r in response.responses] == [ErrorCode.invalid_request] * 3
    assert "duplicate config keys" in response.responses[0].error_message
    assert node.controller_gateway.altered == []


@pytest.mark.parametrize("version", versions(INCREMENTAL_ALTER_CONFIGS))
def test_one_brokers_configs_are_read_only_and_other_resource_types_have_none(version: int) -> None:
    node = AdminStandIn()
    nothing: list[tuple[int, str, Entries]] = [(BROKER_TYPE, "1", []), (BROKER_TYPE, "", [])]
    altered_nothing = exchange(node, INCREMENTAL_ALTER_CONFIGS, version, incremental_alter(version, nothing))
    assert [r.error_code for r in altered_nothing.responses] == [ErrorCode.none, ErrorCode.none]
    resources: list[tuple[int, str, Entries]] = [
        (BROKER_TYPE, "1", [("log.retention.ms", SET, "1000")]),
        (BROKER_TYPE, "", [("no.such.config", DELETE, None)]),
        (BROKER_TYPE, "2", []),
        (LOGGER_TYPE, "1", [("kafka.server", SET, "DEBUG")]),
    ]
    response = exchange(node, INCREMENTAL_ALTER_CONFIGS, version, incremental_alter(version, resources))
    assert [r.error_code for r in response.responses] == [
        ErrorCode.invalid_config,
        ErrorCode.invalid_config,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
    ]
    read_only, unknown, other_broker, logger = response.responses
    assert read_only.error_message.startswith("config log.retention.ms is read-only for one broker")
    assert unknown.error_message.startswith("config no.such.config cannot be set cluster-wide")
    assert "unexpected broker id '2'" in other_broker.error_message
    assert "resource type 8" in logger.error_message


@pytest.mark.parametrize("version", versions(INCREMENTAL_ALTER_CONFIGS))
def test_a_broker_sets_its_own_throttle_rates_and_describes_them_above_the_cluster_wide_ones(version: int) -> None:
    node = AdminStandIn()
    node.topic_configs.apply_cluster_configs({"follower.replication.throttled.rate": "5000"})
    entries: Entries = [("leader.replication.throttled.rate", SET, "1000000")]
    response = exchange(
        node, INCREMENTAL_ALTER_CONFIGS, version, incremental_alter(version, [(BROKER_TYPE, "1", entries)])
    )
    assert [r.error_code for r in response.responses] == [ErrorCode.none]
    assert node.own_configs == {"leader.replication.throttled.rate": "1000000"}
    [listed] = exchange(node, DESCRIBE_CONFIGS, 4, describe_configs(4, [(BROKER_TYPE, "1", None)])).results
    rates = {c.name: (c.value, c.config_source, c.read_only) for c in listed.configs if "throttled" in c.name}
    assert rates == {
        "leader.replication.throttled.rate": ("1000000", ConfigSource.DYNAMIC_BROKER_CONFIG, False),
        "follower.replication.throttled.rate": ("5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False),
    }
    bad: Entries = [("leader.replication.throttled.rate", SET, "fast")]
    refused = exchange(node, INCREMENTAL_ALTER_CONFIGS, version, incremental_alter(version, [(BROKER_TYPE, "1", bad)]))
    assert [r.error_code for r in refused.responses] == [ErrorCode.invalid_config]
    assert "leader.replication.throttled.rate" in refused.responses[0].error_message
    assert node.own_configs == {"leader.replication.throttled.rate": "1000000"}, "a refused alter changes nothing"


@pytest.mark.parametrize("version", versions(INCREMENTAL_ALTER_CONFIGS))
def test_the_empty_broker_name_alters_the_cluster_wide_defaults(version: int) -> None:
    node = AdminStandIn()
    entries: Entries = [("num.partitions", SET, "6"), ("log.retention.ms", SET, "5000")]
    response = exchange(
        node, INCREMENTAL_ALTER_CONFIGS, version, incremental_alter(version, [(BROKER_TYPE, "", entries)])
    )
    assert [r.error_code for r in response.responses] == [ErrorCode.none]
    assert node.topic_configs.dynamic_defaults == {"num.partitions": "6", "log.retention.ms": "5000"}
    assert node.topic_configs.defaults.partitions == 6
    [listed] = exchange(node, DESCRIBE_CONFIGS, 4, describe_configs(4, [(BROKER_TYPE, "", None)])).results
    assert {(c.name, c.value, c.read_only) for c in listed.configs} == {
        ("log.retention.ms", "5000", False),
        ("num.partitions", "6", False),
    }, "the cluster-wide configs are alterable, so DescribeConfigs must not call them read-only"
    reset: Entries = [("num.partitions", DELETE, None), ("log.retention.ms", SET, "soon")]
    refused = exchange(node, INCREMENTAL_ALTER_CONFIGS, version, incremental_alter(version, [(BROKER_TYPE, "", reset)]))
    assert [r.error_code for r in refused.responses] == [ErrorCode.invalid_config]
    assert "log.retention.ms" in refused.responses[0].error_message
    assert node.topic_configs.dynamic_defaults == {"num.partitions": "6", "log.retention.ms": "5000"}, "all or nothing"


@pytest.mark.parametrize("version", versions(ALTER_CONFIGS))
def test_the_legacy_alter_of_the_cluster_wide_defaults_replaces_the_set(version: int) -> None:
    node = AdminStandIn()
    node.topic_configs.apply_cluster_configs({"num.partitions": "6", "log.retention.ms": "5000"})
    body = legacy_alter(version, [(BROKER_TYPE, "", [("min.insync.replicas", "2")])])
    assert [r.error_code for r in exchange(node, ALTER_CONFIGS, version, body).responses] == [ErrorCode.none]
    assert node.topic_configs.dynamic_defaults == {"min.insync.replicas": "2"}


# ------------------------------------------------------------------ AlterConfigs (legacy), every version


@pytest.mark.parametrize("version", versions(ALTER_CONFIGS))
def test_legacy_alter_replaces_the_whole_override_set(version: int) -> None:
    node = AdminStandIn()
    node.topics[TOPIC] = {"retention.ms": "60000", "cleanup.policy": "compact"}
    body = legacy_alter(version, [(TOPIC_TYPE, TOPIC, [("segment.ms", "9000"), ("cleanup.policy", "delete")])])
    response = exchange(node, ALTER_CONFIGS, version, body)
    assert outcomes(response) == [(TOPIC_TYPE, TOPIC, ErrorCode.none)]
    assert node.topics[TOPIC] == {"segment.ms": "9000", "cleanup.policy": "delete"}


@pytest.mark.parametrize("version", versions(ALTER_CONFIGS))
def test_legacy_alter_validates_only_and_refuses_per_resource(version: int) -> None:
    node = AdminStandIn()
    resources: list[tuple[int, str, list[tuple[str, str | None]]]] = [
        (TOPIC_TYPE, TOPIC, []),
        (TOPIC_TYPE, "missing", []),
        (BROKER_TYPE, "1", [("broker.id", "7")]),
    ]
    response = exchange(node, ALTER_CONFIGS, version, legacy_alter(version, resources, validate_only=True))
    assert [r.error_code for r in response.responses] == [
        ErrorCode.none,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_config,
    ]
    assert node.topics[TOPIC] == {"retention.ms": "60000"}
    emptied = exchange(node, ALTER_CONFIGS, version, legacy_alter(version, resources[:1]))
    assert outcomes(emptied) == [(TOPIC_TYPE, TOPIC, ErrorCode.none)]
    assert node.topics[TOPIC] == {}
