"""The trace's budget table: the stages of the acks asked for, and the echo floor under them."""

from __future__ import annotations

from broker.bench.latency_trace import ACKS_ONE_STAGES, ECHO_STAGE, STAGES, budget_table, flush_spans

POINTS = (
    "client.sent",
    "produce.received",
    "produce.entered",
    "leader.append_start",
    "leader.appended",
    "produce.answered",
    "client.received",
)


def _row(step_ns: int) -> dict[str, int]:
    return {name: index * step_ns for index, name in enumerate(POINTS)}


def _stage_lines(table: str) -> dict[str, list[str]]:
    return {line[:44].strip(): line[44:].split() for line in table.splitlines() if not line.startswith(("--", "stage"))}


def test_acks_one_shows_its_stages_and_none_of_a_followers() -> None:
    table = budget_table([_row(10_000), _row(20_000)], [300_000, 400_000], acks="1")
    lines = _stage_lines(table)
    assert lines["appended -> handler answers"] == ["20", "20", "2"]
    assert lines["middlewares (metrics ... catch-up)"] == ["20", "20", "2"]
    assert lines["client round trip"] == ["120", "120", "2"]
    assert all(name in lines for name, _, _ in ACKS_ONE_STAGES)
    assert not any(name in lines for name, _, _ in STAGES if name not in {n for n, _, _ in ACKS_ONE_STAGES})


def test_the_echo_floor_is_printed_under_the_budget() -> None:
    table = budget_table([_row(10_000)], [300_000, 400_000, 500_000], acks="all")
    assert table.splitlines()[-2].startswith("-- floor")
    assert _stage_lines(table)[ECHO_STAGE] == ["400", "500", "3"]


def test_requests_held_up_by_a_trace_flush_are_counted_as_left_out() -> None:
    table = budget_table([_row(10_000)], [300_000], acks="1", left_out=3)
    assert "-- 3 requests left out: a broker was logging trace events meanwhile" in table.splitlines()


def test_flush_spans_are_every_brokers_flushes() -> None:
    logs = {
        1: [{"event": "trace.flushed", "start_ns": 10, "t_ns": 20}, {"event": "trace.leader.appended", "t_ns": 5}],
        2: [{"event": "trace.flushed", "start_ns": 30, "t_ns": 45}],
    }
    assert sorted(flush_spans(logs)) == [(10, 20), (30, 45)]
