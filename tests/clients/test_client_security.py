"""``ClusterClient``'s security options against a real HTTP server on loopback: Basic credentials go with
every request, and half-given options are refused when the client is built, without echoing the password."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from broker.client.http import ClusterClient
from broker.tls import TlsFileError


@pytest.fixture
async def echo_server() -> AsyncIterator[tuple[str, list[str | None]]]:
    """A server answering ``GET /v3/clusters`` like a broker and recording each Authorization header."""
    seen: list[str | None] = []

    async def clusters(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"data": [{"cluster_id": "c1"}]})

    app = web.Application()
    app.router.add_get("/v3/clusters", clusters)
    app.router.add_get("/v3/clusters/{cluster_id}", clusters)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


async def test_basic_credentials_go_with_every_request(echo_server: tuple[str, list[str | None]]) -> None:
    url, seen = echo_server
    client = ClusterClient([url], username="alice", password="s3cret-pw")
    try:
        await client.json_call("GET", f"{url}/v3/clusters")
        await client.json_call("GET", f"{url}/v3/clusters")
    finally:
        await client.close()
    expected = "Basic " + base64.b64encode(b"alice:s3cret-pw").decode()
    assert seen == [expected, expected]


async def test_no_credentials_send_no_authorization_header(echo_server: tuple[str, list[str | None]]) -> None:
    url, seen = echo_server
    client = ClusterClient([url])
    try:
        assert await client.cluster_id() == "c1"
    finally:
        await client.close()
    assert seen == [None, None]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"username": "alice"}, "username and password go together: password is missing"),
        ({"password": "s3cret-pw"}, "username and password go together: username is missing"),
        ({"username": "ali:ce", "password": "pw"}, ":"),
        ({"ssl_key_file": "/k.pem"}, "ssl_key_file needs ssl_cert_file"),
    ],
)
def test_unusable_security_options_are_refused_when_the_client_is_built(options: dict, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as caught:
        ClusterClient(["http://127.0.0.1:1"], **options)
    assert "s3cret-pw" not in str(caught.value)


def test_a_missing_ca_file_is_named_when_the_client_is_built(tmp_path: Path) -> None:
    with pytest.raises(TlsFileError, match=r"ssl_ca_file .*ca.pem: no such file"):
        ClusterClient(["https://127.0.0.1:1"], ssl_ca_file=tmp_path / "ca.pem")
