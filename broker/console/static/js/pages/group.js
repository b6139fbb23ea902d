// One consumer group: members and their assignments, per partition committed offset, HW,
// lag in records and in time with its status, and the group's lag over time (the broker
// samples it into a bounded ring; the chart redraws at the sampling interval).
import { capi } from "../api.js";
import { timeChart } from "../charts.js";
import { STATUS_MEANINGS, enc, fill, fmtDuration, fmtTime, h, loading, num, plural, stateName, statusPill, table } from "../dom.js";
import { card, optional, section } from "./common.js";

function memberRow(member) {
  const assigned = member.assignments.map((a) => `${a.topic_name}-${a.partition_id}`).join(", ");
  return h(
    "tr",
    {},
    h("td", {}, member.consumer_id),
    h("td", {}, member.client_id ?? "—"),
    num(member.member_epoch),
    h("td", { class: "wrap" }, assigned || "—"),
    h("td", {}, fmtTime(member.last_heartbeat_ms)),
  );
}

function lagRow(lag) {
  const id = `lag-${lag.topic_name}-${lag.partition_id}`;
  return h(
    "tr",
    { "data-testid": id },
    h("td", {}, h("a", { href: `#/topics/${enc(lag.topic_name)}/partitions/${lag.partition_id}` }, `${lag.topic_name}-${lag.partition_id}`)),
    num(lag.current_offset, `${id}-committed`),
    num(lag.log_end_offset, `${id}-hw`),
    num(lag.lag, `${id}-lag`),
    h("td", { class: "num", "data-testid": `${id}-lag-ms`, "data-value": lag.lag_ms ?? "" }, fmtDuration(lag.lag_ms)),
    h("td", {}, statusPill(lag.status)),
    h("td", {}, lag.consumer_id ?? "—"),
  );
}

/**
 * The group's status in words, and what having no member means for it: a group whose consumers
 * finished reads as done (lag 0), one whose records wait says how many, so "Empty" or a red
 * "ERR" is never left to be guessed at.
 */
function groupNote(described, lagSummary) {
  const status = `Status ${lagSummary.status}: ${STATUS_MEANINGS[lagSummary.status] ?? "unknown"}.`;
  if (described.members_count > 0) return status;
  const idle =
    lagSummary.total_lag === 0
      ? "No consumer is running, and none needs to: every committed offset is at the high watermark."
      : `No consumer is running, with ${plural(lagSummary.total_lag, "record")} not yet read.`;
  return `${status} ${idle}`;
}

export default async function group({ main, live }, name) {
  const base = `/consumer-groups/${enc(name)}`;
  const summary = h("div", { class: "cards" }, loading());
  const note = h("p", { class: "muted", "data-testid": "group-note" });
  const members = h("div", {}, loading());
  const lags = h("div", {}, loading());
  const chart = h("div", { class: "two" }, loading());
  const cadence = h("p", { class: "muted" });
  fill(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/groups" }, "Consumer groups"), " /"),
    h("h1", {}, `Consumer group ${name}`),
    summary,
    note,
    section("Lag over time", chart, cadence),
    section("Lag per partition", lags),
    section("Members and assignments", members),
  );
  live.every(1000, async () => {
    const [described, lagSummary, lagList] = await Promise.all([capi(base), capi(`${base}/lag-summary`), capi(`${base}/lags`)]);
    fill(
      summary,
      card("State", stateName(described.state), "group-state"),
      card("Members", described.members_count, "group-members"),
      card("Total lag (records)", lagSummary.total_lag, "group-total-lag"),
      card("Largest lag in time", fmtDuration(lagSummary.max_lag_ms), "group-lag-ms"),
      h("div", { class: "card" }, h("div", { class: "label" }, "Status"), h("div", { class: "value", "data-testid": "group-status" }, statusPill(lagSummary.status))),
    );
    fill(note, groupNote(described, lagSummary));
    const rows = [...lagList.data].sort((a, b) => a.topic_name.localeCompare(b.topic_name) || a.partition_id - b.partition_id);
    fill(lags, table("Lag per partition", ["Partition", ["Committed"], ["HW"], ["Lag"], ["Lag in time"], "Status", "Consumer"], rows.map(lagRow), "lags"));
  });
  live.every(2000, async () => {
    const list = (await capi(`${base}/consumers`)).data;
    fill(
      members,
      list.length
        ? table("Members", ["Member", "Client", ["Epoch"], "Assigned partitions", "Last heartbeat"], list.map(memberRow), "members")
        : h("p", { class: "muted" }, "No member: offsets are committed without membership (or the group is empty)."),
    );
  });
  live.every(5000, async () => {
    const history = await optional(() => capi(`${base}/lag-history`));
    if (history === null) {
      fill(chart, h("p", { class: "muted" }, "This broker does not keep lag history."));
      return undefined;
    }
    const samples = history.samples;
    fill(
      chart,
      timeChart(
        samples.map((sample) => sample.time_ms),
        [{ name: "total lag (records)", values: samples.map((sample) => sample.total_lag) }],
        { label: `Lag of ${name} over time`, format: (count) => plural(count, "record"), testid: "lag-chart" },
      ),
      timeChart(
        samples.map((sample) => sample.time_ms),
        [{ name: "largest lag in time", values: samples.map((sample) => sample.max_lag_ms) }],
        { label: `Lag in time of ${name}`, format: fmtDuration, testid: "lag-ms-chart" },
      ),
    );
    fill(cadence, `One sample every ${fmtDuration(history.interval_ms)}, the last ${history.capacity} kept.`);
    return history.interval_ms;
  });
}
