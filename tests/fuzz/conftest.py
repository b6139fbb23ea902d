"""The fuzz tier's cluster: three real broker processes on loopback, shared by the tier.

Brokers run with a fixed cluster id (so generated requests are reproducible and the
document's ``cluster_id`` example names the real cluster) and a 1 s long-poll ceiling:
the document states ``fetch_max_wait_ms`` as the limit of ``timeout_ms``, so a fuzzed
read never waits longer than that and a short run stays short. A stalled body is answered after 1 s and a body over 2 MiB is
refused, so the slow-sender and oversized-body tests are quick.

Brokers keep their default timeouts (``fast=False``), the session's above all: a loaded
two-core machine must not make a broker's lease expire mid-run and turn leadership
moves into answers the run blames.

``--fuzz-examples`` is how many examples schemathesis generates per operation: a few
in the normal suite, many under ``make fuzz``; the hypothesis tests of the binary
surfaces scale their example counts by the same factor (``scaled``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

CLUSTER_ID = "fuzz"
FETCH_MAX_WAIT_MS = 1000
REQUEST_BODY_TIMEOUT_MS = 1000
MAX_REQUEST_BYTES = 2 * 1024 * 1024
DEFAULT_EXAMPLES = 4
SPEC = ClusterSpec(
    fast=False,
    settings={
        "cluster_id": CLUSTER_ID,
        "fetch_max_wait_ms": FETCH_MAX_WAIT_MS,
        "request_body_timeout_ms": REQUEST_BODY_TIMEOUT_MS,
        "max_request_bytes": MAX_REQUEST_BYTES,
    },
)


_SCALE = {"factor": 1}


def scaled(examples: int) -> int:
    """``examples`` times the ``--fuzz-examples`` factor over the default; read when a test module is imported."""
    return examples * _SCALE["factor"]


def pytest_configure(config: pytest.Config) -> None:
    _SCALE["factor"] = max(1, config.getoption("--fuzz-examples", DEFAULT_EXAMPLES) // DEFAULT_EXAMPLES)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzz")
    group.addoption(
        "--fuzz-examples", type=int, default=DEFAULT_EXAMPLES, help="schemathesis examples per API operation"
    )


@pytest.fixture(scope="session")
def fuzz_examples(request: pytest.FixtureRequest) -> int:
    return request.config.getoption("--fuzz-examples")


@pytest.fixture(autouse=True)
def no_broker_crashed(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test on the fuzz cluster, no broker logged a request that crashed (a 500 nobody saw)."""
    if "fuzz_cluster" not in request.fixturenames:
        yield
        return
    cluster: Cluster = request.getfixturevalue("fuzz_cluster")
    logs = [broker.log_path for broker in cluster.brokers.values()]
    sizes = [path.stat().st_size if path.exists() else 0 for path in logs]
    yield
    for path, size in zip(logs, sizes):
        with path.open("rb") as log:
            log.seek(size)
            crashed = [line for line in log.read().decode(errors="replace").splitlines() if "request_crashed" in line]
        assert not crashed, f"{path.name}: {crashed[0][:3000]}"


fuzz_cluster = cluster_fixture(SPEC, scope="session")
