"""Burrow-style consumer health: a verdict per partition over a sliding window of commits.

Each commit of a partition is remembered as a ``CommitSample`` (committed offset, commit
time, and the lag at that moment: high watermark then minus the offset; None when the
high watermark was not known, e.g. for commits replayed from the log). The window holds
the last ``WINDOW_SIZE`` samples. ``partition_status`` applies Burrow's rules in this
order (the first that matches decides):

0. current lag is negative (the committed offset lies beyond the high watermark, see
   ``broker.groups.commit_bounds``)                  -> ``AHEAD``: the consumer would
   resume at an offset that does not exist, Kafka's OFFSET_OUT_OF_RANGE reset;
1. current lag is 0                                   -> ``OK`` (never an error);
2. some committed offset is lower than the one before -> ``REWIND`` (offsets reset back);
3. now - last commit > max(window span, ``STOP_FLOOR_MS``), lag > 0 -> ``STOP``
   (the consumer stopped committing; the window span is last - first commit time,
   the floor keeps a window of one commit from counting as stopped at once);
4. some sample in the window had lag 0                -> ``OK`` (it caught up recently);
5. >= 2 samples, every offset equal, lag > 0          -> ``STALL`` (commits, no progress);
6. >= 2 samples, offsets rising but lag never falling between
   consecutive samples                               -> ``WARN`` (falling behind);
7. otherwise                                          -> ``OK``.

A partition with no commit at all is ``OK`` when there is nothing to read
(high watermark = log start offset) and ``STOP`` otherwise.

``group_status`` is Burrow's group verdict: ``ERR`` if any partition is ``STOP``,
``STALL``, ``REWIND`` or ``AHEAD``, else ``WARN`` if any is ``WARN``, else ``OK``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

WINDOW_SIZE = 10
STOP_FLOOR_MS = 30_000

OK, WARN, ERR, STOP, STALL, REWIND = "OK", "WARN", "ERR", "STOP", "STALL", "REWIND"
AHEAD = "AHEAD"
"""Not one of Burrow's: a committed offset beyond the high watermark, reported with a negative lag."""


@dataclass(slots=True)
class CommitSample:
    offset: int
    commit_ms: int
    lag: int | None


def new_window() -> deque[CommitSample]:
    return deque(maxlen=WINDOW_SIZE)


def _rewound(samples: Sequence[CommitSample]) -> bool:
    return any(later.offset < earlier.offset for earlier, later in pairwise(samples))


def _stopped(samples: Sequence[CommitSample], now_ms: int) -> bool:
    span_ms = samples[-1].commit_ms - samples[0].commit_ms
    return now_ms - samples[-1].commit_ms > max(span_ms, STOP_FLOOR_MS)


def _lags(samples: Sequence[CommitSample]) -> list[int]:
    return [sample.lag for sample in samples if sample.lag is not None]


def _stalled(samples: Sequence[CommitSample]) -> bool:
    lags = _lags(samples)
    return len(samples) >= 2 and len({s.offset for s in samples}) == 1 and all(lag > 0 for lag in lags)


def _falling_behind(samples: Sequence[CommitSample]) -> bool:
    known = [s for s in samples if s.lag is not None]
    if len(known) < 2:
        return False
    rising = all(later.offset >= earlier.offset for earlier, later in pairwise(known))
    lag_never_falls = all(later.lag >= earlier.lag for earlier, later in pairwise(known))  # type: ignore[operator]
    return rising and lag_never_falls and known[-1].offset > known[0].offset


def partition_status(
    samples: Sequence[CommitSample], current_lag: int | None, now_ms: int, *, nothing_to_read: bool = False
) -> str:
    """The verdict for one partition; see the module docstring for the rules and their order."""
    if current_lag is not None and current_lag < 0:
        return AHEAD
    if not samples or current_lag is None:
        return OK if nothing_to_read else STOP
    if current_lag == 0:
        return OK
    if _rewound(samples):
        return REWIND
    if _stopped(samples, now_ms):
        return STOP
    if any(lag == 0 for lag in _lags(samples)):
        return OK
    if _stalled(samples):
        return STALL
    if _falling_behind(samples):
        return WARN
    return OK


def group_status(statuses: Iterable[str]) -> str:
    found = set(statuses)
    if found & {STOP, STALL, REWIND, AHEAD, ERR}:
        return ERR
    if WARN in found:
        return WARN
    return OK
