"""``highwater produce`` and ``consume`` against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from typer.testing import CliRunner

from broker.command import app
from tests.unit.cli.rest_server import CLUSTER_ID, RestServer

runner = CliRunner()
REPO_ROOT = Path(__file__).resolve().parents[3]


def invoke(*args: str, stdin: str | None = None):
    return runner.invoke(app, list(args), input=stdin)


def create(rest_server: RestServer, topic: str, partitions: int = 1) -> None:
    assert invoke("topics", "create", topic, "-p", str(partitions), "-s", rest_server.url).exit_code == 0


def batch_requests(rest_server: RestServer) -> list[tuple[dict, dict]]:
    found: list[tuple[dict, dict]] = []
    for _method, path, query, body in rest_server.requests:
        if path.endswith("/records:batch"):
            assert isinstance(body, dict), "a records:batch body is a JSON object"
            found.append((query, body))
    return found


def test_produce_batches_lines_into_requests_of_1000(rest_server: RestServer) -> None:
    create(rest_server, "lines")
    lines = "".join(f"line-{i}\n" for i in range(2500))
    result = invoke("produce", "lines", "--acks", "1", "-s", rest_server.url, stdin=lines)
    assert result.exit_code == 0, result.output
    assert "produced 2500 record(s) to lines (partitions 0)" in result.stderr
    requests = batch_requests(rest_server)
    assert [len(body["entries"]) for _, body in requests] == [1000, 1000, 500]
    assert all(query == {"acks": "1"} for query, _ in requests)
    assert requests[0][1]["entries"][0] == {"value": {"type": "STRING", "data": "line-0"}}
    stored = [record["value"]["data"] for record in rest_server.topics["lines"].partitions[0]]
    assert stored == [f"line-{i}" for i in range(2500)]


def test_produce_with_key_and_partition(rest_server: RestServer) -> None:
    create(rest_server, "keyed", partitions=2)
    result = invoke("produce", "keyed", "--key", "user-7", "--partition", "1", "-s", rest_server.url, stdin="a\r\nb\n")
    assert result.exit_code == 0, result.output
    entries = batch_requests(rest_server)[0][1]["entries"]
    assert entries == [
        {"value": {"type": "STRING", "data": v}, "key": {"type": "STRING", "data": "user-7"}, "partition_id": 1}
        for v in ("a", "b")
    ]
    assert batch_requests(rest_server)[0][0] == {"acks": "all"}


def test_produce_splits_key_and_value_at_the_separator(rest_server: RestServer) -> None:
    create(rest_server, "split")
    invoke("produce", "split", "--key-separator", ":", "-s", rest_server.url, stdin="k1:v:1\nno-key\n")
    entries = batch_requests(rest_server)[0][1]["entries"]
    assert entries[0] == {"value": {"type": "STRING", "data": "v:1"}, "key": {"type": "STRING", "data": "k1"}}
    assert entries[1] == {"value": {"type": "STRING", "data": "no-key"}}


def test_produce_reports_failed_records_and_exits_1(rest_server: RestServer) -> None:
    create(rest_server, "partly")
    result = invoke("produce", "partly", "-s", rest_server.url, stdin="ok\n" + "x" * 200 + "\nok2\n")
    assert result.exit_code == 1
    expected = "produced 2 record(s) to partly (partitions 0), 1 failed; first failure 41301: record too large"
    assert expected in result.stderr


def test_produce_rejects_unknown_acks_before_sending(rest_server: RestServer) -> None:
    result = invoke("produce", "t", "--acks", "2", "-s", rest_server.url, stdin="a\n")
    assert result.exit_code == 1 and "--acks must be 0, 1 or all" in result.stderr
    assert rest_server.requests == []


def test_produce_to_unknown_topic_prints_the_brokers_error(rest_server: RestServer) -> None:
    result = invoke("produce", "missing", "-s", rest_server.url, stdin="a\n")
    assert result.exit_code == 1
    assert result.stderr.strip() == "highwater: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic."


def test_produce_then_consume_from_beginning_round_trips(rest_server: RestServer) -> None:
    create(rest_server, "round")
    values = [f"value {i} ünïcode" for i in range(2300)]
    invoke("produce", "round", "-s", rest_server.url, stdin="\n".join(values) + "\n")
    result = invoke("consume", "round", "--from-beginning", "-s", rest_server.url)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == values


def test_consume_reads_every_partition_and_from_an_offset(rest_server: RestServer) -> None:
    create(rest_server, "multi", partitions=3)
    for partition in range(3):
        rest_server.append_from_test("multi", partition, [f"p{partition}-{i}" for i in range(4)])
    everything = invoke("consume", "multi", "--from-beginning", "-s", rest_server.url)
    assert sorted(everything.stdout.splitlines()) == sorted(f"p{p}-{i}" for p in range(3) for i in range(4))
    from_offset = invoke("consume", "multi", "--partition", "2", "--offset", "2", "-s", rest_server.url)
    assert from_offset.stdout.splitlines() == ["p2-2", "p2-3"]
    reads = [(p, q) for m, p, q, b in rest_server.requests if p.endswith("/records")]
    assert reads[-1][0] == f"/v3/clusters/{CLUSTER_ID}/topics/multi/partitions/2/records"
    assert reads[-1][1]["format"] == "string"


def test_consume_without_a_start_prints_only_new_records(rest_server: RestServer) -> None:
    create(rest_server, "latest")
    rest_server.append_from_test("latest", 0, ["old"])
    result = invoke("consume", "latest", "-s", rest_server.url)
    assert result.exit_code == 0 and result.stdout == ""


def test_consume_max_records_and_print_offsets(rest_server: RestServer) -> None:
    create(rest_server, "offsets")
    invoke("produce", "offsets", "--key", "k", "-s", rest_server.url, stdin="a\nb\nc\n")
    result = invoke(
        "consume", "offsets", "--from-beginning", "--max-records", "2", "--print-offsets", "-s", rest_server.url
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["0\t0\tk\ta", "0\t1\tk\tb"]


def test_consume_prints_json_binary_and_null_values_one_per_line(rest_server: RestServer) -> None:
    create(rest_server, "typed")
    rest_server.append_entries_from_test(
        "typed",
        0,
        [
            {"value": {"type": "JSON", "data": {"clicks": 1, "page": "/a"}}},
            {"value": {"type": "BINARY", "data": "/w=="}, "key": {"type": "JSON", "data": 7}},
            {"value": None},
        ],
    )
    result = invoke("consume", "typed", "--from-beginning", "--print-offsets", "-s", rest_server.url)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        '0\t0\t\t{"clicks": 1, "page": "/a"}',
        "0\t1\t7\t/w==",
        "0\t2\t\tnull",
    ]


def test_consume_from_an_offset_past_the_end_reports_the_brokers_error(rest_server: RestServer) -> None:
    create(rest_server, "short")
    rest_server.append_from_test("short", 0, ["only"])
    result = invoke("consume", "short", "--offset", "5", "-s", rest_server.url)
    assert result.exit_code == 1
    assert result.stderr.strip() == "highwater: OFFSET_OUT_OF_RANGE: offset 5 is outside [0, 1]"


def test_consume_follow_waits_for_records_produced_later(rest_server: RestServer) -> None:
    create(rest_server, "live")
    rest_server.append_from_test("live", 0, ["before"])

    def produce_once_the_consumer_waits() -> None:
        assert rest_server.reader_waiting.wait(60), "the consumer never waited at the end of the log"
        rest_server.append_from_test("live", 0, ["after-1", "after-2"])

    producer = threading.Thread(target=produce_once_the_consumer_waits)
    producer.start()
    result = invoke("consume", "live", "--follow", "--max-records", "2", "-s", rest_server.url)
    producer.join()
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["after-1", "after-2"]


def test_consume_unknown_partition_and_conflicting_starts(rest_server: RestServer) -> None:
    create(rest_server, "one")
    result = invoke("consume", "one", "--partition", "5", "-s", rest_server.url)
    assert result.exit_code == 1 and result.stderr.strip() == "highwater: topic one has no partition 5"
    both = invoke("consume", "one", "--from-beginning", "--offset", "3", "-s", rest_server.url)
    assert both.exit_code == 1 and "either --from-beginning or --offset" in both.stderr


def test_produce_and_consume_report_an_unreachable_broker(closed_port_url: str) -> None:
    expected = (
        f"highwater: cannot reach broker at {closed_port_url}: connection refused; no broker is listening there "
        "(make run starts a local cluster on 127.0.0.1:9092)\n"
    )
    produced = invoke("produce", "t", "-s", closed_port_url, stdin="a\n")
    consumed = invoke("consume", "t", "-s", closed_port_url)
    assert (produced.exit_code, produced.stderr) == (1, expected)
    assert (consumed.exit_code, consumed.stderr) == (1, expected)


def test_produce_with_a_terminal_on_stderr_shows_progress_and_the_summary(rest_server: RestServer) -> None:
    create(rest_server, "tty")
    controller_fd, terminal_fd = os.openpty()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HIGHWATER_")}
    with os.fdopen(controller_fd, "rb", buffering=0) as controller:
        process = subprocess.run(
            [sys.executable, "-m", "broker", "produce", "tty", "-s", rest_server.url, "--batch-size", "100"],
            input="".join(f"{i}\n" for i in range(1500)).encode(),
            stderr=terminal_fd,
            stdout=subprocess.PIPE,
            cwd=REPO_ROOT,
            env={**clean, "COLUMNS": "120"},
            timeout=60,
            check=False,
        )
        os.close(terminal_fd)
        shown = b""
        while chunk := _read_available(controller):
            shown += chunk
    assert process.returncode == 0
    assert "producing to tty" in shown.decode(errors="replace")
    assert "produced 1500 record(s) to tty (partitions 0)" in shown.decode(errors="replace")
    assert len(rest_server.topics["tty"].partitions[0]) == 1500


def _read_available(controller) -> bytes:
    try:
        return controller.read(65536)
    except OSError:
        return b""
