"""How a broker proves to another broker that it is one: ``Authorization: HighwaterBroker <id>:<mac>``.

The cluster's brokers share a random secret kept in the metadata store
(``/security/broker-secret``, created by the first broker that starts). A broker's
token is ``HMAC-SHA256(secret, "broker:<id>")``: anyone who can read the store is
already all-powerful, and no broker needs a user's password to start.

The token is the same on every request, so it is as replayable as a Basic password
is: whoever can read the traffic can reuse either. TLS (``[tls]``) is what keeps both
secret; on plain HTTP the token still keeps out every client that cannot see broker
traffic, which is the anonymous ``curl`` on the internal routes this exists to stop.
"""

from __future__ import annotations

import hashlib
import hmac

SCHEME = "HighwaterBroker"


def _mac(secret: bytes, node_id: int) -> str:
    return hmac.new(secret, f"broker:{node_id}".encode(), hashlib.sha256).hexdigest()


def broker_authorization(node_id: int, secret: bytes) -> str:
    """The ``Authorization`` header value broker ``node_id`` sends on every broker-to-broker call."""
    return f"{SCHEME} {node_id}:{_mac(secret, node_id)}"


def verified_broker_id(credentials: str, secret: bytes) -> int | None:
    """The broker id a ``HighwaterBroker`` header's credentials (the part after the scheme) prove, or None."""
    node_text, separator, mac = credentials.partition(":")
    if not separator or not node_text.isdigit() or len(node_text) > 10:
        return None
    node_id = int(node_text)
    return node_id if hmac.compare_digest(mac.encode(), _mac(secret, node_id).encode()) else None
