"""The connector reads a broker's error answer through the broker's error table, like every other client."""

from __future__ import annotations

import json

from broker.error_table import error_body
from broker.errors import NotLeaderOrFollower, OffsetOutOfRange
from spark_connector.http import BrokerAnswer


def _answer(status: int, body: bytes) -> BrokerAnswer:
    return BrokerAnswer(status, {"content-type": "application/json"}, body)


def test_an_error_body_decodes_to_its_class_with_its_details() -> None:
    sent = NotLeaderOrFollower("not the leader", leader_id=2, leader_url="http://b:2")
    error = _answer(421, json.dumps(error_body(sent)).encode()).error
    assert isinstance(error, NotLeaderOrFollower) and error.retriable
    assert error.details == {"leader_id": 2, "leader_url": "http://b:2"}
    out_of_range = _answer(416, json.dumps(error_body(OffsetOutOfRange("x", log_start_offset=5))).encode()).error
    assert isinstance(out_of_range, OffsetOutOfRange) and out_of_range.details["log_start_offset"] == 5


def test_a_page_that_is_no_error_body_is_named_by_its_status_and_not_retriable() -> None:
    error = _answer(502, b"<html>bad gateway</html>").error
    assert (error.name, error.http_status, error.retriable) == ("HTTP_502", 502, False)
    assert error.message == "<html>bad gateway</html>"
