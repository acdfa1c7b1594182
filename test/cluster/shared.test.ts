// Shared subscriptions as ONE group across three nodes over one NATS: each message published on
// any node, at QoS 0 or 1, reaches exactly one member of each group cluster-wide (members on every
// node get some), plain subscribers still get every message once, a message wanted by a node for
// its plain subscribers and for groups crosses once, `$queue/` is a group too, a pick for a node
// whose last member just left is counted, and a node that stops leaves its groups to the members
// on the others.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';

import { startBroker, connect, end, type TestBroker } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort, TestNats } from '../helpers/nats.ts';

let nats: TestNats;
const nodes: TestBroker[] = [];

before(async () => {
  nats = await TestNats.start();
  // Node a answers the admin API (its counters in /api/cluster/status and /prometheus).
  nodes.push(await startAdminBroker({ nodeName: 'share-a', cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  for (const name of ['share-b', 'share-c']) {
    nodes.push(await startBroker({ nodeName: name, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 3), { message: 'every node sees three running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

/** A client subscribed to `filter` on `node`, keeping every payload it receives by topic prefix. */
interface Member {
  name: string;
  client: MqttClient;
  got: string[];
}

async function member(name: string, node: TestBroker, filter: string): Promise<Member> {
  const client = await connect(node.url, { clientId: `${name}-${Math.random().toString(36).slice(2, 8)}` });
  const m: Member = { name, client, got: [] };
  client.on('message', (_topic, payload) => m.got.push(payload.toString()));
  await client.subscribeAsync(filter, { qos: 1 });
  return m;
}

const ofRun = (m: Member, run: string) => m.got.filter((p) => p.startsWith(`${run}:`));
const total = (ms: Member[], run: string) => ms.reduce((n, m) => n + ofRun(m, run).length, 0);

/** Publishes probes on `pub` until every member has received one: the groups' interest is known
 * on the publishing node (and each member there is picked in turn). Answers how many it sent. */
async function probeUntilAll(pub: MqttClient, topic: string, members: Member[], run: string): Promise<number> {
  let i = 0;
  await waitFor(async () => {
    for (let k = 0; k < 6; k++) await pub.publishAsync(topic, `${run}:${i++}`, { qos: 1 });
    return members.every((m) => ofRun(m, run).length > 0);
  }, { interval: 100, message: `every member reached by the probes of ${run}` });
  return i;
}

/** Every payload of `run` across the members: exactly `n` distinct, each once. */
async function exactlyOnce(members: Member[], run: string, n: number): Promise<void> {
  await waitFor(() => total(members, run) >= n, { message: `${n} messages of ${run} received by the group` });
  // Nothing more comes: no duplicate on its way (the messages crossed before the last one came).
  const settled = total(members, run);
  // A window on purpose: a duplicate would come from another node, so no marker can order it.
  await new Promise((r) => setTimeout(r, 300));
  const all = members.flatMap((m) => ofRun(m, run));
  assert.equal(all.length, settled);
  assert.equal(all.length, n, `${run}: one member each, ${members.map((m) => `${m.name}=${ofRun(m, run).length}`).join(' ')}`);
  assert.equal(new Set(all).size, n, `${run}: no duplicates`);
}

test('each message reaches one member of each group cluster-wide; plain subscribers get every message once', async () => {
  const [a, b, c] = nodes;
  const g = [await member('g-a', a, '$share/g/jobs/#'), await member('g-b1', b, '$share/g/jobs/#'), await member('g-b2', b, '$share/g/jobs/#'), await member('g-c', c, '$share/g/jobs/#')];
  const h = [await member('h-b', b, '$share/h/jobs/+/+'), await member('h-c', c, '$share/h/jobs/+/+')];
  const q = [await member('q-a', a, '$queue/jobs/#'), await member('q-c', c, '$queue/jobs/#')];
  const plain = await member('plain-b', b, 'jobs/#');
  const pubA = await connect(a.url);
  const pubB = await connect(b.url);
  const everyone = [...g, ...h, ...q, plain];
  await probeUntilAll(pubA, 'jobs/probe/a', everyone, 'probe-a');
  await probeUntilAll(pubB, 'jobs/probe/b', everyone.filter((m) => m !== plain), 'probe-b');
  // What a sends b arrives in order: once a marker is there, no probe from a is on its way to b.
  await pubA.publishAsync('jobs/marker', 'marker:a', { qos: 1 });
  await waitFor(() => ofRun(plain, 'marker').length === 1, { message: 'the marker from a arrived on b' });

  const n = 60;
  const sentBefore = a.cluster!.counters.sentMessages;
  const bFromABefore = b.cluster!.counters.receivedMessages;
  for (let i = 0; i < n; i++) await pubA.publishAsync(`jobs/x/${i}`, `run-a:${i}`, { qos: 1 });
  await exactlyOnce(g, 'run-a', n);
  await exactlyOnce(h, 'run-a', n);
  await exactlyOnce(q, 'run-a', n);
  assert.equal(ofRun(plain, 'run-a').length, n, 'the plain subscriber on b gets every message');
  assert.equal(new Set(ofRun(plain, 'run-a')).size, n);
  for (const m of [...g, ...h, ...q]) assert.ok(ofRun(m, 'run-a').length > 0, `${m.name} got a share of the messages published on a`);
  // Each message crossed to b once (plain interest and the groups it was picked for, merged), and
  // to c at most once.
  assert.equal(b.cluster!.counters.receivedMessages - bFromABefore, n, 'each message crossed to b once');
  assert.ok(a.cluster!.counters.sentMessages - sentBefore <= 2 * n);
  assert.ok(a.cluster!.counters.sharedSent > 0 && b.cluster!.counters.sharedReceived > 0 && c.cluster!.counters.sharedReceived > 0);

  // QoS 0 crosses over core NATS (QoS 1/2 through the QoS stream): the same, from b.
  for (let i = 0; i < n; i++) pubB.publish(`jobs/z/${i}`, `run-b0:${i}`, { qos: 0 });
  await exactlyOnce(g, 'run-b0', n);
  await exactlyOnce(h, 'run-b0', n);
  await exactlyOnce(q, 'run-b0', n);
  await waitFor(() => ofRun(plain, 'run-b0').length === n, { message: 'the plain subscriber on b gets every QoS 0 message' });
  for (const m of [...g, ...h, ...q]) assert.ok(ofRun(m, 'run-b0').length > 0, `${m.name} got a share of the QoS 0 messages published on b`);

  for (let i = 0; i < n; i++) await pubB.publishAsync(`jobs/y/${i}`, `run-b:${i}`, { qos: 1 });
  await exactlyOnce(g, 'run-b', n);
  await exactlyOnce(h, 'run-b', n);
  await exactlyOnce(q, 'run-b', n);
  assert.equal(ofRun(plain, 'run-b').length, n);
  for (const m of [...g, ...h, ...q]) assert.ok(ofRun(m, 'run-b').length > 0, `${m.name} got a share of the messages published on b`);
  await end(...everyone.map((m) => m.client), pubA, pubB);

  // The counters, in /api/cluster/status and /prometheus.
  const admin = a as AdminBroker;
  const status = await admin.api('GET', '/api/cluster/status', { as: 'viewer' });
  const counters = (status.json as { data: { counters: { sharedSent: number; sharedReceived: number; sharedNoMember: number } } }).data.counters;
  assert.ok(counters.sharedSent > 0 && counters.sharedReceived > 0, JSON.stringify(counters));
  const prom = await admin.api('GET', '/prometheus', { as: 'viewer' });
  const sent = /^spindle_cluster_shared_total\{event="sent",node="share-a"\} (\d+)/m.exec(prom.text);
  assert.ok(sent && Number(sent[1]) > 0, prom.text.split('\n').filter((l) => l.includes('cluster_shared')).join('\n'));
  assert.match(prom.text, /^spindle_cluster_shared_total\{event="no_member",node="share-a"\} \d+/m);
});

test('a pick for a node whose last member just left reaches no one and is counted; then the members elsewhere get everything', async () => {
  const [a, b, c] = nodes;
  const onA = await member('w-a', a, '$share/w/work/#');
  const marker = await member('marker-c', c, 'work/marker');
  const pub = await connect(b.url);
  const missed = () => b.cluster!.counters.sharedNoMember + c.cluster!.counters.sharedNoMember;
  let round = 0;
  // Publishing on b right after c's last member left: b picks c until c's interest change reaches
  // it (up to 50 ms and a hop), and those messages find no member on c. Repeated until it happens.
  await waitFor(async () => {
    round++;
    const onC = await member(`w-c${round}`, c, '$share/w/work/#');
    await probeUntilAll(pub, 'work/probe', [onA, onC], `probe${round}`);
    // What b sends c arrives in order: once the marker is there, no probe is on its way to c.
    await pub.publishAsync('work/marker', `marker${round}:x`, { qos: 1 });
    await waitFor(() => ofRun(marker, `marker${round}`).length === 1, { message: 'the marker from b arrived on c' });
    const missedBefore = missed();
    await onC.client.unsubscribeAsync('$share/w/work/#');
    const run = `race${round}`;
    await Promise.all(Array.from({ length: 20 }, (_, i) => pub.publishAsync('work/x', `${run}:${i}`, { qos: 1 })));
    // Every message of the burst reached a member or was counted as reaching none.
    await waitFor(() => total([onA, onC], run) + missed() - missedBefore === 20, { message: `${run}: received + counted === 20` });
    await onC.client.endAsync();
    assert.equal(ofRun(onC, run).length, 0, 'nothing for a member that left');
    return missed() > missedBefore;
  }, { interval: 0, message: 'a pick of c after its last member left, counted' });
  // Once b knows c left, every message goes to a's member.
  let k = 0;
  await waitFor(async () => {
    const before = ofRun(onA, 'known').length;
    for (let i = 0; i < 4; i++) await pub.publishAsync('work/x', `known:${k++}`, { qos: 1 });
    return waitFor(() => ofRun(onA, 'known').length >= before + 4 || null, { timeout: 1000 }).then(() => true, () => false);
  }, { interval: 100, message: 'c left the group, known on b' });
  const n = 30;
  for (let i = 0; i < n; i++) await pub.publishAsync('work/x', `after:${i}`, { qos: 1 });
  await exactlyOnce([onA], 'after', n);
  await end(onA.client, marker.client, pub);
});

// Last: it stops node c.
test('a member\'s node stopped: the remaining members get all later messages', async () => {
  const [a, b, c] = nodes;
  const members = [await member('s-a', a, '$share/s/stop/#'), await member('s-b', b, '$share/s/stop/#'), await member('s-c', c, '$share/s/stop/#')];
  const pub = await connect(a.url);
  await probeUntilAll(pub, 'stop/probe', members, 'probe');
  await members[2].client.endAsync(true);
  await c.stop();
  nodes.pop();
  await waitFor(() => [a, b].every((n) => n.cluster!.nodes().find((x) => x.id === 'share-c')?.status === 'down'), { timeout: 15_000, message: 'c marked down on a and b' });
  const n = 40;
  for (let i = 0; i < n; i++) await pub.publishAsync(`stop/${i}`, `late:${i}`, { qos: 1 });
  const left = members.slice(0, 2);
  await exactlyOnce(left, 'late', n);
  for (const m of left) assert.ok(ofRun(m, 'late').length > 0, `${m.name} got a share`);
  await end(members[0].client, members[1].client, pub);
});
