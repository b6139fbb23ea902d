"""Transactions under faults, judged by Jepsen's transactional checks (``txn_checker``).

Every run kills the first writer's transaction coordinator, delays markers to a leader and
kills a leader, then draws faults (kills, pauses, cuts, SIGTERM, every broker at once) for
``--chaos-duration-s``; ``make chaos`` runs it long. Zero aborted reads, torn transactions,
lost commits, duplicates or reordered reads, and the transform's output exactly once.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from tests.chaos.cluster import ChaosCluster
from tests.chaos.history import ABORTED, COMMITTED
from tests.chaos.txn_run import TXN_SETTINGS, transactional_run

pytestmark = [pytest.mark.chaos, pytest.mark.asyncio(loop_scope="function")]


async def test_transactions_under_faults_show_no_anomaly(
    tmp_path: Path, chaos_seed: int, chaos_duration_s: float
) -> None:
    chaos = await ChaosCluster.create(tmp_path / "cluster", kafka=True, settings=TXN_SETTINGS)
    try:
        await asyncio.to_thread(chaos.start)
        result = await transactional_run(chaos, random.Random(chaos_seed), chaos_duration_s)
    finally:
        await chaos.close()
    print(f"\nseed {chaos_seed}")
    print(result.summary())
    source = result.reports[0].counts
    assert source[COMMITTED] > 0 and source[ABORTED] > 0, "the writers never both committed and aborted"
    assert result.transformed > 0, "the transform never committed a batch"
    assert len(result.history.faults) >= 3
    assert not result.violations, "\n".join(result.violations)
