"""The SCRAM-SHA-512 server exchange and SASL PLAIN parsing (pure).

The vector takes RFC 7677's inputs (user ``user``, password ``pencil``, its nonces,
salt and 4096 iterations) with SHA-512 in place of SHA-256, as no RFC gives a
SHA-512 vector. The client side is kafka-python's own ``ScramClient``, an
implementation independent of the server's, which also checks the server signature.
"""

from __future__ import annotations

import base64

import pytest
from kafka.net.sasl.scram import ScramClient  # type: ignore[import-untyped]

from broker.kafka.sasl import PlainCredentials, SaslFailure, ScramServer, parse_plain
from broker.security.scram import new_credential

SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CREDENTIAL = new_credential("pencil", 4096, SALT)
CLIENT_FIRST = b"n,,n=user,r=" + CLIENT_NONCE.encode()
SERVER_FIRST = f"r={CLIENT_NONCE}{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
CLIENT_FINAL = (
    f"c=biws,r={CLIENT_NONCE}{SERVER_NONCE},"
    "p=gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ=="
).encode()
SERVER_FINAL = b"v=ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw=="


def server(nonce: str = SERVER_NONCE) -> ScramServer:
    return ScramServer({"user": CREDENTIAL}, server_nonce=nonce)


def client(password: str = "pencil", user: str = "user") -> ScramClient:
    scram_client = ScramClient(user, password, "SCRAM-SHA-512")
    scram_client.nonce = CLIENT_NONCE.encode()
    return scram_client


def test_the_vector_exchange_proves_the_user_and_the_server() -> None:
    scram = server()
    assert scram.step(CLIENT_FIRST) == SERVER_FIRST
    assert not scram.done
    assert scram.step(CLIENT_FINAL) == SERVER_FINAL
    assert scram.done and scram.username == "user"


def test_an_independent_client_checks_the_server_signature() -> None:
    scram, scram_client = server(), client()
    scram_client.process_server_first_message(scram.step(scram_client.first_message()))
    assert scram_client.final_message() == CLIENT_FINAL
    scram_client.process_server_final_message(scram.step(scram_client.final_message()))


def test_a_fresh_server_nonce_per_exchange() -> None:
    first = ScramServer({"user": CREDENTIAL}).step(CLIENT_FIRST)
    second = ScramServer({"user": CREDENTIAL}).step(CLIENT_FIRST)
    assert first.startswith(b"r=" + CLIENT_NONCE.encode()) and first != second


def test_a_wrong_password_fails_and_ends_the_exchange() -> None:
    scram, scram_client = server(), client(password="pencil!")
    scram_client.process_server_first_message(scram.step(scram_client.first_message()))
    with pytest.raises(SaslFailure, match="unknown user or wrong password"):
        scram.step(scram_client.final_message())
    assert not scram.done
    with pytest.raises(SaslFailure, match="exchange is over"):
        scram.step(CLIENT_FINAL)


def test_an_unknown_user_gets_a_server_first_message_and_fails_at_the_proof() -> None:
    scram, scram_client = ScramServer({}), client(user="nobody")
    answer = scram.step(scram_client.first_message())
    assert answer.startswith(b"r=" + CLIENT_NONCE.encode()) and b",i=4096" in answer
    assert ScramServer({}).step(scram_client.first_message()).split(b",")[1] == answer.split(b",")[1]
    scram_client.process_server_first_message(answer)
    with pytest.raises(SaslFailure, match="unknown user or wrong password"):
        scram.step(scram_client.final_message())


def test_a_final_message_with_another_nonce_fails() -> None:
    scram = server()
    scram.step(CLIENT_FIRST)
    wrong_nonce = CLIENT_FINAL.replace(SERVER_NONCE.encode(), b"x" * len(SERVER_NONCE))
    with pytest.raises(SaslFailure, match="nonce"):
        scram.step(wrong_nonce)


def test_a_final_message_replayed_to_a_new_exchange_fails() -> None:
    """A captured client-final carries the old exchange's nonce; a new exchange has a fresh one."""
    scram = ScramServer({"user": CREDENTIAL})
    scram.step(CLIENT_FIRST)
    with pytest.raises(SaslFailure, match="nonce"):
        scram.step(CLIENT_FINAL)


def test_a_final_message_replayed_after_success_fails() -> None:
    scram = server()
    scram.step(CLIENT_FIRST)
    scram.step(CLIENT_FINAL)
    with pytest.raises(SaslFailure, match="exchange is over"):
        scram.step(CLIENT_FINAL)


@pytest.mark.parametrize(
    "client_first",
    [b"p=tls-unique,,n=user,r=abc", b"n,a=admin,n=user,r=abc", b"n,,r=abc,n=user", b"n,,n=user", b"\xff\xfe"],
)
def test_channel_binding_other_authzids_and_malformed_first_messages_are_refused(client_first: bytes) -> None:
    with pytest.raises(SaslFailure):
        server().step(client_first)


def test_a_tampered_channel_binding_fails() -> None:
    scram = server()
    scram.step(CLIENT_FIRST)
    with pytest.raises(SaslFailure, match="channel binding"):
        scram.step(CLIENT_FINAL.replace(b"c=biws", b"c=eSws"))


def test_plain_messages() -> None:
    assert parse_plain(b"\x00alice\x00secret") == PlainCredentials("alice", "secret")
    assert parse_plain(b"alice\x00alice\x00secret") == PlainCredentials("alice", "secret")
    for bad in (b"alice\x00secret", b"\x00\x00secret", b"\x00alice\x00", b"bob\x00alice\x00secret", b"\xff\x00a\x00b"):
        with pytest.raises(SaslFailure):
            parse_plain(bad)


def _proof(password: str, auth_message: bytes) -> str:
    import hashlib
    import hmac

    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), SALT, 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    signature = hmac.new(hashlib.sha512(client_key).digest(), auth_message, hashlib.sha512).digest()
    return base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()


def test_librdkafka_2_0s_final_nonce_with_the_client_nonce_sent_twice_is_accepted_as_kafka_accepts_it() -> None:
    """Debian's kcat (librdkafka 2.0.2) puts its client nonce in front of the server's ``r``
    again; Kafka's server checks only that the final nonce ends with the exchange's, and so does this one.
    A nonce that does not end with this exchange's (a replay) still fails."""
    scram = server()
    scram.step(CLIENT_FIRST)
    without_proof = f"c=biws,r={CLIENT_NONCE}{CLIENT_NONCE}{SERVER_NONCE}"
    auth_message = f"n=user,r={CLIENT_NONCE},{SERVER_FIRST.decode()},{without_proof}".encode()
    assert scram.step(f"{without_proof},p={_proof('pencil', auth_message)}".encode()).startswith(b"v=")
    assert scram.done and scram.username == "user"
    replayed = server(nonce="another-exchange")
    replayed.step(CLIENT_FIRST)
    with pytest.raises(SaslFailure, match="nonce"):
        replayed.step(f"{without_proof},p={_proof('pencil', auth_message)}".encode())
