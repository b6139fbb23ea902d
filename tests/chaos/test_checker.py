"""The checker on hand-built histories: each rule catches what it must and nothing else."""

from __future__ import annotations

from broker.record.codec import RecordInput, encode_batch
from tests.chaos.checker import check_topic, summary_table
from tests.chaos.history import FAIL, OK, UNKNOWN, History, ReadEvent, WriteOp

TOPIC = "t"


def _write(value: str, outcome: str, offset: int | None = None, idempotent: bool = True) -> WriteOp:
    op = WriteOp("w", TOPIC, 0, value, idempotent)
    op.complete(outcome, offset)
    return op


def _replicas(values: list[str], brokers: int = 3) -> dict[int, dict[int, bytes]]:
    raw = encode_batch([RecordInput(None, v.encode()) for v in values]) if values else b""
    return {0: {b: raw for b in range(1, brokers + 1)}}


def _check(history: History, log: list[str], durable: bool = True, replicas=None):
    final = {0: dict(enumerate(log))}
    return check_topic(history, TOPIC, final, replicas if replicas is not None else _replicas(log), durable=durable)


def test_a_clean_history_has_no_violation_and_counts_outcomes() -> None:
    history = History(writes=[_write("a", OK, 0), _write("b", UNKNOWN), _write("c", FAIL)])
    history.reads = [ReadEvent("r", TOPIC, 0, 0, "a"), ReadEvent("r", TOPIC, 0, 1, "b")]
    report = _check(history, ["a", "b"])
    assert report.ok, report.violations
    assert (report.counts["ops"], report.counts["acked"], report.counts["unknown"], report.counts["failed"]) == (
        3,
        1,
        1,
        1,
    )


def test_an_acknowledged_value_missing_is_lost_only_when_durable() -> None:
    history = History(writes=[_write("a", OK, 0), _write("b", OK, 1)])
    assert [v.split(":")[0] for v in _check(history, ["a"]).violations] == ["t lost"]
    relaxed = _check(history, ["a"], durable=False)
    assert relaxed.ok and relaxed.counts["lost"] == 1


def test_duplicates_violate_only_for_idempotent_writers() -> None:
    strict = History(writes=[_write("a", OK, 0)])
    assert _check(strict, ["a", "a"]).counts["duplicated"] == 1
    assert not _check(strict, ["a", "a"]).ok
    loose = History(writes=[_write("a", OK, 0, idempotent=False)])
    report = _check(loose, ["a", "a"])
    assert report.ok and report.counts["duplicated"] == 1


def test_a_definitely_failed_value_that_is_read_is_an_aborted_read() -> None:
    history = History(writes=[_write("a", OK, 0), _write("x", FAIL)])
    history.reads = [ReadEvent("r", TOPIC, 0, 1, "x")]
    report = _check(history, ["a", "x"])
    assert report.counts["aborted-read"] == 1


def test_a_read_that_is_gone_from_the_final_log_is_taken_back_and_divergent() -> None:
    history = History(writes=[_write("a", OK, 0), _write("b", UNKNOWN), _write("c", OK, 1)])
    history.reads = [ReadEvent("r", TOPIC, 0, 1, "b")]
    report = _check(history, ["a", "c"])
    assert report.counts["taken-back"] == 1
    assert report.counts["divergent"] == 1


def test_reader_offsets_must_increase() -> None:
    history = History(writes=[_write("a", OK, 0), _write("b", OK, 1)])
    history.reads = [ReadEvent("r", TOPIC, 0, 1, "b"), ReadEvent("r", TOPIC, 0, 0, "a")]
    assert _check(history, ["a", "b"]).counts["unordered"] == 1


def test_replicas_with_different_bytes_below_the_hw_diverge() -> None:
    history = History(writes=[_write("a", OK, 0)])
    replicas = _replicas(["a"])
    replicas[0][2] = encode_batch([RecordInput(None, b"z")])
    report = _check(history, ["a"], replicas=replicas)
    assert report.counts["divergent"] >= 2


def test_a_value_nobody_wrote_is_divergent() -> None:
    report = _check(History(writes=[_write("a", OK, 0)]), ["a", "ghost"])
    assert any("nobody wrote" in v for v in report.violations)


def test_summary_table_has_a_total_row() -> None:
    report = _check(History(writes=[_write("a", OK, 0)]), ["a"])
    table = summary_table([report, report]).splitlines()
    assert table[0].split()[:3] == ["topic", "ops", "reads"]
    assert table[-1].split()[:2] == ["total", "2"]
