"""Consumer lag of one group, per partition, from the partition leaders' own offsets.

For every partition of every topic the group committed to or subscribes to:

* ``log_end_offset`` is the leader's high watermark (what Kafka's tooling calls the log
  end offset: the end of what a consumer can read), ``log_start_offset`` and
  ``last_stable_offset`` the leader's;
* ``lag = end - current_offset``, where the end is the last stable offset for a group
  that reads ``read_committed`` (a member said so in its heartbeat, or a REST v2
  instance's ``isolation.level``: ``isolation_level`` names it) and the high watermark
  otherwise, as Kafka's tools measure it; so an open transaction a ``read_committed``
  group cannot read yet is no lag. Negative only for a committed offset beyond the
  high watermark (``broker.groups.commit_bounds``), whose status is then ``AHEAD``;
* ``lag_ms`` is how long ago the record at the committed offset — the next one the
  group has to process — was appended: ``now - its timestamp``, read from the log (the
  first stored record at or after the committed offset, which after compaction or
  retention may be a later one); 0 when the lag is 0 or negative;
* a partition without a commit is listed with ``current_offset``, ``lag`` and
  ``lag_ms`` null, never hidden; so is one whose commit is negative (kafkajs's
  ``resetOffsets`` commits ``-2``): no committed offset, as Kafka's tools read it
  (``GroupState.position``), though ``last_commit_ms`` says when it was committed;
* ``status`` is the Burrow verdict of ``broker.groups.lag_status``;
* ``consumer_id`` and ``client_id`` are the owning member's, ``""`` when no member owns
  the partition (the REST Proxy's rows always carry strings); ``instance_id`` is null:
  highwater's members have no static ``group.instance.id``.

Rows come worst first: ``AHEAD`` rows, then by lag, largest first (unknown lags last),
then topic and partition.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from broker.errors import HighwaterError, OffsetOutOfRange
from broker.groups.commit_bounds import lag as committed_lag
from broker.groups.lag_status import AHEAD, group_status, partition_status
from broker.isolation import Isolation
from broker.record.decode import iter_records

if TYPE_CHECKING:
    from broker.groups.host import GroupHost
    from broker.groups.shard import GroupState


@dataclass(slots=True)
class LagRow:
    topic_name: str
    partition_id: int
    current_offset: int | None
    log_end_offset: int | None
    log_start_offset: int | None
    lag: int | None
    lag_ms: int | None
    last_commit_ms: int | None
    consumer_id: str
    instance_id: str | None
    client_id: str
    status: str
    last_stable_offset: int | None = None
    isolation_level: str = Isolation.READ_UNCOMMITTED.value

    def to_body(self) -> dict:
        return asdict(self)


async def record_timestamp_at(host: GroupHost, topic: str, partition: int, offset: int) -> int | None:
    """Timestamp of the first stored record at or after ``offset`` (below the HW), from its leader."""
    try:
        result = await host.router.fetch(topic, partition, offset, 1, 0)
    except OffsetOutOfRange as error:
        start = error.details.get("log_start_offset")
        if start is None or start <= offset:
            return None
        result = await host.router.fetch(topic, partition, start, 1, 0)
        offset = start
    for record in iter_records(result.data):
        if record.offset >= offset:
            return record.timestamp
    return None


async def _lag_ms(host: GroupHost, topic: str, partition: int, offset: int, lag: int, now_ms: int) -> int | None:
    if lag <= 0:
        return 0
    try:
        timestamp = await record_timestamp_at(host, topic, partition, offset)
    except HighwaterError:
        return None
    return None if timestamp is None else max(0, now_ms - timestamp)


async def _topic_rows(host: GroupHost, state: GroupState, topic: str, now_ms: int) -> list[LagRow]:
    membership = state.membership
    isolation = Isolation.READ_COMMITTED if membership.read_committed else Isolation.READ_UNCOMMITTED
    described = await host.describer.describe_partitions(topic)
    rows, ages = [], []
    for partition in described:
        tp = (topic, partition.partition)
        committed = state.position(tp)
        stored = state.offsets.get(tp)
        known = partition.high_watermark >= 0
        end = isolation.visible_end(partition.high_watermark, partition.last_stable_offset)
        lag = _lag(end, partition.high_watermark, committed.offset) if committed and known else None
        owner = membership.owner_of(tp)
        member = membership.members.get(owner) if owner else None
        rows.append(
            LagRow(
                topic_name=topic,
                partition_id=partition.partition,
                current_offset=committed.offset if committed else None,
                log_end_offset=partition.high_watermark if known else None,
                log_start_offset=partition.log_start_offset if known else None,
                lag=lag,
                lag_ms=None,
                last_commit_ms=stored.commit_timestamp_ms if stored else None,
                consumer_id=owner or "",
                instance_id=None,
                client_id=member.client_id if member else "",
                status=partition_status(
                    list(state.windows.get(tp, ())),
                    lag,
                    now_ms,
                    nothing_to_read=known and partition.high_watermark == partition.log_start_offset,
                ),
                last_stable_offset=partition.last_stable_offset if known else None,
                isolation_level=isolation.value,
            )
        )
        if lag is not None and committed is not None:
            ages.append((rows[-1], _lag_ms(host, topic, partition.partition, committed.offset, lag, now_ms)))
    for row, age in zip([row for row, _ in ages], await asyncio.gather(*(a for _, a in ages))):
        row.lag_ms = age
    return rows


def _lag(end: int, high_watermark: int, committed_offset: int) -> int:
    """``end - committed offset``, never below 0 for an offset at or below the HW (one between the LSO and
    the HW has nothing a ``read_committed`` group could read yet); beyond the HW, the negative HW lag."""
    if committed_offset > high_watermark:
        return committed_lag(high_watermark, committed_offset)
    return max(0, committed_lag(end, committed_offset))


def _sort_key(row: LagRow) -> tuple:
    return (row.status != AHEAD, row.lag is None, -(row.lag or 0), row.topic_name, row.partition_id)


async def group_lag_rows(host: GroupHost, state: GroupState, now_ms: int) -> list[LagRow]:
    topics = {topic for topic, _ in state.offsets} | state.membership.subscribed_topics()
    existing = sorted(topic for topic in topics if topic in host.view.topics)
    per_topic = await asyncio.gather(*(_topic_rows(host, state, topic, now_ms) for topic in existing))
    return sorted((row for rows in per_topic for row in rows), key=_sort_key)


def lag_summary(group_id: str, rows: list[LagRow]) -> dict:
    """REST Proxy's ConsumerGroupLagSummary plus Burrow's group status; ``AHEAD`` rows count in
    ``partitions_ahead_of_high_watermark`` and the status, not in the lag figures.

    The spec's fields are always there with their types: with no lag known, the worst
    partition's names are ``""`` and its id -1 (Kafka's "no partition")."""
    known = [row for row in rows if row.lag is not None and row.lag >= 0]
    worst = max(known, key=lambda row: row.lag or 0, default=None)
    return {
        "consumer_group_id": group_id,
        "max_lag": worst.lag if worst else 0,
        "max_lag_topic_name": worst.topic_name if worst else "",
        "max_lag_partition_id": worst.partition_id if worst else -1,
        "max_lag_consumer_id": worst.consumer_id if worst else "",
        "max_lag_instance_id": None,
        "max_lag_client_id": worst.client_id if worst else "",
        "max_lag_ms": max((row.lag_ms or 0 for row in known), default=0),
        "total_lag": sum(row.lag or 0 for row in known),
        "partitions": len(rows),
        "partitions_without_commit": sum(1 for row in rows if row.current_offset is None),
        "partitions_ahead_of_high_watermark": sum(1 for row in rows if row.status == AHEAD),
        "status": group_status(row.status for row in rows),
    }
