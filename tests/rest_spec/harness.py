"""The conformance harness: call a spec operation by its name, hold the answer to the spec's model.

``SpecCaller.call("getKafkaTopic", {"topic_name": "t"}, expect=200)`` fills the spec's
path (below ``/v3``), sends the request over plain HTTP, checks the status is the one
expected and one the spec lists for that operation, and validates the body strictly
from its JSON text against the model the table (``operations``) gives that status. Every
validated success ticks the operation off, so a walk can assert at its end that it
exercised every operation the table says is served.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from pydantic import BaseModel

from tests.rest_spec.models import Error, ProduceResponse, validate
from tests.rest_spec.operations import BY_NAME, OPERATIONS, SPEC_PREFIX

TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    raw: bytes
    model: BaseModel | None
    """The body as the spec's model for its status; None for an answer the spec gives no body."""

    def json(self) -> Any:
        return json.loads(self.raw)


def send(method: str, url: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


class SpecCaller:
    """One cluster's spec operations, and the record of which were exercised with a success."""

    def __init__(self, url: str, cluster_id: str) -> None:
        self.url = url
        self.cluster_id = cluster_id
        self.exercised: dict[str, set[int]] = defaultdict(set)

    def path(self, name: str, params: dict[str, Any] | None = None, cluster_id: str | None = None) -> str:
        values = {key: quote(str(value), safe="") for key, value in (params or {}).items()}
        values["cluster_id"] = quote(cluster_id or self.cluster_id, safe="")
        return SPEC_PREFIX + BY_NAME[name].path.format(**values)

    def call(
        self,
        name: str,
        params: dict[str, Any] | None = None,
        *,
        expect: int,
        query: dict[str, Any] | None = None,
        body: Any = None,
        raw: bytes | None = None,
        cluster_id: str | None = None,
    ) -> Answer:
        """``body`` is sent as JSON, ``raw`` as it is (a malformed body); the answer must be ``expect``."""
        operation = BY_NAME[name]
        url = self.url + self.path(name, params, cluster_id) + (f"?{urlencode(query)}" if query else "")
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        status, text = send(operation.method, url, data, {"Content-Type": "application/json"})
        assert status == expect, f"{operation.key} answered {status}, expected {expect}: {text[:500]!r}"
        model = operation.model_for(status)
        validated = validate(model, text) if model is not None else None
        if status < 300 or status == operation.refusal:
            self.exercised[name].add(status)
        return Answer(status, text, validated)

    def error(self, name: str, params: dict[str, Any] | None = None, *, expect: int, **kwargs: Any) -> Error:
        """A refused call: the spec's ``Error`` body, with ``expect`` as the status."""
        answer = self.call(name, params, expect=expect, **kwargs)
        assert isinstance(answer.model, Error), answer.raw
        return answer.model

    def stream_records(self, topic: str, records: Iterable[dict[str, Any]]) -> list[ProduceResponse]:
        """Confluent's streaming mode: the records as one chunked body, one ``ProduceResponse`` line back each."""
        address = urlsplit(self.url)
        connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=TIMEOUT_S)
        chunks = (json.dumps(record).encode() for record in records)
        headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        try:
            path = self.path("produceRecord", {"topic_name": topic})
            connection.request("POST", path, body=chunks, headers=headers, encode_chunked=True)
            response = connection.getresponse()
            status, text = response.status, response.read()
        finally:
            connection.close()
        assert status == 200, text
        reports = [validate(ProduceResponse, line) for line in text.splitlines() if line.strip()]
        self.exercised["produceRecord"].add(status)
        return reports

    def missing(self) -> list[str]:
        """The served operations no call validated a success (or the table's ``refusal``) of."""
        return [op.name for op in OPERATIONS if op.served and op.name not in self.exercised]
