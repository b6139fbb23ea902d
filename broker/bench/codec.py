"""Throughput of the record batch codec and of the two CRC-32C packages.

Run ``python -m broker.bench.codec`` (``--seconds`` per measurement, default 1). It prints
records/s for ``encode_batch``, ``decode_batch`` and ``decode_columns`` on batches of
1000 records with 8-byte keys and 100-byte values, for every supported codec, then MB/s
of ``crc32c.crc32c`` and ``google_crc32c.value`` on 16 KiB and 1 MiB buffers (the
comparison package comes with the ``bench`` extra: ``pip install -e '.[bench]'``).

Values are random bytes, so compression works on incompressible data: the figures show
the codec's own cost, not a compression ratio.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import crc32c
import google_crc32c

from broker.record.codec import RecordInput, encode_batch
from broker.record.compression import CODEC_NAMES, SUPPORTED_CODECS
from broker.record.decode import decode_batch, decode_columns

RECORDS_PER_BATCH = 1000
VALUE_BYTES = 100
KEY_BYTES = 8
CRC_BUFFER_BYTES = (16 * 1024, 1024 * 1024)


def _calls_per_second(call: Callable[[], object], seconds: float) -> float:
    """Repeat ``call`` for about ``seconds`` and return the rate of calls."""
    call()
    calls = 0
    started = time.perf_counter()
    deadline = started + seconds
    while True:
        call()
        calls += 1
        now = time.perf_counter()
        if now >= deadline:
            return calls / (now - started)


def _sample_records() -> list[RecordInput]:
    base_timestamp_ms = 1_700_000_000_000
    return [
        RecordInput(os.urandom(KEY_BYTES), os.urandom(VALUE_BYTES), (), base_timestamp_ms + index)
        for index in range(RECORDS_PER_BATCH)
    ]


def bench_codec(seconds: float) -> None:
    records = _sample_records()
    print(f"record codec: batches of {RECORDS_PER_BATCH} records, {KEY_BYTES}-byte keys, {VALUE_BYTES}-byte values")
    print(
        f"{'codec':<6} {'encode rec/s':>14} {'decode_batch rec/s':>19} {'decode_columns rec/s':>21} {'batch bytes':>12}"
    )
    # Each lambda is timed and dropped within the iteration that makes it, so binding late is harmless (B023).
    for codec in SUPPORTED_CODECS:
        batch = encode_batch(records, compression=codec)
        encode_rate = _calls_per_second(lambda: encode_batch(records, compression=codec), seconds)  # noqa: B023
        decode_rate = _calls_per_second(lambda: decode_batch(batch), seconds)  # noqa: B023
        columns_rate = _calls_per_second(lambda: decode_columns(batch), seconds)  # noqa: B023
        print(
            f"{CODEC_NAMES[codec]:<6} {encode_rate * RECORDS_PER_BATCH:>14,.0f} "
            f"{decode_rate * RECORDS_PER_BATCH:>19,.0f} {columns_rate * RECORDS_PER_BATCH:>21,.0f} {len(batch):>12,}"
        )


def bench_crc(seconds: float) -> None:
    print(f"CRC-32C (google_crc32c implementation: {google_crc32c.implementation})")
    print(f"{'buffer':<8} {'crc32c MB/s':>12} {'google-crc32c MB/s':>19} {'google (memoryview->bytes) MB/s':>32}")
    # Each lambda is timed and dropped within the iteration that makes it, so binding late is harmless (B023).
    for size in CRC_BUFFER_BYTES:
        data = os.urandom(size)
        view = memoryview(data)[1:]
        assert crc32c.crc32c(data) == google_crc32c.value(data)
        rates = (
            _calls_per_second(lambda: crc32c.crc32c(data), seconds),  # noqa: B023
            _calls_per_second(lambda: google_crc32c.value(data), seconds),  # noqa: B023
            _calls_per_second(lambda: google_crc32c.value(bytes(view)), seconds),  # noqa: B023
        )
        megabytes = size / 1e6
        label = f"{size // 1024} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
        print(
            f"{label:<8} {rates[0] * megabytes:>12,.0f} {rates[1] * megabytes:>19,.0f} {rates[2] * megabytes:>32,.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time spent on each measurement")
    arguments = parser.parse_args()
    bench_codec(arguments.seconds)
    print()
    bench_crc(arguments.seconds)


if __name__ == "__main__":
    main()
