"""One set of test hosts for the whole tier: the namespaces and the bridge are made once,
and every test's deployment starts its own etcd members and brokers on them (the tests
of ``tests/hosts`` form one xdist group, so one worker makes the hosts, once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hosts.network import HostNetwork

HOSTS = 3


@pytest.fixture(scope="package")
def network() -> Iterator[HostNetwork]:
    with HostNetwork(HOSTS) as made:
        yield made
