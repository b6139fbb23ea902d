"""What one ``highwater bench`` command runs against: a given server or spawned brokers, and one run on them.

Shared by the workload commands (``broker.bench.cli``) and ``highwater bench peers``
(``broker.bench.peers_command``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from broker.acks import Acks
from broker.bench.spec import WorkloadSpec
from broker.cli.common import EXIT_BAD_SETTINGS, fail
from broker.client.security import ClientSecurity

if TYPE_CHECKING:
    from broker.bench.runner import RunResult


@dataclasses.dataclass(frozen=True)
class Invocation:
    """A command's target (``--server`` or ``--spawn``) and how its figures are reported."""

    server: str | None
    spawn: int
    repeat: int
    baseline: bool
    json_file: Path | None
    quiet: bool
    tls: bool = False
    security: ClientSecurity = dataclasses.field(default_factory=ClientSecurity)
    basic_auth: bool = False


@dataclasses.dataclass(frozen=True)
class Target:
    """The brokers a command runs against, the options their clients need, and the process ids of
    spawned ones (none for ``--server``: their CPU time is not this machine's to read)."""

    urls: list[str]
    security: ClientSecurity
    pids: tuple[int, ...] = ()


@contextlib.contextmanager
def spawned_or_given(invocation: Invocation, kafka: bool = False) -> Iterator[Target]:
    """The brokers to run against; spawned brokers with a Kafka listener if ``kafka``."""
    if invocation.server:
        yield Target([invocation.server.rstrip("/")], invocation.security)
        return
    from broker.bench.cluster import SpawnedBasicAuth, client_security, spawned_cluster
    from broker.cli.throwaway_tls import TrustmeMissing, throwaway_tls

    with tempfile.TemporaryDirectory(prefix="highwater-bench-tls-") as directory:
        try:
            tls = throwaway_tls(Path(directory)) if invocation.tls else None
        except TrustmeMissing as error:
            raise fail(str(error), EXIT_BAD_SETTINGS) from None
        basic = SpawnedBasicAuth() if invocation.basic_auth else None
        with spawned_cluster(invocation.spawn, tls, basic, kafka) as brokers:
            spawned = tls is not None or basic is not None
            yield Target(
                [broker.url for broker in brokers],
                client_security(tls, basic) if spawned else invocation.security,
                tuple(broker.process.pid for broker in brokers),
            )


def fresh_topic(spec: WorkloadSpec, urls: list[str]) -> str:
    """A new topic shaped as ``spec`` asks, every partition led and fully in sync."""
    from broker.bench.cluster import prepare_topic

    return asyncio.run(
        prepare_topic(
            urls[0], spec.partitions, spec.replication_factor, spec.min_insync_replicas, security=spec.security
        )
    )


def run_once(spec: WorkloadSpec, urls: list[str], quiet: bool) -> RunResult:
    """``spec``'s workload on a fresh topic of its own (a consume run produces what it reads first)."""
    from broker.bench.runner import run_consume, run_end_to_end, run_produce

    runners = {"produce": run_produce, "consume": run_consume, "e2e": run_end_to_end}
    topic = fresh_topic(spec, urls)
    if spec.kind == "consume":
        run_produce(dataclasses.replace(spec, kind="produce", acks=Acks.ONE), urls, topic, quiet)
    return runners[spec.kind](spec, urls, topic, quiet)
