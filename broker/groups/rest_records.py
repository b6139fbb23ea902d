"""Record batches as REST Proxy v2 records, pure: ``{"topic", "key", "value", "partition", "offset"}``.

``binary`` gives keys and values as base64; ``json`` parses them as JSON and falls back
to the UTF-8 text (then base64) for bytes that are not JSON, so a stray record never
makes a whole read fail.

Invariant (the high-watermark rule, applied again here whatever the fetch returned):
no record at or above ``high_watermark`` is rendered, and ``next_offset`` never passes
it. Records below ``start`` (a batch may begin before it) are skipped.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from broker.record.committed import AbortedFilter
from broker.record.decode import iter_batches_with_records


@dataclass(frozen=True, slots=True)
class RenderedSpan:
    records: list[dict[str, Any]]
    next_offset: int
    """Where the next read of the partition starts: after the last record rendered, or past
    batches consumed whole (control batches); equal to ``start`` when nothing was consumed."""
    size_bytes: int
    """Sum of the rendered records' key and value sizes (Confluent's ``max_bytes`` measure)."""
    full: bool = False
    """Rendering stopped at a record below the HW that did not fit the budget: the answer can take no more."""


def _render(data: bytes | None, fmt: str) -> Any:
    if data is None:
        return None
    if fmt == "json":
        try:
            return json.loads(data)
        except ValueError:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                pass
    return base64.b64encode(data).decode("ascii")


def render_span(
    topic: str,
    partition: int,
    data: bytes,
    start: int,
    high_watermark: int,
    fmt: str,
    budget_bytes: int,
    *,
    first_always_fits: bool = True,
    aborted: Iterable[tuple[int, int]] | None = None,
) -> RenderedSpan:
    """Records of ``data`` in ``[start, high_watermark)`` while their sizes fit ``budget_bytes``.

    With ``aborted`` (``read_committed``: ``high_watermark`` is then the last stable offset)
    an aborted transaction's batches are passed over like control batches: no record, but
    the next offset moves past them, so a read that finds nothing else still moves on.

    With ``first_always_fits`` (the answer has no record yet) the first record fits whatever
    its size, so a large record cannot stall a reader; without it (records of other partitions
    or rounds are already in the answer) nothing past the budget is taken, so an answer never
    exceeds ``max_bytes`` except by that one first record.
    """
    rendered: list[dict[str, Any]] = []
    next_offset = start
    used = 0
    rule = AbortedFilter(aborted) if aborted is not None else None
    for header, records in iter_batches_with_records(data):
        if rule.keeps(header) if rule is not None else not header.is_control:
            for record in records:
                if record.offset < start:
                    continue
                if record.offset >= high_watermark:
                    return RenderedSpan(rendered, next_offset, used)
                size = len(record.key or b"") + len(record.value or b"")
                if (rendered or not first_always_fits) and used + size > budget_bytes:
                    return RenderedSpan(rendered, next_offset, used, full=True)
                rendered.append(
                    {
                        "topic": topic,
                        "key": _render(record.key, fmt),
                        "value": _render(record.value, fmt),
                        "partition": partition,
                        "offset": record.offset,
                    }
                )
                used += size
                next_offset = record.offset + 1
        if header.next_offset > high_watermark:
            break
        next_offset = max(next_offset, header.next_offset)
    return RenderedSpan(rendered, next_offset, used)
