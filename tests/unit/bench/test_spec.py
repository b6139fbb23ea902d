"""Benchmark parameters are checked before anything starts; counts are shared out exactly."""

from __future__ import annotations

import dataclasses

import pytest

from broker.acks import Acks
from broker.bench.spec import MIN_RECORD_BYTES, SpecError, WorkloadSpec, acks_option


def test_defaults_are_valid() -> None:
    for kind in ("produce", "consume", "e2e"):
        assert WorkloadSpec(kind=kind).validate() == WorkloadSpec(kind=kind)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "spin"}, "kind must be one of"),
        ({"record_size_bytes": MIN_RECORD_BYTES - 1}, "--record-size"),
        ({"count": None}, "exactly one of --count and --duration-s"),
        ({"duration_s": 5.0}, "exactly one of --count and --duration-s"),
        ({"count": None, "duration_s": -1.0}, "--duration-s must be positive"),
        ({"count": 3, "producers": 2, "processes": 2}, "at least one record"),
        ({"kind": "consume", "count": None, "duration_s": 3.0}, "consume needs --count"),
        ({"partitions": 0}, "--partitions"),
        ({"processes": 0}, "--processes"),
        ({"linger_ms": -1}, "--linger-ms"),
        ({"target_rate": -5.0}, "--target-rate"),
        ({"compression": "brotli"}, "--compression"),
        ({"load": "firehose"}, "--load must be one of send, many, raw"),
        ({"kind": "consume", "load": "raw"}, "--load applies to produce and e2e"),
        ({"kind": "e2e", "load": "raw"}, "e2e needs stamped values"),
        ({"load": "raw", "batch_records": 0}, "--batch-records must be at least 1"),
        ({"replication_factor": 1, "min_insync_replicas": 2}, "min.insync.replicas"),
    ],
)
def test_incoherent_parameters_are_refused_with_the_option_named(changes: dict, message: str) -> None:
    spec = dataclasses.replace(WorkloadSpec(kind="produce"), **changes)
    with pytest.raises(SpecError, match=message):
        spec.validate()


def test_acks_option_takes_exactly_the_three_values() -> None:
    assert [acks_option(text) for text in ("0", "1", "all")] == [Acks.ZERO, Acks.ONE, Acks.ALL]
    for text in ("2", "ALL", "-1"):
        with pytest.raises(SpecError, match="--acks must be one of 0, 1, all"):
            acks_option(text)


def test_replication_factor_is_bounded_by_the_brokers_when_known() -> None:
    spec = WorkloadSpec(kind="produce", replication_factor=3, min_insync_replicas=2)
    assert spec.validate(brokers=3) is spec
    with pytest.raises(SpecError, match="needs that many brokers, the cluster has 1"):
        spec.validate(brokers=1)


def _share(spec: WorkloadSpec, process: int, task: int) -> int:
    share = spec.records_for_task(process, task)
    assert share is not None, "a spec with a count gives every task a share"
    return share


def test_count_is_split_over_every_task_of_every_process_with_nothing_lost() -> None:
    spec = WorkloadSpec(kind="produce", count=1003, producers=4, processes=2)
    shares = [_share(spec, process, task) for process in range(2) for task in range(4)]
    assert sum(shares) == 1003
    assert max(shares) - min(shares) == 1
    assert shares[:3] == [126, 126, 126]


def test_duration_mode_has_no_per_task_count_and_the_rate_is_shared() -> None:
    spec = WorkloadSpec(kind="e2e", count=None, duration_s=2.0, producers=2, processes=2, target_rate=1000.0)
    assert spec.records_for_task(0, 0) is None
    assert spec.rate_per_task() == 250.0
    assert WorkloadSpec(kind="produce").rate_per_task() == 0.0
