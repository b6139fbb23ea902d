"""Control batches: the COMMIT and ABORT markers that end a transaction in a partition (KIP-98).

A marker is a batch of its own, flagged transactional and control, carrying the
producer id and epoch of the transaction it ends and one record::

    key    version int16 (0), type int16 (0 = ABORT, 1 = COMMIT)
    value  version int16 (0), coordinator_epoch int32

Only a partition leader writes one (at the coordinator's request); a produce that
carries a control batch is refused. Readers never hand a control record to an
application: it tells a ``read_committed`` consumer where a transaction ended.
Kafka has other control types (a KRaft leader change, snapshot headers); a partition
of highwater never holds them, and ``decode_marker`` answers None for one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from broker.record.codec import Buffer, RecordInput, encode_batch
from broker.record.decode import decode_batch
from broker.record.header import BatchHeader

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
MARKER_VERSION = 0


@dataclass(frozen=True, slots=True)
class TransactionMarker:
    """What a control batch says: the transaction of ``producer_id`` committed or aborted."""

    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int


def encode_marker_batch(marker: TransactionMarker, timestamp_ms: int) -> bytes:
    """One control batch holding ``marker``, at base offset 0 (the leader's append assigns the offset)."""
    record = RecordInput(
        key=_KEY.pack(MARKER_VERSION, COMMIT if marker.committed else ABORT),
        value=_VALUE.pack(MARKER_VERSION, marker.coordinator_epoch),
        timestamp=timestamp_ms,
    )
    return encode_batch(
        [record],
        producer_id=marker.producer_id,
        producer_epoch=marker.producer_epoch,
        is_transactional=True,
        is_control=True,
        base_timestamp=timestamp_ms,
    )


def decode_marker(buf: Buffer, header: BatchHeader) -> TransactionMarker | None:
    """The marker of the control batch at ``header.position`` in ``buf``; None for another control type.

    Raises ``CorruptRecord`` when the batch or its record cannot be read.
    """
    _, records = decode_batch(buf, header.position)
    return marker_of(header, records[0].key, records[0].value) if records else None


def marker_of(header: BatchHeader, key: bytes | None, value: bytes | None) -> TransactionMarker | None:
    """The marker a control batch's (first) record says, already decoded; None for another control type."""
    if key is None or len(key) < _KEY.size:
        return None
    _, kind = _KEY.unpack_from(key)
    if kind not in (ABORT, COMMIT):
        return None
    coordinator_epoch = _VALUE.unpack_from(value)[1] if value is not None and len(value) >= _VALUE.size else 0
    return TransactionMarker(header.producer_id, header.producer_epoch, kind == COMMIT, coordinator_epoch)
