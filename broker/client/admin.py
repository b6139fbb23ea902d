"""``AdminClient``: the cluster's administration calls (REST Proxy v3 paths) over one ``ClusterClient``.

Topics, partition leadership, consumer groups' lag and committed offsets, ACLs, SCRAM
users and quotas, and the JSON produce and read of the ``highwater produce``/``consume``
commands. Answers are the broker's JSON documents as they are (the ``data`` list where
there is one), so a tool shows every field the broker sends.

Each call goes to the brokers the ``ClusterClient`` knows, in its order, and moves on
only when one gave no answer or said it cannot serve (``ServiceUnavailable``); the last
such error is raised, so a client of a single broker sees why that broker failed.
Every other error answer is raised at once, rebuilt by its Kafka name. Topic, group, user
and principal names are percent-encoded: a name the broker refuses reaches it intact and gets its answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from broker.acks import Acks
from broker.client.errors import BrokerUnreachable
from broker.client.http import ClusterClient
from broker.errors import HighwaterError, ServiceUnavailable
from broker.security.acl_codec import ANY, DELETE_REQUIRED


def _name(value: str | int) -> str:
    return quote(str(value), safe="")


class AdminClient:
    """Administration over one ``ClusterClient`` (same session, same broker list)."""

    def __init__(self, client: ClusterClient) -> None:
        self._client = client

    async def cluster_id(self) -> str:
        """The id of the cluster the brokers answer for (asked once per client, then known)."""
        return await self._client.cluster_id()

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, Any] | Sequence[tuple[str, str]] | None = None,
    ) -> Any:
        """``method`` on ``/v3/clusters/{cluster_id}<path>``; the decoded JSON answer (``{}`` when empty)."""
        path = f"/v3/clusters/{_name(await self._client.cluster_id())}{path}"
        last_error: HighwaterError | None = None
        for url in self._client.candidate_urls():
            try:
                return await self._client.json_call(method, url + path, body, params=params)
            except (BrokerUnreachable, ServiceUnavailable) as error:
                last_error = error
        raise last_error or BrokerUnreachable("no broker URL to ask")

    async def list_brokers(self) -> list[dict]:
        """The brokers the cluster lists (id and URL)."""
        return (await self.call("GET", "/brokers"))["data"]

    # ------------------------------------------------------------------ topics

    async def list_topics(self) -> list[dict]:
        return (await self.call("GET", "/topics"))["data"]

    async def create_topic(
        self,
        topic: str,
        partitions_count: int | None,
        replication_factor: int | None = 1,
        configs: dict[str, str] | None = None,
    ) -> dict:
        """Create a topic; a count given as None is left to the broker (its ``topic_defaults``)."""
        body: dict[str, Any] = {"topic_name": topic}
        if partitions_count is not None:
            body["partitions_count"] = partitions_count
        if replication_factor is not None:
            body["replication_factor"] = replication_factor
        if configs:
            body["configs"] = [{"name": name, "value": value} for name, value in configs.items()]
        return await self.call("POST", "/topics", body)

    async def delete_topic(self, topic: str) -> None:
        await self.call("DELETE", f"/topics/{_name(topic)}")

    async def list_partitions(self, topic: str) -> list[dict]:
        """Each partition's leader, replicas, ISR and offsets as the broker reports them now."""
        return (await self.call("GET", f"/topics/{_name(topic)}/partitions"))["data"]

    async def offset_at(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """The first offset whose timestamp is at or after ``timestamp_ms``; None when there is none yet."""
        path = f"/topics/{_name(topic)}/partitions/{partition}/offset"
        answer = await self.call("GET", path, params={"timestamp": str(timestamp_ms)})
        return None if answer.get("offset") is None else int(answer["offset"])

    async def delete_records(self, topic: str, partition: int, before_offset: int) -> int:
        """Delete every record of the partition below ``before_offset`` (-1: the high watermark); the low watermark."""
        path = f"/topics/{_name(topic)}/partitions/{partition}/records:delete"
        return int((await self.call("POST", path, {"before_offset": before_offset}))["low_watermark"])

    async def elect_preferred(self, topic: str | None) -> list[dict]:
        """Move leaderships back to the preferred replicas (one topic, or all); the partitions that moved."""
        body = {"topic_name": topic} if topic is not None else {}
        return list((await self.call("POST", "/partitions:elect-preferred", body)).get("elected", []))

    # ------------------------------------------------------------------ reassignments

    async def alter_reassignments(self, targets: list[dict]) -> list[dict]:
        """Start, replace (a broker list) or cancel (``replicas`` None) partition moves, all or nothing:
        ``[{"topic_name", "partition_id", "replicas"}]``; each partition's reassignment once started."""
        answer = await self.call("POST", "/topics/-/partitions/-/reassignment:alter", {"data": targets})
        return list(answer["data"])

    async def alter_broker_configs(self, broker_id: int, changes: dict[str, str | None]) -> None:
        """Set (a value) or remove (None) one broker's own dynamic configs (the replication throttle rates)."""
        data = [
            {"name": name, "operation": "DELETE"} if value is None else {"name": name, "value": value}
            for name, value in changes.items()
        ]
        await self.call("POST", f"/brokers/{broker_id}/configs:alter", {"data": data})

    async def replica_sizes(self, broker_id: int) -> dict[tuple[str, int], int]:
        """``(topic, partition)`` -> the bytes broker ``broker_id``'s replica holds (its ``log-dirs``)."""
        answer = await self.call("GET", f"/brokers/{broker_id}/log-dirs")
        return {
            (row["topic_name"], row["partition_id"]): row["size_bytes"]
            for log_dir in answer["data"]
            for row in log_dir["replicas"]
        }

    async def drain_broker(self, broker_id: int) -> dict:
        """Mark the broker drained and move every replica off it: ``data`` (the moves) and ``rack_warnings``."""
        return dict(await self.call("POST", "/brokers:drain", {"broker_id": broker_id}))

    async def undrain_broker(self, broker_id: int) -> bool:
        """Let the broker take new replicas again; whether it was being drained."""
        return bool((await self.call("POST", "/brokers:undrain", {"broker_id": broker_id}))["was_draining"])

    async def balance_brokers(self, tolerance: float, max_moves: int) -> dict:
        """One bounded balancing step: ``data`` (the moves, none once balanced) and ``rack_warnings``."""
        return dict(await self.call("POST", "/brokers:balance", {"tolerance": tolerance, "max_moves": max_moves}))

    async def list_reassignments(self) -> list[dict]:
        """The moves under way: ``adding_replicas`` and ``removing_replicas`` of each moving partition."""
        return list((await self.call("GET", "/topics/-/partitions/-/reassignment"))["data"])

    async def describe_all_partitions(self) -> list[dict]:
        """Every partition of every topic (internal ones included), as ``list_partitions`` describes it."""
        partitions: list[dict] = []
        for topic in await self.list_topics():
            partitions.extend(await self.list_partitions(topic["topic_name"]))
        return partitions

    # ------------------------------------------------------------------ records (JSON)

    async def produce_batch(self, topic: str, entries: list[dict], acks: Acks) -> dict:
        """``records:batch``: 207 with ``successes`` and ``failures`` (one per entry)."""
        path = f"/topics/{_name(topic)}/records:batch"
        return await self.call("POST", path, {"entries": entries}, params={"acks": acks.value})

    async def read_records(self, topic: str, partition: int, offset: int, max_records: int, timeout_ms: int) -> dict:
        """Records from ``offset`` below the high watermark, long-polling up to ``timeout_ms``."""
        params = {"offset": offset, "max_records": max_records, "timeout_ms": timeout_ms, "format": "string"}
        return await self.call("GET", f"/topics/{_name(topic)}/partitions/{partition}/records", params=params)

    # ------------------------------------------------------------------ transactions

    async def list_transactions(self, states: list[str] | None = None) -> list[dict]:
        params = [("state", state) for state in states or ()]
        return (await self.call("GET", "/transactions", params=params or None))["data"]

    async def describe_transaction(self, transactional_id: str) -> dict:
        return await self.call("GET", f"/transactions/{_name(transactional_id)}")

    # ------------------------------------------------------------------ consumer groups

    async def list_groups(self) -> list[dict]:
        return (await self.call("GET", "/consumer-groups"))["data"]

    async def describe_group(self, group: str) -> dict:
        return await self.call("GET", f"/consumer-groups/{_name(group)}")

    async def group_lags(self, group: str) -> list[dict]:
        """Per partition: committed offset, log end offset, lag, time lag, owner and status."""
        return (await self.call("GET", f"/consumer-groups/{_name(group)}/lags"))["data"]

    async def group_lag_summary(self, group: str) -> dict:
        return await self.call("GET", f"/consumer-groups/{_name(group)}/lag-summary")

    async def committed_offsets(self, group: str) -> list[dict]:
        return (await self.call("GET", f"/consumer-groups/{_name(group)}/offsets"))["data"]

    async def commit_offsets(self, group: str, offsets: list[dict]) -> None:
        """A stateless commit of ``[{topic_name, partition_id, offset}]``; refused while the group has members."""
        await self.call("POST", f"/consumer-groups/{_name(group)}/offsets", {"offsets": offsets})

    # ------------------------------------------------------------------ security: ACLs, users, quotas

    async def list_acls(self, acl_filter: dict[str, str]) -> list[dict]:
        """The ACLs matching ``acl_filter`` (REST v3 wire names; a field left out matches anything)."""
        return (await self.call("GET", "/acls", params=acl_filter))["data"]

    async def create_acl(self, binding: dict[str, str]) -> dict:
        """Add one ACL given by its seven wire fields; the ``KafkaAcl`` the broker stored."""
        return await self.call("POST", "/acls", binding)

    async def delete_acls(self, acl_filter: dict[str, str]) -> list[dict]:
        """Delete every ACL matching ``acl_filter`` (a field left out matches anything); the ones deleted.

        The route requires the enum fields (``DELETE_REQUIRED``), so those left out are sent as ``ANY``.
        """
        params = {**dict.fromkeys(DELETE_REQUIRED, ANY), **acl_filter}
        return (await self.call("DELETE", "/acls", params=params))["data"]

    async def list_users(self) -> list[dict]:
        """Each SCRAM user's name, mechanism and iteration count (never a key or salt)."""
        return (await self.call("GET", "/users"))["data"]

    async def upsert_user(self, name: str, password: str) -> dict:
        """Create the user, or replace its password; the broker derives and stores the credential."""
        return await self.call("POST", "/users", {"name": name, "password": password})

    async def delete_user(self, name: str) -> None:
        """Raises ``ResourceNotFound`` when there is no such user."""
        await self.call("DELETE", f"/users/{_name(name)}")

    async def list_quotas(self) -> list[dict]:
        return (await self.call("GET", "/quotas"))["data"]

    async def set_quota(self, principal: str, producer_byte_rate: int | None, consumer_byte_rate: int | None) -> dict:
        """Create or replace ``principal``'s byte-rate limits; None leaves that direction unlimited (left out)."""
        rates = {"producer_byte_rate": producer_byte_rate, "consumer_byte_rate": consumer_byte_rate}
        body = {"principal": principal, **{name: rate for name, rate in rates.items() if rate is not None}}
        return await self.call("POST", "/quotas", body)

    async def delete_quota(self, principal: str) -> None:
        """Raises ``ResourceNotFound`` when ``principal`` has no quota."""
        await self.call("DELETE", f"/quotas/{_name(principal)}")
