"""Who may do what: Kafka's StandardAuthorizer over a fixed set of ACL bindings.

The decision for ``principal`` from ``host`` doing ``operation`` on ``resource``:

1. A broker (``Broker:<id>``) or a super user may do anything.
2. The bindings that apply are those whose pattern covers the resource (LITERAL of that
   name or ``*``, PREFIXED of a prefix of it) and that name this principal (or ``User:*``)
   and this host (or ``*``).
3. DENY wins: an applying DENY of the operation itself, or of ALL, refuses.
4. An applying ALLOW of the operation, of ALL, or of an operation that implies it allows.
   Implications (Kafka's): READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS
   implies DESCRIBE_CONFIGS. They widen ALLOW only: DENY READ does not deny DESCRIBE.
5. Otherwise refuse, unless no binding at all covers the resource — for any principal,
   host or operation — and ``allow_if_no_acl`` is set (``allow.everyone.if.no.acl.found``).

An Authorizer is immutable: when the ACLs change a new one is built and swapped in, so a
request never sees half an update and lookups need no lock. Building indexes the bindings
(literal ones by resource type and name, prefixed ones by type) so that a lookup costs a
few dictionary hits and a scan of that type's prefixed bindings, not a scan of every ACL.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from broker.security.acl import (
    WILDCARD,
    AclBinding,
    AclOperation,
    AclPermission,
    PatternType,
    Resource,
    ResourceType,
    pattern_applies,
)
from broker.security.principal import Principal

WILDCARD_PRINCIPAL = "User:*"

IMPLIED_BY: Mapping[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}
"""Operation -> the operations whose ALLOW also allows it (Kafka's AclEntry implications)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorization decision and why, for the audit log; truthy when allowed."""

    allowed: bool
    reason: str

    def __bool__(self) -> bool:
        return self.allowed


ALLOWED_BROKER = Decision(True, "broker")
ALLOWED_SUPER_USER = Decision(True, "super user")
ALLOWED_BY_ACL = Decision(True, "allowed by ACL")
DENIED_BY_ACL = Decision(False, "denied by ACL")
NO_ACL_MATCHED = Decision(False, "no ACL matched")
NO_ACL_FOR_RESOURCE_ALLOWED = Decision(True, "no ACL for resource (allow_if_no_acl)")
NO_ACL_FOR_RESOURCE_DENIED = Decision(False, "no ACL for resource")


def allowing_operations(operation: AclOperation) -> frozenset[AclOperation]:
    """The binding operations an ALLOW of which allows ``operation``."""
    return frozenset({operation, AclOperation.ALL}) | IMPLIED_BY.get(operation, frozenset())


def denying_operations(operation: AclOperation) -> frozenset[AclOperation]:
    """The binding operations a DENY of which denies ``operation`` (no implications)."""
    return frozenset({operation, AclOperation.ALL})


_ALLOWING = {operation: allowing_operations(operation) for operation in AclOperation}
_DENYING = {operation: denying_operations(operation) for operation in AclOperation}


class Authorizer:
    """Answers ``authorize`` and ``allows_any`` from bindings fixed at construction.

    ``super_users`` are principal strings (``User:admin``), compared with ``str(principal)``.
    Duplicate bindings count once, as ACLs are a set in Kafka.
    """

    __slots__ = ("_allow_if_no_acl", "_by_type", "_literal", "_prefixed", "_super_users", "_types_covering_all")

    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        *,
        super_users: frozenset[str] = frozenset(),
        allow_if_no_acl: bool = False,
    ) -> None:
        self._super_users = super_users
        self._allow_if_no_acl = allow_if_no_acl
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        prefixed: dict[ResourceType, list[AclBinding]] = {}
        by_type: dict[ResourceType, list[AclBinding]] = {}
        covering_all: set[ResourceType] = set()
        for binding in dict.fromkeys(bindings):
            by_type.setdefault(binding.resource_type, []).append(binding)
            if binding.pattern_type == PatternType.PREFIXED:
                prefixed.setdefault(binding.resource_type, []).append(binding)
                covers_all = binding.resource_name == ""
            else:
                literal.setdefault((binding.resource_type, binding.resource_name), []).append(binding)
                covers_all = binding.resource_name == WILDCARD
            if covers_all:
                covering_all.add(binding.resource_type)
        self._literal = {key: tuple(found) for key, found in literal.items()}
        self._prefixed = {key: tuple(found) for key, found in prefixed.items()}
        self._by_type = {key: tuple(found) for key, found in by_type.items()}
        self._types_covering_all = frozenset(covering_all)

    def authorize(self, principal: Principal, host: str, operation: AclOperation, resource: Resource) -> Decision:
        """Whether ``principal`` connecting from ``host`` may do ``operation`` on ``resource``, and why."""
        privileged = self._privileged(principal)
        if privileged is not None:
            return privileged
        who = str(principal)
        allowing, denying = _ALLOWING[operation], _DENYING[operation]
        resource_has_acl = allowed = False
        for binding in self._covering(resource):
            resource_has_acl = True
            if not _names(binding, who, host):
                continue
            if binding.permission == AclPermission.DENY:
                if binding.operation in denying:
                    return DENIED_BY_ACL
            elif binding.operation in allowing:
                allowed = True
        if allowed:
            return ALLOWED_BY_ACL
        if resource_has_acl:
            return NO_ACL_MATCHED
        return NO_ACL_FOR_RESOURCE_ALLOWED if self._allow_if_no_acl else NO_ACL_FOR_RESOURCE_DENIED

    def allows_any(self, principal: Principal, host: str, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether ``principal`` may do ``operation`` on some resource of ``resource_type``.

        Kafka's ``authorizeByResourceType`` (asked e.g. before allocating a producer id: may
        this principal WRITE any topic?). Among the bindings of that type naming this
        principal and host: a DENY on LITERAL ``*`` refuses outright; otherwise an ALLOW
        counts unless a DENY covers everything it allows — a LITERAL ALLOW is covered by a
        DENY of the same name or of a prefix of it, a PREFIXED ALLOW by a DENY of a prefix of
        its prefix. ``allow_if_no_acl`` allows when some name of the type has no binding at
        all, which holds unless a LITERAL ``*`` (or PREFIXED empty) binding covers every name.
        The CLUSTER type has one resource, so the question is asked of that resource.
        """
        if resource_type == ResourceType.CLUSTER:
            return bool(self.authorize(principal, host, operation, Resource.cluster()))
        if self._privileged(principal) is not None:
            return True
        if self._allow_if_no_acl and resource_type not in self._types_covering_all:
            return True
        who = str(principal)
        allowing, denying = _ALLOWING[operation], _DENYING[operation]
        allowed_names: set[str] = set()
        allowed_prefixes: set[str] = set()
        denied_names: set[str] = set()
        denied_prefixes: set[str] = set()
        for binding in self._by_type.get(resource_type, ()):
            if not _names(binding, who, host):
                continue
            is_prefixed = binding.pattern_type == PatternType.PREFIXED
            if binding.permission == AclPermission.DENY:
                if binding.operation not in denying:
                    continue
                if not is_prefixed and binding.resource_name == WILDCARD:
                    return False
                (denied_prefixes if is_prefixed else denied_names).add(binding.resource_name)
            elif binding.operation in allowing:
                (allowed_prefixes if is_prefixed else allowed_names).add(binding.resource_name)
        if WILDCARD in allowed_names:
            return True

        def denied_by_prefix(name: str) -> bool:
            return any(name.startswith(prefix) for prefix in denied_prefixes)

        return any(name not in denied_names and not denied_by_prefix(name) for name in allowed_names) or any(
            not denied_by_prefix(prefix) for prefix in allowed_prefixes
        )

    def _privileged(self, principal: Principal) -> Decision | None:
        if principal.is_broker:
            return ALLOWED_BROKER
        if str(principal) in self._super_users:
            return ALLOWED_SUPER_USER
        return None

    def _covering(self, resource: Resource) -> Iterator[AclBinding]:
        """The bindings whose pattern covers ``resource``, whoever they name."""
        yield from self._literal.get((resource.type, resource.name), ())
        if resource.name != WILDCARD:
            yield from self._literal.get((resource.type, WILDCARD), ())
        for binding in self._prefixed.get(resource.type, ()):
            if pattern_applies(binding, resource.name):
                yield binding


def _names(binding: AclBinding, who: str, host: str) -> bool:
    """Whether ``binding`` names principal ``who`` (or everyone) and ``host`` (or every host)."""
    return binding.principal in (who, WILDCARD_PRINCIPAL) and binding.host in (host, WILDCARD)
