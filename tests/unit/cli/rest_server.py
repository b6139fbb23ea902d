"""A small in-memory server speaking the broker's REST shapes, for testing the CLI clients.

It listens on a real 127.0.0.1 socket in its own thread and event loop (the CLI
commands run their own ``asyncio.run``). It keeps real state: topics, and per
partition an append-only list of records whose length is both the log end offset
and the high watermark, so produce-then-consume round trips are genuine. Every
request is recorded in ``requests`` for assertions about what the CLI sent.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

from aiohttp import web

CLUSTER_ID = "test-cluster"


def error(status: int, name: str, message: str, code: int) -> web.Response:
    body = {"error_code": code, "error": name, "message": message, "retriable": False}
    return web.json_response(body, status=status)


@dataclass
class FakeTopic:
    partitions: list[list[dict]]
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)


class RestServer:
    def __init__(self) -> None:
        self.topics: dict[str, FakeTopic] = {}
        self.requests: list[tuple[str, str, dict, object]] = []
        self.authorizations: list[str | None] = []
        """The ``Authorization`` header of each request, in order (None when there was none)."""
        self.clusters_listed: list[dict] = [{"cluster_id": CLUSTER_ID, "controller_id": 1}]
        self.loop = asyncio.new_event_loop()
        self._appended = asyncio.Event()
        self.reader_waiting = threading.Event()
        """Set once a read has reached the end of a log and waits for appends (a following consumer)."""
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = ""

    def start(self) -> RestServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    def stop(self) -> None:
        assert self._runner is not None, "stop() before start()"
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        app = web.Application()
        base = "/v3/clusters/{c}/topics"
        app.router.add_get("/v3/clusters", self.clusters)
        app.router.add_get("/v3/clusters/{c}", self.cluster)
        app.router.add_get(base, self.list_topics)
        app.router.add_post(base, self.create_topic)
        app.router.add_get(base + "/{t}", self.get_topic)
        app.router.add_delete(base + "/{t}", self.delete_topic)
        app.router.add_get(base + "/{t}/partitions", self.partitions)
        app.router.add_post(base + "/{t}/records:batch", self.produce_batch)
        app.router.add_get(base + "/{t}/partitions/{p}/records", self.read_records)
        app.middlewares.append(self._record_request)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    @web.middleware
    async def _record_request(self, request: web.Request, handler):
        body = await request.json() if request.can_read_body else None
        self.requests.append((request.method, request.path, dict(request.query), body))
        self.authorizations.append(request.headers.get("Authorization"))
        return await handler(request)

    def append_from_test(self, topic: str, partition: int, values: list[str]) -> None:
        """Append STRING records as another producer would, from the test's thread."""
        self.append_entries_from_test(topic, partition, [{"value": {"type": "STRING", "data": v}} for v in values])

    def append_entries_from_test(self, topic: str, partition: int, entries: list[dict]) -> None:
        async def append() -> None:
            self._append(topic, partition, entries)

        asyncio.run_coroutine_threadsafe(append(), self.loop).result(5)

    def _append(self, topic: str, partition: int, entries: list[dict]) -> list[dict]:
        log = self.topics[topic].partitions[partition]
        successes = []
        for entry in entries:
            record = {
                "topic_name": topic,
                "partition_id": partition,
                "offset": len(log),
                "timestamp": int(time.time() * 1000),
                "key": entry.get("key"),
                "value": entry["value"],
                "headers": [],
            }
            log.append(record)
            successes.append({"partition_id": partition, "offset": record["offset"], "timestamp": record["timestamp"]})
        self._appended.set()
        self._appended = asyncio.Event()
        return successes

    async def clusters(self, request: web.Request) -> web.Response:
        return web.json_response({"data": self.clusters_listed})

    async def cluster(self, request: web.Request) -> web.Response:
        return web.json_response({"cluster_id": request.match_info["c"], "controller_id": 1})

    def _topic(self, request: web.Request) -> FakeTopic | None:
        return self.topics.get(request.match_info["t"])

    async def list_topics(self, request: web.Request) -> web.Response:
        data = [
            {"topic_name": name, "partitions_count": len(t.partitions), "replication_factor": t.replication_factor}
            for name, t in self.topics.items()
        ]
        return web.json_response({"data": data})

    async def create_topic(self, request: web.Request) -> web.Response:
        body = await request.json()
        name = body["topic_name"]
        if name in self.topics:
            return error(400, "TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.", 40002)
        configs = {c["name"]: c["value"] for c in body.get("configs", [])}
        count = body.get("partitions_count", 1)
        self.topics[name] = FakeTopic([[] for _ in range(count)], body.get("replication_factor", 1), configs)
        return web.json_response({"topic_name": name, "partitions_count": count}, status=201)

    async def get_topic(self, request: web.Request) -> web.Response:
        if self._topic(request) is None:
            return error(404, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic.", 40403)
        return web.json_response({"topic_name": request.match_info["t"]})

    async def delete_topic(self, request: web.Request) -> web.Response:
        if self.topics.pop(request.match_info["t"], None) is None:
            return error(404, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic.", 40403)
        return web.Response(status=204)

    async def partitions(self, request: web.Request) -> web.Response:
        topic = self._topic(request)
        if topic is None:
            return error(404, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic.", 40403)
        data = [
            {
                "partition_id": p,
                "leader_id": 1,
                "leader_epoch": 4,
                "replica_ids": [1, 2, 3],
                "isr": [1, 3],
                "log_start_offset": 0,
                "high_watermark": len(log),
                "log_end_offset": len(log) + 1,
            }
            for p, log in enumerate(topic.partitions)
        ]
        return web.json_response({"data": data})

    async def produce_batch(self, request: web.Request) -> web.Response:
        topic = self._topic(request)
        entries = (await request.json())["entries"]
        if topic is None:
            return error(404, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic.", 40403)
        failures = [
            {"id": str(i), "error_code": 41301, "message": "record too large"}
            for i, e in enumerate(entries)
            if len(e["value"]["data"]) > 100
        ]
        accepted = [e for e in entries if len(e["value"]["data"]) <= 100]
        successes = []
        for entry in accepted:
            successes += self._append(request.match_info["t"], entry.get("partition_id", 0), [entry])
        return web.json_response({"successes": successes, "failures": failures}, status=207)

    async def read_records(self, request: web.Request) -> web.Response:
        topic = self._topic(request)
        if topic is None:
            return error(404, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic.", 40403)
        log = topic.partitions[int(request.match_info["p"])]
        offset, max_records = int(request.query["offset"]), int(request.query["max_records"])
        if offset >= len(log) and int(request.query["timeout_ms"]) > 0:
            appended = self._appended
            self.reader_waiting.set()
            try:
                await asyncio.wait_for(appended.wait(), int(request.query["timeout_ms"]) / 1000)
            except TimeoutError:
                pass
        if offset > len(log):
            return error(416, "OFFSET_OUT_OF_RANGE", f"offset {offset} is outside [0, {len(log)}]", 41601)
        data = log[offset : offset + max_records]
        body = {"data": data, "next_offset": offset + len(data), "high_watermark": len(log), "log_start_offset": 0}
        return web.json_response(body)
