"""Failure detection with real broker processes: exactly one controller, controller
failover after SIGKILL of the controller, and leadership moving off a SIGKILLed broker.

Both are measured (median of ``RUNS`` kills) on both metadata stores and printed as
``FIGURE`` lines (run with ``-s`` to see them). The clock starts just before SIGKILL
and stops when a surviving broker's REST API shows the outcome: for the controller,
``GET /v3/clusters`` naming a new live controller; for leaderships, every partition
the dead broker led having a live leader with a higher ``leader_epoch``. Detection
cannot be faster than the session timeout minus one heartbeat interval (the lease was
last renewed at most one heartbeat before the kill), nor should it be much slower.

The tests use a 2000 ms session; ``HWTEST_FIGURES_SESSION_TIMEOUT_MS=6000
HWTEST_FIGURES_HEARTBEAT_INTERVAL_MS=1000`` measures with the default session,
comparable with Kafka's defaults (``broker.session.timeout.ms`` 9000 in KRaft).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import pytest

from tests.integration.cluster_harness import (
    DETECTION_MARGIN_MS,
    HEARTBEAT_INTERVAL_MS,
    SESSION_TIMEOUT_MS,
    LiveCluster,
    report_figure,
    session_env,
    wait_until,
)
from tests.support.brokers import http_json

pytestmark = pytest.mark.integration

RUNS = 5
TOPIC = "moves"


def measure_controller_failover_ms(cluster: LiveCluster, session_timeout_ms: int) -> float:
    """SIGKILL the controller; ms until a survivor's ``GET /v3/clusters`` names a new one.
    The killed broker is restarted afterwards, so the next run starts with a full cluster."""
    old_controller = cluster.controller_id()
    observer = min(cluster.live_ids() - {old_controller})
    killed_at = time.monotonic()
    cluster.brokers[old_controller].kill()

    def new_controller() -> int | None:
        controller = cluster.controller_id(observer)
        return controller if controller not in (old_controller, -1) else None

    controller = wait_until(new_controller, (session_timeout_ms + 10_000) / 1000, "a new controller")
    elapsed_ms = (time.monotonic() - killed_at) * 1000
    assert controller in cluster.live_ids()
    for survivor in cluster.live_ids():
        wait_until(partial(names_controller, cluster, survivor, controller), 3, f"broker {survivor} to agree")
    rejoin_and_lead_again(cluster, old_controller)
    return elapsed_ms


def names_controller(cluster: LiveCluster, via: int, controller: int) -> bool:
    return cluster.controller_id(via) == controller


def rejoin_and_lead_again(cluster: LiveCluster, broker_id: int) -> None:
    """Restart ``broker_id``, wait until it is in sync, restore preferred leaders."""
    cluster.restart(broker_id)
    cluster.wait_in_every_isr(TOPIC, broker_id)
    status, body = http_json("POST", f"{cluster.base()}/partitions:elect-preferred", {"topic_name": TOPIC})
    assert status == 200, body
    wait_until(lambda: cluster.led_by(TOPIC, broker_id), 5, f"broker {broker_id} to lead again")


def measure_leadership_move_ms(cluster: LiveCluster, session_timeout_ms: int) -> float:
    """SIGKILL a broker that leads partitions but is not the controller; ms until every
    partition it led has a new live leader with a higher leader epoch (as a survivor's
    ``GET …/partitions`` shows). Checks that it left every ISR, then restarts it, waits
    until it is back in sync and restores preferred leaders for the next run."""
    controller = cluster.controller_id()
    leaders = {state.leader_id for state in cluster.partitions(TOPIC).values()}
    victim = min(leaders - {controller})
    before = cluster.led_by(TOPIC, victim)
    observer = controller
    killed_at = time.monotonic()
    cluster.brokers[victim].kill()

    def moved() -> bool:
        states = cluster.partitions(TOPIC, observer)
        return all(
            states[p].leader_id in cluster.live_ids() and states[p].leader_epoch > old.leader_epoch
            for p, old in before.items()
        )

    wait_until(moved, (session_timeout_ms + 10_000) / 1000, f"the leaderships of broker {victim} to move")
    elapsed_ms = (time.monotonic() - killed_at) * 1000

    def left_every_isr() -> bool:
        return all(victim not in state.isr for state in cluster.partitions(TOPIC, observer).values())

    wait_until(left_every_isr, 2, f"broker {victim} to leave every ISR")
    rejoin_and_lead_again(cluster, victim)
    return elapsed_ms


def run_figures(
    make: Callable[..., LiveCluster], store: str, session_timeout_ms: int, env: dict[str, str]
) -> tuple[float, float]:
    cluster = make(store, env=env)
    cluster.create_topic(TOPIC, partitions=6, replication_factor=3)
    for partition in range(6):
        status, reply = cluster.produce(TOPIC, partition, [f"r{partition}-{i}" for i in range(20)])
        assert status == 207 and not reply["failures"], reply
    failover = [measure_controller_failover_ms(cluster, session_timeout_ms) for _ in range(RUNS)]
    moves = [measure_leadership_move_ms(cluster, session_timeout_ms) for _ in range(RUNS)]
    for partition in range(6):
        cluster.wait_for_values(TOPIC, partition, [f"r{partition}-{i}" for i in range(20)])
    return (
        report_figure("controller_failover", failover, store, session_timeout_ms),
        report_figure("leadership_move_after_sigkill", moves, store, session_timeout_ms),
    )


def test_every_broker_names_the_same_single_controller(metadata_store: str, live_cluster_factory) -> None:
    cluster = live_cluster_factory(metadata_store)
    for _ in range(10):
        named = {cluster.controller_id(via) for via in cluster.brokers}
        assert len(named) == 1 and named <= set(cluster.brokers), named
        time.sleep(0.05)
    assert cluster.registered_ids() == {1, 2, 3}


def test_controller_failover_and_leadership_move_after_sigkill(metadata_store: str, live_cluster_factory) -> None:
    failover_ms, move_ms = run_figures(live_cluster_factory, metadata_store, SESSION_TIMEOUT_MS, session_env())
    earliest_ms = SESSION_TIMEOUT_MS - HEARTBEAT_INTERVAL_MS - 100
    assert earliest_ms <= failover_ms <= SESSION_TIMEOUT_MS + DETECTION_MARGIN_MS
    assert earliest_ms <= move_ms <= SESSION_TIMEOUT_MS + DETECTION_MARGIN_MS
