// Small DOM helpers: elements from plain data, never from HTML strings, so no record value
// or topic name can ever become markup (the page sets no innerHTML anywhere).
const SVG_NS = "http://www.w3.org/2000/svg";

function apply(el, props) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") el.textContent = String(value);
    else if (key === "class") el.setAttribute("class", value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "value" && "value" in el) el.value = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** An HTML element: h("td", {class: "num"}, "42"). */
export function h(tag, props, ...children) {
  return append(apply(document.createElement(tag), props), children);
}

/** An SVG element, same call shape as h. */
export function s(tag, props, ...children) {
  return append(apply(document.createElementNS(SVG_NS, tag), props), children);
}

function focusKey(node) {
  for (const attr of ["id", "data-testid", "href", "aria-label"]) {
    const value = node.getAttribute(attr);
    if (value) return `[${attr}="${CSS.escape(value)}"]`;
  }
  return null;
}

/**
 * Replace el's children. A refresh redraws whole tables every second, so the element that had
 * the keyboard focus inside el (a link, a button) gets it back in the new drawing.
 */
export function fill(el, ...children) {
  const focused = el.contains(document.activeElement) ? focusKey(document.activeElement) : null;
  el.replaceChildren();
  append(el, children);
  if (focused) el.querySelector(focused)?.focus();
  return el;
}

/** A table in a horizontally scrolling wrapper (narrow windows scroll the table, not the page). */
export function table(label, headers, rows, testid) {
  // A header given as ["Lag"] (an array) is a numeric column, aligned right like its cells.
  const head = h(
    "tr",
    {},
    headers.map((name) => h("th", { scope: "col", class: Array.isArray(name) ? "num" : undefined }, name)),
  );
  return h(
    "div",
    { class: "table-wrap", role: "region", "aria-label": label, tabindex: "0" },
    h("table", { "data-testid": testid }, h("thead", {}, head), h("tbody", {}, rows)),
  );
}

export function cell(value, props = {}) {
  return h("td", props, value);
}

export function num(value, testid) {
  return h("td", { class: "num", "data-testid": testid, "data-value": value ?? "" }, value ?? "—");
}

/** Epoch milliseconds from a number or an ISO-8601 date-time (the API is moving to the latter). */
export function toMs(timestamp) {
  if (timestamp === null || timestamp === undefined) return null;
  if (typeof timestamp === "number") return timestamp;
  const parsed = Date.parse(timestamp);
  return Number.isNaN(parsed) ? null : parsed;
}

export function fmtTime(timestamp) {
  const ms = toMs(timestamp);
  if (ms === null) return "—";
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

/** A duration as a person reads it ("850 ms", "12.5 s", "6m 41s", "2h 05m", "3d 4h"): never a bare count of ms. */
export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${pad(seconds % 60)}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 1440) return `${Math.floor(minutes / 60)}h ${pad(minutes % 60)}m`;
  const hours = Math.floor(minutes / 60);
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

function pad(value) {
  return String(value).padStart(2, "0");
}

/** The UTC time of day ("14:02:10"): a chart's time axis spans an hour or so, where the date adds nothing. */
export function fmtClock(timestamp) {
  const ms = toMs(timestamp);
  return ms === null ? "—" : new Date(ms).toISOString().slice(11, 19);
}

/** "1 partition", "2 partitions": a count with its noun agreeing. */
export function plural(count, noun, nouns = `${noun}s`) {
  return `${count} ${count === 1 ? noun : nouns}`;
}

/** What a section shows until its first answer: the page is never blank while the data is on its way. */
export function loading() {
  return h("p", { class: "muted" }, "Loading…");
}

export function fmtRate(perSecond) {
  if (perSecond === null || perSecond === undefined) return "—";
  return perSecond >= 100 ? String(Math.round(perSecond)) : perSecond.toFixed(1);
}

export function fmtBytes(bytes) {
  if (bytes === null || bytes === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** What each Burrow-style status means, in words: a newcomer reads "STOP" as an alarm without it. */
export const STATUS_MEANINGS = {
  OK: "keeping up, or caught up (lag 0)",
  WARN: "committing, but the lag keeps growing",
  STOP: "no commit for a while, and records are waiting",
  STALL: "committing the same offset while records wait",
  REWIND: "a committed offset went back",
  AHEAD: "committed beyond the high watermark",
  ERR: "a partition is STOP, STALL, REWIND or AHEAD",
};

/** A Burrow-style status as a coloured pill (text always says it: colour is never the only cue). */
export function statusPill(status) {
  const kind = { OK: "ok", WARN: "warn", STALL: "err", STOP: "err", ERR: "err", REWIND: "err", AHEAD: "err" }[status] || "";
  return h("span", { class: `pill ${kind}`, title: STATUS_MEANINGS[status] }, status || "—");
}

/** A group state as words ("Empty", "Preparing rebalance"), not the API's constant (EMPTY, PREPARING_REBALANCE). */
export function stateName(state) {
  if (!state) return "—";
  const words = state.toLowerCase().replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export const enc = encodeURIComponent;
