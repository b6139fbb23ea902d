"""The steps of ``highwater bench scale`` and how cost grows between them: pure, no I/O.

A sweep is a list of values of one dimension (``--partitions 1,10,100``: partitions of one
topic; ``--connections 1,10``: concurrent producer connections), each value one step that
runs a short raw produce and samples the brokers' resident memory at its end. Values must
be positive, distinct and ascending, so consecutive steps say how cost grows with the
dimension.

RSS growth per unit is reported two ways: per step, the change of the brokers' summed RSS
since the previous step over the change of the units (``None`` for the first step), and
over the whole sweep, the least-squares slope of summed RSS against units. Memory a
process has once touched is rarely returned to the OS, so a slope near zero (or a negative
step) means "no growth measured", not "memory freed".
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from broker.bench.spec import SpecError

MAX_PARTITIONS = 100_000
MAX_CONNECTIONS = 10_000


def parse_steps(option: str, text: str, maximum: int) -> tuple[int, ...]:
    """``"1,10,100"`` as ``(1, 10, 100)``; ``SpecError`` naming ``option`` if not positive, distinct and ascending."""
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise SpecError(f"{option} takes comma-separated whole numbers, such as 1,10,100; not {text!r}") from None
    if not values:
        raise SpecError(f"{option} needs at least one value")
    if any(value < 1 for value in values):
        raise SpecError(f"{option} values must be at least 1, not {text!r}")
    if any(value > maximum for value in values):
        raise SpecError(f"{option} values must be at most {maximum:,}, not {text!r}")
    if any(later <= earlier for earlier, later in itertools.pairwise(values)):
        raise SpecError(f"{option} values must be distinct and ascending, not {text!r}")
    return values


def step_growth(units: Sequence[int], rss_bytes: Sequence[int]) -> list[float | None]:
    """Per step, bytes of RSS gained per unit since the previous step; ``None`` for the first."""
    growth: list[float | None] = [None]
    for index in range(1, len(units)):
        growth.append((rss_bytes[index] - rss_bytes[index - 1]) / (units[index] - units[index - 1]))
    return growth[: len(units)]


def slope(units: Sequence[int], rss_bytes: Sequence[int]) -> float | None:
    """Least-squares bytes of RSS per unit over the sweep; ``None`` with fewer than two distinct units."""
    if len(set(units)) < 2:
        return None
    mean_x = sum(units) / len(units)
    mean_y = sum(rss_bytes) / len(rss_bytes)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(units, rss_bytes))
    variance = sum((x - mean_x) ** 2 for x in units)
    return covariance / variance


FILES_PER_REPLICA = 1
"""Open files of a one-segment partition replica on its broker: its ``.log`` (indexes are opened only to be
written: ``broker.storage.index``; pinned by ``tests/unit/storage/test_open_files.py``)."""
FILES_MARGIN = 256
"""The broker's own descriptors: sockets of clients and peers, the metadata store, logs."""


def files_needed(
    partitions: Sequence[int], fixed_partitions: int, replication_factor: int, brokers: int, connections: int
) -> int:
    """Open files a broker needs at the end of a scale run, when every step's topic still exists.

    Replicas are spread evenly (the placement balances them); a broker holds its share of
    ``connections`` (the largest step) as well.
    """
    cluster_partitions = sum(partitions) + fixed_partitions
    replicas_per_broker = -(-cluster_partitions * replication_factor // brokers)
    return replicas_per_broker * FILES_PER_REPLICA + -(-connections // brokers) + FILES_MARGIN


def open_files_limits(needed: int, soft: int, hard: int, unlimited: int) -> tuple[int, int] | None:
    """The (soft, hard) ``RLIMIT_NOFILE`` to set so ``needed`` files can be open; ``None`` if they already can.

    The soft limit is raised first (any process may, up to the hard limit); the hard
    limit only when it is too low (that takes privileges: the caller's ``setrlimit`` fails without).
    """
    if soft == unlimited or needed <= soft:
        return None
    if hard == unlimited or needed <= hard:
        return needed, hard
    return needed, needed
