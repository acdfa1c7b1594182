// handle_puback, handle_pubrec, handle_pubrel, handle_pubcomp unit tests: the QoS 1 and 2 flows
// towards the client, the window and the queue behind it.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { engine, connected } from './common.ts';

test('PUBACK frees the packet id and the next queued message goes out (Receive Maximum 1)', async () => {
  const e = engine();
  const sub = await connected(e, 's', { properties: { receiveMaximum: 1 } });
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'w', qos: 1 }] });
  const pub = await connected(e, 'p');
  await pub.send(...[1, 2].map((id) => ({ cmd: 'publish', topic: 'w', payload: Buffer.from(String(id)), qos: 1, messageId: id })));
  assert.deepEqual(sub.packets('publish').map((p) => p.payload.toString()), ['1']);
  assert.equal(sub.session?.queue.length, 1);
  await sub.send({ cmd: 'puback', messageId: sub.packets('publish')[0].messageId });
  assert.deepEqual(sub.packets('publish').map((p) => p.payload.toString()), ['1', '2']);
  assert.equal(sub.session?.inflight.size, 1);
});

test('QoS 2 towards the client: PUBREC is answered with PUBREL, PUBCOMP ends the flow [MQTT-4.3.3-4]', async () => {
  const e = engine();
  const sub = await connected(e, 's');
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'x', qos: 2 }] });
  const pub = await connected(e, 'p');
  await pub.send({ cmd: 'publish', topic: 'x', payload: Buffer.from('m'), qos: 2, messageId: 1 });
  const id = sub.packets('publish')[0].messageId;
  await sub.send({ cmd: 'pubrec', messageId: id });
  assert.equal(sub.packets('pubrel')[0].messageId, id);
  assert.equal(sub.session?.inflight.get(id!)?.state, 'pubrel');
  await sub.send({ cmd: 'pubcomp', messageId: id });
  assert.equal(sub.session?.inflight.size, 0);
});

test('a v5 PUBREC with an error reason ends the flow without PUBREL', async () => {
  const e = engine();
  const sub = await connected(e, 's');
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'x', qos: 2 }] });
  const pub = await connected(e, 'p');
  await pub.send({ cmd: 'publish', topic: 'x', payload: Buffer.from('m'), qos: 2, messageId: 1 });
  await sub.send({ cmd: 'pubrec', messageId: sub.packets('publish')[0].messageId, reasonCode: 0x80 });
  assert.equal(sub.packets('pubrel').length, 0);
  assert.equal(sub.session?.inflight.size, 0);
});

test('PUBREL for an unknown packet id is answered PUBCOMP 0x92; PUBREC for one, PUBREL 0x92 [MQTT-4.3.3-11 .. MQTT-4.3.3-12]', async () => {
  const e = engine();
  const c = await connected(e, 'c');
  await c.send({ cmd: 'pubrel', messageId: 77 }, { cmd: 'pubrec', messageId: 78 });
  assert.equal(c.packets('pubcomp')[0].reasonCode, 0x92);
  assert.equal(c.packets('pubrel')[0].reasonCode, 0x92);
});
