"""A principal's byte-rate quotas, with Kafka's names: ``producer_byte_rate``, ``consumer_byte_rate``.

Each limit is bytes per second, a positive integer, or None for no limit on that
direction. Invariant: at least one limit is set (a quota of nothing is a removed
quota, and removal is its own operation) and every set limit is > 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from broker.errors import UnprocessableEntity

LIMIT_FIELDS = ("producer_byte_rate", "consumer_byte_rate")
ENVELOPE_FIELDS = frozenset({"principal"})
"""Fields of the quota routes' bodies and answers that name the principal; decoding skips them."""


@dataclass(frozen=True)
class QuotaLimits:
    producer_byte_rate: int | None
    consumer_byte_rate: int | None

    def __post_init__(self) -> None:
        for field in LIMIT_FIELDS:
            _check_rate(field, getattr(self, field))
        if self.producer_byte_rate is None and self.consumer_byte_rate is None:
            raise UnprocessableEntity("set producer_byte_rate, consumer_byte_rate or both (a positive integer)")


def _check_rate(field: str, value: object) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise UnprocessableEntity(f"{field} must be a positive integer (bytes per second) or null (got {value!r})")


def limits_to_wire(limits: QuotaLimits) -> dict[str, int | None]:
    return {"producer_byte_rate": limits.producer_byte_rate, "consumer_byte_rate": limits.consumer_byte_rate}


def limits_from_wire(data: Mapping[str, Any]) -> QuotaLimits:
    """Validated limits; an absent field is no limit. Unknown fields are refused, ``principal`` skipped."""
    unknown = sorted(set(data) - set(LIMIT_FIELDS) - ENVELOPE_FIELDS)
    if unknown:
        raise UnprocessableEntity(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(LIMIT_FIELDS)}")
    return QuotaLimits(data.get("producer_byte_rate"), data.get("consumer_byte_rate"))
