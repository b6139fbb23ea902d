"""The server's shutdown ends the long polls in flight, so a stopping broker is not held up by them.

aiohttp waits for every request in flight before the app is cleaned up; without the
shutdown hook a consumer parked on a long poll kept its broker from stopping for the
poll's whole wait (10 s by default). Found by the test harness, whose cluster
teardowns took exactly that long after a consumer test.
"""

from __future__ import annotations

import asyncio

from tests.support.waiting import wait_until_async
from tests.unit.server.conftest import Api

LONG_POLL_MS = 30_000
"""The longest a read may ask for (``fetch_max_wait_ms``'s default)."""


async def test_a_parked_read_answers_empty_when_the_server_shuts_down(api: Api) -> None:
    await api.create_topic("parked")
    read = asyncio.create_task(api.read("parked", offset=0, timeout_ms=LONG_POLL_MS))
    partition = api.node.replicas.partitions[("parked", 0)]

    async def parked() -> bool:
        return partition.hw_moved.waiting > 0

    await wait_until_async(parked, "the read to park on the partition", 10)
    await api.client.app.shutdown()
    async with asyncio.timeout(LONG_POLL_MS / 1000 / 2):  # half the poll: only an ended poll answers in time
        answer = await read
    assert answer["data"] == []
