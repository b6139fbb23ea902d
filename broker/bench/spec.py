"""What one benchmark run does, checked before any process or socket is started.

A ``WorkloadSpec`` is plain data so it crosses into the load-generator processes
(``multiprocessing`` pickles it). ``--count`` is the total over every producer task of
every process; with ``--duration-s`` instead, each task sends until the deadline.
``target_rate`` is records/s over the whole run (0 = as fast as acknowledgements allow),
shared evenly by the tasks.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from broker.acks import Acks
from broker.client.security import ClientSecurity

KINDS = ("produce", "consume", "e2e")
LOADS = ("send", "many", "raw", "kafka")
"""How produce load is generated: ``send`` calls ``Producer.send`` per record, ``many`` hands
the producer many values per call (``Producer.send_many``), ``raw`` posts pre-encoded record
batches to the binary produce endpoint with no producer library at all (the broker's capacity),
``kafka`` produces (and, for ``consume``, reads) through librdkafka (confluent-kafka) over the
brokers' Kafka listeners."""
COMPRESSIONS = ("none", "gzip", "lz4", "zstd")
STAMP = struct.Struct(">QB")
"""Head of every value: send time (``time.monotonic_ns``, one clock for every process on the host) and a flag, 1 = sampled."""
MIN_RECORD_BYTES = STAMP.size


class SpecError(ValueError):
    """A benchmark parameter that makes no sense; the message names it."""


def acks_option(text: str) -> Acks:
    """``--acks``: exactly ``0``, ``1`` or ``all``, as the producer's setting takes them."""
    try:
        return Acks(text)
    except ValueError:
        raise SpecError(f"--acks must be one of {', '.join(choice.value for choice in Acks)}") from None


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    kind: str
    record_size_bytes: int = 100
    count: int | None = 200_000
    duration_s: float | None = None
    partitions: int = 6
    replication_factor: int = 1
    min_insync_replicas: int = 1
    acks: Acks = Acks.ALL
    batch_size_bytes: int = 256 * 1024
    linger_ms: int = 5
    producers: int = 4
    processes: int = 1
    compression: str = "none"
    target_rate: float = 0.0
    sample_every: int = 8
    """Every n-th record of a task carries a send time and has its latencies measured."""
    load: str = "send"
    """One of ``LOADS``."""
    batch_records: int = 1000
    """Records of each pre-encoded batch of the ``raw`` load (one request each)."""
    security: ClientSecurity = field(default_factory=ClientSecurity)
    """Credentials and TLS files of every client of the run (the load generators' processes included)."""

    def validate(self, brokers: int | None = None) -> WorkloadSpec:
        """``self`` if coherent, else ``SpecError``; ``brokers`` (when known) bounds the replication factor."""
        _require(self.kind in KINDS, f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        _require(self.load in LOADS, f"--load must be one of {', '.join(LOADS)}, not {self.load!r}")
        _require(
            self.load in ("send", "kafka") or self.kind != "consume", "--load applies to produce and e2e, not consume"
        )
        _require(
            self.load != "raw" or self.kind != "e2e",
            "--load raw posts one pre-encoded batch over and over, without send-time stamps: "
            "e2e needs stamped values, use --load send or many",
        )
        _require(
            self.load != "kafka" or self.kind != "e2e",
            "--load kafka measures produce and consume, not e2e",
        )
        _require(
            self.load != "kafka" or not self.target_rate,
            "--load kafka sends as fast as librdkafka takes records: --target-rate does not apply",
        )
        _require(
            self.record_size_bytes >= MIN_RECORD_BYTES,
            f"--record-size must be at least {MIN_RECORD_BYTES} bytes (the send-time stamp)",
        )
        _require((self.count is None) != (self.duration_s is None), "give exactly one of --count and --duration-s")
        _require(
            self.count is None or self.count >= self.producers * self.processes,
            "--count must give every producer task at least one record",
        )
        _require(self.duration_s is None or self.duration_s > 0, "--duration-s must be positive")
        _require(self.kind != "consume" or self.count is not None, "consume needs --count (the records to read back)")
        for name, value in (
            ("--partitions", self.partitions),
            ("--replication-factor", self.replication_factor),
            ("--batch-size", self.batch_size_bytes),
            ("--producers", self.producers),
            ("--processes", self.processes),
            ("--sample-every", self.sample_every),
            ("--batch-records", self.batch_records),
        ):
            _require(value >= 1, f"{name} must be at least 1")
        _require(self.linger_ms >= 0, "--linger-ms must not be negative")
        _require(self.target_rate >= 0, "--target-rate must not be negative (0 = unlimited)")
        _require(self.compression in COMPRESSIONS, f"--compression must be one of {', '.join(COMPRESSIONS)}")
        _require(
            self.min_insync_replicas <= self.replication_factor,
            "min.insync.replicas cannot exceed the replication factor",
        )
        if brokers is not None:
            _require(
                self.replication_factor <= brokers,
                f"--replication-factor {self.replication_factor} needs that many brokers, the cluster has {brokers}",
            )
        return self

    @property
    def tasks(self) -> int:
        return self.producers * self.processes

    def records_for_task(self, process_index: int, task_index: int) -> int | None:
        """This task's share of ``count`` (the first tasks take the remainder); ``None`` in duration mode."""
        if self.count is None:
            return None
        position = process_index * self.producers + task_index
        share, remainder = divmod(self.count, self.tasks)
        return share + (1 if position < remainder else 0)

    def rate_per_task(self) -> float:
        return self.target_rate / self.tasks if self.target_rate else 0.0


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise SpecError(message)
