"""JSON produce larger than one batch: split by ``max.message.bytes``, only a record too large alone fails."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.node.broker_node import BrokerNode
from broker.record.decode import iter_records
from broker.record.header import iter_batches
from broker.server.app import create_app
from broker.server.routes_produce import PRODUCER_KEY
from tests.unit.server.conftest import Api, broker_settings, wait_until_ready

MIB = 1024 * 1024
BATCH = "application/vnd.kafka.batch.v2"
ENTRY_BYTES = 5 * 1024


@pytest.fixture
async def roomy_api(tmp_path: Path) -> AsyncIterator[Api]:
    """A broker whose request limit takes a thousand 5 KB entries in one ``records:batch``."""
    node = await BrokerNode.start(broker_settings(tmp_path / "data", max_request_bytes=16 * MIB))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            yield Api(client, node)
    finally:
        await node.stop()


async def stored_batches(api: Api, topic: str) -> bytes:
    response = await api.client.get(
        f"{api.partition(topic, 0)}/records",
        params={"offset": "0", "max_bytes": str(16 * MIB)},
        headers={"Accept": BATCH},
    )
    assert response.status == 200
    return await response.read()


def entry(index: int, size: int) -> dict:
    return {"id": f"e{index}", "value": {"type": "STRING", "data": f"{index:06d}".ljust(size, "x")}}


async def test_a_thousand_5kb_entries_are_appended_in_as_many_batches_as_max_message_bytes_needs(
    roomy_api: Api,
) -> None:
    api = roomy_api
    await api.create_topic("t", max_message_bytes=str(MIB))
    entries = [entry(i, ENTRY_BYTES) for i in range(1000)]
    response = await api.client.post(f"{api.topic('t')}/records:batch", json={"entries": entries})
    assert response.status == 207
    body = await response.json()
    assert body["failures"] == []
    assert [(s["id"], s["partition_id"], s["offset"]) for s in body["successes"]] == [
        (f"e{i}", 0, i) for i in range(1000)
    ]
    stored = await stored_batches(api, "t")
    headers = list(iter_batches(stored))
    assert all(header.size <= MIB for header in headers)
    assert 5 <= len(headers) <= 6, "each batch holds as many 5 KB records as 1 MiB takes"
    prefixes: list[bytes] = []
    for record in iter_records(stored):
        assert record.value is not None
        prefixes.append(record.value[:6])
    assert prefixes == [f"{i:06d}".encode() for i in range(1000)]


@pytest.mark.parametrize("acks", ["all", "0"])
async def test_only_the_entry_too_large_alone_fails_and_its_neighbours_are_appended_in_order(
    roomy_api: Api, acks: str
) -> None:
    api = roomy_api
    await api.create_topic("t", max_message_bytes="12000")
    sizes = [5000, 5000, 5000, 20_000, 5000, 5000]
    entries = [entry(i, size) for i, size in enumerate(sizes)]
    response = await api.client.post(
        f"{api.topic('t')}/records:batch", json={"entries": entries}, params={"acks": acks}
    )
    assert response.status == 207
    body = await response.json()
    assert [(f["id"], f["error"]) for f in body["failures"]] == [("e3", "MESSAGE_TOO_LARGE")]
    expected_offsets = [0, 1, 2, 3, 4] if acks == "all" else [None] * 5
    assert [(s["id"], s["offset"]) for s in body["successes"]] == list(
        zip(["e0", "e1", "e2", "e4", "e5"], expected_offsets)
    )
    await api.client.app[PRODUCER_KEY].drain()
    last = await api.read("t", offset=4, timeout_ms=5000)
    assert [record["offset"] for record in last["data"]] == [4], "a long poll waits until offset 4 is visible"
    read = await api.read("t", offset=0, max_records=10)
    assert [record["value"]["data"][:6] for record in read["data"]] == [f"{i:06d}" for i in (0, 1, 2, 4, 5)]
    assert len(list(iter_batches(await stored_batches(api, "t")))) == 3
