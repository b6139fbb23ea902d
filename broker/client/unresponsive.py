"""Which broker to ask first: those that answered, before those that recently did not.

A client that asks its brokers in a fixed order pays the full request timeout on every
call while the first one hangs (a paused process accepts connections and never
replies). Kafka clients back off from a node that failed; here a server that gave no
answer is asked after every other server until ``backoff_ms`` has passed, and is
forgiven at once by any answer of its own (an error status is an answer too).

Pure: no I/O, no clock (callers pass ``now_ms`` from a monotonic clock), so the
ordering is tested without sleeping. Shared by the cluster client of the producer and
consumer and by the Spark connector's planning.

Invariants:

* ``in_order`` returns a permutation of its input: a backed-off server is never
  dropped, so a client whose only live broker once hung still reaches it;
* servers not backed off keep their given order, and come before every backed-off one;
  backed-off servers come in the order their backoff ends (the one that failed longest
  ago, the likeliest to be back, first);
* a server is its origin, ``scheme://host:port``: every URL on one process shares its
  fate, so a timed-out produce to ``http://b:2/v3/...`` backs off ``http://b:2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit


def server_of(url: str) -> str:
    """``scheme://host:port`` of ``url``: the process every path of ``url`` reaches."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class UnresponsiveServers:
    """Servers that gave no answer, each with the monotonic time (ms) until which it is asked last."""

    def __init__(self, backoff_ms: int) -> None:
        self.backoff_ms = backoff_ms
        self._asked_last_until_ms: dict[str, int] = {}
        """server_of(url) -> end of its backoff; one entry per server that has not answered since it failed."""

    def no_answer(self, url: str, now_ms: int) -> None:
        """``url`` (any URL on the server) got no answer at ``now_ms``: ask its server last for ``backoff_ms``."""
        self._asked_last_until_ms[server_of(url)] = now_ms + self.backoff_ms

    def answered(self, url: str) -> None:
        """The server of ``url`` answered: it goes back to its place in the order."""
        self._asked_last_until_ms.pop(server_of(url), None)

    def backed_off(self, url: str, now_ms: int) -> bool:
        return self._asked_last_until_ms.get(server_of(url), now_ms) > now_ms

    def in_order(self, servers: Sequence[str], now_ms: int) -> list[str]:
        """``servers`` to ask in turn: the others in their given order, then the backed-off ones."""
        trusted = [url for url in servers if not self.backed_off(url, now_ms)]
        backed_off = [url for url in servers if self.backed_off(url, now_ms)]
        backed_off.sort(key=lambda url: self._asked_last_until_ms[server_of(url)])
        return trusted + backed_off
