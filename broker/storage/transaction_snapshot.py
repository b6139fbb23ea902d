"""The transactions of a partition at an offset of its log, so an open or a truncation replays only the rest.

Without it, opening a log replays every batch header of every segment to find the
open and aborted transactions (``PartitionLog._replayed_transactions``): about 0.15 s
per GB of 16 KB batches, paid by every partition at every start. The file
``transactions.snapshot`` holds the state at an ``end_offset`` (the log end at a clean
close, or the base of the segment a roll started), and names the batch that ended
there: its base offset, partition leader epoch and CRC-32C. Only what the log holds
past ``end_offset`` is replayed. Beside the open and unreplicated transactions it holds
the aborted ones of the segment that was active (those below ``end_offset``): the
rolled segments keep theirs in their ``.txnindex`` (``broker.storage.transaction_index``).

Invariant: a snapshot is used only when the log holds that same batch ending at
``end_offset`` (``PartitionLog._anchored``). Two replicas whose logs hold the same batch
(same offset and leader epoch) hold the same log below it, so the log below is the one
the snapshot describes, even after a truncation and new appends in between; and the CRC
tells a batch rewritten under the same epoch (never written by a leader, but cheap to
rule out). Anything else (the batch cut by recovery or a truncation, retention past it,
a file torn by a crash, an unknown version) reads as no snapshot, and the log replays
whole. So the file is written without an fsync: losing it only costs a replay.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from broker.record.header import BatchHeader
from broker.storage.checkpoint import TEMP_SUFFIX
from broker.storage.transactions import (
    AbortedTransaction,
    ClosedTransaction,
    OpenTransaction,
    PartitionTransactions,
)

SNAPSHOT_FILE = "transactions.snapshot"
SNAPSHOT_VERSION = 3
"""3: ``aborted`` holds the active segment's aborted transactions only (2 held every one)."""


def _last_batch_fields(last_batch: BatchHeader | None) -> list[int] | None:
    if last_batch is None:
        return None
    return [last_batch.base_offset, last_batch.partition_leader_epoch, last_batch.crc]


def write_snapshot(
    directory: Path,
    end_offset: int,
    last_batch: BatchHeader | None,
    transactions: PartitionTransactions,
    aborted: list[AbortedTransaction],
) -> None:
    """Replace the snapshot with ``transactions`` and the active segment's ``aborted`` ones as of ``end_offset``.

    No fsync: see the module docstring.
    """
    body = json.dumps(
        {
            "version": SNAPSHOT_VERSION,
            "end_offset": end_offset,
            "last_batch": _last_batch_fields(last_batch),
            "open": [asdict(txn) for txn in transactions.open_transactions],
            "unreplicated": [asdict(txn) for txn in transactions.unreplicated],
            "aborted": [asdict(txn) for txn in aborted],
        },
        separators=(",", ":"),
    ).encode()
    data = b"%08x\n" % zlib.crc32(body) + body
    path = directory / SNAPSHOT_FILE
    temp = directory / (SNAPSHOT_FILE + TEMP_SUFFIX)
    with open(temp, "wb") as file:
        file.write(data)
    os.replace(temp, path)


@dataclass(frozen=True, slots=True)
class Snapshot:
    end_offset: int
    last_batch: list[int] | None
    """[base offset, partition leader epoch, CRC-32C] of the batch ending at ``end_offset``; None for an empty log."""
    transactions: PartitionTransactions
    aborted: list[AbortedTransaction]
    """The aborted transactions of the segment holding ``end_offset``, below it."""

    def anchored_at(self, last_batch: BatchHeader | None) -> bool:
        """Whether ``last_batch`` (the log's batch ending at ``end_offset``) is the one the snapshot names."""
        return self.last_batch == _last_batch_fields(last_batch)


def read_snapshot(directory: Path) -> Snapshot | None:
    """The snapshot in ``directory``; None when there is none or it does not read whole."""
    try:
        data = (directory / SNAPSHOT_FILE).read_bytes()
        checksum, body = data.split(b"\n", 1)
        if int(checksum, 16) != zlib.crc32(body):
            return None
        fields = json.loads(body)
        if fields.get("version") != SNAPSHOT_VERSION:
            return None
        transactions = PartitionTransactions.restored(
            [OpenTransaction(**txn) for txn in fields["open"]],
            [ClosedTransaction(**txn) for txn in fields["unreplicated"]],
        )
        aborted = [AbortedTransaction(**txn) for txn in fields["aborted"]]
        return Snapshot(int(fields["end_offset"]), fields["last_batch"], transactions, aborted)
    except (OSError, ValueError, KeyError, TypeError):
        return None
