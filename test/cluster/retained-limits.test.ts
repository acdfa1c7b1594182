// Retained-message limits in a cluster of two Spindle nodes over the test's own nats-server: each
// node holds the whole retained set (src/cluster/retained.ts), so retained messages set on node A
// count against the limit on node B, whose client then gets 0x97 for a new topic while a replace
// still works and reaches A; the default expiry travels with the replicated copy.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';

import { startBroker, connect, end, type TestBroker } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort, TestNats } from '../helpers/nats.ts';

let nats: TestNats;
const nodes: TestBroker[] = [];

before(async () => {
  nats = await TestNats.start();
  for (const name of ['lim-a', 'lim-b']) {
    nodes.push(await startBroker({
      nodeName: name,
      cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` },
      limits: { maxRetainedMessages: 2, retainedDefaultExpiry: 3600 },
    }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

async function publishCode(c: MqttClient, topic: string, payload: string): Promise<number | undefined> {
  try {
    await c.publishAsync(topic, payload, { qos: 1, retain: true });
    return undefined;
  } catch (err) {
    return (err as { code?: number }).code;
  }
}

/** The payload and expiry of a node's retained record (layout of src/broker/message.ts). */
function record(n: TestBroker, topic: string): { payload: string; expiresAt: number } | null {
  const rec = n.supervisor.retained.get(topic);
  if (rec === null) return null;
  const start = 32 + rec.readUInt16LE(2) + rec.readUInt32LE(4);
  return { payload: rec.subarray(start).toString(), expiresAt: rec.readDoubleLE(16) };
}

test('retained messages from node A fill the limit on node B: a new topic there gets 0x97, a replace works and reaches A', async () => {
  const [a, b] = nodes;
  const pubA = await connect(a.url, { protocolVersion: 5 });
  const pubB = await connect(b.url, { protocolVersion: 5 });
  try {
    assert.equal(await publishCode(pubA, 'cl/1', 'one'), undefined);
    assert.equal(await publishCode(pubA, 'cl/2', 'two'), undefined);
    await waitFor(() => record(b, 'cl/1') !== null && record(b, 'cl/2') !== null, { message: 'B holds what A retained' });
    const replicated = record(b, 'cl/1')!;
    assert.ok(replicated.expiresAt > Date.now() + 3500_000, `the default expiry travels with the copy: ${replicated.expiresAt}`);
    assert.equal(b.supervisor.retained.counted, 2);

    assert.equal(await publishCode(pubB, 'cl/3', 'three'), 0x97);
    assert.equal(record(b, 'cl/3'), null);
    assert.equal(await publishCode(pubB, 'cl/1', 'replaced on b'), undefined);
    await waitFor(() => record(a, 'cl/1')?.payload === 'replaced on b', { message: 'A gets the replace made on B' });
    assert.equal(record(a, 'cl/3'), null, 'the refused message was not sent on');
  } finally {
    await end(pubA, pubB);
  }
});
