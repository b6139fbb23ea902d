"""What one REST Proxy v2 read has gathered so far, and the rule that ends it; pure: no I/O, no clock.

A read fetches the instance's partitions in rounds (``RestInstanceDriver``): a first round
without waiting, then long polls that wake when a partition's high watermark moves. Each
round's records are added here, per partition after what the earlier rounds gathered, and
``is_done`` says whether to answer now. The rule is Confluent's ``KafkaConsumerReadTask``:

* the answer is done once its records reach ``fetch.min.bytes`` (``min_bytes``) bytes, or
  as soon as it has any record when ``min_bytes`` is 0 or -1 (the default; Confluent's
  proxy waits out the timeout on -1, but an early answer withholds nothing from a client,
  and highwater's readers have always had it);
* it is done when nothing more fits ``max_bytes`` (the request's ``max_bytes``);
* it is done when the request's timeout has elapsed (``remaining_ms <= 0``), with what it has;
* it is done when no partition is left to read (none owned, or every one dropped).

Bytes are counted as Confluent counts them: the sum of the records' key and value sizes
(``RenderedSpan.size_bytes``), not the size of the batches on the wire, so ``min_bytes``
and ``max_bytes`` measure the same thing.

Invariant: per partition, the gathered records are contiguous from the read's start
offset (each round starts at the previous round's ``next_offset``), so the answer lists
them in offset order and the position moves exactly over what the answer returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.groups.assignors import TopicPartition
from broker.groups.rest_records import RenderedSpan


@dataclass(slots=True)
class Gathering:
    """One read's records per partition (``spans``) over its rounds; ``starts`` are where the read began."""

    starts: dict[TopicPartition, int]
    min_bytes: int
    max_bytes: int
    spans: dict[TopicPartition, RenderedSpan] = field(default_factory=dict)
    dropped: set[TopicPartition] = field(default_factory=set)
    full: bool = False
    """A record did not fit ``max_bytes``: nothing more can be added, whatever ``min_bytes`` asks."""

    @property
    def size_bytes(self) -> int:
        return sum(span.size_bytes for span in self.spans.values())

    @property
    def has_records(self) -> bool:
        return any(span.records for span in self.spans.values())

    @property
    def budget_bytes(self) -> int:
        """What ``max_bytes`` leaves for the next records."""
        return self.max_bytes - self.size_bytes

    def cursor(self, tp: TopicPartition) -> int:
        """Where the next fetch of ``tp`` starts: after what was gathered from it, else the read's start."""
        span = self.spans.get(tp)
        return span.next_offset if span is not None else self.starts[tp]

    def cursors(self) -> dict[TopicPartition, int]:
        """``cursor`` of each partition still read, in partition order."""
        return {tp: self.cursor(tp) for tp in sorted(self.starts) if tp not in self.dropped}

    def add(self, tp: TopicPartition, span: RenderedSpan) -> None:
        """Append a span fetched from ``cursors()[tp]``; one that neither renders a record nor
        moves past a batch (a read that found nothing) changes nothing."""
        self.full = self.full or span.full
        if not span.records and span.next_offset == self.cursor(tp):
            return
        before = self.spans.get(tp)
        if before is None:
            self.spans[tp] = span
            return
        self.spans[tp] = RenderedSpan(
            before.records + span.records, span.next_offset, before.size_bytes + span.size_bytes, span.full
        )

    def drop(self, tp: TopicPartition) -> None:
        """Stop reading ``tp`` in this read (its position is out of range, or its fetch failed);
        what was gathered from it before stays in the answer."""
        self.dropped.add(tp)

    def is_done(self, remaining_ms: int) -> bool:
        """Answer now? (the module docstring's rule; ``remaining_ms`` is what is left of the timeout)."""
        if self.full or self.budget_bytes <= 0 or remaining_ms <= 0 or not self.cursors():
            return True
        if self.min_bytes <= 0:
            return self.has_records
        return self.size_bytes >= self.min_bytes

    def records(self) -> list[dict[str, Any]]:
        """The answer: partitions in order, each partition's records in offset order."""
        return [record for _, span in sorted(self.spans.items()) for record in span.records]

    def committable(self) -> list[tuple[str, int, int, str]]:
        """What auto-commit writes: the offset after the last record returned, per partition returned from."""
        return [
            (topic, partition, span.next_offset, "")
            for (topic, partition), span in sorted(self.spans.items())
            if span.records
        ]
