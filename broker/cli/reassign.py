"""``highwater partitions reassign`` and ``highwater partitions reassignments``: move partitions between brokers.

Kafka's ``kafka-reassign-partitions.sh`` as one command with four modes:

- execute (the default): one partition (``--topic T --partition P --replicas 2,3,4``) or a
  plan file (``--plan plan.json``, Kafka's ``{"version": 1, "partitions": [{"topic",
  "partition", "replicas"}]}``), all or nothing, then follow the moves with a progress
  bar unless ``--no-wait``;
- ``--generate --brokers 1,2,3,4 [--topic T]``: print a plan placing the topics (every
  non-internal topic by default) afresh over those brokers, rack-aware; nothing moves;
- ``--verify --plan plan.json``: each partition's state against the plan; exit 0 once
  every partition has its planned replicas and none is moving, 1 otherwise, so a
  script can wait with ``until highwater partitions reassign --verify --plan p.json``;
- ``--cancel``: cancel the moves of one partition or of a plan's partitions (back to the
  original replicas).

``--throttle BYTES_PER_S`` (execute) sets both replication throttle rates
(``leader.replication.throttled.rate``, ``follower.replication.throttled.rate``) on every
broker the moves involve before starting them, as Kafka's tool does: the copies the
moves make travel at that rate, and nothing else is slowed. The per-broker throttle
rates are removed from every broker once no partition moves: when a followed execute
with ``--throttle`` ends, or by a ``--verify`` or a ``--cancel`` after which nothing
moves (Kafka's tool removes them on the same occasions, rates set by hand included).

ALTER on the cluster may move partitions (``POST …/reassignment:alter``); the listings
need DESCRIBE on the topics. A usage mistake exits 2 naming it; a refusal exits 1 with
the broker's error (nothing moved).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from broker.cli.common import (
    DEFAULT_SERVER,
    EXIT_BAD_SETTINGS,
    ServerOption,
    fail,
    run_client,
    security_options,
)
from broker.cli.moves import Partition, assignment_of, follow, racks_of, targets
from broker.client.admin import AdminClient
from broker.client.security import ClientSecurity
from broker.cluster.move_plans import generate
from broker.topics.throttle_rates import RATE_SETTINGS

stdout_console = Console(highlight=False, soft_wrap=True)
stderr_console = Console(stderr=True, highlight=False, soft_wrap=True)


class PlanEntry(BaseModel):
    topic: str
    partition: int
    replicas: list[int]


class Plan(BaseModel):
    """Kafka's reassignment JSON; fields Kafka adds (``log_dirs``) are ignored."""

    version: int = 1
    partitions: list[PlanEntry]


def _broker_list(text: str, option: str) -> list[int]:
    try:
        brokers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise fail(
            f"{option} expects broker ids separated by commas, like 2,3,4 (got {text!r})", EXIT_BAD_SETTINGS
        ) from None
    if not brokers:
        raise fail(f"{option} names no broker", EXIT_BAD_SETTINGS)
    return brokers


def _read_plan(path: Path) -> Plan:
    try:
        return Plan.model_validate_json(path.read_text())
    except OSError as error:
        raise fail(f"cannot read the plan {str(path)!r}: {error.strerror}", EXIT_BAD_SETTINGS) from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise fail(
            f"the plan {str(path)!r} is not Kafka's reassignment JSON: {where}: {first['msg']}", EXIT_BAD_SETTINGS
        ) from None


def _plan_json(moves: dict[Partition, list[int]]) -> str:
    entries = [{"topic": t, "partition": p, "replicas": replicas} for (t, p), replicas in sorted(moves.items())]
    return json.dumps({"version": 1, "partitions": entries}, indent=2)


def _chosen(
    topic: str | None, partition: int | None, replicas: str | None, plan: Path | None, *, cancel: bool
) -> dict[Partition, list[int] | None]:
    """The partitions a run names, with their targets (None where it cancels)."""
    if plan is not None:
        if topic is not None or partition is not None or replicas is not None:
            raise fail("--plan names the partitions itself: leave out --topic, --partition and --replicas", 2)
        entries = _read_plan(plan).partitions
        return {(e.topic, e.partition): None if cancel else e.replicas for e in entries}
    if topic is None or partition is None:
        raise fail("name the partition (--topic and --partition) or give a plan (--plan)", EXIT_BAD_SETTINGS)
    if cancel:
        return {(topic, partition): None}
    if replicas is None:
        raise fail("--replicas gives the target brokers, like --replicas 2,3,4", EXIT_BAD_SETTINGS)
    return {(topic, partition): _broker_list(replicas, "--replicas")}


@security_options
def reassign(
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="The partition's topic.")] = None,
    partition: Annotated[int | None, typer.Option("--partition", "-p", help="The partition.")] = None,
    replicas: Annotated[str | None, typer.Option(help="Target brokers, preferred leader first: 2,3,4.")] = None,
    plan: Annotated[Path | None, typer.Option(help="Kafka's reassignment JSON (execute, verify, cancel).")] = None,
    generate_plan: Annotated[bool, typer.Option("--generate", help="Print a plan over --brokers.")] = False,
    brokers: Annotated[str | None, typer.Option(help="--generate: the brokers to place over: 1,2,3,4.")] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Check a plan's partitions; exit 1 until done.")] = False,
    cancel: Annotated[bool, typer.Option("--cancel", help="Cancel the moves of the named partitions.")] = False,
    wait: Annotated[bool, typer.Option(help="Follow the moves until they complete.")] = True,
    throttle: Annotated[
        int | None, typer.Option(min=0, help="Copy at most this many bytes/s per broker while moving.")
    ] = None,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Move partitions to other brokers (or --generate, --verify, --cancel)."""
    if sum((generate_plan, verify, cancel)) > 1:
        raise fail("choose one of --generate, --verify and --cancel", EXIT_BAD_SETTINGS)
    if generate_plan:
        _generate(topic, brokers, server, security)
        return
    if verify:
        if plan is None:
            raise fail("--verify checks a plan: give it with --plan", EXIT_BAD_SETTINGS)
        _verify(_read_plan(plan), server, security)
        return
    moves = _chosen(topic, partition, replicas, plan, cancel=cancel)
    if throttle is not None and cancel:
        raise fail("--throttle slows the copies of moves being started: leave it out of --cancel", EXIT_BAD_SETTINGS)

    async def run(client: AdminClient) -> list[dict]:
        if throttle is not None:
            await _set_throttle(client, moves, throttle)
        started = await client.alter_reassignments(targets(moves))
        if wait and not cancel:
            await follow(client, stderr_console, "moving")
        if ((throttle is not None and wait) or cancel) and not await client.list_reassignments():
            await _remove_throttles(client)
        return started

    started = run_client(server, run, security)
    verb = "cancelled the moves of" if cancel else "moving"
    stdout_console.print(f"{verb} {len(started)} partition(s)")
    if not wait or cancel:
        stdout_console.print(reassignments_table(started))


async def _set_throttle(client: AdminClient, moves: dict[Partition, list[int] | None], rate: int) -> None:
    """Both throttle rates at ``rate`` on each broker a move involves: its current replicas and its target."""
    current = assignment_of(await client.describe_all_partitions())
    involved = sorted({broker for key, target in moves.items() for broker in [*current.get(key, []), *(target or [])]})
    for broker_id in involved:
        await client.alter_broker_configs(broker_id, dict.fromkeys(RATE_SETTINGS, str(rate)))
    stderr_console.print(f"throttling the copies to {rate} bytes/s on broker(s) {', '.join(map(str, involved))}")


async def _remove_throttles(client: AdminClient) -> None:
    """No partition moves: remove the per-broker throttle rates from every registered broker (Kafka's --verify)."""
    for broker in await client.list_brokers():
        await client.alter_broker_configs(broker["broker_id"], dict.fromkeys(RATE_SETTINGS))


def _generate(topic: str | None, brokers: str | None, server: str, security: ClientSecurity) -> None:
    if brokers is None:
        raise fail("--generate places over brokers: give them with --brokers 1,2,3,4", EXIT_BAD_SETTINGS)
    chosen = _broker_list(brokers, "--brokers")

    async def read(client: AdminClient) -> tuple[list[dict], list[dict], list[dict]]:
        return await client.list_topics(), await client.describe_all_partitions(), await client.list_brokers()

    topics, partitions, registered = run_client(server, read, security)
    racks = racks_of(registered)
    unknown = [broker for broker in chosen if broker not in racks]
    if unknown:
        raise fail(f"broker {unknown[0]} is not registered (registered: {sorted(racks)})")
    names = [topic] if topic is not None else [t["topic_name"] for t in topics if not t.get("is_internal")]
    planned = generate(assignment_of(partitions), {broker: racks[broker] for broker in chosen}, names)
    for warning in planned.rack_warnings:
        stderr_console.print(f"highwater: {warning}", markup=False)
    typer.echo(_plan_json(planned.moves))


def _verify(plan: Plan, server: str, security: ClientSecurity) -> None:
    async def read(client: AdminClient) -> tuple[list[dict], list[dict]]:
        return await client.describe_all_partitions(), await client.list_reassignments()

    partitions, moving = run_client(server, read, security)
    if not moving:
        run_client(server, _remove_throttles, security)
    current = assignment_of(partitions)
    in_progress = {(m["topic_name"], m["partition_id"]) for m in moving}
    table = Table(header_style="bold")
    for column in ("topic", "partition", "planned", "replicas", "state"):
        table.add_column(column)
    done = True
    for entry in plan.partitions:
        key = (entry.topic, entry.partition)
        replicas = current.get(key)
        if key in in_progress:
            state = "in progress"
        elif replicas == entry.replicas:
            state = "complete"
        else:
            state = "not as planned" if replicas is not None else "no such partition"
        done = done and state == "complete"
        shown = "-" if replicas is None else ",".join(map(str, replicas))
        table.add_row(entry.topic, str(entry.partition), ",".join(map(str, entry.replicas)), shown, state)
    stdout_console.print(table)
    if not done:
        raise typer.Exit(1)


def reassignments_table(rows: list[dict]) -> Table:
    table = Table(header_style="bold")
    for column in ("topic", "partition", "adding", "removing"):
        table.add_column(column)
    for row in sorted(rows, key=lambda r: (r["topic_name"], r["partition_id"])):
        adding = ",".join(map(str, row["adding_replicas"])) or "-"
        removing = ",".join(map(str, row["removing_replicas"])) or "-"
        table.add_row(row["topic_name"], str(row["partition_id"]), adding, removing)
    return table


@security_options
def reassignments(
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """List the partition moves under way."""
    moving = run_client(server, AdminClient.list_reassignments, security)
    if not moving:
        stdout_console.print("no partition is moving")
        return
    stdout_console.print(reassignments_table(moving))
