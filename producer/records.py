"""What ``Producer.send`` resolves to, and the compression names the settings use."""

from __future__ import annotations

from typing import NamedTuple

from broker.record.compression import GZIP, LZ4, NONE, ZSTD

COMPRESSION_CODECS = {"none": NONE, "gzip": GZIP, "lz4": LZ4, "zstd": ZSTD}
UNKNOWN_OFFSET = -1
"""The offset reported for acks=0: the producer does not wait to learn it (Kafka reports -1 too)."""


class RecordMetadata(NamedTuple):
    """Where a record landed: ``offset`` is -1 for acks=0; ``timestamp`` in ms since the epoch.

    ``timestamp`` is the broker's append time for topics with ``LogAppendTime``, else
    the record's own (create) time.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
