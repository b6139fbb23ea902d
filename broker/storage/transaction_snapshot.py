"""The transactions of a partition as its log's clean close left them, so the next open needs no replay.

Without it, opening a log replays every batch header of every segment to find the
open and aborted transactions (``PartitionLog._replayed_transactions``): about a
second per 10 GB of small batches, paid by every partition at every start. The
file ``transactions.snapshot`` holds the state at the log end offset, and names
the batch that ended there: its base offset, partition leader epoch and CRC-32C.

Invariant: a snapshot is used only when the recovered log ends at the same offset with
the same last batch. Two replicas whose logs hold the same batch (same offset and
leader epoch) hold the same log below it, so the log below is the one the snapshot
describes, even after a truncation and a new append in between; and the CRC tells a
batch rewritten under the same epoch (never written by a leader, but cheap to rule
out). Anything else (a torn tail cut by recovery, a file torn by a crash, an unknown
version) reads as no snapshot, and the log replays. So the file is written without an
fsync: losing it only costs a replay.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import asdict
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
SNAPSHOT_VERSION = 2


def _last_batch_fields(last_batch: BatchHeader | None) -> list[int] | None:
    if last_batch is None:
        return None
    return [last_batch.base_offset, last_batch.partition_leader_epoch, last_batch.crc]


def write_snapshot(
    directory: Path, end_offset: int, last_batch: BatchHeader | None, transactions: PartitionTransactions
) -> None:
    """Replace the snapshot with ``transactions`` as of ``end_offset`` (no fsync: see the module docstring)."""
    body = json.dumps(
        {
            "version": SNAPSHOT_VERSION,
            "end_offset": end_offset,
            "last_batch": _last_batch_fields(last_batch),
            "open": [asdict(txn) for txn in transactions.open_transactions],
            "unreplicated": [asdict(txn) for txn in transactions.unreplicated],
            "aborted": [asdict(txn) for txn in transactions.aborted],
        },
        separators=(",", ":"),
    ).encode()
    data = b"%08x\n" % zlib.crc32(body) + body
    path = directory / SNAPSHOT_FILE
    temp = directory / (SNAPSHOT_FILE + TEMP_SUFFIX)
    with open(temp, "wb") as file:
        file.write(data)
    os.replace(temp, path)


def read_snapshot(directory: Path, end_offset: int, last_batch: BatchHeader | None) -> PartitionTransactions | None:
    """The snapshot's transactions if it describes exactly this log end; None otherwise."""
    try:
        data = (directory / SNAPSHOT_FILE).read_bytes()
        checksum, body = data.split(b"\n", 1)
        if int(checksum, 16) != zlib.crc32(body):
            return None
        fields = json.loads(body)
        if (
            fields.get("version") != SNAPSHOT_VERSION
            or fields["end_offset"] != end_offset
            or fields["last_batch"] != _last_batch_fields(last_batch)
        ):
            return None
        return PartitionTransactions.restored(
            [OpenTransaction(**txn) for txn in fields["open"]],
            [ClosedTransaction(**txn) for txn in fields["unreplicated"]],
            [AbortedTransaction(**txn) for txn in fields["aborted"]],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
