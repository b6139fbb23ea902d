"""Consumer-group timing figures, measured by hand: ``python -m tests.benchmarks.group_failover``.

Two figures, each printed as a ``FIGURE`` line: the ms from a member's last heartbeat
until the partitions it held moved to the others (``test_groups_membership``'s steps,
session ``SESSION_TIMEOUT_MS``), and the ms from SIGKILL of a group's coordinator until
its committed offsets are readable again through a survivor (``test_groups_failover``'s
steps, a fresh cluster per kill).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from tests.integration import test_groups_failover as failover
from tests.integration import test_groups_membership as membership
from tests.integration.group_members import SESSION_TIMEOUT_MS, settle
from tests.support.cluster import FAST_SETTINGS, start_cluster

RUNS = 5


def report_figure(name: str, timeout: str, samples_ms: list[float]) -> None:
    """One ``FIGURE`` line: the timeout that bounds the figure, the median and every sample."""
    samples = ", ".join(f"{sample:.0f}" for sample in samples_ms)
    print(
        f"FIGURE {name} {timeout} median_ms={statistics.median(samples_ms):.0f} "
        f"runs={len(samples_ms)} samples_ms=[{samples}]",
        flush=True,
    )


def measure_rebalance(root: Path) -> list[float]:
    cluster = start_cluster(membership.SPEC, root)
    try:
        members, everything = membership.split(cluster, "measure")
        samples = []
        for round_ in range(RUNS):
            members, moved_ms = membership.expel_the_silent_member(cluster, members, round_)
            samples.append(moved_ms)
            settle(members, everything)
        return samples
    finally:
        cluster.shutdown()


def measure_coordinator_failover(root: Path) -> float:
    cluster = start_cluster(failover.SPEC, root)
    try:
        failover.with_committed_offsets(cluster)
        coordinator = failover.coordinator_of(cluster, failover.GROUP)
        return failover.kill_the_coordinator(cluster, next(i for i in cluster.brokers if i != coordinator))
    finally:
        cluster.shutdown()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="measure-groups-") as directory:
        root = Path(directory)
        rebalances = measure_rebalance(root / "rebalance")
        report_figure("group_rebalance_after_silent_member", f"session_timeout_ms={SESSION_TIMEOUT_MS}", rebalances)
        failovers = [measure_coordinator_failover(root / f"failover-{run}") for run in range(RUNS)]
        broker_session = f"broker_session_timeout_ms={FAST_SETTINGS['broker_session_timeout_ms']}"
        report_figure("group_coordinator_failover_offsets_readable", broker_session, failovers)


if __name__ == "__main__":
    main()
