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

from broker.acks import KAFKA_NUMBER_FOR_ALL, Acks
from broker.groups.openapi_spec import GROUP_PATHS, GROUP_SCHEMAS
from broker.server.json_depth import MAX_JSON_DEPTH
from broker.server.openapi_schemas import BATCH, INT, JSON, NDJSON, OFFSET, SCHEMAS, STR, bounded, list_of, ref
from broker.server.params import INT32_MAX
from broker.server.routes_produce import PRODUCE_TIMEOUT_MAX_MS
from broker.server.routes_records import DEFAULT_MAX_RECORDS, MAX_RECORDS_LIMIT

if TYPE_CHECKING:
    from config.broker import BrokerSettings


def _path_param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


CLUSTER = _path_param("cluster_id", STR, "the cluster id from GET /v3/clusters")
TOPIC = _path_param("topic_name", STR, "topic name")
PARTITION = _path_param("partition_id", bounded(0, INT32_MAX), "partition number")
BROKER = _path_param("broker_id", bounded(0, INT32_MAX), "broker id")
ACKS = _query(
    "acks",
    {"enum": [*(choice.value for choice in Acks), KAFKA_NUMBER_FOR_ALL], "default": Acks.ALL.value},
    "acknowledgement required before answering",
)


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {JSON: {"schema": schema}}}


def _ok(description: str, schema: dict[str, Any], status: str = "200") -> dict[str, Any]:
    return {
        status: {"description": description, **_json_body(schema)},
        "default": {"$ref": "#/components/responses/Error"},
    }


def _link(path: str, method: str, **parameters: Any) -> dict[str, Any]:
    """An OpenAPI link to ``method path``: what an answer tells a client (or a stateful fuzzer) to call next."""
    pointer = path.replace("~", "~0").replace("/", "~1")
    return {"operationRef": f"#/paths/{pointer}/{method}", "parameters": parameters}


def _topic_links() -> dict[str, Any]:
    """From a created topic to the calls that take its name; partition 0 always exists."""
    topic = {"cluster_id": "$request.path.cluster_id", "topic_name": "$response.body#/topic_name"}
    partition = {**topic, "partition_id": 0}
    return {
        "DescribeTopic": _link(TOPICS + "/{topic_name}", "get", **topic),
        "ListPartitions": _link(PARTITIONS, "get", **topic),
        "ProduceRecords": _link(TOPICS + "/{topic_name}/records", "post", **topic),
        "ProduceBatch": _link(TOPICS + "/{topic_name}/records:batch", "post", **topic),
        "ReadRecords": _link(PARTITIONS + "/{partition_id}/records", "get", **partition),
        "PartitionOffsets": _link(PARTITIONS + "/{partition_id}/offset", "get", **partition),
        "DeleteTopic": _link(TOPICS + "/{topic_name}", "delete", **topic),
    }


def _operation(
    summary: str, parameters: list[dict[str, Any]], responses: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {"summary": summary, "parameters": parameters, "responses": responses, **extra}


TOPICS = "/v3/clusters/{cluster_id}/topics"
PARTITIONS = TOPICS + "/{topic_name}/partitions"
INTERNAL_TOPIC_REFUSAL = (
    "Internal topics (__consumer_offsets) belong to the broker: creating one under its name, appending to one "
    "and deleting one are refused with 400 INVALID_TOPIC_EXCEPTION."
)


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
        "/v3/clusters": {"get": _operation("List clusters (this one)", [], _ok("clusters", list_of("Cluster")))},
        "/v3/clusters/{cluster_id}": {
            "get": _operation("Describe the cluster", [CLUSTER], _ok("cluster", ref("Cluster")))
        },
        "/v3/clusters/{cluster_id}/brokers": {
            "get": _operation("List brokers", [CLUSTER], _ok("brokers", list_of("Broker")))
        },
        "/v3/clusters/{cluster_id}/brokers/{broker_id}": {
            "get": _operation("Describe a broker", [CLUSTER, BROKER], _ok("broker", ref("Broker")))
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
                        "properties": {"cluster_id": STR, "producer_id": INT, "producer_epoch": INT},
                    },
                ),
            )
        },
    }


def _topic_paths() -> dict[str, Any]:
    return {
        TOPICS: {
            "get": _operation("List topics", [CLUSTER], _ok("topics", list_of("Topic"))),
            "post": _operation(
                "Create a topic; 400 when the replication factor exceeds the live brokers or a config is refused",
                [CLUSTER],
                {
                    "201": {"description": "created", **_json_body(ref("Topic")), "links": _topic_links()},
                    "default": {"$ref": "#/components/responses/Error"},
                },
                requestBody={"required": True, **_json_body(ref("CreateTopic"))},
                description=INTERNAL_TOPIC_REFUSAL,
            ),
        },
        TOPICS + "/{topic_name}": {
            "get": _operation("Describe a topic", [CLUSTER, TOPIC], _ok("topic", ref("Topic"))),
            "delete": _operation(
                "Delete a topic and its data",
                [CLUSTER, TOPIC],
                {"204": {"description": "deleted"}, "default": {"$ref": "#/components/responses/Error"}},
                description=INTERNAL_TOPIC_REFUSAL,
            ),
        },
        PARTITIONS: {
            "get": _operation("List partitions with offsets", [CLUSTER, TOPIC], _ok("partitions", list_of("Partition")))
        },
        PARTITIONS + "/{partition_id}": {
            "get": _operation("Describe a partition", [CLUSTER, TOPIC, PARTITION], _ok("partition", ref("Partition")))
        },
        PARTITIONS + "/{partition_id}/offset": {
            "get": _operation(
                "Earliest offset, high watermark, log end offset; offset for a timestamp",
                [CLUSTER, TOPIC, PARTITION, _query("timestamp", OFFSET, "ms since the epoch")],
                _ok("offsets", ref("Offsets")),
            )
        },
        "/v3/clusters/{cluster_id}/partitions:elect-preferred": {
            "post": _operation(
                "Move leadership back to each partition's preferred replica (replicas[0]) where it is alive and in "
                "sync",
                [CLUSTER],
                _ok("the partitions whose leader changed", ref("ElectedLeaders")),
                requestBody={"required": False, **_json_body(ref("ElectPreferred"))},
            )
        },
    }


def _produce_paths(limits: ApiLimits) -> dict[str, Any]:
    produce_timeout = _query("timeout_ms", bounded(0, PRODUCE_TIMEOUT_MAX_MS), "how long acks=all may wait for the ISR")
    return {
        TOPICS + "/{topic_name}/records": {
            "post": _operation(
                "Produce JSON records: one object, several concatenated, or a chunked stream",
                [CLUSTER, TOPIC, ACKS, produce_timeout],
                {
                    "200": {
                        "description": "one record: its delivery report; several: one report or error per line",
                        "content": {
                            JSON: {"schema": ref("DeliveryReport")},
                            NDJSON: {"schema": ref("DeliveryReport")},
                        },
                    },
                    "202": {"description": "acks=0: accepted before the append", **_json_body(ref("DeliveryReport"))},
                    "default": {"$ref": "#/components/responses/Error"},
                },
                requestBody={
                    "required": True,
                    "content": {JSON: {"schema": ref("ProduceRecord")}, NDJSON: {"schema": ref("ProduceRecord")}},
                },
                description=INTERNAL_TOPIC_REFUSAL,
            )
        },
        TOPICS + "/{topic_name}/records:batch": {
            "post": _operation(
                f"Produce 1 to {limits.max_batch_entries} records; each entry succeeds or fails on its own",
                [CLUSTER, TOPIC, ACKS, produce_timeout],
                _ok("per-entry results", ref("BatchResponse"), "207"),
                requestBody={"required": True, **_json_body(ref("BatchRequest"))},
                description="A partition's entries are appended in request order, in as many record batches as the "
                "topic's max.message.bytes needs; only an entry larger than that on its own fails (MESSAGE_TOO_LARGE). "
                "A negative partition_id fails its entry with 400 INVALID_REQUEST, as in a path. "
                + INTERNAL_TOPIC_REFUSAL,
            )
        },
        PARTITIONS + "/{partition_id}/batches": {
            "post": _operation(
                "Append a client-built Kafka record batch v2 (header, CRC-32C and records validated); at most the topic's "
                "max.message.bytes",
                [CLUSTER, TOPIC, PARTITION, ACKS, produce_timeout],
                {
                    "200": {"description": "appended", **_json_body(ref("BatchAppended"))},
                    "202": {"description": "acks=0: accepted before the append", **_json_body(ref("BatchAppended"))},
                    "default": {"$ref": "#/components/responses/Error"},
                },
                requestBody={
                    "required": True,
                    "content": {BATCH: {"schema": {"type": "string", "format": "binary", "minLength": 61}}},
                },
                description=INTERNAL_TOPIC_REFUSAL,
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
                    _query("offset", OFFSET, "first offset to read; default the log start offset"),
                    _query(
                        "max_records",
                        {**bounded(1, MAX_RECORDS_LIMIT), "default": DEFAULT_MAX_RECORDS},
                        "JSON form only",
                    ),
                    _query(
                        "max_bytes",
                        bounded(1, limits.max_request_bytes),
                        "soft limit; a larger first record is returned whole",
                    ),
                    _query(
                        "timeout_ms", {**bounded(0, limits.fetch_max_wait_ms), "default": 0}, "long-poll for records"
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
                        "content": {JSON: {"schema": ref("ReadResponse")}, BATCH: {"schema": {"type": "string"}}},
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
                    "200": {"description": "text exposition format", "content": {"text/plain": {"schema": STR}}},
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
            "Readers never see an offset at or above the high watermark. "
            f"JSON bodies nest at most {MAX_JSON_DEPTH} levels of arrays and objects; deeper ones are "
            "refused with 400 INVALID_REQUEST before they are parsed.",
        },
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {
            "schemas": _schemas(limits),
            "responses": {"Error": {"description": "any error", **_json_body(ref("Error"))}},
        },
    }
