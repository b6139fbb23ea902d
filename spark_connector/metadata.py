"""What the driver asks the cluster while planning: topics, partitions, their offsets.

``high_watermark`` comes from ``GET …/topics/{t}/partitions``, which each broker answers
with the leader's view (a follower's own view if the leader does not answer, whose
high watermark is never above the leader's). Either way every offset below it is
committed, so planning up to it never hands Spark a record a failover could take back.

Any configured server may answer; servers are tried in order until one does, so
planning survives the loss of a broker as long as one of ``servers`` is alive. A
server that did not answer (down, or hung: a paused process accepts connections and
never replies) goes to the back of the order for ``UNRESPONSIVE_BACKOFF_MS``, by the
same rule as the producer's and consumer's cluster client (``broker.client.unresponsive``):
planning calls are short-lived objects in a long-lived driver process, so this memory
is per process (``UNRESPONSIVE``), not per call, or every call would wait out the same
timeout again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Self
from urllib.parse import quote

from broker.client.library_log import library_logger
from broker.client.security import ClientSecurity
from broker.client.unresponsive import UnresponsiveServers
from broker.clock import monotonic_ms
from spark_connector.http import BrokerAnswer, BrokerConnections, BrokerUnreachable

log = library_logger(__name__)

RETRY_BACKOFF_S = 0.2
UNRESPONSIVE_BACKOFF_MS = 30_000
UNRESPONSIVE = UnresponsiveServers(UNRESPONSIVE_BACKOFF_MS)
"""Servers of this process's planning calls that recently gave no answer."""


class MetadataError(RuntimeError):
    """The cluster answered a metadata request with an error that retrying will not fix."""


@dataclass(frozen=True, slots=True)
class PartitionState:
    topic: str
    partition: int
    leader_id: int | None
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int

    def visible_end(self, read_committed: bool) -> int:
        """Where a reader stops: the high watermark, or the last stable offset for ``read_committed``."""
        return self.last_stable_offset if read_committed else self.high_watermark


class ClusterMetadata:
    """Blocking metadata calls against any of ``servers``; use as a context manager."""

    def __init__(
        self,
        servers: Sequence[str],
        timeout_s: float = 10.0,
        retry_for_s: float = 60.0,
        security: ClientSecurity | None = None,
    ) -> None:
        self.servers = tuple(servers)
        self.retry_for_s = retry_for_s
        self._connections = BrokerConnections(timeout_s, security)
        self._cluster_id: str | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._connections.close()

    def _get(self, path: str, *, allow_missing: bool = False) -> BrokerAnswer | None:
        """GET from the first server that answers; retriable errors are retried until ``retry_for_s``."""
        return self._ask("GET", path, retry_for_s=self.retry_for_s, allow_missing=allow_missing)

    def _ask(
        self,
        method: str,
        path: str,
        *,
        retry_for_s: float,
        body: bytes | None = None,
        allow_missing: bool = False,
    ) -> BrokerAnswer | None:
        """``method`` on the first server that answers (the unresponsive ones last); a retriable refusal or
        no answer tries the next server, and every server again until ``retry_for_s`` has passed (0: once).
        A refusal that is not retriable raises ``MetadataError``; a 404 is None when ``allow_missing``."""
        deadline = time.monotonic() + retry_for_s
        headers = {"Accept": "application/json"} if body is None else {"Content-Type": "application/json"}
        while True:
            last_problem = "no server configured"
            for server in UNRESPONSIVE.in_order(self.servers, monotonic_ms()):
                try:
                    answer = self._connections.request(method, server, path, body=body, headers=headers)
                except BrokerUnreachable as error:
                    UNRESPONSIVE.no_answer(server, monotonic_ms())
                    last_problem = str(error)
                    continue
                UNRESPONSIVE.answered(server)
                if answer.ok or (allow_missing and answer.status == 404):
                    return answer if answer.ok else None
                refusal = answer.error
                if not refusal.retriable:
                    raise MetadataError(f"{method} {path}: {refusal.name}: {refusal.message}")
                last_problem = f"{refusal.name}: {refusal.message}"
            if time.monotonic() >= deadline:
                raise BrokerUnreachable(f"{method} {path} failed on every server {list(self.servers)}: {last_problem}")
            log.debug("metadata.retry path=%s problem=%s", path, last_problem)
            time.sleep(RETRY_BACKOFF_S)

    @property
    def cluster_id(self) -> str:
        if self._cluster_id is None:
            answer = self._get("/v3/clusters")
            assert answer is not None
            self._cluster_id = str(answer.json()["data"][0]["cluster_id"])
        return self._cluster_id

    def topic_names(self) -> list[str]:
        answer = self._get(f"/v3/clusters/{self.cluster_id}/topics")
        assert answer is not None
        return sorted(str(item["topic_name"]) for item in answer.json()["data"])

    def partitions(self, topic: str) -> list[PartitionState] | None:
        """Every partition of ``topic`` in partition order, or ``None`` if the topic does not exist."""
        answer = self._get(f"/v3/clusters/{self.cluster_id}/topics/{topic}/partitions", allow_missing=True)
        if answer is None:
            return None
        states = [
            PartitionState(
                topic=topic,
                partition=int(item["partition_id"]),
                leader_id=item.get("leader_id"),
                log_start_offset=int(item["log_start_offset"]),
                high_watermark=int(item["high_watermark"]),
                last_stable_offset=int(item.get("last_stable_offset", item["high_watermark"])),
            )
            for item in answer.json()["data"]
        ]
        return sorted(states, key=lambda state: state.partition)

    def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """The first offset below the high watermark whose timestamp is at or after ``timestamp_ms``
        (Kafka's ListOffsets by time); None when there is none."""
        path = f"/v3/clusters/{self.cluster_id}/topics/{topic}/partitions/{partition}/offset?timestamp={timestamp_ms}"
        answer = self._get(path)
        assert answer is not None
        offset = answer.json().get("offset")
        return None if offset is None else int(offset)

    def commit_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit ``offsets`` (the next offset to read, per (topic, partition)) to consumer group
        ``group``, as a consumer without members does; any broker forwards it to the coordinator.

        One attempt per server, no retry loop: the caller commits again at its next call.
        """
        path = f"/v3/clusters/{self.cluster_id}/consumer-groups/{quote(group, safe='')}/offsets"
        body = json.dumps(
            {
                "offsets": [
                    {"topic_name": topic, "partition_id": partition, "offset": offset}
                    for (topic, partition), offset in sorted(offsets.items())
                ]
            }
        ).encode()
        self._ask("POST", path, retry_for_s=0, body=body)

    def broker_urls(self) -> dict[int, str]:
        answer = self._get(f"/v3/clusters/{self.cluster_id}/brokers")
        assert answer is not None
        return {int(item["broker_id"]): str(item["url"]).rstrip("/") for item in answer.json()["data"]}
