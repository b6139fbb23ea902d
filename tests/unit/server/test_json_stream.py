"""Splitting a byte stream of concatenated JSON objects at every possible chunk boundary."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.errors import InvalidRequest
from broker.server.json_stream import JsonObjectSplitter, split_objects

TRICKY = [
    {"value": {"type": "STRING", "data": 'braces } { ] [ and "quotes" and \\ backslash'}},
    {"value": {"data": {"nested": [1, {"deep": []}]}}, "key": {"data": "é日本"}},
    {},
]


def test_split_concatenated_and_newline_separated_objects() -> None:
    body = (json.dumps(TRICKY[0]) + json.dumps(TRICKY[1]) + "\n\n  " + json.dumps(TRICKY[2]) + "\n").encode()
    assert [json.loads(text) for text in split_objects(body)] == TRICKY


def test_every_chunk_boundary_gives_the_same_objects() -> None:
    body = "\n".join(json.dumps(item, ensure_ascii=False) for item in TRICKY).encode()
    for cut in range(len(body) + 1):
        splitter = JsonObjectSplitter()
        objects = splitter.feed(body[:cut]) + splitter.feed(body[cut:])
        splitter.finish()
        assert [json.loads(text) for text in objects] == TRICKY, cut


def test_byte_by_byte_feeding() -> None:
    body = "".join(json.dumps(item, ensure_ascii=False) for item in TRICKY).encode()
    splitter = JsonObjectSplitter()
    objects = [text for index in range(len(body)) for text in splitter.feed(body[index : index + 1])]
    assert [json.loads(text) for text in objects] == TRICKY
    assert splitter.pending_bytes == 0


def test_pending_bytes_counts_the_unfinished_object() -> None:
    splitter = JsonObjectSplitter()
    assert splitter.feed(b'{"a": 1}{"b": "xy') == [b'{"a": 1}']
    assert splitter.pending_bytes == len(b'{"b": "xy')


@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b"{} 3", b"}", b"garbage"])
def test_a_value_that_is_not_an_object_is_malformed(body: bytes) -> None:
    with pytest.raises(InvalidRequest, match="malformed JSON stream"):
        split_objects(body)


def test_truncated_object_at_the_end_is_malformed() -> None:
    with pytest.raises(InvalidRequest, match="unfinished object"):
        split_objects(b'{"value": {"data": 1}')


@given(st.lists(st.dictionaries(st.text(), st.text() | st.integers(), max_size=3), max_size=5), st.data())
def test_random_objects_random_chunks(items, data) -> None:
    body = "".join(json.dumps(item, ensure_ascii=False) for item in items).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=4)))
    splitter = JsonObjectSplitter()
    objects = []
    start = 0
    for cut in [*cuts, len(body)]:
        objects += splitter.feed(body[start:cut])
        start = cut
    splitter.finish()
    assert [json.loads(text) for text in objects] == items
