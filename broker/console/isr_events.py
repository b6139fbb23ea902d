"""ISR shrinks and expansions and leader changes, told apart from consecutive partition records.

Every broker applies every partition record (``broker.cluster.metadata_view``), in store
order, so every broker can keep the same list: any broker answers the same events
within one metadata round (their ``time_ms`` is when this broker applied the record, so
it may differ by that round between brokers). The first record seen of a partition is
its creation (or this broker's start), not a change, and gives no event; a record equal
to the previous one (a re-listing after the watch was compacted) gives none either.

Invariant: each topic keeps at most ``per_topic`` events, oldest dropped first, so
memory is bounded by the number of topics whatever the churn.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from broker.cluster.records import PartitionRecord

EVENTS_PER_TOPIC = 200
EventKind = Literal["shrink", "expand", "leader_change"]


@dataclass(frozen=True, slots=True)
class IsrEvent:
    time_ms: int
    topic_name: str
    partition_id: int
    kind: EventKind
    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    previous_isr: tuple[int, ...]

    def to_body(self) -> dict[str, Any]:
        return {
            "time_ms": self.time_ms,
            "partition_id": self.partition_id,
            "kind": self.kind,
            "leader_id": self.leader_id,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "previous_isr": list(self.previous_isr),
        }


def classify(previous: PartitionRecord | None, record: PartitionRecord, now_ms: int) -> list[IsrEvent]:
    """The changes from ``previous`` to ``record``, in the order they are listed: leader, shrink, expand.

    One record may carry several: when a leader's broker dies the controller moves the
    leadership and removes it from the ISR in one write (``leader_change`` + ``shrink``).
    A leader epoch bump with the same leader (a re-election) is a ``leader_change`` too:
    followers truncate and refetch on it, which is what an operator wants to see.
    """
    if previous is None:
        return []
    before, after = set(previous.isr), set(record.isr)
    kinds: list[EventKind] = []
    if (previous.leader, previous.leader_epoch) != (record.leader, record.leader_epoch):
        kinds.append("leader_change")
    if before - after:
        kinds.append("shrink")
    if after - before:
        kinds.append("expand")
    return [
        IsrEvent(
            now_ms,
            record.topic,
            record.partition,
            kind,
            record.leader,
            record.leader_epoch,
            tuple(record.isr),
            tuple(previous.isr),
        )
        for kind in kinds
    ]


class IsrEventLog:
    """This broker's events, one bounded ring per topic; see the module docstring."""

    def __init__(self, per_topic: int = EVENTS_PER_TOPIC) -> None:
        self.per_topic = per_topic
        self._last: dict[tuple[str, int], PartitionRecord] = {}
        self._events: dict[str, deque[IsrEvent]] = {}

    def observe(self, record: PartitionRecord, now_ms: int) -> list[IsrEvent]:
        key = (record.topic, record.partition)
        events = classify(self._last.get(key), record, now_ms)
        self._last[key] = record
        if events:
            self._events.setdefault(record.topic, deque(maxlen=self.per_topic)).extend(events)
        return events

    def forget(self, topic: str, partition: int) -> None:
        """The partition was deleted: a topic created again under the name starts with no history."""
        self._last.pop((topic, partition), None)
        ring = self._events.get(topic)
        if ring is None:
            return
        kept = [event for event in ring if event.partition_id != partition]
        if kept:
            self._events[topic] = deque(kept, maxlen=self.per_topic)
        else:
            del self._events[topic]

    def newest_first(self, topic: str) -> list[IsrEvent]:
        return list(reversed(self._events.get(topic, ())))
