"""The seeded random mix: every fault, drawn one after another for ``--chaos-duration-s``.

The cluster runs on a real etcd that each broker reaches through its own proxy, so the
mix includes the zombie leader (cut off from peers and store) next to the other faults.

Short in CI; ``make chaos SEED=… DURATION=…`` runs it long. The seed is printed so a
failing mix can be replayed. Faults come one at a time, each healed (every partition
led with its full ISR) before the next. The worst single fault takes two of the three
replicas out together: RF 3 with min ISR 2 then refuses acks=all writes, and must
still lose nothing it acknowledged. At the end the brokers are stopped and every
replica's log is opened from disk (recovery included) and compared byte for byte
below the HW.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from broker.record.header import iter_batches
from tests.chaos.cluster import ChaosCluster
from tests.chaos.faults import FAULTS, STORE_CUT_FAULTS
from tests.chaos.run import chaos_run, random_plan

pytestmark = [pytest.mark.chaos, pytest.mark.asyncio(loop_scope="function")]


async def test_mixed_faults_keep_every_promise(tmp_path: Path, chaos_seed: int, chaos_duration_s: float) -> None:
    rng = random.Random(chaos_seed)
    chaos = await ChaosCluster.create(tmp_path / "cluster", etcd=True)
    try:
        await asyncio.to_thread(chaos.start)
        plan = random_plan(rng, [*FAULTS.values(), *STORE_CUT_FAULTS.values()], chaos_duration_s)
        result = await chaos_run(chaos, "mixed", plan, rng)
        reference = await asyncio.to_thread(_settled_bytes, chaos, ["mixed-all", "mixed-one"])
        chaos.kill_all()
        result.reports[0].violations.extend(_differences_after_stop(chaos, reference))
    finally:
        await chaos.close()
    print(f"\nseed {chaos_seed}, {len(result.faults)} faults injected")
    print(result.summary())
    assert result.faults, "no fault was injected"
    assert sum(report.counts["acked"] for report in result.reports) > 0
    assert not result.violations, "\n".join(result.violations)


def _settled_bytes(chaos: ChaosCluster, topics: list[str]) -> dict[tuple[str, int], bytes]:
    """Broker 1's bytes below the HW of each partition (the checker found all replicas equal)."""
    return {
        (topic, p): chaos.replica_bytes_live(topic, p, 1, state.high_watermark)
        for topic in topics
        for p, state in enumerate(chaos.partition_states(topic))
    }


def _differences_after_stop(chaos: ChaosCluster, reference: dict[tuple[str, int], bytes]) -> list[str]:
    """Each stopped replica, opened with ``PartitionLog`` (recovery runs), against the settled bytes."""
    differences = []
    for (topic, partition), expected in reference.items():
        high_watermark = _end_offset(expected)
        for broker_id in chaos.brokers:
            found = chaos.replica_bytes_stopped(topic, partition, broker_id, high_watermark)
            if found != expected:
                differences.append(f"after stop: {topic}-{partition} on broker {broker_id} differs below the HW")
    return differences


def _end_offset(raw: bytes) -> int:
    return max((header.last_offset + 1 for header in iter_batches(raw)), default=0)
