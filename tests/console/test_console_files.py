"""The console's static files as the broker serves them, the redirects to it, and the URL ``highwater dev`` prints.

Served from an app holding only the console's routes (the security door and the access
table are the authorization matrix's business): only files of the shipped manifest are
answered, by exact name, so a path that tries to climb out of the static directory is a
JSON 404 like any unknown name; an unchanged file revalidates to a 304 on its ETag.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from broker.cli.dev import examples
from broker.server import routes_console
from broker.server.api_routes import register
from broker.server.middleware import error_middleware


@pytest.fixture
async def client() -> AsyncIterator[TestClient]:
    app = web.Application(middlewares=[error_middleware])
    register(app, (routes_console.routes,))
    async with TestClient(TestServer(app)) as started:
        yield started


async def test_the_page_and_its_modules_are_served_with_their_types_and_a_strict_policy(client: TestClient) -> None:
    page = await client.get("/console")
    assert page.status == 200
    assert page.headers["Content-Type"].startswith("text/html")
    html = await page.text()
    assert '<script type="module" src="/console/js/main.js">' in html
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    script = await client.get("/console/js/main.js")
    assert script.status == 200
    assert script.headers["Content-Type"].startswith("text/javascript")
    assert (await script.read()) == (routes_console.STATIC_DIR / "js" / "main.js").read_bytes()


async def test_every_module_the_pages_import_is_in_the_manifest() -> None:
    """A renamed or forgotten file would only show as a blank page in a browser."""
    for name, asset in routes_console.ASSETS.items():
        if not name.endswith(".js"):
            continue
        for line in asset.body.decode().splitlines():
            if line.startswith("import ") and " from " in line:
                target = line.rsplit(" from ", 1)[1].strip(' ";')
                resolved = (Path("/") / name).parent.joinpath(target).resolve().relative_to("/").as_posix()
                assert resolved in routes_console.ASSETS, f"{name} imports {target}, which is not shipped"


@pytest.mark.parametrize("path", ["/", "/console/"])
async def test_the_root_and_the_slashed_address_redirect_to_the_console(client: TestClient, path: str) -> None:
    """The addresses a newcomer types first: both end at the console's page, not at a 404."""
    answer = await client.get(path, allow_redirects=False)
    assert answer.status == 302
    assert answer.headers["Location"] == "/console"
    followed = await client.get(path)
    assert followed.url.path == "/console"
    assert '<script type="module" src="/console/js/main.js">' in await followed.text()


@pytest.mark.parametrize(
    "path",
    [
        "/console/js/../../routes_console.py",
        "/console/%2e%2e/%2e%2e/server/app.py",
        "/console/missing.js",
        "/console/js",
    ],
)
async def test_a_name_outside_the_manifest_is_a_json_404(client: TestClient, path: str) -> None:
    answer = await client.get(path)
    assert answer.status == 404
    assert (await answer.json())["error_code"] == 40400


async def test_an_unchanged_file_revalidates_to_304(client: TestClient) -> None:
    first = await client.get("/console/console.css")
    again = await client.get("/console/console.css", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status == 304
    assert (await again.read()) == b""
    stale = await client.get("/console/console.css", headers={"If-None-Match": '"other"'})
    assert stale.status == 200


def test_highwater_dev_prints_the_console_url() -> None:
    printed = examples("http://127.0.0.1:9092", "cluster-1")
    assert "http://127.0.0.1:9092/console\n" in printed
