"""Schemathesis hooks for the highwater document, loaded through ``hooks`` in ``schemathesis.toml``.

The batches endpoint takes ``application/vnd.kafka.batch.v2``, raw bytes schemathesis
has no serializer for: they are sent as generated, so the broker sees arbitrary bytes
there (structured batch fuzzing lives in ``test_binary_batches``).

Creating thousands of partitions is the cost of the controller's placement and every
broker opening logs, not part of the HTTP contract: a generated count is folded into
1..8 so a short run stays short, while counts above the limit still go out unchanged
and must be refused.
"""

from __future__ import annotations

from typing import Any

import schemathesis

from broker.cluster.placement import MAX_PARTITIONS_PER_TOPIC

CREATE_TOPIC = "/v3/clusters/{cluster_id}/topics"
FOLDED_PARTITIONS = 8


@schemathesis.serializer("application/vnd.kafka.batch.v2")
def record_batch(ctx: schemathesis.SerializationContext, value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", "surrogatepass")


@schemathesis.hook
def map_case(context: schemathesis.HookContext, case: schemathesis.Case) -> schemathesis.Case:
    body = case.body
    creates = (case.operation.path, case.method.upper()) in (
        (CREATE_TOPIC, "POST"),
        (CREATE_TOPIC + "/{topic_name}", "PATCH"),
    )
    if creates and isinstance(body, dict):
        count = body.get("partitions_count")
        # JSON Schema's integer includes 2418.0, which the broker accepts as 2418 partitions.
        if (
            isinstance(count, int | float)
            and not isinstance(count, bool)
            and FOLDED_PARTITIONS < count <= MAX_PARTITIONS_PER_TOPIC
        ):
            body["partitions_count"] = int(count) % FOLDED_PARTITIONS + 1
    return case
