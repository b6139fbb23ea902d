"""Consumer-group request bodies are validated strictly, as their published schemas say.

Fuzzing found ``"partitions": [false]`` accepted as partition 0 by pydantic's lax mode
while the schema says integers, and ``6891.0`` refused where JSON Schema calls it one.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from broker.server.routes_groups import CommitBody, HeartbeatBody


@pytest.mark.parametrize(
    "body",
    [
        {"member_epoch": 0, "owned_partitions": [{"topic": "t", "partitions": [False]}]},
        {"member_epoch": "0"},
        {"member_epoch": True},
        {"member_epoch": 0, "session_timeout_ms": 1000.5},
    ],
)
def test_heartbeat_refuses_values_of_another_type(body: dict) -> None:
    with pytest.raises(ValidationError):
        HeartbeatBody.model_validate(body)


@pytest.mark.parametrize(
    "entry",
    [
        {"topic_name": "t", "partition_id": False, "offset": 1},
        {"topic_name": "t", "partition_id": 0, "offset": "5"},
        {"topic_name": "t", "partition_id": 0, "offset": 5.5},
        {"topic_name": "t", "partition_id": 0, "offset": 2**63},
    ],
)
def test_commit_refuses_values_of_another_type(entry: dict) -> None:
    with pytest.raises(ValidationError):
        CommitBody.model_validate({"offsets": [entry]})


def test_well_typed_bodies_pass() -> None:
    heartbeat = HeartbeatBody.model_validate(
        {"member_epoch": 0, "subscribed_topics": ["t"], "owned_partitions": [{"topic": "t", "partitions": [0, 1]}]}
    )
    assert heartbeat.owned() == frozenset({("t", 0), ("t", 1)})
    commit = CommitBody.model_validate({"offsets": [{"topic_name": "t", "partition_id": 0, "offset": 5.0}]})
    assert commit.offsets[0].offset == 5, "JSON Schema's integer includes 5.0"
    assert (
        HeartbeatBody.model_validate({"member_epoch": 0, "rebalance_timeout_ms": 6891.0}).rebalance_timeout_ms == 6891
    )
