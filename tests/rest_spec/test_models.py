"""The spec models are strict where the spec is: they refuse what a client written against it could not read.

Pure: JSON texts in, a model or a ``ValidationError`` out.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from tests.rest_spec import models as m

LINK = {"related": "http://b/x"}
META = {"self": "http://b/x"}


def _text(body: dict) -> str:
    return json.dumps(body)


def _report(**fields: object) -> str:
    return _text({"error_code": 200, "partition_id": 0, "offset": 3, **fields})


def test_a_date_time_is_a_zoned_string_never_epoch_milliseconds() -> None:
    report = m.validate(m.ProduceResponse, _report(timestamp="2021-02-05T19:14:42.5Z"))
    assert report.timestamp == datetime(2021, 2, 5, 19, 14, 42, 500000, tzinfo=UTC)
    for wrong in (1612552482000, "2021-02-05T19:14:42", "yesterday"):
        with pytest.raises(ValidationError):
            m.validate(m.ProduceResponse, _report(timestamp=wrong))


def test_a_nullable_field_takes_null_but_an_optional_one_does_not() -> None:
    assert m.validate(m.ProduceResponse, _report(timestamp=None)).timestamp is None
    with pytest.raises(ValidationError, match="offset"):
        m.validate(m.ProduceResponse, _report(offset=None))


def test_types_are_not_coerced() -> None:
    with pytest.raises(ValidationError, match="partition_id"):
        m.validate(m.ProduceResponse, _report(partition_id="0"))
    with pytest.raises(ValidationError, match="consumer_id"):
        lag: dict[str, object] = {
            "kind": "KafkaConsumerLag",
            "metadata": META,
            "cluster_id": "c",
            "consumer_group_id": "g",
        }
        lag |= {"topic_name": "t", "partition_id": 0, "current_offset": 1, "log_end_offset": 2, "lag": 1}
        m.validate(m.ConsumerLagData, _text({**lag, "consumer_id": None, "client_id": ""}))


def test_extra_fields_are_allowed_missing_required_ones_are_not() -> None:
    cluster = {"kind": "KafkaCluster", "metadata": META, "cluster_id": "c", "high_watermark": 7}
    links = dict.fromkeys(("acls", "brokers", "broker_configs", "consumer_groups", "topics"), LINK)
    assert m.validate(m.ClusterData, _text({**cluster, **links, "partition_reassignments": LINK})).cluster_id == "c"
    with pytest.raises(ValidationError, match="partition_reassignments"):
        m.validate(m.ClusterData, _text({**cluster, **links}))


def test_a_link_is_an_object_not_the_related_data() -> None:
    partition = {"kind": "KafkaPartition", "metadata": META, "cluster_id": "c", "topic_name": "t", "partition_id": 0}
    assert m.validate(m.PartitionData, _text({**partition, "replicas": LINK, "reassignment": LINK}))
    with pytest.raises(ValidationError, match="replicas"):
        m.validate(m.PartitionData, _text({**partition, "replicas": [1, 2], "reassignment": LINK}))


def test_enums_are_closed() -> None:
    group: dict[str, object] = {
        "kind": "KafkaConsumerGroup",
        "metadata": META,
        "cluster_id": "c",
        "consumer_group_id": "g",
    }
    group |= {"is_simple": False, "partition_assignor": "uniform", "type": "CONSUMER", "is_mixed_consumer_group": False}
    group |= {"coordinator": LINK, "consumers": LINK, "lag_summary": LINK}
    assert m.validate(m.ConsumerGroupData, _text({**group, "state": "STABLE"})).state == "STABLE"
    with pytest.raises(ValidationError, match="state"):
        m.validate(m.ConsumerGroupData, _text({**group, "state": "Stable"}))


def test_an_error_body_needs_its_code_and_message() -> None:
    assert m.validate(m.Error, '{"error_code": 40403, "message": null, "error": "X"}').error_code == 40403
    with pytest.raises(ValidationError):
        m.validate(m.Error, '{"error_code": "40403", "message": "m"}')
    with pytest.raises(ValidationError):
        m.validate(m.Error, '{"error_code": 40403}')
