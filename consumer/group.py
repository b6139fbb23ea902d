"""``GroupMember``: the heartbeat loop that keeps a subscribed consumer in its group (KIP-848).

One task per subscribed consumer. Each round it sends a heartbeat (member epoch,
subscription, ``owned_partitions``), hands the answer to the pure ``MemberState`` and
carries out its steps through the consumer (``AssignmentListener``): revocations
first, each completed before the partitions leave ``owned``, then acquisitions. After
a change it heartbeats again at once (that is how a revocation is acknowledged);
otherwise it waits the ``heartbeat_interval_ms`` the coordinator asked for.

Failures:

* ``UNKNOWN_MEMBER_ID`` / ``FENCED_MEMBER_EPOCH``: the coordinator expelled this member
  or lost its state (a new coordinator keeps membership in memory only). Every
  partition is lost without a commit and the member rejoins with epoch 0.
* retriable errors (coordinator moving or loading, broker unreachable): retried after
  ``retry_backoff_ms``. If no answer arrives for ``session_timeout_ms`` the coordinator
  has expelled this member by now and may have given its partitions to others, so they
  are dropped here too (Kafka's "partitions lost") — never read by two members at once.
* any other broker error (an invalid regex, say) is raised to the application from
  its next ``getmany``; the loop keeps trying at the heartbeat interval.

Leaving (``unsubscribe``/``close``) stops the loop and sends member epoch -1, so the
group rebalances at once instead of after the session timeout.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from broker.client.groups import GroupClient
from broker.client.library_log import library_logger
from broker.client.types import TopicPartition
from broker.clock import monotonic_ms
from broker.errors import HighwaterError
from broker.errors.groups import FencedMemberEpoch, UnknownMemberId
from broker.waiting import wait_event
from consumer.membership import Acquire, MemberState, Revoke

log = library_logger(__name__)

LEAVE_TIMEOUT_MS = 5000
STOP_TIMEOUT_MS = 5000


class AssignmentListener(Protocol):
    """What the consumer does when its share of the group changes."""

    async def revoke_partitions(self, partitions: frozenset[TopicPartition]) -> None:
        """Stop handing out ``partitions`` and commit what was consumed of them (with auto-commit)."""

    def acquire_partitions(self, partitions: frozenset[TopicPartition]) -> None:
        """Start reading ``partitions`` from the group's committed offsets."""

    def lose_partitions(self, partitions: frozenset[TopicPartition]) -> None:
        """Stop reading ``partitions`` at once, committing nothing: another member may own them."""


@dataclass(frozen=True, slots=True)
class MembershipTimings:
    session_timeout_ms: int
    rebalance_timeout_ms: int
    heartbeat_interval_ms: int
    """Used until the coordinator names its own interval."""
    retry_backoff_ms: int
    client_id: str


class GroupMember:
    def __init__(
        self,
        groups: GroupClient,
        group_id: str,
        state: MemberState,
        listener: AssignmentListener,
        timings: MembershipTimings,
    ) -> None:
        self._groups = groups
        self.group_id = group_id
        self.state = state
        self._listener = listener
        self._timings = timings
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._errors: list[HighwaterError] = []
        self._who = f"group_id={group_id} member_id={state.member_id}"
        """Prefix of every log event of this member."""
        self.heartbeats_answered = 0
        self._stopping = False
        self._heartbeat_sent = False

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"heartbeat-{self.group_id}")

    def wake(self) -> None:
        """Heartbeat now (the subscription changed)."""
        self._wakeup.set()

    def raise_error(self) -> None:
        if self._errors:
            raise self._errors.pop(0)

    async def stop(self) -> None:
        """Stop after the round in flight: a heartbeat answer is never dropped, so the epoch held stays current."""
        if self._task is None:
            return
        self._stopping = True
        self._wakeup.set()
        done, _ = await asyncio.wait({self._task}, timeout=STOP_TIMEOUT_MS / 1000)
        if not done:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._task = None

    async def leave(self) -> None:
        """Stop heartbeating and leave the group (best effort: else the session timeout expels us)."""
        await self.stop()
        if self.state.joined or self._heartbeat_sent:
            try:
                async with asyncio.timeout(LEAVE_TIMEOUT_MS / 1000):
                    await self._groups.heartbeat(self.group_id, self.state.member_id, self.state.leave_body())
                log.debug("group_left %s member_epoch=%d", self._who, self.state.member_epoch)
            except (HighwaterError, TimeoutError) as error:
                log.debug("group_leave_failed %s error=%s", self._who, getattr(error, "name", type(error).__name__))
        self._listener.lose_partitions(self.state.left())

    async def _run(self) -> None:
        interval_ms = self._timings.heartbeat_interval_ms
        last_answer_ms = monotonic_ms()
        while not self._stopping:
            self._wakeup.clear()
            try:
                body = self.state.heartbeat_body(
                    self._timings.session_timeout_ms, self._timings.rebalance_timeout_ms, self._timings.client_id
                )
                self._heartbeat_sent = True
                answer = await self._groups.heartbeat(self.group_id, self.state.member_id, body)
                last_answer_ms = monotonic_ms()
                self.heartbeats_answered += 1
                interval_ms = answer.heartbeat_interval_ms or interval_ms
                changed = self.state.on_heartbeat(answer.member_epoch, answer.assignment) and await self._reconcile()
            except (UnknownMemberId, FencedMemberEpoch) as error:
                self._fence(error.name)
                await self._sleep(self._timings.retry_backoff_ms)
                continue
            except HighwaterError as error:
                self._on_error(error, last_answer_ms)
                await self._sleep(self._timings.retry_backoff_ms if error.retriable else interval_ms)
                continue
            except Exception as error:
                log.warning("group_heartbeat_loop_failed %s", self._who, exc_info=True)
                self._errors.append(HighwaterError(f"group membership stopped: {error!r}"))
                return
            if not changed:
                await self._sleep(interval_ms)

    async def _reconcile(self) -> bool:
        """Carry out the next step towards the target; True if something changed (heartbeat at once)."""
        step = self.state.next_step()
        if isinstance(step, Revoke):
            await self._listener.revoke_partitions(step.partitions)
            self.state.revoked(step.partitions)
            log.debug(
                "group_partitions_revoked %s member_epoch=%d partitions=%s",
                self._who,
                self.state.member_epoch,
                _names(step.partitions),
            )
            return True
        if isinstance(step, Acquire):
            self._listener.acquire_partitions(step.partitions)
            self.state.acquired(step.partitions)
            log.debug(
                "group_partitions_assigned %s member_epoch=%d partitions=%s owned=%d",
                self._who,
                self.state.member_epoch,
                _names(step.partitions),
                len(self.state.owned),
            )
            return True
        return False

    def _fence(self, reason: str) -> None:
        lost = self.state.fenced()
        self._listener.lose_partitions(lost)
        log.warning("group_member_fenced %s reason=%s lost=%s", self._who, reason, _names(lost))

    def _on_error(self, error: HighwaterError, last_answer_ms: int) -> None:
        silent_ms = monotonic_ms() - last_answer_ms
        log.debug("group_heartbeat_failed %s error=%s silent_ms=%d", self._who, error.name, silent_ms)
        if not error.retriable:
            if not self._errors:
                self._errors.append(error)
        elif silent_ms > self._timings.session_timeout_ms and self.state.owned:
            self._fence("session_timeout")

    async def _sleep(self, duration_ms: int) -> None:
        await wait_event(self._wakeup, duration_ms / 1000)


def _names(partitions: frozenset[TopicPartition]) -> list[str]:
    return [f"{topic}-{partition}" for topic, partition in sorted(partitions)]
