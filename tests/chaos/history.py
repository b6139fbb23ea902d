"""What the workload did and saw: every write's invocation and outcome, every transaction, every record read.

Outcomes follow the write's meaning, not the error's name:

* ``ok`` — acknowledged with an offset;
* ``fail`` — definitely not written: ``NOT_ENOUGH_REPLICAS`` is refused before the
  append, and only a writer that sent exactly one request may call it definite;
* ``unknown`` — may or may not be in the log: ``REQUEST_TIMED_OUT``,
  ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``, ``NOT_LEADER_OR_FOLLOWER`` (maybe after the
  append), a lost connection, and every failure of a retrying producer (an earlier
  attempt may have landed).

A transaction's outcome follows the protocol: only the producer's own EndTxn(commit) can
commit it, so it is

* ``committed`` — ``commit_transaction`` returned;
* ``aborted`` — ``commit_transaction`` was never called (whatever ended it: the producer's
  abort, a newer incarnation fencing it, its timeout at the coordinator);
* ``unknown`` — a commit was asked for and its answer lost (an abort that follows may
  find it already decided, so it proves nothing).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from broker.errors import HighwaterError, NotEnoughReplicas

OK = "ok"
FAIL = "fail"
UNKNOWN = "unknown"
COMMITTED = "committed"
ABORTED = "aborted"
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


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


@dataclass
class TxnOp:
    """One transaction of one transactional producer: each (partition, value) it produced, and its outcome."""

    writer: str
    topic: str
    values: list[tuple[int, str]] = field(default_factory=list)
    outcome: str | None = None
    error: str | None = None

    def complete(self, outcome: str, error: str | None = None) -> None:
        self.outcome, self.error = outcome, error


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
    transactions: list[TxnOp] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)
    """Errors the transactional clients met and recovered from (by aborting or a new incarnation)."""
    isolation: dict[str, str] = field(default_factory=dict)
    """Reader name → ``read_committed`` or ``read_uncommitted``; a reader not named here reads uncommitted."""


def single_request_outcome(error: BaseException) -> str:
    """The outcome of a write sent in exactly one request that ended with ``error``."""
    if isinstance(error, NotEnoughReplicas):
        return FAIL
    return UNKNOWN


def describe_error(error: BaseException) -> str:
    return error.name if isinstance(error, HighwaterError) else type(error).__name__
