"""Runs one handler as the connection's principal: topics authorized, bytes metered against its quota.

The listener calls ``answer`` for every request of an authenticated connection.
Authorization is ``authz``'s (the per-topic rules of Produce, Fetch, ListOffsets,
OffsetForLeaderEpoch and Metadata; any other API's handler calls ``authz.authorized``
itself). Quotas are the HTTP door's meters (``NodeSecurity.quotas``, one per
principal and direction), so bytes produced or fetched through either door count
against the same byte rate:

- Produce meters the record bytes of the authorized partitions, Fetch the record
  bytes it answers, as Kafka meters them;
- Kafka never refuses for a quota: the answer says ``throttle_time_ms`` and the
  listener then reads nothing more from that connection for that long (Kafka's
  channel muting, KIP-219), so a client that ignores the field is slowed all the same.

A refused topic of an acks=0 produce closes the connection after the rest is
appended, as any failed acks=0 produce does (Kafka's rule: it is the only signal).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from typing import Any

from kio.static.primitive import i32Timedelta

from broker.kafka import authz
from broker.kafka.authn import SESSION
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import CloseConnection, Handler, KafkaNode, RequestContext
from broker.kafka.metadata import requested_topics
from broker.security.acl import AclOperation, Resource
from broker.security.quota import Direction, limit_of

PRODUCE = 0
FETCH = 1
METADATA = 3


async def answer(handler: Handler, context: RequestContext, request: DecodedRequest) -> tuple[Any | None, int]:
    """The handler's response with refusals and ``throttle_time`` in it, and the throttle (ms) owed."""
    node = context.node
    api_key, version = request.prefix.api_key, request.prefix.api_version
    rule = authz.RULES.get(api_key)
    refused: authz.Refused = []
    if rule is not None:
        body, refused = authz.split(rule, request.body, _topic_check(node, rule.operation))
        if refused:
            request = dataclasses.replace(request, body=body)
    response = await handler(context, request)
    if rule is not None and response is None and refused:
        raise CloseConnection(f"acks=0 produce to topics it may not write: {[name for name, _ in refused]}")
    if rule is not None and response is not None:
        response = authz.with_refusals(rule, api_key, version, response, refused)
    if api_key == METADATA and response is not None:
        listed_all = requested_topics(version, request.body.topics) is None
        response = authz.metadata_visible(response, listed_all, _topic_check(node, AclOperation.DESCRIBE))
    throttle_ms = _metered(node, api_key, request, response)
    if throttle_ms > 0 and response is not None and hasattr(response, "throttle_time"):
        throttle = i32Timedelta.parse(datetime.timedelta(milliseconds=throttle_ms))
        response = dataclasses.replace(response, throttle_time=throttle)
    return response, throttle_ms


def _topic_check(node: KafkaNode, operation: AclOperation) -> Callable[[str], bool]:
    return lambda topic: authz.authorized(node, operation, Resource.topic(topic))


def _metered(node: KafkaNode, api_key: int, request: DecodedRequest, response: Any | None) -> int:
    if api_key == PRODUCE:
        sent = request.body.topic_data
        return _throttle(node, "produce", sum(len(p.records or b"") for t in sent for p in t.partition_data))
    if api_key == FETCH and response is not None:
        answered = response.responses
        return _throttle(node, "fetch", sum(len(p.records or b"") for t in answered for p in t.partitions))
    return 0


def _throttle(node: KafkaNode, direction: Direction, nbytes: int) -> int:
    """Meter ``nbytes`` for the session's principal; the throttle it owes (0 without a quota)."""
    quotas = node.security.view.snapshot.quotas
    session = SESSION.get(None)
    if not quotas or session is None or session.principal is None:
        return 0
    principal = str(session.principal)
    limits = quotas.get(principal)
    limit = limit_of(limits, direction) if limits is not None else None
    if limit is None:
        return 0
    security = node.security
    return security.quotas.record(principal, direction, limit, nbytes, security.now_ms()).delay_ms
