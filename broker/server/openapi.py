"""The OpenAPI 3.1 document of the HTTP API, served at ``/openapi.json``.

Written as data, next to the handlers it describes; a test checks that every route the
app registers is documented here (or, for the broker-to-broker routes, in
``openapi_internal``) with the same methods, so the two cannot drift apart.

Every limit a handler enforces is stated in the schema (``ApiLimits`` carries the ones
that are broker settings), so a request the document calls valid is never refused for
a limit it did not state; refusals that depend on the cluster's state (replication
factor above the live brokers, an unknown topic) are documented as error answers.
"""

from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.cluster.placement import MAX_PARTITIONS_PER_TOPIC
from broker.cluster.records import MAX_TOPIC_NAME_LENGTH
from broker.groups.openapi_spec import GROUP_PATHS, GROUP_SCHEMAS
from broker.server.params import INT32_MAX, INT64_MAX
from broker.server.routes_produce import PRODUCE_TIMEOUT_MAX_MS
from broker.server.routes_records import DEFAULT_MAX_RECORDS, MAX_RECORDS_LIMIT

if TYPE_CHECKING:
    from config.broker import BrokerSettings

JSON = "application/json"
BATCH = "application/vnd.kafka.batch.v2"
NDJSON = "application/x-ndjson"

_INT = {"type": "integer"}
_OFFSET = {"type": "integer", "minimum": 0, "maximum": INT64_MAX, "format": "int64"}
_STR = {"type": "string"}
BASE64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Standard base64 with padding, as ``base64.b64decode(validate=True)`` accepts it."""


def _bounded(minimum: int, maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _path_param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


CLUSTER = _path_param("cluster_id", _STR, "the cluster id from GET /v3/clusters")
TOPIC = _path_param("topic_name", _STR, "topic name")
PARTITION = _path_param("partition_id", _bounded(0, INT32_MAX), "partition number")
BROKER = _path_param("broker_id", _bounded(0, INT32_MAX), "broker id")
ACKS = _query("acks", {"enum": ["0", "1", "all", "-1"], "default": "all"}, "acknowledgement required before answering")


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {JSON: {"schema": schema}}}


def _ok(description: str, schema: dict[str, Any], status: str = "200") -> dict[str, Any]:
    return {
        status: {"description": description, **_json_body(schema)},
        "default": {"$ref": "#/components/responses/Error"},
    }


def _operation(
    summary: str, parameters: list[dict[str, Any]], responses: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {"summary": summary, "parameters": parameters, "responses": responses, **extra}


def _list_of(schema_name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "data": {"type": "array", "items": _ref(schema_name)},
        },
    }


SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error_code", "error", "message", "retriable"],
        "properties": {"error_code": _INT, "error": _STR, "message": _STR, "retriable": {"type": "boolean"}},
        "additionalProperties": True,
        "description": "every error; details such as log_start_offset/log_end_offset (416) are added as fields",
    },
    "Metadata": {"type": "object", "properties": {"self": _STR}},
    "Related": {"type": "object", "properties": {"related": _STR}},
    "Cluster": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "cluster_id": _STR,
            "controller_id": _INT,
            "controller": _ref("Related"),
            "brokers": _ref("Related"),
            "topics": _ref("Related"),
        },
    },
    "Broker": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "cluster_id": _STR,
            "broker_id": _INT,
            "url": _STR,
            "rack": {"type": ["string", "null"]},
        },
    },
    "ConfigEntry": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": _STR, "value": {"type": ["string", "integer", "number", "boolean", "null"]}},
    },
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
                **_bounded(1, MAX_PARTITIONS_PER_TOPIC),
                "description": "default topic_defaults.partitions",
            },
            "replication_factor": {
                **_bounded(1, INT32_MAX),
                "description": "default topic_defaults.replication_factor; at most the number of live brokers",
            },
            "configs": {"type": "array", "items": _ref("ConfigEntry")},
        },
    },
    "Topic": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "cluster_id": _STR,
            "topic_name": _STR,
            "is_internal": {"type": "boolean"},
            "replication_factor": _INT,
            "partitions_count": _INT,
            "configs": {"type": "array", "items": _ref("ConfigEntry")},
            "partitions": _ref("Related"),
        },
    },
    "Partition": {
        "type": "object",
        "properties": {
            "kind": _STR,
            "metadata": _ref("Metadata"),
            "cluster_id": _STR,
            "topic_name": _STR,
            "partition_id": _INT,
            "leader_id": _INT,
            "leader_epoch": _INT,
            "replicas": {"type": "array", "items": _INT},
            "isr": {"type": "array", "items": _INT},
            "log_start_offset": _OFFSET,
            "high_watermark": _OFFSET,
            "log_end_offset": _OFFSET,
            "replicas_state": {"type": "array", "items": {"type": "object"}, "description": "only from the leader"},
        },
    },
    "Offsets": {
        "type": "object",
        "properties": {
            "cluster_id": _STR,
            "topic_name": _STR,
            "partition_id": _INT,
            "earliest_offset": _OFFSET,
            "latest_offset": {**_OFFSET, "description": "the high watermark"},
            "log_end_offset": _OFFSET,
            "timestamp": _INT,
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
            "name": _STR,
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
            "headers": {"type": "array", "items": _ref("Header")},
            "key": _ref("Data"),
            "value": _ref("Data"),
            "timestamp": {
                "anyOf": [_OFFSET, {"type": "string", "format": "date-time"}, {"type": "null"}],
                "description": "ms since the epoch or ISO-8601",
            },
        },
    },
    "BatchEntry": {
        "allOf": [_ref("ProduceRecord"), {"type": "object", "properties": {"id": {"type": ["string", "integer"]}}}]
    },
    "BatchRequest": {
        "type": "object",
        "required": ["entries"],
        "properties": {"entries": {"type": "array", "minItems": 1, "items": _ref("BatchEntry")}},
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
                        "partition_id": _INT,
                        "offset": {"type": ["integer", "null"]},
                        "timestamp": _INT,
                    },
                },
            },
            "failures": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": ["string", "integer"]},
                        "error_code": _INT,
                        "error": _STR,
                        "message": _STR,
                    },
                },
            },
        },
    },
    "ElectPreferred": {
        "type": "object",
        "properties": {"topic_name": {"type": "string", "description": "only this topic; default every topic"}},
    },
    "ElectedLeaders": {
        "type": "object",
        "properties": {
            "elected": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "topic_name": _STR,
                        "partition_id": _INT,
                        "leader_id": _INT,
                        "leader_epoch": _INT,
                        "replicas": {"type": "array", "items": _INT},
                        "isr": {"type": "array", "items": _INT},
                    },
                },
            }
        },
    },
    "SizeReport": {"type": ["object", "null"], "properties": {"type": _STR, "size": _INT}},
    "DeliveryReport": {
        "type": "object",
        "properties": {
            "error_code": {"type": "integer", "description": "200, or 202 with acks=0 (offset null)"},
            "cluster_id": _STR,
            "topic_name": _STR,
            "partition_id": _INT,
            "offset": {"type": ["integer", "null"]},
            "timestamp": _INT,
            "key": _ref("SizeReport"),
            "value": _ref("SizeReport"),
        },
    },
    "BatchAppended": {
        "type": "object",
        "properties": {
            "cluster_id": _STR,
            "topic_name": _STR,
            "partition_id": _INT,
            "base_offset": {"type": ["integer", "null"]},
            "last_offset": {"type": ["integer", "null"]},
            "log_append_time": {"type": "integer", "description": "-1 for CreateTime"},
        },
    },
    "ReadRecord": {
        "type": "object",
        "properties": {
            "topic_name": _STR,
            "partition_id": _INT,
            "offset": _OFFSET,
            "timestamp": _INT,
            "headers": {"type": "array", "items": _ref("Header")},
            "key": _ref("Data"),
            "value": _ref("Data"),
        },
    },
    "ReadResponse": {
        "type": "object",
        "properties": {
            "data": {"type": "array", "items": _ref("ReadRecord")},
            "next_offset": _OFFSET,
            "high_watermark": _OFFSET,
            "log_start_offset": _OFFSET,
        },
    },
}

TOPICS = "/v3/clusters/{cluster_id}/topics"
PARTITIONS = TOPICS + "/{topic_name}/partitions"


@dataclass(frozen=True, slots=True)
class ApiLimits:
    """The limits this broker enforces, stated in its document so a valid request is never refused for them."""

    max_request_bytes: int
    max_batch_entries: int
    fetch_max_wait_ms: int

    @classmethod
    def of(cls, settings: BrokerSettings) -> ApiLimits:
        return cls(settings.max_request_bytes, settings.max_batch_entries, settings.fetch_max_wait_ms)


def _cluster_paths() -> dict[str, Any]:
    return {
        "/v3/clusters": {"get": _operation("List clusters (this one)", [], _ok("clusters", _list_of("Cluster")))},
        "/v3/clusters/{cluster_id}": {
            "get": _operation("Describe the cluster", [CLUSTER], _ok("cluster", _ref("Cluster")))
        },
        "/v3/clusters/{cluster_id}/brokers": {
            "get": _operation("List brokers", [CLUSTER], _ok("brokers", _list_of("Broker")))
        },
        "/v3/clusters/{cluster_id}/brokers/{broker_id}": {
            "get": _operation("Describe a broker", [CLUSTER, BROKER], _ok("broker", _ref("Broker")))
        },
        "/v3/clusters/{cluster_id}/producer-ids": {
            "post": _operation(
                "Allocate a producer id (epoch 0) for an idempotent producer: its batches carry the id, "
                "the epoch and per-partition sequences, and a retried batch is never appended twice",
                [CLUSTER],
                _ok(
                    "allocated",
                    {
                        "type": "object",
                        "properties": {"cluster_id": _STR, "producer_id": _INT, "producer_epoch": _INT},
                    },
                ),
            )
        },
    }


def _topic_paths() -> dict[str, Any]:
    return {
        TOPICS: {
            "get": _operation("List topics", [CLUSTER], _ok("topics", _list_of("Topic"))),
            "post": _operation(
                "Create a topic; 400 when the replication factor exceeds the live brokers or a config is refused",
                [CLUSTER],
                _ok("created", _ref("Topic"), "201"),
                requestBody={"required": True, **_json_body(_ref("CreateTopic"))},
            ),
        },
        TOPICS + "/{topic_name}": {
            "get": _operation("Describe a topic", [CLUSTER, TOPIC], _ok("topic", _ref("Topic"))),
            "delete": _operation(
                "Delete a topic and its data",
                [CLUSTER, TOPIC],
                {"204": {"description": "deleted"}, "default": {"$ref": "#/components/responses/Error"}},
            ),
        },
        PARTITIONS: {
            "get": _operation(
                "List partitions with offsets", [CLUSTER, TOPIC], _ok("partitions", _list_of("Partition"))
            )
        },
        PARTITIONS + "/{partition_id}": {
            "get": _operation(
                "Describe a partition", [CLUSTER, TOPIC, PARTITION], _ok("partition", _ref("Partition"))
            )
        },
        PARTITIONS + "/{partition_id}/offset": {
            "get": _operation(
                "Earliest offset, high watermark, log end offset; offset for a timestamp",
                [CLUSTER, TOPIC, PARTITION, _query("timestamp", _OFFSET, "ms since the epoch")],
                _ok("offsets", _ref("Offsets")),
            )
        },
        "/v3/clusters/{cluster_id}/partitions:elect-preferred": {
            "post": _operation(
                "Move leadership back to each partition's preferred replica (replicas[0]) where it is alive and in "
                "sync",
                [CLUSTER],
                _ok("the partitions whose leader changed", _ref("ElectedLeaders")),
                requestBody={"required": False, **_json_body(_ref("ElectPreferred"))},
            )
        },
    }


def _produce_paths(limits: ApiLimits) -> dict[str, Any]:
    produce_timeout = _query(
        "timeout_ms", _bounded(0, PRODUCE_TIMEOUT_MAX_MS), "how long acks=all may wait for the ISR"
    )
    return {
        TOPICS + "/{topic_name}/records": {
            "post": _operation(
                "Produce JSON records: one object, several concatenated, or a chunked stream",
                [CLUSTER, TOPIC, ACKS, produce_timeout],
                {
                    "200": {
                        "description": "one record: its delivery report; several: one report or error per line",
                        "content": {
                            JSON: {"schema": _ref("DeliveryReport")},
                            NDJSON: {"schema": _ref("DeliveryReport")},
                        },
                    },
                    "202": {"description": "acks=0: accepted before the append", **_json_body(_ref("DeliveryReport"))},
                    "default": {"$ref": "#/components/responses/Error"},
                },
                requestBody={
                    "required": True,
                    "content": {JSON: {"schema": _ref("ProduceRecord")}, NDJSON: {"schema": _ref("ProduceRecord")}},
                },
            )
        },
        TOPICS + "/{topic_name}/records:batch": {
            "post": _operation(
                f"Produce 1 to {limits.max_batch_entries} records; each entry succeeds or fails on its own",
                [CLUSTER, TOPIC, ACKS, produce_timeout],
                _ok("per-entry results", _ref("BatchResponse"), "207"),
                requestBody={"required": True, **_json_body(_ref("BatchRequest"))},
            )
        },
        PARTITIONS + "/{partition_id}/batches": {
            "post": _operation(
                "Append a client-built Kafka record batch v2 (validated by header and CRC-32C); at most the topic's "
                "max.message.bytes",
                [CLUSTER, TOPIC, PARTITION, ACKS, produce_timeout],
                {
                    "200": {"description": "appended", **_json_body(_ref("BatchAppended"))},
                    "202": {"description": "acks=0: accepted before the append", **_json_body(_ref("BatchAppended"))},
                    "default": {"$ref": "#/components/responses/Error"},
                },
                requestBody={
                    "required": True,
                    "content": {BATCH: {"schema": {"type": "string", "format": "binary", "minLength": 61}}},
                },
            )
        },
    }


def _read_paths(limits: ApiLimits) -> dict[str, Any]:
    return {
        PARTITIONS + "/{partition_id}/records": {
            "get": _operation(
                "Read records below the high watermark",
                [
                    CLUSTER,
                    TOPIC,
                    PARTITION,
                    _query("offset", _OFFSET, "first offset to read; default the log start offset"),
                    _query(
                        "max_records",
                        {**_bounded(1, MAX_RECORDS_LIMIT), "default": DEFAULT_MAX_RECORDS},
                        "JSON form only",
                    ),
                    _query(
                        "max_bytes",
                        _bounded(1, limits.max_request_bytes),
                        "soft limit; a larger first record is returned whole",
                    ),
                    _query(
                        "timeout_ms", {**_bounded(0, limits.fetch_max_wait_ms), "default": 0}, "long-poll for records"
                    ),
                    _query(
                        "format",
                        {"enum": ["binary", "string", "json"], "default": "binary"},
                        "rendering of keys and values",
                    ),
                ],
                {
                    "200": {
                        "description": "records; with Accept: application/vnd.kafka.batch.v2 the raw batches, offsets "
                        "in X-High-Watermark, X-Log-Start-Offset, X-Log-End-Offset, X-Next-Offset",
                        "content": {JSON: {"schema": _ref("ReadResponse")}, BATCH: {"schema": {"type": "string"}}},
                    },
                    "default": {"$ref": "#/components/responses/Error"},
                },
            )
        },
    }


def _ops_paths() -> dict[str, Any]:
    return {
        "/healthz": {"get": _operation("Liveness", [], _ok("alive", {"type": "object"}))},
        "/readyz": {
            "get": _operation(
                "Readiness: controller known and this broker registered", [], _ok("ready", {"type": "object"})
            )
        },
        "/metrics": {
            "get": _operation(
                "Prometheus metrics",
                [],
                {
                    "200": {"description": "text exposition format", "content": {"text/plain": {"schema": _STR}}},
                    "default": {"$ref": "#/components/responses/Error"},
                },
            )
        },
        "/openapi.json": {"get": _operation("This document", [], _ok("OpenAPI 3.1", {"type": "object"}))},
    }


def public_paths(limits: ApiLimits) -> dict[str, Any]:
    """Every client route; the broker-to-broker ones are in ``openapi_internal``, not here."""
    return deepcopy(
        {
            **_cluster_paths(),
            **_topic_paths(),
            **_produce_paths(limits),
            **_read_paths(limits),
            **_ops_paths(),
            **GROUP_PATHS,
        }
    )


def _schemas(limits: ApiLimits) -> dict[str, Any]:
    schemas = deepcopy({**SCHEMAS, **GROUP_SCHEMAS})
    schemas["BatchRequest"]["properties"]["entries"]["maxItems"] = limits.max_batch_entries
    return schemas


def openapi_document(server_url: str, limits: ApiLimits, cluster_id: str | None = None) -> dict[str, Any]:
    """The public document; ``cluster_id`` becomes the example of every ``{cluster_id}`` parameter."""
    paths = public_paths(limits)
    if cluster_id is not None:
        for item in paths.values():
            for operation in item.values():
                for parameter in operation["parameters"]:
                    if parameter["name"] == "cluster_id":
                        parameter["example"] = cluster_id
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "highwater",
            "version": "3",
            "description": "Kafka-style broker over HTTP (Confluent REST Proxy v3 conventions). "
            "Readers never see an offset at or above the high watermark.",
        },
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {
            "schemas": _schemas(limits),
            "responses": {"Error": {"description": "any error", **_json_body(_ref("Error"))}},
        },
    }
