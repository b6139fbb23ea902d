"""The component schemas of the public OpenAPI document (``broker.server.openapi``).

Each schema states what its handler accepts: bounds, patterns, base64, and for topic
configs the value type and range of each known config, taken from ``TopicConfig``
itself so the two cannot disagree.
"""

from __future__ import annotations

from typing import Any

from broker.cluster.placement import MAX_PARTITIONS_PER_TOPIC
from broker.cluster.records import MAX_TOPIC_NAME_LENGTH
from broker.server.params import INT32_MAX, INT64_MAX
from config.topic import TOPIC_CONFIG_NAMES, TopicConfig

JSON = "application/json"
BATCH = "application/vnd.kafka.batch.v2"
NDJSON = "application/x-ndjson"

INT = {"type": "integer"}
OFFSET = {"type": "integer", "minimum": 0, "maximum": INT64_MAX, "format": "int64"}
STR = {"type": "string"}
BASE64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Standard base64 with padding, as ``base64.b64decode(validate=True)`` accepts it."""


def bounded(minimum: int, maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def list_of(schema_name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "kind": STR,
            "metadata": ref("Metadata"),
            "data": {"type": "array", "items": ref(schema_name)},
        },
    }


def _config_entry() -> dict[str, Any]:
    """One ``{name, value}`` per known topic config, the value typed and bounded as ``TopicConfig`` checks it."""
    fields = TopicConfig.model_json_schema()["properties"]
    variants = []
    for name, field in sorted(TOPIC_CONFIG_NAMES.items()):
        value = {key: item for key, item in fields[field].items() if key not in ("title", "default")}
        variants.append(
            {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"const": name}, "value": {"anyOf": [value, {"type": "null"}]}},
                "additionalProperties": False,
            }
        )
    return {
        "anyOf": variants,
        "description": "a null value means the default; min.insync.replicas above the replication factor is "
        "refused with 400 INVALID_CONFIG",
    }


SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error_code", "error", "message", "retriable"],
        "properties": {"error_code": INT, "error": STR, "message": STR, "retriable": {"type": "boolean"}},
        "additionalProperties": True,
        "description": "every error; details such as log_start_offset/log_end_offset (416) are added as fields",
    },
    "Metadata": {"type": "object", "properties": {"self": STR}},
    "Related": {"type": "object", "properties": {"related": STR}},
    "Cluster": {
        "type": "object",
        "properties": {
            "kind": STR,
            "metadata": ref("Metadata"),
            "cluster_id": STR,
            "controller_id": INT,
            "controller": ref("Related"),
            "brokers": ref("Related"),
            "topics": ref("Related"),
        },
    },
    "Broker": {
        "type": "object",
        "properties": {
            "kind": STR,
            "metadata": ref("Metadata"),
            "cluster_id": STR,
            "broker_id": INT,
            "url": STR,
            "rack": {"type": ["string", "null"]},
        },
    },
    "ConfigEntry": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": STR, "value": {"type": ["string", "null"]}},
    },
    "TopicConfigEntry": _config_entry(),
    "CreateTopic": {
        "type": "object",
        "required": ["topic_name"],
        "properties": {
            "topic_name": {
                "type": "string",
                "pattern": f"^[a-zA-Z0-9._-]{{1,{MAX_TOPIC_NAME_LENGTH}}}$",
                "not": {"enum": [".", ".."]},
            },
            "partitions_count": {
                **bounded(1, MAX_PARTITIONS_PER_TOPIC),
                "description": "default topic_defaults.partitions",
            },
            "replication_factor": {
                **bounded(1, INT32_MAX),
                "description": "default topic_defaults.replication_factor; at most the number of live brokers",
            },
            "configs": {"type": "array", "items": ref("TopicConfigEntry")},
        },
        "additionalProperties": False,
    },
    "Topic": {
        "type": "object",
        "properties": {
            "kind": STR,
            "metadata": ref("Metadata"),
            "cluster_id": STR,
            "topic_name": STR,
            "is_internal": {"type": "boolean"},
            "replication_factor": INT,
            "partitions_count": INT,
            "configs": {"type": "array", "items": ref("ConfigEntry")},
            "partitions": ref("Related"),
        },
    },
    "Partition": {
        "type": "object",
        "properties": {
            "kind": STR,
            "metadata": ref("Metadata"),
            "cluster_id": STR,
            "topic_name": STR,
            "partition_id": INT,
            "leader_id": INT,
            "leader_epoch": INT,
            "replicas": {"type": "array", "items": INT},
            "isr": {"type": "array", "items": INT},
            "log_start_offset": OFFSET,
            "high_watermark": OFFSET,
            "log_end_offset": OFFSET,
            "replicas_state": {"type": "array", "items": {"type": "object"}, "description": "only from the leader"},
        },
    },
    "Offsets": {
        "type": "object",
        "properties": {
            "cluster_id": STR,
            "topic_name": STR,
            "partition_id": INT,
            "earliest_offset": OFFSET,
            "latest_offset": {**OFFSET, "description": "the high watermark"},
            "log_end_offset": OFFSET,
            "timestamp": INT,
            "offset": {"type": ["integer", "null"], "description": "first offset with timestamp >= ?timestamp"},
        },
    },
    "Data": {
        "anyOf": [
            {"type": "null"},
            {"type": "object", "properties": {"type": {"const": "JSON"}, "data": {}}, "required": ["type"]},
            {"type": "object", "properties": {"data": {}}, "not": {"required": ["type"]}},
            {
                "type": "object",
                "properties": {"type": {"const": "STRING"}, "data": {"type": ["string", "null"]}},
                "required": ["type"],
            },
            {
                "type": "object",
                "properties": {
                    "type": {"const": "BINARY"},
                    "data": {"type": ["string", "null"], "pattern": BASE64, "contentEncoding": "base64"},
                },
                "required": ["type"],
            },
        ],
        "description": "JSON (the default) data is any JSON value; STRING data a string; BINARY data base64",
    },
    "Header": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": STR,
            "value": {"type": ["string", "null"], "pattern": BASE64, "contentEncoding": "base64"},
        },
    },
    "ProduceRecord": {
        "type": "object",
        "properties": {
            "partition_id": {
                "type": ["integer", "null"],
                "minimum": 0,
                "maximum": INT32_MAX,
                "description": "default: key hash (murmur2) or round-robin",
            },
            "headers": {"type": "array", "items": ref("Header")},
            "key": ref("Data"),
            "value": ref("Data"),
            "timestamp": {
                "anyOf": [
                    OFFSET,
                    {"type": "string", "format": "date-time", "pattern": "^(19[7-9][0-9]|[2-9][0-9]{3})-"},
                    {"type": "null"},
                ],
                "description": "ms since the epoch or ISO-8601, not before 1970-01-01T00:00:00Z",
            },
        },
    },
    "BatchEntry": {
        "allOf": [ref("ProduceRecord"), {"type": "object", "properties": {"id": {"type": ["string", "integer"]}}}]
    },
    "BatchRequest": {
        "type": "object",
        "required": ["entries"],
        "properties": {"entries": {"type": "array", "minItems": 1, "items": ref("BatchEntry")}},
        "additionalProperties": False,
    },
    "BatchResponse": {
        "type": "object",
        "properties": {
            "successes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": ["string", "integer"]},
                        "partition_id": INT,
                        "offset": {"type": ["integer", "null"]},
                        "timestamp": INT,
                    },
                },
            },
            "failures": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": ["string", "integer"]},
                        "error_code": INT,
                        "error": STR,
                        "message": STR,
                    },
                },
            },
        },
    },
    "ElectPreferred": {
        "type": "object",
        "properties": {"topic_name": {"type": "string", "description": "only this topic; absent: every topic"}},
        "additionalProperties": False,
    },
    "ElectedLeaders": {
        "type": "object",
        "properties": {
            "elected": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "topic_name": STR,
                        "partition_id": INT,
                        "leader_id": INT,
                        "leader_epoch": INT,
                        "replicas": {"type": "array", "items": INT},
                        "isr": {"type": "array", "items": INT},
                    },
                },
            }
        },
    },
    "SizeReport": {"type": ["object", "null"], "properties": {"type": STR, "size": INT}},
    "DeliveryReport": {
        "type": "object",
        "properties": {
            "error_code": {"type": "integer", "description": "200, or 202 with acks=0 (offset null)"},
            "cluster_id": STR,
            "topic_name": STR,
            "partition_id": INT,
            "offset": {"type": ["integer", "null"]},
            "timestamp": INT,
            "key": ref("SizeReport"),
            "value": ref("SizeReport"),
        },
    },
    "BatchAppended": {
        "type": "object",
        "properties": {
            "cluster_id": STR,
            "topic_name": STR,
            "partition_id": INT,
            "base_offset": {"type": ["integer", "null"]},
            "last_offset": {"type": ["integer", "null"]},
            "log_append_time": {"type": "integer", "description": "-1 for CreateTime"},
        },
    },
    "ReadRecord": {
        "type": "object",
        "properties": {
            "topic_name": STR,
            "partition_id": INT,
            "offset": OFFSET,
            "timestamp": INT,
            "headers": {"type": "array", "items": ref("Header")},
            "key": ref("Data"),
            "value": ref("Data"),
        },
    },
    "ReadResponse": {
        "type": "object",
        "properties": {
            "data": {"type": "array", "items": ref("ReadRecord")},
            "next_offset": OFFSET,
            "high_watermark": OFFSET,
            "log_start_offset": OFFSET,
        },
    },
}
