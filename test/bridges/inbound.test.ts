// InboundPublisher: when a message from the remote is acknowledged. QoS 1/2 only after the batch
// it is in was published here; QoS 0 at once until HIGH_WATER wait; a failed publish is retried
// in order and acknowledges nothing meanwhile. The host here is the supervisor's publishBatch
// seam, driven by the test (the end-to-end path runs in bridge.test.ts against Mosquitto).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import type { IPublishPacket } from 'mqtt';

import { InboundPublisher, HIGH_WATER } from '../../src/bridges/inbound.ts';
import { BridgeCounters } from '../../src/bridges/counters.ts';
import { TopicMap } from '../../src/bridges/topic-map.ts';
import type { BatchMessage } from '../../src/worker/messages.ts';
import { waitFor } from '../helpers/wait.ts';

function packet(topic: string, qos: 0 | 1 | 2, payload = 'x'): IPublishPacket {
  return { cmd: 'publish', topic, payload: Buffer.from(payload), qos, retain: false, dup: false, messageId: qos ? 1 : undefined };
}

interface Call {
  messages: BatchMessage[];
  publisher: number;
  resolve(): void;
  reject(err: Error): void;
}

function harness() {
  const calls: Call[] = [];
  const failures: string[] = [];
  const counters = new BridgeCounters();
  const map = new TopicMap([{ filter: 'in/#', qos: 1, localPrefix: 'here/', remotePrefix: '' }]);
  const inbound = new InboundPublisher(
    {
      publishBatch: (messages, publisher) => new Promise((resolve, reject) => calls.push({ messages, publisher, resolve: () => resolve(messages.map(() => 1)), reject })),
      failed: (err) => failures.push(err.message),
    },
    77,
    map,
    counters,
  );
  return { calls, failures, counters, inbound };
}

test('a QoS 1 message is acknowledged only once its batch is published, as the bridge (its handle)', async () => {
  const h = harness();
  const acked: string[] = [];
  h.inbound.accept(packet('in/a', 0), () => acked.push('a'));
  h.inbound.accept(packet('in/b', 1), () => acked.push('b'));
  assert.deepEqual(acked, ['a'], 'QoS 0 at once, QoS 1 not yet');
  await waitFor(() => h.calls.length === 1);
  const call = h.calls[0];
  assert.equal(call.publisher, 77);
  assert.deepEqual(call.messages.map((m) => [m.topic, m.qos]), [['here/in/a', 0], ['here/in/b', 1]]);
  assert.deepEqual(acked, ['a']);
  call.resolve();
  await waitFor(() => acked.length === 2);
  assert.deepEqual(acked, ['a', 'b']);
  assert.equal(h.counters.in, 2);
});

test('a failed publish is retried in order, before what came after, and acknowledges nothing meanwhile', async () => {
  const h = harness();
  const acked: string[] = [];
  h.inbound.accept(packet('in/1', 1), () => acked.push('1'));
  await waitFor(() => h.calls.length === 1);
  h.inbound.accept(packet('in/2', 1), () => acked.push('2'));
  h.calls[0].reject(new Error('worker 0 is not running'));
  await waitFor(() => h.calls.length === 2, { message: 'retried after the backoff' });
  assert.deepEqual(h.calls[1].messages.map((m) => m.topic), ['here/in/1', 'here/in/2']);
  assert.deepEqual(acked, []);
  assert.deepEqual(h.failures, ['worker 0 is not running']);
  h.calls[1].resolve();
  await waitFor(() => acked.length === 2);
  assert.deepEqual(acked, ['1', '2']);
});

test('QoS 0 past HIGH_WATER waits for its batch (backpressure); an unmapped topic is dropped, counted and acknowledged', async () => {
  const h = harness();
  let acked = 0;
  h.inbound.accept(packet('in/first', 0), () => acked++);
  await waitFor(() => h.calls.length === 1);
  // While that batch is out, HIGH_WATER + 5 more arrive: the last 5 are held.
  for (let i = 0; i < HIGH_WATER + 5; i++) h.inbound.accept(packet('in/q0', 0), () => acked++);
  assert.equal(acked, 1 + HIGH_WATER);
  h.calls[0].resolve();
  await waitFor(() => h.calls.length === 2);
  h.calls[1].resolve();
  await waitFor(() => acked === HIGH_WATER + 6);

  h.inbound.accept(packet('elsewhere/x', 1), () => acked++);
  assert.equal(acked, HIGH_WATER + 7);
  assert.equal(h.counters.dropped.unmapped, 1);
});

test('stopped: nothing more is published or acknowledged (the remote keeps it)', async () => {
  const h = harness();
  let acked = 0;
  h.inbound.accept(packet('in/x', 1), () => acked++);
  await waitFor(() => h.calls.length === 1);
  h.inbound.stop();
  h.calls[0].resolve();
  h.inbound.accept(packet('in/y', 1), () => acked++);
  await new Promise((r) => setImmediate(r));
  assert.equal(acked, 0);
  assert.equal(h.calls.length, 1);
});
