// Takeover under concurrency, end to end over real sockets: several connections share one client
// id across workers, mixing MQTT 3.1.1 and 5 (and, in the second storm, persistent and clean),
// each reconnecting in a loop and holding its connection a few milliseconds, while a publisher
// sends numbered QoS 1 messages to the session's subscription. Takeover must be linearizable per
// client id: every connection answered with CONNACK before anything else, resumed sessions present,
// every acknowledged message delivered, one session and one subscription left at the end.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';

import { startBroker, connect, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient, type RawPacket } from '../helpers/raw-client.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { waitFor } from '../helpers/wait.ts';

let broker: TestBroker;
/** A URL per worker thread (test hook): the storm's clients alternate between the workers. */
let onWorker: string[];
before(async () => {
  broker = await startBroker();
  onWorker = await workerUrls(broker);
});
after(async () => { await broker.stop(); });

interface StormResult {
  connects: number;
  presentZero: number;
  violations: string[];
  received: Set<number>;
}

/** One client's reconnect loop until `stop()`: CONNECT, SUBSCRIBE, acknowledge what arrives for
 * 0-50 ms, then drop the connection (or DISCONNECT). */
async function reconnectLoop(k: number, clientId: string, topic: string, clean: (i: number) => boolean, stop: () => boolean, r: StormResult): Promise<void> {
  const protocolVersion = k % 2 === 0 ? 4 : 5;
  for (let i = 0; !stop(); i++) {
    const isClean = clean(i);
    const c = await RawClient.open(onWorker[(k + i) % onWorker.length], protocolVersion);
    c.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion, clientId, clean: isClean, keepalive: 0, properties: protocolVersion === 5 && !isClean ? { sessionExpiryInterval: 300 } : undefined } as never);
    let first: RawPacket;
    try {
      first = await c.next(undefined, 10_000);
    } catch (err) {
      r.violations.push(`client ${k} (v${protocolVersion}): ${(err as Error).message} before CONNACK`);
      c.destroy();
      continue;
    }
    r.connects++;
    if (first.cmd !== 'connack') {
      r.violations.push(`client ${k} (v${protocolVersion}) got ${first.cmd}${first.reasonCode !== undefined ? ` 0x${first.reasonCode.toString(16)}` : ''} before CONNACK`);
      c.destroy();
      continue;
    }
    if (!isClean && !first.sessionPresent && r.connects > 1) r.presentZero++;
    c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] } as never);
    // Holding the connection for a while is the point of the storm: elapsed time is what varies.
    const until = Date.now() + Math.floor(Math.random() * 50);
    while (!c.closed) {
      const left = until - Date.now();
      if (left <= 0) break;
      const p = await c.next(undefined, left).catch(() => null);
      if (!p) break;
      if (p.cmd === 'publish') {
        r.received.add(Number(p.payload.toString()));
        c.send({ cmd: 'puback', messageId: p.messageId } as never);
      }
    }
    if (i % 3 === 0) c.send({ cmd: 'disconnect' } as never);
    c.destroy();
  }
}

/** Publishes numbered QoS 1 messages at about `rate` per second until `stop()`; answers the
 * numbers the broker acknowledged. */
async function publisher(topic: string, rate: number, stop: () => boolean): Promise<Set<number>> {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: `${topic}-pub` });
  const acked = new Set<number>();
  const pending: Promise<void>[] = [];
  for (let n = 0; !stop(); n++) {
    pending.push(pub.publishAsync(`${topic}/m`, String(n), { qos: 1 }).then(() => { acked.add(n); }));
    if (n % 10 === 9) await delay(10_000 / rate); // pacing (elapsed time is the point): ten messages per slice of the rate
  }
  await Promise.all(pending);
  await end(pub);
  return acked;
}

async function sessionsAndSubscriptions(): Promise<{ sessions: number; subscriptions: number }> {
  const stats = await broker.supervisor.collectStats();
  return { sessions: stats.reduce((n, s) => n + s.sessions, 0), subscriptions: broker.supervisor.router.subscriptionCount };
}

test('takeover storm, persistent sessions: CONNACK first, always present, no acknowledged QoS 1 message lost, nothing left behind [MQTT-3.1.4-3] [MQTT-3.2.2-3] [MQTT-4.3.2]', { timeout: 120_000 }, async () => {
  const before = await sessionsAndSubscriptions();
  const clientId = 'storm-persistent';
  const topic = 'stormp';
  const first = await RawClient.connect(broker.url, { protocolVersion: 5, clientId, clean: false, properties: { sessionExpiryInterval: 300 } } as never);
  first.client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `${topic}/#`, qos: 1 }] } as never);
  await first.client.next('suback');
  first.client.destroy();
  const r: StormResult = { connects: 0, presentZero: 0, violations: [], received: new Set() };
  let stopped = false;
  const stop = () => stopped;
  const loops = [0, 1, 2, 3].map((k) => reconnectLoop(k, clientId, `${topic}/#`, () => false, stop, r));
  const acked = publisher(topic, 300, stop);
  await delay(3000); // the storm's length
  stopped = true;
  await Promise.all(loops);
  const ackedSet = await acked;

  // The session is still there, with every acknowledged message not yet delivered queued.
  const last = await RawClient.connect(broker.url, { protocolVersion: 5, clientId, clean: false, properties: { sessionExpiryInterval: 0 } } as never);
  assert.equal(last.connack.sessionPresent, true, 'the session survived the storm');
  const deadline = Date.now() + 15_000;
  const missing = () => [...ackedSet].filter((n) => !r.received.has(n));
  while (missing().length > 0 && Date.now() < deadline) {
    const p = await last.client.next('publish', deadline - Date.now()).catch(() => null);
    if (!p) break;
    r.received.add(Number(p.payload.toString()));
    last.client.send({ cmd: 'puback', messageId: p.messageId } as never);
  }
  assert.deepEqual(r.violations, []);
  assert.equal(r.presentZero, 0, `${r.presentZero} of ${r.connects} resuming CONNECTs got session present 0`);
  assert.deepEqual(missing(), [], `${missing().length} of ${ackedSet.size} acknowledged messages never reached the session`);
  last.client.send({ cmd: 'disconnect' } as never);
  await last.client.waitClosed();
  // Expiry 0 at the last DISCONNECT: the session ends; nothing of the storm is left behind.
  // Sessions end on their worker asynchronously after the last close.
  await waitFor(async () => assert.deepEqual(await sessionsAndSubscriptions(), before) ?? true, { message: 'nothing of the storm is left behind' });
  assert.ok(r.connects > 20, `only ${r.connects} connects in the storm`);
});

test('takeover storm, persistent and clean mixed: CONNACK first, one session and one subscription left', { timeout: 120_000 }, async () => {
  const before = await sessionsAndSubscriptions();
  const clientId = 'storm-mixed';
  const r: StormResult = { connects: 0, presentZero: 0, violations: [], received: new Set() };
  let stopped = false;
  const loops = [0, 1, 2, 3].map((k) => reconnectLoop(k, clientId, 'stormm/#', (i) => (i + k) % 2 === 0, () => stopped, r));
  const acked = publisher('stormm', 300, () => stopped);
  await delay(3000); // the storm's length
  stopped = true;
  await Promise.all(loops);
  await acked;
  assert.deepEqual(r.violations, []);
  // A last clean connection and its end leave nothing of the client id behind.
  const last = await RawClient.connect(broker.url, { protocolVersion: 5, clientId, clean: true } as never);
  last.client.send({ cmd: 'disconnect' } as never);
  await last.client.waitClosed();
  await waitFor(async () => assert.deepEqual(await sessionsAndSubscriptions(), before) ?? true, { message: 'nothing of the storm is left behind' });
});
