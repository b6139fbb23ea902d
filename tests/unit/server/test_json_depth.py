"""The nesting scan that runs before any JSON body is parsed (``broker.server.json_depth``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.server.json_depth import MAX_JSON_DEPTH, nests_deeper_than, nests_too_deeply


def depth_of(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((depth_of(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth_of(item) for item in value.values()), default=0)
    return 0


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [1, {"b": "[[[["}]}', 3),
        (b'["\\"[", [[]]]', 3),
        (b'["\\\\", [[]]]', 3),
        (b'{"a\\\\\\"[": {}}', 2),
        ('["é[", {"ü": []}]'.encode(), 3),
    ],
)
def test_brackets_inside_strings_do_not_nest(text: bytes, depth: int) -> None:
    assert depth == 0 or nests_deeper_than(text, depth - 1)
    assert not nests_deeper_than(text, depth)


def test_unclosed_brackets_count_because_the_parser_recurses_into_them() -> None:
    assert nests_deeper_than(b'[[["unterminated [[[[', 2)
    assert not nests_deeper_than(b'[[["unterminated [[[[', 3)
    assert nests_too_deeply(b"[" * (MAX_JSON_DEPTH + 1))
    assert not nests_too_deeply(b"[" * MAX_JSON_DEPTH)


def test_the_limit_is_inclusive_and_5000_levels_are_refused() -> None:
    at_limit = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert not nests_too_deeply(at_limit)
    assert nests_too_deeply(b"[" + at_limit + b"]")
    assert nests_too_deeply(b'{"value": {"data": ' + b"[" * 5000 + b"]" * 5000 + b"}}")


def test_many_shallow_values_are_not_deep() -> None:
    body = json.dumps({"entries": [{"value": {"data": {"a": [1, {"b": "x[\\"}]}}} for _ in range(1000)]})
    assert not nests_too_deeply(body)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ aé'),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\a'), children, max_size=3)
    ),
    max_leaves=30,
)


@given(json_values, st.integers(min_value=0, max_value=8))
def test_agrees_with_the_parsed_depth(value: object, limit: int) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert nests_deeper_than(text, limit) == (depth_of(value) > limit)
