// The single-page shell: hash routes to pages, the sign-in form, errors in the live region.
// A page gets a context: its <main>, a Live poller stopped when the page is left, and
// report() for errors that need saying (aria-live, so a screen reader hears them).
import { ApiError, signIn, signOut, user } from "./api.js";
import { fill, h, loading } from "./dom.js";
import { Live } from "./live.js";
import group from "./pages/group.js";
import groups from "./pages/groups.js";
import overview from "./pages/overview.js";
import partition from "./pages/partition.js";
import topic from "./pages/topic.js";
import topics from "./pages/topics.js";

const ROUTES = [
  [/^#?\/?$/, "overview", overview],
  [/^#\/topics$/, "topics", topics],
  [/^#\/topics\/([^/]+)$/, "topics", topic],
  [/^#\/topics\/([^/]+)\/partitions\/(\d+)$/, "topics", partition],
  [/^#\/groups$/, "groups", groups],
  [/^#\/groups\/([^/]+)$/, "groups", group],
];

const main = document.getElementById("main");
const status = document.getElementById("status");
let live = null;

function say(message) {
  status.textContent = message || "";
}

function errorText(error) {
  return error instanceof ApiError ? error.describe() : `Could not reach the broker: ${error.message}`;
}

/** A task's failure is shown until that same task next succeeds; 401 is the sign-in form's business. */
const failing = new Map();
function onTaskResult(task, error) {
  if (error instanceof ApiError && error.status === 401) return;
  if (error) failing.set(task, errorText(error));
  else failing.delete(task);
  say([...new Set(failing.values())].join(" "));
}

function showSession() {
  const name = user();
  fill(
    document.getElementById("session"),
    name
      ? [
          h("span", {}, `Signed in as ${name}`),
          h("button", { class: "secondary", type: "button", onclick: () => (signOut(), route()) }, "Sign out"),
        ]
      : [],
  );
}

// Set while the sign-in form is on screen: the other polls that were refused the same
// credentials answer later, and must not redraw the form under what the user is typing.
let signingIn = false;

function showSignIn() {
  if (signingIn) return;
  signingIn = true;
  live?.stop();
  failing.clear();
  say("");
  const name = h("input", { id: "signin-user", name: "username", autocomplete: "username", required: true });
  const password = h("input", {
    id: "signin-password",
    name: "password",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const form = h(
    "form",
    {
      class: "signin",
      "aria-labelledby": "signin-title",
      onsubmit: (event) => {
        event.preventDefault();
        signIn(name.value, password.value);
        route();
      },
    },
    h("div", { class: "field" }, h("label", { for: "signin-user" }, "User"), name),
    h("div", { class: "field" }, h("label", { for: "signin-password" }, "Password"), password),
    h("button", { type: "submit" }, "Sign in"),
  );
  const again = user() ? h("p", { class: "message error", role: "alert" }, "That user and password were refused.") : null;
  fill(main, h("h1", { id: "signin-title" }, "Sign in"), h("p", {}, "This cluster needs credentials: the console uses the same ones as any client."), again, form);
  name.focus();
}

async function route() {
  signingIn = false;
  live?.stop();
  failing.clear();
  say("");
  showSession();
  const hash = location.hash || "#/";
  const match = ROUTES.map(([pattern, section, page]) => [hash.match(pattern), section, page]).find(([m]) => m);
  for (const link of document.querySelectorAll("nav a")) {
    if (match && link.dataset.section === match[1]) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  fill(main, loading());
  if (!match) {
    fill(main, h("h1", {}, "Not found"), h("p", {}, "No page has this address. ", h("a", { href: "#/" }, "Overview")));
    return;
  }
  const [found, , page] = match;
  live = new Live(onTaskResult);
  const ctx = { main, live, say };
  try {
    await page(ctx, ...found.slice(1).map(decodeURIComponent));
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) fill(main, h("p", { class: "message error", role: "alert" }, errorText(error)));
  }
}

window.addEventListener("highwater:unauthorized", showSignIn);
window.addEventListener("hashchange", () => {
  route();
  main.focus();
});
route();
