"""``CoordinatedCalls``: calls one coordinator answers (a group's, a transactional id's), sent to any broker.

Every broker accepts a coordinated request and forwards it to the coordinator, so any
reachable broker will do. The caller still remembers the coordinator a
``NOT_COORDINATOR`` answer names and asks it first, which saves the forwarding hop.
Unreachable brokers are skipped in turn; every other error is raised for the caller to
judge (``NOT_COORDINATOR``, ``COORDINATOR_NOT_AVAILABLE`` and
``COORDINATOR_LOAD_IN_PROGRESS`` are retriable).
"""

from __future__ import annotations

from typing import Any

from broker.client.errors import BrokerUnreachable
from broker.client.http import ClusterClient
from broker.errors import ServiceUnavailable
from broker.errors.groups import NotCoordinator


class CoordinatedCalls:
    def __init__(self, client: ClusterClient) -> None:
        self.client = client
        self._coordinator_url: str | None = None

    async def cluster_path(self, suffix: str) -> str:
        return f"/v3/clusters/{await self.client.cluster_id()}{suffix}"

    def _urls(self) -> list[str]:
        urls = self.client.candidate_urls()
        if self._coordinator_url is not None:
            urls = [self._coordinator_url, *(url for url in urls if url != self._coordinator_url)]
        return urls

    async def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """Send to the known coordinator first, then any broker; follow one ``NOT_COORDINATOR`` hint."""
        last_error: Exception | None = None
        for url in self._urls():
            try:
                return await self.client.json_call(method, url + path, body, **kwargs)
            except NotCoordinator as error:
                hinted = error.details.get("coordinator_url")
                self._coordinator_url = hinted if isinstance(hinted, str) else None
                raise
            except (BrokerUnreachable, ServiceUnavailable) as error:
                if url == self._coordinator_url:
                    self._coordinator_url = None
                last_error = error
        raise last_error or BrokerUnreachable("no broker URL to ask")
