"""The console with authentication on: it asks for a user and password, sends them as HTTP
Basic on every call, shows only what the principal may describe and says so when it may not.

One broker is enough: what is checked is the console's side of the door (the sign-in form,
the credentials on each call, the filtered lists, the 403 message); the door itself is the
authorization matrix's subject.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request, Response, Route, expect

from tests.console.conftest import Errors, Shoot
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration

VIEWER_PASSWORD = "viewer-pw-2"
VISIBLE, HIDDEN = "visible-orders", "hidden-plans"
SPEC = ClusterSpec(brokers=1, security=True)

cluster = cluster_fixture(SPEC, scope="module")


@pytest.fixture(scope="module")
def secured(cluster: Cluster) -> Cluster:
    """One broker with basic authentication; ``viewer`` may DESCRIBE and READ ``visible-*`` topics only.

    Set up before the module's browser starts (module fixtures a test names come before the
    page's): the CLI runs here in-process, and Playwright's sync API runs an event loop of its own."""
    cluster.cli(["users", "add", "viewer", "--password-stdin"], VIEWER_PASSWORD)
    for name in (VISIBLE, HIDDEN):
        cluster.create_topic(name)
    for operation in ("DESCRIBE", "READ"):
        acl = {
            "resource_type": "TOPIC",
            "resource_name": "visible-",
            "pattern_type": "PREFIXED",
            "principal": "User:viewer",
            "operation": operation,
            "permission": "ALLOW",
        }
        status, body = cluster.v3("POST", "/acls", acl)
        assert status == 201, body
    viewer = cluster.headers("viewer", VIEWER_PASSWORD)
    cluster.wait_until(lambda: cluster.v3("GET", f"/topics/{VISIBLE}", headers=viewer)[0] == 200, "viewer's ACLs")
    return cluster


def sign_in(page: Page, user: str, password: str) -> None:
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("User").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def test_the_console_signs_in_and_shows_only_what_the_user_may_describe(
    secured: Cluster, page: Page, browser_errors: Errors, shoot: Shoot
) -> None:
    browser_errors.allow("status of 401")
    browser_errors.allow("status of 403")
    url = secured.url()
    page.goto(f"{url}/console#/topics")
    shoot(page, "sign-in")
    sign_in(page, "viewer", "wrong")
    expect(page.get_by_role("alert")).to_have_text("That user and password were refused.")
    sign_in(page, "viewer", VIEWER_PASSWORD)
    expect(page.get_by_test_id(f"topic-{VISIBLE}")).to_be_visible()
    expect(page.get_by_test_id(f"topic-{HIDDEN}")).to_have_count(0)
    expect(page.get_by_text("Signed in as viewer")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('highwater.console.user')") == "viewer"

    page.goto(f"{url}/console#/topics/{HIDDEN}")
    expect(page.get_by_role("alert")).to_contain_text("Not allowed")
    expect(page.get_by_role("alert")).to_contain_text("(403)")
    shoot(page, "forbidden")

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('highwater.console.auth')") is None


class HeldRefusals:
    """Holds back every call made with the wrong password but the first, to answer it later.

    A page's polls run side by side, so one sign-in with a wrong password is refused once per
    poll, and on a loaded machine those 401s arrive whenever the broker gets to them. Holding
    them lets a test deliver a late one at the moment that matters.
    """

    def __init__(self, page: Page, wrong: dict[str, str]) -> None:
        self.page = page
        self.wrong = wrong["Authorization"]
        self.passed = False
        self.held: list[Route] = []
        page.route("**/v3/**", self._route)

    def _route(self, route: Route) -> None:
        if route.request.headers.get("authorization") == self.wrong:
            if self.passed:
                self.held.append(route)
                return
            self.passed = True
        route.continue_()

    def wait_for_one(self) -> None:
        """Until a second wrong-password call is held. Playwright's sync API runs the route handler
        only while the page waits, so this waits with the page's ``wait_for_timeout``, not a sleep."""
        deadline = time.monotonic() + 15
        while not self.held:
            assert time.monotonic() < deadline, "the page made only one call with the wrong password"
            self.page.wait_for_timeout(20)

    def deliver(self) -> None:
        """Lets the held calls through, one by one, each once the page has likely read its 401.

        The browser lists an answer among its resource timings as its body ends, and the
        page's handler runs in the turn that reads the body; one more task is awaited after
        that. Should the handler still run later, a test would miss the bug, never fail
        the fixed page: the fixed page does nothing with a late 401.
        """
        for route in self.held:
            path = urlsplit(route.request.url).path
            seen = self.page.evaluate(RESOURCES_ENDING, path)
            with self.page.expect_response(answers(route.request)) as late:
                route.continue_()
            assert late.value.status == 401
            self.page.wait_for_function(f"(path) => ({RESOURCES_ENDING})(path) > {seen}", arg=path)
            self.page.evaluate("() => new Promise((resolve) => setTimeout(resolve, 0))")
        self.held.clear()


def answers(request: Request) -> Callable[[Response], bool]:
    """Whether a response is the one to ``request``."""
    return lambda response: response.request == request


RESOURCES_ENDING = (
    "(path) => performance.getEntriesByType('resource').filter((entry) => entry.name.endsWith(path)).length"
)


def refused_with_a_refusal_held(page: Page, secured: Cluster, browser_errors: Errors) -> HeldRefusals:
    """The topics page after a sign-in with the wrong password, one of its 401s held back."""
    browser_errors.allow("status of 401")
    browser_errors.allow("status of 403")
    refusals = HeldRefusals(page, secured.headers("viewer", "wrong"))
    page.goto(f"{secured.url()}/console#/topics")
    sign_in(page, "viewer", "wrong")
    expect(page.get_by_role("alert")).to_have_text("That user and password were refused.")
    refusals.wait_for_one()
    return refusals


def test_a_late_refusal_leaves_the_sign_in_form_as_the_user_filled_it(
    secured: Cluster, page: Page, browser_errors: Errors
) -> None:
    refusals = refused_with_a_refusal_held(page, secured, browser_errors)
    page.get_by_label("User").fill("viewer")
    page.get_by_label("Password").fill(VIEWER_PASSWORD)
    refusals.deliver()
    expect(page.get_by_label("Password")).to_have_value(VIEWER_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id(f"topic-{VISIBLE}")).to_be_visible()


def test_a_refusal_of_the_previous_password_does_not_sign_the_user_out_again(
    secured: Cluster, page: Page, browser_errors: Errors
) -> None:
    refusals = refused_with_a_refusal_held(page, secured, browser_errors)
    sign_in(page, "viewer", VIEWER_PASSWORD)
    expect(page.get_by_test_id(f"topic-{VISIBLE}")).to_be_visible()
    refusals.deliver()
    expect(page.get_by_role("heading", name="Sign in")).to_have_count(0)
    expect(page.get_by_test_id(f"topic-{VISIBLE}")).to_be_visible()
