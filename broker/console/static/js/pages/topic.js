// One topic: per partition its leader, epoch, ISR and every replica's LEO against the HW and
// the log start (one scale per partition), the ISR's shrink/expand history, the traffic.
import { capi } from "../api.js";
import { replicaBars, sparkline } from "../charts.js";
import { enc, fill, fmtBytes, fmtRate, fmtTime, h, loading, num, plural, table } from "../dom.js";
import { card, optional, partitionOffsets, section, totals } from "./common.js";

const OFFSETS_MS = 1000;

function partitionRow(topic, p) {
  const id = p.partition_id;
  const prefix = `partition-${id}`;
  return h(
    "tr",
    { "data-testid": prefix },
    h("td", {}, h("a", { href: `#/topics/${enc(topic)}/partitions/${id}` }, String(id))),
    num(p.leader_id, `${prefix}-leader`),
    num(p.leader_epoch, `${prefix}-epoch`),
    h("td", { "data-testid": `${prefix}-isr` }, (p.isr ?? []).join(", ")),
    num(p.log_start_offset, `${prefix}-log-start`),
    num(p.last_stable_offset, `${prefix}-lso`),
    num(p.high_watermark, `${prefix}-hw`),
    bytesCell(p.size_bytes, `${prefix}-size`),
    h(
      "td",
      { class: "bars-cell" },
      p.reachable === false ? h("p", { class: "muted" }, "The leader did not answer; offsets unknown.") : null,
      replicaBars(p, `${prefix}-bars`),
    ),
  );
}

function bytesCell(bytes, testid) {
  return h("td", { class: "num", "data-testid": testid, "data-value": bytes ?? "" }, fmtBytes(bytes));
}

function eventRow(event) {
  return h(
    "tr",
    { "data-testid": "isr-event", "data-kind": event.kind, "data-partition": event.partition_id },
    h("td", {}, fmtTime(event.time_ms)),
    num(event.partition_id),
    h("td", {}, event.kind),
    num(event.leader_id),
    num(event.leader_epoch),
    h("td", {}, `${(event.previous_isr ?? []).join(", ")} → ${(event.isr ?? []).join(", ")}`),
  );
}

export default async function topic({ main, live }, name) {
  const summary = h("div", { class: "muted" }, loading());
  const sizes = h("div", { class: "cards" }, loading());
  const partitions = h("div", {}, loading());
  const traffic = h("div", { class: "cards" }, loading());
  const events = h("div", {}, loading());
  const legend = h(
    "p",
    { class: "legend" },
    h("span", {}, h("span", { class: "swatch leader" }), "leader"),
    h("span", {}, h("span", { class: "swatch follower" }), "in-sync follower"),
    h("span", {}, h("span", { class: "swatch out" }), "out of the ISR"),
    h("span", {}, h("span", { class: "swatch hw" }), "high watermark"),
    h("span", {}, h("span", { class: "swatch start" }), "log start"),
  );
  fill(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/topics" }, "Topics"), " / "),
    h("h1", {}, `Topic ${name}`),
    summary,
    sizes,
    section("Traffic", traffic),
    section("Partitions: each replica's log end offset against the high watermark", legend, partitions),
    section("ISR changes", events),
  );
  const described = await capi(`/topics/${enc(name)}`);
  fill(
    summary,
    h("span", { "data-testid": "topic-shape" }, `${plural(described.partitions_count, "partition")}, replication factor ${described.replication_factor}`),
    h(
      "details",
      {},
      h("summary", {}, "Configuration"),
      h("ul", {}, (described.config_values ?? []).map((c) => h("li", {}, `${c.name} = ${c.value ?? "—"}`))),
    ),
  );
  live.every(OFFSETS_MS, async () => {
    const offsets = await partitionOffsets(name);
    const sum = totals(offsets);
    fill(sizes, card("Records", sum.records, "topic-records"), card("Bytes (leaders' logs)", sum.bytes === null ? null : fmtBytes(sum.bytes), "topic-bytes", false, sum.bytes));
    const rows = offsets.map((p) => partitionRow(name, p));
    fill(partitions, table("Partitions", [["Partition"], ["Leader"], ["Epoch"], "ISR", ["Log start"], ["LSO"], ["HW"], ["Size"], "Replicas (LEO)"], rows, "partitions"));
  });
  live.every(5000, async () => {
    const activity = await optional(() => capi("/activity"));
    const mine = activity?.topics?.find((t) => t.topic_name === name);
    const history = mine?.history ?? [];
    fill(
      traffic,
      activity
        ? [
            h("div", { class: "card" }, h("div", { class: "label" }, "Produce records/s"), h("div", { class: "value", "data-testid": "topic-produce-rate" }, fmtRate(mine?.produce_records_per_s ?? 0)), sparkline(history.map((s) => s.produce_records_per_s), "produce records per second, recent samples", "produce-spark")),
            h("div", { class: "card" }, h("div", { class: "label" }, "Fetch records/s"), h("div", { class: "value", "data-testid": "topic-fetch-rate" }, fmtRate(mine?.fetch_records_per_s ?? 0)), sparkline(history.map((s) => s.fetch_records_per_s), "fetch records per second, recent samples", "fetch-spark")),
          ]
        : h("p", { class: "muted" }, "This broker does not report traffic rates."),
    );
    return activity?.interval_ms;
  });
  live.every(2000, async () => {
    const answer = await optional(() => capi(`/topics/${enc(name)}/isr-events`));
    const list = answer?.events ?? [];
    fill(
      events,
      answer === null
        ? h("p", { class: "muted" }, "This broker does not keep ISR events.")
        : list.length
          ? table("ISR changes", ["Time", ["Partition"], "Change", ["Leader"], ["Epoch"], "ISR"], list.map(eventRow), "isr-events")
          : h("p", { class: "muted", "data-testid": "isr-events-empty" }, "No ISR change since this broker started."),
    );
  });
}
