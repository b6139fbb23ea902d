"""The pure TLS decisions (who may listen anonymously, whose certificate names whom) and the contexts built
from real certificates (a throwaway CA from ``trustme``)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from broker.tls import (
    TlsFileError,
    anonymous_listener_refusal,
    client_ssl_context,
    default_advertised_url,
    inter_broker_ssl,
    is_loopback,
    peer_common_name,
    server_ssl_context,
)
from config.broker import BrokerSettings
from config.security import TlsSettings


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LocalHost"])
def test_loopback_hosts_may_listen_without_authentication(host: str) -> None:
    assert is_loopback(host)
    assert anonymous_listener_refusal(host, "none", allow_anonymous=False) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "192.168.0.7", "broker-1.internal", "128.0.0.1"])
def test_other_hosts_are_refused_without_authentication_and_name_the_ways_out(host: str) -> None:
    assert not is_loopback(host)
    refusal = anonymous_listener_refusal(host, "none", allow_anonymous=False)
    assert refusal is not None
    assert host in refusal
    assert "--allow-anonymous" in refusal
    assert "security.authentication" in refusal


@pytest.mark.parametrize(("authentication", "allow_anonymous"), [("basic", False), ("mtls", False), ("none", True)])
def test_authentication_or_the_explicit_opt_in_allows_any_host(authentication: str, allow_anonymous: bool) -> None:
    assert anonymous_listener_refusal("0.0.0.0", authentication, allow_anonymous) is None


def test_peer_common_name_is_the_subjects_most_specific_cn() -> None:
    peercert = {
        "subject": ((("countryName", "NL"),), (("commonName", "outer"),), (("commonName", "alice"),)),
        "issuer": ((("commonName", "ca"),),),
    }
    assert peer_common_name(peercert) == "alice"


@pytest.mark.parametrize("peercert", [None, {}, {"subject": ((("organizationName", "acme"),),)}])
def test_no_verified_certificate_or_no_cn_names_nobody(peercert: dict | None) -> None:
    assert peer_common_name(peercert) is None


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def server_files(ca: trustme.CA, tmp_path: Path) -> TlsSettings:
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    leaf.cert_chain_pems[0].write_to_path(tmp_path / "cert.pem")
    for blob in leaf.cert_chain_pems[1:]:
        blob.write_to_path(tmp_path / "cert.pem", append=True)
    leaf.private_key_pem.write_to_path(tmp_path / "key.pem")
    ca.cert_pem.write_to_path(tmp_path / "ca.pem")
    return TlsSettings(cert_file=tmp_path / "cert.pem", key_file=tmp_path / "key.pem")


def test_server_without_a_ca_asks_no_client_certificate(server_files: TlsSettings) -> None:
    context = server_ssl_context(server_files)
    assert context.verify_mode == ssl.CERT_NONE
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_server_with_a_ca_reads_client_certificates_and_requires_them_when_told(
    server_files: TlsSettings, tmp_path: Path
) -> None:
    ca_file = tmp_path / "ca.pem"
    optional = server_files.model_copy(update={"ca_file": ca_file})
    required = server_files.model_copy(update={"ca_file": ca_file, "client_auth": "required"})
    assert server_ssl_context(optional).verify_mode == ssl.CERT_OPTIONAL
    assert server_ssl_context(required).verify_mode == ssl.CERT_REQUIRED


def test_a_missing_certificate_file_is_named(tmp_path: Path) -> None:
    tls = TlsSettings(cert_file=tmp_path / "absent.pem", key_file=tmp_path / "absent.key")
    with pytest.raises(TlsFileError, match=r"tls.cert_file/tls.key_file .*absent.pem: no such file"):
        server_ssl_context(tls)


def test_a_file_that_is_not_pem_is_named(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    with pytest.raises(TlsFileError, match=r"ssl_ca_file .*ca.pem: cannot be loaded"):
        client_ssl_context(tmp_path / "ca.pem")


def test_client_verifies_host_names_and_refuses_a_key_without_its_certificate(server_files: TlsSettings) -> None:
    context = client_ssl_context(None)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    with pytest.raises(ValueError, match="ssl_key_file needs ssl_cert_file"):
        client_ssl_context(None, key_file=server_files.key_file)


def test_client_context_completes_a_handshake_only_with_the_servers_ca(
    server_files: TlsSettings, tmp_path: Path
) -> None:
    ca_file = tmp_path / "ca.pem"
    server = server_ssl_context(server_files)
    assert _handshake(client_ssl_context(ca_file), server, "127.0.0.1") is None
    assert "CERTIFICATE_VERIFY_FAILED" in str(_handshake(client_ssl_context(None), server, "127.0.0.1"))
    assert "CERTIFICATE_VERIFY_FAILED" in str(_handshake(client_ssl_context(ca_file), server, "elsewhere.example"))


def test_inter_broker_context_is_off_without_tls_and_presents_the_brokers_certificate(
    server_files: TlsSettings, tmp_path: Path
) -> None:
    assert inter_broker_ssl(BrokerSettings()) is None
    ca_file = tmp_path / "ca.pem"
    tls = server_files.model_copy(update={"ca_file": ca_file, "client_auth": "required"})
    brokers = inter_broker_ssl(BrokerSettings(tls=tls))
    assert brokers is not None
    assert _handshake(brokers, server_ssl_context(tls), "127.0.0.1") is None
    refused = _handshake(client_ssl_context(ca_file), server_ssl_context(tls), "127.0.0.1")
    assert "PEER_DID_NOT_RETURN_A_CERTIFICATE" in str(refused)


def _handshake(client: ssl.SSLContext, server: ssl.SSLContext, host: str) -> ssl.SSLError | None:
    """A handshake and one message, in memory; the error either side raised, or None when the message arrived.

    The message matters: a TLS 1.3 server checks the client's certificate after the
    client considers the handshake done, so only the server's first read surfaces it.
    """
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client_end = client.wrap_bio(to_client, to_server, server_hostname=host)
    server_end = server.wrap_bio(to_server, to_client, server_side=True)
    try:
        for _ in range(10):
            finished = [_step(client_end), _step(server_end)]
            if all(finished):
                client_end.write(b"ping")
                assert server_end.read(4) == b"ping"
                return None
    except ssl.SSLError as error:
        return error
    raise AssertionError("the in-memory handshake did not finish")


def _step(end: ssl.SSLObject) -> bool:
    try:
        end.do_handshake()
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return False
    return True


def test_default_advertised_url_names_the_one_scheme_the_listener_serves(server_files: TlsSettings) -> None:
    assert default_advertised_url(BrokerSettings(host="10.0.0.5", port=9092)) == "http://10.0.0.5:9092"
    assert default_advertised_url(BrokerSettings(port=9093, tls=server_files)) == "https://127.0.0.1:9093"
