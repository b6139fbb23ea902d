"""Topic ids on topic records: random at creation, derived from the name for a record that predates them."""

from __future__ import annotations

import json
import uuid

from broker.cluster.records import TopicRecord, kafka_uuid_text, legacy_topic_id, new_topic_id


def test_a_record_written_before_topic_ids_reads_with_the_same_name_derived_id_every_time() -> None:
    written = json.dumps({"name": "orders", "partitions_count": 3, "replication_factor": 2}).encode()
    first, again = TopicRecord.model_validate_json(written), TopicRecord.model_validate_json(written)
    assert first.topic_id == again.topic_id == legacy_topic_id("orders")
    assert legacy_topic_id("orders") != legacy_topic_id("payments")


def test_an_id_survives_a_round_trip_and_a_copy_of_the_record() -> None:
    record = TopicRecord(name="orders", topic_id=new_topic_id(), partitions_count=3, replication_factor=2)
    read = TopicRecord.model_validate_json(record.model_dump_json())
    assert read.topic_id == record.topic_id
    assert read.model_copy(update={"partitions_count": 6}).topic_id == record.topic_id


def test_new_ids_differ_and_are_never_kafkas_reserved_ones() -> None:
    ids = {new_topic_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(topic_id.int not in (0, 1) for topic_id in ids)


def test_an_id_is_printed_as_kafka_prints_it() -> None:
    """Kafka's ``Uuid.toString`` (librdkafka's ``str(Uuid(1, 2))`` is the same text)."""
    assert kafka_uuid_text(uuid.UUID(int=(1 << 64) | 2)) == "AAAAAAAAAAEAAAAAAAAAAg"
