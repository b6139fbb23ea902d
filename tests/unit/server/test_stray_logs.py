"""A broker that was down while its topic was deleted removes the leftover log when it returns.

Two in-process brokers on one sqlite store, real logs in temp dirs. Without the sweep
the stopped broker kept the deleted topic's directory for ever, and a topic created
again under that name started from the old records and the old checkpointed HW.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.node.broker_node import BrokerNode
from broker.storage.log_manager import partition_directory_name
from broker.topics.new_topic import NewTopic
from tests.unit.server.conftest import broker_settings


async def _start(tmp_path: Path, node_id: int) -> BrokerNode:
    settings = broker_settings(
        tmp_path / f"data-{node_id}",
        node_id=node_id,
        metadata_store=f"sqlite://{tmp_path}/metadata.db",
        broker_session_timeout_ms=1000,
        broker_heartbeat_interval_ms=200,
    )
    return await BrokerNode.start(settings)


async def _create_on_both(nodes: list[BrokerNode], topic: str) -> None:
    """Through the controller (in-process brokers serve no HTTP, so nothing can be forwarded)."""
    await _wait_for(lambda: any(n.controller.is_active for n in nodes))
    [node] = [n for n in nodes if n.controller.is_active]
    await node.controller_gateway.create_topic(
        NewTopic(name=topic, partitions_count=1, replication_factor=2, configs={})
    )


async def _wait_for(predicate, timeout_s: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_log_of_a_topic_deleted_while_its_broker_was_down_is_removed_on_return(tmp_path: Path) -> None:
    first, second = await _start(tmp_path, 1), await _start(tmp_path, 2)
    directory = tmp_path / "data-1" / partition_directory_name("gone", 0)
    try:
        await _create_on_both([first, second], "gone")
        await _wait_for(lambda: ("gone", 0) in first.replicas.partitions)
        assert directory.is_dir()
        await first.stop()
        await _wait_for(lambda: second.controller.is_active)
        await second.controller_gateway.delete_topic("gone")
        assert directory.is_dir(), "the stopped broker cannot have seen the delete"
        first = await _start(tmp_path, 1)
        assert not directory.exists()
        assert first.replicas.logs.get("gone", 0) is None
    finally:
        await first.stop()
        await second.stop()
