"""The faults, by name. Each injects one failure and heals it before returning.

All of them target the leader (or a follower) of partition 0 of the topic they are
given, as it is at the time. Process control and HTTP run in worker threads, so the
workload on the event loop keeps going while a broker dies, sleeps or restarts.

Hold times are set against the cluster's timeouts (session and lag both 2 s): a kill
lasts past the session timeout so leadership really moves; a pause outlasts both, so
the paused broker loses its lease and leaves the ISR while its process still exists.

``kill_two_replicas`` also writes probes of its own (recorded in the run's history, so
the checker judges them with the workload): one that must be refused while the ISR is
below min ISR, one that must be acknowledged once a replica is back. It waits on the
ISR it needs rather than on a clock, so its verdict never depends on timing.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from broker.storage.log_manager import partition_directory_name
from broker.topics.policy import TRANSACTION_STATE_TOPIC
from broker.transactions.metadata import partition_for_transactional_id
from tests.chaos.cluster import (
    HW_CHECKPOINT_FILE,
    LAG_TIME_MAX_MS,
    MIN_INSYNC_REPLICAS,
    POLL_INTERVAL_S,
    SESSION_TIMEOUT_MS,
    ChaosCluster,
)
from tests.chaos.history import FAIL, OK, UNKNOWN, History, WriteOp
from tests.chaos.proxy import INBOUND
from tests.support.waiting import wait_until

log = structlog.get_logger(__name__)

DOWN_S = SESSION_TIMEOUT_MS / 1000 + 0.7
PAUSE_S = max(SESSION_TIMEOUT_MS, LAG_TIME_MAX_MS) / 1000 + 1.5
CUT_S = LAG_TIME_MAX_MS / 1000 * 2
ZOMBIE_CUT_S = SESSION_TIMEOUT_MS / 1000 * 2.5
MARKER_DELAY_S = LAG_TIME_MAX_MS / 1000 * 0.6
TORN_TAIL_BYTES = 7
ISR_CHANGE_TIMEOUT_S = 20.0
"""Bound on waiting for an ISR change that the rules guarantee (a dead follower leaves
within about lag time + lag/2; a restarted one rejoins once it has caught up)."""
PROBE_TIMEOUT_MS = 10_000


@dataclass
class FaultTarget:
    chaos: ChaosCluster
    topic: str
    rng: random.Random
    history: History

    async def leader(self) -> int:
        return await asyncio.to_thread(self.chaos.leader_of, self.topic, 0)

    async def follower(self) -> int:
        leader = await self.leader()
        return self.rng.choice(sorted(b for b in self.chaos.brokers if b != leader))

    async def restart(self, broker_id: int) -> None:
        await asyncio.to_thread(self.chaos.brokers[broker_id].start)


Fault = Callable[[FaultTarget], Awaitable[str]]


async def _kill_and_restart(target: FaultTarget, broker_id: int, role: str) -> str:
    await asyncio.to_thread(target.chaos.brokers[broker_id].kill)
    # The hold time is the fault itself: the workload runs against a dead broker past its session timeout.
    await asyncio.sleep(DOWN_S)
    await target.restart(broker_id)
    return f"SIGKILL {role} {broker_id} for {DOWN_S:.1f} s"


async def kill_leader(target: FaultTarget) -> str:
    return await _kill_and_restart(target, await target.leader(), "leader")


async def kill_follower(target: FaultTarget) -> str:
    return await _kill_and_restart(target, await target.follower(), "follower")


async def kill_controller(target: FaultTarget) -> str:
    controller = await asyncio.to_thread(target.chaos.controller_id)
    return await _kill_and_restart(target, controller, "controller")


async def kill_all(target: FaultTarget) -> str:
    brokers = target.chaos.brokers.values()
    for broker in brokers:
        broker.kill()
    # The hold time is the fault itself: half a second in which the workload finds no broker at all.
    await asyncio.sleep(0.5)
    for broker in brokers:
        broker.start(wait=False)
    for broker in brokers:
        await asyncio.to_thread(broker.wait_ready)
    return "SIGKILL every broker at once, restart all"


async def kill_two_replicas(target: FaultTarget) -> str:
    """SIGKILL both followers of partition 0 together: two of three replicas out, the ISR
    falls to the leader alone, below min.insync.replicas (2).

    While it is there an acks=all write is refused with NOT_ENOUGH_REPLICAS before the
    append (nothing written: the checker holds the probe to never being seen). Once one
    follower is back and in the ISR, an acks=all write is acknowledged again (the checker
    holds that probe to surviving). The other follower returns last.

    "In the ISR" is the leader's committed ISR, which admits acks=all, not the partition
    record's: a broker's watch can show the stored record before the leader has applied
    its own compare-and-set's answer, and a probe sent in between was refused
    NOT_ENOUGH_REPLICAS, rightly.
    """
    leader = await target.leader()
    followers = sorted(b for b in target.chaos.brokers if b != leader)
    for broker_id in followers:
        await asyncio.to_thread(target.chaos.brokers[broker_id].kill)
    returning = target.rng.choice(followers)
    try:
        await _wait_for_isr(target, lambda isr: isr == (leader,), f"ISR == [{leader}]")
        refused = await _probe_write(target, leader, "refused")
        assert (refused.outcome, refused.error) == (FAIL, "NOT_ENOUGH_REPLICAS"), (
            f"acks=all with ISR [{leader}] below min ISR {MIN_INSYNC_REPLICAS}: {refused}"
        )
        await target.restart(returning)
        await _wait_for_isr(target, lambda isr: len(isr) >= MIN_INSYNC_REPLICAS, "one follower back in the ISR")
        resumed = await _probe_write(target, leader, "resumed")
        assert resumed.outcome == OK, f"acks=all with {MIN_INSYNC_REPLICAS} in-sync replicas failed: {resumed}"
    finally:
        for broker_id in followers:
            if not target.chaos.brokers[broker_id].alive:
                await target.restart(broker_id)
    return (
        f"SIGKILL followers {followers} of leader {leader}: acks=all refused with NOT_ENOUGH_REPLICAS; "
        f"broker {returning} back in the ISR: acks=all acknowledged at {resumed.offset}"
    )


async def _wait_for_isr(target: FaultTarget, condition: Callable[[tuple[int, ...]], bool], what: str) -> None:
    def reached() -> bool:
        states = target.chaos.answered_states(target.topic)
        return states is not None and condition(states[0].leader_isr)

    await asyncio.to_thread(wait_until, reached, f"{target.topic}-0: {what}", ISR_CHANGE_TIMEOUT_S, POLL_INTERVAL_S)


async def _probe_write(target: FaultTarget, leader: int, label: str) -> WriteOp:
    """One acks=all write of a unique value straight to ``leader``, never retried, recorded in
    the history with the outcome its answer proves."""
    op = WriteOp("probe", target.topic, 0, f"probe-{label}-{len(target.history.writes)}", idempotent=True)
    target.history.writes.append(op)
    path = f"/topics/{target.topic}/records?acks=all&timeout_ms={PROBE_TIMEOUT_MS}"
    body = {"partition_id": 0, "value": {"type": "STRING", "data": op.value}}
    try:
        status, reply = await asyncio.to_thread(
            target.chaos.cluster.v3, "POST", path, body, via=leader, timeout_s=PROBE_TIMEOUT_MS / 1000 + 5
        )
    except OSError as failure:
        op.complete(UNKNOWN, error=type(failure).__name__)
        return op
    if status == 200:
        op.complete(OK, offset=reply["offset"])
    else:
        error = reply.get("error")
        op.complete(FAIL if error == "NOT_ENOUGH_REPLICAS" else UNKNOWN, error=error)
    log.info(
        "chaos.probe_write",
        topic=target.topic,
        leader=leader,
        value=op.value,
        outcome=op.outcome,
        offset=op.offset,
        error=op.error,
    )
    return op


async def _pause(target: FaultTarget, broker_id: int, role: str) -> str:
    broker = target.chaos.brokers[broker_id]
    broker.pause()
    try:
        # The hold time is the fault itself: paused past the session and lag timeouts, with its process alive.
        await asyncio.sleep(PAUSE_S)
    finally:
        broker.resume()
    return f"SIGSTOP {role} {broker_id} for {PAUSE_S:.1f} s, then SIGCONT"


async def pause_leader(target: FaultTarget) -> str:
    return await _pause(target, await target.leader(), "leader")


async def pause_follower(target: FaultTarget) -> str:
    return await _pause(target, await target.follower(), "follower")


async def sigterm_leader(target: FaultTarget) -> str:
    leader = await target.leader()
    await asyncio.to_thread(target.chaos.brokers[leader].stop)
    await target.restart(leader)
    return f"SIGTERM leader {leader} (controlled shutdown), restart"


async def _cut(target: FaultTarget, broker_id: int, role: str) -> str:
    target.chaos.mesh.isolate(broker_id)
    try:
        # The hold time is the fault itself: cut off for twice the lag timeout while clients still reach it.
        await asyncio.sleep(CUT_S)
    finally:
        target.chaos.mesh.heal_all()
    return f"cut {role} {broker_id} off from its peers for {CUT_S:.1f} s (clients still reach it)"


async def zombie_leader(target: FaultTarget) -> str:
    """Cut the leader off from its peers *and* the metadata store while clients still reach it.

    Needs a cluster on etcd behind per-broker proxies (``ChaosCluster.store_mesh``). Its
    lease expires, the controller elects another leader, yet the cut-off broker still
    believes it leads and keeps taking client writes: acks=1 ones it acknowledges can be
    lost (Kafka's contract for acks=1), acks=all ones can never be acknowledged, since no
    follower fetches from it. When the cut heals it must learn the newer epoch and cut
    its divergent tail, and no reader may have seen any of that tail.
    """
    store_mesh = target.chaos.store_mesh
    assert store_mesh is not None, "zombie_leader needs a cluster on etcd behind store proxies"
    leader = await target.leader()
    target.chaos.mesh.isolate(leader)
    store_mesh.isolate(leader)
    try:
        successor = await asyncio.to_thread(_wait_for_successor, target, leader, ZOMBIE_CUT_S)
        # The hold time is the fault itself: the zombie keeps taking client writes under a successor.
        await asyncio.sleep(ZOMBIE_CUT_S)
    finally:
        target.chaos.heal_all()
    return (
        f"cut leader {leader} off from its peers and the metadata store for {ZOMBIE_CUT_S:.1f} s "
        f"(clients still reach it); broker {successor} was elected meanwhile"
    )


def _wait_for_successor(target: FaultTarget, zombie: int, timeout_s: float) -> int:
    """The broker the rest of the cluster elected in the zombie's place (asked of a broker that is not cut;
    while the zombie still leads, that broker's describe waits on the zombie and times out)."""
    witness = next(b for b in sorted(target.chaos.brokers) if b != zombie)

    def successor() -> int | None:
        status, body = target.chaos.cluster.v3("GET", f"/topics/{target.topic}/partitions/0", via=witness, timeout_s=1)
        return int(body["leader_id"]) if status == 200 and body["leader_id"] not in (zombie, -1) else None

    what = f"a leader of {target.topic}-0 in place of the cut-off broker {zombie}"
    return wait_until(successor, what, timeout_s, POLL_INTERVAL_S)


async def cut_leader(target: FaultTarget) -> str:
    return await _cut(target, await target.leader(), "leader")


async def cut_follower(target: FaultTarget) -> str:
    return await _cut(target, await target.follower(), "follower")


async def _damage_tail_and_restart(target: FaultTarget, damage: Callable[[bytearray], bytearray], what: str) -> str:
    follower = await target.follower()
    broker = target.chaos.brokers[follower]
    await asyncio.to_thread(broker.kill)
    directory = broker.data_dir / partition_directory_name(target.topic, 0)
    segment = max(directory.glob("*.log"), default=None)
    if segment is not None and segment.stat().st_size > TORN_TAIL_BYTES:
        segment.write_bytes(bytes(damage(bytearray(segment.read_bytes()))))
    # The hold time is the fault itself: the follower stays dead past its session timeout.
    await asyncio.sleep(DOWN_S)
    await target.restart(follower)
    return f"SIGKILL follower {follower}, {what} of {target.topic}-0's active segment, restart"


async def torn_tail(target: FaultTarget) -> str:
    return await _damage_tail_and_restart(target, lambda raw: raw[:-TORN_TAIL_BYTES], "tear the tail")


async def corrupt_tail(target: FaultTarget) -> str:
    def flip_last_byte(raw: bytearray) -> bytearray:
        raw[-1] ^= 0xFF
        return raw

    return await _damage_tail_and_restart(target, flip_last_byte, "corrupt the last byte")


async def delete_hw_checkpoint(target: FaultTarget) -> str:
    broker_id = target.rng.choice(sorted(target.chaos.brokers))
    broker = target.chaos.brokers[broker_id]
    await asyncio.to_thread(broker.kill)
    (broker.data_dir / HW_CHECKPOINT_FILE).unlink(missing_ok=True)
    await target.restart(broker_id)
    return f"SIGKILL broker {broker_id}, delete its HW checkpoint, restart"


def kill_transaction_coordinator(transactional_id: str, state_partitions: int) -> Fault:
    """SIGKILL the coordinator of ``transactional_id`` (the leader of its ``__transaction_state``
    partition, of ``state_partitions``), likely in the middle of one of its transactions."""

    async def fault(target: FaultTarget) -> str:
        partition = partition_for_transactional_id(transactional_id, state_partitions)
        coordinator = await asyncio.to_thread(target.chaos.leader_of, TRANSACTION_STATE_TOPIC, partition)
        return await _kill_and_restart(target, coordinator, f"transaction coordinator of {transactional_id!r}")

    return fault


async def delay_markers(target: FaultTarget) -> str:
    """Hold every request from its peers to the leader of partition 0 (transaction markers, replica
    fetches) for ``MARKER_DELAY_S``, below the lag time so the ISR stays whole, then let them flow.

    A commit is answered once its decision is durable, before its markers land, so a writer may
    begin its next transaction meanwhile: the late marker must still close only the transaction
    it was written for (the Bufstream scenario, held off by the coordinator's marker serials).
    """
    leader = await target.leader()
    proxy = target.chaos.mesh.proxies[leader]
    proxy.block(INBOUND)
    try:
        # The hold time is the fault itself: markers and fetches queue up behind the stalled link.
        await asyncio.sleep(MARKER_DELAY_S)
    finally:
        proxy.heal(INBOUND)
    return f"held requests from its peers to leader {leader} (markers, fetches) for {MARKER_DELAY_S:.1f} s"


STORE_CUT_FAULTS: dict[str, Fault] = {"zombie_leader": zombie_leader}
"""Faults that need the cluster on etcd behind store proxies (``ChaosCluster.create(..., etcd=True)``)."""

FAULTS: dict[str, Fault] = {
    "kill_leader": kill_leader,
    "kill_follower": kill_follower,
    "kill_controller": kill_controller,
    "kill_all": kill_all,
    "kill_two_replicas": kill_two_replicas,
    "pause_leader": pause_leader,
    "pause_follower": pause_follower,
    "sigterm_leader": sigterm_leader,
    "cut_leader": cut_leader,
    "cut_follower": cut_follower,
    "torn_tail": torn_tail,
    "corrupt_tail": corrupt_tail,
    "delete_hw_checkpoint": delete_hw_checkpoint,
}
