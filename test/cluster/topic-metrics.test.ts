// Topic metrics and slow subscriber settings across a two-node cluster (the test's own nats-server
// with JetStream): a filter created through one node's admin API counts on the other node's
// workers and either node's figures count both nodes' messages, a reset and a delete there reach
// it too; slow subscriber settings set on one node are in force on the other, and either node
// lists and clears the cluster's slow subscribers.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

const JSON_TYPE = { 'content-type': 'application/json' };
const F = encodeURIComponent('cl/+');

let nats: TestNats;
const nodes: AdminBroker[] = [];

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  for (const name of ['tm-a', 'tm-b']) {
    nodes.push(await startAdminBroker({ nodeName: name, workers: 1, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

test('a filter created on one node counts on the other; reset and delete reach it', async () => {
  const [a, b] = nodes;
  const r = await a.api('POST', '/api/topic-metrics', { body: { filter: 'cl/+' } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => (await b.api('GET', `/api/topic-metrics/${F}`)).status === 200, { message: 'the filter reached node b' });
  const sub = await connect(b.url, { protocolVersion: 5 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  try {
    await sub.subscribeAsync('cl/#', { qos: 1 });
    const got = nextMessages(sub, 2);
    await pub.publishAsync('cl/x', 'abc', { qos: 1 });
    await pub.publishAsync('cl/x/deeper', 'no', { qos: 1 }); // not matched by cl/+
    await got;
  } finally {
    await end(sub, pub);
  }
  const m = await waitFor(async () => {
    const x = (await b.api('GET', `/api/topic-metrics/${F}`)).json.data.metrics;
    return x.messages.out.total === 1 ? x : null;
  });
  assert.equal(m.messages.in.qos1, 1);
  assert.equal(m.bytes.in.total, 3);
  assert.match((await b.api('GET', '/prometheus')).text, /^spindle_topic_messages_total\{filter="cl\/\+",direction="in",qos="1",node="tm-b"\} 1$/m);
  // Node a answers for the cluster: node b's counts are in its figures.
  const fromA = await waitFor(async () => {
    const r = (await a.api('GET', `/api/topic-metrics/${F}`)).json;
    return r.data.metrics.messages.out.total === 1 ? r : null;
  }, { message: "node a's figures count node b's messages" });
  assert.equal(fromA.data.metrics.messages.in.qos1, 1);
  assert.equal(fromA.data.metrics.bytes.in.total, 3);
  assert.deepEqual(fromA.nodesMissing, []);
  // Its Prometheus series stay its own (summing the nodes' series counts each message once).
  assert.doesNotMatch((await a.api('GET', '/prometheus')).text, /^spindle_topic_messages_total\{filter="cl\/\+",direction="in",qos="1",node="tm-a"\} [1-9]/m);

  assert.equal((await a.api('PUT', `/api/topic-metrics/${F}/reset`, { headers: JSON_TYPE })).status, 200);
  await waitFor(async () => (await b.api('GET', `/api/topic-metrics/${F}`)).json.data.metrics.messages.in.total === 0, { message: 'the reset reached node b' });
  assert.equal((await a.api('DELETE', `/api/topic-metrics/${F}`, { headers: JSON_TYPE })).status, 200);
  await waitFor(async () => (await b.api('GET', `/api/topic-metrics/${F}`)).status === 404, { message: 'the delete reached node b' });
});

test('slow subscriber settings set on one node are in force on the other', async () => {
  const [a, b] = nodes;
  const r = await a.api('PUT', '/api/slow-subscriptions/settings', { body: { enable: true, threshold: 50, topK: 5 } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => {
    const s = (await b.api('GET', '/api/slow-subscriptions/settings')).json.data;
    return s.enable === true && s.threshold === 50 && s.topK === 5 && s.source === 'api';
  }, { message: 'the settings reached node b' });
});

test("either node lists the cluster's slow subscribers, and clearing the list on one clears it on the other", async () => {
  const [a, b] = nodes;
  const r = await a.api('PUT', '/api/slow-subscriptions/settings', { body: { enable: true, threshold: 50, topK: 5 } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => (await b.api('GET', '/api/slow-subscriptions/settings')).json.data.threshold === 50, { message: 'the settings reached node b' });
  // A subscriber on node b whose PUBACKs leave 200 ms after each PUBLISH.
  const slow = await connect(b.url, { clientId: 'cl-slow', protocolVersion: 5, customHandleAcks: (_topic, _message, _packet, done) => setTimeout(() => done(0), 200) });
  const pub = await connect(b.url, { protocolVersion: 5 });
  try {
    await slow.subscribeAsync('slow/cl', { qos: 1 });
    const got = nextMessages(slow, 1);
    await pub.publishAsync('slow/cl', 'x', { qos: 1 });
    await got;
    const list = await waitFor(async () => {
      const x = (await a.api('GET', '/api/slow-subscriptions')).json;
      return (x.data as { clientId: string }[]).some((e) => e.clientId === 'cl-slow') ? x : null;
    }, { message: "node a lists node b's slow subscriber" });
    assert.deepEqual(list.nodesMissing, []);
    const entry = (list.data as { clientId: string; topic: string; latency: number }[]).find((e) => e.clientId === 'cl-slow')!;
    assert.equal(entry.topic, 'slow/cl');
    assert.ok(entry.latency >= 150, `latency ${entry.latency} ms`);
  } finally {
    await end(slow, pub);
  }
  const cleared = await a.api('DELETE', '/api/slow-subscriptions', { headers: JSON_TYPE });
  assert.equal(cleared.status, 200, cleared.text);
  assert.deepEqual(cleared.json.nodesMissing, []);
  assert.deepEqual((await b.api('GET', '/api/slow-subscriptions')).json.data, [], 'cleared on node b too');
});
