"""Codecs of the records section: round trips, Kafka's LZ4 framing, and refusals."""

from __future__ import annotations

import gzip

import lz4.frame
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from kafka.codec import gzip_decode, lz4_decode, zstd_decode  # type: ignore[import-untyped]

from broker.errors import CorruptRecord
from broker.record.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    SUPPORTED_CODECS,
    ZSTD,
    codec_id,
    compress,
    decompress,
)

LZ4_FRAME_MAGIC = bytes.fromhex("04224d18")
INDEPENDENT_BLOCKS_NO_CHECKSUMS_NO_SIZE = 0x60
"""FLG byte: version 01, block independence 1, no block/content checksum, no content size."""
MAX_BLOCK_64_KIB = 0x40
PAYLOAD = b"highwater record section " * 5000


@pytest.mark.parametrize("codec", SUPPORTED_CODECS)
@given(data=st.binary(max_size=4096))
def test_every_supported_codec_round_trips(codec: int, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_compressible_data_shrinks(codec: int) -> None:
    assert len(compress(codec, PAYLOAD)) < len(PAYLOAD) // 10


def test_lz4_writes_the_frame_header_kafka_writes() -> None:
    frame = compress(LZ4, PAYLOAD)
    assert frame[:4] == LZ4_FRAME_MAGIC
    assert frame[4] == INDEPENDENT_BLOCKS_NO_CHECKSUMS_NO_SIZE
    assert frame[5] == MAX_BLOCK_64_KIB
    # lz4's own decoder verifies the header checksum byte (frame[6]).
    assert lz4.frame.decompress(frame) == PAYLOAD


def test_lz4_reads_frames_with_content_size_and_checksums() -> None:
    frame = lz4.frame.compress(PAYLOAD, store_size=True, content_checksum=True, block_linked=True)
    assert decompress(LZ4, frame) == PAYLOAD


def test_other_kafka_clients_read_our_compression() -> None:
    assert gzip_decode(compress(GZIP, PAYLOAD)) == PAYLOAD
    assert lz4_decode(compress(LZ4, PAYLOAD)) == PAYLOAD
    assert zstd_decode(compress(ZSTD, PAYLOAD)) == PAYLOAD


def test_gzip_is_a_standard_gzip_member() -> None:
    assert gzip.decompress(compress(GZIP, PAYLOAD)) == PAYLOAD


def test_zstd_frames_without_content_size_decompress() -> None:
    """Java's zstd-jni streams frames without the content size; we must not need it."""
    streaming = zstandard.ZstdCompressor(write_content_size=False)
    frame = streaming.compress(PAYLOAD)
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(ZSTD, frame) == PAYLOAD
    assert decompress(ZSTD, frame + frame) == PAYLOAD * 2


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_truncated_compressed_data_is_corrupt(codec: int) -> None:
    compressed = compress(codec, PAYLOAD)
    with pytest.raises(CorruptRecord, match="cannot decompress"):
        decompress(codec, compressed[: len(compressed) // 2])


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_garbage_is_corrupt(codec: int) -> None:
    with pytest.raises(CorruptRecord, match="cannot decompress"):
        decompress(codec, b"this is not compressed data at all")


def test_snappy_is_refused_by_name() -> None:
    with pytest.raises(CorruptRecord, match=r"snappy compression .id 2."):
        decompress(SNAPPY, b"\x82SNAPPY\x00")
    with pytest.raises(ValueError, match="snappy"):
        compress(SNAPPY, b"data")


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_ids_are_refused(codec: int) -> None:
    with pytest.raises(CorruptRecord, match=f"unknown codec {codec}"):
        decompress(codec, b"data")
    with pytest.raises(ValueError, match=f"unknown codec {codec}"):
        compress(codec, b"data")


def test_none_returns_the_bytes_unchanged() -> None:
    assert compress(NONE, bytearray(b"abc")) == b"abc"
    assert decompress(NONE, memoryview(b"abc")) == b"abc"


@pytest.mark.parametrize(
    ("name", "expected"), [("none", NONE), ("GZIP", GZIP), ("snappy", SNAPPY), ("lz4", LZ4), ("zstd", ZSTD)]
)
def test_codec_id_by_kafka_name(name: str, expected: int) -> None:
    assert codec_id(name) == expected


def test_unknown_codec_name_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown compression type 'brotli'"):
        codec_id("brotli")
