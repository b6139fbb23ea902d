"""Pure planning rules and option parsing: no Spark, no brokers."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.client.types import TopicPartition
from spark_connector.metadata import PartitionState
from spark_connector.offsets import (
    delays_batch,
    fair_share,
    from_json_dict,
    limit_end_offsets,
    split_range,
    spread_ranges,
    to_json_dict,
)
from spark_connector.options import EARLIEST, OptionError, parse_sink_options, parse_source_options
from spark_connector.planning import ending_offsets, starting_offsets

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
        ({"servers": "ftp://127.0.0.1:9092", "subscribe": "t"}, "option .servers.: .ftp"),
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
        (
            {"servers": "http://h:1", "subscribe": "t", "maxOffsetPerTrigger": "5"},
            "unknown option 'maxOffsetPerTrigger'; did you mean 'maxOffsetsPerTrigger'",
        ),
        ({"servers": "http://h:1", "subscribe": "t", "minPartitions": "0"}, "minPartitions"),
        (
            {"servers": "http://h:1", "kafka.bootstrap.servers": "http://h:2", "subscribe": "t"},
            "options 'servers' and 'kafka.bootstrap.servers' disagree",
        ),
        ({"servers": "http://h:1", "subscribe": "t", "endingOffsets": "latest"}, "endingOffsets"),
        (
            {"servers": "http://h:1", "subscribe": "t", "minOffsetsPerTrigger": "50", "maxOffsetsPerTrigger": "10"},
            r"option 'minOffsetsPerTrigger' \(50\) is higher than 'maxOffsetsPerTrigger' \(10\)",
        ),
        ({"servers": "http://h:1", "subscribe": "t", "minOffsetsPerTrigger": "-1"}, "minOffsetsPerTrigger"),
        (
            {"servers": "http://h:1", "subscribe": "t", "maxTriggerDelay": "15 minutes"},
            "option 'maxTriggerDelay' must be a duration like 15m, 30s or 500ms",
        ),
    ],
)
def test_bad_source_options_fail_naming_the_option(options, named):
    with pytest.raises(OptionError, match=named):
        parse_source_options(options, streaming=True)


def test_sparks_option_names_mean_what_they_mean_to_sparks_kafka_source():
    options = parse_source_options(
        {
            "kafka.bootstrap.servers": "broker-1:9092,https://broker-2:9443",
            "subscribe": "t",
            "maxOffsetsPerTrigger": "500",
            "minPartitions": "12",
            "kafka.isolation.level": "read_committed",
        },
        streaming=True,
    )
    assert options.servers == ("http://broker-1:9092", "https://broker-2:9443"), "host:port is an HTTP listener"
    assert (options.max_records_per_trigger, options.min_partitions, options.read_committed) == (500, 12, True)
    old_names = parse_source_options(
        {
            "servers": "http://broker-1:9092",
            "subscribe": "t",
            "maxRecordsPerTrigger": "500",
            "isolationLevel": "read_committed",
        },
        streaming=True,
    )
    assert (old_names.servers, old_names.max_records_per_trigger, old_names.read_committed) == (
        ("http://broker-1:9092",),
        500,
        True,
    )


@pytest.mark.parametrize(
    ("given", "delay_ms"),
    [(None, 900_000), ("15m", 900_000), ("30s", 30_000), ("500ms", 500), ("250", 250), ("2h", 7_200_000)],
)
def test_max_trigger_delay_reads_sparks_time_strings(given, delay_ms):
    raw = {"servers": "http://h:1", "subscribe": "t", "minOffsetsPerTrigger": "100"}
    options = parse_source_options(raw if given is None else {**raw, "maxTriggerDelay": given}, streaming=True)
    assert (options.min_records_per_trigger, options.max_trigger_delay_ms) == (100, delay_ms)


def test_a_batch_waits_for_min_offsets_until_the_max_trigger_delay_as_sparks_kafka_source_does():
    start = {TP("t", 0): 10, TP("t", 1): 0}
    three_new = {TP("t", 0): 12, TP("t", 1): 1}
    ten_new = {TP("t", 0): 15, TP("t", 1): 5, TP("u", 0): 0}

    def delays(latest, now_ms, last_trigger_ms=None):
        return delays_batch(
            10, start, latest, now_ms=now_ms, last_trigger_ms=last_trigger_ms, max_trigger_delay_ms=60_000
        )

    assert not delays(three_new, now_ms=1_000_000), "the first batch of a run (no trigger yet) never waits"
    assert not delays(three_new, now_ms=5_000), "whatever the clock reads: a monotonic clock may be young"
    assert delays(three_new, now_ms=1_030_000, last_trigger_ms=1_000_000), "3 rows of 10, 30 s of 60: wait"
    assert not delays(three_new, now_ms=1_060_000, last_trigger_ms=1_000_000), "the delay has passed: run"
    assert not delays(ten_new, now_ms=1_001_000, last_trigger_ms=1_000_000), "10 rows across partitions: run"


def test_an_unknown_option_far_from_every_name_lists_the_known_ones():
    with pytest.raises(OptionError, match=r"unknown option 'kafka.max.poll.records'; known options: kafka.bootstrap"):
        parse_source_options({"servers": "http://h:1", "subscribe": "t", "kafka.max.poll.records": "5"}, streaming=True)


JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="etl" password="s3\\"cret";'


def test_a_secured_kafka_query_runs_unchanged_its_kafka_security_settings_read_as_highwaters():
    options = parse_source_options(
        {
            "kafka.bootstrap.servers": "broker-1:9443,broker-2:9443",
            "subscribe": "t",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": JAAS,
            "kafkaConsumer.pollTimeoutMs": "5000",
        },
        streaming=True,
    )
    assert options.servers == ("https://broker-1:9443", "https://broker-2:9443"), "SASL_SSL: host:port is https"
    assert (options.security.username, options.security.password) == ("etl", 's3"cret')
    assert options.poll_timeout_ms == 5000
    sink = parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SSL"})
    assert sink.servers == ("https://h:1",) and sink.security.username is None


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"kafka.security.protocol": "SASL_SSL", "kafka.sasl.jaas.config": JAAS}, "'kafka.sasl.mechanism' 'GSSAPI'"),
        ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN"}, "jaas.config' is required"),
        ({"kafka.sasl.mechanism": "PLAIN"}, "needs 'kafka.security.protocol' SASL_PLAINTEXT or SASL_SSL"),
        ({"kafka.security.protocol": "TLS"}, "must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        (
            {
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": "x",
            },
            "must give username",
        ),
        (
            {
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": JAAS,
                "username": "other",
                "password": "p",
            },
            "options 'username' and 'kafka.sasl.jaas.config' disagree",
        ),
        (
            {"kafka.security.protocol": "SSL", "kafka.bootstrap.servers": "http://h:1"},
            "'http://h:1' is not https:// but 'kafka.security.protocol' asks for TLS",
        ),
    ],
)
def test_kafka_security_settings_highwater_cannot_honour_fail_at_load_naming_them(given, named):
    with pytest.raises(OptionError, match=re.escape(named)):
        parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", **given}, streaming=True)


def test_a_query_commits_to_its_group_id_or_to_a_group_its_prefix_and_subscription_name():
    base = {"servers": "http://h:1", "subscribe": "orders"}
    assert parse_source_options(base, streaming=True).lag_group is None, "as Spark's Kafka source: no group"
    named = parse_source_options({**base, "kafka.group.id": " etl ", "groupIdPrefix": "x"}, streaming=True)
    assert named.lag_group == "etl", "kafka.group.id wins over groupIdPrefix, as in Spark"
    derived = parse_source_options({**base, "groupIdPrefix": "etl"}, streaming=True).lag_group
    assert derived is not None and derived.startswith("etl-") and len(derived) == len("etl-") + 12
    assert parse_source_options({**base, "groupIdPrefix": "etl"}, streaming=True).lag_group == derived, "stable"
    other = parse_source_options({**base, "subscribe": "payments", "groupIdPrefix": "etl"}, streaming=True)
    assert other.lag_group != derived, "another subscription, another group"
    with pytest.raises(OptionError, match=r"option 'kafka\.group\.id' is empty"):
        parse_source_options({**base, "kafka.group.id": " "}, streaming=True)


def test_min_partitions_spreads_ranges_in_proportion_to_their_size_as_spark_does():
    assert spread_ranges([("a", 5, 12), ("b", 0, 10)], 4) == [("a", 5, 8), ("a", 8, 12), ("b", 0, 5), ("b", 5, 10)]
    assert spread_ranges([("a", 0, 100), ("b", 0, 1)], 4) == [
        ("a", 0, 25),
        ("a", 25, 50),
        ("a", 50, 75),
        ("a", 75, 100),
        ("b", 0, 1),
    ]
    assert spread_ranges([("a", 0, 3), ("b", 0, 3)], 2) == [("a", 0, 3), ("b", 0, 3)], "already enough"
    assert spread_ranges([("a", 0, 2)], 5) == [("a", 0, 1), ("a", 1, 2)], "never an empty range"
    assert spread_ranges([("a", 0, 9)], None) == [("a", 0, 9)]


@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 5_000)), min_size=1, max_size=8),
    st.integers(1, 64),
)
def test_spread_ranges_covers_every_offset_once_in_order(ranges, min_partitions):
    given_ranges = [(index, start, start + size) for index, (start, size) in enumerate(ranges)]
    spread = spread_ranges(given_ranges, min_partitions)
    for index, start, end in given_ranges:
        pieces = [(s, e) for i, s, e in spread if i == index]
        assert all(s < e for s, e in pieces) or start == end
        covered = [offset for s, e in pieces for offset in range(s, e)]
        assert covered == list(range(start, end)) or (start == end and pieces == [(start, end)])


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


BASE = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}
STATES = {
    TP("t", 0): PartitionState("t", 0, 1, log_start_offset=0, high_watermark=10, last_stable_offset=8),
    TP("t", 1): PartitionState("t", 1, 2, log_start_offset=3, high_watermark=5, last_stable_offset=5),
}
FIRST_AT = {TP("t", 0): {100: 4, 200: None}, TP("t", 1): {100: 3, 200: None}}
"""A partition's first offset at or after a timestamp: what ListOffsets by time answers."""


def at_time(topic_partition: TopicPartition, timestamp_ms: int) -> int | None:
    return FIRST_AT[topic_partition][timestamp_ms]


def test_a_starting_timestamp_starts_every_partition_at_its_first_record_that_late():
    options = parse_source_options({**BASE, "startingTimestamp": "100", "startingOffsets": "latest"}, streaming=True)
    assert starting_offsets(options, STATES, at_time) == {TP("t", 0): 4, TP("t", 1): 3}, "over startingOffsets"


def test_a_starting_timestamp_after_every_record_fails_unless_the_strategy_says_latest():
    late = {**BASE, "startingOffsetsByTimestamp": '{"t": {"0": 200, "1": 100}}'}
    with pytest.raises(OptionError, match="no record of t-0 has a timestamp at or after 200"):
        starting_offsets(parse_source_options(late, streaming=True), STATES, at_time)
    options = parse_source_options({**late, "startingOffsetsByTimestampStrategy": "LATEST"}, streaming=True)
    assert starting_offsets(options, STATES, at_time) == {TP("t", 0): 10, TP("t", 1): 3}


def test_a_per_partition_timestamp_must_name_every_partition():
    options = parse_source_options({**BASE, "startingOffsetsByTimestamp": '{"t": {"0": 100}}'}, streaming=False)
    with pytest.raises(OptionError, match="gives no timestamp for t-1"):
        starting_offsets(options, STATES, at_time)


def test_an_ending_timestamp_ends_a_batch_read_there_or_at_the_end_and_the_single_one_wins():
    options = parse_source_options(
        {**BASE, "endingTimestamp": "100", "endingOffsetsByTimestamp": '{"t": {"0": 200, "1": 200}}'}, streaming=False
    )
    assert ending_offsets(options, STATES, at_time) == {TP("t", 0): 4, TP("t", 1): 3}
    past = parse_source_options(
        {**BASE, "endingTimestamp": "200", "kafka.isolation.level": "read_committed"}, streaming=False
    )
    assert ending_offsets(past, STATES, at_time) == {TP("t", 0): 8, TP("t", 1): 5}, "no record that late: the end"


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"startingTimestamp": "yesterday"}, "'startingTimestamp' must be ms since the epoch"),
        ({"startingOffsetsByTimestamp": '{"t": [1]}'}, "'startingOffsetsByTimestamp' must be JSON"),
        ({"startingOffsetsByTimestamp": '{"t": {"0": -1}}'}, "a timestamp is negative"),
        ({"startingOffsetsByTimestampStrategy": "earliest"}, "must be error or latest"),
        ({"endingTimestamp": "5"}, "'endingTimestamp' applies to batch reads only"),
    ],
)
def test_bad_timestamp_options_fail_at_load_naming_the_option(given, named):
    with pytest.raises(OptionError, match=named):
        parse_source_options({**BASE, **given}, streaming=True)
