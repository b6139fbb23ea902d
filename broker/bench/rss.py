"""Resident memory of a process, read from ``/proc/<pid>/status`` (Linux).

``VmRSS`` is what the kernel counts as resident for the process right now, in KiB;
``highwater bench scale`` samples it for every spawned broker at the end of each step.
"""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def vm_rss_bytes(status_text: str) -> int:
    """The ``VmRSS`` line of a ``/proc/<pid>/status`` text, in bytes; ``ValueError`` if absent."""
    for line in status_text.splitlines():
        if line.startswith("VmRSS:"):
            amount, unit = line.split()[1:3]
            if unit != "kB":
                raise ValueError(f"VmRSS in an unknown unit: {line!r}")
            return int(amount) * 1024
    raise ValueError("no VmRSS line: the process is gone, or a kernel thread")


def rss_bytes(pid: int | str) -> int:
    """Resident memory of process ``pid`` (``"self"`` for this one), in bytes."""
    return vm_rss_bytes((PROC / str(pid) / "status").read_text())
