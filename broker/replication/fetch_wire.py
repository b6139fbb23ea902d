"""Binary framing of the replica fetch between brokers (``POST /internal/fetch``).

One request per (follower broker, leader broker) pair covers every partition they
share. Records travel as the stored record batch bytes, never re-encoded. The session
fields carry an incremental fetch session (``broker.replication.fetch_session``):
an incremental request names only the partitions whose fields changed and those the
follower forgot, and its answer only the partitions with news.

Request (big-endian)::

    replica_id i32 | broker_epoch i64 | max_wait_ms i32 | max_bytes i32
    | session_id i32 | session_epoch i32 | count i32
    count x ( topic_len u16 | topic utf8 | partition i32 | fetch_offset i64
              | last_fetched_epoch i32 | current_leader_epoch i32 | log_start_offset i64 )
    forgotten_count i32
    forgotten_count x ( topic_len u16 | topic utf8 | partition i32 )

Response::

    session_id i32 | session_error i16 (Kafka's code; 0 = none) | count i32
    count x ( topic_len u16 | topic utf8 | partition i32
              | error_len u16 | error name utf8 (empty = none) | message_len u16 | message utf8
              | high_watermark i64 | log_start_offset i64 | log_end_offset i64
              | diverging_epoch i32 (-1 = none) | diverging_end_offset i64
              | records_len i32 | records )

Pure: no I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from broker.error_table import error_from_name
from broker.errors import CorruptRecord, HighwaterError
from broker.replication.actions import DivergingEpoch

CONTENT_TYPE = "application/vnd.highwater.fetch.v2"

_REQUEST_HEADER = struct.Struct(">iqiiiii")
_RESPONSE_HEADER = struct.Struct(">ihi")
_REQUEST_PARTITION = struct.Struct(">iqiiq")
_RESPONSE_OFFSETS = struct.Struct(">qqqiqi")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class FetchPartition:
    topic: str
    partition: int
    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """``session_epoch`` -1 with ``session_id`` 0 is a fetch outside any session (Kafka's
    sessionless full fetch); 0 opens a session; n >= 1 continues session ``session_id``."""

    replica_id: int
    broker_epoch: int
    max_wait_ms: int
    max_bytes: int
    partitions: list[FetchPartition]
    session_id: int = 0
    session_epoch: int = -1
    forgotten: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class FetchPartitionResponse:
    topic: str
    partition: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    error: HighwaterError | None = None
    diverging_epoch: DivergingEpoch | None = None
    records: bytes = b""


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """``session_error`` is Kafka's code (``fetch_session.SessionError``); with one, no partitions."""

    partitions: list[FetchPartitionResponse]
    session_id: int = 0
    session_error: int = 0


def _put_str(out: list[bytes], text: str) -> None:
    raw = text.encode()
    out.append(_U16.pack(len(raw)))
    out.append(raw)


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    def take(self, fmt: struct.Struct) -> tuple:
        if self.pos + fmt.size > len(self.buf):
            raise CorruptRecord(f"fetch message truncated at byte {self.pos}")
        values = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return values

    def bytes(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.buf):
            raise CorruptRecord(f"fetch message truncated at byte {self.pos}")
        data = self.buf[self.pos : self.pos + length].tobytes()
        self.pos += length
        return data

    def str(self) -> str:
        (length,) = self.take(_U16)
        raw = self.bytes(length)
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise CorruptRecord(f"fetch message has a string that is not UTF-8 before byte {self.pos}") from None


def encode_request(request: FetchRequest) -> bytes:
    out = [
        _REQUEST_HEADER.pack(
            request.replica_id,
            request.broker_epoch,
            request.max_wait_ms,
            request.max_bytes,
            request.session_id,
            request.session_epoch,
            len(request.partitions),
        )
    ]
    for p in request.partitions:
        _put_str(out, p.topic)
        out.append(
            _REQUEST_PARTITION.pack(
                p.partition, p.fetch_offset, p.last_fetched_epoch, p.current_leader_epoch, p.log_start_offset
            )
        )
    out.append(_I32.pack(len(request.forgotten)))
    for topic, partition in request.forgotten:
        _put_str(out, topic)
        out.append(_I32.pack(partition))
    return b"".join(out)


def decode_request(buf: bytes) -> FetchRequest:
    """Decode a whole request; ``CorruptRecord`` (400) for anything truncated, trailing, negative or not UTF-8."""
    reader = _Reader(buf)
    replica_id, broker_epoch, max_wait_ms, max_bytes, session_id, session_epoch, count = reader.take(_REQUEST_HEADER)
    if max_wait_ms < 0 or max_bytes < 0 or count < 0 or session_epoch < -1:
        raise CorruptRecord(
            f"fetch message has a negative max_wait_ms ({max_wait_ms}), max_bytes ({max_bytes}) or count ({count}),"
            f" or a session epoch below -1 ({session_epoch})"
        )
    partitions = []
    for _ in range(count):
        topic = reader.str()
        partition, fetch_offset, last_epoch, leader_epoch, log_start = reader.take(_REQUEST_PARTITION)
        partitions.append(FetchPartition(topic, partition, fetch_offset, last_epoch, leader_epoch, log_start))
    (forgotten_count,) = reader.take(_I32)
    if forgotten_count < 0:
        raise CorruptRecord(f"fetch message has a negative forgotten count ({forgotten_count})")
    forgotten = []
    for _ in range(forgotten_count):
        topic = reader.str()
        forgotten.append((topic, reader.take(_I32)[0]))
    if reader.pos != len(reader.buf):
        raise CorruptRecord(f"fetch message has {len(reader.buf) - reader.pos} bytes after its last partition")
    return FetchRequest(
        replica_id, broker_epoch, max_wait_ms, max_bytes, partitions, session_id, session_epoch, tuple(forgotten)
    )


def encode_response(response: FetchResponse) -> bytes:
    out = [_RESPONSE_HEADER.pack(response.session_id, response.session_error, len(response.partitions))]
    for p in response.partitions:
        _put_str(out, p.topic)
        out.append(_I32.pack(p.partition))
        _put_str(out, p.error.name if p.error else "")
        _put_str(out, p.error.message[:2000] if p.error else "")
        diverging = p.diverging_epoch or DivergingEpoch(-1, -1)
        out.append(
            _RESPONSE_OFFSETS.pack(
                p.high_watermark,
                p.log_start_offset,
                p.log_end_offset,
                diverging.epoch,
                diverging.end_offset,
                len(p.records),
            )
        )
        out.append(p.records)
    return b"".join(out)


def decode_response(buf: bytes) -> FetchResponse:
    reader = _Reader(buf)
    session_id, session_error, count = reader.take(_RESPONSE_HEADER)
    partitions = []
    for _ in range(count):
        topic = reader.str()
        (partition,) = reader.take(_I32)
        error_name, message = reader.str(), reader.str()
        hw, log_start, leo, div_epoch, div_end, records_len = reader.take(_RESPONSE_OFFSETS)
        partitions.append(
            FetchPartitionResponse(
                topic=topic,
                partition=partition,
                high_watermark=hw,
                log_start_offset=log_start,
                log_end_offset=leo,
                error=error_from_name(error_name, message) if error_name else None,
                diverging_epoch=DivergingEpoch(div_epoch, div_end) if div_epoch >= 0 else None,
                records=reader.bytes(records_len),
            )
        )
    return FetchResponse(partitions, session_id, session_error)
