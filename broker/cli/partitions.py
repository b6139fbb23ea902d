"""``highwater partitions elect-preferred``: move leaderships back to the preferred replicas
(``partitions reassign`` and ``partitions reassignments`` move replicas: ``broker.cli.reassign``);
``highwater partitions delete-records``: Kafka's ``kafka-delete-records``, one partition at a time.

After a broker restarts, the partitions it led are led by other replicas; the
controller's periodic rebalance (``auto_leader_rebalance_enable``) moves them back
eventually, this command does it now (Kafka's ``kafka-leader-election --election-type
PREFERRED``). Only replicas that are alive and in the ISR take leadership back, so the
command never risks data loss; partitions whose preferred replica is still catching
up are left alone and can be elected again later.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from broker.cli.common import (
    DEFAULT_SERVER,
    ServerOption,
    run_client,
    security_options,
)
from broker.cli.reassign import reassign, reassignments
from broker.client.security import ClientSecurity

partitions_app = typer.Typer(help="Partition leadership and placement.", no_args_is_help=True)
stdout_console = Console(highlight=False, soft_wrap=True)


def elected_table(elected: list[dict[str, Any]]) -> Table:
    table = Table(header_style="bold")
    for column in ("topic", "partition", "leader", "leader epoch", "isr"):
        table.add_column(column)
    for record in sorted(elected, key=lambda r: (r["topic_name"], r["partition_id"])):
        table.add_row(
            record["topic_name"],
            str(record["partition_id"]),
            str(record["leader_id"]),
            str(record["leader_epoch"]),
            ",".join(str(member) for member in record["isr"]),
        )
    return table


@partitions_app.command("elect-preferred")
@security_options
def elect_preferred(
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic; default every topic.")] = None,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Give leadership back to each partition's first replica where it is alive and in sync."""
    elected = run_client(
        server,
        lambda client: client.elect_preferred(topic),
        security,
    )
    if not elected:
        stdout_console.print("every partition is led by its preferred replica (or it is not in sync yet)")
        return
    stdout_console.print(f"moved leadership of {len(elected)} partition(s) to the preferred replica")
    stdout_console.print(elected_table(elected))


@partitions_app.command("delete-records")
@security_options
def delete_records(
    topic: str,
    partition: int,
    before_offset: Annotated[
        int,
        typer.Option("--before-offset", help="Delete every record below this offset; -1: below the high watermark."),
    ],
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Delete the partition's records below an offset: its log start rises there on every in-sync replica."""
    low_watermark = run_client(server, lambda client: client.delete_records(topic, partition, before_offset), security)
    stdout_console.print(
        f"{topic}-{partition}: low watermark {low_watermark}, no in-sync replica holds a record below it"
    )


partitions_app.command("reassign")(reassign)
partitions_app.command("reassignments")(reassignments)
