"""The variables the ``highwater`` command reads are exactly those a broker allows as the CLI's.

A broker refuses any ``HIGHWATER_*`` variable nothing reads (``config.unknown_names``),
so a CLI option reading a variable missing from ``config.variables.CLI_VARIABLES`` would
stop every broker started from a shell that sets it; and a listed variable the CLI no
longer reads would hide a misspelling.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from typer.core import TyperGroup

from broker.client.security import ClientSecurity
from broker.command import app
from config import variables

if TYPE_CHECKING:
    from typer._click import Command


def commands(command: Command) -> Iterator[Command]:
    """``command`` and every command under it, the lazily imported groups included."""
    yield command
    if isinstance(command, TyperGroup):
        context = typer.Context(command)
        for name in command.list_commands(context):
            subcommand = command.get_command(context, name)
            if subcommand is not None:
                yield from commands(subcommand)


def option_variables() -> set[str]:
    """Every environment variable an option of any ``highwater`` command falls back to."""
    found: set[str] = set()
    for command in commands(typer.main.get_command(app)):
        for parameter in command.params:
            envvar = parameter.envvar
            found.update([envvar] if isinstance(envvar, str) else envvar or [])
    return found


def test_the_options_read_exactly_the_cli_variables_but_the_password() -> None:
    assert option_variables() == set(variables.CLI_VARIABLES) - {variables.PASSWORD}


def test_client_security_reads_the_cli_variables() -> None:
    environ = {
        variables.USERNAME: "alice",
        variables.PASSWORD: "s3cret",
        variables.SSL_CA_FILE: "/ca.pem",
        variables.SSL_CERT_FILE: "/cert.pem",
        variables.SSL_KEY_FILE: "/key.pem",
    }
    assert ClientSecurity.from_environment(environ) == ClientSecurity(
        "alice", "s3cret", Path("/ca.pem"), Path("/cert.pem"), Path("/key.pem")
    )
