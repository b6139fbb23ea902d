"""Compression codecs of record batch v2: the records section of a batch, as Kafka writes it.

The codec id lives in bits 0-2 of the batch attributes. Only the records after the
61-byte header are compressed, as one unit, so the broker can validate and stamp a
compressed batch without ever decompressing it.

* ``GZIP`` (1): a standard gzip member (Java's ``GZIPOutputStream``), level 6 as Kafka's
  default ``compression.gzip.level``.
* ``SNAPPY`` (2): Kafka uses xerial's framed snappy; no snappy library ships with us, so
  it is refused with a message naming it.
* ``LZ4`` (3): the standard LZ4 *frame* format with a correct header checksum, exactly
  Kafka's ``Lz4BlockOutputStream`` settings: independent 64 KiB blocks, no block
  checksum, no content size, no content checksum. (Kafka before 0.10 wrote a broken
  header checksum; magic 2 batches never carry it.)
* ``ZSTD`` (4): a zstd frame, level 3 as Kafka's default. Java writes frames without the
  content size, so decompression streams rather than trusting a size in the frame.

Decompression failures raise ``CorruptRecord``: the bytes came from a client or a disk
and the CRC only proves they were not damaged after the producer computed it.
"""

from __future__ import annotations

import gzip
import zlib

import lz4.frame
import zstandard

from broker.errors import CorruptRecord

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES: dict[int, str] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
SUPPORTED_CODECS: tuple[int, ...] = (NONE, GZIP, LZ4, ZSTD)

GZIP_LEVEL = 6
ZSTD_LEVEL = 3
_GZIP_WBITS = 31
"""zlib window bits 16 + 15: a gzip header and trailer around a 32 KiB-window deflate stream."""

Buffer = bytes | bytearray | memoryview


def codec_id(name: str) -> int:
    """The id of a codec by its Kafka ``compression.type`` name ("none", "gzip", ...)."""
    for identifier, known_name in CODEC_NAMES.items():
        if known_name == name.lower():
            return identifier
    raise ValueError(f"unknown compression type {name!r}; known: {', '.join(CODEC_NAMES.values())}")


def codec_name(codec: int) -> str:
    return CODEC_NAMES.get(codec, f"unknown codec {codec}")


def compress(codec: int, data: Buffer) -> bytes:
    """Compress the records section of a batch with ``codec``; ``NONE`` returns it as bytes."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return zlib.compress(data, GZIP_LEVEL, _GZIP_WBITS)
    if codec == LZ4:
        return lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data)
    raise ValueError(f"cannot compress with {codec_name(codec)} (id {codec}): supported are none, gzip, lz4, zstd")


def decompress(codec: int, data: Buffer) -> bytes:
    """Decompress a batch's records section; ``CorruptRecord`` if the codec or bytes are bad."""
    if codec == NONE:
        return bytes(data)
    try:
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == LZ4:
            return lz4.frame.decompress(data)
        if codec == ZSTD:
            return _zstd_decompress(data)
    except (OSError, EOFError, zlib.error, RuntimeError, zstandard.ZstdError) as error:
        raise CorruptRecord(f"cannot decompress {codec_name(codec)} records: {error}") from error
    raise CorruptRecord(
        f"record batch uses {codec_name(codec)} compression (id {codec}), which this broker "
        "does not support: use none, gzip, lz4 or zstd"
    )


def _zstd_decompress(data: Buffer) -> bytes:
    """Decompress one or more back-to-back zstd frames, refusing a truncated last frame.

    ``decompressobj`` returns what it could decode of an incomplete frame without
    complaint, so each frame is decoded on its own and must reach its end.
    """
    decompressor = zstandard.ZstdDecompressor()
    chunks = []
    remaining = data
    while True:
        frame = decompressor.decompressobj()
        chunks.append(frame.decompress(remaining))
        if not frame.eof:
            raise CorruptRecord("cannot decompress zstd records: the last frame is truncated")
        remaining = frame.unused_data
        if not remaining:
            return b"".join(chunks)
