// Consumer groups: state, members, total lag in records and in time, Burrow-style status.
import { capi } from "../api.js";
import { STATUS_MEANINGS, enc, fill, fmtDuration, h, loading, num, stateName, statusPill, table } from "../dom.js";

/** Each status word with its meaning, under the list: a red STOP is read with its reason, not as a bare alarm. */
function legend() {
  return h(
    "details",
    { "data-testid": "status-legend" },
    h("summary", {}, "What the statuses mean (Burrow's rules, over each partition's recent commits)"),
    h("ul", {}, Object.entries(STATUS_MEANINGS).map(([status, meaning]) => h("li", {}, statusPill(status), ` ${meaning}`))),
  );
}

export default async function groups({ main, live }) {
  const list = h("div", {}, loading());
  fill(main, h("h1", {}, "Consumer groups"), list, legend());
  live.every(2000, async () => {
    const all = (await capi("/consumer-groups")).data;
    const summaries = await Promise.all(
      all.map((group) => capi(`/consumer-groups/${enc(group.consumer_group_id)}/lag-summary`).catch(() => null)),
    );
    const rows = all.map((group, index) => {
      const g = group.consumer_group_id;
      const summary = summaries[index];
      return h(
        "tr",
        { "data-testid": `group-${g}` },
        h("td", {}, h("a", { href: `#/groups/${enc(g)}` }, g)),
        h("td", { "data-testid": `group-${g}-state` }, stateName(group.state)),
        num(group.members_count, `group-${g}-members`),
        num(summary?.total_lag, `group-${g}-total-lag`),
        h("td", { class: "num", "data-testid": `group-${g}-lag-ms`, "data-value": summary?.max_lag_ms ?? "" }, fmtDuration(summary?.max_lag_ms)),
        h("td", { "data-testid": `group-${g}-status` }, statusPill(summary?.status)),
      );
    });
    fill(
      list,
      rows.length
        ? table("Consumer groups", ["Group", "State", ["Members"], ["Total lag"], ["Lag in time"], "Status"], rows, "groups")
        : h("p", { class: "muted" }, "No consumer group yet (or none this user may describe)."),
    );
  });
}
