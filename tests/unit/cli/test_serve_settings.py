"""``highwater serve`` settings: flags override the file and the environment; bad ones stop the process.

The error cases run the real command as a subprocess: it must exit with code 2 and
exactly one line on stderr before creating anything on disk.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import typer

from broker.cli.app import settings_or_exit

REPO_ROOT = Path(__file__).resolve().parents[3]


def run_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HIGHWATER_")}
    return subprocess.run(
        [sys.executable, "-m", "broker", "serve", *args],
        cwd=REPO_ROOT,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@contextmanager
def held_port(host: str) -> Iterator[int]:
    """A port on ``host`` that another socket listens on for the duration."""
    with socket.socket() as holder:
        holder.bind((host, 0))
        holder.listen(1)
        yield holder.getsockname()[1]


def own_storage(tmp_path: Path) -> tuple[str, ...]:
    """``serve``'s flags for a data dir and metadata store of the test's own."""
    return "--data-dir", str(tmp_path / "data"), "--metadata", f"sqlite://{tmp_path / 'metadata.db'}"


def test_out_of_range_port_stops_with_one_line_and_exit_code_2(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = run_serve("--data-dir", str(data_dir), "--port", "70000")
    assert result.returncode == 2
    assert result.stderr == "highwater: invalid setting port: must be <= 65535 (got 70000)\n"
    assert not data_dir.exists()


def test_invalid_environment_value_names_the_setting(tmp_path: Path) -> None:
    result = run_serve("--data-dir", str(tmp_path), env={"HIGHWATER_TOPIC_DEFAULTS__SEGMENT_BYTES": "10"})
    assert result.returncode == 2
    assert result.stderr == "highwater: invalid setting topic_defaults.segment_bytes: must be >= 1024 (got 10)\n"


def test_invalid_toml_value_and_malformed_toml(tmp_path: Path) -> None:
    config = tmp_path / "broker.toml"
    config.write_text('log_flush_policy = "sometimes"\n')
    result = run_serve("--config", str(config), "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "highwater: invalid setting log_flush_policy: must be one of 'fsync', 'interval' or 'os' (got 'sometimes')"
    ]
    config.write_text("port = \n")
    malformed = run_serve("--config", str(config))
    assert malformed.returncode == 2
    assert len(malformed.stderr.splitlines()) == 1
    assert malformed.stderr.startswith(f"highwater: config file {config} is not valid TOML")


def test_invalid_metadata_flag_is_refused_at_start(tmp_path: Path) -> None:
    result = run_serve("--data-dir", str(tmp_path), "--metadata", "mysql://db")
    assert result.returncode == 2
    expected = "highwater: invalid setting metadata_store: invalid metadata store URL 'mysql://db'"
    assert result.stderr.startswith(expected)
    assert len(result.stderr.splitlines()) == 1


def test_flags_override_file_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "broker.toml"
    config.write_text('node_id = 5\nport = 9500\nhost = "0.0.0.0"\ndata_dir = "/srv/file"\n')
    monkeypatch.setenv("HIGHWATER_PORT", "9600")
    monkeypatch.setenv("HIGHWATER_NODE_ID", "6")
    settings = settings_or_exit(config, node_id=7, port=None, host=None, data_dir=tmp_path / "flag")
    assert (settings.node_id, settings.port, settings.host) == (7, 9600, "0.0.0.0")
    assert settings.data_dir == tmp_path / "flag"


def test_settings_error_exits_with_code_2() -> None:
    with pytest.raises(typer.Exit) as caught:
        settings_or_exit(None, port=-5)
    assert caught.value.exit_code == 2


def test_port_in_use_is_one_line_and_exit_code_1(tmp_path: Path) -> None:
    with held_port("127.0.0.1") as port:
        result = run_serve("--port", str(port), *own_storage(tmp_path))
    assert result.returncode == 1
    assert result.stderr == f"highwater: cannot listen on 127.0.0.1:{port} (HTTP): address already in use\n"


def test_kafka_listener_port_in_use_is_named_as_the_kafka_listener(tmp_path: Path) -> None:
    with held_port("127.0.0.1") as port:
        result = run_serve("--port", "0", *own_storage(tmp_path), env={"HIGHWATER_KAFKA_LISTENER": f"127.0.0.1:{port}"})
    assert result.returncode == 1
    assert (
        result.stderr == f"highwater: cannot listen on 127.0.0.1:{port} (the Kafka listener): address already in use\n"
    )


def test_anonymous_listener_off_loopback_is_refused_naming_the_address_and_the_ways_out(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = run_serve("--host", "0.0.0.0", "--data-dir", str(data_dir))
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("highwater: refusing to listen on 0.0.0.0 with security.authentication = 'none'")
    assert "--allow-anonymous" in result.stderr
    assert "HIGHWATER_SECURITY__AUTHENTICATION" in result.stderr
    assert not data_dir.exists()


@pytest.mark.parametrize(
    ("flags", "env"), [(["--allow-anonymous"], {}), ([], {"HIGHWATER_ALLOW_ANONYMOUS": "true"})], ids=["flag", "env"]
)
def test_allow_anonymous_lets_the_broker_go_on_to_bind(tmp_path: Path, flags: list[str], env: dict[str, str]) -> None:
    with held_port("0.0.0.0") as port:
        result = run_serve("--host", "0.0.0.0", "--port", str(port), *own_storage(tmp_path), *flags, env=env)
    assert result.returncode == 1, "past the anonymous-listener check, the bind itself fails"
    assert result.stderr == f"highwater: cannot listen on 0.0.0.0:{port} (HTTP): address already in use\n"


def test_missing_tls_certificate_stops_the_broker_with_exit_code_2(tmp_path: Path) -> None:
    env = {"HIGHWATER_TLS__CERT_FILE": str(tmp_path / "cert.pem"), "HIGHWATER_TLS__KEY_FILE": str(tmp_path / "key.pem")}
    result = run_serve("--data-dir", str(tmp_path / "data"), "--metadata", f"sqlite://{tmp_path / 'm.db'}", env=env)
    assert result.returncode == 2
    assert result.stderr == f"highwater: tls.cert_file/tls.key_file {tmp_path / 'cert.pem'}: no such file\n"


def test_a_misspelt_variable_stops_the_broker_naming_the_setting_meant(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = run_serve("--data-dir", str(data_dir), env={"HIGHWATER_LOG_RETENTON_MS": "1"})
    assert result.returncode == 2
    assert result.stderr == (
        "highwater: unknown environment variable HIGHWATER_LOG_RETENTON_MS (did you mean HIGHWATER_LOG_RETENTION_MS?)\n"
    )
    assert not data_dir.exists()


def test_print_config_names_each_settings_source_and_starts_nothing(tmp_path: Path) -> None:
    config = tmp_path / "broker.toml"
    config.write_text("port = 9500\nnode_id = 5\n[topic_defaults]\nretention_ms = 3600000\n")
    data_dir = tmp_path / "data"
    env = {"HIGHWATER_NODE_ID": "6", "HIGHWATER_SERVER": "http://elsewhere:9092", "HIGHWATER_PRODUCER_ACKS": "1"}
    result = run_serve("--config", str(config), "--data-dir", str(data_dir), "--print-config", env=env)
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert {
        "port = 9500  # file",
        "node_id = 6  # environment",
        f'data_dir = "{data_dir}"  # flag',
        'host = "127.0.0.1"  # default',
        "log_retention_ms = 3600000  # file",
        "retention_ms = 3600000  # file",
    } <= set(lines)
    assert not data_dir.exists()
