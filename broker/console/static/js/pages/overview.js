// Overview: the cluster, its brokers, and the partitions that need attention, at a glance.
import { capi } from "../api.js";
import { fill, fmtRate, h, loading, num, table } from "../dom.js";
import { card, optional, section, topicsWithOffsets } from "./common.js";

const METADATA_MS = 2000;

export default async function overview({ main, live }) {
  const cards = h("div", { class: "cards" }, loading());
  const brokers = h("div", {}, loading());
  fill(main, h("h1", {}, "Cluster overview"), cards, section("Brokers", brokers));
  let activity = null;
  live.every(5000, async () => {
    activity = await optional(() => capi("/activity"));
    return activity?.interval_ms;
  });
  live.every(METADATA_MS, async () => {
    const [clusterBody, brokerList, topics] = await Promise.all([
      capi(""),
      capi("/brokers"),
      topicsWithOffsets(),
    ]);
    const partitions = topics.flatMap((topic) => topic.partitionList ?? []);
    const rates = activity?.brokers ?? [];
    const sum = (field) => (activity ? rates.reduce((total, broker) => total + (broker[field] ?? 0), 0) : null);
    fill(
      cards,
      card("Cluster id", clusterBody.cluster_id, "cluster-id"),
      card("Controller", clusterBody.controller_id, "controller-id"),
      card("Brokers", brokerList.data.length, "brokers-count"),
      card("Topics", topics.length, "topics-count"),
      card("Partitions", topics.reduce((total, topic) => total + topic.partitions_count, 0), "partitions-count"),
      card("Under-replicated", activity?.under_replicated_partitions, "under-replicated", activity?.under_replicated_partitions > 0),
      card("Under min ISR", activity?.under_min_isr_partitions, "under-min-isr", activity?.under_min_isr_partitions > 0),
      card("Offline", activity?.offline_partitions, "offline", activity?.offline_partitions > 0),
      card("Produce records/s", activity ? fmtRate(sum("produce_records_per_s")) : null, "produce-rate"),
      card("Fetch records/s", activity ? fmtRate(sum("fetch_records_per_s")) : null, "fetch-rate"),
    );
    const rows = brokerList.data.map((broker) => {
      const led = partitions.filter((p) => p.leader_id === broker.broker_id).length;
      const followed = partitions.filter(
        (p) => p.leader_id !== broker.broker_id && p.replicas.some((replica) => replica.broker_id === broker.broker_id),
      ).length;
      const rate = rates.find((r) => r.broker_id === broker.broker_id);
      const state = rate && rate.reachable === false ? "registered, not answering" : "registered";
      const id = broker.broker_id;
      return h(
        "tr",
        { "data-testid": `broker-${id}` },
        num(id),
        h("td", {}, broker.url, broker.broker_id === clusterBody.controller_id ? " (controller)" : ""),
        h("td", {}, broker.rack ?? "—"),
        h("td", { "data-testid": `broker-${id}-state` }, state),
        num(led, `broker-${id}-led`),
        num(followed, `broker-${id}-followed`),
        num(rate ? fmtRate(rate.produce_records_per_s) : null),
        num(rate ? fmtRate(rate.fetch_records_per_s) : null),
      );
    });
    fill(
      brokers,
      table(
        "Brokers",
        [["Broker"], "Address", "Rack", "State", ["Leader of"], ["Follower of"], ["Produce rec/s"], ["Fetch rec/s"]],
        rows,
        "brokers",
      ),
    );
  });
}
