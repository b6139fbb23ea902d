"""``highwater acls add|list|remove``: Kafka ACLs, through a broker or straight into the store.

Options take the REST v3 wire values (``--operation WRITE``, case-insensitive); they are
checked here with the same codec the broker uses, so a typo is refused before anything
is sent, with the allowed values in the message. ``add`` defaults to a LITERAL pattern,
any host and ALLOW, as ``kafka-acls`` does. ``remove`` needs at least one filter option:
an accidental bare ``remove`` must not delete every ACL (``--resource-type ANY`` says
"all" on purpose).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from broker.cli.common import fail
from broker.cli.security_target import MetadataOption, OnlineServerOption, choose_target
from broker.client.admin import AdminClient
from broker.cluster.security_store import SecurityStore
from broker.errors import HighwaterError
from broker.security.acl_codec import WIRE_FIELDS, binding_from_wire, binding_to_wire, filter_from_wire
from broker.security.principal import USER

T = TypeVar("T")

acls_app = typer.Typer(
    help="Add, list and remove ACLs (online with -s, or offline with --metadata).",
    no_args_is_help=True,
)
stdout_console = Console(highlight=False, soft_wrap=True)

ResourceTypeOption = Annotated[
    str | None, typer.Option("--resource-type", help="TOPIC, GROUP or CLUSTER (ANY in filters).")
]
ResourceNameOption = Annotated[
    str | None, typer.Option("--resource-name", help="Topic or group name, '*', or kafka-cluster.")
]
PatternTypeOption = Annotated[
    str | None, typer.Option("--pattern-type", help="LITERAL or PREFIXED (ANY or MATCH in filters).")
]
PrincipalOption = Annotated[str | None, typer.Option("--principal", help=f"{USER}:<name>, or {USER}:* for everyone.")]
HostOption = Annotated[str | None, typer.Option("--host", help="Client host the ACL applies to; '*' for any.")]
OperationOption = Annotated[
    str | None,
    typer.Option(
        "--operation", help="ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS."
    ),
]
PermissionOption = Annotated[str | None, typer.Option("--permission", help="ALLOW or DENY.")]


def _given(**fields: str | None) -> dict[str, str]:
    return {name: value for name, value in fields.items() if value is not None}


def _checked(decode: Callable[[], T]) -> T:
    """``decode()``, or its validation message as one line and exit code 1."""
    try:
        return decode()
    except HighwaterError as error:
        raise fail(error.message) from None


def acls_table(rows: list[dict]) -> Table:
    table = Table(*(field.upper() for field in WIRE_FIELDS), box=None, header_style="bold")
    for row in rows:
        table.add_row(*(str(row.get(field, "")) for field in WIRE_FIELDS))
    return table


@acls_app.command("add")
def add_acl(
    ctx: typer.Context,
    resource_type: ResourceTypeOption = None,
    resource_name: ResourceNameOption = None,
    pattern_type: PatternTypeOption = "LITERAL",
    principal: PrincipalOption = None,
    host: HostOption = "*",
    operation: OperationOption = None,
    permission: PermissionOption = "ALLOW",
    server: OnlineServerOption = None,
    metadata: MetadataOption = None,
) -> None:
    """Add one ACL: --resource-type, --resource-name, --principal and --operation are required."""
    target = choose_target(ctx, server, metadata)
    wire = {
        "resource_type": resource_type,
        "resource_name": resource_name,
        "pattern_type": pattern_type,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission": permission,
    }
    binding = _checked(lambda: binding_from_wire(wire))

    async def online(client: AdminClient) -> bool | None:
        await client.create_acl(binding_to_wire(binding))
        return None

    async def offline(store: SecurityStore) -> bool | None:
        return await store.add_acl(binding)

    created = target.run(online, offline)
    stdout_console.print("ACL already present" if created is False else "added ACL")
    stdout_console.print(acls_table([binding_to_wire(binding)]))


@acls_app.command("list")
def list_acls(
    ctx: typer.Context,
    resource_type: ResourceTypeOption = None,
    resource_name: ResourceNameOption = None,
    pattern_type: PatternTypeOption = None,
    principal: PrincipalOption = None,
    host: HostOption = None,
    operation: OperationOption = None,
    permission: PermissionOption = None,
    server: OnlineServerOption = None,
    metadata: MetadataOption = None,
) -> None:
    """List the ACLs, all or those the filter options select."""
    target = choose_target(ctx, server, metadata)
    params = _given(
        resource_type=resource_type,
        resource_name=resource_name,
        pattern_type=pattern_type,
        principal=principal,
        host=host,
        operation=operation,
        permission=permission,
    )
    _checked(lambda: filter_from_wire(params))

    async def offline(store: SecurityStore) -> list[dict]:
        return [binding_to_wire(b) for b in await store.acls(filter_from_wire(params))]

    rows = target.run(lambda client: client.list_acls(params), offline)
    stdout_console.print(acls_table(rows))


@acls_app.command("remove")
def remove_acls(
    ctx: typer.Context,
    resource_type: ResourceTypeOption = None,
    resource_name: ResourceNameOption = None,
    pattern_type: PatternTypeOption = None,
    principal: PrincipalOption = None,
    host: HostOption = None,
    operation: OperationOption = None,
    permission: PermissionOption = None,
    server: OnlineServerOption = None,
    metadata: MetadataOption = None,
) -> None:
    """Remove every ACL the filter options select (at least one option; --resource-type ANY for all)."""
    target = choose_target(ctx, server, metadata)
    params = _given(
        resource_type=resource_type,
        resource_name=resource_name,
        pattern_type=pattern_type,
        principal=principal,
        host=host,
        operation=operation,
        permission=permission,
    )
    if not params:
        raise fail("acls remove needs at least one filter option (--resource-type ANY removes every ACL)")
    _checked(lambda: filter_from_wire(params))

    async def offline(store: SecurityStore) -> list[dict]:
        return [binding_to_wire(b) for b in await store.remove_acls(filter_from_wire(params))]

    rows = target.run(lambda client: client.delete_acls(params), offline)
    stdout_console.print(f"removed {len(rows)} ACL(s)")
    if rows:
        stdout_console.print(acls_table(rows))
