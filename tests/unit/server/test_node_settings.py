"""Broker-wide settings reach the parts that act on them."""

from __future__ import annotations

from pathlib import Path

from broker.node.broker_node import BrokerNode
from config.topic import TopicDefaults
from tests.unit.server.conftest import broker_settings


async def test_the_broker_default_for_unclean_election_reaches_the_controller(tmp_path: Path) -> None:
    settings = broker_settings(tmp_path / "data", topic_defaults=TopicDefaults(unclean_leader_election_enable=True))
    node = await BrokerNode.start(settings)
    try:
        assert node.controller.settings.unclean_leader_election_enable is True
    finally:
        await node.stop()
