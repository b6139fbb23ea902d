"""Frames split out of a byte stream whatever the reads look like; bad sizes refused before buffering."""

from __future__ import annotations

import random
import struct

import pytest

from broker.kafka.framing import FrameDecoder, FrameError, encode_frame

LIMIT = 1024


def test_frames_come_out_whole_and_in_order_whatever_the_read_sizes() -> None:
    rng = random.Random(7)
    payloads = [rng.randbytes(rng.randint(0, 300)) for _ in range(50)]
    stream = b"".join(encode_frame(p) for p in payloads)
    for _ in range(20):
        decoder = FrameDecoder(LIMIT)
        out: list[bytes] = []
        position = 0
        while position < len(stream):
            step = rng.randint(1, 64)
            out += decoder.feed(stream[position : position + step])
            position += step
        assert out == payloads
        assert decoder.pending_bytes == 0


def test_byte_by_byte_reads_give_the_frame_only_at_its_last_byte() -> None:
    decoder = FrameDecoder(LIMIT)
    frame = encode_frame(b"hello")
    assert [decoder.feed(frame[i : i + 1]) for i in range(len(frame) - 1)] == [[]] * (len(frame) - 1)
    assert decoder.feed(frame[-1:]) == [b"hello"]


def test_a_stream_ending_inside_a_frame_leaves_pending_bytes() -> None:
    decoder = FrameDecoder(LIMIT)
    assert decoder.feed(encode_frame(b"complete") + encode_frame(b"truncated")[:6]) == [b"complete"]
    assert decoder.pending_bytes == 2


def test_an_empty_frame_is_a_frame() -> None:
    assert FrameDecoder(LIMIT).feed(encode_frame(b"")) == [b""]


def test_the_limit_itself_is_allowed_one_more_byte_is_not() -> None:
    assert FrameDecoder(LIMIT).feed(encode_frame(b"x" * LIMIT)) == [b"x" * LIMIT]
    with pytest.raises(FrameError, match="above the limit"):
        FrameDecoder(LIMIT).feed(struct.pack(">i", LIMIT + 1))


def test_a_2_gib_size_is_refused_from_its_prefix_alone_without_buffering() -> None:
    decoder = FrameDecoder(100 * 1024 * 1024)
    with pytest.raises(FrameError):
        decoder.feed(struct.pack(">i", 2**31 - 1) + b"abc")


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(FrameError, match="negative"):
        FrameDecoder(LIMIT).feed(struct.pack(">i", -5))


def test_a_bad_size_after_good_frames_is_refused_when_it_arrives() -> None:
    decoder = FrameDecoder(LIMIT)
    assert decoder.feed(encode_frame(b"ok")) == [b"ok"]
    with pytest.raises(FrameError):
        decoder.feed(struct.pack(">i", -1))
