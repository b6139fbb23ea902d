"""The client's metadata cache and the decoding of broker error bodies."""

from __future__ import annotations

from broker.client.errors import decode_error
from broker.client.metadata import ClusterMetadata
from broker.client.types import BrokerInfo, PartitionInfo, TopicPartition
from broker.errors import NotLeaderOrFollower, OffsetOutOfRange, ServiceUnavailable

TP = TopicPartition("t", 0)


def _info(partition: int, leader_id: int | None, leader_epoch: int = 0) -> PartitionInfo:
    return PartitionInfo("t", partition, leader_id, leader_epoch, (1, 2), (1, 2), 0, 0, 0)


def _metadata() -> ClusterMetadata:
    metadata = ClusterMetadata()
    metadata.update_brokers([BrokerInfo(1, "http://a:1/"), BrokerInfo(2, "http://b:2")])
    metadata.update_topic("t", [_info(0, 1), _info(1, None), _info(2, 2)], now_ms=1000)
    return metadata


def test_leaders_and_availability() -> None:
    metadata = _metadata()
    assert metadata.leader_url(TP) == "http://a:1"
    assert metadata.leader_url(TopicPartition("t", 1)) is None
    assert metadata.partition_count("t") == 3
    assert metadata.available_partitions("t") == [0, 2]
    assert metadata.leader_url(TopicPartition("other", 0)) is None


def test_available_partitions_follow_leader_hints_and_broker_changes() -> None:
    metadata = _metadata()
    assert metadata.available_partitions("t") == [0, 2]
    metadata.apply_leader_hint(TopicPartition("t", 1), 2, "http://b:2")
    assert metadata.available_partitions("t") == [0, 1, 2]
    metadata.update_brokers([BrokerInfo(2, "http://b:2")])
    assert metadata.available_partitions("t") == [1, 2]
    metadata.update_topic("t", [_info(0, 2), _info(1, None), _info(2, None)], now_ms=2000)
    assert metadata.available_partitions("t") == [0]


def test_refresh_is_needed_when_unknown_stale_or_old() -> None:
    metadata = _metadata()
    assert not metadata.needs_refresh("t", now_ms=1500, max_age_ms=1000)
    assert metadata.needs_refresh("t", now_ms=2000, max_age_ms=1000)
    assert metadata.needs_refresh("unknown", now_ms=1500, max_age_ms=1000)
    metadata.mark_stale("t")
    assert metadata.needs_refresh("t", now_ms=1500, max_age_ms=1000)


def test_a_leader_hint_reroutes_and_marks_the_topic_stale() -> None:
    metadata = _metadata()
    metadata.apply_leader_hint(TP, 3, "http://c:3")
    assert metadata.leader_url(TP) == "http://c:3"
    assert metadata.leader_epoch(TP) == 0, "a hint never invents a leader epoch"
    assert metadata.stale_topics() == ["t"]


def test_broker_error_bodies_are_rebuilt_by_name_with_details() -> None:
    error = decode_error(
        421,
        {
            "error_code": 42101,
            "error": "NOT_LEADER_OR_FOLLOWER",
            "message": "m",
            "retriable": True,
            "leader_id": 2,
            "leader_url": "http://b:2",
        },
        "u",
    )
    assert isinstance(error, NotLeaderOrFollower) and error.retriable
    assert error.details == {"leader_id": 2, "leader_url": "http://b:2"}
    out_of_range = decode_error(416, {"error": "OFFSET_OUT_OF_RANGE", "message": "x", "log_end_offset": 5}, "u")
    assert isinstance(out_of_range, OffsetOutOfRange) and out_of_range.details["log_end_offset"] == 5


def test_unknown_names_keep_their_retriability_and_non_error_bodies_are_unavailable() -> None:
    error = decode_error(503, {"error": "SOMETHING_NEW", "message": "m", "retriable": True}, "u")
    assert error.name == "SOMETHING_NEW" and error.retriable
    html = decode_error(502, None, "http://proxy")
    assert isinstance(html, ServiceUnavailable) and html.retriable
