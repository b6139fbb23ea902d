// What several pages read: the topics with their partitions, and the optional console data.
import { ApiError, capi } from "../api.js";
import { enc, h } from "../dom.js";

/**
 * Every topic the principal may describe, each with its partitions' offsets and log sizes: two
 * requests (the topic list, and every topic's replica offsets in one answer), whatever the
 * number of topics. A topic created between the two answers has no partitions yet (null).
 */
export async function topicsWithOffsets() {
  const [topics, offsets] = await Promise.all([capi("/topics"), capi("/replica-offsets")]);
  const partitions = new Map(offsets.topics.map((topic) => [topic.topic_name, topic.partitions]));
  return topics.data.map((topic) => ({ ...topic, partitionList: partitions.get(topic.topic_name) ?? null }));
}

/** One topic's partitions: leader, epoch, ISR, log start, HW, size and each replica's LEO. */
export async function partitionOffsets(topic) {
  return (await capi(`/topics/${enc(topic)}/replica-offsets`)).partitions;
}

/** Records currently readable in a partition: log start offset up to the high watermark. */
export function readable(partition) {
  return partition.high_watermark - partition.log_start_offset;
}

/**
 * A topic's readable records and its leaders' log bytes, summed over its partitions; null
 * when a partition's leader did not answer (a partial sum would read as a smaller topic) or
 * the partitions are not known yet.
 */
export function totals(partitions) {
  if (!partitions) return { records: null, bytes: null };
  const known = partitions.every((p) => p.reachable !== false && p.high_watermark !== null);
  const sized = known && partitions.every((p) => typeof p.size_bytes === "number");
  return {
    records: known ? partitions.reduce((total, p) => total + readable(p), 0) : null,
    bytes: sized ? partitions.reduce((total, p) => total + p.size_bytes, 0) : null,
  };
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

/** A labelled figure; `exact` (when the shown value is rounded, e.g. bytes) goes in data-value. */
export function card(label, value, testid, bad = false, exact = value) {
  return h(
    "div",
    { class: bad ? "card bad" : "card" },
    h("div", { class: "label" }, label),
    h("div", { class: "value", "data-testid": testid, "data-value": exact ?? "" }, value ?? "—"),
  );
}

export function section(title, ...children) {
  return h("section", { "aria-label": title }, h("h2", {}, title), children);
}
