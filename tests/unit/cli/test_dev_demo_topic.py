"""``highwater dev`` creates its demo topic even while the controller still counts fewer live brokers.

Found in a fresh-clone run: broker 1 listed three brokers, the controller had seen two,
and the demo topic was refused ("replication factor 3 is larger than the 2 live brokers").
"""

from __future__ import annotations

import pytest

from broker.cli.dev import DEMO_TOPIC, ensure_demo_topic
from broker.errors import InvalidConfig, InvalidReplicationFactor


class FormingCluster:
    """The admin calls ``ensure_demo_topic`` makes, against a cluster whose controller lags."""

    def __init__(self, refusals: int, error: Exception | None = None) -> None:
        self.refusals = refusals
        self.error = error
        self.created: list[tuple[str, int, int]] = []

    async def list_brokers(self) -> list[dict]:
        return [{"broker_id": n} for n in (1, 2, 3)]

    async def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict) -> dict:
        if self.error is not None:
            raise self.error
        if self.refusals:
            self.refusals -= 1
            raise InvalidReplicationFactor("replication factor 3 is larger than the 2 live brokers")
        self.created.append((name, partitions, replication_factor))
        return {}

    async def list_partitions(self, topic: str) -> list[dict]:
        return [{"leader_id": 1, "isr": [1, 2, 3], "replica_ids": [1, 2, 3]} for _ in range(3)]


async def test_a_refusal_for_too_few_live_brokers_is_retried_until_the_topic_exists() -> None:
    cluster = FormingCluster(refusals=3)
    await ensure_demo_topic(cluster, replication_factor=3)  # type: ignore[arg-type]
    assert cluster.created == [(DEMO_TOPIC, 3, 3)]


async def test_any_other_refusal_fails_at_once_naming_it() -> None:
    cluster = FormingCluster(refusals=0, error=InvalidConfig("min-isr is wrong"))
    with pytest.raises(RuntimeError, match="could not create the demo topic: min-isr is wrong"):
        await ensure_demo_topic(cluster, replication_factor=3)  # type: ignore[arg-type]
    assert cluster.created == []
