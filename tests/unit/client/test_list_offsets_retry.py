"""``ClusterClient.list_offsets`` asks again while the answer is retriable, against a broker stand-in on loopback.

The stand-in answers the REST shapes the client reads (cluster, brokers, partitions) and
scripts ``…/offset``: a new leader answers ``OFFSET_NOT_AVAILABLE`` until its HW reaches
its epoch's start (KIP-207), which a seek to the end must wait out, not fail on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from broker.client.http import ClusterClient
from broker.client.types import TopicPartition
from broker.errors import OffsetNotAvailable, UnknownTopicOrPartition

CLUSTER = "stand-in"
NOT_AVAILABLE = {"error_code": 50306, "error": "OFFSET_NOT_AVAILABLE", "message": "catching up", "retriable": True}


class Offsets:
    """``…/offset`` answers: ``not_available`` retriable refusals first, then the offsets."""

    def __init__(self, not_available: int) -> None:
        self.not_available = not_available
        self.asked = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.asked += 1
        if request.match_info["topic"] != "orders":
            body = {"error_code": 40403, "error": "UNKNOWN_TOPIC_OR_PARTITION", "message": "no", "retriable": False}
            return web.json_response(body, status=404)
        if self.asked <= self.not_available:
            return web.json_response(NOT_AVAILABLE, status=503)
        return web.json_response({"earliest_offset": 2, "latest_offset": 40, "log_end_offset": 41})


async def _serve(offsets: Offsets) -> AsyncIterator[str]:
    app = web.Application()
    base = f"/v3/clusters/{CLUSTER}"

    async def clusters(request: web.Request) -> web.Response:
        return web.json_response({"data": [{"cluster_id": CLUSTER}]})

    async def brokers(request: web.Request) -> web.Response:
        return web.json_response({"data": [{"broker_id": 1, "url": url}]})

    async def partitions(request: web.Request) -> web.Response:
        return web.json_response({"data": [{"partition_id": 0, "leader_id": 1, "leader_epoch": 3}]})

    app.router.add_get("/v3/clusters", clusters)
    app.router.add_get(f"{base}/brokers", brokers)
    app.router.add_get(base + "/topics/{topic}/partitions", partitions)
    app.router.add_get(base + "/topics/{topic}/partitions/0/offset", offsets.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}"
    try:
        yield url
    finally:
        await runner.cleanup()


@pytest.fixture
def offsets() -> Offsets:
    return Offsets(not_available=3)


@pytest.fixture
async def url(offsets: Offsets) -> AsyncIterator[str]:
    async for served in _serve(offsets):
        yield served


async def test_offsets_not_available_yet_are_asked_again_until_they_are(offsets: Offsets, url: str) -> None:
    client = ClusterClient([url], request_timeout_ms=5_000)
    try:
        answer = await client.list_offsets(TopicPartition("orders", 0))
    finally:
        await client.close()
    assert (answer.earliest_offset, answer.latest_offset, answer.log_end_offset) == (2, 40, 41)
    assert offsets.asked == 4


async def test_a_retriable_answer_is_raised_once_the_request_timeout_has_passed(offsets: Offsets, url: str) -> None:
    offsets.not_available = 1_000
    client = ClusterClient([url], request_timeout_ms=300)
    try:
        with pytest.raises(OffsetNotAvailable):
            await client.list_offsets(TopicPartition("orders", 0))
    finally:
        await client.close()
    assert offsets.asked <= 4, "asked at most every 100 ms within 300 ms"


async def test_an_answer_that_is_not_retriable_is_raised_at_once(offsets: Offsets, url: str) -> None:
    client = ClusterClient([url], request_timeout_ms=5_000)
    try:
        with pytest.raises(UnknownTopicOrPartition):
            await client.list_offsets(TopicPartition("payments", 0))
    finally:
        await client.close()
    assert offsets.asked == 1
