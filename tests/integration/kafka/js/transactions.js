// A kafkajs transactional producer: one committed and one aborted transaction over two partitions.
// Usage: node transactions.js <bootstrap> <topic> <transactional id>; prints {"ok": true} or the error.
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, transactionalId] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: "highwater-test", brokers: bootstrap.split(","), logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ transactionalId, maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  try {
    for (const [outcome, values] of [["commit", ["kjs-committed-0", "kjs-committed-1"]], ["abort", ["kjs-aborted-0", "kjs-aborted-1"]]]) {
      const transaction = await producer.transaction();
      await transaction.send({ topic, messages: values.map((value, i) => ({ value, partition: i % 2 })) });
      await (outcome === "commit" ? transaction.commit() : transaction.abort());
    }
  } finally {
    await producer.disconnect();
  }
  console.log(JSON.stringify({ ok: true }));
}

main().catch((error) => {
  console.log(JSON.stringify({ ok: false, error: `${error.name}: ${error.message}` }));
  process.exit(1);
});
