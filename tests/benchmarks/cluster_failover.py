"""Failure-detection figures, measured by hand: ``python -m tests.benchmarks.cluster_failover``.

For each metadata store, ``RUNS`` kills of each kind (``test_cluster_failover``'s steps):
the ms from SIGKILL of the controller until a survivor names a new one, and from
SIGKILL of a leader until every partition it led has a live leader with a higher
epoch; and once, the ms from SIGTERM of the controller until the last broker rules
(``test_cluster_membership``'s step). Each is printed as a ``FIGURE`` line.

Detection cannot be faster than the session timeout minus one heartbeat interval (the
lease was last renewed at most one heartbeat before the kill), nor should it be much
slower (about 1500 ms beyond the session for lease expiry, election and the metadata
reaching the broker asked). The session is 2000 ms, heartbeats 300 ms;
``HWTEST_FIGURES_SESSION_TIMEOUT_MS=6000 HWTEST_FIGURES_HEARTBEAT_INTERVAL_MS=1000``
measures with the default session, comparable with Kafka's defaults
(``broker.session.timeout.ms`` 9000 in KRaft).
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from tests.integration import test_cluster_failover as failover
from tests.integration import test_cluster_membership as membership
from tests.support.cluster import ClusterSpec, start_cluster

RUNS = 5
SESSION_TIMEOUT_MS = int(os.environ.get("HWTEST_FIGURES_SESSION_TIMEOUT_MS", "2000"))
HEARTBEAT_INTERVAL_MS = int(os.environ.get("HWTEST_FIGURES_HEARTBEAT_INTERVAL_MS", "300"))


def report_figure(name: str, samples_ms: list[float], store: str, session_timeout_ms: int) -> float:
    """Print one measured figure (median and the samples) and return the median in ms."""
    median_ms = statistics.median(samples_ms)
    samples = ", ".join(f"{sample:.0f}" for sample in samples_ms)
    print(
        f"FIGURE {name} store={store} session_timeout_ms={session_timeout_ms} "
        f"median_ms={median_ms:.0f} runs={len(samples_ms)} samples_ms=[{samples}]",
        flush=True,
    )
    return median_ms


def measure_kills(store: failover.Store, root: Path) -> None:
    spec = ClusterSpec(
        store=store,
        settings={
            "broker_session_timeout_ms": SESSION_TIMEOUT_MS,
            "broker_heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
        },
    )
    cluster = start_cluster(spec, root)
    try:
        failover.with_records(cluster)
        controller = [failover.kill_the_controller(cluster) for _ in range(RUNS)]
        leader = [failover.kill_a_leader(cluster) for _ in range(RUNS)]
        failover.assert_nothing_lost(cluster)
    finally:
        cluster.shutdown()
    report_figure("controller_failover", controller, store, SESSION_TIMEOUT_MS)
    report_figure("leadership_move_after_sigkill", leader, store, SESSION_TIMEOUT_MS)


def measure_sigterm_handover(store: failover.Store, root: Path) -> None:
    cluster = start_cluster(membership.long_session(store), root)
    try:
        handover_ms = membership.stop_a_follower_then_the_controller(membership.with_data(cluster))
    finally:
        cluster.shutdown()
    print(f"FIGURE controller_handover_after_sigterm store={store} ms={handover_ms:.0f}", flush=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="measure-failover-") as directory:
        root = Path(directory)
        for store in failover.STORES:
            measure_kills(store, root / f"kills-{store}")
            measure_sigterm_handover(store, root / f"sigterm-{store}")


if __name__ == "__main__":
    main()
