"""Options of the seeded simulation: ``--seed`` (an int, or ``random``), ``--seeds N`` and ``--steps``.

Without them CI runs a fixed set of seeds for a thousand steps each; ``--seeds N`` draws
N seeds at random (``make sim SEEDS=N``), each printed with what its run did.
"""

from __future__ import annotations

import logging
import random
import tempfile
from pathlib import Path

import pytest
import structlog

CI_SEEDS = (1, 2, 3, 4, 5, 6)
CI_STEPS = 1_000


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("simulation")
    group.addoption("--seed", default=None, help="simulation seed: an integer, or 'random'")
    group.addoption("--seeds", default=None, type=int, help="this many random simulation seeds")
    group.addoption("--steps", default=None, type=int, help=f"simulation steps per seed (default {CI_STEPS})")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" not in metafunc.fixturenames:
        return
    option = metafunc.config.getoption("seed", default=None)
    count = metafunc.config.getoption("seeds", default=None)
    if count is not None:
        seeds = [random.SystemRandom().randrange(2**32) for _ in range(count)]
    elif option is None:
        seeds = list(CI_SEEDS)
    elif option == "random":
        seeds = [random.SystemRandom().randrange(2**32)]
    else:
        seeds = [int(option)]
    metafunc.parametrize("seed", seeds)


@pytest.fixture
def steps(request: pytest.FixtureRequest) -> int:
    return request.config.getoption("steps", default=None) or CI_STEPS


@pytest.fixture
def sim_dir(tmp_path: Path):
    """Broker data directories, on tmpfs when there is one: the simulation models power
    loss itself (``storage.SimDisk``), so a real fsync would only cost time."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="highwater-sim-") as directory:
        yield Path(directory)


@pytest.fixture(autouse=True)
def quiet_structlog():
    """The state machines log every role and ISR change; thousands of steps would drown the output."""
    previous = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    yield
    structlog.configure(**previous)
