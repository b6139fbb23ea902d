"""Cluster-wide dynamic broker configs: which names, how values are checked and stored, how they overlay."""

from __future__ import annotations

import pytest

from broker.errors import InvalidConfig
from broker.topics.cluster_defaults import DYNAMIC_BROKER_CONFIGS, altered, overlay
from broker.topics.configs import TopicConfigs
from config.topic import TopicDefaults

STATIC = TopicDefaults(retention_ms=1000, partitions=2)


def test_every_topic_default_is_dynamic_and_the_broker_id_is_not() -> None:
    assert set(DYNAMIC_BROKER_CONFIGS.values()) == set(TopicDefaults.model_fields)
    with pytest.raises(InvalidConfig, match=r"broker\.id cannot be set cluster-wide") as refused:
        altered(STATIC, {}, {"broker.id": "3"})
    assert refused.value.details["config"] == "broker.id"


def test_values_are_stored_in_one_spelling_and_a_reset_drops_them() -> None:
    current = altered(STATIC, {}, {"log.retention.ms": " 5000 ", "unclean.leader.election.enable": "TRUE"})
    assert current == {"log.retention.ms": "5000", "unclean.leader.election.enable": "true"}
    assert altered(STATIC, current, {"log.retention.ms": None, "num.partitions": "4"}) == {
        "unclean.leader.election.enable": "true",
        "num.partitions": "4",
    }


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"log.retention.ms": "soon"}, "log.retention.ms"),
        ({"num.partitions": "3", "min.insync.replicas": "0"}, "min.insync.replicas"),
        ({"log.segment.bytes": "10"}, "log.segment.bytes"),
        ({"log.flush.policy": "never"}, "log.flush.policy"),
        ({"default.replication.factor": "0"}, "default.replication.factor"),
    ],
)
def test_one_bad_value_refuses_the_whole_alter_naming_it(changes: dict, named: str) -> None:
    current = {"num.partitions": "6"}
    with pytest.raises(InvalidConfig) as refused:
        altered(STATIC, current, changes)
    assert refused.value.details["config"] == named
    assert current == {"num.partitions": "6"}


def test_the_overlay_replaces_only_what_is_set() -> None:
    defaults = overlay(STATIC, {"num.partitions": "5", "min.insync.replicas": "2"})
    assert (defaults.partitions, defaults.min_insync_replicas, defaults.retention_ms) == (5, 2, 1000)


def test_topic_configs_resolve_against_the_dynamic_defaults_until_they_are_reset() -> None:
    configs = TopicConfigs(STATIC)
    assert configs.parse({}).retention_ms == 1000
    configs.apply_cluster_configs({"log.retention.ms": "7000", "min.insync.replicas": "2"})
    assert configs.parse({}).retention_ms == 7000, "the parse cache was not dropped"
    assert configs.parse({"retention.ms": "9"}).retention_ms == 9, "a topic override still wins"
    assert configs.log_config({}).retention_ms == 7000
    assert configs.defaults.min_insync_replicas == 2
    configs.apply_cluster_configs({})
    assert configs.parse({}).retention_ms == 1000
    assert configs.dynamic_defaults == {}
