"""Produce handlers: JSON records (single, streaming, ``records:batch``) and binary batches.

Forms of ``POST …/topics/{t}/records`` (REST Proxy v3):

* one JSON object with a ``Content-Length`` → one JSON delivery report;
* several objects concatenated in one body → one report per line (``application/x-ndjson``),
  the records of the body appended together, in as few batches per partition as the
  topic's ``max.message.bytes`` allows (``produce_plan``);
* a chunked body (``Transfer-Encoding: chunked``) → streaming: reports are written back
  as records are appended. Whatever has arrived when the broker is ready for more is
  appended together (as few batches per partition as possible), so a fast client gets
  large batches and a slow one low latency.

A record that fails on its own gets an error object on its line instead of a report;
the stream goes on. Only a malformed stream (it cannot be resynchronised) ends it.

Every form is metered against the principal's ``producer_byte_rate`` before anything
is appended (``throttling``): a refused request appends nothing; a throttled one is
answered late. A stream is metered chunk by chunk as it arrives: a refused chunk ends
the stream with its error line, a throttled one delays reading the next chunk.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web
from pydantic import ValidationError

from broker.acks import KAFKA_NUMBER_FOR_ALL, Acks
from broker.clock import wall_clock_ms
from broker.error_table import error_body
from broker.errors import CorruptRecord, HighwaterError, InvalidRequest, RequestTooLarge
from broker.record.codec import LOG_APPEND_TIME
from broker.record.decode import validate_produced_batches
from broker.replica_io.trace import trace
from broker.security.acl import AclOperation, Resource
from broker.server.api_routes import CLUSTER, JSON, PARTITION, TOPIC, Body, Operation, Reply, RouteTable, query_param
from broker.server.authorization import require
from broker.server.json_records import (
    BatchEntry,
    BatchRequest,
    EncodedRecord,
    ProduceRecord,
    encode_record,
)
from broker.server.json_stream import JsonObjectSplitter, split_objects
from broker.server.middleware import RECEIVED_NS_KEY, validation_error
from broker.server.params import (
    BATCH_CONTENT_TYPE,
    acks_param,
    check_partition,
    node_of,
    parse_json,
    partition_param,
    read_model,
    require_binary,
    require_json,
    timeout_param,
)
from broker.server.producing import Delivered, Outcome, RecordProducer, check_batch_size, delivered_at, delivery_fields
from broker.server.responses import BatchAppended, BatchResponse, DeliveryReport
from broker.server.routes_topics import INTERNAL_TOPIC_REFUSAL
from broker.server.throttling import admit_produce, pause, throttled, throttled_json
from broker.storage.log import CheckedBatches
from broker.topics.policy import check_client_append

if TYPE_CHECKING:
    from broker.server.host import HttpHost

PRODUCER_KEY = web.AppKey("record_producer", RecordProducer)
NDJSON = "application/x-ndjson"
PRODUCE_TIMEOUT_MAX_MS = 300_000
"""Upper bound of a produce ``timeout_ms``: five minutes, Kafka's ``delivery.timeout.ms`` scale."""
ACKS = query_param(
    "acks",
    {"enum": [*(choice.value for choice in Acks), KAFKA_NUMBER_FOR_ALL], "default": Acks.ALL.value},
    "acknowledgement required before answering",
)
TRANSACTIONAL_ID = query_param(
    "transactional_id",
    {"type": "string", "minLength": 1},
    "the producer's transactional id, for a batch of its open transaction (acks=all)",
)
PRODUCE_TIMEOUT = query_param(
    "timeout_ms",
    {"type": "integer", "minimum": 0, "maximum": PRODUCE_TIMEOUT_MAX_MS},
    "how long acks=all may wait for the ISR",
)
TOPIC_PATH = "/v3/clusters/{cluster_id}/topics/{topic_name}"
routes = RouteTable()


def _encode_object(text: bytes, model: type[ProduceRecord], now_ms: int) -> EncodedRecord | HighwaterError:
    """A record from its JSON text, or the error that record alone fails with."""
    try:
        return encode_record(model.model_validate(parse_json(text)), now_ms)
    except ValidationError as error:
        return validation_error(error)
    except HighwaterError as error:
        return error


def _report(node: HttpHost, topic: str, item: EncodedRecord | HighwaterError, outcome: Outcome) -> dict[str, Any]:
    if isinstance(outcome, HighwaterError):
        return error_body(outcome)
    assert isinstance(item, EncodedRecord)
    return {
        "error_code": 200 if outcome.offset is not None else 202,
        **delivery_fields(node.cluster_id, topic, item, outcome),
    }


def _produce_params(request: web.Request, node: HttpHost) -> tuple[Acks, int]:
    settings = node.settings
    return acks_param(request.query), timeout_param(
        request.query, settings.produce_timeout_ms_default, PRODUCE_TIMEOUT_MAX_MS
    )


def _transactional_id(request: web.Request, acks: Acks) -> str | None:
    """The transactional id a transactional batch names (WRITE on it is required, as Kafka's Produce
    requires); its leader verifies with the id's coordinator that the partition is in the transaction."""
    transactional_id = request.query.get("transactional_id")
    if transactional_id is None:
        return None
    if not transactional_id:
        raise InvalidRequest("transactional_id must not be empty; omit it for a batch outside transactions")
    if acks is not Acks.ALL:
        raise InvalidRequest(f"a transactional batch needs acks=all, not acks={acks.value}")
    require(request, AclOperation.WRITE, Resource.transactional_id(transactional_id))
    return transactional_id


@routes.post(
    TOPIC_PATH + "/records",
    Operation(
        "Produce JSON records: one object, several concatenated, or a chunked stream",
        (
            Reply(
                200,
                "one record: its delivery report; several: one report or error per line",
                {JSON: DeliveryReport, NDJSON: DeliveryReport},
            ),
            Reply(202, "acks=0: accepted before the append", {JSON: DeliveryReport}),
        ),
        (CLUSTER, TOPIC, ACKS, PRODUCE_TIMEOUT),
        Body({JSON: ProduceRecord, NDJSON: ProduceRecord}),
        INTERNAL_TOPIC_REFUSAL,
    ),
)
async def produce_records(request: web.Request) -> web.StreamResponse:
    node = node_of(request)
    topic = request.match_info["topic_name"]
    require_json(request)
    acks, timeout_ms = _produce_params(request, node)
    node.catalog.partition_count(topic)
    check_client_append(topic)
    if "chunked" in request.headers.get("Transfer-Encoding", "").lower():
        return await _produce_stream(request, node, topic, acks, timeout_ms)
    delay_ms = admit_produce(request, request.content_length or 0)
    objects = split_objects(await request.read())
    if not objects:
        raise InvalidRequest('the request body holds no record; send a JSON object such as {"value": {...}}')
    now_ms = wall_clock_ms()
    items = [_encode_object(text, ProduceRecord, now_ms) for text in objects]
    outcomes = await request.app[PRODUCER_KEY].produce(topic, items, acks, timeout_ms)
    if len(objects) == 1:
        outcome = outcomes[0]
        if isinstance(outcome, HighwaterError):
            raise outcome
        report = _report(node, topic, items[0], outcome)
        return await throttled_json(report, delay_ms, status=202 if acks is Acks.ZERO else 200)
    lines = [json.dumps(_report(node, topic, item, outcome)) for item, outcome in zip(items, outcomes)]
    return await throttled(web.Response(body=("\n".join(lines) + "\n").encode(), content_type=NDJSON), delay_ms)


async def _produce_stream(
    request: web.Request, node: HttpHost, topic: str, acks: Acks, timeout_ms: int
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": NDJSON})
    await response.prepare(request)
    producer = request.app[PRODUCER_KEY]
    splitter = JsonObjectSplitter()
    max_object_bytes = node.settings.max_request_bytes
    try:
        async for chunk in request.content.iter_any():
            delay_ms = admit_produce(request, len(chunk))
            objects = splitter.feed(chunk)
            if splitter.pending_bytes > max_object_bytes:
                raise RequestTooLarge(f"a record in the stream is larger than {max_object_bytes} bytes")
            if objects:
                now_ms = wall_clock_ms()
                items = [_encode_object(text, ProduceRecord, now_ms) for text in objects]
                outcomes = await producer.produce(topic, items, acks, timeout_ms)
                lines = [json.dumps(_report(node, topic, i, o)) + "\n" for i, o in zip(items, outcomes)]
                await response.write("".join(lines).encode())
            await pause(delay_ms)
        splitter.finish()
    except HighwaterError as error:
        await response.write((json.dumps(error_body(error)) + "\n").encode())
    await response.write_eof()
    return response


def _entry_id(entry: Any, index: int) -> str | int:
    """The entry's own ``id`` when it is a string or an integer, else its position: echoed in every result."""
    entry_id = entry.get("id") if isinstance(entry, dict) else None
    if isinstance(entry_id, str) or (isinstance(entry_id, int) and not isinstance(entry_id, bool)):
        return entry_id
    return str(index)


@routes.post(
    TOPIC_PATH + "/records:batch",
    Operation(
        lambda limits: f"Produce 1 to {limits.max_batch_entries} records; each entry succeeds or fails on its own",
        (Reply(207, "per-entry results", {JSON: BatchResponse}),),
        (CLUSTER, TOPIC, ACKS, PRODUCE_TIMEOUT),
        Body({JSON: BatchRequest}),
        "A partition's entries are appended in request order, in as many record batches as the "
        "topic's max.message.bytes needs; only an entry larger than that on its own fails (MESSAGE_TOO_LARGE). "
        "A negative partition_id fails its entry with 400 INVALID_REQUEST, as in a path. " + INTERNAL_TOPIC_REFUSAL,
    ),
)
async def produce_batch(request: web.Request) -> web.Response:
    """``records:batch``: every entry gets a success or a failure, answered 207."""
    node = node_of(request)
    topic = request.match_info["topic_name"]
    acks, timeout_ms = _produce_params(request, node)
    delay_ms = admit_produce(request, request.content_length or 0)
    body = await read_model(request, BatchRequest)
    max_entries = node.settings.max_batch_entries
    if not 1 <= len(body.entries) <= max_entries:
        raise InvalidRequest(
            f"records:batch takes 1 to {max_entries} entries, got {len(body.entries)}", max_entries=max_entries
        )
    now_ms = wall_clock_ms()
    ids: list[Any] = []
    items: list[EncodedRecord | HighwaterError] = []
    for index, entry in enumerate(body.entries):
        ids.append(_entry_id(entry, index))
        try:
            items.append(encode_record(BatchEntry.model_validate(entry), now_ms))
        except ValidationError as error:
            items.append(validation_error(error))
        except HighwaterError as error:
            items.append(error)
    outcomes = await request.app[PRODUCER_KEY].produce(topic, items, acks, timeout_ms)
    successes, failures = [], []
    for entry_id, outcome in zip(ids, outcomes):
        if isinstance(outcome, Delivered):
            successes.append({"id": entry_id, **delivered_at(outcome)})
        else:
            failures.append(
                {"id": entry_id, "error_code": outcome.error_code, "error": outcome.name, "message": outcome.message}
            )
    return await throttled_json({"successes": successes, "failures": failures}, delay_ms, status=207)


@routes.post(
    TOPIC_PATH + "/partitions/{partition_id}/batches",
    Operation(
        "Append a client-built Kafka record batch v2 (header, CRC-32C and records validated); at most the topic's "
        "max.message.bytes",
        (
            Reply(200, "appended", {JSON: BatchAppended}),
            Reply(202, "acks=0: accepted before the append", {JSON: BatchAppended}),
        ),
        (CLUSTER, TOPIC, PARTITION, ACKS, PRODUCE_TIMEOUT, TRANSACTIONAL_ID),
        Body({BATCH_CONTENT_TYPE: {"type": "string", "format": "binary", "minLength": 61}}),
        INTERNAL_TOPIC_REFUSAL,
    ),
)
async def produce_binary(request: web.Request) -> web.Response:
    """Append a client-built record batch v2 as is, once its header, CRC and records check out.

    ``log_append_time`` is -1 for a CreateTime batch, as in Kafka's ProduceResponse:
    the time the log noted is then not the records' timestamp.
    """
    entered_ns = time.monotonic_ns()
    node = node_of(request)
    topic = request.match_info["topic_name"]
    partition = partition_param(request)
    require_binary(request)
    acks, timeout_ms = _produce_params(request, node)
    transactional_id = _transactional_id(request, acks)
    check_partition(node, topic, partition)
    check_client_append(topic)
    batch = await request.read()
    delay_ms = admit_produce(request, len(batch))
    if not batch:
        raise CorruptRecord("the request body is empty; it must be one record batch v2")
    check_batch_size(topic, batch, node.catalog.max_message_bytes(topic))
    checked = CheckedBatches.after_validation(batch, validate_produced_batches(batch))
    if acks is Acks.ZERO:
        request.app[PRODUCER_KEY].append_in_background(topic, partition, [checked], timeout_ms)
        body: dict[str, Any] = {
            "partition_id": partition,
            "base_offset": None,
            "last_offset": None,
            "log_append_time": -1,
        }
        return await throttled_json(body, delay_ms, status=202)
    result = await node.router.produce(
        topic, partition, checked, acks, timeout_ms, forward=False, transactional_id=transactional_id
    )
    trace(
        "produce.answered",
        topic=topic,
        partition=partition,
        offset=result.last_offset,
        entered_ns=entered_ns,
        received_ns=request.get(RECEIVED_NS_KEY),
    )
    body = {
        "cluster_id": node.cluster_id,
        "topic_name": topic,
        "partition_id": partition,
        "base_offset": result.base_offset,
        "last_offset": result.last_offset,
        "log_append_time": (result.log_append_time_ms if checked.headers[0].timestamp_type == LOG_APPEND_TIME else -1),
    }
    return await throttled_json(body, delay_ms)
