"""Reading a partition: ``GET …/topics/{t}/partitions/{p}/records``.

Query: ``offset`` (default: the log start offset), ``max_records`` (JSON only, default
500 like Kafka's ``max.poll.records``), ``max_bytes`` (default ``fetch_max_bytes_default``),
``timeout_ms`` (long-poll, default 0, at most ``fetch_max_wait_ms``), ``format``
(``binary`` default, ``string``, ``json``; see ``json_records``), ``isolation``
(``read_uncommitted`` default, or ``read_committed``: up to the last stable offset,
aborted transactions' records dropped).

The HW rule is enforced twice: the node returns only whole batches below the high
watermark (the last stable offset for ``read_committed``), and this layer drops any
record at or above the bound it was told about, so a reader can never see an offset
that might still be truncated away, nor (``read_committed``) one whose transaction is
undecided.

Batches are whole, so the first one may start before ``offset``: its earlier records are
skipped. ``next_offset`` is where the next read should start: after the last record
returned, or past a batch consumed entirely (control batches and compacted gaps
included); it never moves when nothing was returned. A record larger than
``max_bytes`` still comes back whole (the node returns at least one batch), so a
reader never loops on empty answers. A node fetch ends at a segment boundary; this
layer fetches on (``fetch_span``) so a page is as full as its limits allow.

With ``Accept: application/vnd.kafka.batch.v2`` the body is the raw batches and the
offsets come in ``X-High-Watermark``, ``X-Last-Stable-Offset``, ``X-Log-Start-Offset``,
``X-Log-End-Offset`` and ``X-Next-Offset``; a ``read_committed`` answer lists the aborted
transactions with records in it in ``X-Aborted-Transactions`` (``pid:first_offset,…``),
and the reader drops their records itself (``broker.record.committed``), as a Kafka
client does.

A principal with a ``consumer_byte_rate`` quota is checked before the read (refused only
when it already owes more than the longest throttle) and metered after it with the
bytes of the record batches served, whatever the format, so rendering JSON does not
change a consumer's share; the answer is then delayed by the throttle (``throttling``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from broker.errors import InvalidRequest
from broker.isolation import Isolation
from broker.record.committed import AbortedFilter, format_aborted
from broker.record.decode import iter_batches_with_records
from broker.record.header import iter_batches, next_offset_after
from broker.server.api_routes import CLUSTER, JSON, PARTITION, TOPIC, Operation, Reply, RouteTable, query_param
from broker.server.authorization import principal_of
from broker.server.json_records import ReadFormat, render_record
from broker.server.params import BATCH_CONTENT_TYPE, INT64_MAX, node_of, partition_param, query_int, wants_batches
from broker.server.responses import ReadResponse
from broker.server.throttling import check_fetch, record_fetch, throttled, throttled_json

if TYPE_CHECKING:
    from broker.server.host import HttpHost

DEFAULT_MAX_RECORDS = 500
MAX_RECORDS_LIMIT = 100_000
routes = RouteTable()


def read_format(text: str | None) -> ReadFormat:
    try:
        return ReadFormat((text or ReadFormat.BINARY.value).lower())
    except ValueError:
        choices = ", ".join(item.value for item in ReadFormat)
        raise InvalidRequest(f"format must be one of {choices}, got {text!r}", parameter="format") from None


def read_isolation(text: str | None) -> Isolation:
    try:
        return Isolation.parse(text or Isolation.READ_UNCOMMITTED.value)
    except ValueError as error:
        raise InvalidRequest(str(error), parameter="isolation") from None


def records_to_json(
    topic: str,
    partition: int,
    data: bytes,
    offset: int,
    high_watermark: int,
    max_records: int,
    fmt: ReadFormat,
    aborted: tuple[tuple[int, int], ...] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Records of ``data`` from ``offset`` below ``high_watermark``, at most ``max_records``; and the next offset.

    ``high_watermark`` is the reader's bound (the LSO for ``read_committed``); with ``aborted``
    (``read_committed``) the records of those aborted transactions are skipped like control records.
    """
    rule = AbortedFilter(aborted) if aborted is not None else None
    rendered: list[dict[str, Any]] = []
    next_offset = offset
    for header, records in iter_batches_with_records(data):
        if rule.keeps(header) if rule is not None else not header.is_control:
            for record in records:
                if record.offset < offset:
                    continue
                if record.offset >= high_watermark or len(rendered) == max_records:
                    return rendered, next_offset
                rendered.append(render_record(topic, partition, record, fmt))
                next_offset = record.offset + 1
        if header.next_offset > high_watermark:
            break
        next_offset = max(next_offset, header.next_offset)
    return rendered, next_offset


def whole_batches_within(data: bytes, budget_bytes: int) -> bytes:
    """The leading whole batches of ``data`` that fit in ``budget_bytes``."""
    end = 0
    for header in iter_batches(data, check_crc=False):
        if end + header.size > budget_bytes:
            break
        end += header.size
    return data[:end]


@dataclass(frozen=True, slots=True)
class Span:
    data: bytes
    next_offset: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    aborted: tuple[tuple[int, int], ...]
    """For ``read_committed``: the aborted transactions with records in ``data``, from every fetch of the span."""


async def fetch_span(
    node: HttpHost,
    topic: str,
    partition: int,
    offset: int,
    max_bytes: int,
    max_records: int,
    timeout_ms: int,
    *,
    forward: bool,
    isolation: Isolation = Isolation.READ_UNCOMMITTED,
) -> Span:
    """Fetch until ``max_bytes``, about ``max_records`` offsets, or the high watermark.

    One node fetch stops at a segment boundary (as Kafka's does), which would hand a
    reader a short page while more is visible. Only the first fetch may long-poll and
    only its first batch may exceed ``max_bytes``; later batches are taken whole or not.
    ``forward``: JSON readers may ask any broker; binary readers (the client library)
    are told who leads instead (421), so they fetch from the leader directly.
    """
    result = await node.router.fetch(
        topic, partition, offset, max_bytes, timeout_ms, forward=forward, isolation=isolation
    )
    chunks = [result.data]
    aborted = set(result.aborted)
    total_bytes = len(result.data)
    next_offset = next_offset_after(result.data, offset)
    while result.data and total_bytes < max_bytes and next_offset - offset < max_records:
        if next_offset >= isolation.visible_end(result.high_watermark, result.last_stable_offset):
            break
        result = await node.router.fetch(
            topic, partition, next_offset, max_bytes - total_bytes, 0, forward=forward, isolation=isolation
        )
        data = whole_batches_within(result.data, max_bytes - total_bytes)
        if not data:
            break
        chunks.append(data)
        aborted.update(result.aborted)
        total_bytes += len(data)
        next_offset = next_offset_after(data, next_offset)
    return Span(
        b"".join(chunks),
        next_offset,
        result.high_watermark,
        result.last_stable_offset,
        result.log_start_offset,
        result.log_end_offset,
        tuple(sorted(aborted, key=lambda pair: pair[1])),
    )


def count_client_read(request: web.Request, topic: str, offset: int, next_offset: int, size: int) -> None:
    """Count a client's read in the console's traffic where it entered: the offsets its answer
    moves the reader past. A read from a broker (one it forwards for its own client, counted
    there, or its coordinator's read to date a lag) is no client's (``broker.console.activity``)."""
    if size and not principal_of(request).is_broker:
        node_of(request).console.traffic.fetched(topic, max(0, next_offset - offset), size)


@routes.get(
    "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records",
    Operation(
        "Read records below the high watermark",
        (
            Reply(
                200,
                "records; with Accept: application/vnd.kafka.batch.v2 the raw batches, offsets "
                "in X-High-Watermark, X-Log-Start-Offset, X-Log-End-Offset, X-Next-Offset",
                {JSON: ReadResponse, BATCH_CONTENT_TYPE: {"type": "string"}},
            ),
        ),
        (
            CLUSTER,
            TOPIC,
            PARTITION,
            query_param(
                "offset",
                {"type": "integer", "minimum": 0, "maximum": INT64_MAX, "format": "int64"},
                "first offset to read; default the log start offset",
            ),
            query_param(
                "max_records",
                {"type": "integer", "minimum": 1, "maximum": MAX_RECORDS_LIMIT, "default": DEFAULT_MAX_RECORDS},
                "JSON form only",
            ),
            query_param(
                "max_bytes",
                lambda limits: {"type": "integer", "minimum": 1, "maximum": limits.max_request_bytes},
                "soft limit; a larger first record is returned whole",
            ),
            query_param(
                "timeout_ms",
                lambda limits: {"type": "integer", "minimum": 0, "maximum": limits.fetch_max_wait_ms, "default": 0},
                "long-poll for records",
            ),
            query_param(
                "format",
                {"enum": [item.value for item in ReadFormat], "default": ReadFormat.BINARY.value},
                "rendering of keys and values",
            ),
            query_param(
                "isolation",
                {"enum": [item.value for item in Isolation], "default": Isolation.READ_UNCOMMITTED.value},
                "read_committed: up to the last stable offset, aborted transactions' records dropped",
            ),
        ),
    ),
)
async def read_records(request: web.Request) -> web.StreamResponse:
    node = node_of(request)
    topic = request.match_info["topic_name"]
    partition = partition_param(request)
    settings = node.settings
    query = request.query
    offset = query_int(query, "offset", None)
    max_records = query_int(query, "max_records", DEFAULT_MAX_RECORDS, minimum=1, maximum=MAX_RECORDS_LIMIT)
    max_bytes = query_int(
        query, "max_bytes", settings.fetch_max_bytes_default, minimum=1, maximum=settings.max_request_bytes
    )
    timeout_ms = query_int(query, "timeout_ms", 0, maximum=settings.fetch_max_wait_ms)
    fmt = read_format(query.get("format"))
    isolation = read_isolation(query.get("isolation"))
    if offset is None:
        offset = (await node.describer.describe_partition(topic, partition)).log_start_offset
    assert max_records is not None and max_bytes is not None and timeout_ms is not None
    raw = wants_batches(request)
    check_fetch(request)
    span = await fetch_span(
        node,
        topic,
        partition,
        offset,
        max_bytes,
        MAX_RECORDS_LIMIT if raw else max_records,
        timeout_ms,
        forward=not raw,
        isolation=isolation,
    )
    delay_ms = record_fetch(request, len(span.data))
    if raw:
        count_client_read(request, topic, offset, span.next_offset, len(span.data))
        headers = {
            "Content-Type": BATCH_CONTENT_TYPE,
            "X-High-Watermark": str(span.high_watermark),
            "X-Last-Stable-Offset": str(span.last_stable_offset),
            "X-Log-Start-Offset": str(span.log_start_offset),
            "X-Log-End-Offset": str(span.log_end_offset),
            "X-Next-Offset": str(span.next_offset),
        }
        if isolation.committed:
            headers["X-Aborted-Transactions"] = format_aborted(span.aborted)
        return await throttled(web.Response(body=span.data, headers=headers), delay_ms)
    bound = isolation.visible_end(span.high_watermark, span.last_stable_offset)
    aborted = span.aborted if isolation.committed else None
    data, next_offset = records_to_json(topic, partition, span.data, offset, bound, max_records, fmt, aborted)
    count_client_read(request, topic, offset, next_offset, len(span.data))
    return await throttled_json(
        {
            "data": data,
            "next_offset": next_offset,
            "high_watermark": span.high_watermark,
            "last_stable_offset": span.last_stable_offset,
            "log_start_offset": span.log_start_offset,
        },
        delay_ms,
    )
