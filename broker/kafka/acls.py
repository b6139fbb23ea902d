"""DescribeAcls, CreateAcls and DeleteAcls (29-31): the ACL routes' operations over the Kafka door.

Each Kafka code is translated to the wire name the HTTP routes take, and the binding or
filter is then read by the same ``acl_codec`` and kept in the same ``SecurityStore``, so
both doors accept and refuse the same ACLs (a CLUSTER ACL must name ``kafka-cluster``, a
principal is ``User:<name>`` ...: ``INVALID_REQUEST`` with the HTTP route's message).
What highwater has no use for (the DELEGATION_TOKEN and USER resource types, the
CLUSTER_ACTION, IDEMPOTENT_WRITE and token operations) cannot be created
(``INVALID_REQUEST`` naming it) and matches nothing in a filter.

Kafka's permission rules, as the HTTP routes': DESCRIBE on the cluster to list, ALTER to
create or delete, else ``CLUSTER_AUTHORIZATION_FAILED``. A change is applied by this
broker before it answers (``NodeSecurity.catch_up``) and audited as the routes audit it.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import groupby
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from broker.errors import InvalidAcl
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclBinding, AclFilter, AclOperation
from broker.security.acl_codec import binding_from_wire, binding_to_wire, filter_from_wire

DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31
ANY = "ANY"
RESOURCE_TYPES = {1: ANY, 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID"}
PATTERN_TYPES = {1: ANY, 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
OPERATIONS = {
    1: ANY,
    2: "ALL",
    3: "READ",
    4: "WRITE",
    5: "CREATE",
    6: "DELETE",
    7: "ALTER",
    8: "DESCRIBE",
    10: "DESCRIBE_CONFIGS",
    11: "ALTER_CONFIGS",
}
PERMISSIONS = {1: ANY, 2: "DENY", 3: "ALLOW"}
FIELDS: tuple[tuple[str, str, Mapping[int, str]], ...] = (
    ("resource_type", "resource type", RESOURCE_TYPES),
    ("pattern_type", "pattern type", PATTERN_TYPES),
    ("operation", "operation", OPERATIONS),
    ("permission", "permission type", PERMISSIONS),
)
"""(wire field, what Kafka calls it, Kafka code -> wire name) of each enum field."""


def _code(names: Mapping[int, str], name: str) -> i8:
    return i8(next(code for code, known in names.items() if known == name))


def _wire(codes: Mapping[str, int], *, creating: bool) -> dict[str, str]:
    """The wire names of Kafka's codes; ``InvalidAcl`` for one highwater has no use for (``LookupError``
    instead in a filter: it matches nothing), and for ANY/MATCH in a creation."""
    wire = {}
    for field, what, names in FIELDS:
        name = names.get(codes[field])
        if name is None:
            if creating:
                raise InvalidAcl(f"{what} {codes[field]} is not supported by highwater")
            raise LookupError(field)
        if creating and name in (ANY, "MATCH"):
            raise InvalidAcl(f"a created ACL needs a concrete {what}, not {name}")
        wire[field] = name
    return wire


def _filter(body: Any) -> AclFilter:
    """A request's filter; ``LookupError`` when it names a value highwater has none of."""
    codes = {
        "resource_type": body.resource_type_filter,
        "pattern_type": body.pattern_type_filter,
        "operation": body.operation,
        "permission": body.permission_type,
    }
    params = _wire(codes, creating=False)
    for field, value in (
        ("resource_name", body.resource_name_filter),
        ("principal", body.principal_filter),
        ("host", body.host_filter),
    ):
        if value is not None:
            params[field] = value
    return filter_from_wire(params)


async def describe_acls(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    response_class = shape(DESCRIBE_ACLS, version, "DescribeAclsResponse")
    refused = authz.cluster_refusal(context.node, AclOperation.DESCRIBE)
    if refused is not None:
        return build(
            response_class, throttle_time=NO_THROTTLE, error_code=refused[0], error_message=refused[1], resources=()
        )
    try:
        bindings = await context.node.security.records.acls(_filter(request.body))
    except LookupError:
        bindings = []
    except InvalidAcl as error:
        return build(
            response_class,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.invalid_request,
            error_message=error.message,
            resources=(),
        )
    return build(
        response_class,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        resources=_resources(version, bindings),
    )


def _resources(version: int, bindings: list[AclBinding]) -> tuple[Any, ...]:
    resource_class = shape(DESCRIBE_ACLS, version, "DescribeAclsResource")
    description_class = shape(DESCRIBE_ACLS, version, "AclDescription")

    def pattern(binding: AclBinding) -> tuple[str, str, str]:
        return (binding.resource_type, binding.resource_name, binding.pattern_type)

    return tuple(
        build(
            resource_class,
            resource_type=_code(RESOURCE_TYPES, resource_type),
            resource_name=resource_name,
            pattern_type=_code(PATTERN_TYPES, pattern_type),
            acls=tuple(
                build(
                    description_class,
                    principal=b.principal,
                    host=b.host,
                    operation=_code(OPERATIONS, b.operation),
                    permission_type=_code(PERMISSIONS, b.permission),
                )
                for b in found
            ),
        )
        for (resource_type, resource_name, pattern_type), found in groupby(sorted(bindings, key=pattern), key=pattern)
    )


async def create_acls(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    result_class = shape(CREATE_ACLS, version, "AclCreationResult")
    refused = authz.cluster_refusal(context.node, AclOperation.ALTER)
    results = []
    for creation in request.body.creations:
        code, message = refused or await _create(context, creation)
        results.append(build(result_class, error_code=code, error_message=message))
    if refused is None:
        await context.node.security.catch_up()
    return build(shape(CREATE_ACLS, version, "CreateAclsResponse"), throttle_time=NO_THROTTLE, results=tuple(results))


async def _create(context: RequestContext, creation: Any) -> tuple[ErrorCode, str | None]:
    codes = {
        "resource_type": creation.resource_type,
        "pattern_type": creation.resource_pattern_type,
        "operation": creation.operation,
        "permission": creation.permission_type,
    }
    try:
        wire = _wire(codes, creating=True)
        binding = binding_from_wire(
            {**wire, "resource_name": creation.resource_name, "principal": creation.principal, "host": creation.host}
        )
    except InvalidAcl as error:
        return ErrorCode.invalid_request, error.message
    created = await context.node.security.records.add_acl(binding)
    authz.audit_change("audit.acl_created", acl=binding_to_wire(binding), created=created)
    return ErrorCode.none, None


async def delete_acls(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    result_class = shape(DELETE_ACLS, version, "DeleteAclsFilterResult")
    matching_class = shape(DELETE_ACLS, version, "DeleteAclsMatchingAcl")
    refused = authz.cluster_refusal(context.node, AclOperation.ALTER)
    results = []
    for body in request.body.filters:
        if refused is not None:
            results.append(build(result_class, error_code=refused[0], error_message=refused[1], matching_acls=()))
            continue
        try:
            deleted = await context.node.security.records.remove_acls(_filter(body))
        except LookupError:
            deleted = []
        except InvalidAcl as error:
            results.append(
                build(result_class, error_code=ErrorCode.invalid_request, error_message=error.message, matching_acls=())
            )
            continue
        for binding in deleted:
            authz.audit_change("audit.acl_deleted", acl=binding_to_wire(binding))
        matching = tuple(
            build(
                matching_class,
                error_code=ErrorCode.none,
                error_message=None,
                resource_type=_code(RESOURCE_TYPES, b.resource_type),
                resource_name=b.resource_name,
                pattern_type=_code(PATTERN_TYPES, b.pattern_type),
                principal=b.principal,
                host=b.host,
                operation=_code(OPERATIONS, b.operation),
                permission_type=_code(PERMISSIONS, b.permission),
            )
            for b in deleted
        )
        results.append(build(result_class, error_code=ErrorCode.none, error_message=None, matching_acls=matching))
    if refused is None:
        await context.node.security.catch_up()
    return build(
        shape(DELETE_ACLS, version, "DeleteAclsResponse"), throttle_time=NO_THROTTLE, filter_results=tuple(results)
    )
