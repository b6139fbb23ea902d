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
CLUSTER_RESOURCE_NAME = "kafka-cluster"
"""The one CLUSTER resource's name, as in Kafka."""


class ResourceType(enum.StrEnum):
    TOPIC = "TOPIC"
    GROUP = "GROUP"
    CLUSTER = "CLUSTER"


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
    whose pattern applies to ``resource_name`` (which MATCH requires).
    """

    resource_type: ResourceType | None = None
    resource_name: str | None = None
    pattern_type: PatternType | str | None = None
    principal: str | None = None
    host: str | None = None
    operation: AclOperation | None = None
    permission: AclPermission | None = None
