"""OpenAPI paths and schemas of the consumer group routes, merged into ``broker.server.openapi``.

The request bodies are validated with ``extra="forbid"`` (``broker.server.routes_groups``),
so their schemas say ``additionalProperties: false`` and carry the same bounds.
"""

from __future__ import annotations

from typing import Any

_INT = {"type": "integer"}
_STR = {"type": "string"}
_NULLABLE_INT = {"type": ["integer", "null"]}
_NULLABLE_STR = {"type": ["string", "null"]}
_ERROR = {"$ref": "#/components/responses/Error"}
_JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _param(name: str, where: str, schema: dict[str, Any], description: str, required: bool = True) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required, "schema": schema, "description": description}


def _ok(description: str, schema: dict[str, Any], status: str = "200") -> dict[str, Any]:
    return {status: {"description": description, "content": {_JSON: {"schema": schema}}}, "default": _ERROR}


def _no_content(description: str) -> dict[str, Any]:
    return {"204": {"description": description}, "default": _ERROR}


def _list_of(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"kind": _STR, "metadata": _ref("Metadata"), "data": {"type": "array", "items": _ref(name)}},
    }


def _op(summary: str, parameters: list, responses: dict, **extra: Any) -> dict[str, Any]:
    return {"summary": summary, "parameters": parameters, "responses": responses, "tags": ["consumer-groups"], **extra}


CLUSTER = _param("cluster_id", "path", _STR, "the cluster id from GET /v3/clusters")
GROUP = _param("consumer_group_id", "path", _STR, "consumer group id")
MEMBER = _param("consumer_id", "path", _STR, "member id, chosen by the member (stable across its heartbeats)")
TOPIC = _param("topic_name", "path", _STR, "topic name")
PARTITION = _param("partition_id", "path", {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}, "partition number")
_TOPIC_PARTITIONS = {
    "type": "object",
    "required": ["topic"],
    "properties": {
        "topic": _STR,
        "partitions": {"type": "array", "items": {**_INT, "minimum": 0, "maximum": 2**31 - 1}},
    },
    "additionalProperties": False,
}
_PARTITION_REF = {"type": "object", "properties": {"topic_name": _STR, "partition_id": _INT}}

GROUP_SCHEMAS: dict[str, Any] = {
    "TopicPartitions": _TOPIC_PARTITIONS,
    "ConsumerGroupHeartbeatRequest": {
        "type": "object",
        "required": ["member_epoch"],
        "additionalProperties": False,
        "properties": {
            "member_epoch": {"type": "integer", "minimum": -1, "description": "0 joins, -1 leaves, else current"},
            "subscribed_topics": {
                "type": ["array", "null"],
                "items": _STR,
                "description": "required when joining (or regex)",
            },
            "subscribed_topic_regex": {
                "type": ["string", "null"],
                "format": "regex",
                "description": "full-match regex over topic names",
            },
            "owned_partitions": {
                "type": ["array", "null"],
                "items": _ref("TopicPartitions"),
                "description": "what the member owns now; omitting a revoked partition releases it",
            },
            "rebalance_timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": 3_600_000,
                "default": 30000,
                "description": "time allowed to revoke",
            },
            "session_timeout_ms": {
                "type": "integer",
                "minimum": 100,
                "maximum": 3_600_000,
                "default": 10000,
                "description": "expelled after this silence",
            },
            "client_id": _STR,
            "server_assignor": {"enum": ["uniform", "range"], "default": "uniform"},
        },
    },
    "ConsumerGroupHeartbeatResponse": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "member_id": _STR,
            "member_epoch": _INT,
            "group_epoch": _INT,
            "heartbeat_interval_ms": _INT,
            "assignment": {"type": "array", "items": _ref("TopicPartitions")},
        },
    },
    "ConsumerGroup": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "cluster_id": _STR,
            "consumer_group_id": _STR,
            "is_simple": {"type": "boolean"},
            "partition_assignor": _STR,
            "state": {"enum": ["Empty", "Assigning", "Reconciling", "Stable"]},
            "group_epoch": _INT,
            "assignment_epoch": _INT,
            "members_count": _INT,
            "committed_partitions": _INT,
            "coordinator_id": _INT,
            "coordinator": _ref("Related"),
            "consumers": _ref("Related"),
            "lag_summary": _ref("Related"),
        },
    },
    "Consumer": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "cluster_id": _STR,
            "consumer_group_id": _STR,
            "consumer_id": _STR,
            "client_id": _STR,
            "member_epoch": _INT,
            "subscribed_topics": {"type": ["array", "null"], "items": _STR},
            "subscribed_topic_regex": _NULLABLE_STR,
            "assignments": {"type": "array", "items": _PARTITION_REF},
            "revoking": {"type": "array", "items": _PARTITION_REF},
            "last_heartbeat_ms": _INT,
            "session_timeout_ms": _INT,
        },
    },
    "CommitOffsetsRequest": {
        "type": "object",
        "required": ["offsets"],
        "additionalProperties": False,
        "properties": {
            "member_id": {"type": ["string", "null"], "description": "omit for a group without active members"},
            "member_epoch": {"type": ["integer", "null"], "description": "the member's current epoch (fencing)"},
            "offsets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["topic_name", "partition_id", "offset"],
                    "additionalProperties": False,
                    "properties": {
                        "topic_name": _STR,
                        "partition_id": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
                        "offset": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": 2**63 - 1,
                            "description": "the next offset to consume; above the partition's high watermark it is "
                            "refused: 416 OFFSET_OUT_OF_RANGE, or 503 OFFSET_NOT_AVAILABLE (retriable) while the "
                            "leader holds it but its high watermark has not reached it",
                        },
                        "metadata": _STR,
                    },
                },
            },
        },
    },
    "ConsumerGroupOffsets": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "consumer_group_id": _STR,
            "data": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "topic_name": _STR,
                        "partition_id": _INT,
                        "offset": _INT,
                        "metadata": _STR,
                        "commit_timestamp_ms": _INT,
                    },
                },
            },
        },
    },
    "ConsumerLag": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "cluster_id": _STR,
            "consumer_group_id": _STR,
            "topic_name": _STR,
            "partition_id": _INT,
            "current_offset": {**_NULLABLE_INT, "description": "committed offset; null if never committed"},
            "log_end_offset": {**_NULLABLE_INT, "description": "the partition's high watermark"},
            "log_start_offset": _NULLABLE_INT,
            "lag": {
                **_NULLABLE_INT,
                "description": "log_end_offset - current_offset; negative when the committed offset is beyond the "
                "high watermark (status AHEAD)",
            },
            "lag_ms": {**_NULLABLE_INT, "description": "now - append time of the record at current_offset"},
            "last_commit_ms": _NULLABLE_INT,
            "consumer_id": _NULLABLE_STR,
            "client_id": _NULLABLE_STR,
            "status": {
                "enum": ["OK", "WARN", "STOP", "STALL", "REWIND", "AHEAD"],
                "description": "Burrow's verdict; AHEAD: the committed offset is beyond the high watermark",
            },
        },
    },
    "ConsumerGroupLagSummary": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "cluster_id": _STR,
            "group_id": _STR,
            "max_lag": _INT,
            "max_lag_topic_name": _NULLABLE_STR,
            "max_lag_partition_id": _NULLABLE_INT,
            "max_lag_consumer_id": _NULLABLE_STR,
            "max_lag_client_id": _NULLABLE_STR,
            "max_lag_ms": _INT,
            "total_lag": _INT,
            "partitions": _INT,
            "partitions_without_commit": _INT,
            "partitions_ahead_of_high_watermark": _INT,
            "status": {"enum": ["OK", "WARN", "ERR"]},
        },
    },
}

GROUPS = "/v3/clusters/{cluster_id}/consumer-groups"
ONE_GROUP = GROUPS + "/{consumer_group_id}"


def _member_links() -> dict[str, Any]:
    """From a heartbeat's answer to the calls that take the member and its group."""
    member = {
        "cluster_id": "$request.path.cluster_id",
        "consumer_group_id": "$request.path.consumer_group_id",
        "consumer_id": "$response.body#/member_id",
    }
    group = {key: member[key] for key in ("cluster_id", "consumer_group_id")}
    pointer = (ONE_GROUP + "/consumers/{consumer_id}").replace("/", "~1")
    group_pointer = ONE_GROUP.replace("/", "~1")
    return {
        "DescribeMember": {"operationRef": f"#/paths/{pointer}/get", "parameters": member},
        "LeaveGroup": {"operationRef": f"#/paths/{pointer}/delete", "parameters": member},
        "DescribeGroup": {"operationRef": f"#/paths/{group_pointer}/get", "parameters": group},
        "GroupLags": {"operationRef": f"#/paths/{group_pointer}~1lags/get", "parameters": group},
    }


GROUP_PATHS: dict[str, Any] = {
    GROUPS: {"get": _op("List consumer groups of the cluster", [CLUSTER], _ok("groups", _list_of("ConsumerGroup")))},
    ONE_GROUP: {
        "get": _op(
            "Describe a consumer group (on its coordinator)", [CLUSTER, GROUP], _ok("group", _ref("ConsumerGroup"))
        ),
        "delete": _op(
            "Delete a group without active members and its committed offsets", [CLUSTER, GROUP], _no_content("deleted")
        ),
    },
    ONE_GROUP + "/consumers": {
        "get": _op(
            "List the group's members and their assignments", [CLUSTER, GROUP], _ok("members", _list_of("Consumer"))
        )
    },
    ONE_GROUP + "/consumers/{consumer_id}": {
        "get": _op("Describe one member", [CLUSTER, GROUP, MEMBER], _ok("member", _ref("Consumer"))),
        "delete": _op(
            "Leave the group: the member's partitions are reassigned at once",
            [CLUSTER, GROUP, MEMBER],
            _no_content("left"),
        ),
    },
    ONE_GROUP + "/consumers/{consumer_id}:heartbeat": {
        "post": _op(
            "KIP-848 heartbeat: join (epoch 0), stay, acknowledge revocations, receive the assignment",
            [CLUSTER, GROUP, MEMBER],
            {
                "200": {
                    "description": "the member's epoch and the partitions it owns now",
                    "content": {_JSON: {"schema": _ref("ConsumerGroupHeartbeatResponse")}},
                    "links": _member_links(),
                },
                "default": _ERROR,
            },
            requestBody={"required": True, "content": {_JSON: {"schema": _ref("ConsumerGroupHeartbeatRequest")}}},
        )
    },
    ONE_GROUP + "/offsets": {
        "get": _op(
            "Committed offsets",
            [CLUSTER, GROUP, _param("topic", "query", _STR, "only this topic", required=False)],
            _ok("offsets", _ref("ConsumerGroupOffsets")),
        ),
        "post": _op(
            "Commit offsets (acks=all to __consumer_offsets); fenced by member epoch",
            [CLUSTER, GROUP],
            _ok("the group's committed offsets after the commit", _ref("ConsumerGroupOffsets")),
            requestBody={"required": True, "content": {_JSON: {"schema": _ref("CommitOffsetsRequest")}}},
        ),
    },
    ONE_GROUP + "/lags": {
        "get": _op("Lag per partition, largest first", [CLUSTER, GROUP], _ok("lags", _list_of("ConsumerLag")))
    },
    ONE_GROUP + "/lags/{topic_name}/partitions/{partition_id}": {
        "get": _op("Lag of one partition", [CLUSTER, GROUP, TOPIC, PARTITION], _ok("lag", _ref("ConsumerLag")))
    },
    ONE_GROUP + "/lag-summary": {
        "get": _op(
            "Largest and total lag, Burrow group status",
            [CLUSTER, GROUP],
            _ok("summary", _ref("ConsumerGroupLagSummary")),
        )
    },
}
