"""``highwater dev`` turns the Kafka listener on and prints a ``bootstrap.servers`` that works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.support.brokers import free_port_run
from tests.support.dev_cluster import read_until_ready, start_dev, stop_dev

pytestmark = pytest.mark.integration


def test_dev_prints_a_bootstrap_that_lists_every_broker(tmp_path: Path) -> None:
    kafka_base_port = free_port_run(3)
    process = start_dev(tmp_path / "dev", free_port_run(3), kafka_base_port=kafka_base_port)
    try:
        printed = read_until_ready(process)
        found = re.search(r"bootstrap\.servers=(\S+)", printed)
        assert found is not None, printed
        bootstrap = found.group(1)
        addresses = bootstrap.split(",")
        assert addresses == [f"127.0.0.1:{kafka_base_port + i}" for i in range(3)], "--kafka-base-port is honoured"
        metadata = AdminClient({"bootstrap.servers": addresses[0]}).list_topics(timeout=10)
        assert sorted(f"{b.host}:{b.port}" for b in metadata.brokers.values()) == sorted(addresses)
        assert len(metadata.topics["demo"].partitions) == 3
    finally:
        assert stop_dev(process) == 0
