"""What the workload did and saw: every write's invocation and outcome, every record read.

Outcomes follow the write's meaning, not the error's name:

* ``ok`` — acknowledged with an offset;
* ``fail`` — definitely not written: ``NOT_ENOUGH_REPLICAS`` is refused before the
  append, and only a writer that sent exactly one request may call it definite;
* ``unknown`` — may or may not be in the log: ``REQUEST_TIMED_OUT``,
  ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``, ``NOT_LEADER_OR_FOLLOWER`` (maybe after the
  append), a lost connection, and every failure of a retrying producer (an earlier
  attempt may have landed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from broker.errors import HighwaterError, NotEnoughReplicas

OK = "ok"
FAIL = "fail"
UNKNOWN = "unknown"


@dataclass
class WriteOp:
    """One value sent once by one writer. ``idempotent``: retries may not duplicate it."""

    writer: str
    topic: str
    partition: int
    value: str
    idempotent: bool
    invoked_s: float = field(default_factory=time.monotonic)
    completed_s: float | None = None
    outcome: str | None = None
    offset: int | None = None
    error: str | None = None

    def complete(self, outcome: str, offset: int | None = None, error: str | None = None) -> None:
        self.completed_s = time.monotonic()
        self.outcome, self.offset, self.error = outcome, offset, error


@dataclass(frozen=True)
class ReadEvent:
    """One record handed to a reader; ``reader`` names one consumer across its restarts."""

    reader: str
    topic: str
    partition: int
    offset: int
    value: str


@dataclass
class History:
    writes: list[WriteOp] = field(default_factory=list)
    reads: list[ReadEvent] = field(default_factory=list)
    reader_errors: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)


def single_request_outcome(error: BaseException) -> str:
    """The outcome of a write sent in exactly one request that ended with ``error``."""
    if isinstance(error, NotEnoughReplicas):
        return FAIL
    return UNKNOWN


def describe_error(error: BaseException) -> str:
    return error.name if isinstance(error, HighwaterError) else type(error).__name__
