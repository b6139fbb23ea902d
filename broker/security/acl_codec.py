"""ACL bindings and filters to and from the Confluent REST Proxy v3 wire form.

The wire names are ``resource_type, resource_name, pattern_type, principal, host,
operation, permission``, each a string. Decoding checks every field and raises
``InvalidAcl`` whose message names the field and, for the enums, lists the
allowed values: an operator who typed ``--operation WRTIE`` learns what to type. It is
the REST Proxy's 400 for a refused ACL, so the HTTP routes answer what the spec says;
the CLI shows only its message. Enum values are read case-insensitively and always
written in upper case.

A binding names a ``User:`` principal (``User:*`` for everyone): ACLs are written for
users; brokers (``Broker:<id>``) are authorized by who they are, never by an ACL.

``binding_key`` is the SHA-256 hex digest of the binding's canonical JSON (sorted
keys, no spaces). A digest rather than an encoding of the JSON because a key must be
safe in a store path whatever the names contain (``/``, ``%``, non-ASCII) and of a
bounded length (64 characters) however long the resource name is; the binding itself
is kept in the value, so the key never needs decoding.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from typing import Any, TypeVar

from broker.errors import InvalidAcl
from broker.security.acl import (
    CLUSTER_RESOURCE_NAME,
    MATCH,
    WILDCARD,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from broker.security.principal import USER, Principal

WIRE_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")
ANY = "ANY"
DELETE_REQUIRED = ("resource_type", "pattern_type", "operation", "permission")
"""The filter fields a delete must name, as the spec's deleteKafkaAcls requires (``ANY`` matches every value): a
request that left them out would otherwise delete more than its sender meant."""
IGNORED_FIELDS = frozenset({"kind", "cluster_id", "metadata"})
"""Fields of a listed ``KafkaAcl`` object that decoding skips, so a listed ACL can be posted back as it is."""

E = TypeVar("E", bound=enum.StrEnum)


def _allowed(values: list[str]) -> str:
    return ", ".join(values)


def _enum(field: str, value: object, kind: type[E]) -> E:
    allowed = [member.value for member in kind]
    if not isinstance(value, str) or value.upper() not in allowed:
        raise InvalidAcl(f"{field} must be one of {_allowed(allowed)} (got {value!r})")
    return kind(value.upper())


def _text(field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidAcl(f"{field} must be a non-empty string (got {value!r})")
    return value


def _principal(value: object) -> str:
    text = _text("principal", value)
    try:
        principal = Principal.parse(text)
    except ValueError:
        principal = None
    if principal is None or principal.type != USER:
        raise InvalidAcl(f"principal must be {USER}:<name> or {USER}:{WILDCARD} (got {text!r})")
    return str(principal)


def binding_to_wire(binding: AclBinding) -> dict[str, str]:
    """The seven wire fields, enums as their names."""
    return {field: str(getattr(binding, field)) for field in WIRE_FIELDS}


def binding_from_wire(data: Mapping[str, Any]) -> AclBinding:
    """A validated binding; ``host`` defaults to ``*``. Unknown fields are refused (a typo must not
    silently widen an ACL), the ``KafkaAcl`` envelope fields in ``IGNORED_FIELDS`` are skipped."""
    unknown = sorted(set(data) - set(WIRE_FIELDS) - IGNORED_FIELDS)
    if unknown:
        raise InvalidAcl(f"unknown field(s) {', '.join(unknown)}; allowed: {_allowed(list(WIRE_FIELDS))}")
    resource_type = _enum("resource_type", data.get("resource_type"), ResourceType)
    resource_name = _text("resource_name", data.get("resource_name"))
    if resource_type is ResourceType.CLUSTER and resource_name != CLUSTER_RESOURCE_NAME:
        raise InvalidAcl(f"resource_name of a CLUSTER ACL must be {CLUSTER_RESOURCE_NAME} (got {resource_name!r})")
    return AclBinding(
        resource_type=resource_type,
        resource_name=resource_name,
        pattern_type=_enum("pattern_type", data.get("pattern_type"), PatternType),
        principal=_principal(data.get("principal")),
        host=_text("host", data.get("host", WILDCARD)),
        operation=_enum("operation", data.get("operation"), AclOperation),
        permission=_enum("permission", data.get("permission"), AclPermission),
    )


def _any_or_enum(field: str, value: str | None, kind: type[E]) -> E | None:
    if value is None or value.upper() == ANY:
        return None
    allowed = [ANY, *(member.value for member in kind)]
    if value.upper() not in allowed:
        raise InvalidAcl(f"{field} must be one of {_allowed(allowed)} (got {value!r})")
    return kind(value.upper())


def _pattern_filter(value: str | None) -> PatternType | str | None:
    if value is not None and value.upper() == MATCH:
        return MATCH
    try:
        return _any_or_enum("pattern_type", value, PatternType)
    except InvalidAcl:
        allowed = [ANY, MATCH, *(member.value for member in PatternType)]
        raise InvalidAcl(f"pattern_type must be one of {_allowed(allowed)} (got {value!r})") from None


def filter_from_wire(params: Mapping[str, str]) -> AclFilter:
    """A filter from query parameters: an absent enum parameter or ``ANY`` matches any value, an
    absent string parameter (name, principal, host) any string. ``pattern_type=MATCH`` needs a
    ``resource_name``. Unknown parameters are refused: a misspelt one on a DELETE would otherwise
    turn into "match everything"."""
    unknown = sorted(set(params) - set(WIRE_FIELDS))
    if unknown:
        raise InvalidAcl(f"unknown filter parameter(s) {', '.join(unknown)}; allowed: {_allowed(list(WIRE_FIELDS))}")
    resource_name = params.get("resource_name")
    pattern_type = _pattern_filter(params.get("pattern_type"))
    if pattern_type == MATCH and resource_name is None:
        raise InvalidAcl("pattern_type MATCH needs a resource_name")
    principal = params.get("principal")
    return AclFilter(
        resource_type=_any_or_enum("resource_type", params.get("resource_type"), ResourceType),
        resource_name=None if resource_name is None else _text("resource_name", resource_name),
        pattern_type=pattern_type,
        principal=None if principal is None else _principal(principal),
        host=None if params.get("host") is None else _text("host", params.get("host")),
        operation=_any_or_enum("operation", params.get("operation"), AclOperation),
        permission=_any_or_enum("permission", params.get("permission"), AclPermission),
    )


def filter_to_wire(acl_filter: AclFilter) -> dict[str, str]:
    """Query parameters for ``acl_filter``; fields that match anything are left out."""
    return {field: str(value) for field in WIRE_FIELDS if (value := getattr(acl_filter, field)) is not None}


def binding_key(binding: AclBinding) -> str:
    """A stable, store-key-safe name unique per binding: SHA-256 hex of its canonical JSON."""
    canonical = json.dumps(binding_to_wire(binding), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
