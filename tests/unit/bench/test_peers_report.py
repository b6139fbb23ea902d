"""The table of ``highwater bench peers``: ratios per round, the targets' verdicts, the document's section."""

from __future__ import annotations

import pytest

from broker.bench import peers_report
from broker.bench.stats import LatencySummary


def _summary(p50_ms: float, p99_ms: float) -> LatencySummary:
    return LatencySummary(samples=100, p50_ms=p50_ms, p99_ms=p99_ms, p999_ms=p99_ms, max_ms=p99_ms)


ROUNDS = {
    peers_report.ECHO: [_summary(0.4, 0.8), _summary(0.5, 1.0)],
    peers_report.HIGHWATER_ALL: [_summary(0.8, 2.4), _summary(1.5, 2.0)],
    peers_report.HIGHWATER_ONE: [_summary(0.48, 1.0), _summary(0.6, 1.2)],
    peers_report.NATS: [_summary(1.0, 2.0), _summary(1.0, 2.0)],
    peers_report.REDIS: [_summary(0.3, 0.6), _summary(0.3, 0.6)],
    peers_report.REDIS_FSYNC: [_summary(0.7, 1.4), _summary(0.7, 1.4)],
}


def test_a_ratio_is_the_median_of_the_same_rounds_ratios() -> None:
    assert peers_report.ratio(ROUNDS, peers_report.HIGHWATER_ALL, peers_report.ECHO) == pytest.approx((2.0 + 3.0) / 2)
    assert peers_report.ratio(ROUNDS, peers_report.HIGHWATER_ALL, peers_report.ECHO, "p99_ms") == pytest.approx(2.5)


def test_the_table_lists_every_system_with_each_rounds_figures() -> None:
    table = peers_report.markdown_table(ROUNDS).splitlines()
    assert len(table) == 2 + len(peers_report.SYSTEMS)
    assert table[3] == "| highwater acks=all RF 3 | 0.80, 1.50 ms | 2.40, 2.00 ms | 2.50 | 2.50 |"


def test_each_target_is_judged_against_its_reference() -> None:
    assert peers_report.verdicts(ROUNDS) == [
        "acks=all RF 3 p50 2.50× echo (target ≤ 2): missed",
        "acks=all RF 3 p50 1.15× NATS JetStream R3 (target ≤ 1): missed",
        "acks=all RF 3 p99 2.50× echo (target ≤ 3): met",
        "acks=1 on one broker p50 1.20× echo (target ≤ 1.3): met",
    ]


def test_the_table_replaces_what_lies_between_the_markers_and_nothing_else() -> None:
    document = f"# perf\nbefore\n{peers_report.BEGIN}\nold table\n{peers_report.END}\nafter\n"
    written = peers_report.with_section(document, "| new |")
    assert written == f"# perf\nbefore\n{peers_report.BEGIN}\n| new |\n{peers_report.END}\nafter\n"
    assert peers_report.with_section(written, "| newer |").count(peers_report.BEGIN) == 1


@pytest.mark.parametrize(
    "document", ["no markers", f"{peers_report.END}\n{peers_report.BEGIN}\n", f"{peers_report.BEGIN} only"]
)
def test_a_document_without_its_section_is_refused(document: str) -> None:
    with pytest.raises(ValueError, match="section"):
        peers_report.with_section(document, "| table |")
