// Delayed publish's firing accuracy: DELAYED_MESSAGES (100,000) delayed messages held at once,
// due within the window they were published in, each to its own topic; a subscriber takes them,
// and each one's lateness is its arrival at the subscriber minus its due time (read from the
// broker's index: receipt + delay). Reports p50, p99 and max; target: p99 within 50 ms.
// In-process broker, MEMORY store (the store's write cost is measured by bench-persistence).
import { performance } from 'node:perf_hooks';

import mqtt from 'mqtt';

import { startBroker } from '../test/helpers/broker.ts';
import { delayed } from '../src/features/delayed/index.ts';
import { writeResults } from './lib/report.ts';

const MESSAGES = Number(process.env.DELAYED_MESSAGES ?? 100_000);
const DELAY_S = Number(process.env.DELAYED_SECONDS ?? 20);
const PUBLISHERS = 4;
const CHUNK = 500;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const broker = await startBroker({ workers: 2, store: { storeType: 'MEMORY' }, delayed: { maxMessages: MESSAGES } });
try {
  const manager = broker.features.get(delayed);
  const arrivals = new Map<string, number>();
  const sub = await mqtt.connectAsync(broker.url, { protocolVersion: 5, reconnectPeriod: 0 });
  let done: () => void = () => {};
  const all = new Promise<void>((r) => (done = r));
  sub.on('message', (topic) => {
    arrivals.set(topic, Date.now());
    if (arrivals.size === MESSAGES) done();
  });
  await sub.subscribeAsync('bench/#', { qos: 0 });

  const t0 = performance.now();
  await Promise.all(Array.from({ length: PUBLISHERS }, async (_, p) => {
    const pub = await mqtt.connectAsync(broker.url, { protocolVersion: 5, reconnectPeriod: 0 });
    const per = MESSAGES / PUBLISHERS;
    for (let i = 0; i < per; i += CHUNK) {
      const n = Math.min(CHUNK, per - i);
      await Promise.all(Array.from({ length: n }, (_, j) => pub.publishAsync(`$delayed/${DELAY_S}/bench/${p}/${i + j}`, 'x', { qos: 1 })));
    }
    await pub.endAsync();
  }));
  const publishMs = performance.now() - t0;
  // Every message's due time, from the broker's index (its receipt plus the delay).
  const due = new Map(manager.list(undefined).map((m) => [m.topic, Date.parse(m.dueAt)]));
  const window = Math.max(...due.values()) - Math.min(...due.values());
  console.log(`published ${MESSAGES} in ${(publishMs / 1000).toFixed(1)} s; ${due.size} held, due within ${window} ms`);
  await all;
  const late = [...arrivals].filter(([t]) => due.has(t)).map(([t, at]) => at - due.get(t)!).sort((a, b) => a - b);
  const early = late.filter((x) => x < 0).length;
  const row = {
    messages: MESSAGES,
    'held at once': due.size,
    'due window (ms)': window,
    'p50 (ms)': pct(late, 50),
    'p99 (ms)': pct(late, 99),
    'max (ms)': late[late.length - 1],
    'early (<0 ms)': early,
  };
  console.table([row]);
  writeResults('delayed', 'Delayed publish: firing accuracy (delivery at a subscriber minus due time)', [row], [
    `${MESSAGES} messages published to $delayed/${DELAY_S}/bench/<p>/<i> by ${PUBLISHERS} mqtt.js publishers (QoS 1), all held at once, due within the window they were published in; one mqtt.js subscriber (QoS 0) on bench/#, in the same process as the broker (2 workers, MEMORY store).`,
    'Lateness: the subscriber\'s arrival time minus the due time the broker recorded (receipt + delay); due times are whole milliseconds. Target (issue 29): p99 within 50 ms.',
  ]);
  await sub.endAsync();
} finally {
  await broker.stop();
}
