"""Fixtures of the console's browser tests: headless Debian Chromium driven by Playwright, a harness
3-broker cluster per module (``console``; a test that pauses or stops a broker starts its own from
``CONSOLE_SPEC``), and a page that fails its test on any browser console error.

Chromium is ``/usr/bin/chromium`` (``make chromium`` installs it); Playwright never downloads a
browser. The flags turn off Chromium's own background connections, which this machine's
closed network refuses (and which a test has no business making).

Each test's screenshots go under its ``tmp_path`` and, when ``HWTEST_CONSOLE_SHOTS`` names
a directory, there too: that is how ``docs/console/*.png`` are made.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, ViewportSize, sync_playwright

from tests.support.cluster import ClusterSpec, cluster_fixture

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
WIDE = ViewportSize(width=1280, height=900)
NARROW = ViewportSize(width=800, height=900)
CONSOLE_SPEC = ClusterSpec(
    kafka=True,  # a transactional writer (librdkafka) opens transactions for the partition page
    settings={
        # A paused follower stays in the ISR for the whole pause, so the HW it holds back stays put.
        "replica_lag_time_max_ms": 30000,
        "broker_session_timeout_ms": 30000,
        "console.lag_sample_interval_ms": 200,
        "console.activity_sample_interval_ms": 500,
    },
)

console = cluster_fixture(CONSOLE_SPEC, scope="module")
"""The module's cluster, which its tests share: each makes topics and groups of its own."""


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


Shoot = Callable[[Page, str], Path]
"""The ``shoot`` fixture: ``shoot(page, name)`` saves the page's screenshot and returns its path."""


@pytest.fixture
def shoot(tmp_path: Path) -> Shoot:
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
