"""The transactional checker on hand-built histories: each anomaly is caught, a clean history passes."""

from __future__ import annotations

from tests.chaos.checker import summary_table
from tests.chaos.history import ABORTED, COMMITTED, READ_COMMITTED, UNKNOWN, History, ReadEvent, TxnOp
from tests.chaos.txn_checker import TXN_COLUMNS, check_transactions, check_transform

TOPIC = "t"


def _txn(outcome: str, *values: tuple[int, str]) -> TxnOp:
    txn = TxnOp("w", TOPIC, list(values))
    txn.complete(outcome)
    return txn


def _history() -> History:
    """Committed a (p0) + b (p1), aborted c (p0), committed d (p0), unknown e (p1); e's commit landed."""
    return History(
        transactions=[
            _txn(COMMITTED, (0, "a"), (1, "b")),
            _txn(ABORTED, (0, "c")),
            _txn(COMMITTED, (0, "d")),
            _txn(UNKNOWN, (1, "e")),
        ],
        isolation={"rc": READ_COMMITTED},
    )


UNCOMMITTED = {0: {0: "a", 2: "c", 4: "d"}, 1: {0: "b", 2: "e"}}
"""Offsets 1, 3 (partition 0) and 1 (partition 1) hold markers, which no reader is shown."""
COMMITTED_LOG = {0: {0: "a", 4: "d"}, 1: {0: "b", 2: "e"}}


def _violations(report) -> set[str]:
    return {violation.split(":")[0] for violation in report.violations}


def test_a_clean_history_passes_and_counts_outcomes() -> None:
    history = _history()
    history.reads = [
        ReadEvent("rc", TOPIC, 0, 0, "a"),
        ReadEvent("rc", TOPIC, 0, 4, "d"),
        ReadEvent("ru", TOPIC, 0, 0, "a"),
        ReadEvent("ru", TOPIC, 0, 2, "c"),
    ]
    report = check_transactions(history, TOPIC, UNCOMMITTED, COMMITTED_LOG)
    assert report.ok, report.violations
    assert [report.counts[c] for c in ("txns", "committed", "aborted", "unknown", "reads")] == [4, 2, 1, 1, 4]
    assert summary_table([report], TXN_COLUMNS).splitlines()[0].split()[:3] == ["topic", "txns", "committed"]


def test_an_aborted_value_in_the_committed_log_is_an_aborted_read() -> None:
    committed = {0: {0: "a", 2: "c", 4: "d"}, 1: COMMITTED_LOG[1]}
    assert _violations(check_transactions(_history(), TOPIC, UNCOMMITTED, committed)) == {"t aborted-read"}


def test_a_read_committed_reader_shown_an_aborted_value_is_an_aborted_read() -> None:
    history = _history()
    history.reads = [ReadEvent("rc", TOPIC, 0, 0, "a"), ReadEvent("rc", TOPIC, 0, 2, "c")]
    assert _violations(check_transactions(history, TOPIC, UNCOMMITTED, COMMITTED_LOG)) == {"t aborted-read"}


def test_half_a_committed_transaction_is_torn_and_all_of_it_missing_is_lost() -> None:
    torn = {0: {4: "d"}, 1: {0: "b", 2: "e"}}
    assert _violations(check_transactions(_history(), TOPIC, UNCOMMITTED, torn)) == {"t torn"}
    lost = {0: {0: "a"}, 1: {0: "b", 2: "e"}}
    assert _violations(check_transactions(_history(), TOPIC, UNCOMMITTED, lost)) == {"t lost"}


def test_a_duplicate_or_an_unwritten_value_is_caught() -> None:
    duplicated = {0: {**UNCOMMITTED[0], 5: "d"}, 1: UNCOMMITTED[1]}
    assert _violations(check_transactions(_history(), TOPIC, duplicated, COMMITTED_LOG)) == {"t duplicated"}
    unwritten = {0: {**UNCOMMITTED[0], 5: "z"}, 1: UNCOMMITTED[1]}
    assert _violations(check_transactions(_history(), TOPIC, unwritten, COMMITTED_LOG)) == {"t divergent"}


def test_readers_that_skip_or_go_backwards_are_caught() -> None:
    history = _history()
    history.reads = [ReadEvent("rc", TOPIC, 0, 4, "d")]
    assert _violations(check_transactions(history, TOPIC, UNCOMMITTED, COMMITTED_LOG)) == {"t skipped"}
    history.reads = [
        ReadEvent("ru", TOPIC, 0, 0, "a"),
        ReadEvent("ru", TOPIC, 0, 2, "c"),
        ReadEvent("ru", TOPIC, 0, 0, "a"),
    ]
    assert _violations(check_transactions(history, TOPIC, UNCOMMITTED, COMMITTED_LOG)) == {"t unordered"}


def test_a_read_the_settled_log_does_not_hold_is_divergent() -> None:
    history = _history()
    history.reads = [ReadEvent("ru", TOPIC, 0, 0, "x")]
    assert _violations(check_transactions(history, TOPIC, UNCOMMITTED, COMMITTED_LOG)) == {"t divergent"}


SOURCE = {0: {0: "a", 4: "d"}, 1: {0: "b", 2: "e"}}


def test_a_transform_that_wrote_exactly_its_committed_inputs_passes() -> None:
    sink = {0: {0: "ctp:a"}, 1: {0: "ctp:b", 2: "ctp:e"}}
    report = check_transform(SOURCE, "out", sink, {0: 1, 1: 3})
    assert report.ok, report.violations
    assert (report.counts["inputs"], report.counts["outputs"]) == (3, 3)


def test_a_transform_anomaly_is_caught() -> None:
    offsets = {0: 1, 1: 3}
    duplicated = {0: {0: "ctp:a", 2: "ctp:a"}, 1: {0: "ctp:b", 2: "ctp:e"}}
    assert _violations(check_transform(SOURCE, "out", duplicated, offsets)) == {"out duplicated"}
    lost = {0: {0: "ctp:a"}, 1: {0: "ctp:b"}}
    assert _violations(check_transform(SOURCE, "out", lost, offsets)) == {"out lost"}
    ahead = {0: {0: "ctp:a", 2: "ctp:d"}, 1: {0: "ctp:b", 2: "ctp:e"}}
    assert _violations(check_transform(SOURCE, "out", ahead, offsets)) == {"out aborted-read"}
    moved = {0: {0: "ctp:a", 1: "ctp:e"}, 1: {0: "ctp:b"}}
    assert _violations(check_transform(SOURCE, "out", moved, offsets)) == {"out divergent"}
