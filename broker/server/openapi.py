"""The OpenAPI 3.1 document of the HTTP API, served at ``/openapi.json``.

Written as data, next to the handlers it describes; a test checks that every route the
app registers is documented here with the same methods and that nothing documented is
missing from the app, so the two cannot drift apart.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from broker.groups.openapi_spec import GROUP_PATHS, GROUP_SCHEMAS
from broker.server.json_depth import MAX_JSON_DEPTH

JSON = "application/json"
BATCH = "application/vnd.kafka.batch.v2"
NDJSON = "application/x-ndjson"

_INT = {"type": "integer"}
_OFFSET = {"type": "integer", "minimum": 0, "format": "int64"}
_STR = {"type": "string"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _path_param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


CLUSTER = _path_param("cluster_id", _STR, "the cluster id from GET /v3/clusters")
TOPIC = _path_param("topic_name", _STR, "topic name")
PARTITION = _path_param("partition_id", {"type": "integer", "minimum": 0}, "partition number")
BROKER = _path_param("broker_id", {"type": "integer", "minimum": 0}, "broker id")
ACKS = _query("acks", {"enum": ["0", "1", "all", "-1"], "default": "all"}, "acknowledgement required before answering")
PRODUCE_TIMEOUT = _query("timeout_ms", {"type": "integer", "minimum": 0}, "how long acks=all may wait for the ISR")


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
        "additionalProperties": False,
        "description": "a Kafka topic config; min.insync.replicas above the replication factor is refused "
        "with 400 INVALID_CONFIG",
    },
    "CreateTopic": {
        "type": "object",
        "required": ["topic_name"],
        "properties": {
            "topic_name": {"type": "string", "pattern": "^[a-zA-Z0-9._-]{1,249}$"},
            "partitions_count": {"type": "integer", "minimum": 1, "description": "default topic_defaults.partitions"},
            "replication_factor": {
                "type": "integer",
                "minimum": 1,
                "description": "default topic_defaults.replication_factor",
            },
            "configs": {"type": "array", "items": _ref("ConfigEntry")},
        },
        "additionalProperties": False,
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
        "type": ["object", "null"],
        "properties": {"type": {"enum": ["JSON", "STRING", "BINARY"], "default": "JSON"}, "data": {}},
        "description": "BINARY data is base64; JSON data is any JSON value",
    },
    "Header": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": _STR, "value": {"type": ["string", "null"], "contentEncoding": "base64"}},
    },
    "ProduceRecord": {
        "type": "object",
        "properties": {
            "partition_id": {
                "type": ["integer", "null"],
                "minimum": 0,
                "description": "default: key hash (murmur2) or round-robin",
            },
            "headers": {"type": "array", "items": _ref("Header")},
            "key": _ref("Data"),
            "value": _ref("Data"),
            "timestamp": {"type": ["integer", "string", "null"], "description": "ms since the epoch or ISO-8601"},
        },
    },
    "BatchEntry": {
        "allOf": [_ref("ProduceRecord"), {"type": "object", "properties": {"id": {"type": ["string", "integer"]}}}]
    },
    "BatchRequest": {
        "type": "object",
        "required": ["entries"],
        "properties": {"entries": {"type": "array", "items": _ref("BatchEntry")}},
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
INTERNAL_TOPIC_REFUSAL = (
    "Internal topics (__consumer_offsets) belong to the broker: creating one under its name, appending to one "
    "and deleting one are refused with 400 INVALID_TOPIC_EXCEPTION."
)
PARTITIONS = TOPICS + "/{topic_name}/partitions"

_INTERNAL = {"tags": ["internal"]}
_TOPIC_ON_CONTROLLER = _path_param("topic", _STR, "topic name")
INTERNAL_PATHS: dict[str, Any] = {
    "/internal/fetch": {
        "post": _operation(
            "Replica fetch (broker to broker): binary request and response, see broker.replication.fetch_wire",
            [],
            {"200": {"description": "per partition: offsets, diverging epoch, record batches",
                     "content": {"application/vnd.highwater.fetch.v1": {"schema": _STR}}}},
            **_INTERNAL,
        )
    },
    "/internal/controller/topics": {
        "post": _operation("Create a topic on the controller", [], _ok("created", {"type": "object"}), **_INTERNAL)
    },
    "/internal/controller/topics/{topic}": {
        "delete": _operation(
            "Delete a topic on the controller", [_TOPIC_ON_CONTROLLER], _ok("deleted", {"type": "object"}), **_INTERNAL
        )
    },
    "/internal/controller/controlled-shutdown/{broker_id}": {
        "post": _operation(
            "Move a stopping broker's leaderships away", [BROKER], _ok("moved", {"type": "object"}), **_INTERNAL
        )
    },
    "/internal/controller/elect-preferred": {
        "post": _operation(
            "Restore preferred leaders (replicas[0]) that are in sync", [], _ok("elected", {"type": "object"}),
            **_INTERNAL,
        )
    },
    "/internal/partitions/{topic}": {
        "get": _operation(
            "The partitions of a topic this broker leads, with the leader's offsets",
            [_TOPIC_ON_CONTROLLER],
            _ok("partitions", _list_of("Partition")),
            **_INTERNAL,
        )
    },
}
"""Broker-to-broker routes; listed so the document covers every route the server answers."""

PATHS: dict[str, Any] = {
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
    TOPICS: {
        "get": _operation("List topics", [CLUSTER], _ok("topics", _list_of("Topic"))),
        "post": _operation(
            "Create a topic",
            [CLUSTER],
            _ok("created", _ref("Topic"), "201"),
            requestBody=_json_body(_ref("CreateTopic")),
            description=INTERNAL_TOPIC_REFUSAL,
        ),
    },
    TOPICS + "/{topic_name}": {
        "get": _operation("Describe a topic", [CLUSTER, TOPIC], _ok("topic", _ref("Topic"))),
        "delete": _operation(
            "Delete a topic and its data",
            [CLUSTER, TOPIC],
            {"204": {"description": "deleted"}, "default": {"$ref": "#/components/responses/Error"}},
            description=INTERNAL_TOPIC_REFUSAL,
        ),
    },
    PARTITIONS: {
        "get": _operation("List partitions with offsets", [CLUSTER, TOPIC], _ok("partitions", _list_of("Partition")))
    },
    PARTITIONS + "/{partition_id}": {
        "get": _operation("Describe a partition", [CLUSTER, TOPIC, PARTITION], _ok("partition", _ref("Partition")))
    },
    PARTITIONS + "/{partition_id}/offset": {
        "get": _operation(
            "Earliest offset, high watermark, log end offset; offset for a timestamp",
            [CLUSTER, TOPIC, PARTITION, _query("timestamp", {"type": "integer", "minimum": 0}, "ms since the epoch")],
            _ok("offsets", _ref("Offsets")),
        )
    },
    "/v3/clusters/{cluster_id}/partitions:elect-preferred": {
        "post": _operation(
            "Move leadership back to each partition's preferred replica (replicas[0]) where it is alive and in sync",
            [CLUSTER],
            _ok("the partitions whose leader changed", _ref("ElectedLeaders")),
            requestBody={"required": False, **_json_body(_ref("ElectPreferred"))},
        )
    },
    TOPICS + "/{topic_name}/records": {
        "post": _operation(
            "Produce JSON records: one object, several concatenated, or a chunked stream",
            [CLUSTER, TOPIC, ACKS, PRODUCE_TIMEOUT],
            {
                "200": {
                    "description": "one record: its delivery report; several: one report or error per line",
                    "content": {JSON: {"schema": _ref("DeliveryReport")}, NDJSON: {"schema": _ref("DeliveryReport")}},
                },
                "202": {"description": "acks=0: accepted before the append", **_json_body(_ref("DeliveryReport"))},
                "default": {"$ref": "#/components/responses/Error"},
            },
            requestBody={
                "content": {JSON: {"schema": _ref("ProduceRecord")}, NDJSON: {"schema": _ref("ProduceRecord")}}
            },
            description=INTERNAL_TOPIC_REFUSAL,
        )
    },
    TOPICS + "/{topic_name}/records:batch": {
        "post": _operation(
            "Produce many records; each entry succeeds or fails on its own",
            [CLUSTER, TOPIC, ACKS, PRODUCE_TIMEOUT],
            _ok("per-entry results", _ref("BatchResponse"), "207"),
            requestBody=_json_body(_ref("BatchRequest")),
            description="A partition's entries are appended in request order, in as many record batches as the "
            "topic's max.message.bytes needs; only an entry larger than that on its own fails (MESSAGE_TOO_LARGE). "
            "A negative partition_id fails its entry with 400 INVALID_REQUEST, as in a path. " + INTERNAL_TOPIC_REFUSAL,
        )
    },
    PARTITIONS + "/{partition_id}/batches": {
        "post": _operation(
            "Append a client-built Kafka record batch v2 (validated by header and CRC-32C)",
            [CLUSTER, TOPIC, PARTITION, ACKS, PRODUCE_TIMEOUT],
            _ok("appended", _ref("BatchAppended")),
            requestBody={"content": {BATCH: {"schema": {"type": "string", "contentMediaType": BATCH}}}},
            description=INTERNAL_TOPIC_REFUSAL,
        )
    },
    PARTITIONS + "/{partition_id}/records": {
        "get": _operation(
            "Read records below the high watermark",
            [
                CLUSTER,
                TOPIC,
                PARTITION,
                _query("offset", _OFFSET, "first offset to read; default the log start offset"),
                _query("max_records", {"type": "integer", "minimum": 1, "default": 500}, "JSON form only"),
                _query(
                    "max_bytes",
                    {"type": "integer", "minimum": 1},
                    "soft limit; a larger first record is returned whole",
                ),
                _query("timeout_ms", {"type": "integer", "minimum": 0, "default": 0}, "long-poll for records"),
                _query(
                    "format",
                    {"enum": ["binary", "string", "json"], "default": "binary"},
                    "rendering of keys and values",
                ),
            ],
            {
                "200": {
                    "description": "records; with Accept: application/vnd.kafka.batch.v2 the raw batches, offsets in "
                    "X-High-Watermark, X-Log-Start-Offset, X-Log-End-Offset, X-Next-Offset",
                    "content": {JSON: {"schema": _ref("ReadResponse")}, BATCH: {"schema": {"type": "string"}}},
                },
                "default": {"$ref": "#/components/responses/Error"},
            },
        )
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
                    "properties": {"cluster_id": _STR, "producer_id": {"type": "integer"}, "producer_epoch": {"type": "integer"}},
                },
            ),
        )
    },
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
            {"200": {"description": "text exposition format", "content": {"text/plain": {"schema": _STR}}}},
        )
    },
    "/openapi.json": {"get": _operation("This document", [], _ok("OpenAPI 3.1", {"type": "object"}))},
    **INTERNAL_PATHS,
    **GROUP_PATHS,
}


def openapi_document(server_url: str) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "highwater",
            "version": "3",
            "description": "Kafka-style broker over HTTP (Confluent REST Proxy v3 conventions). "
            "Readers never see an offset at or above the high watermark. "
            f"JSON bodies nest at most {MAX_JSON_DEPTH} levels of arrays and objects; deeper ones are "
            "refused with 400 INVALID_REQUEST before they are parsed.",
        },
        "servers": [{"url": server_url}],
        "paths": deepcopy(PATHS),
        "components": {
            "schemas": deepcopy({**SCHEMAS, **GROUP_SCHEMAS}),
            "responses": {"Error": {"description": "any error", **_json_body(_ref("Error"))}},
        },
    }
