"""``highwater dev``: a local cluster of broker processes on 127.0.0.1 for trying things out.

Each broker is a real ``highwater serve`` process with its own data directory under
``<dir>/broker-<id>`` and its log in ``<dir>/broker-<id>.log``; all share one sqlite
metadata store ``<dir>/metadata.db``. A second run reuses the data. It talks to the
brokers with the libraries' ``ClusterClient`` (``AdminClient`` for the demo), as any
client does, and never opens the metadata store itself. With ``--tls`` the brokers
serve HTTPS with a fresh throwaway CA in ``<dir>/tls`` (``broker.cli.throwaway_tls``),
and the printed examples pass its ``ca.pem``.

Every broker also runs a Kafka-protocol listener (plaintext): broker i on
``--kafka-base-port`` + i - 1, by default its HTTP port + ``KAFKA_PORT_OFFSET`` (19092..
for the default 9092..). Ports never move: one that cannot be had stops the command
before any broker starts (``broker.cli.dev_ports``). The command prints the
``bootstrap.servers`` Kafka clients use, read back from the brokers' own listing, so it
is what Metadata tells the clients. The first thing it prints among the examples is the
web console's URL (``/console`` on any broker).

Output: one line per start-up step (brokers ready, demo topic, demo produce), then the
summary and the examples; a spinner shows on a terminal while a step waits and leaves
nothing behind. Library and store events never reach the user's terminal: the process
logs only warnings, on stderr. Ctrl-C (or SIGTERM) prints ``stopping the cluster …``
and ``stopped``, exit code 0: the terminal's SIGINT reaches the brokers too (one process
group) and each also gets SIGTERM, a clean shutdown (logs flushed, high watermarks
checkpointed). A broker that exits on its own with a non-zero code is reported on
stderr naming it, its exit code and its log file; the others are stopped, exit code 1.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from broker.acks import Acks
from broker.cli.common import stderr_console
from broker.cli.dev_ports import check_ports, planned_listeners
from broker.cli.throwaway_tls import SpawnedTls, throwaway_tls
from broker.cli.topics import partitions_table
from broker.client.admin import AdminClient
from broker.client.http import ClusterClient
from broker.errors import HighwaterError, TopicAlreadyExists
from broker.logging_setup import configure_logging

DEMO_TOPIC = "demo"
DEMO_PARTITIONS = 3
DEMO_RECORDS = 3
DEMO_TOPIC_TIMEOUT_S = 30
"""How long the demo topic waits for the controller to count every broker live."""
DEMO_READ_RECORDS = 500
REQUEST_TIMEOUT_MS = 30_000
KAFKA_PORT_OFFSET = 10_000
"""Broker i's Kafka listener is on its HTTP port + this (9092 -> 19092)."""
READY_PROBE_TIMEOUT_S = 1.0
REGISTERED_TIMEOUT_S = 30
"""How long the bootstrap waits for every broker's Kafka address to be listed."""
READY_LINE = "Press Ctrl-C to stop the cluster."


@dataclass
class DevBroker:
    """A broker process this machine started (``highwater dev``, ``highwater bench --spawn``)."""

    node_id: int
    url: str
    process: subprocess.Popen
    log_path: Path | None = None


class BrokerExited(Exception):
    """A broker process ended although nobody asked it to stop; ``str`` names it, its exit code and its log."""

    def __init__(self, broker: DevBroker) -> None:
        super().__init__(exit_line(broker))
        self.broker = broker


def counted(count: int, noun: str) -> str:
    """``1 record``, ``3 records``: a count with its noun in the number the count asks for."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def exit_line(broker: DevBroker) -> str:
    """``broker 2 exited with code -9 (killed by SIGKILL); its log is <dir>/broker-2.log``."""
    code = broker.process.returncode
    how = f" (killed by {signal.Signals(-code).name})" if code is not None and code < 0 else ""
    log = f"; its log is {broker.log_path}" if broker.log_path is not None else ""
    return f"broker {broker.node_id} exited with code {code}{how}{log}"


async def _wait_ready(client: ClusterClient, broker: DevBroker, timeout_s: float) -> None:
    """Until ``/readyz`` answers 200; a broker that exits meanwhile raises ``BrokerExited``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if broker.process.poll() is not None:
            raise BrokerExited(broker)
        try:
            await client.json_call("GET", f"{broker.url}/readyz", timeout_s=READY_PROBE_TIMEOUT_S)
            return
        except HighwaterError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError(f"broker {broker.node_id} at {broker.url} was not ready after {timeout_s:.0f} s")


def serve_command(node_id: int, port: int, data_dir: Path, store: str, *extra: str) -> list[str]:
    """``highwater serve`` for one broker on 127.0.0.1, as the dev cluster and the benchmarks start it."""
    return [sys.executable, "-m", "broker", *serve_arguments(node_id, port, data_dir, store, *extra)]


def serve_arguments(node_id: int, port: int, data_dir: Path, store: str, *extra: str) -> list[str]:
    """The ``serve ...`` arguments of one broker on 127.0.0.1 (what follows ``highwater``)."""
    return [
        "serve",
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
    """Start broker i on ``base_port + i - 1`` with its Kafka listener on ``kafka_base_port + i - 1``."""
    directory.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **(tls.broker_env if tls else {})}
    scheme = "https" if tls else "http"
    store = f"sqlite://{(directory / 'metadata.db').resolve()}"
    brokers = []
    for node_id in range(1, count + 1):
        port = base_port + node_id - 1
        log_path = directory / f"broker-{node_id}.log"
        log_file = open(log_path, "ab")  # noqa: SIM115 - kept open while the dev cluster runs
        command = serve_command(node_id, port, directory / f"broker-{node_id}", store)
        broker_env = {**env, "HIGHWATER_KAFKA_LISTENER": f"127.0.0.1:{kafka_base_port + node_id - 1}"}
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=broker_env)
        brokers.append(DevBroker(node_id, f"{scheme}://127.0.0.1:{port}", process, log_path))
    return brokers


async def kafka_bootstrap(admin: AdminClient, count: int, timeout_s: float = REGISTERED_TIMEOUT_S) -> str:
    """``bootstrap.servers``: every broker's Kafka address as the cluster lists it (what Metadata answers).

    Waits until all ``count`` brokers are listed with one (the first broker's view follows
    the registrations with a watch), in broker id order.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        listed = {b["broker_id"]: b.get("kafka_address") for b in await admin.list_brokers()}
        addresses = [listed.get(node_id) for node_id in range(1, count + 1)]
        if all(addresses):
            return ",".join(str(address) for address in addresses)
        if time.monotonic() > deadline:
            raise RuntimeError(f"not every broker listed a Kafka listener after {timeout_s:.0f} s: {listed}")
        await asyncio.sleep(0.1)


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
    """Create the demo topic once the cluster lists enough brokers (the controller reads the
    registrations before it places replicas, so what the first broker lists it counts too)."""
    await _wait_registered(admin, replication_factor, timeout_s=DEMO_TOPIC_TIMEOUT_S)
    configs = {"min.insync.replicas": str(min(2, replication_factor))}
    try:
        await admin.create_topic(DEMO_TOPIC, DEMO_PARTITIONS, replication_factor, configs)
    except TopicAlreadyExists:
        pass
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
            f"HW {lag['log_end_offset']}, lag {counted(lag['lag'], 'record')} ({lag['lag_ms']} ms), {lag['status']}"
        )


async def produce_demo(console: Console, admin: AdminClient) -> None:
    """Produce ``DEMO_RECORDS`` records with acks=all, read them back below the high watermark, show a group's lag."""
    entries = [
        {"key": {"type": "STRING", "data": f"user-{i}"}, "value": {"type": "STRING", "data": f"hello {i}"}}
        for i in range(DEMO_RECORDS)
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


def _interrupt_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM stops dev as Ctrl-C does."""
    raise KeyboardInterrupt


def quiet_library_logging() -> None:
    """Send this process's log events to stderr, warnings and worse only.

    Unconfigured, structlog prints every event of every module dev imports to stdout,
    into the summary; configured, routine events are dropped and a warning still shows.
    """
    configure_logging("warning", "auto", sys.stderr)


async def _bring_up(console: Console, brokers: list[DevBroker], directory: Path, tls: SpawnedTls | None) -> None:
    """Wait for every broker, create the demo topic, run the demo and print the summary and examples."""
    options = tls.client_security.client_options() if tls else {}
    client = ClusterClient([brokers[0].url], request_timeout_ms=REQUEST_TIMEOUT_MS, **options)
    admin = AdminClient(client)
    replication_factor = min(3, len(brokers))
    try:
        with console.status(f"starting {counted(len(brokers), 'broker')} in {directory} …"):
            for broker in brokers:
                await _wait_ready(client, broker, timeout_s=60)
        console.print(f"{counted(len(brokers), 'broker')} ready; logs in {directory}/broker-N.log")
        with console.status("creating the demo topic and waiting for its replicas to be in sync …"):
            await ensure_demo_topic(admin, replication_factor)
        console.print(
            f"demo topic {DEMO_TOPIC} ready: {DEMO_PARTITIONS} partitions, "
            f"replication factor {replication_factor}, every replica in sync"
        )
        console.print(f"demo produce: {DEMO_RECORDS} records with acks=all, read back below the high watermark:")
        with console.status("producing to the demo topic …"):
            await produce_demo(console, admin)
        await _print_summary(console, admin, await client.cluster_id(), brokers, tls)
    finally:
        await client.close()


async def _print_summary(
    console: Console, admin: AdminClient, cluster_id: str, brokers: list[DevBroker], tls: SpawnedTls | None
) -> None:
    """The cluster's addresses, the demo topic's partitions and the copy-paste examples."""
    console.print(f"[green]cluster {cluster_id} is up[/green]")
    for broker in brokers:
        console.print(f"  broker {broker.node_id}: {broker.url}")
    console.print(f"  Kafka clients: bootstrap.servers={await kafka_bootstrap(admin, len(brokers))}")
    console.print(partitions_table(DEMO_TOPIC, await admin.list_partitions(DEMO_TOPIC)))
    console.print(examples(brokers[0].url, cluster_id, tls.client_security.ssl_ca_file if tls else None))


def run_dev_cluster(
    count: int, directory: Path, base_port: int, tls: bool = False, kafka_base_port: int | None = None
) -> int:
    """Start ``count`` brokers (HTTPS with ``tls``), run the demo, print examples, wait for Ctrl-C; the exit code.

    ``kafka_base_port`` None puts the Kafka listeners at ``base_port + KAFKA_PORT_OFFSET``.
    Raises ``PortUnavailable`` before anything starts when a port cannot be had.
    """
    kafka_base = base_port + KAFKA_PORT_OFFSET if kafka_base_port is None else kafka_base_port
    check_ports(planned_listeners(count, base_port, kafka_base))
    quiet_library_logging()
    console = Console(soft_wrap=True, highlight=False)
    signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    # A process that inherits SIGINT ignored (a background job of a non-interactive shell,
    # some CI runners and test runners) gets no KeyboardInterrupt from Python. The brokers
    # install their own handler and stop on the group's Ctrl-C, so dev takes it back too.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    spawned_tls = throwaway_tls(directory.resolve() / "tls") if tls else None
    brokers = start_brokers(count, directory, base_port, kafka_base, spawned_tls)
    try:
        exited = _serve(console, brokers, directory, spawned_tls)
    except KeyboardInterrupt:
        exited = None
    except BrokerExited as error:
        exited = error.broker
    except BaseException:
        stop_brokers(brokers)
        raise
    return _stop_cluster(console, brokers, exited)


def _serve(console: Console, brokers: list[DevBroker], directory: Path, tls: SpawnedTls | None) -> DevBroker:
    """Bring the cluster up, then block until a broker process ends; that broker."""
    asyncio.run(_bring_up(console, brokers, directory, tls))
    console.print(READY_LINE)
    while True:
        for broker in brokers:
            if broker.process.poll() is not None:
                return broker
        time.sleep(0.5)


def _stop_cluster(console: Console, brokers: list[DevBroker], exited: DevBroker | None) -> int:
    """Stop every broker; the exit code: 1 when ``exited`` died on its own, else 0."""
    code = _report_exit(console, exited)
    console.print("stopping the cluster …")
    stop_brokers(brokers)
    console.print("stopped")
    return code


def _report_exit(console: Console, exited: DevBroker | None) -> int:
    """Say why the cluster stops; 1 when a broker died on its own.

    ``exited`` None is Ctrl-C or SIGTERM to dev: nothing to report. A broker that ended
    with code 0 was stopped by a signal from outside (its clean shutdown), not a crash:
    it is named on stdout. Any other code is a broker that died: named on stderr with
    its exit code and its log file.
    """
    if exited is None:
        return 0
    if exited.process.returncode == 0:
        console.print(f"broker {exited.node_id} was stopped (exit code 0)")
        return 0
    stderr_console.print(f"highwater: {exit_line(exited)}", markup=False)
    return 1
