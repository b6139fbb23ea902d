"""Options and the shared cluster of the chaos tier.

``--chaos-seed`` fixes the random fault mix: the suite's run uses ``DEFAULT_SEED`` so
it draws the same faults every time, ``make chaos`` passes ``random`` to explore (the
seed drawn is printed);
``--chaos-duration-s`` is how long the mixed run keeps injecting faults (short in CI,
long under ``make chaos``). The named scenarios share one cluster (module scope): each
run heals the cluster and uses its own topics, so the next one starts clean.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
import structlog

from tests.chaos.cluster import ChaosCluster

DEFAULT_DURATION_S = 12.0
DEFAULT_SEED = "20261125"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaos")
    group.addoption("--chaos-seed", default=DEFAULT_SEED, help="seed of the random fault mix, or 'random' to draw one")
    group.addoption(
        "--chaos-duration-s", type=float, default=DEFAULT_DURATION_S, help="how long the mixed run injects faults"
    )


@pytest.fixture(scope="session")
def chaos_seed(request: pytest.FixtureRequest) -> int:
    option = request.config.getoption("--chaos-seed")
    seed = random.randrange(1 << 32) if option == "random" else int(option)
    print(f"\nchaos seed: {seed} (rerun with --chaos-seed {seed})")
    return seed


@pytest.fixture(scope="session")
def chaos_duration_s(request: pytest.FixtureRequest) -> float:
    return float(request.config.getoption("--chaos-duration-s"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_chaos_cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ChaosCluster]:
    """One cluster for the named scenarios: each run heals it and uses topics of its own."""
    chaos = await ChaosCluster.create(tmp_path_factory.mktemp("chaos"))
    try:
        await asyncio.to_thread(chaos.start)
        yield chaos
    finally:
        await chaos.close()


@pytest.fixture(autouse=True, scope="module")
def quiet_client_logs() -> Iterator[None]:
    """The clients' info logs (every retry) would bury the summary tables; keep warnings."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    yield
    structlog.configure(**saved)
