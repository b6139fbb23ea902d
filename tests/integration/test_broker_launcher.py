"""The launcher's children are the ``highwater`` command they were asked to be, and die with it."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.brokers import free_port, http_json, standalone_serve_arguments
from tests.support.launcher import REPO_ROOT, Launcher
from tests.support.waiting import wait_until


@pytest.fixture
def launcher() -> Iterator[Launcher]:
    own = Launcher()
    yield own
    own.close()


def environment(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HIGHWATER_")}, **extra}


def test_a_broker_serves_then_stops_cleanly_on_sigterm_and_a_sigkill_reads_as_minus_nine(
    launcher: Launcher, tmp_path: Path
) -> None:
    log = tmp_path / "broker.log"
    port = free_port()
    process = launcher.launch(
        standalone_serve_arguments(tmp_path, port), environment(HIGHWATER_LOG_FORMAT="json"), REPO_ROOT, log
    )
    wait_until(lambda: http_json("GET", f"http://127.0.0.1:{port}/readyz", timeout_s=1)[0] == 200, "the broker ready")
    assert process.poll() is None
    process.send_signal(signal.SIGTERM)
    assert process.wait(20) == 0
    assert '"event": "broker.listening"' in log.read_text()
    assert process.cpu_s is not None and process.cpu_s > 0

    again = launcher.launch(standalone_serve_arguments(tmp_path, port), environment(), REPO_ROOT, log)
    wait_until(lambda: http_json("GET", f"http://127.0.0.1:{port}/readyz", timeout_s=1)[0] == 200, "the restart ready")
    again.kill()
    assert again.wait(10) == -signal.SIGKILL


def test_a_child_reads_the_environment_it_was_given_not_the_launchers(launcher: Launcher, tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    misspelt = environment(HIGHWATER_REPLICA_LAG_TIME_MAX="5")
    process = launcher.launch(standalone_serve_arguments(tmp_path, free_port()), misspelt, REPO_ROOT, log)
    assert process.wait(20) == 2
    assert "did you mean HIGHWATER_REPLICA_LAG_TIME_MAX_MS?" in log.read_text()


def test_a_usage_error_exits_two_with_the_clis_message_in_the_log(launcher: Launcher, tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    process = launcher.launch(["serve", "--node-idd", "1"], environment(), REPO_ROOT, log)
    assert process.wait(20) == 2
    assert "No such option: --node-idd" in log.read_text()


def test_closing_the_launcher_kills_the_brokers_it_started(launcher: Launcher, tmp_path: Path) -> None:
    port = free_port()
    process = launcher.launch(
        standalone_serve_arguments(tmp_path, port), environment(), REPO_ROOT, tmp_path / "broker.log"
    )
    wait_until(lambda: http_json("GET", f"http://127.0.0.1:{port}/readyz", timeout_s=1)[0] == 200, "the broker ready")
    pidfd = os.pidfd_open(process.pid)
    try:
        assert launcher.close() == 0
        assert select.select([pidfd], [], [], 10)[0] == [pidfd], "the broker outlived its launcher"
    finally:
        os.close(pidfd)
