"""``highwater users add|list|delete``: SCRAM-SHA-512 users, through a broker or straight into the store.

The password is read from stdin only, never from an option, so it does not land in
shell history or in the process list. Listing shows names, mechanism and iteration
count; salts and keys never leave the store through this command.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from broker.cli.common import fail
from broker.cli.security_target import MetadataOption, OnlineServerOption, choose_target
from broker.client.admin import AdminClient
from broker.cluster.security_keys import check_user_name
from broker.cluster.security_store import SecurityStore
from broker.errors import HighwaterError, ResourceNotFound
from broker.security.scram import MECHANISM, new_credential

users_app = typer.Typer(
    help="Add, list and delete SCRAM-SHA-512 users (online with -s, or offline with --metadata).",
    no_args_is_help=True,
)
stdout_console = Console(highlight=False, soft_wrap=True)


def read_password() -> str:
    """One line of stdin without its line ending; an empty password is refused."""
    password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    if not password:
        raise fail("no password on stdin (pipe it in, e.g. printf '%s\\n' \"$PW\" | highwater users add ...)")
    return password


@users_app.command("add")
def add_user(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="User name: 1-255 letters, digits, '.', '_', '@', '-'.")],
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin",
            help="Read the password from the first line of stdin (the only way: never a flag, so it stays out of shell history).",
        ),
    ] = False,
    server: OnlineServerOption = None,
    metadata: MetadataOption = None,
) -> None:
    """Create a user, or replace its password."""
    target = choose_target(ctx, server, metadata)
    try:
        check_user_name(name)
    except HighwaterError as error:
        raise fail(error.message) from None
    if not password_stdin:
        raise fail("the password is read from stdin only: pass --password-stdin and pipe it in")
    password = read_password()

    async def online(client: AdminClient) -> bool | None:
        await client.upsert_user(name, password)
        return None

    async def offline(store: SecurityStore) -> bool | None:
        return await store.put_user(name, new_credential(password))

    created = target.run(online, offline)
    outcome = {True: "added user", False: "replaced the password of user", None: "set the password of user"}
    stdout_console.print(f"{outcome[created]} {name}")


@users_app.command("list")
def list_users(ctx: typer.Context, server: OnlineServerOption = None, metadata: MetadataOption = None) -> None:
    """List the users: name, mechanism and iteration count."""
    target = choose_target(ctx, server, metadata)

    async def offline(store: SecurityStore) -> list[dict]:
        users = await store.users()
        return [{"name": name, "mechanism": c.mechanism, "iterations": c.iterations} for name, c in users.items()]

    users = target.run(lambda client: client.list_users(), offline)
    table = Table("USER", "MECHANISM", "ITERATIONS", box=None, header_style="bold")
    for user in sorted(users, key=lambda u: u["name"]):
        table.add_row(user["name"], user.get("mechanism", MECHANISM), str(user.get("iterations", "")))
    stdout_console.print(table)


@users_app.command("delete")
def delete_user(
    ctx: typer.Context, name: str, server: OnlineServerOption = None, metadata: MetadataOption = None
) -> None:
    """Delete a user; its ACLs and quota stay until removed."""
    target = choose_target(ctx, server, metadata)

    async def offline(store: SecurityStore) -> None:
        if not await store.delete_user(name):
            raise ResourceNotFound(f"no user {name}")

    target.run(lambda client: client.delete_user(name), offline)
    stdout_console.print(f"deleted user {name}")
