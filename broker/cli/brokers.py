"""``highwater brokers list|drain|undrain|balance``: the brokers, emptying one, spreading replicas over all.

- ``list``: each registered broker's address, rack, the replicas and leaderships it
  holds, the bytes of its replicas' logs (its ``log-dirs``), and its state (``draining``
  once ``drain`` marked it).
- ``drain N`` (``POST …/brokers:drain``): the controller marks broker N drained, so no
  new replica is placed on it, and moves every replica on it to the others
  (``move_plans.drain``: the least loaded broker, on a rack the partition does not use yet
  where one exists); then, once no partition names it, says that N may be stopped: a
  broker that holds no replica leads nothing and serves no follower.
- ``undrain N`` (``POST …/brokers:undrain``): N takes new replicas again.
- ``balance`` (``POST …/brokers:balance``): one bounded step (``--batch`` moves) of
  ``move_plans.balance`` over the brokers not being drained, each step completed before
  the next is asked for, until every broker is within ``--tolerance`` of the mean replica
  count and then of the mean count of preferred leaderships (reorders, which copy nothing,
  each followed by a preferred election); adding an empty broker and running it spreads
  the load onto it.

The moves are reassignments planned by the controller, so no acknowledged record is lost
while they run; progress is shown as bytes copied (``moves.follow``). A plan that must put two replicas of
a partition on one rack says so on stderr. Each needs ALTER on the cluster.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.filesize import decimal
from rich.table import Table

from broker.cli.common import (
    DEFAULT_SERVER,
    EXIT_BAD_SETTINGS,
    ServerOption,
    fail,
    run_client,
    security_options,
)
from broker.cli.moves import assignment_of, follow
from broker.client.admin import AdminClient
from broker.client.security import ClientSecurity
from broker.cluster.move_plans import replica_counts

brokers_app = typer.Typer(
    help="Brokers: list them, drain one (and let it back), balance replicas over them.", no_args_is_help=True
)
stdout_console = Console(highlight=False, soft_wrap=True)
stderr_console = Console(stderr=True, highlight=False, soft_wrap=True)
MAX_BALANCE_ROUNDS = 1000


async def _cluster(client: AdminClient) -> tuple[list[dict], list[dict]]:
    return await client.list_brokers(), await client.describe_all_partitions()


async def _listing(client: AdminClient) -> tuple[list[dict], list[dict], dict[int, int]]:
    brokers, partitions = await _cluster(client)
    sizes = {b["broker_id"]: sum((await client.replica_sizes(b["broker_id"])).values()) for b in brokers}
    return brokers, partitions, sizes


def _warn(started: dict) -> None:
    for warning in started["rack_warnings"]:
        stderr_console.print(f"highwater: {warning}", markup=False)


@brokers_app.command("list")
@security_options
def list_brokers(
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Every registered broker: address, rack, replicas, leaderships, bytes and state."""
    brokers, partitions, sizes = run_client(server, _listing, security)
    replicas = replica_counts(assignment_of(partitions), [b["broker_id"] for b in brokers])
    table = Table(header_style="bold")
    for column in ("id", "address", "rack", "replicas", "leaders", "bytes", "state"):
        table.add_column(column)
    for broker in sorted(brokers, key=lambda b: b["broker_id"]):
        broker_id = broker["broker_id"]
        leaders = sum(1 for p in partitions if p.get("leader_id") == broker_id)
        rack = broker.get("rack") or "-"
        state = "draining" if broker["draining"] else "live"
        table.add_row(
            str(broker_id),
            broker["url"],
            rack,
            str(replicas[broker_id]),
            str(leaders),
            decimal(sizes[broker_id]),
            state,
        )
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
        started = await client.drain_broker(broker_id)
        _warn(started)
        if started["data"] and wait:
            await follow(client, stderr_console, f"draining broker {broker_id}")
        return len(started["data"])

    moved = run_client(server, run, security)
    if not wait:
        stdout_console.print(
            f"moving {moved} replica(s) off broker {broker_id}; follow with: highwater partitions reassignments"
        )
        return
    stdout_console.print(f"broker {broker_id} holds no replica and leads nothing: it may be stopped ({moved} moved)")


@brokers_app.command("undrain")
@security_options
def undrain_broker(
    broker_id: Annotated[int, typer.Argument(help="The broker to let take new replicas again.")],
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Let a drained broker take new replicas again (moves under way go on)."""

    async def run(client: AdminClient) -> bool:
        return await client.undrain_broker(broker_id)

    was_draining = run_client(server, run, security)
    state = "takes new replicas again" if was_draining else "was not being drained"
    stdout_console.print(f"broker {broker_id} {state}")


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
            started = await client.balance_brokers(tolerance, batch)
            _warn(started)
            if not started["data"]:
                brokers, partitions = await _cluster(client)
                taking = [b["broker_id"] for b in brokers if not b["draining"]]
                counts = replica_counts(assignment_of(partitions), taking)
                return moved, {broker: counts[broker] for broker in taking}
            moved += len(started["data"])
            if not wait:
                return moved, {}
            await follow(client, stderr_console, f"balancing (step of {len(started['data'])})")
        return moved, {}

    moved, counts = run_client(server, run, security)
    if not wait:
        stdout_console.print(f"moving {moved} replica(s); follow with: highwater partitions reassignments")
        return
    spread = ", ".join(f"{broker}: {count}" for broker, count in sorted(counts.items()))
    stdout_console.print(f"balanced after {moved} move(s); replicas per broker: {spread}")
