"""How long acks=all is unavailable after the leader is SIGKILLed: a measurement, run by hand.

``python -m tests.benchmarks.replication_failover`` starts three fast brokers
(``FAST_SETTINGS``: a 2 s session), kills the leader five times under acks=all load, as
``test_replication_leader_failover`` does, and prints the window from each SIGKILL until
the first produce sent after it succeeded. The test checks what survives; the time it
takes depends on the machine, so it is a figure here and no assertion there.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from tests.support.cluster import FAST_SETTINGS, ClusterSpec, start_cluster
from tests.support.replication import create_replicated
from tests.support.replication_load import BackgroundProducer, kill_leader_under_load

ROUNDS = 5


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="failover-figures-") as root:
        cluster = start_cluster(ClusterSpec(), Path(root))
        try:
            description = create_replicated(cluster)
            producer = BackgroundProducer(cluster).start()
            windows_s = []
            try:
                for _ in range(ROUNDS):
                    description, unavailable_s = kill_leader_under_load(
                        cluster, producer, description, set(cluster.brokers)
                    )
                    windows_s.append(unavailable_s)
            finally:
                producer.stop()
        finally:
            cluster.shutdown()
    print(
        f"\nunavailability after leader SIGKILL: median {statistics.median(windows_s):.2f} s, "
        f"each {[round(w, 2) for w in windows_s]} (session timeout {FAST_SETTINGS['broker_session_timeout_ms']} ms)"
    )


if __name__ == "__main__":
    main()
