"""A tiny application that uses the client libraries the way a user's program does.

Run as ``python -m tests.clients.client_app URL TOPIC GROUP [--log-debug]``: it produces
records with both producers (async and sync), reads them back with an assigned consumer
and with a group member that commits, and writes nothing of its own. With
``--log-debug`` it configures logging as an application would
(``logging.basicConfig(level=DEBUG)``) before touching the clients; without it, it
configures nothing, so whatever reaches stdout or stderr came from the libraries.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from consumer import Consumer, TopicPartition
from producer import Producer, SyncProducer

RECORDS = 20
PARTITIONS = 2


async def _read(consumer: Consumer, count: int) -> int:
    seen = 0
    async with asyncio.timeout(20):
        while seen < count:
            seen += sum(len(batch) for batch in (await consumer.getmany(timeout_ms=500)).values())
    return seen


async def main(url: str, topic: str, group: str) -> None:
    async with Producer(url, acks="all", linger_ms=0) as producer:
        sent = [await producer.send(topic, f"async-{index}".encode()) for index in range(RECORDS)]
        await asyncio.gather(*sent)
    with SyncProducer(url, acks="all") as sync_producer:
        for index in range(RECORDS):
            sync_producer.send(topic, f"sync-{index}".encode())
        sync_producer.flush()
    async with Consumer(url, auto_offset_reset="earliest") as assigned:
        assigned.assign([TopicPartition(topic, partition) for partition in range(PARTITIONS)])
        await _read(assigned, 2 * RECORDS)
    settings = {"auto_offset_reset": "earliest", "session_timeout_ms": 2000, "heartbeat_interval_ms": 300}
    async with Consumer(url, group_id=group, enable_auto_commit=False, **settings) as member:
        member.subscribe([topic])
        await _read(member, 2 * RECORDS)
        await member.commit()


if __name__ == "__main__":
    if "--log-debug" in sys.argv:
        logging.basicConfig(level=logging.DEBUG)
    asyncio.run(main(*sys.argv[1:4]))
