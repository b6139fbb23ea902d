"""A broker's registration carries its Kafka address; records written before that field still read."""

from __future__ import annotations

from broker.cluster.records import BrokerRegistration


def test_a_registration_written_before_kafka_addresses_reads_as_having_none() -> None:
    old = '{"broker_id": 2, "url": "http://127.0.0.1:9093", "inter_broker_url": null, "rack": null, "broker_epoch": 0}'
    assert BrokerRegistration.model_validate_json(old).kafka_address is None


def test_the_kafka_address_survives_the_stored_json() -> None:
    registration = BrokerRegistration(broker_id=1, url="http://127.0.0.1:9092", kafka_address="127.0.0.1:19092")
    assert BrokerRegistration.model_validate_json(registration.model_dump_json()).kafka_address == "127.0.0.1:19092"
