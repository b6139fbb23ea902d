"""The broker address a client command is given (``--server``/``HIGHWATER_SERVER``).

``host:port`` means ``http://host:port`` (the habit Kafka's tools teach); an
``http``/``https`` URL is taken as it is, a path prefix included (a broker behind a
gateway). Anything else is refused before any request is sent: an unusable address is
the operator's typo to fix, not a connection failure to retry.
"""

from __future__ import annotations

import re

from yarl import URL

DEFAULT_SERVER = "http://127.0.0.1:9092"
HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")
"""``host:port`` as Kafka's ``bootstrap.servers`` spells a broker: a name, IPv4 or [IPv6], and a port."""
SERVER_SCHEMES = ("http", "https")


def broker_url(text: str) -> str:
    """The base URL of a broker named on the command line, without a trailing slash.

    Raises ``ValueError`` with a one-line message naming ``text`` when it is neither
    ``host:port`` nor a usable http(s) URL.
    """
    candidate = text.strip()
    if HOST_PORT.fullmatch(candidate):
        candidate = f"http://{candidate}"
    problem = _url_problem(candidate) if "://" in candidate else "neither host:port nor a URL"
    if problem is not None:
        raise ValueError(f"{text!r} is not a broker address ({problem}); give host:port or http://host:port")
    return candidate.rstrip("/")


def _url_problem(candidate: str) -> str | None:
    try:
        url = URL(candidate)
        port = url.port
    except ValueError as error:
        return "malformed URL: " + " ".join(str(error).split())
    if url.scheme not in SERVER_SCHEMES:
        return f"scheme {url.scheme!r} is not http or https"
    if not url.host:
        return "no host"
    if port is None or not 0 < port < 65536:
        return "the port must be 1 to 65535"
    if url.query_string or url.fragment:
        return "a query or fragment has no place in it"
    return None
