"""``--server``/``HIGHWATER_SERVER``: ``host:port`` means ``http://host:port``; anything unusable: one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from broker.cli.address import broker_url
from broker.command import app
from tests.unit.cli.rest_server import RestServer

runner = CliRunner()

UNUSABLE = [
    "notaurl",
    "localhost",
    "host:port",
    "h:1/path",
    "http://",
    "ftp://h:1",
    "localhost:0",
    "localhost:99999",
    "http://[::1:9092",
    "http://h:1/?q=1",
    "http://h:x",
    "",
]


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("localhost:9092", "http://localhost:9092"),
        ("127.0.0.1:9092", "http://127.0.0.1:9092"),
        ("[::1]:9092", "http://[::1]:9092"),
        ("broker-1.internal:19092", "http://broker-1.internal:19092"),
        (" localhost:9092 ", "http://localhost:9092"),
        ("http://127.0.0.1:9092/", "http://127.0.0.1:9092"),
        ("https://kafka.example.com", "https://kafka.example.com"),
        ("http://gateway:8080/highwater", "http://gateway:8080/highwater"),
    ],
)
def test_host_port_means_http_and_urls_are_kept(text: str, url: str) -> None:
    assert broker_url(text) == url


@pytest.mark.parametrize("text", UNUSABLE)
def test_anything_else_is_refused_in_one_line_naming_it(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        broker_url(text)
    message = str(refused.value)
    assert repr(text) in message and "give host:port or http://host:port" in message
    assert "\n" not in message


def commands_taking_a_server(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every command of the ``highwater`` tree that has a ``--server`` option."""
    found = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found.extend(commands_taking_a_server(command, (*prefix, name)))
        elif any("--server" in getattr(param, "opts", ()) for param in command.params):
            found.append((*prefix, name))
    return found


ALL_SERVER_COMMANDS = commands_taking_a_server(typer.main.get_command(app))


def test_the_command_tree_is_walked() -> None:
    assert {("topics", "list"), ("produce",), ("consume",), ("groups", "describe"), ("bench", "produce")} <= set(
        ALL_SERVER_COMMANDS
    )


REFUSALS = {
    "localhost": "neither host:port nor a URL",
    "notaurl": "neither host:port nor a URL",
    "ftp://h:1": "scheme 'ftp' is not http or https",
}


@pytest.mark.parametrize("command", ALL_SERVER_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("server", list(REFUSALS))
def test_every_command_refuses_an_unusable_server_with_one_line_and_exit_2(
    command: tuple[str, ...], server: str
) -> None:
    result = runner.invoke(app, [*command, "--server", server])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"highwater: --server: {server!r} is not a broker address ({REFUSALS[server]}); "
        "give host:port or http://host:port\n"
    )
    assert result.stdout == ""
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_host_port_from_the_option_or_the_environment_reaches_the_broker_over_http(rest_server: RestServer) -> None:
    host_port = rest_server.url.removeprefix("http://")
    assert runner.invoke(app, ["topics", "create", "orders", "-s", host_port]).exit_code == 0
    listed = runner.invoke(app, ["topics", "list"], env={"HIGHWATER_SERVER": host_port})
    assert listed.exit_code == 0, listed.output
    assert "orders" in listed.stdout
    assert [method for method, _, _, _ in rest_server.requests][-1:] == ["GET"]


def test_the_installed_command_prints_no_traceback_for_a_server_without_scheme() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "broker", "topics", "list", "-s", "notaurl"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and completed.stderr.startswith("highwater: --server: 'notaurl'")
    assert "Traceback" not in completed.stderr and completed.stdout == ""
