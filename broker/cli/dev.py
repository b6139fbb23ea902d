"""``highwater dev``: a local cluster of broker processes on 127.0.0.1 for trying things out.

Each broker is a real ``highwater serve`` process with its own data directory under
``<dir>/broker-<id>``; all share one sqlite metadata store ``<dir>/metadata.db``. A
second run reuses the data. Ctrl-C stops every broker with SIGTERM (a clean
shutdown: logs flushed, high watermarks checkpointed). It talks to the brokers with
the libraries' ``ClusterClient`` (``AdminClient`` for the demo), as any client does.
With ``--tls`` the brokers serve HTTPS with a fresh throwaway CA in ``<dir>/tls``
(``broker.cli.throwaway_tls``), and the printed examples pass its ``ca.pem``.

Every broker also runs a Kafka-protocol listener (plaintext): broker i on
``--kafka-base-port`` + i - 1, by default its HTTP port + ``KAFKA_PORT_OFFSET`` (19092..
for the default 9092..; any free port when that one is taken or above 65535), and the
command prints the ``bootstrap.servers`` Kafka clients use, read back from the brokers'
registrations so it is what Metadata tells the clients. The first thing
it prints among the examples is the web console's URL (``/console`` on any broker).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from broker.acks import Acks
from broker.cli.throwaway_tls import SpawnedTls, throwaway_tls
from broker.client.admin import AdminClient
from broker.client.http import ClusterClient
from broker.cluster.membership import registration_from
from broker.cluster.records import broker_key
from broker.cluster.store_url import open_store
from broker.errors import HighwaterError, InvalidReplicationFactor, TopicAlreadyExists

MAX_PORT = 65_535
DEMO_TOPIC = "demo"
DEMO_TOPIC_TIMEOUT_S = 30
"""How long the demo topic waits for the controller to count every broker live."""
DEMO_READ_RECORDS = 500
REQUEST_TIMEOUT_MS = 30_000
KAFKA_PORT_OFFSET = 10_000
"""Broker i's Kafka listener is on its HTTP port + this (9092 -> 19092)."""
READY_PROBE_TIMEOUT_S = 1.0


@dataclass
class DevBroker:
    """A broker process this machine started (``highwater dev``, ``highwater bench --spawn``)."""

    node_id: int
    url: str
    process: subprocess.Popen


async def _wait_ready(client: ClusterClient, broker: DevBroker, timeout_s: float) -> None:
    """Until ``/readyz`` answers 200; a broker that exits or never answers so stops the command."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if broker.process.poll() is not None:
            raise RuntimeError(f"broker {broker.node_id} exited with code {broker.process.returncode}")
        try:
            await client.json_call("GET", f"{broker.url}/readyz", timeout_s=READY_PROBE_TIMEOUT_S)
            return
        except HighwaterError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError(f"broker {broker.node_id} at {broker.url} was not ready after {timeout_s:.0f} s")


def serve_command(node_id: int, port: int, data_dir: Path, store: str, *extra: str) -> list[str]:
    """``highwater serve`` for one broker on 127.0.0.1, as the dev cluster and the benchmarks start it."""
    return [
        sys.executable, "-m", "broker.cli", "serve",
        "--node-id", str(node_id),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--data-dir", str(data_dir),
        "--metadata", store,
        *extra,
    ]  # fmt: skip


def start_brokers(
    count: int, directory: Path, base_port: int, kafka_base_port: int, tls: SpawnedTls | None = None
) -> list[DevBroker]:
    directory.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **(tls.broker_env if tls else {})}
    scheme = "https" if tls else "http"
    store = f"sqlite://{(directory / 'metadata.db').resolve()}"
    brokers = []
    for node_id in range(1, count + 1):
        port = base_port + node_id - 1
        log_file = open(directory / f"broker-{node_id}.log", "ab")  # noqa: SIM115 - kept open while the dev cluster runs
        command = serve_command(node_id, port, directory / f"broker-{node_id}", store)
        broker_env = {**env, "HIGHWATER_KAFKA_LISTENER": kafka_listener(kafka_base_port + node_id - 1)}
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=broker_env)
        brokers.append(DevBroker(node_id, f"{scheme}://127.0.0.1:{port}", process))
    return brokers


def kafka_listener(port: int) -> str:
    """``127.0.0.1:<port>``, or port 0 (a free one) when that port cannot be had."""
    return f"127.0.0.1:{port if port <= MAX_PORT and _bindable(port) else 0}"


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def kafka_bootstrap(directory: Path, count: int) -> str:
    """``bootstrap.servers``: the Kafka addresses the brokers registered, as Metadata answers them."""
    store = await open_store(f"sqlite://{(directory / 'metadata.db').resolve()}")
    try:
        addresses = []
        for node_id in range(1, count + 1):
            registered = await store.get(broker_key(node_id))
            address = registration_from(registered).kafka_address if registered is not None else None
            if address is not None:
                addresses.append(address)
        return ",".join(addresses)
    finally:
        await store.close()


def stop_brokers(brokers: list[DevBroker], timeout_s: float = 20.0) -> None:
    """SIGTERM all at once (each moves its leaderships away), then wait; SIGKILL what outlives ``timeout_s``."""
    for broker in brokers:
        if broker.process.poll() is None:
            broker.process.send_signal(signal.SIGTERM)
    for broker in brokers:
        try:
            broker.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            broker.process.kill()
            broker.process.wait()


async def _wait_registered(admin: AdminClient, count: int, timeout_s: float) -> None:
    """Until the cluster lists ``count`` brokers, so the demo topic can place RF replicas."""
    deadline = time.monotonic() + timeout_s
    while True:
        if len(await admin.list_brokers()) >= count or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.1)


async def ensure_demo_topic(admin: AdminClient, replication_factor: int) -> None:
    """Create the demo topic once the controller counts enough live brokers.

    A broker listed by the first broker's view may not yet be live in the controller's
    (each follows the registrations with its own watch), so a refusal for too few live
    brokers is retried until ``DEMO_TOPIC_TIMEOUT_S``: the cluster is still forming.
    """
    deadline = time.monotonic() + DEMO_TOPIC_TIMEOUT_S
    await _wait_registered(admin, replication_factor, timeout_s=DEMO_TOPIC_TIMEOUT_S)
    configs = {"min.insync.replicas": str(min(2, replication_factor))}
    while True:
        try:
            await admin.create_topic(DEMO_TOPIC, 3, replication_factor, configs)
            break
        except TopicAlreadyExists:
            break
        except InvalidReplicationFactor as error:
            if time.monotonic() > deadline:
                raise RuntimeError(f"could not create the demo topic: {error.message}") from None
            await asyncio.sleep(0.1)
        except HighwaterError as error:
            raise RuntimeError(f"could not create the demo topic: {error.message}") from None
    await _wait_in_sync(admin, timeout_s=60)


async def _wait_in_sync(admin: AdminClient, timeout_s: float) -> None:
    """Until every demo partition has a leader and its whole ISR back.

    On a second ``make run`` the restarted brokers rejoin the ISR only after they caught
    up again; an acks=all demo sent before that is refused (NOT_ENOUGH_REPLICAS).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        partitions = await admin.list_partitions(DEMO_TOPIC)
        if partitions and all(p["leader_id"] >= 0 and len(p["isr"]) == len(p["replica_ids"]) for p in partitions):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the demo topic's replicas were not all in sync after {timeout_s:.0f} s")
        await asyncio.sleep(0.2)


def examples(url: str, cluster_id: str, ca_file: Path | None = None) -> str:
    """Copy-paste examples; with ``ca_file`` (a TLS cluster) curl and the CLI are told to trust it."""
    base = f"{url}/v3/clusters/{cluster_id}"
    curl = f"curl -s --cacert {ca_file}" if ca_file else "curl -s"
    cli = f"HIGHWATER_SSL_CA_FILE={ca_file} .venv/bin/highwater" if ca_file else ".venv/bin/highwater"
    return f"""
[bold]Web console[/bold] (every broker serves it; replicas' LEO against the HW, ISR, consumer lag over time):
  {url}/console

[bold]Produce[/bold] (acks=all waits until every in-sync replica has the record):
  {curl} -X POST '{base}/topics/{DEMO_TOPIC}/records?acks=all' \\
       -H 'Content-Type: application/json' \\
       -d '{{"key": {{"type": "STRING", "data": "user-1"}}, "value": {{"type": "JSON", "data": {{"clicks": 1}}}}}}'

[bold]Produce many[/bold]:
  {curl} -X POST '{base}/topics/{DEMO_TOPIC}/records:batch' -H 'Content-Type: application/json' \\
       -d '{{"entries": [{{"value": {{"type": "STRING", "data": "a"}}}}, {{"value": {{"type": "STRING", "data": "b"}}}}]}}'

[bold]Read[/bold] partition 0 from offset 0 (only records below the high watermark):
  {curl} '{base}/topics/{DEMO_TOPIC}/partitions/0/records?offset=0&format=string'

[bold]Partition state[/bold] (leader, ISR, log start, high watermark, log end):
  {curl} '{base}/topics/{DEMO_TOPIC}/partitions'

[bold]Offsets[/bold] (latest_offset is the high watermark):
  {curl} '{base}/topics/{DEMO_TOPIC}/partitions/0/offset'

[bold]Consumer lag[/bold] (committed offset vs the high watermark, per partition):
  {curl} '{base}/consumer-groups/{DEMO_GROUP}/lags'
  {curl} '{base}/consumer-groups/{DEMO_GROUP}/lag-summary'
  {cli} groups describe {DEMO_GROUP} -s {url}

[bold]Command line[/bold]:
  echo hello | {cli} produce {DEMO_TOPIC} -s {url}
  {cli} consume {DEMO_TOPIC} --from-beginning -s {url}
  {cli} topics describe {DEMO_TOPIC} -s {url}
"""


DEMO_GROUP = "demo-group"


async def _show_lag(console: Console, admin: AdminClient, successes: list[dict]) -> None:
    """Commit offset 0 for the demo group on each partition written, then print its lag."""
    offsets = [
        {"topic_name": DEMO_TOPIC, "partition_id": p, "offset": 0}
        for p in sorted({success["partition_id"] for success in successes})
    ]
    try:
        await admin.commit_offsets(DEMO_GROUP, offsets)
    except HighwaterError as error:
        console.print(f"  (could not commit offsets for {DEMO_GROUP}: {error.message})")
        return
    for lag in await admin.group_lags(DEMO_GROUP):
        if lag["current_offset"] is None:
            continue
        console.print(
            f"  group {DEMO_GROUP} on partition {lag['partition_id']}: committed {lag['current_offset']}, "
            f"HW {lag['log_end_offset']}, lag {lag['lag']} records ({lag['lag_ms']} ms), {lag['status']}"
        )


async def show_demo(console: Console, admin: AdminClient) -> None:
    """Produce three records with acks=all, read them back, show the partition state."""
    entries = [
        {"key": {"type": "STRING", "data": f"user-{i}"}, "value": {"type": "STRING", "data": f"hello {i}"}}
        for i in range(3)
    ]
    try:
        produced = await admin.produce_batch(DEMO_TOPIC, entries, Acks.ALL)
    except HighwaterError as error:
        produced = {"failures": [{"error": error.name, "message": error.message}]}
    successes = produced.get("successes", [])
    for success in successes:
        console.print(f"  produced to partition {success['partition_id']} at offset {success['offset']} (acks=all)")
    for failure in produced.get("failures", []):
        console.print(f"  [red]produce failed[/red]: {failure.get('error')}: {failure.get('message')}")
    for partition in sorted({success["partition_id"] for success in successes}):
        read = await admin.read_records(DEMO_TOPIC, partition, 0, DEMO_READ_RECORDS, timeout_ms=0)
        values = [record["value"]["data"] for record in read.get("data", [])]
        console.print(f"  read partition {partition} below HW {read.get('high_watermark')}: {values}")
    await _show_lag(console, admin, successes)
    table = Table(title=f"topic {DEMO_TOPIC}")
    for column in ("partition", "leader", "epoch", "replicas", "ISR", "log start", "HW", "LEO"):
        table.add_column(column)
    for p in await admin.list_partitions(DEMO_TOPIC):
        table.add_row(
            str(p["partition_id"]),
            str(p["leader_id"]),
            str(p["leader_epoch"]),
            str(p["replica_ids"]),
            str(p["isr"]),
            str(p["log_start_offset"]),
            str(p["high_watermark"]),
            str(p["log_end_offset"]),
        )
    console.print(table)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


async def _bring_up(console: Console, brokers: list[DevBroker], directory: Path, tls: SpawnedTls | None) -> None:
    """Wait for every broker, create the demo topic, run the demo and print the examples."""
    options = tls.client_security.client_options() if tls else {}
    client = ClusterClient([brokers[0].url], request_timeout_ms=REQUEST_TIMEOUT_MS, **options)
    admin = AdminClient(client)
    try:
        with console.status(f"starting {len(brokers)} broker(s) in {directory} ..."):
            for broker in brokers:
                await _wait_ready(client, broker, timeout_s=60)
            await ensure_demo_topic(admin, replication_factor=min(3, len(brokers)))
        cluster_id = await client.cluster_id()
        console.print(f"[green]cluster {cluster_id} is up[/green]; logs in {directory}/broker-N.log")
        for broker in brokers:
            console.print(f"  broker {broker.node_id}: {broker.url}")
        console.print(f"  Kafka clients: bootstrap.servers={await kafka_bootstrap(directory, len(brokers))}")
        await show_demo(console, admin)
        console.print(examples(brokers[0].url, cluster_id, tls.client_security.ssl_ca_file if tls else None))
    finally:
        await client.close()


def run_dev_cluster(
    count: int, directory: Path, base_port: int, tls: bool = False, kafka_base_port: int | None = None
) -> None:
    """Start ``count`` brokers (HTTPS with ``tls``), create the demo topic, print examples, wait for Ctrl-C.

    ``kafka_base_port`` None puts the Kafka listeners at ``base_port + KAFKA_PORT_OFFSET``.
    """
    console = Console(soft_wrap=True)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    spawned_tls = throwaway_tls(directory.resolve() / "tls") if tls else None
    kafka_base = base_port + KAFKA_PORT_OFFSET if kafka_base_port is None else kafka_base_port
    brokers = start_brokers(count, directory, base_port, kafka_base, spawned_tls)
    try:
        asyncio.run(_bring_up(console, brokers, directory, spawned_tls))
        console.print("Press Ctrl-C to stop the cluster.")
        while all(broker.process.poll() is None for broker in brokers):
            time.sleep(0.5)
        console.print("[red]a broker exited; stopping the others[/red]")
    except KeyboardInterrupt:
        console.print("stopping ...")
    finally:
        stop_brokers(brokers)
