"""``highwater bench scale --metadata N``: the cluster's metadata at N partitions, against its targets.

Four figures on spawned brokers and one topic of N partitions (replication factor RF):

1. **create**: from the create request until it is answered, and until every partition
   has a leader and a full ISR (``cluster.prepare_topic``'s readiness);
2. **idle CPU**: each broker's CPU time (``/proc/<pid>/stat``) over ``idle_s``, starting
   ``idle_s`` after the topic is ready with nothing produced, as % of one core. The wait
   lets the work a creation leaves behind finish first (the first HW checkpoint of every
   new partition, the controller's first leader-balance scan of the new records), so the
   window reads the cluster at rest;
3. **controller failover**: the controller is killed (SIGKILL: no controlled shutdown,
   its leaderships stay where they were). Its death is noticed when its lease expires
   (``broker_session_timeout_ms``, 6 s unless set), so the figure comes in two parts:
   until another broker is listed as controller (the lease), and from then until every
   partition is led by a live broker (the new controller's work). "Led" is read two
   ways: in the metadata store, where a watch sees each record the moment it is written
   (what the target is held to), and in a survivor's partitions listing, polled every
   ``POLL_S`` (what a client sees; one listing of 10 000 partitions takes 0.4 to 1.6 s
   here, so it reads up to 2 s late);
4. **restart**: the killed broker starts again on its data directory; from its start
   until every partition's ISR is full again.

``TARGETS`` are the ones the cluster is held to at 10 000 partitions on ``highwater
dev`` (3 brokers, RF 3): create in 10 s, idle at 5 % of a core, every partition led
again 5 s after the new controller took over, every ISR full 60 s after the restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from rich.table import Table

from broker.bench.cluster import SpawnedBrokers, in_sync, prepare_topic
from broker.bench.cpu import cpu_seconds
from broker.client.http import ClusterClient
from broker.client.types import PartitionInfo
from broker.cluster.records import NO_LEADER, PARTITIONS_PREFIX, PartitionRecord
from broker.cluster.store import WatchEvent
from broker.cluster.store_url import open_store
from broker.errors import HighwaterError

POLL_S = 0.5
"""How often the partitions listing is read while waiting (it describes every partition)."""
WAIT_TIMEOUT_S = 900.0
REQUEST_TIMEOUT_MS = 600_000
TOPIC_PREFIX = "metadata-scale"


@dataclass(frozen=True)
class Target:
    name: str
    limit: float
    unit: str


TARGETS = {
    "create": Target("create, every partition led with a full ISR", 10.0, "s"),
    "idle": Target("idle CPU, busiest broker", 5.0, "% of a core"),
    "failover": Target("failover, new controller to every partition led", 5.0, "s"),
    "restart": Target("restart, back in every ISR", 60.0, "s"),
}


@dataclass(frozen=True)
class MetadataFigures:
    partitions: int
    replication_factor: int
    create_answered_s: float
    create_ready_s: float
    idle_cpu_percent: tuple[float, ...]
    """Per broker, in node id order."""
    killed_controller: int
    new_controller_s: float
    """From the kill until another broker is listed as controller."""
    records_led_s: float
    """From the kill until the store's records name a live leader for every partition."""
    all_led_s: float
    """From the kill until a survivor's listing shows every partition led by a live broker."""
    restart_in_sync_s: float

    def measured(self) -> dict[str, float]:
        """Each target's figure: what ``TARGETS`` holds the run to."""
        return {
            "create": self.create_ready_s,
            "idle": max(self.idle_cpu_percent),
            "failover": max(self.records_led_s - self.new_controller_s, 0.0),
            "restart": self.restart_in_sync_s,
        }


def verdicts(figures: MetadataFigures) -> list[tuple[Target, float, bool]]:
    """Each target, the figure measured for it, and whether the figure meets it."""
    measured = figures.measured()
    return [(target, measured[key], measured[key] <= target.limit) for key, target in TARGETS.items()]


def figures_table(figures: MetadataFigures) -> Table:
    table = Table(
        title=f"highwater bench scale --metadata: {figures.partitions:,} partitions, RF {figures.replication_factor}"
    )
    for header in ("figure", "measured", "target", "met"):
        table.add_column(header, justify="left" if header == "figure" else "right")
    for target, value, met in verdicts(figures):
        table.add_row(
            target.name, f"{value:,.2f} {target.unit}", f"≤ {target.limit:g} {target.unit}", "yes" if met else "no"
        )
    return table


def detail_lines(figures: MetadataFigures) -> list[str]:
    idle = " / ".join(f"{value:.1f}" for value in figures.idle_cpu_percent)
    return [
        f"create answered after {figures.create_answered_s:.2f} s; every partition led with a full ISR after "
        f"{figures.create_ready_s:.2f} s",
        f"idle CPU per broker, at rest: {idle} % of a core",
        f"controller {figures.killed_controller} killed: a new controller listed after {figures.new_controller_s:.2f} s "
        f"(its lease), every record naming a live leader after {figures.records_led_s:.2f} s, every partition "
        f"listed as led by a live broker after {figures.all_led_s:.2f} s",
        f"broker {figures.killed_controller} restarted: every ISR full after {figures.restart_in_sync_s:.2f} s",
    ]


def metadata_document(figures: MetadataFigures) -> dict:
    return {
        "partitions": figures.partitions,
        "replication_factor": figures.replication_factor,
        "create_answered_s": figures.create_answered_s,
        "create_ready_s": figures.create_ready_s,
        "idle_cpu_percent_per_broker": list(figures.idle_cpu_percent),
        "killed_controller": figures.killed_controller,
        "new_controller_s": figures.new_controller_s,
        "records_led_s": figures.records_led_s,
        "all_led_s": figures.all_led_s,
        "restart_in_sync_s": figures.restart_in_sync_s,
        "targets": {
            key: {"limit": target.limit, "unit": target.unit, "measured": value, "met": met}
            for key, (target, value, met) in zip(TARGETS, verdicts(figures))
        },
    }


def run_metadata(
    spawned: SpawnedBrokers, partitions: int, replication_factor: int, idle_s: float, say: Callable[[str], None]
) -> MetadataFigures:
    """The four steps of the module docstring, in order, on ``spawned``; ``say`` hears each step start."""
    urls = [broker.url for broker in spawned.brokers]
    say(f"creating {partitions:,} partitions (RF {replication_factor})")
    topic, answered_s, ready_s = asyncio.run(_create(urls[0], partitions, replication_factor))
    say(f"measuring idle CPU for {idle_s:g} s, after {idle_s:g} s at rest")
    time.sleep(idle_s)
    idle = _idle_cpu_percent([broker.process.pid for broker in spawned.brokers], idle_s)
    controller = asyncio.run(_controller_id(urls[0]))
    say(f"killing the controller, broker {controller}")
    victim = next(broker for broker in spawned.brokers if broker.node_id == controller)
    survivors = [broker.url for broker in spawned.brokers if broker.node_id != controller]

    def kill() -> float:
        killed_at = time.monotonic()
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait()
        return killed_at

    new_controller_s, records_led_s, all_led_s = asyncio.run(
        _failover(spawned.store, survivors, topic, controller, kill)
    )
    say(f"restarting broker {controller}")
    restarted_at = time.monotonic()
    spawned.restart(controller)
    urls = [broker.url for broker in spawned.brokers]
    restart_s = asyncio.run(_wait_for(urls, topic, lambda info: in_sync(info, replication_factor))) - restarted_at
    return MetadataFigures(
        partitions,
        replication_factor,
        answered_s,
        ready_s,
        idle,
        controller,
        new_controller_s,
        records_led_s,
        all_led_s,
        restart_s,
    )


async def _create(url: str, partitions: int, replication_factor: int) -> tuple[str, float, float]:
    """The topic, and the seconds until its creation was answered and until every partition was in sync."""
    started = time.monotonic()
    answered: list[float] = []
    topic = await prepare_topic(
        url,
        partitions,
        replication_factor,
        min_insync_replicas=1,
        prefix=TOPIC_PREFIX,
        timeout_s=WAIT_TIMEOUT_S,
        on_created=lambda: answered.append(time.monotonic() - started),
        poll_s=POLL_S,
    )
    return topic, answered[0], time.monotonic() - started


def _idle_cpu_percent(pids: list[int], idle_s: float) -> tuple[float, ...]:
    before = [cpu_seconds(pid) for pid in pids]
    time.sleep(idle_s)
    return tuple(100 * (cpu_seconds(pid) - used) / idle_s for pid, used in zip(pids, before))


async def _controller_id(url: str) -> int:
    """The controller's broker id as ``url`` lists it (-1 while there is none)."""
    client = ClusterClient([url], request_timeout_ms=REQUEST_TIMEOUT_MS)
    try:
        return int((await client.json_call("GET", f"{url}/v3/clusters"))["data"][0]["controller_id"])
    finally:
        await client.close()


async def _failover(
    store_url: str, survivors: list[str], topic: str, killed: int, kill: Callable[[], float]
) -> tuple[float, float, float]:
    """Seconds from the kill until a live controller is listed, until the store's records name a
    live leader for every partition, and until a survivor's listing shows them all led."""
    store = await open_store(store_url)
    try:
        prefix = f"{PARTITIONS_PREFIX}{topic}/"
        listed, revision = await store.list(prefix)
        unled = {kv.key for kv in listed if PartitionRecord.model_validate_json(kv.value).leader == killed}
        records_led = asyncio.create_task(_records_led(store.watch(prefix, revision + 1), unled, killed))
        killed_at = kill()
        deadline = time.monotonic() + WAIT_TIMEOUT_S
        while await _controller_id(survivors[0]) in (killed, -1):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no controller but broker {killed} was listed within {WAIT_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.05)
        new_controller_s = time.monotonic() - killed_at
        async with asyncio.timeout(WAIT_TIMEOUT_S):
            records_led_s = await records_led - killed_at
        await _wait_for(survivors, topic, lambda info: info.leader_id not in (None, killed))
        return new_controller_s, records_led_s, time.monotonic() - killed_at
    finally:
        await store.close()


async def _records_led(events: AsyncIterator[WatchEvent], unled: set[str], killed: int) -> float:
    """The monotonic time at which the watched records named a live leader for every key in ``unled``
    (now, when it is empty: the killed broker led none of them)."""
    if not unled:
        return time.monotonic()
    async with contextlib.aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if event.type != "put":
                continue
            if PartitionRecord.model_validate_json(event.value).leader in (killed, NO_LEADER):
                unled.add(event.key)
            else:
                unled.discard(event.key)
            if not unled:
                return time.monotonic()
    raise RuntimeError("the watch of the partition records ended before every partition was led")


async def _wait_for(urls: list[str], topic: str, holds: Callable[[PartitionInfo], bool]) -> float:
    """The monotonic time at which every partition of ``topic`` was seen to satisfy ``holds``."""
    client = ClusterClient(urls, request_timeout_ms=REQUEST_TIMEOUT_MS)
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    try:
        while True:
            try:
                infos = await client.partitions(topic)
                if infos and all(holds(info) for info in infos):
                    return time.monotonic()
            except HighwaterError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {topic} did not get there within {WAIT_TIMEOUT_S:.0f} s")
            await asyncio.sleep(POLL_S)
    finally:
        await client.close()
