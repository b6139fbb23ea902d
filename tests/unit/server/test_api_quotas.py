"""Byte-rate quotas through the API: a principal over its rate is slowed to it, far over it is refused.

The broker measures over 11 samples of 100 ms (a fresh meter lets quota × 1 s through
undelayed, and refuses a larger request) and throttles at most 1 s, so the tests are short.
Rates are asserted with wide margins: the claim is "about the quota, never far above it",
not a timing. A throttle that must be there comes from bytes that stay inside one
1.1 s window however slowly the machine sends them: a slow machine only lowers the rate,
and a delay is a lower bound the formula sets, never one a fast machine could miss.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.cluster.security_store import SecurityStore
from broker.node.broker_node import BrokerNode
from broker.record.codec import RecordInput, encode_batch
from broker.security.quota_limits import QuotaLimits
from broker.security.scram import new_credential
from broker.server.app import create_app
from broker.server.throttling import THROTTLE_HEADER
from tests.unit.server.conftest import broker_settings, error_of, wait_until_ready

PASSWORD = "correct horse"
TOPIC = "metered"
QUOTA = 20_000
RECORD = {"value": {"data": "x" * 2_000}}
RECORD_BYTES = len(json.dumps(RECORD).encode())


def basic(user: str) -> dict[str, str]:
    return {"Authorization": aiohttp.encode_basic_auth(user, PASSWORD)}


@dataclass
class Quotas:
    client: TestClient
    node: BrokerNode

    @property
    def topic_path(self) -> str:
        return f"/v3/clusters/{self.node.cluster_id}/topics/{TOPIC}"

    async def set_quota(self, principal: str, limits: QuotaLimits | None) -> None:
        store = SecurityStore(self.node.store)
        if limits is None:
            await store.remove_quota(principal)
        else:
            await store.set_quota(principal, limits)
        async with asyncio.timeout(10):
            while self.node.security.view.snapshot.quotas.get(principal) != limits:
                await self.node.security.view.wait_changed()

    async def produce(self, user: str, record: dict[str, Any] = RECORD) -> aiohttp.ClientResponse:
        response = await self.client.post(f"{self.topic_path}/records", json=record, headers=basic(user))
        await response.read()
        return response

    def log_end_offset(self) -> int:
        return next(d.log_end_offset for d in self.node.describer.metrics() if d.topic == TOPIC)


@pytest.fixture
async def quotas(tmp_path: Path) -> AsyncIterator[Quotas]:
    security = {
        "authentication": "basic",
        "super_users": ["admin"],
        "allow_if_no_acl": True,
        "quota_window_num": 11,
        "quota_window_size_ms": 100,
        "quota_max_throttle_ms": 1000,
    }
    node = await BrokerNode.start(broker_settings(tmp_path / "data", security=security))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            store = SecurityStore(node.store)
            for user in ("admin", "alice", "bob"):
                await store.put_user(user, new_credential(PASSWORD))
            api = Quotas(client, node)
            body = {"topic_name": TOPIC, "partitions_count": 1, "replication_factor": 1}
            created = await client.post(f"/v3/clusters/{node.cluster_id}/topics", json=body, headers=basic("admin"))
            assert created.status == 201, await created.text()
            await api.set_quota("User:alice", QuotaLimits(producer_byte_rate=QUOTA, consumer_byte_rate=QUOTA))
            yield api
    finally:
        await node.stop()


def throttle_of(response: aiohttp.ClientResponse, body: dict[str, Any]) -> int:
    """The throttle an answer reports, checking the header and the field agree."""
    header = int(response.headers.get(THROTTLE_HEADER, "0"))
    assert body.get("throttle_time_ms", 0) == header
    return header


async def test_a_user_under_its_quota_is_not_delayed(quotas: Quotas) -> None:
    for _ in range(3):
        response = await quotas.produce("alice", {"value": {"data": "small"}})
        assert response.status == 200
        assert throttle_of(response, await response.json()) == 0


async def test_a_user_far_over_its_quota_is_slowed_to_about_it_and_others_are_not(quotas: Quotas) -> None:
    started = time.monotonic()
    sent, throttles = 0, []
    for _ in range(25):
        response = await quotas.produce("alice")
        assert response.status == 200, await response.text()
        sent += RECORD_BYTES
        throttles.append(throttle_of(response, await response.json()))
    elapsed = time.monotonic() - started
    assert throttles[0] == 0, "a fresh meter lets a burst through"
    assert any(throttles), "25 requests at once are 2.5 times the quota: some answers must wait"
    assert elapsed >= sum(throttles) / 1000
    assert sent / elapsed <= 2 * QUOTA

    for _ in range(10):
        response = await quotas.produce("bob")
        assert response.status == 200
        assert throttle_of(response, await response.json()) == 0


async def test_a_request_beyond_the_hard_limit_is_refused_and_appends_nothing(quotas: Quotas) -> None:
    await quotas.produce("alice", {"value": {"data": "first"}})
    before = quotas.log_end_offset()
    response = await quotas.produce("alice", {"value": {"data": "x" * 60_000}})
    body = await error_of(response, 429)
    assert body["error"] == "THROTTLING_QUOTA_EXCEEDED" and body["retriable"]
    assert "User:alice" in body["message"] and f"quota of {QUOTA} bytes/s" in body["message"]
    assert int(response.headers["Retry-After"]) >= 1
    assert quotas.log_end_offset() == before
    small = await quotas.produce("alice", {"value": {"data": "after"}})
    assert small.status == 200 and throttle_of(small, await small.json()) == 0
    assert quotas.log_end_offset() == before + 1


async def test_records_batch_and_binary_answers_carry_the_throttle(quotas: Quotas) -> None:
    entries = [{"value": {"data": "x" * 4_500}} for _ in range(4)]
    throttles = []
    for _ in range(2):
        response = await quotas.client.post(
            f"{quotas.topic_path}/records:batch", json={"entries": entries}, headers=basic("alice")
        )
        assert response.status == 207
        throttles.append(throttle_of(response, await response.json()))
    assert throttles[0] == 0 and throttles[1] > 0
    batch = encode_batch([RecordInput(None, b"x" * 8_000, [], 1_700_000_000_000)])
    response = await quotas.client.post(
        f"{quotas.topic_path}/partitions/0/batches",
        data=batch,
        headers={**basic("alice"), "Content-Type": "application/vnd.kafka.batch.v2"},
    )
    assert response.status == 200, await response.text()
    assert throttle_of(response, await response.json()) > 0


async def test_a_reader_over_its_consumer_quota_gets_delayed_answers(quotas: Quotas) -> None:
    for _ in range(15):
        await quotas.produce("bob")
    path = f"{quotas.topic_path}/partitions/0/records"
    throttles = []
    for accept in ("application/json", "application/vnd.kafka.batch.v2"):
        response = await quotas.client.get(
            path, params={"offset": "0", "max_bytes": "25000"}, headers={**basic("alice"), "Accept": accept}
        )
        assert response.status == 200
        throttles.append(int(response.headers.get(THROTTLE_HEADER, "0")))
        if accept == "application/json":
            assert (await response.json())["throttle_time_ms"] == throttles[-1]
    assert all(throttle > 0 for throttle in throttles)
    response = await quotas.client.get(path, params={"offset": "0", "max_bytes": "15000"}, headers=basic("bob"))
    assert THROTTLE_HEADER not in response.headers


async def test_removing_the_quota_lifts_the_throttle_and_forgets_the_meter(quotas: Quotas) -> None:
    throttled = 0
    while throttled == 0:
        response = await quotas.produce("alice")
        throttled = throttle_of(response, await response.json())
    assert len(quotas.node.security.quotas) == 1
    await quotas.set_quota("User:alice", None)
    assert len(quotas.node.security.quotas) == 0
    for _ in range(10):
        response = await quotas.produce("alice")
        assert throttle_of(response, await response.json()) == 0


async def test_a_stream_is_metered_chunk_by_chunk_and_slowed(quotas: Quotas) -> None:
    chunks: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def body() -> AsyncIterator[bytes]:
        while (chunk := await chunks.get()) is not None:
            yield chunk

    record = json.dumps({"value": {"data": "x" * 4_000}}).encode()
    chunks.put_nowait(record)
    started = time.monotonic()
    response = await quotas.client.post(
        f"{quotas.topic_path}/records",
        data=body(),
        headers={**basic("alice"), "Content-Type": "application/json"},
    )
    assert response.status == 200
    reports = [json.loads(await asyncio.wait_for(response.content.readline(), 5))]
    for _ in range(7):
        chunks.put_nowait(record)
        reports.append(json.loads(await asyncio.wait_for(response.content.readline(), 5)))
    chunks.put_nowait(None)
    await response.read()
    assert [report["offset"] for report in reports] == list(range(8))
    assert time.monotonic() - started >= 0.3
