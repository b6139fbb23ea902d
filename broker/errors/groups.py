"""Errors of the group coordinator, named as Kafka names them (KIP-848 consumer group protocol).

A member reacts by name: ``FENCED_MEMBER_EPOCH`` and ``UNKNOWN_MEMBER_ID`` mean "drop every
partition and rejoin with member epoch 0"; ``STALE_MEMBER_EPOCH`` on a commit means
"heartbeat first, then commit with the epoch you are given"; ``NOT_COORDINATOR`` and
``COORDINATOR_LOAD_IN_PROGRESS`` are retriable.
"""

from __future__ import annotations

from broker.errors import HighwaterError


class UnknownMemberId(HighwaterError):
    """The coordinator does not know this member (never joined, left, or was expelled)."""

    name = "UNKNOWN_MEMBER_ID"
    error_code = 40410
    http_status = 404


class FencedMemberEpoch(HighwaterError):
    """The member epoch is not one the coordinator can accept: the member must rejoin."""

    name = "FENCED_MEMBER_EPOCH"
    error_code = 40910
    http_status = 409


class StaleMemberEpoch(HighwaterError):
    """A commit carries an older member epoch than the member's current one."""

    name = "STALE_MEMBER_EPOCH"
    error_code = 40911
    http_status = 409


class NonEmptyGroup(HighwaterError):
    """An operation that needs a group without active members (offset reset, stateless commit)."""

    name = "NON_EMPTY_GROUP"
    error_code = 40912
    http_status = 409


class GroupIdNotFound(HighwaterError):
    name = "GROUP_ID_NOT_FOUND"
    error_code = 40411
    http_status = 404


class NotCoordinator(HighwaterError):
    """This broker does not coordinate the group; ``coordinator_id``/``coordinator_url`` say who does."""

    name = "NOT_COORDINATOR"
    error_code = 42110
    http_status = 421
    retriable = True


class CoordinatorNotAvailable(HighwaterError):
    name = "COORDINATOR_NOT_AVAILABLE"
    error_code = 50310
    http_status = 503
    retriable = True


class CoordinatorLoadInProgress(HighwaterError):
    """The coordinator is replaying its ``__consumer_offsets`` partition; retry shortly."""

    name = "COORDINATOR_LOAD_IN_PROGRESS"
    error_code = 50311
    http_status = 503
    retriable = True


class UnsupportedAssignor(HighwaterError):
    name = "UNSUPPORTED_ASSIGNOR"
    error_code = 40010
    http_status = 400
