"""``highwater dev`` creates its demo topic once the cluster lists enough brokers, and a refusal names its cause.

A refusal for too few live brokers while the controller's watch trailed the store
("replication factor 3 is larger than the 2 live brokers", found in a fresh-clone run)
was retried here once; the controller now reads the registrations before it places
(``tests/cluster/test_brokers_catch_up.py``), so every refusal is final.
"""

from __future__ import annotations

import pytest

from broker.cli.dev import DEMO_TOPIC, ensure_demo_topic
from broker.errors import InvalidConfig, InvalidReplicationFactor


class FormingCluster:
    """The admin calls ``ensure_demo_topic`` makes; the first ``refusals`` creates are refused for too few brokers."""

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


async def test_the_topic_is_created_once_with_the_asked_replication_factor() -> None:
    cluster = FormingCluster(refusals=0)
    await ensure_demo_topic(cluster, replication_factor=3)  # type: ignore[arg-type]
    assert cluster.created == [(DEMO_TOPIC, 3, 3)]


async def test_a_refusal_for_too_few_live_brokers_fails_at_once_naming_it() -> None:
    cluster = FormingCluster(refusals=1)
    with pytest.raises(RuntimeError, match="could not create the demo topic: replication factor 3 is larger"):
        await ensure_demo_topic(cluster, replication_factor=3)  # type: ignore[arg-type]
    assert cluster.created == []


async def test_any_other_refusal_fails_at_once_naming_it() -> None:
    cluster = FormingCluster(refusals=0, error=InvalidConfig("min-isr is wrong"))
    with pytest.raises(RuntimeError, match="could not create the demo topic: min-isr is wrong"):
        await ensure_demo_topic(cluster, replication_factor=3)  # type: ignore[arg-type]
    assert cluster.created == []
