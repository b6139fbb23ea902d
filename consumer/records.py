"""What the consumer hands out: one record with its partition, offset and batch leader epoch.

A fetched record is a view: two slots (its batch, its index in the batch), made without
decoding anything. Its first field read decodes the whole batch column-wise
(``broker.record.lazy.LazyBatch``), so the cost of a record the application never
looks into is one small object, and the cost of one it reads is a share of one pass
over the batch instead of a per-record object with nine fields.
"""

from __future__ import annotations

from typing import Any

from broker.record.codec import HeaderList
from broker.record.decode import BatchColumns
from broker.record.header import BatchHeader
from broker.record.lazy import LazyBatch


class PartitionBatch(LazyBatch):
    """A batch of one topic partition; what its records share is kept here, once."""

    __slots__ = ("leader_epoch", "partition", "timestamp_type", "topic")

    def __init__(
        self,
        topic: str,
        partition: int,
        view: memoryview | None,
        header: BatchHeader | None,
        timestamp_type: int,
        leader_epoch: int,
        columns: BatchColumns | None = None,
    ) -> None:
        super().__init__(view, header, columns)
        self.topic = topic
        self.partition = partition
        self.timestamp_type = timestamp_type
        self.leader_epoch = leader_epoch


class ConsumerRecord:
    """A record read below the high watermark; ``timestamp`` in ms, ``timestamp_type`` 0 = create, 1 = log append.

    ``leader_epoch`` is the epoch of the leader that appended the record's batch; the
    consumer remembers the last one it handed out to detect log truncation.

    Immutable (the fields are read-only properties); equal to another ``ConsumerRecord``
    with the same fields (records built by the constructor and records read from a
    broker compare alike); not hashable, as ``headers`` is a list; pickled as its fields.
    Reading a field of a fetched record may raise ``CorruptRecord`` if its batch's
    records do not match the batch's CRC-checked header, which only a broken producer
    can cause.

    A fetched record keeps its batch alive: the fetch answer's bytes until the batch is
    decoded, the batch's decoded columns after. An application that holds on to a few
    records of many fetches for long should keep their fields, not the records.
    """

    __slots__ = ("_batch", "_index")
    __match_args__ = (
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "leader_epoch",
    )

    _batch: PartitionBatch
    _index: int

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: bytes | None,
        value: bytes | None,
        headers: HeaderList | None = None,
        leader_epoch: int = -1,
    ) -> None:
        columns = BatchColumns([offset], [timestamp], [key], [value], [[] if headers is None else headers])
        batch = PartitionBatch(topic, partition, None, None, timestamp_type, leader_epoch, columns)
        self._batch = batch
        self._index = 0

    @property
    def topic(self) -> str:
        return self._batch.topic

    @property
    def partition(self) -> int:
        return self._batch.partition

    @property
    def timestamp_type(self) -> int:
        return self._batch.timestamp_type

    @property
    def leader_epoch(self) -> int:
        return self._batch.leader_epoch

    @property
    def offset(self) -> int:
        batch = self._batch
        return (batch.columns or batch.decode()).offsets[self._index]

    @property
    def timestamp(self) -> int:
        batch = self._batch
        return (batch.columns or batch.decode()).timestamps[self._index]

    @property
    def key(self) -> bytes | None:
        batch = self._batch
        return (batch.columns or batch.decode()).keys[self._index]

    @property
    def value(self) -> bytes | None:
        batch = self._batch
        return (batch.columns or batch.decode()).values[self._index]

    @property
    def headers(self) -> HeaderList:
        batch = self._batch
        return (batch.columns or batch.decode()).headers[self._index]

    def _fields(self) -> tuple[Any, ...]:
        batch = self._batch
        columns = batch.columns or batch.decode()
        index = self._index
        return (
            batch.topic,
            batch.partition,
            columns.offsets[index],
            columns.timestamps[index],
            batch.timestamp_type,
            columns.keys[index],
            columns.values[index],
            columns.headers[index],
            batch.leader_epoch,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConsumerRecord):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={value!r}" for name, value in zip(self.__match_args__, self._fields(), strict=True))
        return f"ConsumerRecord({values})"

    def __reduce__(self) -> tuple[type[ConsumerRecord], tuple[Any, ...]]:
        """Pickled (e.g. to another process) as its fields: the batch's bytes stay behind."""
        return ConsumerRecord, self._fields()


class FetchedRecord(ConsumerRecord):
    """The view the consumer makes for each fetched record: nothing decoded, two slots set."""

    __slots__ = ()

    def __init__(self, batch: PartitionBatch, index: int) -> None:
        self._batch = batch
        self._index = index
