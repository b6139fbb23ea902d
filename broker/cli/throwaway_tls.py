"""A throwaway certificate authority for ``highwater dev --tls`` and ``highwater bench --spawn N --tls``.

A TLS run must differ from a plain one only by TLS, so the brokers these commands start
get what a real deployment would have: a certificate for 127.0.0.1 signed by a
CA they and the load generators trust (``tls.ca_file``), hence verified inter-broker
replication and verified clients. A fresh CA is made on every start, in the dev
directory or the benchmark's temporary one. It is made with ``trustme`` (the ``bench``
extra), a test CA library: these certificates are for brokers on loopback, never for a
listener anyone else reaches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from broker.client.security import ClientSecurity

BROKER_NAMES = ("127.0.0.1", "localhost")


class TrustmeMissing(RuntimeError):
    """``--tls`` was asked for without the ``trustme`` package installed."""


@dataclass(frozen=True)
class SpawnedTls:
    """The brokers' ``HIGHWATER_TLS__*`` environment and the clients' options, from one throwaway CA."""

    broker_env: dict[str, str]
    client_security: ClientSecurity


def throwaway_tls(directory: Path) -> SpawnedTls:
    """Write a fresh CA and a broker certificate for loopback under ``directory``.

    Raises ``TrustmeMissing`` naming the package to install when ``trustme`` is not installed.
    """
    try:
        import trustme
    except ImportError:
        raise TrustmeMissing("--tls needs the trustme package: pip install -e '.[bench]'") from None
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(directory / "ca.pem")
    leaf = ca.issue_cert(*BROKER_NAMES)
    (directory / "broker.pem").write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    leaf.private_key_pem.write_to_path(directory / "broker.key")
    return SpawnedTls(
        broker_env={
            "HIGHWATER_TLS__CERT_FILE": str(directory / "broker.pem"),
            "HIGHWATER_TLS__KEY_FILE": str(directory / "broker.key"),
            "HIGHWATER_TLS__CA_FILE": str(directory / "ca.pem"),
        },
        client_security=ClientSecurity(ssl_ca_file=directory / "ca.pem"),
    )
