"""Authorization as handlers and the security middleware use it: the request's principal against the ACLs.

``require`` raises the resource type's 403 (``TOPIC_AUTHORIZATION_FAILED`` …) and
writes an audit event; ``may`` only answers, for listings that show what the
principal may DESCRIBE and nothing else. Both ask the node's ``NodeSecurity``, which
allows everything but the broker-only routes when authentication is ``none``.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from aiohttp import web

from broker.errors import (
    ClusterAuthorizationFailed,
    GroupAuthorizationFailed,
    HighwaterError,
    TopicAuthorizationFailed,
    UnknownTopic,
)
from broker.errors.transactions import TransactionalIdAuthorizationFailed
from broker.security.acl import AclOperation, Resource, ResourceType
from broker.security.principal import ANONYMOUS, Principal
from broker.server.params import NODE_KEY

audit = structlog.get_logger("highwater.audit")

PRINCIPAL_KEY = web.RequestKey("principal", Principal)
CLIENT_HOST_KEY = web.RequestKey("client_host", str)

_REFUSALS: dict[ResourceType, type[HighwaterError]] = {
    ResourceType.TOPIC: TopicAuthorizationFailed,
    ResourceType.GROUP: GroupAuthorizationFailed,
    ResourceType.CLUSTER: ClusterAuthorizationFailed,
    ResourceType.TRANSACTIONAL_ID: TransactionalIdAuthorizationFailed,
}


def principal_of(request: web.Request) -> Principal:
    return request.get(PRINCIPAL_KEY, ANONYMOUS)


def client_host(request: web.Request) -> str:
    return request.get(CLIENT_HOST_KEY) or request.remote or "unknown"


def may(request: web.Request, operation: AclOperation, resource: Resource) -> bool:
    node = request.app[NODE_KEY]
    return bool(node.security.decide(principal_of(request), client_host(request), operation, resource))


def require(
    request: web.Request, operation: AclOperation, resource: Resource, *, hidden_as_missing: bool = False
) -> None:
    """Raise unless the principal may do ``operation`` on ``resource``.

    With ``hidden_as_missing`` a principal that may not DESCRIBE the topic gets the
    answer a missing topic gets, so a refusal does not tell it the topic exists.
    """
    node = request.app[NODE_KEY]
    principal, host = principal_of(request), client_host(request)
    decision = node.security.decide(principal, host, operation, resource)
    if decision:
        return
    audit.warning(
        "audit.denied",
        principal=str(principal),
        source=host,
        method=request.method,
        path=request.path,
        operation=operation.value,
        resource_type=resource.type.value,
        resource_name=resource.name,
        reason=decision.reason,
    )
    hidden = hidden_as_missing and resource.type is ResourceType.TOPIC
    if hidden and not node.security.decide(principal, host, AclOperation.DESCRIBE, resource):
        raise UnknownTopic(f"topic '{resource.name}' does not exist", topic_name=resource.name)
    refusal = _REFUSALS[resource.type]
    raise refusal(
        f"{principal} is not authorized to {operation.value} {resource.type.value.lower()} '{resource.name}'",
        operation=operation.value,
        resource_name=resource.name,
    )


def describable_topics(request: web.Request) -> Callable[[str], bool]:
    """A predicate: may the request's principal DESCRIBE this topic (what listings and lag rows keep)."""
    return lambda name: may(request, AclOperation.DESCRIBE, Resource.topic(name))
