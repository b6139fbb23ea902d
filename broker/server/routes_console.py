"""The web console's static shell: ``GET /console`` (the page) and ``GET /console/{path}`` (its assets).

``GET /`` and ``GET /console/`` redirect to ``/console``: the addresses a newcomer types
first land on the console instead of a 404. The redirects are temporary (302): a browser
keeps a permanent one for good, so a later broker that answers these paths itself would
never be asked.

The console is plain HTML, CSS and JavaScript modules shipped inside the package
(``broker/console/static``): nothing is built at install time and no extra process
runs. Every broker serves the same files, so any broker's URL opens the console.

Anyone may load the shell (``route_access``): it holds no data. The pages read the
cluster through the public ``/v3`` API with the user's own credentials, where every
call is authenticated and authorized as any other client's, so the console can show
only what the principal may DESCRIBE and can do only what its ACLs allow.

Only the files found under the static directory when the module is loaded are
served, looked up by exact relative name in that manifest: a path is never joined
onto the file system, so no ``..`` or encoded separator can reach another file.
An unknown name is a JSON 404 like any other. The bytes are read once, at import,
and answered with an ``ETag`` so a polling browser revalidates for a 304 instead of
downloading them again. The Content-Security-Policy allows scripts, styles and
connections to this origin only, so an injected record value can never run code.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from broker.errors import NotFound
from broker.server.api_routes import Operation, Reply, RouteTable, path_param

STATIC_DIR = Path(__file__).resolve().parent.parent / "console" / "static"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
"""``no-cache`` is "revalidate every time": an upgraded broker's assets are picked up at once, via the ETag."""
ASSET_TYPES = {media.split(";")[0]: {"type": "string"} for media in CONTENT_TYPES.values()}
INDEX = "index.html"
CONSOLE = "/console"


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


def load_assets(root: Path) -> dict[str, Asset]:
    """Every servable file under ``root`` by its relative POSIX name; files of other types are left out."""
    assets = {}
    for path in sorted(root.rglob("*")):
        content_type = CONTENT_TYPES.get(path.suffix)
        if content_type is None or not path.is_file():
            continue
        body = path.read_bytes()
        assets[path.relative_to(root).as_posix()] = Asset(
            body, content_type, f'"{hashlib.sha256(body).hexdigest()[:32]}"'
        )
    return assets


ASSETS = load_assets(STATIC_DIR)
routes = RouteTable()


def _answer(request: web.Request, name: str) -> web.Response:
    asset = ASSETS.get(name)
    if asset is None:
        raise NotFound(f"the console has no file {name!r}")
    headers = {**SECURITY_HEADERS, "ETag": asset.etag}
    if request.headers.get("If-None-Match") == asset.etag:
        return web.Response(status=304, headers=headers)
    return web.Response(body=asset.body, headers={**headers, "Content-Type": asset.content_type})


def _to_console() -> web.Response:
    """The fragment (``#/groups``) is the browser's: it keeps it across the redirect, so no page is lost."""
    return web.Response(status=302, headers={"Location": CONSOLE})


REDIRECT = (Reply(302, "to the web console, at /console"),)


@routes.get("/", Operation("The broker's root: redirects to the web console", REDIRECT, tags=("console",)))
async def root(request: web.Request) -> web.Response:
    return _to_console()


@routes.get(
    "/console/",
    Operation("The console's address with a trailing slash: redirects to /console", REDIRECT, tags=("console",)),
)
async def console_slash(request: web.Request) -> web.Response:
    return _to_console()


@routes.get(
    CONSOLE,
    Operation(
        "The web console (a single page; its data comes from this API with the caller's credentials)",
        (Reply(200, "the console's page", {"text/html": {"type": "string"}}),),
        tags=("console",),
    ),
)
async def console_page(request: web.Request) -> web.Response:
    return _answer(request, INDEX)


@routes.get(
    "/console/{path:.+}",
    Operation(
        "A static file of the web console (scripts, styles, images)",
        (Reply(200, "the file", ASSET_TYPES),),
        (path_param("path", {"type": "string"}, "the file's name under the console"),),
        tags=("console",),
    ),
)
async def console_asset(request: web.Request) -> web.Response:
    return _answer(request, request.match_info["path"])
