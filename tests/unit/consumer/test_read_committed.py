"""A ``read_committed`` consumer's fetch: records below the last stable offset, aborted transactions dropped."""

from __future__ import annotations

from broker.client.types import FetchResult, TopicPartition
from consumer.fetch_buffer import CompletedFetch
from tests.unit.storage.transaction_batches import data_batch, laid_out, marker_batch

TP = TopicPartition("orders", 0)
P1, P2 = 1001, 1002


def values(fetch: CompletedFetch, position: int = 0) -> list[bytes | None]:
    return [record.value for record in fetch.take(position, 100, None).records]


def test_aborted_records_are_dropped_and_reading_stops_at_the_last_stable_offset() -> None:
    data, bases = laid_out(
        data_batch(-1, tag="plain"),  # 0
        data_batch(P1, 2, tag="aborted"),  # 1-2
        data_batch(P2, tag="committed"),  # 3
        marker_batch(P1, committed=False),  # 4
        marker_batch(P2, committed=True),  # 5
        data_batch(-1, tag="after"),  # 6
    )
    assert bases == [0, 1, 3, 4, 5, 6]
    result = FetchResult(data, 7, 0, 7, 7, last_stable_offset=6, aborted=((P1, 1),))
    assert values(CompletedFetch(TP, 0, 0, result, read_committed=True)) == [b"plain-0", b"committed-0"]
    everything = values(CompletedFetch(TP, 0, 0, result))
    assert everything == [b"plain-0", b"aborted-0", b"aborted-1", b"committed-0", b"after-0"]


def test_a_take_in_pieces_keeps_dropping_what_the_first_piece_learned() -> None:
    data, _ = laid_out(data_batch(P1, tag="a"), data_batch(-1, tag="p"), data_batch(P1, sequence=1, tag="b"))
    fetch = CompletedFetch(TP, 0, 0, FetchResult(data, 3, 0, 3, 3, 3, ((P1, 0),)), read_committed=True)
    first = fetch.take(0, 1, None)
    assert [r.value for r in first.records] == [b"p-0"]
    assert fetch.take(first.next_offset, 10, None).records == []
