"""What a newcomer meets in the console's first minutes, in a real browser against a real 3-broker
cluster: the addresses typed first end at the console; every page paints its frame and says it
is loading before any answer arrives; a group whose consumer read everything and left reads as
done, not as an alarm; lag charts speak in clock times and durations; counts agree with their
nouns.

Every wait is on a condition of the page (Playwright's ``expect``/``wait_for_function``), never
a sleep; the "before any answer" state is made by holding the page's API calls, not by timing.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Route, expect

from consumer.sync import SyncConsumer
from tests.console.conftest import Shoot
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration

TOPIC = "first-visit"
GROUP = "finished-readers"
RECORDS = 6
CLOCK = re.compile(r"^\d\d:\d\d:\d\d$")
CLOCK_UTC = re.compile(r"^\d\d:\d\d:\d\d UTC$")

PAGES = (
    ("/", "Cluster overview", "brokers"),
    ("/topics", "Topics", f"topic-{TOPIC}"),
    (f"/topics/{TOPIC}", f"Topic {TOPIC}", "partition-0-bars"),
    (f"/topics/{TOPIC}/partitions/0", f"Partition {TOPIC}-0", "record-0-value"),
    ("/groups", "Consumer groups", f"group-{GROUP}-status"),
    (f"/groups/{GROUP}", f"Consumer group {GROUP}", f"lag-{TOPIC}-0-committed"),
)
"""Each page with its heading and a thing it draws only from data."""


@pytest.fixture(scope="module")
def finished(console: Cluster) -> Cluster:
    """A one-partition topic read to its end by a real group consumer, which then left.

    The consumer auto-commits what it consumed when it closes, as a script that is done does:
    the group has no member and its committed offset is the high watermark."""
    console.create_topic(TOPIC, partitions=1)
    status, body = console.produce(TOPIC, [f"r{i}" for i in range(RECORDS)])
    assert (status, body["failures"]) == (207, []), body
    with SyncConsumer(console.url(), group_id=GROUP, auto_offset_reset="earliest") as consumer:
        consumer.subscribe([TOPIC])
        for read, _ in enumerate(consumer, start=1):
            if read == RECORDS:
                break
    lag = console.api("GET", f"/consumer-groups/{GROUP}/lags")["data"]
    assert [(row["current_offset"], row["lag"]) for row in lag] == [(RECORDS, 0)]
    return console


def test_the_root_and_the_slashed_address_open_the_console(page: Page, console: Cluster) -> None:
    page.goto(f"{console.url()}/")
    expect(page).to_have_url(f"{console.url()}/console")
    expect(page.get_by_role("heading", name="Cluster overview")).to_be_visible()
    page.goto(f"{console.url()}/console/#/groups")
    expect(page).to_have_url(f"{console.url()}/console#/groups")
    expect(page.get_by_role("heading", name="Consumer groups")).to_be_visible()


class HeldCalls:
    """Holds every API call of the page until ``release``: the page as it is before any answer."""

    def __init__(self, page: Page) -> None:
        self.held: list[Route] = []
        self.holding = True
        page.route("**/v3/**", self._route)

    def _route(self, route: Route) -> None:
        if self.holding:
            self.held.append(route)
        else:
            route.continue_()

    def release(self) -> None:
        self.holding = False
        for route in self.held:
            route.continue_()
        self.held.clear()


@pytest.mark.parametrize(("route", "heading", "drawn"), PAGES)
def test_the_first_paint_shows_the_frame_and_a_loading_state(
    page: Page, finished: Cluster, route: str, heading: str, drawn: str, shoot: Shoot
) -> None:
    calls = HeldCalls(page)
    page.goto(f"{finished.url()}/console#{route}")
    expect(page.get_by_role("navigation", name="Sections")).to_be_visible()
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
    expect(page.locator("main").get_by_text("Loading…").first).to_be_visible()
    if route == "/":
        shoot(page, "loading")
    calls.release()
    expect(page.get_by_test_id(drawn).first).to_be_visible()
    expect(page.locator("main").get_by_text("Loading…")).to_have_count(0)


def test_a_group_whose_consumer_read_everything_and_left_reads_as_done(
    page: Page, finished: Cluster, shoot: Shoot
) -> None:
    page.goto(f"{finished.url()}/console#/groups")
    expect(page.get_by_test_id(f"group-{GROUP}-state")).to_have_text("Empty")
    expect(page.get_by_test_id(f"group-{GROUP}-members")).to_have_text("0")
    expect(page.get_by_test_id(f"group-{GROUP}-total-lag")).to_have_text("0")
    expect(page.get_by_test_id(f"group-{GROUP}-status")).to_have_text("OK")
    page.get_by_text("What the statuses mean").click()
    expect(page.get_by_test_id("status-legend")).to_contain_text("no commit for a while, and records are waiting")

    page.goto(f"{finished.url()}/console#/groups/{GROUP}")
    expect(page.get_by_test_id("group-state")).to_have_text("Empty")
    expect(page.get_by_test_id("group-status")).to_have_text("OK")
    expect(page.get_by_test_id("group-note")).to_have_text(
        "Status OK: keeping up, or caught up (lag 0). "
        "No consumer is running, and none needs to: every committed offset is at the high watermark."
    )
    shoot(page, "group-finished")


def test_lag_charts_read_as_clock_times_and_durations(page: Page, console: Cluster) -> None:
    """A group that committed nothing past offset 0: its oldest unread record ages, so the
    lag in time passes a second and its axis must read as a duration, not a count of ms."""
    topic, group = "aging", "late-readers"
    console.create_topic(topic, partitions=1)
    console.api("POST", f"/topics/{topic}/records:batch?acks=all", {"entries": [{"value": {"data": 1}}]})
    console.api(
        "POST",
        f"/consumer-groups/{group}/offsets",
        {"offsets": [{"topic_name": topic, "partition_id": 0, "offset": 0}]},
    )
    page.goto(f"{console.url()}/console#/groups/{group}")
    page.wait_for_function(
        """() => {
            const svg = document.querySelector('[data-testid="lag-ms-chart"]');
            return svg && Number(svg.dataset.max) >= 1000 && Number(svg.dataset.samples) > 1;
        }"""
    )
    chart = page.get_by_test_id("lag-ms-chart")
    labels = chart.locator("text").all_text_contents()
    assert not [label for label in labels if label.endswith(" ms")], labels
    shown = page.evaluate(
        """async () => {
            const dom = await import("/console/js/dom.js");
            const svg = document.querySelector('[data-testid="lag-ms-chart"]');
            return {max: Number(svg.dataset.max), label: svg.querySelector('[data-testid="lag-ms-chart-max"]').textContent,
                    expected: dom.fmtDuration(Number(svg.dataset.max))};
        }"""
    )
    assert shown["label"] == shown["expected"], shown
    expect(chart.get_by_test_id("lag-ms-chart-from")).to_have_text(CLOCK)
    expect(chart.get_by_test_id("lag-ms-chart-to")).to_have_text(CLOCK_UTC)
    expect(page.get_by_test_id("lag-chart-max")).to_have_text("1 record")
    assert page.evaluate(
        """async () => {
            const dom = await import("/console/js/dom.js");
            return [850, 12_345, 401_316, 3_725_000, 90_061_000].map(dom.fmtDuration).concat(dom.fmtClock(1767323045678));
        }"""
    ) == ["850 ms", "12.3 s", "6m 41s", "1h 02m", "1d 1h", "03:04:05"]


def test_counts_agree_with_their_nouns(page: Page, finished: Cluster) -> None:
    page.goto(f"{finished.url()}/console#/topics/{TOPIC}")
    expect(page.get_by_test_id("topic-shape")).to_have_text("1 partition, replication factor 3")
    shown = page.evaluate(
        """async () => {
            const dom = await import("/console/js/dom.js");
            const records = await import("/console/js/records.js");
            return {
                counts: [0, 1, 2].map((n) => dom.plural(n, "partition")),
                oneMoreByte: records.hex(new Uint8Array(513)).split("\\n").pop(),
                twoMoreBytes: records.hex(new Uint8Array(514)).split("\\n").pop(),
            };
        }"""
    )
    assert shown == {
        "counts": ["0 partitions", "1 partition", "2 partitions"],
        "oneMoreByte": "… 1 more byte",
        "twoMoreBytes": "… 2 more bytes",
    }
