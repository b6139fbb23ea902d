"""The fuzz tier's cluster: three real broker processes on loopback, shared by the tier.

Brokers run with a fixed cluster id (so generated requests are reproducible and the
document's ``cluster_id`` example names the real cluster) and a 1 s long-poll ceiling:
the document states ``fetch_max_wait_ms`` as the limit of ``timeout_ms``, so a fuzzed
read never waits longer than that and a short run stays short.

Brokers keep the default session timeout: a loaded two-core machine must not make a
broker's lease expire mid-run and turn leadership moves into answers the run blames.

``--fuzz-examples`` is how many examples schemathesis generates per operation: a few
in the normal suite, many under ``make fuzz``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster_harness import LiveCluster

CLUSTER_ID = "fuzz"
FETCH_MAX_WAIT_MS = 1000
DEFAULT_EXAMPLES = 4


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzz")
    group.addoption(
        "--fuzz-examples", type=int, default=DEFAULT_EXAMPLES, help="schemathesis examples per API operation"
    )


@pytest.fixture(scope="session")
def fuzz_examples(request: pytest.FixtureRequest) -> int:
    return request.config.getoption("--fuzz-examples")


@pytest.fixture(scope="session")
def fuzz_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    root: Path = tmp_path_factory.mktemp("fuzz-cluster")
    env = {"HIGHWATER_CLUSTER_ID": CLUSTER_ID, "HIGHWATER_FETCH_MAX_WAIT_MS": str(FETCH_MAX_WAIT_MS)}
    cluster = LiveCluster(root, 3, f"sqlite://{(root / 'metadata.db').resolve()}", env)
    try:
        yield cluster
    finally:
        cluster.shutdown()
