"""The console in a real browser against a real 3-broker cluster: every page loads without a
browser error and shows the API's numbers; a paused follower's LEO bar falls behind while the
HW stays where it holds it, and both recover; a group's lag chart rises and falls; topics are
created and deleted and a record produced through the forms.

The page's numbers are read from its ``data-testid`` elements and compared with the API's
answer read by the test itself; every wait is Playwright's ``expect``/``wait_for_function``
on a condition of the page, never a sleep.
"""

from __future__ import annotations

import json
import re
import threading
from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer as KafkaProducer
from playwright.sync_api import Page, expect

from tests.console.conftest import CONSOLE_SPEC, NARROW, Shoot
from tests.support.cluster import Cluster, Clusters

pytestmark = pytest.mark.integration

TOPIC = "orders"
GROUP = "billing"


NARROW_CHECKS = (
    ("/", "broker-3"),
    ("/topics", f"topic-{TOPIC}"),
    (f"/topics/{TOPIC}", "partition-2-bars"),
    (f"/topics/{TOPIC}/partitions/0", "record-0-value"),
    ("/groups", f"group-{GROUP}-status"),
    (f"/groups/{GROUP}", f"lag-{TOPIC}-2-committed"),
)
"""Each page with the widest thing it draws from data (a table's last row, the bars): the
width is measured once that is on screen, not when the network happens to be quiet (the
pages poll, every 500 ms here, so a quiet network is a matter of luck)."""


def open_page(page: Page, console: Cluster, route: str, via: int | None = None) -> None:
    page.goto(f"{console.url(via)}/console#{route}")


def text_of(page: Page, testid: str) -> str:
    return page.get_by_test_id(testid).first.inner_text().strip()


def fits(page: Page) -> bool:
    """No horizontal scroll of the whole page: wide tables scroll inside their own box."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.fixture(scope="module")
def seeded(console: Cluster) -> Cluster:
    console.create_topic(TOPIC, partitions=3)
    entries = [
        {"partition_id": i % 3, "key": {"type": "STRING", "data": f"k{i}"}, "value": {"data": {"n": i}}}
        for i in range(30)
    ]
    console.api("POST", f"/topics/{TOPIC}/records:batch?acks=all", {"entries": entries})
    console.api(
        "POST",
        f"/consumer-groups/{GROUP}/offsets",
        {"offsets": [{"topic_name": TOPIC, "partition_id": p, "offset": 4} for p in range(3)]},
    )
    return console


def test_every_page_loads_without_errors_and_shows_the_apis_numbers(page: Page, seeded: Cluster, shoot: Shoot) -> None:
    console = seeded
    clusters = console.http("GET", "/v3/clusters")[1]["data"][0]
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    open_page(page, console, "/")
    expect(page.get_by_test_id("cluster-id")).to_have_text(console.cluster_id)
    expect(page.get_by_test_id("controller-id")).to_have_text(str(clusters["controller_id"]))
    expect(page.get_by_test_id("brokers-count")).to_have_text("3")
    topics = console.api("GET", "/topics")["data"]
    expect(page.get_by_test_id("topics-count")).to_have_text(str(len(topics)))
    partitions = sum(t["partitions_count"] for t in topics)
    expect(page.get_by_test_id("partitions-count")).to_have_text(str(partitions))
    shoot(page, "overview")

    open_page(page, console, "/topics")
    api_partitions = console.api("GET", f"/topics/{TOPIC}/partitions")["data"]
    records = sum(p["high_watermark"] - p["log_start_offset"] for p in api_partitions)
    sizes = {
        p["partition_id"]: p["size_bytes"] for p in console.api("GET", f"/topics/{TOPIC}/replica-offsets")["partitions"]
    }
    assert all(size > 0 for size in sizes.values()), sizes
    expect(page.get_by_test_id(f"topic-{TOPIC}-records")).to_have_text(str(records))
    expect(page.get_by_test_id(f"topic-{TOPIC}-bytes")).to_have_attribute("data-value", str(sum(sizes.values())))
    expect(page.get_by_test_id(f"topic-{TOPIC}-partitions")).to_have_text("3")
    expect(page.get_by_test_id(f"topic-{TOPIC}-rf")).to_have_text("3")
    shoot(page, "topics")
    per_topic = [url for url in asked if re.search(r"/topics/[^/]+/(partitions|replica-offsets)", url)]
    assert per_topic == [], "the overview and topics pages ask one request per topic"
    assert any(url.endswith(f"/clusters/{console.cluster_id}/replica-offsets") for url in asked)

    open_page(page, console, f"/topics/{TOPIC}")
    expect(page.get_by_test_id("topic-records")).to_have_text(str(records))
    expect(page.get_by_test_id("topic-bytes")).to_have_attribute("data-value", str(sum(sizes.values())))
    for p in api_partitions:
        prefix = f"partition-{p['partition_id']}"
        expect(page.get_by_test_id(f"{prefix}-size")).to_have_attribute("data-value", str(sizes[p["partition_id"]]))
        expect(page.get_by_test_id(f"{prefix}-hw")).to_have_text(str(p["high_watermark"]))
        expect(page.get_by_test_id(f"{prefix}-lso")).to_have_text(str(p["last_stable_offset"]))
        expect(page.get_by_test_id(f"{prefix}-leader")).to_have_text(str(p["leader_id"]))
        expect(page.get_by_test_id(f"{prefix}-isr")).to_have_text(", ".join(map(str, p["isr"])))
        for replica in p["replica_ids"]:
            bar = page.get_by_test_id(f"{prefix}-bars-replica-{replica}")
            expect(bar).to_have_attribute("data-leo", str(p["high_watermark"]))
    shoot(page, "topic")

    open_page(page, console, f"/topics/{TOPIC}/partitions/0")
    first = console.api("GET", f"/topics/{TOPIC}/partitions/0/records?format=string&max_records=1")["data"][0]
    expect(page.get_by_test_id("high-watermark")).to_have_text(str(api_partitions[0]["high_watermark"]))
    expect(page.get_by_test_id("last-stable")).to_have_text(str(api_partitions[0]["last_stable_offset"]))
    expect(page.get_by_test_id("low-watermark")).to_have_text(str(api_partitions[0]["log_start_offset"]))
    value = page.get_by_test_id(f"record-{first['offset']}-value")
    expect(value).to_have_attribute("data-kind", "json")
    assert json.loads(value.inner_text()) == json.loads(first["value"]["data"])
    shoot(page, "partition")

    summary = console.api("GET", f"/consumer-groups/{GROUP}/lag-summary")
    open_page(page, console, "/groups")
    expect(page.get_by_test_id(f"group-{GROUP}-total-lag")).to_have_text(str(summary["total_lag"]))
    expect(page.get_by_test_id(f"group-{GROUP}-status")).to_have_text(summary["status"])
    shoot(page, "groups")

    open_page(page, console, f"/groups/{GROUP}")
    expect(page.get_by_test_id("group-total-lag")).to_have_text(str(summary["total_lag"]))
    for lag in console.api("GET", f"/consumer-groups/{GROUP}/lags")["data"]:
        row = f"lag-{lag['topic_name']}-{lag['partition_id']}"
        expect(page.get_by_test_id(f"{row}-committed")).to_have_text(str(lag["current_offset"]))
        expect(page.get_by_test_id(f"{row}-lag")).to_have_text(str(lag["lag"]))
    shoot(page, "group-offsets")

    page.set_viewport_size(NARROW)
    for route, widest in NARROW_CHECKS:
        open_page(page, console, route)
        expect(page.get_by_test_id(widest)).to_be_visible()
        assert fits(page), f"{route} scrolls sideways at 800 px"
    shoot(page, "group-800px")


def bars_state(page: Page, partition: int) -> dict:
    """The replica bars of one partition as the page drew them: HW, and each broker's LEO and ISR flag."""
    return page.evaluate(
        """(prefix) => {
            const svg = document.querySelector(`[data-testid="${prefix}"]`);
            if (!svg) return null;
            const replicas = {};
            for (const g of svg.querySelectorAll("g[data-leo]")) {
                const id = g.dataset.testid.split("-").pop();
                replicas[id] = {leo: Number(g.dataset.leo), inSync: g.dataset.inSync === "true"};
            }
            return {hw: Number(svg.dataset.highWatermark), replicas};
        }""",
        f"partition-{partition}-bars",
    )


class Producer(threading.Thread):
    """Produces small acks=1 batches to one broker until stopped: the leader's LEO keeps moving."""

    def __init__(self, console: Cluster, via: int, topic: str) -> None:
        super().__init__(daemon=True)
        self.console, self.via, self.topic, self.stop = console, via, topic, threading.Event()
        self.failed: dict | None = None

    def run(self) -> None:
        while not self.stop.is_set():
            status, body = self.console.produce(self.topic, ["x"] * 5, acks="1", via=self.via)
            if status not in (200, 207) or body.get("failures"):
                self.failed = body
                return


def test_a_paused_follower_falls_behind_and_holds_the_hw_then_both_recover(
    clusters: Clusters, page: Page, shoot: Shoot
) -> None:
    console = clusters.start(CONSOLE_SPEC)  # it pauses a follower: a cluster of its own
    topic = "paused-follower"
    console.create_topic(topic, partitions=1)
    described = console.api("GET", f"/topics/{topic}/partitions/0")
    leader = described["leader_id"]
    controller = console.controller_id()
    followers = sorted(set(described["replica_ids"]) - {leader}, key=lambda broker: broker == controller)
    paused = followers[0]
    open_page(page, console, f"/topics/{topic}", via=leader)
    status, body = console.produce(topic, ["z"] * 200)
    assert (status, body["failures"]) == (207, []), body
    page.wait_for_function(
        """() => {
            const svg = document.querySelector('[data-testid="partition-0-bars"]');
            const leos = svg ? [...svg.querySelectorAll("g[data-leo]")].map((g) => Number(g.dataset.leo)) : [];
            return leos.length === 3 && leos.every((leo) => leo === 200) && Number(svg.dataset.highWatermark) === 200;
        }"""
    )
    producer = Producer(console, leader, topic)
    producer.start()
    console.brokers[paused].pause()
    try:
        page.wait_for_function(
            """([paused, leader]) => {
                const svg = document.querySelector('[data-testid="partition-0-bars"]');
                const leo = (id) => Number(svg.querySelector(`[data-testid="partition-0-bars-replica-${id}"]`).dataset.leo);
                const hw = Number(svg.dataset.highWatermark);
                return leo(leader) >= leo(paused) + 50 && hw === leo(paused);
            }""",
            arg=[paused, leader],
        )
        held = bars_state(page, 0)
        page.wait_for_function(
            """([leader, beyond]) => Number(document.querySelector(
                `[data-testid="partition-0-bars-replica-${leader}"]`).dataset.leo) >= beyond""",
            arg=[leader, held["replicas"][str(leader)]["leo"] + 50],
        )
        still = bars_state(page, 0)
        assert still["hw"] == held["hw"], "the HW moved while an in-sync follower was paused"
        assert still["replicas"][str(paused)]["leo"] == held["replicas"][str(paused)]["leo"]
        shoot(page, "topic-paused-follower")
    finally:
        producer.stop.set()
        producer.join(10)
        console.brokers[paused].resume()
    assert producer.failed is None, producer.failed
    page.wait_for_function(
        """() => {
            const svg = document.querySelector('[data-testid="partition-0-bars"]');
            const leos = [...svg.querySelectorAll("g[data-leo]")].map((g) => Number(g.dataset.leo));
            return leos.length === 3 && leos.every((leo) => leo === leos[0]) && Number(svg.dataset.highWatermark) === leos[0];
        }"""
    )
    recovered = bars_state(page, 0)
    assert recovered["hw"] == console.api("GET", f"/topics/{topic}/partitions/0")["high_watermark"] > held["hw"]
    shoot(page, "topic-recovered")


def chart(page: Page) -> dict:
    return page.evaluate(
        """() => {
            const svg = document.querySelector('[data-testid="lag-chart"]');
            return svg ? {samples: Number(svg.dataset.samples), last: Number(svg.dataset.last), max: Number(svg.dataset.max)} : null;
        }"""
    )


def test_a_groups_lag_chart_rises_while_producing_and_falls_after_commits(
    page: Page, console: Cluster, shoot: Shoot
) -> None:
    topic, group = "lag-chart", "chart-readers"
    console.create_topic(topic, partitions=1)
    commit = {"offsets": [{"topic_name": topic, "partition_id": 0, "offset": 0}]}
    console.api("POST", f"/consumer-groups/{group}/offsets", commit)
    open_page(page, console, f"/groups/{group}")
    page.wait_for_function(
        "() => { const c = document.querySelector('[data-testid=\"lag-chart\"]'); return c && Number(c.dataset.samples) > 0; }"
    )
    assert chart(page)["last"] == 0
    for _ in range(4):
        status, body = console.produce(topic, ["y"] * 20)
        assert (status, body["failures"]) == (207, []), body
    page.wait_for_function("() => Number(document.querySelector('[data-testid=\"lag-chart\"]').dataset.last) === 80")
    expect(page.get_by_test_id("group-total-lag")).to_have_text("80")
    shoot(page, "group-lag-rising")
    commit["offsets"][0]["offset"] = 80
    console.api("POST", f"/consumer-groups/{group}/offsets", commit)
    page.wait_for_function("() => Number(document.querySelector('[data-testid=\"lag-chart\"]').dataset.last) === 0")
    assert chart(page)["max"] == 80, "the chart still shows the rise before the commit"
    expect(page.get_by_test_id("group-total-lag")).to_have_text("0")
    shoot(page, "group")


def test_create_produce_and_delete_through_the_forms(page: Page, console: Cluster, shoot: Shoot) -> None:
    topic = "made-in-browser"
    open_page(page, console, "/topics")
    page.get_by_label("New topic name").fill(topic)
    page.get_by_label("Partitions").fill("2")
    page.get_by_label("Replication factor").fill("3")
    page.get_by_role("button", name="Create topic").click()
    expect(page.get_by_test_id("topics-result")).to_have_text(f"Created topic {topic}.")
    expect(page.get_by_test_id(f"topic-{topic}-partitions")).to_have_text("2")
    assert console.api("GET", f"/topics/{topic}")["partitions_count"] == 2

    open_page(page, console, f"/topics/{topic}/partitions/1")
    page.get_by_label("Key (text, empty for none)").fill("k1")
    page.get_by_label("Value", exact=True).fill('{"a": [1, 2]}')
    page.get_by_label("Value is JSON").check()
    page.get_by_label("Headers").fill("trace=abc")
    page.get_by_label("acks").select_option("all")
    page.get_by_role("button", name="Produce").click()
    expect(page.get_by_test_id("produce-result")).to_contain_text("Produced at offset 0")
    stored = console.api("GET", f"/topics/{topic}/partitions/1/records?format=string")["data"]
    assert [(r["key"]["data"], json.loads(r["value"]["data"])) for r in stored] == [("k1", {"a": [1, 2]})]
    assert stored[0]["headers"] == [{"name": "trace", "value": "YWJj"}]
    produced_at = stored[0]["timestamp"] // 1000 * 1000
    when = datetime.fromtimestamp(produced_at / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    page.get_by_label("Or from time (UTC)").fill(when)
    page.get_by_role("button", name="Show records").click()
    expect(page.get_by_test_id("browse-note")).to_contain_text("Offsets 0 to 0")
    expect(page.get_by_label("From offset")).to_have_value("0")
    value = page.get_by_test_id("record-0-value")
    expect(value).to_have_attribute("data-kind", "json")
    assert json.loads(value.inner_text()) == {"a": [1, 2]}
    shoot(page, "partition-produced")

    open_page(page, console, "/topics")
    page.get_by_role("button", name=f"Delete {topic}").click()
    confirm = page.get_by_test_id("delete-confirm-button")
    expect(confirm).to_be_disabled()
    page.get_by_label("Topic name", exact=True).fill(topic[:-1])
    expect(confirm).to_be_disabled()
    page.get_by_label("Topic name", exact=True).fill(topic)
    shoot(page, "topic-delete-dialog")
    confirm.click()
    expect(page.get_by_test_id("topics-result")).to_have_text(f"Deleted topic {topic}.")
    expect(page.get_by_test_id(f"topic-{topic}")).to_have_count(0)
    status, _ = console.v3("GET", f"/topics/{topic}")
    assert status == 404


def test_stored_bytes_show_as_json_text_or_hex_and_timestamps_read_as_numbers_or_iso(
    page: Page, console: Cluster
) -> None:
    """The record browser's rendering rules, run in the browser on the modules the page ships;
    a produce answer's timestamp may be epoch ms or (Confluent's spec) an ISO date-time."""
    open_page(page, console, "/")
    expect(page.locator("main h1")).to_be_visible()
    shown = page.evaluate(
        """async () => {
            const records = await import("/console/js/records.js");
            const dom = await import("/console/js/dom.js");
            const base64 = (bytes) => btoa(String.fromCharCode(...bytes));
            return {
                json: records.render(records.textToBase64('{"a":[1,"x"]}')),
                text: records.render(records.textToBase64("héllo wörld")),
                notJson: records.render(records.textToBase64("{oops")),
                binary: records.render(base64([0, 255, 16, 1])),
                none: records.render(null),
                stringField: records.render(records.dataOf({type: "STRING", data: "plain"})),
                iso: dom.toMs("2026-01-02T03:04:05.678Z"),
                number: dom.toMs(1767323045678),
            };
        }"""
    )
    assert shown["json"] == {"kind": "json", "text": '{\n  "a": [\n    1,\n    "x"\n  ]\n}'}
    assert shown["text"] == {"kind": "text", "text": "héllo wörld"}
    assert shown["notJson"] == {"kind": "text", "text": "{oops"}
    assert shown["binary"] == {"kind": "binary", "text": "00 ff 10 01"}
    assert shown["none"] == {"kind": "null", "text": "null"}
    assert shown["stringField"] == {"kind": "text", "text": "plain"}
    assert shown["iso"] == shown["number"] == 1767323045678


def test_isr_changes_are_listed_as_they_happen(clusters: Clusters, page: Page, shoot: Shoot) -> None:
    """A follower's controlled shutdown takes it out of the ISR at once (a shrink); started
    again, it catches up and is taken back (an expand): both appear on the topic page. It
    stops a broker: a cluster of its own."""
    console = clusters.start(CONSOLE_SPEC)
    topic = "isr-moves"
    console.create_topic(topic, partitions=1)
    leader = console.api("GET", f"/topics/{topic}/partitions/0")["leader_id"]
    controller = console.controller_id(via=leader)
    follower = min(set(console.brokers) - {leader, controller})
    status, body = console.produce(topic, ["i"] * 40)
    assert (status, body["failures"]) == (207, []), body
    open_page(page, console, f"/topics/{topic}", via=leader)
    expect(page.get_by_test_id("isr-events-empty")).to_be_visible()
    console.brokers[follower].stop()
    expect(page.locator('[data-testid="isr-event"][data-kind="shrink"]')).to_have_count(1)
    console.brokers[follower].start()
    expect(page.locator('[data-testid="isr-event"][data-kind="expand"]')).to_have_count(1, timeout=30_000)
    expect(page.get_by_test_id("partition-0-isr")).to_contain_text(str(follower))
    events = console.api("GET", f"/topics/{topic}/isr-events", via=leader)["events"]
    rows = page.get_by_test_id("isr-event")
    expect(rows).to_have_count(len(events))
    assert [rows.nth(i).get_attribute("data-kind") for i in range(len(events))] == [e["kind"] for e in events]
    shoot(page, "topic-isr-events")
    console.wait_for_brokers(set(console.brokers))


def test_a_partition_lists_its_open_transactions_until_they_end(page: Page, console: Cluster) -> None:
    topic = "console-txn"
    console.create_topic(topic)
    writer = KafkaProducer({"bootstrap.servers": console.bootstrap(), "transactional.id": f"{topic}-writer"})
    writer.init_transactions(30)
    writer.begin_transaction()
    writer.produce(topic, b"inside", partition=0)
    writer.flush(30)
    [opened] = console.api("GET", f"/topics/{topic}/partitions/0")["open_transactions"]
    open_page(page, console, f"/topics/{topic}/partitions/0")
    row = f"open-transaction-{opened['producer_id']}"
    expect(page.get_by_test_id(f"{row}-first-offset")).to_have_text(str(opened["first_offset"]))
    expect(page.get_by_test_id("last-stable")).to_have_text(str(opened["first_offset"]))
    writer.commit_transaction(30)
    expect(page.get_by_test_id("open-transactions-none")).to_be_visible()
    expect(page.get_by_test_id(row)).to_have_count(0)
