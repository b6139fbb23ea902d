"""Describe- and AlterClientQuotas (48, 49): the HTTP quota routes' per-user byte rates, over the Kafka door.

highwater meters ``producer_byte_rate`` and ``consumer_byte_rate`` per user (the
principal ``User:<name>``), kept in the store the ``…/quotas`` routes use. So Kafka's
``user`` entity with a name is what can be set; a default user (no name), the
``client-id`` and ``ip`` entities and the other keys (``request_percentage`` ...) are
refused with ``INVALID_REQUEST`` naming them, and match nothing when described.
A rate must be a whole number of bytes per second above 0, as at the HTTP route;
removing both rates removes the user's quota.

Kafka's rules: DESCRIBE_CONFIGS on the cluster to describe, ALTER_CONFIGS to alter,
else ``CLUSTER_AUTHORIZATION_FAILED``. ``validate_only`` checks and changes nothing; a
change is applied here before the answer and audited as the routes audit it.
"""

from __future__ import annotations

import math
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import f64

from broker.errors import HighwaterError
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation
from broker.security.quota_limits import LIMIT_FIELDS, QuotaLimits, limits_to_wire

DESCRIBE = 48
ALTER = 49
USER_ENTITY = "user"
USER_PREFIX = "User:"
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


def _user_matches(components: tuple[Any, ...], user: str) -> bool:
    """Whether the user's quota is described by a request with these filter components."""
    for component in components:
        if component.entity_type != USER_ENTITY:
            return False
        if component.match_type == MATCH_EXACT and component.match != user:
            return False
        if component.match_type == MATCH_DEFAULT:
            return False
    return True


async def describe(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    response_class = shape(DESCRIBE, version, "DescribeClientQuotasResponse")
    refused = authz.cluster_refusal(context.node, AclOperation.DESCRIBE_CONFIGS)
    if refused is not None:
        return build(
            response_class, throttle_time=NO_THROTTLE, error_code=refused[0], error_message=refused[1], entries=None
        )
    quotas = await context.node.security.records.quotas()
    entry_class = shape(DESCRIBE, version, "EntryData")
    entity_class = shape(DESCRIBE, version, "EntityData")
    value_class = shape(DESCRIBE, version, "ValueData")
    entries = []
    for principal in sorted(quotas):
        user = principal.removeprefix(USER_PREFIX)
        if not principal.startswith(USER_PREFIX) or not _user_matches(request.body.components, user):
            continue
        values = tuple(
            build(value_class, key=key, value=f64(float(rate)))
            for key, rate in limits_to_wire(quotas[principal]).items()
            if rate is not None
        )
        entity = (build(entity_class, entity_type=USER_ENTITY, entity_name=user),)
        entries.append(build(entry_class, entity=entity, values=values))
    return build(
        response_class, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, entries=tuple(entries)
    )


async def alter(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    entry_class = shape(ALTER, version, "EntryData")
    entity_class = shape(ALTER, version, "EntityData")
    refused = authz.cluster_refusal(context.node, AclOperation.ALTER_CONFIGS)
    results = []
    changed = False
    for entry in request.body.entries:
        message: str | None
        if refused is not None:
            code, message = refused
        else:
            code, message = await _alter(context, entry, request.body.validate_only)
            changed = changed or (code == ErrorCode.none and not request.body.validate_only)
        entity = tuple(build(entity_class, entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity)
        results.append(build(entry_class, error_code=code, error_message=message, entity=entity))
    if changed:
        await context.node.security.catch_up()
    return build(shape(ALTER, version, "AlterClientQuotasResponse"), throttle_time=NO_THROTTLE, entries=tuple(results))


async def _alter(context: RequestContext, entry: Any, validate_only: bool) -> tuple[ErrorCode, str | None]:
    entities = [(e.entity_type, e.entity_name) for e in entry.entity]
    if len(entities) != 1 or entities[0][0] != USER_ENTITY or not entities[0][1]:
        return ErrorCode.invalid_request, f"highwater keeps quotas per named user only, not for {entities}"
    principal = USER_PREFIX + str(entities[0][1])
    store = context.node.security.records
    rates: dict[str, int | None] = (
        dict(limits_to_wire(limit)) if (limit := (await store.quotas()).get(principal)) else {}
    )
    for op in entry.ops:
        if op.key not in LIMIT_FIELDS:
            return (
                ErrorCode.invalid_request,
                f"quota {op.key!r} is not supported; highwater meters {', '.join(LIMIT_FIELDS)}",
            )
        if op.remove:
            rates[op.key] = None
        elif not (math.isfinite(op.value) and op.value == int(op.value) and op.value > 0):
            return (
                ErrorCode.invalid_request,
                f"{op.key} must be a whole number of bytes per second above 0, got {op.value}",
            )
        else:
            rates[op.key] = int(op.value)
    remove = all(rates.get(field) is None for field in LIMIT_FIELDS)
    try:
        limits = None if remove else QuotaLimits(rates.get("producer_byte_rate"), rates.get("consumer_byte_rate"))
    except HighwaterError as error:
        return ErrorCode.invalid_request, error.message
    if validate_only:
        return ErrorCode.none, None
    if limits is None:
        await store.remove_quota(principal)
        authz.audit_change("audit.quota_removed", quota_principal=principal)
    else:
        await store.set_quota(principal, limits)
        authz.audit_change("audit.quota_set", quota_principal=principal, **limits_to_wire(limits))
    return ErrorCode.none, None
