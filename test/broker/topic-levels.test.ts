// limits.maxTopicLevels: a topic name or filter with more levels is refused.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, nextMessages, noMessage, end, type TestBroker } from '../helpers/broker.ts';
import { rawConnect } from '../helpers/raw.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker({ limits: { maxTopicLevels: 3 } }); });
after(async () => { await broker.stop(); });

test('a filter with more levels than limits.maxTopicLevels gets SUBACK 0x8F (v5) / 0x80 (v3)', async () => {
  for (const [v, refused] of [[5, 0x8f], [4, 0x80]] as const) {
    const raw = await rawConnect(broker.ports.tcp!, { clientId: `levels-v${v}` }, v);
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'a/b/c', qos: 1 }, { topic: 'a/+/c/#', qos: 1 }] });
    const suback = await raw.next('suback');
    assert.deepEqual((suback as { granted?: number[] }).granted, [1, refused]);
    raw.end();
  }
});

test('a PUBLISH to a topic with too many levels is refused with 0x90 (v5) and not delivered', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'levels-sub' });
  await sub.subscribeAsync('#', { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'levels-pub' });
  const ack = await pub.publishAsync('x/y/z/w', 'too deep', { qos: 1 }).then(() => 0, (err: { code?: number }) => err.code);
  assert.equal(ack, 0x90);
  await noMessage(sub, 300);
  const ok = nextMessages(sub, 1);
  await pub.publishAsync('x/y/z', 'fine', { qos: 1 });
  assert.equal((await ok)[0].topic, 'x/y/z');
  await end(sub, pub);
});
