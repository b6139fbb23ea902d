"""Fixtures of the console's browser tests: headless Debian Chromium driven by Playwright, a real
3-broker cluster per module, and a page that fails its test on any browser console error.

Chromium is ``/usr/bin/chromium`` (``make chromium`` installs it); Playwright never downloads a
browser. The flags turn off Chromium's own background connections, which this machine's
closed network refuses (and which a test has no business making).

Each test's screenshots go under its ``tmp_path`` and, when ``HWTEST_CONSOLE_SHOTS`` names
a directory, there too: that is how ``docs/console/*.png`` are made.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright

from tests.support.brokers import BrokerCluster, http_json
from tests.support.replication import start_cluster

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 800, "height": 900}
CONSOLE_ENV = {
    # A paused follower stays in the ISR for the whole pause, so the HW it holds back stays put.
    "HIGHWATER_REPLICA_LAG_TIME_MAX_MS": "30000",
    "HIGHWATER_BROKER_SESSION_TIMEOUT_MS": "30000",
    "HIGHWATER_CONSOLE__LAG_SAMPLE_INTERVAL_MS": "200",
    "HIGHWATER_CONSOLE__ACTIVITY_SAMPLE_INTERVAL_MS": "500",
}


@dataclass
class Console:
    """A started cluster and what the tests ask it over the API, next to what the page shows."""

    cluster: BrokerCluster
    cluster_id: str = ""

    def url(self, broker_id: int | None = None) -> str:
        return self.cluster.brokers[broker_id].url if broker_id else self.cluster.any_url()

    def api(self, path: str, method: str = "GET", body: dict | None = None, via: int | None = None) -> dict:
        status, answer = http_json(method, f"{self.url(via)}/v3/clusters/{self.cluster_id}{path}", body)
        assert 200 <= status < 300, (status, answer)
        return answer

    def create_topic(self, name: str, partitions: int = 3, replication_factor: int = 3) -> None:
        self.api(
            "/topics",
            "POST",
            {"topic_name": name, "partitions_count": partitions, "replication_factor": replication_factor},
        )


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    cluster = start_cluster(tmp_path_factory.mktemp("console"), env=CONSOLE_ENV)
    try:
        yield Console(cluster, cluster.cluster_id())
    finally:
        cluster.shutdown()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as started:
        yield started


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make chromium`")
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield launched
    launched.close()


@dataclass
class Errors:
    """Every console error and uncaught exception of a page; a test ends with none it did not name.

    A test of refusals names the answers it provokes (``allow("status of 401")``): Chromium
    reports every 4xx resource as a console error, and those are the point of such a test.
    """

    seen: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)

    def allow(self, text: str) -> None:
        self.allowed.append(text)

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error" and not any(text in message.text for text in self.allowed):
            self.seen.append(f"console: {message.text} at {message.location}")

    def page(self, error: Exception) -> None:
        self.seen.append(f"pageerror: {error}")


@pytest.fixture
def browser_errors() -> Errors:
    return Errors()


@pytest.fixture
def page(browser: Browser, browser_errors: Errors) -> Iterator[Page]:
    context = browser.new_context(viewport=WIDE)
    opened = context.new_page()
    errors = browser_errors
    opened.on("console", errors.console)
    opened.on("pageerror", errors.page)
    opened.set_default_timeout(15_000)
    yield opened
    context.close()
    assert errors.seen == [], "the browser reported errors:\n" + "\n".join(errors.seen)


@pytest.fixture
def shoot(tmp_path: Path):
    """Save the page's screenshot under the test's tmp_path and, if asked, under HWTEST_CONSOLE_SHOTS."""

    def save(page: Page, name: str) -> Path:
        path = tmp_path / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        shots = os.environ.get("HWTEST_CONSOLE_SHOTS")
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            (Path(shots) / f"{name}.png").write_bytes(path.read_bytes())
        assert path.stat().st_size > 0
        return path

    return save
