"""The table of ``highwater bench peers``: each system's lone-write latency per interleaved round.

Pure: the runs are ``broker.bench.peers`` and the command (``broker.bench.cli``); this
module turns their summaries into the markdown ``docs/performance.md`` keeps between its
``BEGIN``/``END`` markers, and the ratios the README quotes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from broker.bench.stats import LatencySummary

ECHO = "aiohttp echo"
HIGHWATER_ALL = "highwater acks=all RF 3"
HIGHWATER_ONE = "highwater acks=1, 1 broker"
NATS = "NATS JetStream R3"
REDIS = "Redis 7 + 2 replicas, WAIT 2 (AOF off)"
REDIS_FSYNC = "Redis 7 + 2 replicas, WAIT 2 (appendfsync always)"
SYSTEMS = (ECHO, HIGHWATER_ALL, HIGHWATER_ONE, NATS, REDIS, REDIS_FSYNC)
"""In the order each round runs them."""

BEGIN = "<!-- highwater bench peers: begin -->"
END = "<!-- highwater bench peers: end -->"

Rounds = Mapping[str, Sequence[LatencySummary]]
"""System name -> its summary in each round, in round order."""


def _values(summaries: Sequence[LatencySummary], field: str) -> str:
    return ", ".join(f"{getattr(summary, field):.2f}" for summary in summaries) + " ms"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def ratio(rounds: Rounds, system: str, reference: str, field: str = "p50_ms") -> float:
    """``system`` over ``reference`` at ``field``, the median of the per-round ratios (same round, same machine state)."""
    pairs = zip(rounds[system], rounds[reference], strict=True)
    return _median([getattr(mine, field) / getattr(theirs, field) for mine, theirs in pairs])


def markdown_table(rounds: Rounds) -> str:
    """One row per system: p50 and p99 of each round, then its p50 and p99 over the echo's."""
    lines = [
        "| system | p50, per round | p99, per round | p50 × echo | p99 × echo |",
        "|---|---|---|---|---|",
    ]
    for system in SYSTEMS:
        summaries = rounds[system]
        lines.append(
            f"| {system} | {_values(summaries, 'p50_ms')} | {_values(summaries, 'p99_ms')} "
            f"| {ratio(rounds, system, ECHO):.2f} | {ratio(rounds, system, ECHO, 'p99_ms'):.2f} |"
        )
    return "\n".join(lines)


def verdicts(rounds: Rounds) -> list[str]:
    """Issue 33's targets, each with the figure measured against it."""
    p50_echo = ratio(rounds, HIGHWATER_ALL, ECHO)
    p50_nats = ratio(rounds, HIGHWATER_ALL, NATS)
    p99_echo = ratio(rounds, HIGHWATER_ALL, ECHO, "p99_ms")
    one_echo = ratio(rounds, HIGHWATER_ONE, ECHO)
    return [
        f"acks=all RF 3 p50 {p50_echo:.2f}× echo (target ≤ 2): {_met(p50_echo <= 2)}",
        f"acks=all RF 3 p50 {p50_nats:.2f}× NATS JetStream R3 (target ≤ 1): {_met(p50_nats <= 1)}",
        f"acks=all RF 3 p99 {p99_echo:.2f}× echo (target ≤ 3): {_met(p99_echo <= 3)}",
        f"acks=1 on one broker p50 {one_echo:.2f}× echo (target ≤ 1.3): {_met(one_echo <= 1.3)}",
    ]


def _met(held: bool) -> str:
    return "met" if held else "missed"


def with_section(document: str, section: str) -> str:
    """``document`` with what lies between ``BEGIN`` and ``END`` replaced by ``section``.

    Raises ``ValueError`` when the markers are missing or out of order: the command never
    appends a second table or writes over text it does not own.
    """
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the document has no {BEGIN} ... {END} section to write the table into")
    return document[: start + len(BEGIN)] + "\n" + section.strip("\n") + "\n" + document[end:]
