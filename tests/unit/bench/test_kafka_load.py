"""``--load kafka``: the options it takes, the librdkafka settings they become, and how deliveries are counted.

Delivery reports are confluent-kafka's own ``Message`` and ``KafkaError`` objects; the failure
path runs a real librdkafka producer against a port that refuses connections.
"""

from __future__ import annotations

import multiprocessing
import socket
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Message
from typer.testing import CliRunner

from broker.acks import Acks
from broker.bench.kafka_load import (
    MAX_BATCH_MESSAGES,
    Deliveries,
    bootstrap_from,
    new_producer,
    process_records,
    producer_config,
    send_records,
)
from broker.bench.spec import SpecError, WorkloadSpec
from broker.command import app


def test_options_become_the_librdkafka_settings() -> None:
    spec = WorkloadSpec(
        kind="produce", load="kafka", acks=Acks.ONE, linger_ms=7, batch_size_bytes=64 * 1024, compression="zstd"
    )
    config = producer_config(spec, "127.0.0.1:19092")
    assert config["bootstrap.servers"] == "127.0.0.1:19092"
    assert config["acks"] == "1"
    assert config["linger.ms"] == 7
    assert config["batch.size"] == 65536
    assert config["batch.num.messages"] == 655, "as many 100 B records as fit in --batch-size"
    assert config["compression.type"] == "zstd"
    assert "enable.idempotence" not in config, "idempotence stays at the client's default"
    assert producer_config(WorkloadSpec(kind="produce", load="kafka"), "h:1")["acks"] == "all"


def test_records_per_batch_stay_within_librdkafka_bounds() -> None:
    huge = WorkloadSpec(kind="produce", load="kafka", batch_size_bytes=1 << 30, record_size_bytes=9)
    tiny = WorkloadSpec(kind="produce", load="kafka", batch_size_bytes=16, record_size_bytes=1024)
    assert producer_config(huge, "h:1")["batch.num.messages"] == MAX_BATCH_MESSAGES
    assert producer_config(tiny, "h:1")["batch.num.messages"] == 1


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "e2e"}, "--load kafka measures produce and consume, not e2e"),
        ({"target_rate": 1000.0}, "--target-rate does not apply"),
    ],
)
def test_the_kafka_load_refuses_what_it_does_not_do(changes: dict, message: str) -> None:
    spec = WorkloadSpec(**{"kind": "produce", "load": "kafka", **changes})
    with pytest.raises(SpecError, match=message):
        spec.validate()


@pytest.mark.parametrize(
    "extra",
    [
        ["--spawn", "1", "--tls"],
        ["--spawn", "1", "--basic-auth"],
        ["--server", "http://127.0.0.1:1", "--username", "u"],
    ],
)
def test_the_cli_refuses_security_options_with_the_kafka_load(extra: list[str]) -> None:
    result = CliRunner().invoke(app, ["bench", "produce", "--load", "kafka", *extra])
    assert result.exit_code == 2
    assert "--load kafka connects without TLS or SASL" in result.output


def test_a_process_sends_the_shares_of_all_its_tasks() -> None:
    spec = WorkloadSpec(kind="produce", load="kafka", count=1003, producers=4, processes=2)
    assert [process_records(spec, index) for index in range(2)] == [503, 500], (
        "the first three of the eight tasks take the remainder"
    )
    assert process_records(WorkloadSpec(kind="produce", count=None, duration_s=1.0), 0) is None


def test_bootstrap_servers_are_the_registered_kafka_addresses() -> None:
    body = {"data": [{"kafka_address": "127.0.0.1:4001"}, {"kafka_address": None}, {"kafka_address": "[::1]:4003"}]}
    assert bootstrap_from(body) == "127.0.0.1:4001,[::1]:4003"
    with pytest.raises(RuntimeError, match="no broker has a Kafka listener"):
        bootstrap_from({"data": [{"broker_id": 1, "kafka_address": None}]})


def test_deliveries_count_acknowledgements_and_sample_ack_times() -> None:
    deliveries = Deliveries()
    deliveries.record(None, Message(topic="t", partition=0, offset=1))
    deliveries.sampled(1_000, None, Message(topic="t", partition=2, offset=7))
    assert deliveries.acknowledged == 2
    [(partition, offset, send_ns, ack_ns)] = deliveries.samples
    assert (partition, offset, send_ns) == (2, 7, 1_000)
    assert ack_ns > send_ns
    deliveries.check()


def test_a_failed_delivery_is_not_counted_and_fails_the_run() -> None:
    deliveries = Deliveries()
    deliveries.sampled(1_000, KafkaError(KafkaError._MSG_TIMED_OUT), Message(topic="t", partition=3, offset=-1))
    assert deliveries.acknowledged == 0
    assert deliveries.samples == []
    with pytest.raises(RuntimeError, match=r"partition 3: .*Message timed out"):
        deliveries.check()


def test_only_fatal_client_errors_fail_the_run() -> None:
    deliveries = Deliveries()
    deliveries.client_error(KafkaError(KafkaError._TRANSPORT))
    deliveries.check()
    deliveries.client_error(KafkaError(KafkaError._FATAL, fatal=True))
    with pytest.raises(RuntimeError, match="fatal client error"):
        deliveries.check()


@pytest.fixture
def refusing_address() -> Iterator[str]:
    """A loopback port bound but not listening: every connection to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{held.getsockname()[1]}"


def test_records_nobody_acknowledges_fail_the_run_by_name(
    refusing_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka times the records out (``message.timeout.ms``, shortened here) and the run says so."""
    monkeypatch.setattr("broker.bench.kafka_load.MESSAGE_TIMEOUT_MS", 300)
    spec = WorkloadSpec(kind="produce", load="kafka", count=10, producers=1)
    deliveries = Deliveries()
    producer = new_producer(spec, refusing_address, deliveries)
    progress = multiprocessing.get_context("spawn").Value("q", 0)
    with pytest.raises(RuntimeError, match=r"records were not delivered: partition .*timed out"):
        send_records(producer, deliveries, spec, "t", 10, 0, progress)
    assert deliveries.acknowledged == 0
