"""The broker token proves a broker id to holders of the cluster's secret, and nothing else."""

from __future__ import annotations

import pytest

from broker.security.broker_token import SCHEME, broker_authorization, verified_broker_id

SECRET = b"s" * 32


def credentials(header: str) -> str:
    scheme, _, rest = header.partition(" ")
    assert scheme == SCHEME
    return rest


def test_a_token_proves_its_own_broker_id() -> None:
    assert verified_broker_id(credentials(broker_authorization(3, SECRET)), SECRET) == 3


def test_another_clusters_secret_proves_nothing() -> None:
    assert verified_broker_id(credentials(broker_authorization(3, b"x" * 32)), SECRET) is None


def test_a_token_cannot_be_moved_to_another_broker_id() -> None:
    _, mac = credentials(broker_authorization(3, SECRET)).split(":")
    assert verified_broker_id(f"4:{mac}", SECRET) is None


@pytest.mark.parametrize("text", ["", "3", "3:", ":abc", "x:abc", "-1:abc", "99999999999:abc", "3:zz"])
def test_malformed_credentials_prove_nothing(text: str) -> None:
    assert verified_broker_id(text, SECRET) is None
