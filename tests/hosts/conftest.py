"""One set of test hosts for the whole tier: the namespaces and the bridge are made once,
and every test's deployment starts its own etcd members and brokers on them (the tests
of ``tests/hosts`` form one xdist group, so one worker makes the hosts, once)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hosts.deployment import HOSTS, SPARE_HOSTS, HostsDeployment
from tests.hosts.network import HostNetwork

SETTINGS = {"log_level": "info"}


@pytest.fixture(scope="package")
def network() -> Iterator[HostNetwork]:
    with HostNetwork(HOSTS + SPARE_HOSTS) as made:
        yield made


@pytest.fixture
def brokers() -> int:
    """Brokers a deployment starts, one per host from the first; a module overrides it for more."""
    return HOSTS


@pytest.fixture
def deployment(network: HostNetwork, tmp_path: Path, brokers: int) -> Iterator[HostsDeployment]:
    """A started deployment (etcd on the first three hosts, then ``brokers`` brokers); every host
    is reconnected and emptied of processes afterwards, whatever the test did to it."""
    deployment = HostsDeployment(network, tmp_path, SETTINGS)
    try:
        yield deployment.start(brokers)
    finally:
        for host in network.hosts:
            host.reconnect()
            host.kill_all()
