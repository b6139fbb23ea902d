"""Where the time of a lone produce goes: ``python -m broker.bench.latency_trace [--acks 1]``.

Spawns three ``highwater serve`` processes with ``--log-level debug`` (the only debug
events on the produce path are the ``trace.*`` points of ``broker.replica_io.trace``),
creates an RF 3 topic with min ISR 2, sends lone acks=all batches of one record to the
leader at a steady rate, one at a time, then joins the brokers' trace lines by
(topic, partition, offset) and prints the budget: per stage, p50 and p99 in µs. With
``--acks 1`` it is one broker, an RF 1 topic and acks=1 writes: the budget of the issue's
"lone acks=1 on one broker" figure, which has no replication stages.

Before the brokers start, the same client sends the same one-record body to an aiohttp
echo (``broker.bench.baseline``) at the same rate: the floor of one round trip, printed
under the budget so every stage can be read against it.

Every timestamp is ``time.monotonic_ns()``, one clock for every process on the host,
so stages that cross processes (the leader answering a fetch, the follower receiving
it) subtract directly. The follower stages are those of the follower whose report
raised the HW last: the one the acknowledgement waited for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from broker.bench.baseline import ECHO_PATH, baseline_server
from broker.bench.cluster import STOP_TIMEOUT_S, prepare_topic, start_registered_brokers, wait_for_brokers
from broker.cli.dev import stop_brokers
from broker.client.http import ClusterClient
from broker.clock import wall_clock_ms
from broker.record.codec import encode_batch
from broker.server.params import BATCH_CONTENT_TYPE

Key = tuple[str, int, int]

STAGES: tuple[tuple[str, str, str], ...] = (
    ("client send -> leader routed the request", "client.sent", "produce.received"),
    ("middlewares (metrics ... catch-up)", "produce.received", "produce.entered"),
    ("handler -> append start (parse, lock)", "produce.entered", "leader.append_start"),
    ("append (executor hop + write)", "leader.append_start", "leader.appended"),
    ("appended -> follower fetch woken", "leader.appended", "leader.fetch_woken"),
    ("woken -> fetch answered (read, encode)", "leader.fetch_woken", "leader.fetch_answered"),
    ("fetch answered -> follower received", "leader.fetch_answered", "follower.fetch_received"),
    ("follower append", "follower.fetch_received", "follower.appended"),
    ("follower fsync", "follower.appended", "follower.fsynced"),
    ("follower fsynced -> next fetch sent", "follower.fsynced", "follower.fetch_sent"),
    ("next fetch sent -> leader received", "follower.fetch_sent", "leader.fetch_received"),
    ("leader received -> HW raised", "leader.fetch_received", "leader.hw_raised"),
    ("HW raised -> acks waiter resumed", "leader.hw_raised", "leader.acked"),
    ("acked -> handler answers", "leader.acked", "produce.answered"),
    ("handler answers -> client received", "produce.answered", "client.received"),
)
ACKS_ONE_STAGES: tuple[tuple[str, str, str], ...] = (
    *STAGES[:4],
    ("appended -> handler answers", "leader.appended", "produce.answered"),
    STAGES[-1],
)
"""acks=1 answers once the bytes are in the OS: no follower, no high watermark on the path."""
SIDE_STAGES: tuple[tuple[str, str, str], ...] = (
    ("leader fsync (group commit)", "leader.fsync_start", "leader.fsync_end"),
    ("leader appended -> leader fsync end", "leader.appended", "leader.fsync_end"),
    ("handler entered -> answers", "produce.entered", "produce.answered"),
    ("client round trip", "client.sent", "client.received"),
)
ECHO_STAGE = "aiohttp echo round trip"


@dataclass
class Request:
    """The timestamps of one produced offset, leader-side and per follower."""

    leader: dict[str, int] = field(default_factory=dict)
    followers: dict[int, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))


async def _lone_posts(url: str, params: dict[str, str], count: int, rate: float) -> list[tuple[dict, int, int]]:
    """``count`` one-record batches POSTed to ``url`` one at a time at ``rate``; [(answer, sent, received)]."""
    posted: list[tuple[dict, int, int]] = []
    interval_ns = int(1e9 / rate)
    async with aiohttp.ClientSession() as session:
        next_ns = time.monotonic_ns()
        for index in range(count):
            batch = encode_batch([(None, b"x" * 100)], base_timestamp=wall_clock_ms())
            start = time.monotonic_ns()
            async with session.post(
                url, data=batch, params=params, headers={"Content-Type": BATCH_CONTENT_TYPE}
            ) as reply:
                body = await reply.json()
            received = time.monotonic_ns()
            if reply.status != 200:
                raise RuntimeError(f"request {index} to {url} answered {reply.status}: {body}")
            posted.append((body, start, received))
            next_ns += interval_ns
            delay = next_ns - time.monotonic_ns()
            if delay > 0:
                await asyncio.sleep(delay / 1e9)
    return posted


async def _produce(
    urls: dict[int, str], topic: str, count: int, rate: float, acks: str
) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Lone batches to the partition-0 leader; (leader id, partition, [(offset, sent, received)])."""
    url = urls[1]
    client = ClusterClient([url])
    try:
        info = (await client.partitions(topic))[0]
        cluster_id = (await client.json_call("GET", f"{url}/v3/clusters"))["data"][0]["cluster_id"]
    finally:
        await client.close()
    assert info.leader_id is not None
    path = f"{urls[info.leader_id]}/v3/clusters/{cluster_id}/topics/{topic}/partitions/{info.partition}/batches"
    posted = await _lone_posts(path, {"acks": acks}, count, rate)
    return info.leader_id, info.partition, [(body["last_offset"], start, received) for body, start, received in posted]


def _echo_round_trips(count: int, rate: float) -> list[int]:
    """The same client and body against the aiohttp echo: the floor of one round trip, in ns."""
    with baseline_server() as url:
        posted = asyncio.run(_lone_posts(f"{url}{ECHO_PATH}", {}, count, rate))
    return [received - start for _, start, received in posted]


def _events(path: Path) -> list[dict]:
    events = []
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if str(event.get("event", "")).startswith("trace."):
            events.append(event)
    return events


def _join(logs: dict[int, list[dict]], leader_id: int, topic: str, partition: int) -> dict[int, Request]:
    """Per offset, the first time each event concerned it; a woken fetch is matched by replica and time."""
    requests: dict[int, Request] = defaultdict(Request)
    woken: dict[int, list[int]] = defaultdict(list)

    def keep(target: dict[str, int], name: str, t_ns: int) -> None:
        target.setdefault(name, t_ns)

    for broker_id, events in logs.items():
        for event in events:
            name = event["event"].removeprefix("trace.")
            t_ns = event["t_ns"]
            if name == "leader.fetch_woken":
                woken[event["replica_id"]].append(t_ns)
                continue
            if event.get("topic") != topic or event.get("partition") != partition:
                continue
            if name == "leader.hw_raised":
                keep(requests[event["high_watermark"] - 1].leader, name, t_ns)
            elif name in ("leader.fetch_received", "leader.fetch_answered"):
                keep(requests[event["offset"]].followers[event["replica_id"]], name, t_ns)
            elif name.startswith("follower."):
                keep(requests[event["offset"]].followers[broker_id], name, t_ns)
            elif broker_id == leader_id:
                if name == "leader.appended":
                    keep(requests[event["offset"]].leader, "leader.append_start", event["start_ns"])
                if name == "produce.answered":
                    keep(requests[event["offset"]].leader, "produce.entered", event["entered_ns"])
                    keep(requests[event["offset"]].leader, "produce.received", event["received_ns"])
                keep(requests[event["offset"]].leader, name, t_ns)
    for request in requests.values():
        for replica_id, times in request.followers.items():
            answered = times.get("leader.fetch_answered")
            appended = request.leader.get("leader.appended")
            if answered is None or appended is None:
                continue
            candidates = [t for t in woken[replica_id] if appended <= t <= answered]
            if candidates:
                times["leader.fetch_woken"] = candidates[0]
    return requests


def _critical(request: Request) -> dict[str, int]:
    """The leader's times merged with those of the follower whose report came last."""
    reported = [(f["leader.fetch_received"], f) for f in request.followers.values() if "leader.fetch_received" in f]
    follower = max(reported, key=lambda pair: pair[0])[1] if reported else {}
    return {**request.leader, **follower}


def _percentile(values: list[int], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1000


def _line(name: str, deltas: list[int]) -> str:
    return f"{name:<44} {_percentile(deltas, 0.5):>9.0f} {_percentile(deltas, 0.99):>9.0f} {len(deltas):>6}"


def budget_table(rows: list[dict[str, int]], echo_ns: list[int], acks: str = "all", left_out: int = 0) -> str:
    """Per stage p50, p99 and how many requests had it; ``left_out`` requests overlapped a trace flush."""
    lines = [f"{'stage':<44} {'p50 µs':>9} {'p99 µs':>9} {'n':>6}"]
    if left_out:
        lines.append(f"-- {left_out} requests left out: a broker was logging trace events meanwhile")
    critical = STAGES if acks == "all" else ACKS_ONE_STAGES
    for title, stages in (("critical path", critical), ("alongside", SIDE_STAGES)):
        lines.append(f"-- {title}")
        for name, start, end in stages:
            deltas = [row[end] - row[start] for row in rows if start in row and end in row]
            if deltas:
                lines.append(_line(name, deltas))
    lines.append("-- floor (same client, same body, same rate)")
    lines.append(_line(ECHO_STAGE, echo_ns))
    return "\n".join(lines)


def run(count: int, warmup: int, rate: float, partitions: int = 1, acks: str = "all") -> str:
    """The budget table; with ``partitions`` > 1 the topic has that many (idle but one), to show what they cost.

    ``acks`` "all": three brokers, RF 3, min ISR 2; "1": one broker, RF 1.
    """
    echo_ns = _echo_round_trips(warmup + count, rate)[warmup:]
    brokers_count, replication_factor, min_insync = (3, 3, 2) if acks == "all" else (1, 1, 1)
    with tempfile.TemporaryDirectory(prefix="highwater-trace-") as directory:
        root = Path(directory)
        store = f"sqlite://{root / 'metadata.db'}"
        brokers = start_registered_brokers(brokers_count, root, store, {}, "--log-level", "debug")
        urls = {broker.node_id: broker.url for broker in brokers}
        try:
            asyncio.run(wait_for_brokers(list(urls.values()), brokers_count))
            topic = asyncio.run(prepare_topic(urls[1], partitions, replication_factor, min_insync, prefix="trace"))
            leader_id, partition, sent = asyncio.run(_produce(urls, topic, warmup + count, rate, acks))
        finally:
            stop_brokers(brokers, STOP_TIMEOUT_S)
        logs = {broker.node_id: _events(root / f"broker-{broker.node_id}.log") for broker in brokers}
    requests = _join(logs, leader_id, topic, partition)
    flushes = flush_spans(logs)
    rows = []
    for offset, start, received in sent[warmup:]:
        if any(flush_start <= received and start <= flush_end for flush_start, flush_end in flushes):
            continue
        row = _critical(requests[offset])
        row["client.sent"], row["client.received"] = start, received
        rows.append(row)
    return budget_table(rows, echo_ns, acks, left_out=count - len(rows))


def flush_spans(logs: dict[int, list[dict]]) -> list[tuple[int, int]]:
    """When each broker was logging its kept trace events (``trace.flushed``): a request that
    overlapped one was held up by the tracing itself."""
    return [
        (event["start_ns"], event["t_ns"])
        for events in logs.values()
        for event in events
        if event["event"] == "trace.flushed"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="measured requests")
    parser.add_argument("--warmup", type=int, default=100, help="requests sent first and left out")
    parser.add_argument("--rate", type=float, default=200.0, help="requests per second (one at a time)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of the topic; requests go to one")
    parser.add_argument("--acks", choices=("all", "1"), default="all", help="all: 3 brokers, RF 3; 1: one broker, RF 1")
    args = parser.parse_args()
    print(run(args.count, args.warmup, args.rate, args.partitions, args.acks))


if __name__ == "__main__":
    main()
