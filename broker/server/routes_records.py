"""Reading a partition: ``GET …/topics/{t}/partitions/{p}/records``.

Query: ``offset`` (default: the log start offset), ``max_records`` (JSON only, default
500 like Kafka's ``max.poll.records``), ``max_bytes`` (default ``fetch_max_bytes_default``),
``timeout_ms`` (long-poll, default 0, at most ``fetch_max_wait_ms``), ``format``
(``binary`` default, ``string``, ``json``; see ``json_records``).

The HW rule is enforced twice: the node returns only whole batches below the high
watermark, and this layer drops any record at or above the HW it was told about, so a
reader can never see an offset that might still be truncated away.

Batches are whole, so the first one may start before ``offset``: its earlier records are
skipped. ``next_offset`` is where the next read should start: after the last record
returned, or past a batch consumed entirely (control batches and compacted gaps
included); it never moves when nothing was returned. A record larger than
``max_bytes`` still comes back whole (the node returns at least one batch), so a
reader never loops on empty answers.

With ``Accept: application/vnd.kafka.batch.v2`` the body is the raw batches and the
offsets come in ``X-High-Watermark``, ``X-Log-Start-Offset``, ``X-Log-End-Offset`` and
``X-Next-Offset``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from broker.errors import InvalidRequest
from broker.record.codec import iter_batches_with_records
from broker.record.header import iter_batches
from broker.server.json_records import ReadFormat, render_record
from broker.server.params import BATCH_CONTENT_TYPE, node_of, partition_param, query_int, wants_batches

DEFAULT_MAX_RECORDS = 500
MAX_RECORDS_LIMIT = 100_000


def read_format(text: str | None) -> ReadFormat:
    try:
        return ReadFormat((text or ReadFormat.BINARY.value).lower())
    except ValueError:
        choices = ", ".join(item.value for item in ReadFormat)
        raise InvalidRequest(f"format must be one of {choices}, got {text!r}", parameter="format") from None


def records_to_json(
    topic: str, partition: int, data: bytes, offset: int, high_watermark: int, max_records: int, fmt: ReadFormat
) -> tuple[list[dict[str, Any]], int]:
    """Records of ``data`` from ``offset`` below ``high_watermark``, at most ``max_records``; and the next offset."""
    rendered: list[dict[str, Any]] = []
    next_offset = offset
    for header, records in iter_batches_with_records(data):
        if not header.is_control:
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


def raw_next_offset(data: bytes, offset: int) -> int:
    next_offset = offset
    for header in iter_batches(data, check_crc=False):
        next_offset = header.next_offset
    return next_offset


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
    if offset is None:
        offset = node.describe_partition(topic, partition).log_start_offset
    assert max_records is not None and max_bytes is not None and timeout_ms is not None
    result = await node.fetch(topic, partition, offset, max_bytes, timeout_ms)
    if wants_batches(request):
        headers = {
            "Content-Type": BATCH_CONTENT_TYPE,
            "X-High-Watermark": str(result.high_watermark),
            "X-Log-Start-Offset": str(result.log_start_offset),
            "X-Log-End-Offset": str(result.log_end_offset),
            "X-Next-Offset": str(raw_next_offset(result.data, offset)),
        }
        return web.Response(body=result.data, headers=headers)
    data, next_offset = records_to_json(topic, partition, result.data, offset, result.high_watermark, max_records, fmt)
    return web.json_response(
        {
            "data": data,
            "next_offset": next_offset,
            "high_watermark": result.high_watermark,
            "log_start_offset": result.log_start_offset,
        }
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records", read_records)
