// One partition: its offsets (live), a record browser from an offset or a time, and a form
// that produces a test record with acks 0, 1 or all and says what the broker answered.
import { capi } from "../api.js";
import { enc, fill, fmtDuration, fmtTime, h, loading, num, table, toMs } from "../dom.js";
import { dataOf, render, textToBase64 } from "../records.js";
import { card, section } from "./common.js";

const PAGE = 50;

function field(id, label, input) {
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

function shown(base64, testid) {
  const value = render(base64);
  return h("td", { class: "wrap", "data-testid": testid, "data-kind": value.kind }, h("pre", {}, value.text));
}

function transactionRow(txn) {
  // Open in this partition: it holds read_committed readers at its first offset until it ends.
  return h(
    "tr",
    { "data-testid": `open-transaction-${txn.producer_id}` },
    num(txn.producer_id),
    num(txn.producer_epoch),
    num(txn.first_offset, `open-transaction-${txn.producer_id}-first-offset`),
    h("td", { class: "num" }, fmtDuration(Date.now() - txn.started_ms)),
  );
}

function recordRow(record) {
  const headers = (record.headers ?? []).map((header) => `${header.name}: ${render(header.value).text}`).join("\n");
  return h(
    "tr",
    { "data-testid": `record-${record.offset}` },
    num(record.offset),
    h("td", {}, fmtTime(record.timestamp)),
    shown(dataOf(record.key), `record-${record.offset}-key`),
    shown(dataOf(record.value), `record-${record.offset}-value`),
    h("td", { class: "wrap" }, h("pre", {}, headers || "—")),
  );
}

function parseHeaders(text) {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const at = line.indexOf("=");
      const name = at < 0 ? line : line.slice(0, at).trim();
      return { name, value: at < 0 ? null : textToBase64(line.slice(at + 1)) };
    });
}

export default async function partition({ main, live }, topic, id) {
  const path = `/topics/${enc(topic)}/partitions/${id}`;
  const offsets = h("div", { class: "cards" }, loading());
  const transactions = h("div", {}, loading());
  const from = h("input", { id: "browse-offset", type: "number", min: 0, autocomplete: "off" });
  const at = h("input", { id: "browse-time", type: "datetime-local", step: 1 });
  const browseNote = h("p", { class: "muted", "aria-live": "polite", "data-testid": "browse-note" });
  const records = h("div", {}, loading());
  const key = h("input", { id: "produce-key", autocomplete: "off" });
  const value = h("textarea", { id: "produce-value" });
  const headers = h("textarea", { id: "produce-headers", placeholder: "name=value, one a line" });
  const asJson = h("input", { id: "produce-json", type: "checkbox" });
  const acks = h("select", { id: "produce-acks" }, ["all", "1", "0"].map((a) => h("option", { value: a }, a)));
  const produced = h("p", { role: "status", "aria-live": "polite", "data-testid": "produce-result" });
  let next = null;

  async function browse(offset) {
    const query = { max_records: PAGE, format: "binary", ...(offset === undefined ? {} : { offset }) };
    const answer = await capi(`${path}/records`, { query });
    next = answer.next_offset;
    const first = offset ?? answer.log_start_offset;
    const rows = answer.data.map(recordRow);
    fill(
      records,
      rows.length
        ? table("Records", [["Offset"], "Timestamp", "Key", "Value", "Headers"], rows, "records")
        : h("p", { class: "muted" }, `No record from offset ${first} below the high watermark ${answer.high_watermark}.`),
    );
    fill(browseNote, `Offsets ${first} to ${next - 1}; next ${next}; high watermark ${answer.high_watermark}.`);
  }

  const browseForm = h(
    "form",
    {
      class: "inline",
      "aria-label": "Browse records",
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          let offset = from.value === "" ? undefined : Number(from.value);
          if (at.value) {
            const found = await capi(`${path}/offset`, { query: { timestamp: Date.parse(`${at.value}Z`) } });
            if (found.offset === null || found.offset === undefined) {
              fill(records);
              fill(browseNote, `No record at or after ${at.value} UTC.`);
              return;
            }
            offset = found.offset;
            from.value = String(offset);
          }
          await browse(offset);
        } catch (error) {
          fill(browseNote, error.describe ? error.describe() : error.message);
        }
      },
    },
    field("browse-offset", "From offset", from),
    field("browse-time", "Or from time (UTC)", at),
    h("button", { type: "submit" }, "Show records"),
    h("button", { class: "secondary", type: "button", onclick: () => next !== null && browse(next) }, "Next page"),
  );

  const produceForm = h(
    "form",
    {
      class: "inline",
      "aria-label": "Produce a test record",
      onsubmit: async (event) => {
        event.preventDefault();
        const record = { partition_id: Number(id), headers: parseHeaders(headers.value) };
        if (key.value !== "") record.key = { type: "STRING", data: key.value };
        try {
          record.value = asJson.checked ? { type: "JSON", data: JSON.parse(value.value) } : { type: "STRING", data: value.value };
        } catch (error) {
          produced.textContent = `The value is not JSON: ${error.message}`;
          return;
        }
        await live.exclusive(async () => {
          try {
            const report = await capi(`/topics/${enc(topic)}/records`, { method: "POST", body: record, query: { acks: acks.value } });
            produced.textContent =
              report.offset === null || report.offset === undefined
                ? `Sent with acks=${acks.value}: accepted, not yet appended (no offset with acks=0).`
                : `Produced at offset ${report.offset}, timestamp ${fmtTime(toMs(report.timestamp))}, acks=${acks.value}.`;
            produced.dataset.offset = report.offset ?? "";
          } catch (error) {
            produced.textContent = `Not produced: ${error.describe ? error.describe() : error.message}`;
          }
        });
      },
    },
    field("produce-key", "Key (text, empty for none)", key),
    field("produce-value", "Value", value),
    h("div", { class: "field" }, h("label", { for: "produce-json" }, "Value is JSON"), asJson),
    field("produce-headers", "Headers", headers),
    field("produce-acks", "acks", acks),
    h("button", { type: "submit" }, "Produce"),
  );

  fill(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/topics" }, "Topics"), " / ", h("a", { href: `#/topics/${enc(topic)}` }, topic), " /"),
    h("h1", {}, `Partition ${topic}-${id}`),
    offsets,
    section("Open transactions", transactions),
    section("Records (only below the high watermark)", browseForm, browseNote, records),
    section("Produce a test record", produceForm, produced),
  );
  live.every(1000, async () => {
    const p = await capi(path);
    fill(
      offsets,
      card("Leader", p.leader_id, "leader"),
      card("Leader epoch", p.leader_epoch, "leader-epoch"),
      card("ISR", p.isr.join(", "), "isr"),
      card("Log start", p.log_start_offset, "log-start"),
      card("Low watermark", p.low_watermark < 0 ? "-" : p.low_watermark, "low-watermark"),
      card("Last stable", p.last_stable_offset, "last-stable"),
      card("High watermark", p.high_watermark, "high-watermark"),
      card("Log end", p.log_end_offset, "log-end"),
    );
    const open = p.open_transactions ?? [];
    fill(
      transactions,
      open.length
        ? table("Open transactions", [["Producer"], ["Epoch"], ["First offset"], ["Age"]], open.map(transactionRow), "open-transactions")
        : h("p", { class: "muted", "data-testid": "open-transactions-none" }, "No transaction is open here."),
    );
  });
  await browse(undefined).catch((error) => {
    fill(records);
    fill(browseNote, error.describe ? error.describe() : error.message);
  });
}
