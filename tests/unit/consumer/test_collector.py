"""A poll makes its records with the garbage collector paused, and leaves the collector as it found it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from broker.client.types import FetchResult, TopicPartition
from broker.errors import CorruptRecord
from broker.record.codec import encode_columns
from consumer.collector import COLLECTOR_PAUSED, CollectorPause
from consumer.fetch_buffer import CompletedFetch
from consumer.records import FetchedRecord, PartitionBatch

TS = 1_700_000_000_000


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    """Each test starts with the collector on, and the worker gets it back on whatever the test did."""
    gc.enable()
    yield
    gc.enable()


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection that starts while the test runs."""
    started: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(note)
    yield started
    gc.callbacks.remove(note)


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    pause = CollectorPause()
    with pause:
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    with CollectorPause():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_error_inside_still_switches_the_collector_back_on() -> None:
    pause = CollectorPause()
    with pytest.raises(CorruptRecord), pause:
        raise CorruptRecord("bad batch")
    assert gc.isenabled()
    with pause:
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_switch_it_back_on_only_when_the_outer_one_ends() -> None:
    pause = CollectorPause()
    with pause:
        with pause:
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_pauses_in_two_threads_end_with_the_collector_on() -> None:
    """Thread A pauses, the main thread pauses, A ends first: the collector stays off until the main thread ends."""
    pause = CollectorPause()
    a_paused, main_paused, a_done = threading.Event(), threading.Event(), threading.Event()
    seen_by_a: list[bool] = []

    def in_a() -> None:
        with pause:
            a_paused.set()
            main_paused.wait(10)
            seen_by_a.append(gc.isenabled())
        a_done.set()

    thread = threading.Thread(target=in_a)
    thread.start()
    assert a_paused.wait(10)
    with pause:
        main_paused.set()
        assert a_done.wait(10)
        assert not gc.isenabled(), "the main thread's pause is still running"
    thread.join(10)
    assert seen_by_a == [False] and gc.isenabled()


def _fetch(records: int) -> CompletedFetch:
    data = encode_columns([b"v" * 100] * records, [TS] * records)
    return CompletedFetch(TopicPartition("t", 0), 0, 0, FetchResult(data, records, 0, records, records))


def test_a_take_of_many_records_runs_no_collection(collections: list[int]) -> None:
    taken = _fetch(20_000).take(0, 20_000, None)
    assert len(taken.records) == 20_000 and collections == []
    assert gc.isenabled()
    assert taken.records[-1].value == b"v" * 100 and taken.records[-1].offset == 19_999


def test_making_as_many_records_with_the_collector_on_runs_collections(collections: list[int]) -> None:
    """What the pause saves: the same views made without it start young collections as they go."""
    batch = PartitionBatch("t", 0, None, None, 0, -1)
    records = [FetchedRecord(batch, index) for index in range(20_000)]
    assert len(records) == 20_000 and collections.count(0) >= 20


def test_a_take_that_meets_a_corrupt_batch_leaves_the_collector_on() -> None:
    data = bytearray(encode_columns([b"v"] * 3, [TS] * 3))
    data[-1] ^= 0xFF
    completed = CompletedFetch(TopicPartition("t", 0), 0, 0, FetchResult(bytes(data), 3, 0, 3, 3))
    with pytest.raises(CorruptRecord, match="CRC"):
        completed.take(0, 10, None)
    assert gc.isenabled() and not COLLECTOR_PAUSED._depth
