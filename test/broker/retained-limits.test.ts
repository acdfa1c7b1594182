// Retained-message limits (limits.maxRetainedMessages, limits.maxRetainedPayloadSize,
// limits.retainedDefaultExpiry) against real clients: mqtt.js v5 gets 0x97 Quota exceeded past
// the count and past the payload size (PUBACK and PUBREC), and the message is neither retained nor
// delivered; a replace and a clear at the limit still work; mosquitto_pub with MQTT 3.1.1 is
// acknowledged and its message dropped, and with MQTT 5 told "Quota exceeded"; a will past the
// limit is dropped; the admin API's publish is refused with 409; the default expiry makes a
// retained message vanish; the figures per first topic level in /prometheus and
// /mqtt/retain/stats. One worker, so a marker published after a refused message on another
// connection arrives after anything the refused one could have caused. The brokers keep a LOCAL
// store (the default) but one; the last races 40 clients on two workers for 10 places.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';

import type { MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { startBroker, connect, end, nextMessages, type TestBroker } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';

const MAX = 4;
const MAX_PAYLOAD = 16;
let b: AdminBroker;
let expiring: TestBroker;

before(async () => {
  execFileSync('which', ['mosquitto_pub'], { stdio: 'ignore' });
  b = await startAdminBroker({ workers: 1, sys: { enabled: true, interval: 1 }, limits: { maxRetainedMessages: MAX, maxRetainedPayloadSize: MAX_PAYLOAD } });
  expiring = await startBroker({ workers: 2, limits: { retainedDefaultExpiry: 2 } });
});
after(async () => {
  await b.stop();
  await expiring.stop();
});

/** The ReasonCode mqtt.js rejects a publish with (undefined: it was accepted). */
async function publishCode(c: MqttClient, topic: string, payload: string, qos: 0 | 1 | 2, retain = true): Promise<number | undefined> {
  try {
    await c.publishAsync(topic, payload, { qos, retain });
    return undefined;
  } catch (err) {
    return (err as { code?: number }).code;
  }
}

function retainedPayload(broker: TestBroker, topic: string): string | null {
  const rec = broker.supervisor.retained.get(topic);
  if (rec === null) return null;
  // The record layout of src/broker/message.ts: 32-byte header, topic, properties, payload.
  const topicLen = rec.readUInt16LE(2);
  const propsLen = rec.readUInt32LE(4);
  return rec.subarray(32 + topicLen + propsLen).toString();
}

/** What `c` receives from now on (payloads, in order). */
function receivedBy(c: MqttClient): string[] {
  const seen: string[] = [];
  c.on('message', (_t, payload: Buffer) => seen.push(payload.toString()));
  return seen;
}

/** Publishes a marker on `topic` from a fresh connection and waits for it in `seen` (what a
 * subscriber receives): what came before it is what the earlier publishes delivered (one worker). */
async function throughMarker(seen: string[], topic: string): Promise<string[]> {
  const marker = `marker-${topic}`;
  const pub = await connect(b.url, { protocolVersion: 5 });
  await pub.publishAsync(topic, marker, { qos: 1 });
  await waitFor(() => seen.includes(marker), { message: 'the marker arrives' });
  await end(pub);
  return seen.slice(0, seen.indexOf(marker));
}

async function scrape(): Promise<string> {
  const r = await b.api('GET', '/prometheus');
  assert.equal(r.status, 200);
  return r.text;
}

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('MQTT 5: past maxRetainedMessages a new topic gets 0x97 and is neither retained nor delivered; a replace and a clear still work', async () => {
  const sub = await connect(b.url, { protocolVersion: 5, clientId: 'lim-sub' });
  await sub.subscribeAsync('lim/#', { qos: 1 });
  const seen = receivedBy(sub);
  const pub = await connect(b.url, { protocolVersion: 5, clientId: 'lim-pub' });
  for (const t of ['lim/a', 'lim/b', 'lim/c', 'other/d']) assert.equal(await publishCode(pub, t, `v-${t}`, 1), undefined);
  await waitFor(() => b.supervisor.retained.size > MAX, { message: 'the broker retains its $SYS topics too' });
  assert.equal(b.supervisor.retained.counted, MAX, 'the $SYS topics are not counted');

  const scrapedBefore = await scrape();
  assert.equal(await publishCode(pub, 'lim/e', 'refused', 1), 0x97, 'QoS 1: PUBACK 0x97 Quota exceeded');
  assert.equal(await publishCode(pub, 'lim/f', 'refused', 2), 0x97, 'QoS 2: PUBREC 0x97 Quota exceeded');
  assert.equal(await publishCode(pub, 'lim/g', 'refused', 0), undefined, 'QoS 0: nothing to tell');
  assert.equal(retainedPayload(b, 'lim/e'), null);
  assert.equal(retainedPayload(b, 'lim/f'), null);
  assert.equal(retainedPayload(b, 'lim/g'), null);
  // The QoS 2 exchange ended with the failed PUBREC: the connection goes on, and a non-retained
  // message on a new topic is not limited.
  assert.equal(await publishCode(pub, 'lim/e', 'live', 2, false), undefined);
  assert.deepEqual(await throughMarker(seen, 'lim/marker'), ['v-lim/a', 'v-lim/b', 'v-lim/c', 'live'], 'the refused messages went to no subscriber');
  const scrapedAfter = await scrape();
  assert.equal((sample(scrapedAfter, 'spindle_retained_refused_total', 'reason="count"') ?? 0) - (sample(scrapedBefore, 'spindle_retained_refused_total', 'reason="count"') ?? 0), 3);

  // At the limit: replacing an existing topic is taken, and delivered.
  const next = nextMessages(sub, 1);
  assert.equal(await publishCode(pub, 'lim/a', 'replaced', 1), undefined);
  assert.equal((await next)[0].payload, 'replaced');
  assert.equal(retainedPayload(b, 'lim/a'), 'replaced');
  // A clear is taken, and makes room for one new topic.
  assert.equal(await publishCode(pub, 'lim/b', '', 1), undefined);
  assert.equal(retainedPayload(b, 'lim/b'), null);
  assert.equal(await publishCode(pub, 'lim/e', 'now-fits', 1), undefined);
  assert.equal(retainedPayload(b, 'lim/e'), 'now-fits');
  assert.equal(await publishCode(pub, 'lim/h', 'full-again', 1), 0x97);

  // A fresh subscriber sees the retained set as the limit left it.
  const fresh = await connect(b.url, { protocolVersion: 5 });
  const retained = nextMessages(fresh, 3);
  await fresh.subscribeAsync('lim/#', { qos: 1 });
  assert.deepEqual((await retained).map((m) => `${m.topic}=${m.payload}`).sort(), ['lim/a=replaced', 'lim/c=v-lim/c', 'lim/e=now-fits']);
  await end(sub, pub, fresh);
});

test('MQTT 5: a retained payload past maxRetainedPayloadSize gets 0x97 (0x95 is no PUBACK code); not retained ones are not limited', async () => {
  const pub = await connect(b.url, { protocolVersion: 5 });
  const big = 'x'.repeat(MAX_PAYLOAD + 1);
  const scrapedBefore = await scrape();
  // lim/a exists: even a replace is refused by the size.
  assert.equal(await publishCode(pub, 'lim/a', big, 1), 0x97);
  assert.equal(await publishCode(pub, 'lim/a', big, 2), 0x97);
  assert.equal(retainedPayload(b, 'lim/a'), 'replaced');
  assert.equal(await publishCode(pub, 'lim/a', big, 1, false), undefined);
  assert.equal(await publishCode(pub, 'lim/a', 'x'.repeat(MAX_PAYLOAD), 1), undefined, 'at the size limit is taken');
  const scrapedAfter = await scrape();
  assert.equal((sample(scrapedAfter, 'spindle_retained_refused_total', 'reason="size"') ?? 0) - (sample(scrapedBefore, 'spindle_retained_refused_total', 'reason="size"') ?? 0), 2);
  await end(pub);
});

test('MQTT 3.1.1 (mosquitto_pub): past the limit the message is acknowledged and dropped; MQTT 5 mosquitto_pub is told Quota exceeded', async () => {
  const sub = await connect(b.url, { protocolVersion: 4 });
  await sub.subscribeAsync('v3/#', { qos: 1 });
  const seen = receivedBy(sub);
  for (const qos of ['0', '1', '2']) {
    const r = spawnSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-V', 'mqttv311', '-q', qos, '-r', '-t', `v3/lim-${qos}`, '-m', 'refused'], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.status, 0, `v3.1.1 QoS ${qos} is acknowledged: ${r.stderr}`);
    assert.equal(retainedPayload(b, `v3/lim-${qos}`), null);
  }
  assert.deepEqual(await throughMarker(seen, 'v3/marker'), [], 'the dropped messages went to no subscriber');
  const v5 = spawnSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-V', 'mqttv5', '-q', '1', '-r', '-t', 'lim/v5', '-m', 'refused'], { encoding: 'utf8', timeout: 10_000 });
  assert.match(v5.stderr, /Quota exceeded/);
  assert.equal(retainedPayload(b, 'lim/v5'), null);
  // A replace from MQTT 3.1.1 at the limit is taken.
  execFileSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-V', 'mqttv311', '-q', '1', '-r', '-t', 'lim/c', '-m', 'from-v3']);
  assert.equal(retainedPayload(b, 'lim/c'), 'from-v3');
  await end(sub);
});

test('a retained will past the limit is dropped and counted; the admin API refuses with 409', async () => {
  const scrapedBefore = await scrape();
  const dying = await connect(b.url, { protocolVersion: 5, will: { topic: 'lim/will', payload: Buffer.from('gone'), qos: 1, retain: true } });
  (dying as unknown as { stream: { destroy(): void } }).stream.destroy();
  await waitFor(async () => (sample(await scrape(), 'spindle_retained_refused_total', 'reason="count"') ?? 0) > (sample(scrapedBefore, 'spindle_retained_refused_total', 'reason="count"') ?? 0), { message: 'the will is counted as refused' });
  assert.equal(retainedPayload(b, 'lim/will'), null);

  const refused = await b.api('POST', '/api/publish', { body: { topic: 'lim/admin', payload: 'x', retain: true } });
  assert.equal(refused.status, 409, refused.text);
  assert.match(refused.text, /limits\.maxRetainedMessages/);
  const big = await b.api('POST', '/api/publish', { body: { topic: 'lim/a', payload: 'x'.repeat(MAX_PAYLOAD + 1), retain: true } });
  assert.equal(big.status, 400, big.text);
  assert.match(big.text, /limits\.maxRetainedPayloadSize/);
  assert.equal((await b.api('POST', '/api/publish', { body: { topic: 'lim/a', payload: 'admin-replace', retain: true } })).status, 200);
  assert.equal(retainedPayload(b, 'lim/a'), 'admin-replace');
});

test('retained figures per first topic level: /prometheus and /mqtt/retain/stats', async () => {
  const text = await scrape();
  assert.equal(sample(text, 'spindle_retained_messages_by_level', 'level="lim"'), 3);
  assert.equal(sample(text, 'spindle_retained_messages_by_level', 'level="other"'), 1);
  assert.ok((sample(text, 'spindle_retained_messages_by_level', 'level="$SYS"') ?? 0) > 0);
  assert.ok((sample(text, 'spindle_retained_bytes_by_level', 'level="lim"') ?? 0) > 3 * 32, 'bytes of whole records');
  assert.equal(sample(text, 'spindle_retained_limit_messages', ''), MAX);
  assert.equal(sample(text, 'spindle_retained_counted_messages', ''), MAX);
  const stats = await b.api('GET', '/mqtt/retain/stats');
  assert.equal(stats.status, 200);
  const d = stats.json.data;
  assert.equal(d.count, MAX);
  assert.equal(d.counted, MAX);
  assert.deepEqual(d.limits, { maxRetainedMessages: MAX, maxRetainedPayloadSize: MAX_PAYLOAD, retainedDefaultExpiry: 0 });
  assert.deepEqual(d.levels.find((l: { level: string }) => l.level === 'lim')?.count, 3);
});

test('retainedDefaultExpiry: a retained message without expiry vanishes after it; one with its own keeps it; live copies are as published', async () => {
  const live = await connect(expiring.url, { protocolVersion: 5 });
  await live.subscribeAsync('exp/#', { qos: 1 });
  const got = nextMessages(live, 2);
  const pub = await connect(expiring.url, { protocolVersion: 5 });
  await pub.publishAsync('exp/default', 'short', { qos: 1, retain: true });
  await pub.publishAsync('exp/own', 'long', { qos: 1, retain: true, properties: { messageExpiryInterval: 3600 } });
  const delivered = await got;
  assert.equal(delivered[0].packet.properties?.messageExpiryInterval, undefined, 'the live copy carries no expiry');
  // The stored copy (LOCAL store) expires too, so it does not come back after a restart.
  const stored = (await expiring.supervisor.openedStore!.loadRetained()).find((r) => r.topic === 'exp/default');
  assert.ok(stored && stored.message.expiresAt > Date.now() && stored.message.expiresAt <= Date.now() + 2000, JSON.stringify(stored?.message.expiresAt));

  // A fresh subscriber at once gets both, the default one with the time left.
  const first = await connect(expiring.url, { protocolVersion: 5 });
  const both = nextMessages(first, 2);
  await first.subscribeAsync('exp/#', { qos: 1 });
  const seen = await both;
  const def = seen.find((m) => m.topic === 'exp/default');
  assert.ok(def && (def.packet.properties?.messageExpiryInterval ?? 0) <= 2, JSON.stringify(def?.packet.properties));
  await end(first);

  // Then it leaves the retained store, and a fresh subscriber gets only the other.
  await waitFor(() => expiring.supervisor.retained.get('exp/default') === null, { message: 'the expired retained message is swept' });
  const later = await connect(expiring.url, { protocolVersion: 5 });
  const received: string[] = [];
  later.on('message', (t) => received.push(t));
  await later.subscribeAsync('exp/#', { qos: 1 });
  await later.publishAsync('exp/marker', 'm', { qos: 1 });
  await waitFor(() => received.includes('exp/marker'));
  assert.deepEqual(received.filter((t) => t !== 'exp/marker'), ['exp/own']);
  assert.notEqual(expiring.supervisor.retained.get('exp/own'), null);
  await end(live, pub, later);
});

test('without a store (MEMORY) the limits hold the same way', async () => {
  const m = await startBroker({ store: { storeType: 'MEMORY' }, limits: { maxRetainedMessages: 1, maxRetainedPayloadSize: 4 } });
  try {
    const pub = await connect(m.url, { protocolVersion: 5 });
    assert.equal(await publishCode(pub, 'mem/a', 'one', 1), undefined);
    assert.equal(await publishCode(pub, 'mem/b', 'two', 1), 0x97);
    assert.equal(await publishCode(pub, 'mem/a', 'five!', 2), 0x97, 'past the payload size');
    assert.equal(await publishCode(pub, 'mem/a', 'new', 2), undefined, 'a replace at the limit');
    assert.equal(retainedPayload(m, 'mem/a'), 'new');
    assert.equal(retainedPayload(m, 'mem/b'), null);
    await end(pub);
  } finally {
    await m.stop();
  }
});

test('40 clients on two workers racing for 10 places (LOCAL store, writes in between): exactly 10 are retained, the other 30 get 0x97', async () => {
  const m = await startBroker({ workers: 2, limits: { maxRetainedMessages: 10 } });
  try {
    const clients = await Promise.all(Array.from({ length: 40 }, (_, i) => connect(m.url, { protocolVersion: 5, clientId: `race-${i}` })));
    const codes = await Promise.all(clients.map((c, i) => publishCode(c, `race/${i}`, `v${i}`, 1)));
    assert.equal(codes.filter((c) => c === undefined).length, 10, JSON.stringify(codes));
    assert.equal(codes.filter((c) => c === 0x97).length, 30);
    assert.equal(m.supervisor.retained.counted, 10);
    codes.forEach((c, i) => assert.equal(retainedPayload(m, `race/${i}`) !== null, c === undefined, `race/${i}`));
    await end(...clients);
  } finally {
    await m.stop();
  }
});
