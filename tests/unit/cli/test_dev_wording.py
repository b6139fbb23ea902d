"""``highwater dev``'s summary counts in words a reader expects: "1 record", "3 brokers"."""

from __future__ import annotations

from broker.cli.dev import counted


def test_a_count_takes_the_noun_in_its_number() -> None:
    assert counted(1, "record") == "1 record"
    assert counted(0, "record") == "0 records"
    assert counted(3, "broker") == "3 brokers"
