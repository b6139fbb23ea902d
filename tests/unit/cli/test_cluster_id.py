"""``highwater cluster id``: the id alone on stdout for ``C=$(highwater cluster id)``; no cluster: one line, exit 1."""

from __future__ import annotations

import base64
import subprocess
import sys

from typer.testing import CliRunner

from broker.command import app
from tests.unit.cli.rest_server import CLUSTER_ID, RestServer

runner = CliRunner()


def test_prints_only_the_cluster_id(rest_server: RestServer) -> None:
    result = runner.invoke(app, ["cluster", "id", "-s", rest_server.url])
    assert (result.exit_code, result.stdout, result.stderr) == (0, f"{CLUSTER_ID}\n", "")
    reads = [(method, path) for method, path, _, _ in rest_server.requests]
    assert reads == [("GET", "/v3/clusters"), ("GET", f"/v3/clusters/{CLUSTER_ID}")], "the cluster routes, once each"


def test_the_server_and_credentials_come_from_the_environment(rest_server: RestServer) -> None:
    env = {"HIGHWATER_SERVER": rest_server.url, "HIGHWATER_USERNAME": "alice", "HIGHWATER_PASSWORD": "pw"}
    result = runner.invoke(app, ["cluster", "id"], env=env)
    assert (result.exit_code, result.stdout) == (0, f"{CLUSTER_ID}\n")
    basic = "Basic " + base64.b64encode(b"alice:pw").decode()
    assert set(rest_server.authorizations) == {basic}


def test_the_username_flag_is_honoured(rest_server: RestServer) -> None:
    result = runner.invoke(
        app, ["cluster", "id", "-s", rest_server.url, "--username", "bob"], env={"HIGHWATER_PASSWORD": "pw"}
    )
    assert result.exit_code == 0, result.output
    assert set(rest_server.authorizations) == {"Basic " + base64.b64encode(b"bob:pw").decode()}


def test_no_cluster_up_is_one_line_naming_the_server_without_a_traceback(closed_port_url: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "broker", "cluster", "id", "-s", closed_port_url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1
    assert completed.stdout == ""
    assert completed.stderr == (
        f"highwater: cannot reach broker at {closed_port_url}: connection refused; no broker is listening there "
        "(make run starts a local cluster on 127.0.0.1:9092)\n"
    )
