"""``highwater groups describe``'s lag table on an 80-column terminal: every header and every value whole."""

from __future__ import annotations

from rich.console import Console

from broker.cli.groups import LAG_FIELDS, lag_tables

MEMBER_ID = "highwater-client-6f1c2d3e-1111-2222-3333-444455556666"
"""What the coordinator hands out: ``<client id>-<uuid>``."""


def _rows() -> list[dict]:
    owned = [
        {
            "topic_name": "orders",
            "partition_id": partition,
            "current_offset": 12_345_678,
            "log_end_offset": 99_345_678,
            "lag": 87_000_000,
            "lag_ms": 123_456_789,
            "consumer_id": MEMBER_ID,
            "status": "STALL",
        }
        for partition in range(3)
    ]
    unowned = {**owned[0], "partition_id": 3, "current_offset": None, "lag": None, "lag_ms": None, "consumer_id": ""}
    return [*owned, unowned]


def _render(width: int) -> list[str]:
    console = Console(width=width, record=True, highlight=False)
    for table in lag_tables(console, _rows()):
        console.print(table)
    return console.export_text().splitlines()


def test_at_80_columns_every_header_and_value_is_whole() -> None:
    lines = _render(80)
    text = "\n".join(lines)
    for header in LAG_FIELDS:
        assert header in text, f"{header} cut:\n{text}"
    for value in ("12345678", "99345678", "87000000", "123456789", MEMBER_ID, "STALL"):
        assert value in text, f"{value} cut:\n{text}"
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert sum(MEMBER_ID in line for line in lines) == 3, "one line per owned partition"


def test_a_wide_terminal_gets_one_table_in_kafkas_column_order() -> None:
    lines = _render(200)
    assert lines[0].split() == list(LAG_FIELDS)
    assert lines[1].split() == ["orders", "0", "12345678", "99345678", "87000000", "123456789", MEMBER_ID, "STALL"]
