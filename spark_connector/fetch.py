"""The executor side: read one planned range ``[start_offset, end_offset)`` from its leader.

A ``RangeTask`` (the ``InputPartition``) carries everything the read needs, because
``read()`` runs in an executor's Python worker on a pickled copy of the reader that
saw none of the driver's state. The fetch goes straight to the partition leader
(the planner's guess comes first in ``servers``); a ``421 NOT_LEADER_OR_FOLLOWER``
names the new leader, an unreachable broker makes the next attempt try the others.

The planned end never exceeds a high watermark (the last stable offset for
``read_committed``, whose pages drop the aborted transactions' batches), and records
below a high watermark are never truncated, so a replay of the same task returns the
same records. If a
new leader's high watermark still lags the planned end, the fetch long-polls until it
catches up; ``poll_timeout_ms`` without any progress fails the task.

Data loss (the start fell below the log start offset, or beyond the log end because
the partition was recreated) fails the task when ``fail_on_data_loss`` is set, else
it is logged and the read skips ahead. A new partition planned "from earliest"
(``from_earliest``) skips silently to its log start.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from broker.client.library_log import library_logger
from broker.client.security import ClientSecurity
from broker.record.committed import committed_bytes, parse_aborted
from spark_connector.arrow import records_to_arrow
from spark_connector.http import BrokerConnections, BrokerUnreachable

log = library_logger(__name__)

BATCH_CONTENT_TYPE = "application/vnd.kafka.batch.v2"
LONG_POLL_MS = 500
RETRY_BACKOFF_S = 0.2


class DataLossError(RuntimeError):
    """Records the query should have read are gone (retention, or the partition was recreated)."""


@dataclass(frozen=True)
class RangeTask(InputPartition):
    """One input partition: a contiguous range of one topic partition."""

    cluster_id: str
    topic: str
    partition: int
    start_offset: int
    end_offset: int
    servers: tuple[str, ...]
    include_headers: bool = False
    fail_on_data_loss: bool = True
    from_earliest: bool = False
    poll_timeout_ms: int = 120_000
    fetch_max_bytes: int = 8 * 1024 * 1024
    read_committed: bool = False
    security: ClientSecurity = field(default_factory=ClientSecurity)

    @property
    def records_path(self) -> str:
        return f"/v3/clusters/{self.cluster_id}/topics/{self.topic}/partitions/{self.partition}/records"


@dataclass(frozen=True, slots=True)
class Page:
    data: bytes
    next_offset: int
    skip_to: int | None = None


class LeaderFetcher:
    """Fetches pages of raw batches for one task, following the leader as it moves."""

    def __init__(self, task: RangeTask) -> None:
        self.task = task
        self.connections = BrokerConnections(timeout_s=30.0 + LONG_POLL_MS / 1000, security=task.security)
        self.candidates = list(dict.fromkeys(task.servers))
        self.current = self.candidates[0]

    def close(self) -> None:
        self.connections.close()

    def _next_candidate(self) -> None:
        index = self.candidates.index(self.current) if self.current in self.candidates else -1
        self.current = self.candidates[(index + 1) % len(self.candidates)]

    def fetch(self, offset: int) -> Page | None:
        """One fetch at ``offset``: a page, or ``None`` when this attempt must be retried."""
        task = self.task
        path = f"{task.records_path}?offset={offset}&max_bytes={task.fetch_max_bytes}&timeout_ms={LONG_POLL_MS}"
        if task.read_committed:
            path += "&isolation=read_committed"
        try:
            answer = self.connections.request("GET", self.current, path, headers={"Accept": BATCH_CONTENT_TYPE})
        except BrokerUnreachable as error:
            log.debug(
                "fetch.unreachable topic=%s partition=%d url=%s error=%s",
                task.topic,
                task.partition,
                self.current,
                error,
            )
            self._next_candidate()
            return None
        if answer.status == 200:
            data = answer.body
            if task.read_committed:
                data = committed_bytes(data, parse_aborted(answer.headers.get("x-aborted-transactions")))
            return Page(data, int(answer.headers.get("x-next-offset", offset)))
        refusal = answer.error
        if answer.status == 421 and refusal.details.get("leader_url"):
            self.current = str(refusal.details["leader_url"]).rstrip("/")
            if self.current not in self.candidates:
                self.candidates.append(self.current)
            return None
        if answer.status == 416:
            return self._out_of_range(offset, refusal.details)
        if refusal.retriable or answer.status == 421:
            log.debug("fetch.retriable topic=%s partition=%d error=%s", task.topic, task.partition, refusal.name)
            self._next_candidate()
            return None
        raise RuntimeError(f"fetch {task.topic}-{task.partition} at {offset}: {refusal.name}: {refusal.message}")

    def _out_of_range(self, offset: int, details: dict[str, Any]) -> Page:
        task = self.task
        log_start_offset = int(details.get("log_start_offset", offset))
        log_end_offset = int(details.get("log_end_offset", offset))
        resume_at = log_start_offset if offset < log_start_offset else task.end_offset
        if task.from_earliest and offset < log_start_offset:
            return Page(b"", offset, skip_to=resume_at)
        message = (
            f"data loss in {task.topic}-{task.partition}: offset {offset} is outside the log "
            f"[{log_start_offset}, {log_end_offset}) (retention removed it or the partition was recreated); "
            f"set failOnDataLoss=false to skip to offset {resume_at}"
        )
        if task.fail_on_data_loss:
            raise DataLossError(message)
        log.warning(
            "fetch.data_loss_skipped topic=%s partition=%d offset=%d log_start_offset=%s log_end_offset=%s",
            task.topic,
            task.partition,
            offset,
            log_start_offset,
            log_end_offset,
        )
        return Page(b"", offset, skip_to=resume_at)


def read_range(task: RangeTask) -> Iterator[pa.RecordBatch]:
    """Every record of ``task``'s range, in offset order, as Arrow batches."""
    fetcher = LeaderFetcher(task)
    offset = task.start_offset
    last_progress = time.monotonic()
    try:
        while offset < task.end_offset:
            page = fetcher.fetch(offset)
            if page is not None and page.skip_to is not None:
                offset = max(offset, page.skip_to)
                continue
            if page is not None and page.data:
                batch = records_to_arrow(
                    page.data, task.topic, task.partition, offset, task.end_offset, task.include_headers
                )
                if batch is not None:
                    yield batch
            if page is not None and page.next_offset > offset:
                offset = page.next_offset
                last_progress = time.monotonic()
                continue
            if time.monotonic() - last_progress > task.poll_timeout_ms / 1000:
                raise TimeoutError(
                    f"no progress reading {task.topic}-{task.partition} at offset {offset} "
                    f"(planned end {task.end_offset}) for {task.poll_timeout_ms} ms"
                )
            if page is None:
                time.sleep(RETRY_BACKOFF_S)
    finally:
        fetcher.close()
