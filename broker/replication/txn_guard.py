"""What a partition leader takes from a transactional producer, and which markers it writes (KIP-890).

The log's transactions (``broker.storage.transactions``) say which producers have a
transaction open here; this guard, held by the leader only, says which transaction
(the coordinator's ``serial``) each of them is, as learned when the coordinator
verified it. Pure: the driver asks the coordinator when a decision says so.

Data (``admit``):
- a producer with no transaction open here, or one open at an older epoch than the
  batch's, must be verified first: the coordinator confirms the partition is in the
  producer's open transaction at that epoch, and names its serial (``on_verified``). So a
  transactional batch never opens a transaction the coordinator does not know of (one
  nobody would end, holding the last stable offset back for ever), nor lands in a later
  transaction than the one it was written for;
- a batch at an older epoch than the open transaction's is refused (``INVALID_PRODUCER_EPOCH``);
- a batch of a verified transaction at its epoch is taken as it is: the entry lives until
  the producer's marker is written here, so the transaction is still the open one.

Markers (``check_marker``): a marker ends the open transaction it names. One whose
serial is not the verified serial of the producer's open transaction is stale (it was
delayed past the end of its own transaction) and is refused; one at an older epoch than
the open transaction's data too. A leader that has not verified the open transaction
itself (it took over after a failover) cannot tell, so it asks the coordinator to
confirm the serial is the one being ended (``MarkerCheck.CONFIRM``). With no transaction
of the producer open here, a marker changes nothing a reader sees and is written
(Kafka writes one to every partition of the transaction).

Guard entries live until the producer's marker is written, so a write that was verified
before the marker and appended after it is verified again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from broker.errors import InvalidProducerEpoch
from broker.errors.transactions import InvalidTxnState
from broker.record.header import BatchHeader


@dataclass(frozen=True, slots=True)
class Verified:
    producer_epoch: int
    serial: int


class Admission(Enum):
    TAKE = "take"
    VERIFY = "verify"


class MarkerCheck(Enum):
    WRITE = "write"
    CONFIRM = "confirm"


class TransactionGuard:
    """Producer id -> the verified transaction open here; one per leader replica, dropped with leadership."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self._verified: dict[int, Verified] = {}

    def admit(self, header: BatchHeader, opened_epoch: int | None) -> Admission:
        """A transactional data batch of ``header.producer_id``; ``opened_epoch``: the epoch of its
        transaction open in the log (None when none is)."""
        if opened_epoch is not None and header.producer_epoch < opened_epoch:
            raise InvalidProducerEpoch(
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than the epoch "
                f"{opened_epoch} of its transaction open in {self.topic}-{self.partition}"
            )
        verified = self._verified.get(header.producer_id)
        if verified is not None and verified.producer_epoch == header.producer_epoch:
            return Admission.TAKE
        return Admission.VERIFY

    def on_verified(self, producer_id: int, producer_epoch: int, serial: int) -> None:
        self._verified[producer_id] = Verified(producer_epoch, serial)

    def verified(self, producer_id: int) -> Verified | None:
        return self._verified.get(producer_id)

    def still_verified(self, producer_id: int, producer_epoch: int, serial: int) -> bool:
        """Whether the verification a write waited for still stands (no marker came in between)."""
        return self._verified.get(producer_id) == Verified(producer_epoch, serial)

    def check_marker(self, producer_id: int, producer_epoch: int, serial: int, opened_epoch: int | None) -> MarkerCheck:
        """A marker of transaction ``serial``; ``opened_epoch`` as for ``admit``."""
        where = f"{self.topic}-{self.partition}"
        if opened_epoch is not None and producer_epoch < opened_epoch:
            raise InvalidProducerEpoch(
                f"marker of producer {producer_id} at epoch {producer_epoch} is older than its transaction "
                f"open in {where} (epoch {opened_epoch})"
            )
        verified = self._verified.get(producer_id)
        if verified is not None and verified.serial != serial:
            raise InvalidTxnState(
                f"marker of transaction {serial} of producer {producer_id} is stale: transaction "
                f"{verified.serial} is the one open in {where}"
            )
        if opened_epoch is not None and verified is None:
            return MarkerCheck.CONFIRM
        return MarkerCheck.WRITE

    def on_marker_written(self, producer_id: int) -> None:
        self._verified.pop(producer_id, None)
