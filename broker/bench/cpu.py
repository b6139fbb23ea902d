"""CPU time of a process, read from ``/proc/<pid>/stat`` (Linux).

``utime + stime`` is what the kernel charged the process (all its threads) so far; two
readings ``idle_s`` apart give its share of one core over that time, which is how
``highwater bench scale --metadata`` measures an idle broker.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def cpu_ticks(stat_text: str) -> int:
    """``utime + stime`` of a ``/proc/<pid>/stat`` line, in clock ticks.

    The command name (field 2) is in parentheses and may hold spaces or parentheses
    itself, so the fields are counted from the last ``)``; utime and stime are fields 14
    and 15 of the line.
    """
    fields = stat_text[stat_text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid: int | str) -> float:
    """CPU seconds process ``pid`` (``"self"`` for this one) has used so far."""
    return cpu_ticks((PROC / str(pid) / "stat").read_text()) / os.sysconf("SC_CLK_TCK")
