// kafkajs's admin.deleteTopicRecords, then the partition's offsets as kafkajs's fetchTopicOffsets reads them.
// Usage: node delete_records.js <bootstrap> <topic> <partition> <offset>
// Prints one JSON line: {"ok": true, "low": ..., "high": ...} or {"ok": false, "error": ...}.
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, partition, offset] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: "highwater-test", brokers: bootstrap.split(","), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    // kafkajs's deleteTopicRecords finds the leaders in the metadata already loaded, never loading it
    // (against Kafka too): without this it fails with KafkaJSTopicMetadataNotLoaded.
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: Number(partition), offset }] });
    const offsets = await admin.fetchTopicOffsets(topic);
    const found = offsets.find((entry) => entry.partition === Number(partition));
    console.log(JSON.stringify({ ok: true, low: found.low, high: found.high }));
  } finally {
    await admin.disconnect();
  }
}

main().catch((error) => {
  console.log(JSON.stringify({ ok: false, error: `${error.name}: ${error.message}` }));
  process.exit(1);
});
