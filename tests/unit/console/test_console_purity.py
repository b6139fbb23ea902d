"""The console's decisions are pure (docs/architecture.md: a pure core, thin drivers): only ``sampling`` (the driver) does I/O."""

from __future__ import annotations

from tests.unit.test_architecture import DRIVERS, MODULES, _reachable, _stdlib_imports

PURE = ("broker.console.activity", "broker.console.health", "broker.console.isr_events", "broker.console.lag_history")


def test_the_console_rings_reach_no_io_no_clock_and_no_driver() -> None:
    assert set(PURE) <= MODULES.keys()
    problems = []
    for name in PURE:
        for reached, path in _reachable(name).items():
            if reached.startswith(DRIVERS):
                problems.append(f"{' -> '.join(path)}: a driver")
            problems.extend(f"{' -> '.join(path)}: imports {impure}" for impure in sorted(_stdlib_imports(reached)))
    assert not problems, "\n".join(sorted(set(problems)))
