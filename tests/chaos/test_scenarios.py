"""Each fault on its own, under the workload, judged by the checker (one shared cluster).

The named scenarios of the replication reference: SIGKILL of the partition leader, a
follower, the controller, every broker, both followers at once (acks=all refused with
NOT_ENOUGH_REPLICAS until one returns, scenario 2); SIGSTOP longer than the session and lag
timeouts; SIGTERM; a leader or follower cut off from its peers while clients still
reach it; a torn or corrupted segment tail; a deleted HW checkpoint.
"""

from __future__ import annotations

import random

import pytest

from tests.chaos.faults import FAULTS
from tests.chaos.run import chaos_run, named_plan

pytestmark = [pytest.mark.chaos, pytest.mark.asyncio(loop_scope="module")]


@pytest.mark.parametrize("fault_name", list(FAULTS))
async def test_named_fault_keeps_every_promise(shared_chaos_cluster, chaos_seed: int, fault_name: str) -> None:
    name = fault_name.replace("_", "-")
    result = await chaos_run(
        shared_chaos_cluster, name, named_plan(FAULTS[fault_name]), random.Random(chaos_seed), warmup_s=0.8
    )
    print("\n" + result.summary())
    acked = sum(report.counts["acked"] for report in result.reports)
    assert acked > 0, "the workload never got a write acknowledged"
    assert result.faults, "no fault was injected"
    assert not result.violations, "\n".join(result.violations)
