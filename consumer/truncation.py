"""Has the log under a consumer's position been truncated? Pure verdicts (KIP-320 in spirit).

The consumer remembers the leader epoch of the batch of the last record it handed
out (offset ``position - 1``). When the partition gets a new leader, the new
leader's log is checked against it:

* ``log_end_offset < position``: records already consumed do not exist any more;
  the log diverged at ``log_end_offset`` at the latest.
* the batch now holding offset ``position - 1`` carries another leader epoch: the
  offset was rewritten by a different leader; the logs diverged at or before it.

Otherwise the consumed prefix is intact. An intact log is never reported truncated:
a clean leader change keeps every record below the high watermark (the HW rule), and
``position`` never passes the HW, so both checks hold on the new leader.

Leader epochs never decrease along a log, so a fetched batch whose epoch is *below*
the last consumed epoch (``epoch_went_back``) is the same divergence seen from the
data itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Truncation:
    divergent_offset: int
    reason: str


def check_position(
    position: int, last_leader_epoch: int, log_end_offset: int, epoch_at_last_consumed: int | None
) -> Truncation | None:
    """The truncation a new leader's log shows for a consumer at ``position``, or ``None``.

    ``epoch_at_last_consumed`` is the leader epoch of the batch holding ``position - 1``
    on the new leader, ``None`` when that offset cannot be read there (below its log
    start after retention, or not yet below its high watermark): then only the length
    check applies.
    """
    if log_end_offset < position:
        return Truncation(log_end_offset, f"the leader's log ends at {log_end_offset}")
    if epoch_at_last_consumed is not None and epoch_at_last_consumed != last_leader_epoch:
        return Truncation(
            position - 1,
            f"offset {position - 1} was consumed from leader epoch {last_leader_epoch} "
            f"but is now in a batch of leader epoch {epoch_at_last_consumed}",
        )
    return None


def epoch_went_back(last_leader_epoch: int | None, batch_leader_epoch: int) -> bool:
    """A batch after the last consumed record carries an older epoch: the log was rewritten."""
    return last_leader_epoch is not None and 0 <= batch_leader_epoch < last_leader_epoch
