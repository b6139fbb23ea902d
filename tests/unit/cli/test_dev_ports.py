"""``highwater dev`` never moves a port: TIME-WAIT does not count as taken, a held port stops the command in one line.

After Ctrl-C and ``make run`` at once, the ports hold TIME-WAIT connections the brokers'
own closes left; dev's old probe (a plain bind) took them for taken and silently gave
the Kafka listeners random ports. The probe now binds as the broker does.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from broker.cli.dev_ports import (
    PlannedListener,
    PortUnavailable,
    bind_refusal,
    check_ports,
    planned_listeners,
    tcp_sockets,
)
from broker.command import app
from tests.support.brokers import free_port

TIME_WAIT = "06"
"""The state column of a TIME-WAIT connection in ``/proc/net/tcp``."""
WAIT_S = 10.0


def _states(port: int) -> set[str]:
    """The states of the TCP sockets whose local port is ``port``."""
    return {state for state, _ in tcp_sockets(port)}


def _wait_for_time_wait(port: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while TIME_WAIT not in _states(port):
        assert time.monotonic() < deadline, f"no TIME-WAIT socket on port {port}: {_states(port)}"
        time.sleep(0.01)


@pytest.fixture
def time_wait_port() -> int:
    """A port whose listener is gone, with a TIME-WAIT connection left on it by the server closing first.

    That is what a broker leaves on its Kafka port after answering an HTTP request by
    closing, or on any port when it stops while clients are connected.
    """
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = listener.accept()
            accepted.close()
            assert client.recv(1) == b"", "the server's close reached the client"
    _wait_for_time_wait(port)
    return port


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another socket of this process listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_time_wait_connection_does_not_make_the_port_taken(time_wait_port: int) -> None:
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", time_wait_port))
    kafka = PlannedListener(1, "Kafka listener", time_wait_port, "--kafka-base-port")
    assert bind_refusal(kafka) is None
    check_ports([kafka])


def test_a_held_port_is_refused_in_one_line_naming_the_listener_and_its_owner(held_port: int) -> None:
    refusal = bind_refusal(PlannedListener(2, "Kafka listener", held_port, "--kafka-base-port"))
    assert refusal is not None
    assert refusal.startswith(f"port {held_port} (broker 2's Kafka listener) is in use by pid {os.getpid()} (")
    assert refusal.endswith("); stop it or choose other ports with --kafka-base-port")
    assert "\n" not in refusal


def test_a_port_above_65535_is_refused_not_replaced() -> None:
    listeners = planned_listeners(3, 60_000, 65_534)
    assert [(listener.node_id, listener.listener, listener.port) for listener in listeners][-2:] == [
        (3, "HTTP listener", 60_002),
        (3, "Kafka listener", 65_536),
    ]
    with pytest.raises(PortUnavailable) as refused:
        check_ports(listeners)
    assert (
        str(refused.value) == "port 65536 (broker 3's Kafka listener) is above 65535; choose a lower --kafka-base-port"
    )


def test_dev_stops_before_starting_anything_when_its_kafka_port_is_held(held_port: int, tmp_path: Path) -> None:
    directory = tmp_path / "dev"
    result = CliRunner().invoke(
        app,
        [
            "dev",
            "-n",
            "1",
            "--dir",
            str(directory),
            "--base-port",
            str(free_port()),
            "--kafka-base-port",
            str(held_port),
        ],
    )
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"highwater: port {held_port} (broker 1's Kafka listener) is in use by pid ")
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert not directory.exists()


def test_dev_refuses_a_default_kafka_port_above_65535(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["dev", "-n", "1", "--dir", str(tmp_path / "dev"), "--base-port", "65000"])
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        "highwater: port 75000 (broker 1's Kafka listener) is above 65535; choose a lower --kafka-base-port\n"
    )
