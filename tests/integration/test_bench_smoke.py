"""``highwater bench produce --spawn 1`` end to end: real broker process, real load-generator process.

``--spawn`` starts brokers the way the bench command itself does (that is the product under
test); the one run against ``--server`` gets its broker from the harness.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

REPO_ROOT = Path(__file__).resolve().parents[2]

kafka_broker = cluster_fixture(ClusterSpec(brokers=1, kafka=True))
"""One broker with a Kafka listener, for the run that is pointed at a server."""


def _bench(
    arguments: list[str], results_file: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``highwater bench ARGUMENTS --quiet --json RESULTS_FILE`` in a process of its own (``env`` added to
    its environment, which the brokers it spawns inherit); it must succeed."""
    completed = subprocess.run(
        [sys.executable, "-m", "broker", "bench", *arguments, "--quiet", "--json", str(results_file)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


def test_bench_produce_on_a_spawned_broker_writes_positive_figures(tmp_path: Path) -> None:
    results_file = tmp_path / "bench.json"
    completed = _bench(["produce", "--spawn", "1", "--count", "2000"], results_file)
    document = json.loads(results_file.read_text())
    [scenario] = document["scenarios"]
    assert scenario["name"] == "produce 100 B RF1 acks=all"
    assert scenario["runs"][0]["records"] == 2000
    assert scenario["records_per_s"]["median"] > 0
    assert scenario["mb_per_s"]["median"] > 0
    latency = scenario["produce_ack_latency"]
    assert latency["samples"] == 4 * -(-500 // 8), "records 0, 8, 16 ... of each of the 4 tasks' 500 are sampled"
    assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["p999_ms"]
    assert "produce 100 B RF1 acks=all" in completed.stdout


def test_bench_raw_load_posts_pre_encoded_batches_and_reports_client_cpu(tmp_path: Path) -> None:
    """``--load raw``: 3 connections share 2 500 records in batches of at most 400; every request is a sample."""
    results_file = tmp_path / "bench.json"
    arguments = ["produce", "--spawn", "1", "--load", "raw", "--count", "2500", "--batch-records", "400"]
    arguments += ["--producers", "3", "--partitions", "2"]
    completed = _bench(arguments, results_file)
    [scenario] = json.loads(results_file.read_text())["scenarios"]
    assert scenario["name"] == "produce 100 B RF1 acks=all raw"
    [run] = scenario["runs"]
    assert run["records"] == 2500
    assert run["requests"] == 9, "shares 834, 833, 833: three requests each (400, 400, the rest)"
    assert scenario["produce_ack_latency"]["samples"] == 9
    assert 0 < scenario["produce_ack_latency"]["p50_ms"] <= scenario["produce_ack_latency"]["p99_ms"]
    assert scenario["records_per_s"]["median"] > 0
    assert scenario["client_cpu_us_per_record"] > 0
    assert "produce 100 B RF1 acks=all raw" in completed.stdout


def test_bench_e2e_on_three_spawned_secured_brokers_replicates_and_reads_back(tmp_path: Path) -> None:
    """HTTPS with a throwaway CA and Basic authentication with a throwaway super user: producers and the
    consumer verify the brokers and authenticate, the followers verify each other and sign their fetches."""
    results_file = tmp_path / "bench.json"
    arguments = ["e2e", "--spawn", "3", "--replication-factor", "3", "--acks", "all", "--tls", "--basic-auth"]
    arguments += ["--count", "2000"]
    _bench(arguments, results_file)
    document = json.loads(results_file.read_text())
    assert document["target"] == "3 spawned TLS basic-auth brokers"
    [scenario] = document["scenarios"]
    assert scenario["name"] == "e2e 100 B RF3 acks=all"
    assert scenario["runs"][0]["records"] == 2000
    assert scenario["records_per_s"]["median"] > 0


def test_bench_latency_measures_the_broker_next_to_an_echo_round_trip(tmp_path: Path) -> None:
    results_file = tmp_path / "latency.json"
    arguments = ["latency", "--spawn", "1", "--count", "60", "--target-rate", "400", "--load", "raw"]
    completed = _bench(arguments, results_file)
    document = json.loads(results_file.read_text())
    assert document["name"] == "produce 100 B RF1 acks=all @400/s raw lone"
    for run in ("broker_latency", "echo_latency"):
        assert document[run]["samples"] == 60, "every request of a lone-request run is a sample"
        assert 0 < document[run]["p50_ms"] <= document[run]["p99_ms"]
    assert document["ratio_to_echo"]["p50"] > 0
    assert "echo: aiohttp round trip" in completed.stdout and "× echo" in completed.stdout
    [cpu_us] = document["broker_cpu_us_per_request"]
    assert cpu_us >= 0, "the spawned broker's CPU over the run (clock ticks: a short run may show none)"
    assert "broker CPU per request, busiest first" in completed.stdout


def test_bench_scale_steps_through_partitions_and_connections_with_rss_and_plots(tmp_path: Path) -> None:
    results_file = tmp_path / "scale.json"
    plots = tmp_path / "plots"
    arguments = ["scale", "--spawn", "1", "--replication-factor", "1", "--partitions", "1,2", "--connections", "1,2"]
    arguments += ["--duration-s", "0.3", "--batch-records", "100", "--plot-dir", str(plots)]
    completed = _bench(arguments, results_file)
    sweeps = json.loads(results_file.read_text())["sweeps"]
    assert [step["connections"] for step in sweeps["connections"]["steps"]] == [1, 2]
    assert [step["partitions"] for step in sweeps["partitions"]["steps"]] == [1, 2]
    assert [step["cluster_partitions"] for step in sweeps["partitions"]["steps"]] == [7, 9], "6 of the fixed topic"
    for step in sweeps["connections"]["steps"] + sweeps["partitions"]["steps"]:
        assert step["records_per_s"] > 0
        assert 0 < step["produce_ack_latency"]["p50_ms"] <= step["produce_ack_latency"]["p99_ms"]
        [rss] = step["rss_bytes_per_broker"]
        assert rss > 10 << 20, "a broker process is resident in more than 10 MiB"
    assert sorted(path.name for path in plots.iterdir()) == sorted(
        f"scale-{measure}-vs-{sweep}.png"
        for measure in ("throughput", "p99", "rss")
        for sweep in ("partitions", "connections")
    )
    assert all(path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") for path in plots.iterdir())
    assert "highwater bench scale" in completed.stdout and "RSS growth per connection" in completed.stdout


def test_bench_scale_metadata_creates_idles_fails_the_controller_over_and_restarts_it(tmp_path: Path) -> None:
    """A short lease (2 s) so the killed controller is noticed quickly; every figure is measured and ordered."""
    results_file = tmp_path / "metadata.json"
    arguments = ["scale", "--metadata", "24", "--spawn", "3", "--replication-factor", "3", "--idle-s", "1"]
    completed = _bench(arguments, results_file, env={"HIGHWATER_BROKER_SESSION_TIMEOUT_MS": "2000"})
    figures = json.loads(results_file.read_text())
    assert (figures["partitions"], figures["replication_factor"]) == (24, 3)
    assert 0 < figures["create_answered_s"] <= figures["create_ready_s"]
    assert [0 <= share < 100 for share in figures["idle_cpu_percent_per_broker"]] == [True] * 3
    assert figures["killed_controller"] in (1, 2, 3)
    # The lease runs out 2 s after its last renewal, which may come up to the heartbeat interval (1 s) or,
    # late on a loaded machine, more before the kill: no lower bound but zero holds every run.
    assert 0 < figures["new_controller_s"] <= figures["all_led_s"], (
        "a new controller comes before every partition is listed as led"
    )
    assert 0 < figures["records_led_s"] <= figures["all_led_s"], "the records are written before a listing shows them"
    assert figures["restart_in_sync_s"] > 0
    assert set(figures["targets"]) == {"create", "idle", "failover", "restart"}
    assert "highwater bench scale --metadata: 24 partitions, RF 3" in completed.stdout


def test_bench_kafka_load_on_a_spawned_broker_has_every_record_acknowledged(tmp_path: Path) -> None:
    """``--spawn`` gives the broker a Kafka listener; librdkafka's delivery reports count all 3 000 records."""
    results_file = tmp_path / "bench.json"
    completed = _bench(["produce", "--spawn", "1", "--load", "kafka", "--count", "3000"], results_file)
    [scenario] = json.loads(results_file.read_text())["scenarios"]
    assert scenario["name"] == "produce 100 B RF1 acks=all kafka"
    assert scenario["runs"][0]["records"] == 3000
    assert scenario["produce_ack_latency"]["samples"] == 375, "records 0, 8, 16 ... of the process's 3 000"
    assert 0 < scenario["produce_ack_latency"]["p50_ms"] <= scenario["produce_ack_latency"]["p99_ms"]
    assert scenario["client_cpu_us_per_record"] > 0
    assert "produce 100 B RF1 acks=all kafka" in completed.stdout


def test_bench_kafka_load_against_a_server_puts_every_record_in_the_log(kafka_broker: Cluster, tmp_path: Path) -> None:
    """``--server``: the bootstrap servers come from the brokers list; the partitions' high watermarks
    add up to exactly the records the run reports acknowledged (none lost, none written twice)."""
    arguments = ["produce", "--server", kafka_broker.url(), "--load", "kafka", "--count", "2500", "--partitions", "3"]
    arguments += ["--processes", "2", "--producers", "1"]
    _bench(arguments, tmp_path / "bench.json")
    [scenario] = json.loads((tmp_path / "bench.json").read_text())["scenarios"]
    assert scenario["runs"][0]["records"] == 2500
    [topic] = [
        t["topic_name"] for t in kafka_broker.api("GET", "/topics")["data"] if t["topic_name"].startswith("bench-")
    ]
    partitions = kafka_broker.partitions(topic)
    assert len(partitions) == 3
    assert sum(partition.high_watermark for partition in partitions.values()) == 2500


def test_bench_consume_with_the_kafka_load_reads_back_every_record(tmp_path: Path) -> None:
    """The topic is filled through librdkafka, then two librdkafka readers split its partitions and read all of it."""
    results_file = tmp_path / "bench.json"
    arguments = ["consume", "--spawn", "1", "--load", "kafka", "--count", "3000", "--processes", "2"]
    completed = _bench(arguments, results_file)
    [scenario] = json.loads(results_file.read_text())["scenarios"]
    assert scenario["name"] == "consume 100 B RF1 acks=all kafka"
    assert scenario["runs"][0]["records"] == 3000
    assert scenario["mb_per_s"]["median"] > 0
    assert "consume 100 B RF1 acks=all kafka" in completed.stdout


@pytest.mark.parametrize("client", ["kafka", "http"])
def test_bench_transactions_measures_idempotent_and_transactional_produce(tmp_path: Path, client: str) -> None:
    results = tmp_path / "transactions.json"
    arguments = ["transactions", "--spawn", "1", "--count", "3000", "--per-transaction", "500", "--client", client]
    _bench(arguments, results)
    figures = json.loads(results.read_text())
    assert figures["transactions"] == 6 and figures["settings"]["client"] == client
    assert figures["idempotent_records_per_s"] > 0 and figures["transactional_records_per_s"] > 0
    assert 0 < figures["commit_p50_ms"] <= figures["commit_p99_ms"]
