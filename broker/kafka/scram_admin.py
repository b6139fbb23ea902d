"""Describe- and AlterUserScramCredentials (50, 51): the HTTP user routes' store, over the Kafka door.

highwater keeps one credential per user, SCRAM-SHA-512 (Kafka's mechanism 2): it serves
both SASL/PLAIN and SCRAM-SHA-512. A credential set here is derived from the salt and
salted password the client sends, as Kafka's is (the password never travels), and works
at both doors at once (``NodeSecurity.catch_up`` before the answer).

Kafka's rules: DESCRIBE on the cluster to describe, ALTER to alter, else
``CLUSTER_AUTHORIZATION_FAILED``. Describing names (or, null, all users); one that has no
credential is ``RESOURCE_NOT_FOUND``, one named twice ``DUPLICATE_RESOURCE``. Altering:
another mechanism than SCRAM-SHA-512 is ``UNSUPPORTED_SASL_MECHANISM``; fewer iterations
than highwater's minimum, an empty salt or a name the HTTP route would refuse
``UNACCEPTABLE_CREDENTIAL``; a user both deleted and upserted, or altered twice, in one
request ``DUPLICATE_RESOURCE`` (and nothing done for it); deleting one that has no
credential ``RESOURCE_NOT_FOUND``. Changes are audited as the HTTP routes audit them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation
from broker.security.principal import USER_NAME_PATTERN
from broker.security.scram import MIN_ITERATIONS, credential_from_salted_password

DESCRIBE = 50
ALTER = 51
SCRAM_SHA_512 = 2
"""Kafka's ScramMechanism code of the one mechanism highwater stores."""
_USER_NAME = re.compile(USER_NAME_PATTERN)

Outcome = tuple[ErrorCode, str | None]


async def describe(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    response_class = shape(DESCRIBE, version, "DescribeUserScramCredentialsResponse")
    refused = authz.cluster_refusal(context.node, AclOperation.DESCRIBE)
    if refused is not None:
        return build(
            response_class, throttle_time=NO_THROTTLE, error_code=refused[0], error_message=refused[1], results=()
        )
    users = await context.node.security.records.users()
    asked = None if request.body.users is None else [user.name for user in request.body.users]
    named = Counter(asked or ())
    result_class = shape(DESCRIBE, version, "DescribeUserScramCredentialsResult")
    info_class = shape(DESCRIBE, version, "CredentialInfo")
    results = []
    for name in sorted(users) if asked is None else list(dict.fromkeys(asked)):
        infos: tuple[Any, ...] = ()
        if named[name] > 1:
            code, message = ErrorCode.duplicate_resource, f"user {name!r} is named more than once"
        elif name not in users:
            code, message = ErrorCode.resource_not_found, f"user {name!r} has no credential"
        else:
            code, message = ErrorCode.none, None
            infos = (build(info_class, mechanism=i8(SCRAM_SHA_512), iterations=i32(users[name].iterations)),)
        results.append(build(result_class, user=name, error_code=code, error_message=message, credential_infos=infos))
    return build(
        response_class, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, results=tuple(results)
    )


async def alter(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    result_class = shape(ALTER, version, "AlterUserScramCredentialsResult")
    named = Counter([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    refused = authz.cluster_refusal(context.node, AclOperation.ALTER)
    outcomes: dict[str, Outcome] = {}
    for deletion in body.deletions:
        outcomes[deletion.name] = refused or await _delete(context, deletion, named)
    for upsertion in body.upsertions:
        outcomes[upsertion.name] = refused or await _upsert(context, upsertion, named)
    if refused is None and outcomes:
        await context.node.security.catch_up()
    results = tuple(
        build(result_class, user=name, error_code=code, error_message=message)
        for name, (code, message) in outcomes.items()
    )
    return build(shape(ALTER, version, "AlterUserScramCredentialsResponse"), throttle_time=NO_THROTTLE, results=results)


def _checked(name: str, mechanism: int, named: Counter[str]) -> Outcome | None:
    if named[name] > 1:
        return ErrorCode.duplicate_resource, f"user {name!r} is altered more than once in the request"
    if mechanism != SCRAM_SHA_512:
        return ErrorCode.unsupported_sasl_mechanism, f"mechanism {mechanism}: highwater stores SCRAM-SHA-512 (2) only"
    if not _USER_NAME.match(name):
        return ErrorCode.unacceptable_credential, f"user name {name!r} must match {USER_NAME_PATTERN}"
    return None


async def _delete(context: RequestContext, deletion: Any, named: Counter[str]) -> Outcome:
    checked = _checked(deletion.name, int(deletion.mechanism), named)
    if checked is not None:
        return checked
    if not await context.node.security.records.delete_user(deletion.name):
        return ErrorCode.resource_not_found, f"user {deletion.name!r} has no credential"
    authz.audit_change("audit.user_deleted", user=deletion.name)
    return ErrorCode.none, None


async def _upsert(context: RequestContext, upsertion: Any, named: Counter[str]) -> Outcome:
    checked = _checked(upsertion.name, int(upsertion.mechanism), named)
    if checked is not None:
        return checked
    try:
        credential = credential_from_salted_password(
            bytes(upsertion.salt), bytes(upsertion.salted_password), int(upsertion.iterations)
        )
    except ValueError as error:
        return ErrorCode.unacceptable_credential, f"{error} (at least {MIN_ITERATIONS} iterations)"
    created = await context.node.security.records.put_user(upsertion.name, credential)
    event = "audit.user_created" if created else "audit.user_password_changed"
    authz.audit_change(event, user=upsertion.name)
    return ErrorCode.none, None
