"""The client commands' security options: flags or ``HIGHWATER_*`` environment, the password from the environment
only, and unusable options stop the command with one line and exit code 2 before any request."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from broker.cli.common import client_security
from broker.command import app

runner = CliRunner()


def test_flags_win_over_the_environment_and_the_password_stays_out_of_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIGHWATER_USERNAME", "from-env")
    monkeypatch.setenv("HIGHWATER_PASSWORD", "s3cret-pw")
    monkeypatch.setenv("HIGHWATER_SSL_CA_FILE", "/env/ca.pem")
    security = client_security("alice", None, Path("/c.pem"), None)
    assert security.client_options() == {
        "username": "alice",
        "password": "s3cret-pw",
        "ssl_ca_file": Path("/env/ca.pem"),
        "ssl_cert_file": Path("/c.pem"),
        "ssl_key_file": None,
    }
    assert "s3cret-pw" not in repr(security)


def test_a_password_without_a_user_stops_with_exit_code_2(closed_port_url: str) -> None:
    result = runner.invoke(app, ["topics", "list", "-s", closed_port_url], env={"HIGHWATER_PASSWORD": "s3cret-pw"})
    assert result.exit_code == 2
    assert "username and password go together: username is missing" in result.output
    assert "s3cret-pw" not in result.output


def test_a_missing_ca_file_is_named_before_any_request(closed_port_url: str, tmp_path: Path) -> None:
    missing = tmp_path / "ca.pem"
    result = runner.invoke(app, ["topics", "list", "-s", closed_port_url, "--ssl-ca-file", str(missing)])
    assert result.exit_code == 2
    assert f"ssl_ca_file {missing}: no such file" in result.output
    assert "cannot reach" not in result.output
