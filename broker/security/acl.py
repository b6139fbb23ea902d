"""ACL bindings as Kafka has them: a resource pattern and an entry (who, from where, what, allow or deny).

A binding says ``principal`` from ``host`` may (ALLOW) or may not (DENY) do ``operation``
on every resource its pattern matches. A LITERAL pattern matches the resource of that
exact name, or every resource when the name is ``*``; a PREFIXED pattern matches every
name that starts with it. ``principal`` ``User:*`` and ``host`` ``*`` match anyone.

Filters select bindings for listing and deleting (Kafka's ``AclBindingFilter``): a field
left as None matches anything, ``ANY`` does the same for the enums, and the pattern type
``MATCH`` selects every binding that would apply to the named resource (literal,
wildcard and prefixed ones). The wire names are the Confluent REST Proxy v3 ones.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

WILDCARD = "*"
MATCH = "MATCH"
"""The filter-only pattern type: every binding that applies to the filter's resource name."""
CLUSTER_RESOURCE_NAME = "kafka-cluster"
"""The one CLUSTER resource's name, as in Kafka."""


class ResourceType(enum.StrEnum):
    TOPIC = "TOPIC"
    GROUP = "GROUP"
    CLUSTER = "CLUSTER"
    TRANSACTIONAL_ID = "TRANSACTIONAL_ID"


class PatternType(enum.StrEnum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class AclOperation(enum.StrEnum):
    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER_CONFIGS = "ALTER_CONFIGS"


class AclPermission(enum.StrEnum):
    ALLOW = "ALLOW"
    DENY = "DENY"


@dataclass(frozen=True, slots=True)
class Resource:
    """A concrete thing an operation touches: a topic, a group, or the cluster."""

    type: ResourceType
    name: str

    @classmethod
    def topic(cls, name: str) -> Resource:
        return cls(ResourceType.TOPIC, name)

    @classmethod
    def group(cls, name: str) -> Resource:
        return cls(ResourceType.GROUP, name)

    @classmethod
    def transactional_id(cls, name: str) -> Resource:
        return cls(ResourceType.TRANSACTIONAL_ID, name)

    @classmethod
    def cluster(cls) -> Resource:
        return cls(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Selects bindings; None (or ``"ANY"`` on the wire) matches any value of that field.

    ``pattern_type`` is a ``PatternType``, None for any, or ``"MATCH"``: every binding
    whose pattern applies to ``resource_name`` (which MATCH requires). A filter with any
    other pattern type, or MATCH without a name, is refused at construction (ValueError),
    so a wire handler turns it into a 400 before it can select too much or nothing.
    """

    resource_type: ResourceType | None = None
    resource_name: str | None = None
    pattern_type: PatternType | str | None = None
    principal: str | None = None
    host: str | None = None
    operation: AclOperation | None = None
    permission: AclPermission | None = None

    def __post_init__(self) -> None:
        if self.pattern_type is not None and self.pattern_type not in (*PatternType, MATCH):
            raise ValueError(f"pattern type {self.pattern_type!r} is none of LITERAL, PREFIXED, MATCH")
        if self.pattern_type == MATCH and self.resource_name is None:
            raise ValueError("pattern type MATCH selects the bindings of one resource: name it (resource_name)")


def pattern_applies(binding: AclBinding, resource_name: str) -> bool:
    """Whether ``binding``'s pattern covers the resource named ``resource_name`` (its type aside).

    The one statement of LITERAL, wildcard and PREFIXED matching, shared by filters and the authorizer.
    """
    if binding.pattern_type == PatternType.PREFIXED:
        return resource_name.startswith(binding.resource_name)
    return binding.resource_name in (resource_name, WILDCARD)


def filter_matches(acl_filter: AclFilter, binding: AclBinding) -> bool:
    """Whether ``acl_filter`` selects ``binding`` (Kafka's ``AclBindingFilter.matches``).

    A None field matches anything; every other field compares exactly, the resource name
    included (a LITERAL ``*`` filter selects only the wildcard bindings themselves), except
    under pattern type MATCH, where the name selects every binding whose pattern applies to it.
    """
    if acl_filter.pattern_type == MATCH:
        assert acl_filter.resource_name is not None  # refused at construction otherwise
        if not pattern_applies(binding, acl_filter.resource_name):
            return False
    else:
        if acl_filter.pattern_type is not None and acl_filter.pattern_type != binding.pattern_type:
            return False
        if acl_filter.resource_name is not None and acl_filter.resource_name != binding.resource_name:
            return False
    return (
        (acl_filter.resource_type is None or acl_filter.resource_type == binding.resource_type)
        and (acl_filter.principal is None or acl_filter.principal == binding.principal)
        and (acl_filter.host is None or acl_filter.host == binding.host)
        and (acl_filter.operation is None or acl_filter.operation == binding.operation)
        and (acl_filter.permission is None or acl_filter.permission == binding.permission)
    )
