"""What a create request means once the broker's defaults fill in what it left out."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from broker.topics.new_topic import NewTopic
from config.topic import TopicDefaults

DEFAULTS = TopicDefaults(partitions=6, replication_factor=3)


def test_a_count_left_out_is_the_brokers_default() -> None:
    topic = NewTopic.requested("orders", None, None, {"retention.ms": "5"}, None, DEFAULTS)
    assert (topic.partitions_count, topic.replication_factor, topic.configs) == (6, 3, {"retention.ms": "5"})


def test_a_count_given_is_kept_even_where_a_default_exists() -> None:
    topic = NewTopic.requested("orders", 2, 1, {}, None, DEFAULTS)
    assert (topic.partitions_count, topic.replication_factor) == (2, 1)


def test_a_manual_assignment_sets_both_counts() -> None:
    topic = NewTopic.requested("placed", None, None, {}, [[1, 2], [2, 3], [3, 1]], DEFAULTS)
    assert (topic.partitions_count, topic.replication_factor) == (3, 2)
    assert topic.assignment == [[1, 2], [2, 3], [3, 1]]


def test_as_the_internal_body_an_unknown_field_is_refused() -> None:
    body = {"name": "t", "partitions_count": 1, "replication_factor": 1, "internal": True}
    with pytest.raises(ValidationError, match="internal"):
        NewTopic.model_validate(body)
