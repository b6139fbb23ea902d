"""``highwater bench peers``: a lone acknowledged write on highwater next to NATS JetStream and Redis.

Every system is started once (3 highwater brokers, 1 more for acks=1, 3 NATS servers, two
Redis groups of three) and measured in interleaved rounds, each round running every system
in turn (``peers_report.SYSTEMS``), so a change in the machine's state shows in every
column of a round rather than in one system's figures. ``--write-doc docs/performance.md``
puts the table between the document's markers; the README's performance line quotes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from broker.acks import Acks
from broker.bench import peers, peers_report
from broker.bench.invocation import Invocation, run_once, spawned_or_given
from broker.bench.spec import WorkloadSpec
from broker.bench.stats import LatencySummary
from broker.cli.common import EXIT_BAD_SETTINGS, fail

console = Console(width=None if sys.stdout.isatty() else 160)


def peers_command(
    count: Annotated[int, typer.Option("--count", min=1, help="Lone writes of each system in each round.")] = 2000,
    target_rate: Annotated[float, typer.Option("--target-rate", min=0, help="Writes/s of each run.")] = 200.0,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Interleaved rounds.")] = 2,
    record_size: Annotated[int, typer.Option("--record-size", min=1, help="Bytes of each record value.")] = 100,
    write_doc: Annotated[
        Path | None, typer.Option("--write-doc", help="Write the table into this document, between its markers.")
    ] = None,
) -> None:
    """Lone-write latency of highwater (acks=all RF 3; acks=1 on one broker) next to an aiohttp echo,
    NATS JetStream R3 and Redis WAIT 2 (AOF off, and appendfsync always), in interleaved rounds."""
    from broker.bench import latency
    from broker.bench.baseline import baseline_server
    from broker.bench.workloads import quiet_logging

    quiet_logging()
    if write_doc is not None:
        try:
            peers_report.with_section(write_doc.read_text(), "")
        except (OSError, ValueError) as error:
            raise fail(f"--write-doc {write_doc}: {error}", EXIT_BAD_SETTINGS) from None
    missing = peers.missing_servers()
    if missing:
        raise fail(
            f"highwater bench peers runs {' and '.join(missing)}: `make bench-peers` installs them "
            "(apt-get install nats-server redis-server, pip install -e '.[bench]')",
            EXIT_BAD_SETTINGS,
        )
    all_spec = latency.lone_request_spec(
        WorkloadSpec(
            kind="produce",
            record_size_bytes=record_size,
            count=count,
            target_rate=target_rate,
            replication_factor=3,
            min_insync_replicas=2,
            acks=Acks.ALL,
        )
    )
    one_spec = dataclasses.replace(all_spec, replication_factor=1, min_insync_replicas=1, acks=Acks.ONE).validate()
    record = bytes(record_size)
    results: dict[str, list[LatencySummary]] = {system: [] for system in peers_report.SYSTEMS}
    with contextlib.ExitStack() as started:
        echo_url = started.enter_context(baseline_server())
        three = started.enter_context(spawned_or_given(Invocation(None, 3, 1, False, None, True))).urls
        one = started.enter_context(spawned_or_given(Invocation(None, 1, 1, False, None, True))).urls
        nats_urls = started.enter_context(peers.nats_cluster())
        redis_port = started.enter_context(peers.redis_group(appendfsync_always=False))
        redis_fsync_port = started.enter_context(peers.redis_group(appendfsync_always=True))
        runs = {
            peers_report.ECHO: lambda: latency.run_echo(all_spec, echo_url, True).produce_ack,
            peers_report.HIGHWATER_ALL: lambda: run_once(all_spec, three, True).produce_ack,
            peers_report.HIGHWATER_ONE: lambda: run_once(one_spec, one, True).produce_ack,
            peers_report.NATS: lambda: asyncio.run(peers.nats_lone_publish(nats_urls, record, count, target_rate)),
            peers_report.REDIS: lambda: asyncio.run(peers.redis_lone_wait(redis_port, record, count, target_rate)),
            peers_report.REDIS_FSYNC: lambda: asyncio.run(
                peers.redis_lone_wait(redis_fsync_port, record, count, target_rate)
            ),
        }
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("interleaved rounds", total=rounds * len(runs))
            for _ in range(rounds):
                for system, run in runs.items():
                    progress.update(task, description=system)
                    summary = _measured(system, run)
                    results[system].append(summary)
                    progress.advance(task)
    table = peers_report.markdown_table(results)
    console.print(table)
    for line in peers_report.verdicts(results):
        console.print(line)
    if write_doc is not None:
        write_doc.write_text(peers_report.with_section(write_doc.read_text(), table))
        console.print(f"wrote the table into {write_doc}")


def _measured(system: str, run: Callable[[], LatencySummary | None]) -> LatencySummary:
    try:
        summary = run()
    except peers.PeerUnavailable as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None
    if summary is None:
        raise fail(f"{system}: the run measured no latency", EXIT_BAD_SETTINGS)
    return summary
