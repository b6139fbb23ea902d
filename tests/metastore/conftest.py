"""Fixtures running the same contract tests against both metadata stores.

``backend`` is parametrized over ``sqlite`` and ``etcd``. Each test gets a fresh
store location (a new sqlite file, or a new real etcd process on free loopback
ports with its own data dir), so tests never see each other's keys or revisions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from broker.cluster.store import MetadataStore
from broker.cluster.store_url import open_store
from tests.support.etcd import EtcdServer

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Backend:
    """One store location plus how to reach and restart it."""

    name: str
    url: str
    short_ttl_ms: int
    expiry_margin_ms: int
    etcd: EtcdServer | None = None
    opened: list[MetadataStore] = field(default_factory=list)

    async def open(self) -> MetadataStore:
        store = await open_store(self.url)
        self.opened.append(store)
        return store

    def restart_server(self) -> None:
        """etcd: crash the member and start it on the same ports and data dir.
        sqlite: there is no server; the file simply stays on disk."""
        if self.etcd is not None:
            self.etcd.restart()

    async def close_all(self) -> None:
        for store in self.opened:
            await store.close()


@pytest.fixture(params=["sqlite", "etcd"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "sqlite":
        chosen = Backend("sqlite", f"sqlite://{tmp_path / 'metadata.db'}", short_ttl_ms=500, expiry_margin_ms=400)
    else:
        server = EtcdServer(tmp_path / "etcd")
        server.start()
        # etcd grants whole seconds and checks expiry every 500 ms.
        chosen = Backend("etcd", server.url, short_ttl_ms=1000, expiry_margin_ms=1200, etcd=server)
    try:
        yield chosen
    finally:
        await chosen.close_all()
        if chosen.etcd is not None:
            chosen.etcd.stop()


@pytest.fixture
async def store(backend: Backend) -> MetadataStore:
    return await backend.open()


@pytest.fixture
def spawn_worker() -> Iterator:
    """Start ``python -m tests.metastore.workers ...`` processes; SIGKILL leftovers."""
    processes: list[subprocess.Popen[str]] = []

    def spawn(*args: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.metastore.workers", *args],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        )
        processes.append(process)
        return process

    yield spawn
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
