"""``highwater topics ...`` against a real HTTP server on 127.0.0.1, and against a closed port."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from broker.command import app
from tests.unit.cli.rest_server import CLUSTER_ID, RestServer

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env=env)


def test_create_sends_counts_and_configs(rest_server: RestServer) -> None:
    result = invoke(
        "topics",
        "create",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "2",
        "--config",
        "retention.ms=60000",
        "-c",
        "min.insync.replicas=2",
        "-s",
        rest_server.url,
    )
    assert result.exit_code == 0, result.output
    assert "created topic orders with 3 partition(s)" in result.stdout
    method, path, _, body = rest_server.requests[-1]
    assert (method, path) == ("POST", f"/v3/clusters/{CLUSTER_ID}/topics")
    assert body == {
        "topic_name": "orders",
        "partitions_count": 3,
        "replication_factor": 2,
        "configs": [{"name": "retention.ms", "value": "60000"}, {"name": "min.insync.replicas", "value": "2"}],
    }


def test_create_without_counts_leaves_them_to_the_broker(rest_server: RestServer) -> None:
    assert invoke("topics", "create", "plain", "-s", rest_server.url).exit_code == 0
    assert rest_server.requests[-1][3] == {"topic_name": "plain"}


def test_create_with_a_malformed_config_pair_fails_before_sending(rest_server: RestServer) -> None:
    result = invoke("topics", "create", "t", "--config", "retention.ms", "-s", rest_server.url)
    assert result.exit_code == 1
    assert result.stderr.strip() == "highwater: --config expects NAME=VALUE (got 'retention.ms')"
    assert rest_server.requests == []


def test_create_existing_topic_prints_the_brokers_error(rest_server: RestServer) -> None:
    assert invoke("topics", "create", "dup", "-s", rest_server.url).exit_code == 0
    result = invoke("topics", "create", "dup", "-s", rest_server.url)
    assert result.exit_code == 1
    assert result.stderr.strip() == "highwater: TOPIC_ALREADY_EXISTS: Topic 'dup' already exists."


def test_list_shows_topics_with_counts(rest_server: RestServer) -> None:
    invoke("topics", "create", "b-topic", "-p", "2", "-s", rest_server.url)
    invoke("topics", "create", "a-topic", "-p", "5", "-r", "3", "-s", rest_server.url)
    result = invoke("topics", "list", "-s", rest_server.url)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines() if "-topic" in line]
    assert rows == [["a-topic", "5", "3"], ["b-topic", "2", "1"]]


def test_describe_shows_leader_epoch_replicas_isr_and_offsets(rest_server: RestServer) -> None:
    invoke("topics", "create", "events", "-p", "2", "-s", rest_server.url)
    rest_server.append_from_test("events", 1, ["a", "b", "c"])
    result = invoke("topics", "describe", "events", "-s", rest_server.url)
    assert result.exit_code == 0, result.output
    [header] = [line for line in result.stdout.splitlines() if "partition" in line]
    assert [name.strip() for name in header.strip("┃ ").split("┃")] == [
        "partition",
        "leader",
        "epoch",
        "replicas",
        "ISR",
        "log start",
        "HW",
        "LEO",
    ], "the columns of highwater dev's demo table, from the same function"
    rows = [line.replace("│", " ").split() for line in result.stdout.splitlines()]
    assert ["1", "1", "4", "1,2,3", "1,3", "0", "3", "4"] in rows
    assert ["0", "1", "4", "1,2,3", "1,3", "0", "0", "1"] in rows
    assert "HW: high watermark (consumers read below it); LEO: log end offset" in result.stdout


def test_delete_removes_the_topic(rest_server: RestServer) -> None:
    invoke("topics", "create", "gone", "-s", rest_server.url)
    result = invoke("topics", "delete", "gone", "-s", rest_server.url)
    assert result.exit_code == 0 and "deleted topic gone" in result.stdout
    assert "gone" not in rest_server.topics
    again = invoke("topics", "delete", "gone", "-s", rest_server.url)
    assert again.exit_code == 1
    assert again.stderr.strip() == "highwater: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic."


def test_server_comes_from_the_environment(rest_server: RestServer) -> None:
    result = invoke("topics", "create", "from-env", env={"HIGHWATER_SERVER": rest_server.url})
    assert result.exit_code == 0, result.output
    assert "from-env" in rest_server.topics


def test_an_answer_that_is_not_the_api_is_reported_in_one_line(rest_server: RestServer) -> None:
    result = invoke("topics", "list", "-s", rest_server.url + "/not-the-api")
    assert result.exit_code == 1
    assert result.stderr.strip() == "highwater: HTTP_404: 404: Not Found"


def test_a_server_listing_no_cluster_is_reported_in_one_line(rest_server: RestServer) -> None:
    rest_server.clusters_listed = []
    result = invoke("topics", "list", "-s", rest_server.url)
    assert result.exit_code == 1
    assert result.stderr == f"highwater: SERVICE_UNAVAILABLE: {rest_server.url}/v3/clusters listed no cluster\n"


@pytest.mark.parametrize("command", [["topics", "list"], ["topics", "describe", "x"], ["topics", "delete", "x"]])
def test_unreachable_broker_is_one_clear_line(closed_port_url: str, command: list[str]) -> None:
    result = invoke(*command, "-s", closed_port_url)
    assert result.exit_code == 1
    assert result.stderr == (
        f"highwater: cannot reach broker at {closed_port_url}: connection refused; no broker is listening there "
        "(make run starts a local cluster on 127.0.0.1:9092)\n"
    )
