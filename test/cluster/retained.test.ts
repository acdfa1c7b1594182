// Retained messages across nodes (src/cluster/retained.ts), three Spindle nodes over the test's own
// nats-server: a retained message set or cleared on one node is what a later subscriber on any
// other node gets (payload, QoS, RETAIN, MQTT 5 properties and expiry), sent in batches; a node
// that starts late, or comes back, catches up (and a clear made while it was away is not undone);
// a node with a store keeps what it received over a restart.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { startBroker, connect, end, nextMessages, type TestBroker } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import type { RetainedCounters } from '../../src/cluster/index.ts';

let nats: TestNats;
let natsUrl: string;
const nodes: TestBroker[] = [];

async function startNode(name: string, extra: Record<string, unknown> = {}): Promise<TestBroker> {
  return startBroker({ nodeName: name, cluster: { enabled: true, natsUrl, localAddress: `127.0.0.1:${await freePort()}` }, ...extra });
}

function counters(n: TestBroker): RetainedCounters {
  return n.cluster!.partCounters().retained as RetainedCounters;
}

function held(n: TestBroker, topic: string): boolean {
  return n.supervisor.retained.get(topic) !== null;
}

/** The messages a new subscriber to `filter` gets, up to the marker (a retained message on
 * `marker/<n>` published on the same node first, subscribed after `filter`: anything retained
 * for `filter` comes before it). */
async function retainedFor(n: TestBroker, filter: string): Promise<{ topic: string; payload: string; packet: import('mqtt').IPublishPacket }[]> {
  const marker = `marker/${Math.random().toString(36).slice(2)}`;
  const pub = await connect(n.url);
  await pub.publishAsync(marker, 'm', { qos: 1, retain: true });
  const sub = await connect(n.url, { protocolVersion: 5 });
  const got: { topic: string; payload: string; packet: import('mqtt').IPublishPacket }[] = [];
  const done = new Promise<void>((resolve) => {
    sub.on('message', (topic, payload, packet) => {
      if (topic === marker) resolve();
      else got.push({ topic, payload: payload.toString(), packet });
    });
  });
  await sub.subscribeAsync(filter, { qos: 2 });
  await sub.subscribeAsync(marker, { qos: 0 });
  await done;
  await pub.publishAsync(marker, '', { qos: 1, retain: true });
  await end(pub, sub);
  return got;
}

before(async () => {
  nats = await TestNats.start();
  natsUrl = nats.url;
  // Node a answers the admin API (its counters in /api/cluster/status and /prometheus).
  nodes.push(await startAdminBroker({ nodeName: 'ret-a', cluster: { enabled: true, natsUrl, localAddress: `127.0.0.1:${await freePort()}` } }));
  for (const name of ['ret-b.example.com', 'ret-c']) nodes.push(await startNode(name));
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 3), { message: 'every node sees three running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

test('a retained message set on one node is what a later subscriber on every other node gets', async () => {
  const [a, b, c] = nodes;
  const pub = await connect(a.url, { protocolVersion: 5 });
  await pub.publishAsync('plant/1/state', 'running', {
    qos: 1,
    retain: true,
    properties: { messageExpiryInterval: 300, contentType: 'text/plain', userProperties: { line: '7' } },
  });
  await waitFor(() => held(b, 'plant/1/state') && held(c, 'plant/1/state'), { message: 'b and c hold the retained message' });
  for (const n of [b, c]) {
    const got = await retainedFor(n, 'plant/+/state');
    assert.equal(got.length, 1);
    const [m] = got;
    assert.equal(m.topic, 'plant/1/state');
    assert.equal(m.payload, 'running');
    assert.equal(m.packet.qos, 1);
    assert.equal(m.packet.retain, true);
    assert.equal(m.packet.properties?.contentType, 'text/plain');
    assert.deepEqual({ ...m.packet.properties?.userProperties }, { line: '7' });
    const expiry = m.packet.properties?.messageExpiryInterval ?? 0;
    assert.ok(expiry > 0 && expiry <= 300, `expiry carried: ${expiry}`);
  }
  assert.ok(counters(b).applied >= 1);
  await end(pub);
});

test('a retained message cleared on one node is gone on the others; the last of several changes wins', async () => {
  const [a, b, c] = nodes;
  const pub = await connect(a.url);
  await pub.publishAsync('valve/9', 'open', { qos: 1, retain: true });
  await waitFor(() => held(b, 'valve/9') && held(c, 'valve/9'), { message: 'b and c hold valve/9' });
  for (let i = 0; i < 5; i++) await pub.publishAsync('valve/9', `v${i}`, { qos: 0, retain: true });
  await pub.publishAsync('valve/9', '', { qos: 1, retain: true });
  await waitFor(() => !held(b, 'valve/9') && !held(c, 'valve/9'), { message: 'the clear reached b and c' });
  assert.deepEqual(await retainedFor(b, 'valve/#'), []);
  assert.deepEqual(await retainedFor(c, 'valve/#'), []);
  // Set again on another node: newer than the clear, so it is back everywhere.
  const pubC = await connect(c.url);
  await pubC.publishAsync('valve/9', 'closed', { qos: 1, retain: true });
  await waitFor(() => a.supervisor.retained.get('valve/9')?.includes('closed') && b.supervisor.retained.get('valve/9')?.includes('closed'), { message: 'a and b hold c\'s value' });
  assert.deepEqual((await retainedFor(a, 'valve/#')).map((m) => m.payload), ['closed']);
  await end(pub, pubC);
});

test('many retained changes cross in a few NATS messages, not one each', async () => {
  const [a, b] = nodes;
  const pub = await connect(a.url);
  const before = counters(a).sentFrames;
  const count = 200;
  await Promise.all(Array.from({ length: count }, (_, i) => pub.publishAsync(`batch/${i}`, `p${i}`, { qos: 1, retain: true })));
  await waitFor(() => Array.from({ length: count }, (_, i) => `batch/${i}`).every((t) => held(b, t)), { message: 'b holds every batch topic' });
  const frames = counters(a).sentFrames - before;
  assert.ok(frames >= 1 && frames < count / 4, `${frames} frames for ${count} changes`);
  assert.equal((await retainedFor(b, 'batch/#')).length, count);
  // Traffic without RETAIN sends nothing.
  const sent = counters(a).sent;
  const local = await connect(a.url);
  await local.subscribeAsync('plain/#');
  const got = nextMessages(local, 20);
  for (let i = 0; i < 20; i++) pub.publish('plain/x', String(i));
  await got;
  assert.equal(counters(a).sent, sent);
  await end(pub, local);
});

test('a node that starts later catches up; a clear made while it was away is not undone', async () => {
  const [a, b] = nodes;
  const pub = await connect(a.url);
  await pub.publishAsync('late/1', 'before-d', { qos: 1, retain: true });
  await pub.publishAsync('late/2', 'to-clear', { qos: 1, retain: true });
  await waitFor(() => held(b, 'late/1') && held(b, 'late/2'), { message: 'b holds late/1 and late/2' });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-ret-d-'));
  let d = await startNode('ret-d', { dataDir });
  try {
    await waitFor(() => held(d, 'late/1') && held(d, 'late/2'), { message: 'd caught up' });
    assert.deepEqual((await retainedFor(d, 'late/#')).map((m) => `${m.topic}=${m.payload}`).sort(), ['late/1=before-d', 'late/2=to-clear']);
    await d.stop();
    // While d is away: late/2 is cleared, late/3 set.
    await pub.publishAsync('late/2', '', { qos: 1, retain: true });
    await pub.publishAsync('late/3', 'while-away', { qos: 1, retain: true });
    await waitFor(() => !held(b, 'late/2') && held(b, 'late/3'), { message: 'b saw the changes' });
    const aSyncs = counters(a).syncs;
    d = await startNode('ret-d', { dataDir });
    // d had late/2 in its store; the others' tombstone is newer.
    await waitFor(() => held(d, 'late/3') && !held(d, 'late/2') && counters(d).syncs >= 3, { message: 'd caught up again' });
    await waitFor(() => nodes.every((n) => n.cluster!.nodes().find((x) => x.id === 'ret-d')?.status === 'running' && counters(n).syncsServed > 0), { message: 'the others see d back' });
    await waitFor(() => counters(a).syncs > aSyncs, { message: 'a merged d\'s retained set' });
    assert.equal(held(a, 'late/2'), false, 'the clear was not undone by d\'s old copy');
    assert.deepEqual((await retainedFor(d, 'late/#')).map((m) => `${m.topic}=${m.payload}`).sort(), ['late/1=before-d', 'late/3=while-away']);
  } finally {
    await d.stop();
  }
  await end(pub);
});

test('a node with a store keeps the retained messages it received over a restart', async () => {
  const [a] = nodes;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-ret-e-'));
  const e = await startNode('ret-e', { dataDir, store: { storeType: 'LOCAL' } });
  const pub = await connect(a.url, { protocolVersion: 5 });
  try {
    await waitFor(() => a.cluster!.nodes().find((x) => x.id === 'ret-e')?.status === 'running', { message: 'a sees e' });
    await pub.publishAsync('kept/1', 'durable', { qos: 2, retain: true, properties: { userProperties: { k: 'v' } } });
    await waitFor(() => held(e, 'kept/1'), { message: 'e holds kept/1' });
  } finally {
    await e.stop();
  }
  // Back alone, without the cluster: what it has comes from its own store.
  const alone = await startBroker({ nodeName: 'ret-e', dataDir, store: { storeType: 'LOCAL' } });
  try {
    const got = await retainedFor(alone, 'kept/#');
    assert.equal(got.length, 1);
    assert.equal(got[0].payload, 'durable');
    assert.equal(got[0].packet.qos, 2);
    assert.deepEqual({ ...got[0].packet.properties?.userProperties }, { k: 'v' });
  } finally {
    await alone.stop();
  }
  await pub.publishAsync('kept/1', '', { qos: 1, retain: true });
  await end(pub);
});

test('the counters are in /api/cluster/status (parts.retained) and /prometheus', async () => {
  const a = nodes[0] as AdminBroker;
  const status = await a.api('GET', '/api/cluster/status', { as: 'viewer' });
  assert.equal(status.status, 200);
  const retained = (status.json as { data: { parts: { retained: RetainedCounters } } }).data.parts.retained;
  assert.ok(retained.sent > 0 && retained.syncsServed > 0, JSON.stringify(retained));
  const prom = await a.api('GET', '/prometheus', { as: 'viewer' });
  // In a cluster every sample carries the node's name.
  const sent = /^spindle_cluster_retained_total\{event="sent",node="([^"]+)"\} (\d+)/m.exec(prom.text);
  assert.equal(sent?.[1], 'ret-a');
  assert.ok(sent && Number(sent[2]) > 0 && Number(sent[2]) <= counters(a).sent, prom.text.split('\n').filter((l) => l.includes('cluster')).join('\n'));
  assert.match(prom.text, /^spindle_cluster_retained_tombstones\{node="ret-a"\} \d+/m);
  assert.match(prom.text, /^spindle_workers_running\{node="ret-a"\} \d+/m);
});
