"""Worker processes for the multi-process contract tests.

``cas URL KEY TARGET``: print ``ready``, wait for a line on stdin (a start barrier so
all workers contend), then increment the counter at KEY by compare-and-set until it
reaches TARGET; print JSON ``{"wins": [expected revisions won], "attempts": n}``.

``hold-lease URL KEY TTL_MS``: grant a lease, put KEY with it, print JSON
``{"lease": id, "revision": r}``, then keep the lease alive until killed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TypedDict

import structlog

from broker.cluster.store import MetadataStore, keep_lease_alive
from broker.cluster.store_url import open_store


class CasResult(TypedDict):
    wins: list[int]
    """The expected revision of every compare-and-set this worker won."""
    attempts: int


async def increment_until(store: MetadataStore, key: str, target: int) -> CasResult:
    wins: list[int] = []
    attempts = 0
    while True:
        current = await store.get(key)
        counter = 0 if current is None else int(current.value)
        if counter >= target:
            return CasResult(wins=wins, attempts=attempts)
        expected = 0 if current is None else current.mod_revision
        attempts += 1
        if await store.put_if(key, str(counter + 1).encode(), expected) is not None:
            wins.append(expected)


async def run_cas(url: str, key: str, target: int) -> None:
    store = await open_store(url)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    result = await increment_until(store, key, target)
    await store.close()
    print(json.dumps(result), flush=True)


async def run_hold_lease(url: str, key: str, ttl_ms: int) -> None:
    store = await open_store(url)
    lease = await store.grant(ttl_ms)
    revision = await store.put(key, b"held", lease=lease.id)
    print(json.dumps({"lease": lease.id, "revision": revision, "ttl_ms": lease.ttl_ms}), flush=True)
    await keep_lease_alive(store, lease)


def main() -> None:
    # stdout carries the protocol with the test; logs go to stderr.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
    command, url, key, number = sys.argv[1:5]
    if command == "cas":
        asyncio.run(run_cas(url, key, int(number)))
    elif command == "hold-lease":
        asyncio.run(run_hold_lease(url, key, int(number)))
    else:
        raise SystemExit(f"unknown worker command {command!r}")


if __name__ == "__main__":
    main()
