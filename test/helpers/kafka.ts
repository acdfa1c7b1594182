// Reading back what Spindle produced to Kafka, with a kafkajs consumer in its own group. On a fresh
// broker the first group also creates `__consumer_offsets` and waits for its coordinator, which
// on a slow machine takes seconds: the wait is long, and a consumer crash is reported in the
// failure instead of leaving the test waiting for records that never come.
import { Kafka, logLevel, type Consumer } from 'kafkajs';

import { waitFor } from './wait.ts';

export interface KafkaRecord {
  key: string | null;
  value: string;
  headers: Record<string, string>;
}

/**
 * The records of `topic` from its beginning, once `enough(records)` holds (or a timeout naming
 * how many arrived and any consumer crash).
 */
export async function readKafka(topic: string, enough: (records: KafkaRecord[]) => boolean, timeoutMs = 90_000): Promise<KafkaRecord[]> {
  const kafka = new Kafka({ clientId: 'spindle-test-reader', brokers: ['127.0.0.1:9092'], logLevel: logLevel.NOTHING });
  const consumer: Consumer = kafka.consumer({ groupId: `${topic}-reader-${process.pid}` });
  const records: KafkaRecord[] = [];
  const crashes: string[] = [];
  consumer.on(consumer.events.CRASH, (e) => crashes.push(String(e.payload.error?.message ?? e.payload.error)));
  try {
    await consumer.connect();
    // The topic may not exist yet (what writes it is still connecting): Kafka then answers
    // "This server does not host this topic-partition", and the subscription is asked again.
    await waitFor(async () => {
      await consumer.subscribe({ topic, fromBeginning: true });
      return true;
    }, { timeout: timeoutMs, message: `a subscription to Kafka topic ${topic}` });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(message.headers ?? {})) headers[name] = String(value);
        records.push({ key: message.key?.toString() ?? null, value: message.value?.toString() ?? '', headers });
      },
    });
    try {
      await waitFor(() => enough(records), { timeout: timeoutMs, message: `enough records read from Kafka topic ${topic}` });
    } catch (err) {
      const values = records.map((r) => r.value).join(', ');
      throw new Error(`${(err as Error).message}; read ${records.length} (${values}); consumer crashes: ${crashes.join('; ') || 'none'}`);
    }
    return records;
  } finally {
    await consumer.disconnect().catch(() => {});
  }
}
