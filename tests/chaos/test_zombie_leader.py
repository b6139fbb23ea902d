"""The zombie leader: cut off from its peers and from the metadata store (etcd), still reached by clients.

A cluster on a real etcd, each broker reaching it through its own cuttable proxy. The
leader of partition 0 loses its lease, another broker is elected, the old one keeps
taking writes until the cut heals; then it must follow the new leader and truncate.
The checker judges the run like every other scenario.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from tests.chaos.cluster import ChaosCluster
from tests.chaos.faults import zombie_leader
from tests.chaos.run import chaos_run, named_plan

pytestmark = [pytest.mark.chaos, pytest.mark.asyncio(loop_scope="function")]


async def test_a_zombie_leader_loses_nothing_acknowledged_and_no_read_is_taken_back(
    tmp_path: Path, chaos_seed: int
) -> None:
    chaos = await ChaosCluster.create(tmp_path / "cluster", etcd=True)
    try:
        await asyncio.to_thread(chaos.start)
        result = await chaos_run(chaos, "zombie", named_plan(zombie_leader), random.Random(chaos_seed))
    finally:
        await chaos.close()
    print("\n" + result.summary())
    assert result.faults, "no fault was injected"
    assert sum(report.counts["acked"] for report in result.reports) > 0
    assert not result.violations, "\n".join(result.violations)
