// What several pages read: the topics with their partitions, and the optional console data.
import { ApiError, capi } from "../api.js";
import { enc, h } from "../dom.js";

/** Every topic the principal may describe, each with its partitions (one request per topic). */
export async function topicsWithPartitions() {
  const topics = (await capi("/topics")).data;
  const partitions = await Promise.all(
    topics.map((topic) => capi(`/topics/${enc(topic.topic_name)}/partitions`).then((list) => list.data)),
  );
  return topics.map((topic, index) => ({ ...topic, partitionList: partitions[index] }));
}

/** Records currently readable in a partition: log start offset up to the high watermark. */
export function readable(partition) {
  return partition.high_watermark - partition.log_start_offset;
}

/** The console's own data routes (activity, histories) on a broker that lacks them: say so, once. */
export async function optional(call) {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404 && error.kind === "NOT_FOUND") return null;
    throw error;
  }
}

export function card(label, value, testid, bad = false) {
  return h(
    "div",
    { class: bad ? "card bad" : "card" },
    h("div", { class: "label" }, label),
    h("div", { class: "value", "data-testid": testid, "data-value": value ?? "" }, value ?? "—"),
  );
}

export function section(title, ...children) {
  return h("section", { "aria-label": title }, h("h2", {}, title), children);
}
