"""The checker: the broker's promises, judged from a ``History`` and the settled logs.

Pure: no sockets, no files. Inputs, per topic:

* ``final_log`` — partition → {offset: value}, everything below the settled HW as a
  fresh consumer reads it;
* ``replica_bytes`` — partition → {broker id: raw batches below that HW}, read from
  each replica's segment files.

``ops`` counts write invocations; ``reads`` the records handed to readers.

Violations (any fails the run):

* lost — an acknowledged acks=all value is not in the final log (acks=1 losses are
  allowed by Kafka's contract and only counted);
* duplicated — a value in the final log more than once, from a writer that cannot
  duplicate (idempotent or never retried); other duplicates are only counted;
* divergent — one offset holding two values across readers, the final log and the
  replicas; or replicas whose bytes below the HW differ; or a value nobody wrote;
* aborted-read — a value whose write definitely failed was seen by anyone;
* taken-back — a reader saw (offset, value) that is not in the final log (the HW rule);
* unordered — a reader's offsets in one partition did not strictly increase.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from broker.record.decode import iter_records
from tests.chaos.history import FAIL, OK, UNKNOWN, History

COLUMNS = (
    "ops",
    "reads",
    "acked",
    "failed",
    "unknown",
    "lost",
    "duplicated",
    "divergent",
    "aborted-read",
    "taken-back",
    "unordered",
)


@dataclass
class CheckReport:
    topic: str
    counts: Counter = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)

    def violate(self, kind: str, message: str) -> None:
        self.counts[kind] += 1
        if len(self.violations) < 50:
            self.violations.append(f"{self.topic} {kind}: {message}")

    @property
    def ok(self) -> bool:
        return not self.violations


def check_topic(
    history: History,
    topic: str,
    final_log: dict[int, dict[int, str]],
    replica_bytes: dict[int, dict[int, bytes]],
    *,
    durable: bool,
) -> CheckReport:
    """Judge one topic; ``durable``: acknowledged values must survive (acks=all)."""
    report = CheckReport(topic)
    writes = [op for op in history.writes if op.topic == topic]
    reads = [event for event in history.reads if event.topic == topic]
    report.counts["ops"] = len(writes)
    report.counts["reads"] = len(reads)
    for outcome, column in ((OK, "acked"), (FAIL, "failed"), (UNKNOWN, "unknown")):
        report.counts[column] = sum(op.outcome == outcome for op in writes)
    final_counts = Counter(value for log in final_log.values() for value in log.values())
    _check_acknowledged(report, writes, final_counts, durable)
    _check_duplicates(report, writes, final_counts)
    _check_offsets_agree(report, reads, final_log, replica_bytes)
    _check_failed_never_seen(report, writes, reads, final_counts)
    _check_reads_kept(report, reads, final_log)
    _check_reader_order(report, reads)
    _check_written(report, writes, final_counts)
    return report


def _check_acknowledged(report: CheckReport, writes: list, final_counts: Counter, durable: bool) -> None:
    for op in writes:
        if op.outcome == OK and final_counts[op.value] == 0:
            if durable:
                report.violate("lost", f"{op.value} acknowledged at {op.partition}@{op.offset}, not in the log")
            else:
                report.counts["lost"] += 1


def _check_duplicates(report: CheckReport, writes: list, final_counts: Counter) -> None:
    for op in writes:
        if final_counts[op.value] > 1:
            if op.idempotent:
                report.violate("duplicated", f"{op.value} appears {final_counts[op.value]} times")
            else:
                report.counts["duplicated"] += 1


def _check_offsets_agree(report: CheckReport, reads: list, final_log: dict, replica_bytes: dict) -> None:
    seen: dict[tuple[int, int], set[str]] = defaultdict(set)
    for partition, log in final_log.items():
        for offset, value in log.items():
            seen[(partition, offset)].add(value)
    for event in reads:
        seen[(event.partition, event.offset)].add(event.value)
    for partition, replicas in replica_bytes.items():
        for raw in replicas.values():
            for record in iter_records(raw):
                seen[(partition, record.offset)].add(record.value.decode() if record.value else "")
        reference = next(iter(replicas.values()), b"")
        for broker_id, raw in replicas.items():
            if raw != reference:
                report.violate("divergent", f"partition {partition}: replica {broker_id}'s bytes below the HW differ")
        replica_ends = {broker_id: sum(1 for _ in iter_records(raw)) for broker_id, raw in replicas.items()}
        if replicas and set(replica_ends.values()) != {len(final_log.get(partition, {}))}:
            report.violate("divergent", f"partition {partition}: records below the HW per replica {replica_ends}")
    for (partition, offset), values in sorted(seen.items()):
        if len(values) > 1:
            report.violate("divergent", f"{partition}@{offset} holds {sorted(values)}")


def _check_failed_never_seen(report: CheckReport, writes: list, reads: list, final_counts: Counter) -> None:
    failed = {op.value for op in writes if op.outcome == FAIL}
    seen = {event.value for event in reads} | set(final_counts)
    for value in sorted(failed & seen):
        report.violate("aborted-read", f"{value} was refused with a definite failure but was read")


def _check_reads_kept(report: CheckReport, reads: list, final_log: dict) -> None:
    for event in reads:
        if final_log.get(event.partition, {}).get(event.offset) != event.value:
            report.violate(
                "taken-back", f"{event.reader} read {event.value} at {event.partition}@{event.offset}; it is gone"
            )


def _check_reader_order(report: CheckReport, reads: list) -> None:
    last: dict[tuple[str, int], int] = {}
    for event in reads:
        key = (event.reader, event.partition)
        if key in last and event.offset <= last[key]:
            report.violate("unordered", f"{event.reader} read {event.partition}@{event.offset} after @{last[key]}")
        last[key] = event.offset


def _check_written(report: CheckReport, writes: list, final_counts: Counter) -> None:
    written = {op.value for op in writes}
    for value in sorted(set(final_counts) - written):
        report.violate("divergent", f"{value} is in the log but nobody wrote it")


def summary_table(reports: list[CheckReport], columns: tuple[str, ...] = COLUMNS) -> str:
    """A fixed-width table, one row per topic plus a total."""
    rows = [[report.topic, *(str(report.counts[c]) for c in columns)] for report in reports]
    total: Counter[str] = Counter()
    for report in reports:
        total.update({c: report.counts[c] for c in columns})
    rows.append(["total", *(str(total[c]) for c in columns)])
    header = ["topic", *columns]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in [header, *rows]]
    return "\n".join(lines)
