// MQTT bridges across the cluster: a bridge added on one node is on every node (replicated) and
// runs on one node at a time, the holder of its lease, so the remote broker sees one connection and
// each message from it comes in once, to subscribers on every node; a message published on a node
// that does not run the bridge still goes out, once (the bridge's filters are its node's interest);
// when the node running it stops, another takes it over. Against a real Mosquitto.
// needs: broker, nats, mosquitto
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { startMosquitto, type Mosquitto } from '../helpers/mosquitto.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
let remote: Mosquitto;
const names = ['br-a', 'br-b'];
const nodes: AdminBroker[] = [];
const stopped = new Set<AdminBroker>();

before(async () => {
  remote = await startMosquitto();
  nats = await TestNats.start();
  for (const name of names) nodes.push(await startAdminBroker({ nodeName: name, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see each other' });
});

after(async () => {
  for (const n of nodes) if (!stopped.has(n)) await n.stop();
  await nats?.stop();
  await remote?.stop();
});

async function runtime(b: AdminBroker, name: string): Promise<any> {
  const r = await b.api('POST', '/bridge/runtime', { body: { name } });
  assert.equal(r.status, 200, r.text);
  return r.json.data[0];
}

function record(client: MqttClient): string[] {
  const got: string[] = [];
  client.on('message', (topic, payload) => got.push(`${topic} ${payload.toString()}`));
  return got;
}

test('a bridge runs on one node; its messages reach every node once, and it moves when that node stops', async () => {
  const [a, b] = nodes;
  const added = await a.api('POST', '/bridge/add', {
    body: { name: 'cl1', url: remote.url, reconnectPeriod: 200, forwards: [{ filter: 'up/#', qos: 1, remotePrefix: 'cl1/' }], subscriptions: [{ filter: 'down/#', qos: 1, localPrefix: 'fromremote/', remotePrefix: 'cl1/' }] },
  });
  assert.equal(added.status, 200, added.text);
  const [ra, rb] = await waitFor(async () => {
    const r = await Promise.all(nodes.map((n) => runtime(n, 'cl1')));
    return r.every((x) => typeof x.runningOn === 'string' && x.runningOn === r[0].runningOn) && r.filter((x) => x.state === 'connected' && x.subscribed).length === 1 && r;
  }, { message: 'the bridge connected on one node, and both know which' });
  assert.equal(ra.runningOn, rb.runningOn);
  const holder = nodes[names.indexOf(ra.runningOn)];
  const other = nodes.find((n) => n !== holder)!;
  assert.equal((await runtime(other, 'cl1')).state, 'stopped');

  // From the remote: once on each node.
  const subs = await Promise.all(nodes.map((n) => connect(n.url)));
  for (const s of subs) await s.subscribeAsync('fromremote/#', { qos: 1 });
  const got = subs.map(record);
  const remotePub = await connect(remote.url, { clientId: 'cl-remote-pub' });
  // Once the subscriptions' interest crossed to the bridge's node, a probe reaches both.
  // A probe per check, 100 ms apart, until one reached both.
  await waitFor(async () => {
    if (got.every((g) => g.length > 0)) return true;
    await remotePub.publishAsync('cl1/down/probe', 'p', { qos: 1 });
    return false;
  }, { interval: 100, message: 'probes from the remote reach both nodes' });
  await remotePub.publishAsync('cl1/down/1', 'd1', { qos: 1 });
  await waitFor(() => got.every((g) => g.includes('fromremote/down/1 d1')), { message: 'the remote message on both nodes' });
  // Once on each: nothing more of it arrives (late probes may). A window on purpose: a duplicate
  // would come by another path (the bridge and the cluster), so no marker can order it.
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(got.map((g) => g.filter((m) => m.endsWith(' d1')).length), [1, 1]);

  // To the remote: published on the node that does not run the bridge, it goes out once.
  const remoteSub = await connect(remote.url, { clientId: 'cl-remote-sub' });
  await remoteSub.subscribeAsync('cl1/#', { qos: 1 });
  const out = record(remoteSub);
  const pub = await connect(other.url);
  await waitFor(async () => {
    await pub.publishAsync('up/probe', 'p', { qos: 1 });
    return out.some((m) => m.startsWith('cl1/up/probe'));
  }, { message: 'the bridge\'s filters known as interest on the other node' });
  await pub.publishAsync('up/2', 'u2', { qos: 1 });
  await waitFor(() => out.includes('cl1/up/2 u2'), { message: 'the message out on the remote' });
  // Once: nothing more of it arrives (late probes may). A window on purpose, as above.
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(out.filter((m) => m === 'cl1/up/2 u2').length, 1);

  // The node running it stops: the other takes it over.
  await end(...subs, pub);
  await holder.stop();
  stopped.add(holder);
  await waitFor(async () => {
    const r = await runtime(other, 'cl1');
    return r.state === 'connected' && r.subscribed && r.runningOn === names[nodes.indexOf(other)];
  }, { timeout: 30_000, message: 'the other node runs the bridge' });
  const sub = await connect(other.url);
  await sub.subscribeAsync('fromremote/#', { qos: 1 });
  const after = record(sub);
  await remotePub.publishAsync('cl1/down/3', 'd3', { qos: 1 });
  await waitFor(() => after.length >= 1, { message: 'the remote message through the bridge on its new node' });
  assert.deepEqual(after, ['fromremote/down/3 d3']);
  await end(sub, remotePub, remoteSub);
});
