"""Pure planning rules and option parsing: no Spark, no brokers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.client.types import TopicPartition
from spark_connector.offsets import fair_share, from_json_dict, limit_end_offsets, split_range, to_json_dict
from spark_connector.options import EARLIEST, OptionError, parse_sink_options, parse_source_options

TP = TopicPartition


def test_offsets_json_is_sorted_so_equal_offsets_serialise_identically():
    first = {TP("b", 10): 5, TP("a", 2): 7, TP("b", 9): 1}
    second = {TP("b", 9): 1, TP("a", 2): 7, TP("b", 10): 5}
    assert json.dumps(to_json_dict(first)) == json.dumps(to_json_dict(second))
    assert list(to_json_dict(first)["b"]) == ["9", "10"]
    assert from_json_dict(json.loads(json.dumps(to_json_dict(first)))) == first


def test_fair_share_gives_quiet_partitions_their_rows_and_shares_the_rest():
    granted = fair_share({TP("t", 0): 1000, TP("t", 1): 3, TP("t", 2): 1000}, 100)
    assert granted == {TP("t", 0): 49, TP("t", 1): 3, TP("t", 2): 48}


@given(st.dictionaries(st.integers(0, 20), st.integers(0, 500), max_size=8), st.integers(1, 2000))
def test_fair_share_never_exceeds_budget_or_availability(available_by_partition, max_rows):
    available = {TP("t", p): rows for p, rows in available_by_partition.items()}
    granted = fair_share(available, max_rows)
    assert sum(granted.values()) == min(max_rows, sum(available.values()))
    assert all(0 <= granted[tp] <= available[tp] for tp in available)
    shares = [granted[tp] for tp in available if granted[tp] < available[tp]]
    assert not shares or max(shares) - min(shares) <= 1


def test_end_offsets_never_move_below_the_start():
    start = {TP("t", 0): 50, TP("t", 1): 10}
    latest = {TP("t", 0): 40, TP("t", 1): 30}
    assert limit_end_offsets(start, latest, None) == {TP("t", 0): 50, TP("t", 1): 30}
    assert limit_end_offsets(start, latest, 5) == {TP("t", 0): 50, TP("t", 1): 15}


def test_split_range_covers_the_range_in_bounded_pieces():
    assert split_range(5, 26, 10) == [(5, 15), (15, 25), (25, 26)]
    assert split_range(7, 7, 10) == []


def test_source_options_parse_kafka_names_case_insensitively():
    options = parse_source_options(
        {
            "SERVERS": "http://127.0.0.1:1/, http://127.0.0.1:2",
            "subscribe": "a,b",
            "startingOffsets": '{"a": {"0": 5, "1": -2}}',
            "maxRecordsPerTrigger": "100",
            "failOnDataLoss": "false",
            "includeHeaders": "true",
        },
        streaming=True,
    )
    assert options.servers == ("http://127.0.0.1:1", "http://127.0.0.1:2")
    assert options.subscribe == ("a", "b")
    assert options.starting_offsets.offset_for(TP("a", 0)) == 5
    assert options.starting_offsets.offset_for(TP("a", 1)) == EARLIEST
    assert options.starting_offsets.offset_for(TP("b", 0)) == EARLIEST
    assert options.max_records_per_trigger == 100
    assert not options.fail_on_data_loss and options.include_headers


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"subscribe": "t"}, "servers"),
        ({"servers": "127.0.0.1:9092", "subscribe": "t"}, "servers"),
        ({"servers": "http://h:1"}, "subscribe"),
        ({"servers": "http://h:1", "subscribe": "t", "assign": '{"t": [0]}'}, "assign"),
        ({"servers": "http://h:1", "subscribe": "t", "maxRecordsPerTrigger": "0"}, "maxRecordsPerTrigger"),
        ({"servers": "http://h:1", "subscribe": "t", "startingOffsets": "{oops"}, "startingOffsets"),
        ({"servers": "http://h:1", "subscribe": "t", "failOnDataLoss": "maybe"}, "failOnDataLoss"),
        (
            {
                "servers": "http://h:1",
                "subscribePattern": "(",
            },
            "subscribePattern",
        ),
        ({"servers": "http://h:1", "subscribe": "t", "maxOffsetsPerTrigger": "5"}, "maxoffsetspertrigger"),
        ({"servers": "http://h:1", "subscribe": "t", "endingOffsets": "latest"}, "endingOffsets"),
    ],
)
def test_bad_source_options_fail_naming_the_option(options, named):
    with pytest.raises(OptionError, match=named):
        parse_source_options(options, streaming=True)


def test_sink_options_need_servers_and_reject_unknown_names():
    assert parse_sink_options({"servers": "http://h:1", "topic": "out"}).topic == "out"
    with pytest.raises(OptionError, match="acks"):
        parse_sink_options({"servers": "http://h:1", "topic": "out", "acks": "1"})


def test_the_sink_is_exactly_once_unless_told_and_checks_its_transaction_options():
    base = {"servers": "http://h:1", "topic": "out"}
    default = parse_sink_options(base)
    assert default.exactly_once and default.transactional_id_prefix is None
    assert default.transaction_timeout_ms == 600_000
    told = parse_sink_options(
        {**base, "deliveryGuarantee": "AT_LEAST_ONCE", "transactionalIdPrefix": "orders", "transactionTimeoutMs": "9"}
    )
    assert (told.exactly_once, told.transactional_id_prefix, told.transaction_timeout_ms) == (False, "orders", 9)
    with pytest.raises(OptionError, match="deliveryGuarantee"):
        parse_sink_options({**base, "deliveryGuarantee": "at_most_once"})
    with pytest.raises(OptionError, match="transactionalIdPrefix"):
        parse_sink_options({**base, "transactionalIdPrefix": " "})
    with pytest.raises(OptionError, match="transactionTimeoutMs"):
        parse_sink_options({**base, "transactionTimeoutMs": "0"})


def test_the_isolation_level_takes_either_name_and_refuses_what_it_does_not_know():
    base = {"servers": "http://127.0.0.1:1", "subscribe": "t"}
    assert not parse_source_options(base, streaming=True).read_committed
    assert parse_source_options({**base, "isolationLevel": "read_committed"}, streaming=True).read_committed
    assert parse_source_options({**base, "kafka.isolation.level": "READ_COMMITTED"}, streaming=False).read_committed
    with pytest.raises(OptionError, match="must be read_committed or read_uncommitted"):
        parse_source_options({**base, "isolationLevel": "serializable"}, streaming=True)
    with pytest.raises(OptionError, match="disagree"):
        parse_source_options(
            {**base, "isolationLevel": "read_committed", "kafka.isolation.level": "read_uncommitted"}, streaming=True
        )
