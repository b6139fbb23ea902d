"""Committing and reading a group's offsets, with Kafka's retry and fencing rules.

A committed offset is the offset of the *next* record the group should read in a
partition (the consumer's position), as in Kafka. A subscribed member commits with
its member id and current member epoch; the coordinator refuses anything else:

* ``STALE_MEMBER_EPOCH``: a heartbeat raised the epoch while the commit was on its way;
  the commit is retried with the epoch the member holds by then;
* ``UNKNOWN_MEMBER_ID`` / ``FENCED_MEMBER_EPOCH``: this member was expelled and its
  partitions may belong to another member already, so the commit must not land:
  ``CommitFailedError``;
* retriable errors (no coordinator, coordinator moving or loading, broker unreachable)
  are retried after ``retry_backoff_ms`` until ``request_timeout_ms`` has passed.

A consumer with a ``group_id`` that uses ``assign`` instead of ``subscribe`` commits
without a member id, which the coordinator accepts only while the group has no
members (Kafka's "simple" consumer group).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from broker.client.groups import GroupClient
from broker.client.library_log import library_logger
from broker.client.retrying import retrying
from broker.client.types import TopicPartition
from broker.errors import HighwaterError
from broker.errors.groups import FencedMemberEpoch, StaleMemberEpoch, UnknownMemberId
from consumer.errors import CommitFailedError
from consumer.membership import MemberState

log = library_logger(__name__)

Result = TypeVar("Result")


class OffsetCommitter:
    """Commits for one group; ``member`` is None for a consumer that is not subscribed."""

    def __init__(
        self,
        groups: GroupClient,
        group_id: str,
        member: Callable[[], MemberState | None],
        retry_backoff_ms: int,
        request_timeout_ms: int,
    ) -> None:
        self._groups = groups
        self.group_id = group_id
        self._member = member
        self._retry_backoff_ms = retry_backoff_ms
        self._request_timeout_ms = request_timeout_ms
        self.last_committed: dict[TopicPartition, int] = {}
        self._lock = asyncio.Lock()

    async def commit(self, offsets: Mapping[TopicPartition, int] | Callable[[], Mapping[TopicPartition, int]]) -> None:
        """Commit ``offsets`` and wait for the coordinator's acks=all write.

        Commits run one at a time, and ``offsets`` may be a function evaluated once this
        commit's turn comes: an auto-commit taken before a revocation's commit can then
        never land after it and move the committed offset back.
        """
        async with self._lock:
            wanted = dict(offsets() if callable(offsets) else offsets)
            if not wanted:
                return
            await self._retrying("commit", lambda: self._commit_once(wanted))
            self.last_committed.update(wanted)
        if log.isEnabledFor(logging.DEBUG):
            committed = {f"{topic}-{partition}": offset for (topic, partition), offset in wanted.items()}
            log.debug("offsets_committed group_id=%s offsets=%s", self.group_id, committed)

    async def _commit_once(self, offsets: dict[TopicPartition, int]) -> None:
        member = self._member()
        if member is None:
            await self._groups.commit(self.group_id, offsets)
            return
        try:
            await self._groups.commit(self.group_id, offsets, member.member_id, member.member_epoch)
        except (UnknownMemberId, FencedMemberEpoch) as error:
            raise CommitFailedError(
                f"group {self.group_id!r} refused the commit of member {member.member_id} "
                f"(epoch {member.member_epoch}): {error.name}; its partitions may have moved to another member",
                group_id=self.group_id,
                member_id=member.member_id,
                reason=error.name,
            ) from error

    async def committed(self) -> dict[TopicPartition, int]:
        """Every offset the group has committed."""
        return await self._retrying("committed", lambda: self._groups.committed(self.group_id))

    async def _retrying(self, action: str, attempt: Callable[[], Awaitable[Result]]) -> Result:
        def note(error: HighwaterError) -> None:
            log.debug("group_request_retry group_id=%s action=%s error=%s", self.group_id, action, error.name)

        return await retrying(
            attempt, self._request_timeout_ms, self._retry_backoff_ms, also_retry=(StaleMemberEpoch,), on_retry=note
        )


class AutoCommitter:
    """Every ``interval_ms``, commit what the application has consumed (Kafka's ``enable.auto.commit``).

    Failures are logged, not raised: the next round, a revocation or ``close`` commits
    again, and an expelled member's partitions are committed by their new owner.
    """

    def __init__(self, commit_consumed: Callable[[], Awaitable[None]], interval_ms: int, group_id: str) -> None:
        self._commit_consumed = commit_consumed
        self._interval_ms = interval_ms
        self._group_id = group_id
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"auto-commit-{self._group_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_ms / 1000)
            try:
                await self._commit_consumed()
            except HighwaterError as error:
                log.warning(
                    "auto_commit_failed group_id=%s error=%s message=%s",
                    self._group_id,
                    error.name,
                    error.message,
                )
