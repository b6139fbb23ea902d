"""Fixtures for the in-process cluster tests (real sqlite store in a temp dir)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.cluster.harness import InProcessCluster, start_cluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    """Brokers 1, 2, 3; broker 1 is the controller."""
    started = await start_cluster(tmp_path, [1, 2, 3])
    await started.wait_for_controller()
    yield started
    await started.close()
