"""``records:batch`` throughput through the JSON REST path, one broker process.

``python -m broker.bench.rest_batch [--requests 200] [--concurrency 4] [--acks 1]`` starts
one ``highwater serve`` process (``spawned_cluster(1)``), creates a one-partition topic,
and sends ``records:batch`` requests of 1 000 records with 100-byte STRING values from
``--concurrency`` concurrent connections, after a warm-up.
It prints records/s. The load generator runs in this process on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aiohttp

from broker.acks import Acks
from broker.bench.cluster import spawned_cluster

RECORDS_PER_REQUEST = 1000
VALUE_BYTES = 100


async def _run(url: str, requests: int, concurrency: int, acks: Acks) -> float:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{url}/v3/clusters") as reply:
            cluster_id = (await reply.json())["data"][0]["cluster_id"]
        topics = f"{url}/v3/clusters/{cluster_id}/topics"
        await session.post(topics, json={"topic_name": "bench", "partitions_count": 1, "replication_factor": 1})
        entries = [{"value": {"type": "STRING", "data": "x" * VALUE_BYTES}} for _ in range(RECORDS_PER_REQUEST)]
        payload = json.dumps({"entries": entries}).encode()
        target = f"{topics}/bench/records:batch?acks={acks.value}"

        async def send(count: int) -> None:
            for _ in range(count):
                async with session.post(target, data=payload, headers={"Content-Type": "application/json"}) as reply:
                    body = await reply.json()
                    if reply.status != 207 or body["failures"]:
                        raise SystemExit(f"produce failed: {body}")

        await send(concurrency)
        start = time.perf_counter()
        await asyncio.gather(*(send(requests // concurrency) for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
        return (requests // concurrency) * concurrency * RECORDS_PER_REQUEST / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--acks", default=Acks.ONE.value, choices=[choice.value for choice in Acks])
    args = parser.parse_args()
    acks = Acks(args.acks)
    with spawned_cluster(1) as brokers:
        rate = asyncio.run(_run(brokers[0].url, args.requests, args.concurrency, acks))
    print(
        f"records:batch, {RECORDS_PER_REQUEST} records x {VALUE_BYTES} B per request, acks={acks.value}, "
        f"concurrency {args.concurrency}: {rate:,.0f} records/s"
    )


if __name__ == "__main__":
    main()
