"""Throwaway certificate authorities for TLS tests: real PEM files from ``trustme``, nothing checked in.

A ``Pki`` is one CA with a broker certificate valid for 127.0.0.1 and localhost (the
names the brokers listen and advertise on) and a client certificate whose CN is
``CLIENT_CN``, every file written under one directory.
"""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass
from pathlib import Path

import trustme

from broker.tls import client_ssl_context

BROKER_NAMES = ("127.0.0.1", "localhost")
CLIENT_CN = "alice"


@dataclass(frozen=True)
class Pki:
    ca_file: Path
    broker_cert: Path
    broker_key: Path
    client_cert: Path
    client_key: Path

    def tls_settings(self, client_auth: str = "none") -> dict[str, object]:
        """The ``tls.*`` settings, by field name, of a broker serving this PKI's certificate
        (``tests.support.cluster.setting_variables`` turns them into its environment)."""
        return {
            "tls.cert_file": str(self.broker_cert),
            "tls.key_file": str(self.broker_key),
            "tls.ca_file": str(self.ca_file),
            "tls.client_auth": client_auth,
        }

    def client_context(self, with_certificate: bool = True) -> ssl.SSLContext:
        if not with_certificate:
            return client_ssl_context(self.ca_file)
        return client_ssl_context(self.ca_file, self.client_cert, self.client_key)


def make_pki(
    directory: Path, broker_not_after: datetime.datetime | None = None, broker_names: tuple[str, ...] = BROKER_NAMES
) -> Pki:
    """A fresh CA and its certificates under ``directory``; ``broker_not_after`` dates the broker's
    expiry, ``broker_names`` are the names and addresses its certificate is valid for."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(directory / "ca.pem")
    broker = ca.issue_cert(*broker_names, not_after=broker_not_after)
    client = ca.issue_cert("alice.clients.test", common_name=CLIENT_CN)
    for name, leaf in (("broker", broker), ("client", client)):
        chain = directory / f"{name}.pem"
        chain.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        leaf.private_key_pem.write_to_path(directory / f"{name}.key")
    return Pki(
        ca_file=directory / "ca.pem",
        broker_cert=directory / "broker.pem",
        broker_key=directory / "broker.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
    )
