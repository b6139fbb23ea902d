"""``Acks``: Kafka's spellings of the acknowledgement a producer waits for."""

from __future__ import annotations

import pytest

from broker.acks import Acks


def test_each_member_is_its_spelling_on_the_wire() -> None:
    assert [choice.value for choice in Acks] == ["0", "1", "all"]
    assert [Acks(text) for text in ("0", "1", "all")] == [Acks.ZERO, Acks.ONE, Acks.ALL]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", Acks.ZERO), ("1", Acks.ONE), ("all", Acks.ALL), ("ALL", Acks.ALL), ("All", Acks.ALL), ("-1", Acks.ALL)],
)
def test_parse_takes_any_case_and_kafkas_minus_one(text: str, expected: Acks) -> None:
    assert Acks.parse(text) is expected


@pytest.mark.parametrize("text", ["2", "", "none", "-2", " all", "leader"])
def test_parse_refuses_anything_else(text: str) -> None:
    with pytest.raises(ValueError, match="is not a valid Acks"):
        Acks.parse(text)


def test_the_exact_lookup_refuses_the_lenient_spellings() -> None:
    for text in ("ALL", "-1"):
        with pytest.raises(ValueError):
            Acks(text)
