"""The transactional checker: Jepsen's transaction anomalies, judged from a ``History`` and the settled logs.

Pure, like ``checker``. Inputs per topic, each partition → {offset: value}, everything
below the settled high watermark (where the last stable offset has caught up with it):

* ``uncommitted_log`` — as a ``read_uncommitted`` reader reads it (every data record);
* ``committed_log`` — as a ``read_committed`` reader reads it.

Violations of ``check_transactions`` (any fails the run):

* lost — no value of a committed transaction is in the committed log;
* torn — some but not all of one transaction's values are in the committed log;
* aborted-read — a value of an aborted transaction in the committed log, or a value
  that is not in the committed log handed to a ``read_committed`` reader;
* duplicated — a value in the log more than once (transactional producers are idempotent);
* divergent — the committed log disagrees with the uncommitted one at an offset, a
  value nobody wrote, or a reader saw (offset, value) that the settled log does not hold;
* skipped — a reader passed over an offset its isolation level shows it;
* unordered — a reader's offsets in one partition did not strictly increase.

``check_transform`` judges a consume-transform-produce job: its committed output must be
exactly one ``ctp:<value>`` per committed input record below the offsets its group
committed, in the input's partition (its offsets and its outputs commit together or not
at all).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import pairwise

from tests.chaos.checker import CheckReport
from tests.chaos.history import ABORTED, COMMITTED, READ_COMMITTED, UNKNOWN, History, ReadEvent

Log = dict[int, dict[int, str]]
"""partition → {offset: value}"""

TXN_COLUMNS = (
    "txns",
    "committed",
    "aborted",
    "unknown",
    "reads",
    "lost",
    "torn",
    "aborted-read",
    "duplicated",
    "divergent",
    "skipped",
    "unordered",
)
TRANSFORM_COLUMNS = ("inputs", "outputs", "lost", "duplicated", "aborted-read", "divergent")
"""``inputs``: committed source records below the group's offsets; ``outputs``: committed sink records."""
TRANSFORM_PREFIX = "ctp:"


def check_transactions(history: History, topic: str, uncommitted_log: Log, committed_log: Log) -> CheckReport:
    report = CheckReport(topic)
    transactions = [txn for txn in history.transactions if txn.topic == topic]
    reads = [event for event in history.reads if event.topic == topic]
    report.counts["txns"] = len(transactions)
    for outcome in (COMMITTED, ABORTED, UNKNOWN):
        report.counts[outcome] = sum(txn.outcome == outcome for txn in transactions)
    report.counts["reads"] = len(reads)
    committed_values = Counter(value for log in committed_log.values() for value in log.values())
    _check_logs_agree(report, transactions, uncommitted_log, committed_log)
    for txn in transactions:
        present = [value for _, value in txn.values if committed_values[value]]
        if 0 < len(present) < len(txn.values):
            report.violate(
                "torn", f"{txn.writer}'s {txn.outcome} transaction: {len(present)} of {txn.values} committed"
            )
        elif txn.outcome == COMMITTED and txn.values and not present:
            report.violate("lost", f"{txn.writer}'s committed transaction {txn.values} is not in the log")
        elif txn.outcome == ABORTED and present:
            report.violate("aborted-read", f"{txn.writer}'s aborted transaction {txn.values} is in the committed log")
    for event in reads:
        if uncommitted_log.get(event.partition, {}).get(event.offset) != event.value:
            report.violate("divergent", f"{event.reader} read {event.value} at {event.partition}@{event.offset}")
        if history.isolation.get(event.reader) == READ_COMMITTED and not committed_values[event.value]:
            report.violate("aborted-read", f"{event.reader} read {event.value}, which was never committed")
    _check_readers(report, history, reads, uncommitted_log, committed_log)
    return report


def _check_logs_agree(report: CheckReport, transactions: list, uncommitted_log: Log, committed_log: Log) -> None:
    written = {value for txn in transactions for _, value in txn.values}
    counts = Counter(value for log in uncommitted_log.values() for value in log.values())
    for value, count in sorted(counts.items()):
        if count > 1:
            report.violate("duplicated", f"{value} appears {count} times")
        if value not in written:
            report.violate("divergent", f"{value} is in the log but nobody wrote it")
    for partition, log in committed_log.items():
        for offset, value in log.items():
            if uncommitted_log.get(partition, {}).get(offset) != value:
                report.violate("divergent", f"{partition}@{offset}: committed {value}, uncommitted differs")


def _check_readers(
    report: CheckReport, history: History, reads: list[ReadEvent], uncommitted: Log, committed: Log
) -> None:
    by_reader: dict[tuple[str, int], list[int]] = defaultdict(list)
    for event in reads:
        by_reader[(event.reader, event.partition)].append(event.offset)
    for (reader, partition), offsets in by_reader.items():
        for before, after in pairwise(offsets):
            if after <= before:
                report.violate("unordered", f"{reader} read {partition}@{after} after @{before}")
        shown = committed if history.isolation.get(reader) == READ_COMMITTED else uncommitted
        expected = {offset for offset in shown.get(partition, {}) if offset <= max(offsets)}
        for offset in sorted(expected - set(offsets))[:5]:
            report.violate("skipped", f"{reader} passed over {partition}@{offset} ({shown[partition][offset]})")


def check_replicas_agree(report: CheckReport, partition: int, replicas: dict[int, bytes]) -> None:
    """Every replica's bytes below the settled HW are the same (markers included)."""
    if len(set(replicas.values())) > 1:
        sizes = {broker_id: len(raw) for broker_id, raw in replicas.items()}
        report.violate("divergent", f"partition {partition}: replicas' bytes below the HW differ (sizes {sizes})")


def check_transform(
    source_committed: Log, sink_topic: str, sink_committed: Log, group_offsets: dict[int, int]
) -> CheckReport:
    """The sink's committed records against the source's committed records below ``group_offsets``."""
    report = CheckReport(sink_topic)
    expected = {
        TRANSFORM_PREFIX + value: partition
        for partition, log in source_committed.items()
        for offset, value in log.items()
        if offset < group_offsets.get(partition, 0)
    }
    found = Counter(value for log in sink_committed.values() for value in log.values())
    report.counts["inputs"] = len(expected)
    report.counts["outputs"] = sum(found.values())
    for value, count in sorted(found.items()):
        if count > 1:
            report.violate("duplicated", f"{value} was written {count} times")
        if value not in expected:
            report.violate("aborted-read", f"{value} is committed but its input is not below the group's offsets")
    for value in sorted(set(expected) - set(found)):
        report.violate("lost", f"{value}: its input's offset was committed, its output was not")
    for partition, log in sink_committed.items():
        for offset, value in log.items():
            if value in expected and expected[value] != partition:
                report.violate(
                    "divergent", f"{value} at {partition}@{offset}, its input in partition {expected[value]}"
                )
    return report
