"""The transaction protocol under reordered, duplicated and late messages and leader failovers.

Seeded (``tests/simulation/transactions_model.py``): the broker's pure coordinator,
partition-transaction and KIP-890 decisions, with Jepsen's checks. Each seed prints
what it ran when it fails, so it can be replayed.
"""

from __future__ import annotations

import pytest

from tests.simulation.transactions_model import TransactionModel

SEEDS = range(1, 201)
STEPS = 400


@pytest.mark.parametrize("chunk", range(4))
def test_no_anomaly_under_reordered_duplicated_and_late_messages(chunk: int) -> None:
    transactions = faults = 0
    for seed in SEEDS[chunk::4]:
        model = TransactionModel(seed)
        model.run(STEPS)
        anomalies = model.check()
        assert not anomalies, f"seed {seed}: {anomalies}"
        transactions += model.transaction
        faults += model.faults
    assert transactions > 1000 and faults > 1000, (transactions, faults)


def test_without_the_marker_defense_a_late_marker_breaks_a_later_transaction() -> None:
    """The check can fail: with stale markers taken, some seed shows Jepsen's anomalies."""
    found = []
    for seed in SEEDS:
        model = TransactionModel(seed, defended=False)
        model.run(STEPS)
        found = model.check()
        if found:
            break
    assert found, "no seed showed an anomaly without the defense"
