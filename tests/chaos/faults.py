"""The faults, by name. Each injects one failure and heals it before returning.

All of them target the leader (or a follower) of partition 0 of the topic they are
given, as it is at the time. Process control and HTTP run in worker threads, so the
workload on the event loop keeps going while a broker dies, sleeps or restarts.

Hold times are set against the cluster's timeouts (session and lag both 2 s): a kill
lasts past the session timeout so leadership really moves; a pause outlasts both, so
the paused broker loses its lease and leaves the ISR while its process still exists.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from broker.storage.log_manager import partition_directory_name
from tests.chaos.cluster import HW_CHECKPOINT_FILE, LAG_TIME_MAX_MS, SESSION_TIMEOUT_MS, ChaosCluster
from tests.support.brokers import http_json

log = structlog.get_logger(__name__)

DOWN_S = SESSION_TIMEOUT_MS / 1000 + 0.7
PAUSE_S = max(SESSION_TIMEOUT_MS, LAG_TIME_MAX_MS) / 1000 + 1.5
CUT_S = LAG_TIME_MAX_MS / 1000 * 2
ZOMBIE_CUT_S = SESSION_TIMEOUT_MS / 1000 * 2.5
TORN_TAIL_BYTES = 7


@dataclass
class FaultTarget:
    chaos: ChaosCluster
    topic: str
    rng: random.Random

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
    await asyncio.sleep(0.5)
    for broker in brokers:
        broker.start(wait=False)
    for broker in brokers:
        await asyncio.to_thread(broker.wait_ready)
    return "SIGKILL every broker at once, restart all"


async def _pause(target: FaultTarget, broker_id: int, role: str) -> str:
    broker = target.chaos.brokers[broker_id]
    broker.pause()
    try:
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
    url = f"{target.chaos.brokers[witness].url}/v3/clusters/{target.chaos.cluster_id}/topics/{target.topic}/partitions/0"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            status, body = http_json("GET", url, timeout_s=1)
        except OSError:
            continue
        if status == 200 and body["leader_id"] not in (zombie, -1):
            return int(body["leader_id"])
        time.sleep(0.1)
    raise AssertionError(f"no leader replaced the cut-off broker {zombie} within {timeout_s} s")


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


STORE_CUT_FAULTS: dict[str, Fault] = {"zombie_leader": zombie_leader}
"""Faults that need the cluster on etcd behind store proxies (``ChaosCluster.create(..., etcd_port=)``)."""

FAULTS: dict[str, Fault] = {
    "kill_leader": kill_leader,
    "kill_follower": kill_follower,
    "kill_controller": kill_controller,
    "kill_all": kill_all,
    "pause_leader": pause_leader,
    "pause_follower": pause_follower,
    "sigterm_leader": sigterm_leader,
    "cut_leader": cut_leader,
    "cut_follower": cut_follower,
    "torn_tail": torn_tail,
    "corrupt_tail": corrupt_tail,
    "delete_hw_checkpoint": delete_hw_checkpoint,
}
