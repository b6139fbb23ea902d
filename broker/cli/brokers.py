"""``highwater brokers list|drain|balance``: the brokers, emptying one, spreading replicas over all.

- ``list``: each registered broker's address, rack, and the replicas and leaderships it
  holds.
- ``drain N``: every replica on broker N moves to the others (``move_plans.drain``: the
  least loaded broker, on a rack the partition does not use yet where one exists), then,
  once no partition names it, says that N may be stopped: a broker that holds no
  replica leads nothing and serves no follower.
- ``balance``: moves replicas from the most to the least loaded brokers
  (``move_plans.balance``), one bounded batch (``--batch``) at a time, each batch
  completed before the next is planned, until every broker is within ``--tolerance`` of
  the mean replica count; adding an empty broker and running it spreads the load onto it.

The moves are reassignments (``POST …/reassignment:alter``, ALTER on the cluster), so
no acknowledged record is lost while they run; progress is shown as records copied. A
plan that must put two replicas of a partition on one rack says so on stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer
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
from broker.cli.moves import assignment_of, follow, racks_of, targets
from broker.client.admin import AdminClient
from broker.client.security import ClientSecurity
from broker.cluster.move_plans import MovePlan, balance, drain, replica_counts

brokers_app = typer.Typer(help="Brokers: list them, drain one, balance replicas over them.", no_args_is_help=True)
stdout_console = Console(highlight=False, soft_wrap=True)
stderr_console = Console(stderr=True, highlight=False, soft_wrap=True)
MAX_BALANCE_ROUNDS = 1000


async def _cluster(client: AdminClient) -> tuple[list[dict], list[dict]]:
    return await client.list_brokers(), await client.describe_all_partitions()


def _warn(plan: MovePlan) -> None:
    for warning in plan.rack_warnings:
        stderr_console.print(f"highwater: {warning}", markup=False)


@brokers_app.command("list")
@security_options
def list_brokers(
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Every registered broker: address, rack, replicas and leaderships."""
    brokers, partitions = run_client(server, _cluster, security)
    replicas = replica_counts(assignment_of(partitions), [b["broker_id"] for b in brokers])
    table = Table(header_style="bold")
    for column in ("id", "address", "rack", "replicas", "leaders"):
        table.add_column(column)
    for broker in sorted(brokers, key=lambda b: b["broker_id"]):
        broker_id = broker["broker_id"]
        leaders = sum(1 for p in partitions if p.get("leader_id") == broker_id)
        rack = broker.get("rack") or "-"
        table.add_row(str(broker_id), broker["url"], rack, str(replicas[broker_id]), str(leaders))
    stdout_console.print(table)


@brokers_app.command("drain")
@security_options
def drain_broker(
    broker_id: Annotated[int, typer.Argument(help="The broker to empty.")],
    wait: Annotated[bool, typer.Option(help="Follow the moves until the broker is empty.")] = True,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Move every replica off one broker; then it may be stopped."""

    async def run(client: AdminClient) -> int:
        brokers, partitions = await _cluster(client)
        racks = racks_of(brokers)
        if broker_id not in racks:
            raise fail(f"broker {broker_id} is not registered (registered: {sorted(racks)})", EXIT_BAD_SETTINGS)
        plan = drain(assignment_of(partitions), broker_id, racks)
        _warn(plan)
        if plan.moves:
            await client.alter_reassignments(targets(plan.moves))
            if wait:
                await follow(client, stderr_console, f"draining broker {broker_id}")
        return len(plan.moves)

    moved = run_client(server, run, security)
    if not wait:
        stdout_console.print(
            f"moving {moved} replica(s) off broker {broker_id}; follow with: highwater partitions reassignments"
        )
        return
    stdout_console.print(f"broker {broker_id} holds no replica and leads nothing: it may be stopped ({moved} moved)")


@brokers_app.command("balance")
@security_options
def balance_brokers(
    tolerance: Annotated[float, typer.Option(help="Allowed distance from the mean replica count, 0.1 = 10 %.")] = 0.1,
    batch: Annotated[int, typer.Option(help="Replicas moved per step (each step completes first).")] = 10,
    wait: Annotated[bool, typer.Option(help="Run steps until balanced; --no-wait starts one step.")] = True,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Move replicas until every broker holds about the mean."""
    if not 0 <= tolerance < 1 or batch < 1:
        raise fail("--tolerance must be in [0, 1) and --batch at least 1", EXIT_BAD_SETTINGS)

    async def run(client: AdminClient) -> tuple[int, dict[int, int]]:
        moved = 0
        for _ in range(MAX_BALANCE_ROUNDS):
            brokers, partitions = await _cluster(client)
            assignment = assignment_of(partitions)
            plan = balance(assignment, racks_of(brokers), tolerance, batch)
            _warn(plan)
            if not plan.moves:
                return moved, dict(replica_counts(assignment, racks_of(brokers)))
            await client.alter_reassignments(targets(plan.moves))
            moved += len(plan.moves)
            if not wait:
                return moved, {}
            await follow(client, stderr_console, f"balancing (step of {len(plan.moves)})")
        return moved, {}

    moved, counts = run_client(server, run, security)
    if not wait:
        stdout_console.print(f"moving {moved} replica(s); follow with: highwater partitions reassignments")
        return
    spread = ", ".join(f"{broker}: {count}" for broker, count in sorted(counts.items()))
    stdout_console.print(f"balanced after {moved} move(s); replicas per broker: {spread}")
