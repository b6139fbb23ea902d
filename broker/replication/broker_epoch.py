"""Broker epochs on replica fetches (Kafka's KIP-903): which incarnation of a follower fetched.

A broker's epoch is the revision of its registration (``broker.cluster.membership``);
every start, and every re-registration after a lost session, gets a larger one. The
follower sends it with each fetch. The leader compares it with two numbers:

- the epoch recorded in its state for that replica (the incarnation whose fetches
  built the LEO and caught-up time it holds), and
- the epoch registered for that broker in the metadata the leader has seen
  (``UNKNOWN_BROKER_EPOCH`` when the broker is not registered there).

Rules:

- a fetch whose epoch is below either is from an incarnation that is gone (a delayed
  request of a broker that restarted, maybe with an empty disk): refused with
  ``STALE_BROKER_EPOCH``, so its offsets never count towards the HW or the ISR;
- a fetch whose epoch is above the recorded one is from a new incarnation: the
  replica's state starts afresh (LEO unknown, never caught up), since nothing the
  leader learned from the previous incarnation says what the new one holds;
- a replica may join the ISR only while its recorded epoch is the registered one, so
  a replica is never added on the strength of fetches from an incarnation that the
  leader's metadata does not (or no longer) show alive;
- the ISR write itself is refused if a joining replica's epoch is no longer the one
  registered in the metadata store (``stale_joiners``), which closes the gap left
  by a leader whose view of the registrations lags a restart.

Pure: numbers in, decisions out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from broker.errors import StaleBrokerEpoch

UNKNOWN_BROKER_EPOCH = -1
"""No fetch recorded yet in this leader epoch, or the broker is not registered."""


def check_fetch_broker_epoch(
    topic: str,
    partition: int,
    replica_id: int,
    fetch_broker_epoch: int,
    *,
    recorded_broker_epoch: int,
    registered_broker_epoch: int,
) -> StaleBrokerEpoch | None:
    """``STALE_BROKER_EPOCH`` if the fetch comes from an incarnation older than one already seen."""
    newest_seen = max(recorded_broker_epoch, registered_broker_epoch)
    if fetch_broker_epoch >= newest_seen:
        return None
    return StaleBrokerEpoch(
        f"fetch of {topic}-{partition} from broker {replica_id} carries broker epoch "
        f"{fetch_broker_epoch}, older than {newest_seen}",
        topic=topic,
        partition=partition,
        replica_id=replica_id,
        broker_epoch=fetch_broker_epoch,
        expected_broker_epoch=newest_seen,
    )


def is_new_incarnation(recorded_broker_epoch: int, fetch_broker_epoch: int) -> bool:
    """A fetch from a later incarnation than the one the recorded state came from."""
    return recorded_broker_epoch != UNKNOWN_BROKER_EPOCH and fetch_broker_epoch > recorded_broker_epoch


def is_isr_eligible(recorded_broker_epoch: int, registered_broker_epoch: int) -> bool:
    """Kafka's ``isReplicaIsrEligible`` broker-epoch part: the state comes from the registered incarnation."""
    return registered_broker_epoch != UNKNOWN_BROKER_EPOCH and recorded_broker_epoch == registered_broker_epoch


def stale_joiners(joining_broker_epochs: Iterable[tuple[int, int]], registered: Mapping[int, int]) -> list[int]:
    """The joining replicas whose broker epoch is not the one ``registered`` (broker id ->
    epoch of its registration in the metadata store; an absent broker has none)."""
    return [
        broker_id
        for broker_id, broker_epoch in joining_broker_epochs
        if not is_isr_eligible(broker_epoch, registered.get(broker_id, UNKNOWN_BROKER_EPOCH))
    ]
