"""``highwater bench`` refuses incoherent arguments with one line and exit code 2, before starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from broker.command import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["bench", "produce"], "exactly one of --server URL and --spawn N"),
        (["bench", "produce", "--server", "http://127.0.0.1:1", "--spawn", "1"], "exactly one of --server"),
        (["bench", "e2e", "--spawn", "1", "--record-size", "4"], "--record-size must be at least 9"),
        (["bench", "produce", "--spawn", "1", "--replication-factor", "3"], "the cluster has 1"),
        (["bench", "produce", "--spawn", "1", "--count", "10", "--duration-s", "3"], "exactly one of --count"),
        (["bench", "consume", "--spawn", "1", "--duration-s", "3"], "consume needs --count"),
        (["bench", "produce", "--spawn", "1", "--acks", "2"], "--acks must be one of"),
        (["bench", "produce", "--server", "https://127.0.0.1:1", "--tls"], "for --server give --ssl-ca-file"),
        (["bench", "produce", "--spawn", "1", "--tls", "--ssl-ca-file", "/ca.pem"], "--tls makes its own CA"),
        (["bench", "produce", "--server", "http://127.0.0.1:1", "--basic-auth"], "for --server give --username"),
        (["bench", "produce", "--spawn", "1", "--basic-auth", "--username", "u"], "makes its own user"),
    ],
)
def test_bad_arguments_exit_2_naming_the_problem(arguments: list[str], message: str) -> None:
    result = runner.invoke(app, arguments)
    assert result.exit_code == 2
    assert message in result.output


def test_bench_peers_refuses_a_document_without_its_markers_before_starting_anything(tmp_path: Path) -> None:
    document = tmp_path / "performance.md"
    document.write_text("# performance\n")
    result = runner.invoke(app, ["bench", "peers", "--write-doc", str(document)])
    assert result.exit_code == 2
    assert "no <!-- highwater bench peers: begin -->" in result.output
    assert document.read_text() == "# performance\n"


def test_bench_peers_names_the_servers_it_cannot_find_and_how_to_install_them(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = runner.invoke(app, ["bench", "peers"])
    assert result.exit_code == 2
    assert "runs nats-server and redis-server" in result.output
    assert "make bench-peers" in result.output


def test_bench_without_a_command_shows_its_commands() -> None:
    result = runner.invoke(app, ["bench"])
    assert result.exit_code == 0
    for command in ("produce", "consume", "e2e", "baseline", "latency", "scale", "peers"):
        assert command in result.output


def test_scenario_names_show_a_load_other_than_send() -> None:
    from broker.bench.cli import scenario_name
    from broker.bench.spec import WorkloadSpec

    assert scenario_name(WorkloadSpec(kind="produce", replication_factor=3)) == "produce 100 B RF3 acks=all"
    raw = WorkloadSpec(kind="produce", replication_factor=3, load="raw")
    assert scenario_name(raw) == "produce 100 B RF3 acks=all raw"


def test_raw_load_for_e2e_is_refused_before_anything_starts() -> None:
    result = runner.invoke(app, ["bench", "e2e", "--spawn", "1", "--load", "raw"])
    assert result.exit_code == 2
    assert "e2e needs stamped values" in result.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["bench", "latency"], "exactly one of --server URL and --spawn N"),
        (["bench", "latency", "--spawn", "1", "--replication-factor", "3"], "the cluster has 1"),
        (["bench", "latency", "--spawn", "1", "--acks", "2"], "--acks must be one of"),
    ],
)
def test_latency_command_refuses_bad_arguments_before_starting_anything(arguments: list[str], message: str) -> None:
    result = runner.invoke(app, arguments)
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["bench", "scale", "--partitions", "1,x"], "--partitions takes comma-separated whole numbers"),
        (["bench", "scale", "--connections", "10,1"], "--connections values must be distinct and ascending"),
        (["bench", "scale", "--spawn", "1"], "--replication-factor 3 needs that many brokers"),
        (["bench", "scale", "--duration-s", "0"], "--duration-s must be positive"),
        (
            ["bench", "scale", "--metadata", "100", "--spawn", "2", "--replication-factor", "3"],
            "--replication-factor must be 2 to --spawn (2), got 3",
        ),
        (["bench", "scale", "--metadata", "100", "--replication-factor", "1"], "kills a broker"),
        (["bench", "scale", "--metadata", "10000000"], "--metadata is at most"),
    ],
)
def test_scale_command_refuses_bad_steps_before_starting_anything(arguments: list[str], message: str) -> None:
    result = runner.invoke(app, arguments)
    assert result.exit_code == 2
    assert message in result.output
