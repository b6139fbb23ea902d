// Topics: a searchable list with partitions, RF, readable records and bytes; create and delete.
// Deleting asks the user to type the topic's name: a slip of the mouse deletes nothing.
import { capi } from "../api.js";
import { enc, fill, fmtBytes, fmtRate, h, loading, num, table } from "../dom.js";
import { optional, section, topicsWithOffsets, totals } from "./common.js";

function field(id, label, input) {
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

function deleteDialog(live, result, refresh) {
  const typed = h("input", { id: "delete-confirm", autocomplete: "off" });
  const confirm = h("button", { class: "danger", type: "submit", disabled: true, "data-testid": "delete-confirm-button" }, "Delete");
  const prompt = h("p", { id: "delete-prompt" });
  const dialog = h(
    "dialog",
    { "aria-labelledby": "delete-title", "aria-describedby": "delete-prompt" },
    h(
      "form",
      { method: "dialog" },
      h("h2", { id: "delete-title" }, "Delete topic"),
      prompt,
      field("delete-confirm", "Topic name", typed),
      h(
        "div",
        { class: "toolbar" },
        confirm,
        h("button", { class: "secondary", type: "button", onclick: () => dialog.close() }, "Cancel"),
      ),
    ),
  );
  let name = null;
  typed.addEventListener("input", () => (confirm.disabled = typed.value !== name));
  dialog.querySelector("form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (typed.value !== name) return;
    dialog.close();
    await live.exclusive(async () => {
      try {
        await capi(`/topics/${enc(name)}`, { method: "DELETE" });
        result.textContent = `Deleted topic ${name}.`;
        await refresh();
      } catch (error) {
        result.textContent = `Could not delete ${name}: ${error.describe ? error.describe() : error.message}`;
      }
    });
  });
  return {
    dialog,
    open(topic) {
      name = topic;
      fill(prompt, "This deletes ", h("strong", {}, topic), " and all its records on every broker. Type its name to confirm.");
      typed.value = "";
      confirm.disabled = true;
      dialog.showModal();
      typed.focus();
    },
  };
}

export default async function topics({ main, live }) {
  const search = h("input", { id: "topic-search", type: "search", placeholder: "part of a name", autocomplete: "off" });
  const name = h("input", { id: "create-name", required: true, pattern: "[a-zA-Z0-9._\\-]+", autocomplete: "off" });
  const partitions = h("input", { id: "create-partitions", type: "number", min: 1, value: "3", required: true });
  const rf = h("input", { id: "create-rf", type: "number", min: 1, value: "3", required: true });
  const result = h("p", { role: "status", "aria-live": "polite", "data-testid": "topics-result" });
  const list = h("div", {}, loading());
  let latest = [];
  let rates = new Map();

  function draw() {
    const needle = search.value.trim().toLowerCase();
    const shown = latest.filter((topic) => topic.topic_name.toLowerCase().includes(needle));
    const rows = shown.map((topic) => {
      const t = topic.topic_name;
      const sum = totals(topic.partitionList);
      const rate = rates.get(t);
      return h(
        "tr",
        { "data-testid": `topic-${t}` },
        h("td", {}, h("a", { href: `#/topics/${enc(t)}` }, t), topic.is_internal ? h("span", { class: "muted" }, " internal") : ""),
        num(topic.partitions_count, `topic-${t}-partitions`),
        num(topic.replication_factor, `topic-${t}-rf`),
        num(sum.records, `topic-${t}-records`),
        h("td", { class: "num", "data-testid": `topic-${t}-bytes`, "data-value": sum.bytes ?? "" }, fmtBytes(sum.bytes)),
        num(rate ? fmtRate(rate.produce_records_per_s) : null),
        h(
          "td",
          {},
          topic.is_internal
            ? ""
            : h("button", { class: "secondary", type: "button", "aria-label": `Delete ${t}`, onclick: () => dialog.open(t) }, "Delete…"),
        ),
      );
    });
    fill(
      list,
      table("Topics", ["Topic", ["Partitions"], ["RF"], ["Records"], ["Bytes"], ["Produce rec/s"], "Actions"], rows, "topics"),
      shown.length ? null : h("p", { class: "muted" }, needle ? "No topic name contains that." : "No topics yet."),
    );
  }

  async function refresh() {
    latest = await topicsWithOffsets();
    draw();
  }

  const dialog = deleteDialog(live, result, refresh);
  const form = h(
    "form",
    {
      class: "inline",
      "aria-label": "Create a topic",
      onsubmit: async (event) => {
        event.preventDefault();
        const body = {
          topic_name: name.value.trim(),
          partitions_count: Number(partitions.value),
          replication_factor: Number(rf.value),
        };
        await live.exclusive(async () => {
          try {
            await capi("/topics", { method: "POST", body });
            result.textContent = `Created topic ${body.topic_name}.`;
            name.value = "";
            await refresh();
          } catch (error) {
            result.textContent = `Could not create ${body.topic_name}: ${error.describe ? error.describe() : error.message}`;
          }
        });
      },
    },
    field("create-name", "New topic name", name),
    field("create-partitions", "Partitions", partitions),
    field("create-rf", "Replication factor", rf),
    h("button", { type: "submit" }, "Create topic"),
  );
  search.addEventListener("input", draw);
  fill(
    main,
    h("h1", {}, "Topics"),
    h("div", { class: "toolbar" }, field("topic-search", "Search topics", search)),
    list,
    section("Create a topic", form),
    result,
    dialog.dialog,
  );
  live.every(5000, async () => {
    const activity = await optional(() => capi("/activity"));
    rates = new Map((activity?.topics ?? []).map((topic) => [topic.topic_name, topic]));
    return activity?.interval_ms;
  });
  live.every(2000, refresh);
}
