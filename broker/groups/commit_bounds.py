"""Where a committed offset may lie, and how the lag of one that lies beyond the high watermark reads.

A committed offset is the next offset the group will read, so the highest one that
means anything is the partition's high watermark (HW): the end of what a consumer can
read. Kafka itself stores any offset; highwater refuses what can only be a mistake, so a
garbage commit never shows up as "lag 0, OK":

* ``offset <= HW``: accepted;
* ``HW < offset <= LEO`` (the leader holds those records but has not made them visible,
  e.g. its HW is catching up after an election): ``OFFSET_NOT_AVAILABLE``, retriable;
* ``offset > LEO``: ``OFFSET_OUT_OF_RANGE`` naming the offset and the HW, not retriable.

A committed offset can still end up above the HW: the topic was deleted and created
again, an unclean leader election took records back, or the commit was accepted while
the partition's leader could not be asked (then nothing is refused: the check needs the
leader's own figures). Such a partition reports a negative lag, ``HW - committed
offset``, as ``kafka-consumer-groups`` prints it, and the status ``AHEAD``
(``broker.groups.lag_status``), never "lag 0, OK".

Pure: no asyncio, no I/O.
"""

from __future__ import annotations

from broker.errors import OffsetNotAvailable, OffsetOutOfRange


def check_commit_offset(topic: str, partition: int, offset: int, high_watermark: int, log_end_offset: int) -> None:
    """Refuse committing ``offset`` beyond the leader's ``high_watermark`` (see the module docstring)."""
    if offset <= high_watermark:
        return
    details = {"topic_name": topic, "partition_id": partition, "offset": offset, "high_watermark": high_watermark}
    if offset <= log_end_offset:
        raise OffsetNotAvailable(
            f"cannot commit offset {offset} for {topic}-{partition} yet: the high watermark is {high_watermark} "
            "and has not reached it; retry",
            **details,
        )
    raise OffsetOutOfRange(
        f"cannot commit offset {offset} for {topic}-{partition}: it is above the high watermark {high_watermark}, "
        f"the end of what a consumer can read; commit at most {high_watermark}",
        **details,
    )


def lag(high_watermark: int, committed_offset: int) -> int:
    """``HW - committed offset``; negative when the committed offset lies beyond the HW."""
    return high_watermark - committed_offset
