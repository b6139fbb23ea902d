"""Seeded simulation of one replicated partition (see ``simulation.py`` for the model).

CI: ``.venv/bin/python -m pytest tests/simulation -q`` runs a fixed set of seeds.
Replay a failure: ``.venv/bin/python -m pytest tests/simulation --seed 1234 --steps 5000``.
A long run: ``make sim SEEDS=50 STEPS=20000`` (random seeds, each printed with its steps,
faults injected and invariant checks; a failure prints the one command that replays it).
"""

from __future__ import annotations

import dataclasses
import itertools
import time

import pytest

from broker.cluster.reassignment import is_moving
from broker.storage.log_config import FLUSH_FSYNC, FLUSH_INTERVAL, FLUSH_OS
from tests.simulation.simulation import Simulation, SimulationFailure
from tests.simulation.world import SimConfig

PROFILES = {
    "3-brokers-fsync-power-loss": SimConfig(broker_count=3, flush_policy=FLUSH_FSYNC, power_loss=True),
    "5-brokers-min-isr-3-fsync": SimConfig(broker_count=5, min_insync_replicas=3, flush_policy=FLUSH_FSYNC),
    "3-brokers-os-flush-kill-9": SimConfig(broker_count=3, flush_policy=FLUSH_OS, power_loss=False),
    "3-brokers-interval-flush-kill-9": SimConfig(broker_count=3, flush_policy=FLUSH_INTERVAL, power_loss=False),
    "3-brokers-min-isr-altered-fsync-power-loss": SimConfig(broker_count=3, alter_min_isr=True, power_loss=True),
    "4-brokers-rf-3-moved-fsync-power-loss": SimConfig(
        broker_count=4, replication_factor=3, reassign=True, power_loss=True
    ),
    "3-brokers-stream-fsync-power-loss": SimConfig(
        broker_count=3, fetch_transport="stream", inline_follower_flush=True, power_loss=True
    ),
    "4-brokers-rf-3-moved-stream-fsync-power-loss": SimConfig(
        broker_count=4, replication_factor=3, reassign=True, fetch_transport="stream", power_loss=True
    ),
}


REGRESSIONS = [
    pytest.param(
        "3-brokers-fsync-power-loss",
        404,
        5_103,
        id="leader-hw-past-its-own-flush",
    ),
    pytest.param(
        "3-brokers-fsync-power-loss",
        423,
        6_251,
        id="leader-hw-past-its-own-flush-2",
    ),
    pytest.param(
        "3-brokers-os-flush-kill-9",
        3374827296,
        1_166,
        id="isr-expansion-answer-lost",
    ),
    pytest.param(
        "3-brokers-min-isr-altered-fsync-power-loss",
        1553763207,
        272,
        id="isr-expansion-answer-lost-2",
    ),
    pytest.param(
        "3-brokers-min-isr-altered-fsync-power-loss",
        202064879,
        4_000,
        id="crashed-disk-flush-retried-at-once",
    ),
    pytest.param(
        "4-brokers-rf-3-moved-stream-fsync-power-loss",
        1240266776,
        3_000,
        id="stream-late-answer-taken-for-the-next-fetch",
    ),
]
"""(profile, seed, steps) of failures found and fixed, replayed on every run.

``leader-hw-past-its-own-flush`` (and ``-2``): the leader counted its unflushed acks=1 tail in the
HW, was left alone in the ISR, lost power and was elected again without offsets
readers had been shown.

``isr-expansion-answer-lost`` (and ``-2``): the controller took an ISR expansion whose answer
the leader never got; the leader dropped the change, raised the HW without the new member,
and the controller later elected that member without acknowledged records. A change whose
outcome is unknown now stays in the maximal ISR until the newer record arrives
(``broker/replication/isr_change.py``).

``stream-late-answer-taken-for-the-next-fetch``: a replication stream kept its connection
after a fetch timed out there (a variant tried while building it), so the late answer was
taken for the next fetch's and a follower's HW passed its LEO. A fetch that fails in any way
now closes its connection (``broker/replica_io/replication_stream.py``, the pairing rule)."""


@pytest.mark.parametrize("profile", list(PROFILES))
def test_replicas_never_diverge_and_keep_everything_acknowledged(profile, seed, steps, sim_dir):
    print(f"\nsimulation seed={seed} steps={steps} profile={profile}")
    simulation = Simulation(seed, PROFILES[profile], sim_dir)
    started = time.perf_counter()
    stats = simulation.run(steps)
    elapsed_s = time.perf_counter() - started
    print(
        f"SIMULATION profile={profile} seed={seed} steps={stats.steps} faults={stats.faults} "
        f"invariant_checks={stats.invariant_checks} acked_all={stats.acked_all} "
        f"leader_changes={stats.leader_changes} moves={stats.moves} {stats.steps / elapsed_s:.0f} steps/s"
    )
    assert stats.steps == steps
    assert stats.produced_batches > 0
    assert stats.faults > 0 and stats.invariant_checks >= steps, "a run that injects no fault or checks nothing"
    assert simulation.history.acked_all, "no acks=all write succeeded: the run exercised nothing"


@pytest.mark.parametrize(("profile", "regression_seed", "regression_steps"), REGRESSIONS)
def test_pinned_regression_seeds_stay_fixed(profile, regression_seed, regression_steps, sim_dir):
    stats = Simulation(regression_seed, PROFILES[profile], sim_dir).run(regression_steps)
    assert stats.steps == regression_steps


def _first_failure(config: SimConfig, seeds: range, steps: int, directory) -> SimulationFailure | None:
    for seed in seeds:
        try:
            Simulation(seed, config, directory / f"seed-{seed}").run(steps)
        except SimulationFailure as failure:
            return failure
    return None


def test_checker_catches_followers_that_do_not_fsync_before_fetching(sim_dir):
    """Negative control: when a follower's fsync does nothing (the bug once fixed in
    ``fetcher.py``; here a disk that lies), power loss on followers drops records the leader
    acknowledged, and the checker says so. It takes several faults in a row: about one seed
    in twenty finds it within 800 steps."""
    config = dataclasses.replace(PROFILES["3-brokers-fsync-power-loss"], follower_fsync=False)
    failure = _first_failure(config, range(50, 80), 800, sim_dir)
    assert failure is not None
    assert "was exposed or acknowledged" in str(failure)
    assert "replay: pytest tests/simulation --seed" in str(failure)


def test_checker_catches_a_move_completed_before_its_new_replicas_caught_up(sim_dir):
    """Negative control: a controller that hands the partition to its new replicas before they are
    in sync elects a replica missing acknowledged records, and the checker says so."""
    config = dataclasses.replace(PROFILES["4-brokers-rf-3-moved-fsync-power-loss"], move_waits_for_sync=False)
    failure = _first_failure(config, range(20), 1_500, sim_dir)
    assert failure is not None
    assert "was exposed or acknowledged" in str(failure) or "exposes" in str(failure)


def test_checker_catches_a_restarted_leader_resuming_its_old_epoch(sim_dir):
    """Negative control: a controller that does not fence a bounced broker lets a restarted
    leader lead its old epoch again, from a lower HW (and, after power loss, re-using offsets)."""
    config = dataclasses.replace(PROFILES["3-brokers-fsync-power-loss"], fence_restarted_brokers=False)
    failure = _first_failure(config, range(24), 800, sim_dir)
    assert failure is not None
    assert "leader HW fell" in str(failure) or "exposed" in str(failure)


def test_fetches_outliving_their_incarnation_are_refused(sim_dir):
    """KIP-903: the network delays some fetches past their sender's crash and restart; the
    leader refuses them on their broker epoch, so a replica's state never mixes two lives of a
    broker, and the runs stay correct (every invariant is checked after every step)."""
    config = PROFILES["3-brokers-fsync-power-loss"]
    refused = sum(
        Simulation(seed, config, sim_dir / f"seed-{seed}").run(800).stale_fetches_refused for seed in range(6)
    )
    assert refused > 0


def test_stream_runs_break_and_reopen_connections_and_stay_correct(sim_dir):
    """The stream profiles exercise the stream's failure paths: connections break (losses,
    resets, crashes) and followers open new ones, every invariant holding after every step."""
    config = PROFILES["3-brokers-stream-fsync-power-loss"]
    runs = [Simulation(seed, config, sim_dir / f"seed-{seed}").run(800) for seed in range(3)]
    for stats in runs:
        assert stats.acked_all
        unbroken = config.broker_count * (stats.leader_changes + 1)
        assert stats.streams_opened > unbroken, "as many streams as leaderships: none broke and was opened again"


def test_a_seed_replays_exactly(sim_dir):
    """The drivers run on the simulation's clocks and wake their waiters in a fixed order, so
    a seed is a replay: the same faults, the same records, the same leader changes."""
    config = PROFILES["3-brokers-fsync-power-loss"]
    runs = []
    for attempt in range(2):
        simulation = Simulation(7, config, sim_dir / f"attempt-{attempt}")
        stats = simulation.run(600)
        runs.append((stats, simulation.controller.history, list(simulation.trace_lines)))
    assert runs[0][0].faults > 0 and runs[0][0].acked_all > 0
    assert runs[0] == runs[1]


def test_an_idempotent_retry_of_a_batch_the_leader_holds_is_answered_not_written_again(sim_dir):
    """KIP-98 through the drivers: the idempotent producer resends a batch whose answer was
    lost (a crash, a timeout); a leader whose log holds it answers with the original offsets
    (``Partition``'s de-duplication) and rule 8 checks nothing is written twice."""
    config = PROFILES["3-brokers-fsync-power-loss"]
    runs = [Simulation(seed, config, sim_dir / f"seed-{seed}").run(1_000) for seed in range(6)]
    assert sum(stats.idempotent_retries for stats in runs) > 0
    assert sum(stats.retries_deduplicated for stats in runs) > 0


def test_moves_complete_hand_leadership_over_and_bring_stale_replicas_back(sim_dir):
    """The reassignment profile does what it claims: moves complete (the target in sync, the
    replicas replaced), a leaving leader hands over, and a broker removed earlier is added back
    with its old log; every invariant held after every step and the new replicas converged."""
    config = PROFILES["4-brokers-rf-3-moved-fsync-power-loss"]
    completed = handed_over = added_back = 0
    for seed in (1, 7):
        simulation = Simulation(seed, config, sim_dir / f"seed-{seed}")
        simulation.run(3_000)
        records = simulation.controller.history
        done = [(a, b) for a, b in itertools.pairwise(records) if is_moving(a) and not is_moving(b)]
        completed += sum(1 for a, b in done if sorted(a.replicas) != sorted(b.replicas))
        handed_over += sum(1 for a, b in done if a.leader != b.leader)
        added_back += sum(
            1
            for index, record in enumerate(records)
            for broker in record.adding_replicas
            if any(broker in earlier.replicas for earlier in records[:index])
        )
    assert completed >= 2 and handed_over >= 1 and added_back >= 1, (completed, handed_over, added_back)
