"""From headers and certificates to principals, without a broker: every mode, every way to fail."""

from __future__ import annotations

import base64

import pytest

from broker.errors import AuthenticationFailed, ThrottlingQuotaExceeded
from broker.security.authenticator import Authenticator
from broker.security.broker_token import broker_authorization
from broker.security.credential_cache import CredentialCache
from broker.security.login_limiter import LoginLimiter
from broker.security.principal import ANONYMOUS, Principal
from broker.security.scram import new_credential

SECRET = b"k" * 32
USERS = {"alice": new_credential("wonderland")}
FAILURES_PER_MINUTE = 3


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def authenticator(mode: str = "basic") -> Authenticator:
    return Authenticator(mode, CredentialCache(16), LoginLimiter(FAILURES_PER_MINUTE))


def authenticate(auth: Authenticator, header: str | None, *, peer: str | None = None, now_ms: int = 0):
    return auth.authenticate(header, peer, "10.0.0.7", USERS, SECRET, now_ms)


def test_basic_with_the_right_password_is_the_user() -> None:
    assert authenticate(authenticator(), basic("alice", "wonderland")) == Principal.user("alice")


def test_basic_without_a_header_is_not_authenticated() -> None:
    assert authenticate(authenticator(), None) is None


@pytest.mark.parametrize(
    "header",
    [
        basic("alice", "wrong"),
        basic("mallory", "wonderland"),
        "Basic not-base64!",
        "Basic " + base64.b64encode(b"no-colon").decode(),
        "Bearer abc.def.ghi",
    ],
)
def test_basic_refuses_what_does_not_prove_a_user(header: str) -> None:
    with pytest.raises(AuthenticationFailed) as refused:
        authenticate(authenticator(), header)
    assert "wonderland" not in refused.value.message
    assert refused.value.challenge.startswith("Basic ")


def test_a_cached_pair_never_lets_another_password_in() -> None:
    auth = authenticator()
    assert authenticate(auth, basic("alice", "wonderland")) == Principal.user("alice")
    with pytest.raises(AuthenticationFailed):
        authenticate(auth, basic("alice", "wonderlanD"))


def test_a_source_over_its_failures_is_refused_until_the_minute_passes() -> None:
    auth = authenticator()
    for _ in range(FAILURES_PER_MINUTE):
        with pytest.raises(AuthenticationFailed):
            authenticate(auth, basic("alice", "guess"), now_ms=1_000)
    with pytest.raises(ThrottlingQuotaExceeded) as throttled:
        authenticate(auth, basic("alice", "wonderland"), now_ms=2_000)
    assert throttled.value.details["retry_after_ms"] > 0
    assert authenticate(auth, basic("alice", "wonderland"), now_ms=62_000) == Principal.user("alice")


@pytest.mark.parametrize("mode", ["none", "basic", "mtls"])
def test_a_broker_token_is_a_broker_in_every_mode(mode: str) -> None:
    assert authenticate(authenticator(mode), broker_authorization(2, SECRET)) == Principal.broker(2)


@pytest.mark.parametrize("mode", ["none", "basic", "mtls"])
def test_a_forged_broker_token_is_refused_in_every_mode(mode: str) -> None:
    with pytest.raises(AuthenticationFailed):
        authenticate(authenticator(mode), broker_authorization(2, b"other" * 8))


def test_none_makes_everyone_anonymous_whatever_they_send() -> None:
    auth = authenticator("none")
    assert authenticate(auth, basic("alice", "wrong")) == ANONYMOUS
    assert authenticate(auth, None) == ANONYMOUS


def test_mtls_takes_the_certificate_name_and_ignores_passwords() -> None:
    auth = authenticator("mtls")
    assert authenticate(auth, None, peer="alice") == Principal.user("alice")
    assert authenticate(auth, basic("admin", "x"), peer=None) is None
