"""Quota limits: Kafka's field names, positive rates, at least one limit."""

from __future__ import annotations

import pytest

from broker.errors import UnprocessableEntity
from broker.security.quota_limits import QuotaLimits, limits_from_wire, limits_to_wire


def test_round_trip_with_one_or_both_limits() -> None:
    both = QuotaLimits(producer_byte_rate=1024, consumer_byte_rate=2048)
    assert limits_to_wire(both) == {"producer_byte_rate": 1024, "consumer_byte_rate": 2048}
    assert limits_from_wire(limits_to_wire(both)) == both
    assert limits_from_wire({"consumer_byte_rate": 5}) == QuotaLimits(None, 5)


def test_the_principal_of_a_route_body_is_skipped() -> None:
    assert limits_from_wire({"principal": "User:a", "producer_byte_rate": 9}) == QuotaLimits(9, None)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"producer_byte_rate": 0}, "producer_byte_rate must be a positive integer"),
        ({"consumer_byte_rate": -1}, "consumer_byte_rate must be a positive integer"),
        ({"consumer_byte_rate": "100"}, "consumer_byte_rate must be a positive integer"),
        ({"producer_byte_rate": True}, "producer_byte_rate must be a positive integer"),
        ({"producer_byte_rate": 1.5}, "producer_byte_rate must be a positive integer"),
        ({}, "set producer_byte_rate, consumer_byte_rate or both"),
        ({"producer_byte_rate": None, "consumer_byte_rate": None}, "set producer_byte_rate"),
        ({"request_percentage": 50}, "unknown field(s) request_percentage"),
    ],
)
def test_invalid_limits_are_refused_naming_the_field(data: dict, message: str) -> None:
    with pytest.raises(UnprocessableEntity) as raised:
        limits_from_wire(data)
    assert message in raised.value.message
