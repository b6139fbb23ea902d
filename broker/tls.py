"""TLS for the broker's listener, its own outgoing calls and every client, plus the anonymous-listener rule.

It reads files (certificates and keys), so it lives beside the pure ``broker.security``
rather than in it; it is the one place that turns ``TlsSettings`` and the clients' ``ssl_*`` options into
``ssl.SSLContext`` objects. Invariants every context here keeps:

* TLS 1.2 is the oldest version spoken, by servers and clients alike;
* a client context always verifies the server's certificate *and* its host name
  (there is no "insecure" switch: a test CA is given with ``ssl_ca_file`` instead);
* a file that cannot be loaded raises ``TlsFileError`` naming the option and the file,
  so a typo in a path stops the process at start rather than failing every handshake.

The server asks for a client certificate whenever it has a CA to check one with
(``CERT_OPTIONAL`` with ``ca_file``, ``CERT_REQUIRED`` with ``client_auth = "required"``):
brokers present their own certificate to each other (``inter_broker_ssl``), so a broker's
identity is known to its peers even where clients are not required to present one. A
certificate that is presented but does not verify fails the handshake in both modes.
"""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path
from typing import Any

from config.broker import BrokerSettings
from config.security import TlsSettings

MINIMUM_VERSION = ssl.TLSVersion.TLSv1_2
LOOPBACK_NAMES = frozenset({"localhost"})


class TlsFileError(ValueError):
    """A certificate, key or CA file named in the settings could not be loaded."""


def _load(what: str, path: Path | str, load: Any) -> None:
    try:
        load()
    except FileNotFoundError:
        raise TlsFileError(f"{what} {path}: no such file") from None
    except (ssl.SSLError, OSError) as error:
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or str(error)
        raise TlsFileError(f"{what} {path}: cannot be loaded ({reason})") from None


def server_ssl_context(tls: TlsSettings) -> ssl.SSLContext:
    """The listener's context: this broker's chain, and client verification as the module doc describes."""
    if tls.cert_file is None or tls.key_file is None:
        raise ValueError("a TLS listener needs tls.cert_file and tls.key_file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MINIMUM_VERSION
    cert_file, key_file = tls.cert_file, tls.key_file
    _load("tls.cert_file/tls.key_file", cert_file, lambda: context.load_cert_chain(cert_file, key_file))
    if tls.ca_file is not None:
        ca_file = tls.ca_file
        _load("tls.ca_file", ca_file, lambda: context.load_verify_locations(cafile=ca_file))
        context.verify_mode = ssl.CERT_REQUIRED if tls.client_auth == "required" else ssl.CERT_OPTIONAL
    else:
        context.verify_mode = ssl.CERT_NONE
    return context


def client_ssl_context(
    ca_file: Path | str | None, cert_file: Path | str | None = None, key_file: Path | str | None = None
) -> ssl.SSLContext:
    """A verifying client context: ``ca_file`` or the system's trust store, and an optional client certificate.

    ``key_file`` without ``cert_file`` is refused; ``cert_file`` alone is allowed when
    the file holds the key too (the usual combined PEM).
    """
    if key_file is not None and cert_file is None:
        raise ValueError("ssl_key_file needs ssl_cert_file (the certificate the key belongs to)")
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.minimum_version = MINIMUM_VERSION
    if ca_file is not None:
        _load("ssl_ca_file", ca_file, lambda: context.load_verify_locations(cafile=ca_file))
    if cert_file is not None:
        chain = cert_file
        _load("ssl_cert_file/ssl_key_file", chain, lambda: context.load_cert_chain(chain, key_file))
    return context


def inter_broker_ssl(settings: BrokerSettings) -> ssl.SSLContext | None:
    """The context of a broker's calls to other brokers; ``None`` when this broker does not speak TLS.

    Peers are verified with ``tls.ca_file`` (the system trust store without one), host
    names included, and this broker presents its own certificate, so brokers
    authenticate each other when their listeners require client certificates.
    """
    tls = settings.tls
    if not tls.enabled:
        return None
    return client_ssl_context(tls.ca_file, tls.cert_file, tls.key_file)


def default_advertised_url(settings: BrokerSettings) -> str:
    """``https://host:port`` when the listener speaks TLS, ``http://host:port`` otherwise: the one scheme it serves."""
    scheme = "https" if settings.tls.enabled else "http"
    return f"{scheme}://{settings.host}:{settings.port}"


def peer_common_name(peercert: dict[str, Any] | None) -> str | None:
    """The subject CN of ``SSLSocket.getpeercert()``'s answer, or ``None`` when there is no verified certificate.

    ``getpeercert()`` gives ``None`` (no certificate) or ``{}`` (one that was not
    verified, which ``CERT_NONE`` allows): neither names anybody. A subject with several
    CNs names its most specific one, the last (RFC 6125).
    """
    if not peercert:
        return None
    names = [value for rdn in peercert.get("subject", ()) for key, value in rdn if key == "commonName"]
    return names[-1] if names else None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine: ``localhost``, 127.0.0.0/8 or ::1."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def anonymous_listener_refusal(host: str, authentication: str, allow_anonymous: bool) -> str | None:
    """Why a broker must not listen on ``host``, or ``None`` when it may.

    Without authentication every client is anonymous and may do anything, which is fine
    on loopback and a hole anywhere else; the operator opts in to the hole explicitly.
    Any name other than ``localhost`` counts as reachable from elsewhere: what it
    resolves to is not known here.
    """
    if authentication != "none" or allow_anonymous or is_loopback(host):
        return None
    return (
        f"refusing to listen on {host} with security.authentication = 'none': any client that reaches it "
        "could do anything. Turn authentication on (security.authentication, HIGHWATER_SECURITY__AUTHENTICATION) "
        "or accept anonymous clients with --allow-anonymous (allow_anonymous = true, HIGHWATER_ALLOW_ANONYMOUS=true)"
    )
