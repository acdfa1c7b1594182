// Regression tests for each worker's remembered match results (src/router/worker-router.ts):
// a subscription made, removed or moved on any worker is seen by the very next publish on every
// worker; No Local and shared subscriptions are never served from memory.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';

import { startBroker, connect, nextMessages, type TestBroker } from '../helpers/broker.ts';

let b: TestBroker;
const clients: MqttClient[] = [];
before(async () => {
  b = await startBroker({ workers: 2 });
});
after(async () => {
  for (const c of clients) c.end(true);
  await b.stop();
});

async function client(options: Parameters<typeof connect>[1] = {}): Promise<MqttClient> {
  const c = await connect(b.url, options);
  clients.push(c);
  return c;
}

/** Resolves true when `c` gets a message on `topic` within `ms`. */
function receives(c: MqttClient, topic: string, ms = 400): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      c.off('message', on);
      resolve(false);
    }, ms);
    function on(t: string) {
      if (t !== topic) return;
      clearTimeout(timer);
      c.off('message', on);
      resolve(true);
    }
    c.on('message', on);
  });
}

test('a new subscriber on either worker gets the next message of a topic already routed many times', async () => {
  // Publishers on both workers (connections spread over them) warm their memory of the topic.
  const pubs = await Promise.all([1, 2, 3, 4].map(() => client()));
  for (let round = 0; round < 6; round++) {
    for (const p of pubs) await p.publishAsync('cache/warm', `w${round}`);
    const sub = await client();
    await sub.subscribeAsync('cache/warm');
    for (const [i, p] of pubs.entries()) {
      const got = receives(sub, 'cache/warm');
      await p.publishAsync('cache/warm', `after-${round}-${i}`);
      assert.ok(await got, `subscriber ${round} gets publisher ${i}'s next message`);
    }
  }
});

test('after an unsubscribe (or a disconnect) the next message is not delivered', async () => {
  const pubs = await Promise.all([1, 2, 3].map(() => client()));
  const sub = await client();
  await sub.subscribeAsync('cache/gone');
  for (const p of pubs) {
    const got = receives(sub, 'cache/gone');
    await p.publishAsync('cache/gone', 'x');
    assert.ok(await got);
  }
  await sub.unsubscribeAsync('cache/gone');
  for (const p of pubs) {
    const got = receives(sub, 'cache/gone', 200);
    await p.publishAsync('cache/gone', 'y');
    assert.equal(await got, false, 'unsubscribed: nothing arrives');
  }
});

test('No Local holds for a publisher whose topic is remembered from other publishers', async () => {
  const other = await client({ protocolVersion: 5 });
  const watcher = await client({ protocolVersion: 5 });
  await watcher.subscribeAsync('cache/nl');
  for (let i = 0; i < 5; i++) await other.publishAsync('cache/nl', 'warm');
  const self = await client({ protocolVersion: 5 });
  await self.subscribeAsync('cache/nl', { qos: 0, nl: true });
  const selfGot = receives(self, 'cache/nl', 300);
  const watcherGot = receives(watcher, 'cache/nl');
  await self.publishAsync('cache/nl', 'mine');
  assert.equal(await selfGot, false, '[MQTT-3.8.3-3] not sent back to its publisher');
  assert.ok(await watcherGot);
  const selfFromOther = receives(self, 'cache/nl');
  await other.publishAsync('cache/nl', 'theirs');
  assert.ok(await selfFromOther, 'messages of others still arrive');
});

test('a shared subscription still alternates between its members', async () => {
  const a = await client({ protocolVersion: 5 });
  const c = await client({ protocolVersion: 5 });
  await a.subscribeAsync('$share/g/cache/shared');
  await c.subscribeAsync('$share/g/cache/shared');
  const pub = await client({ protocolVersion: 5 });
  const gotA = nextMessages(a, 4, 3000).catch(() => []);
  const gotC = nextMessages(c, 4, 3000).catch(() => []);
  for (let i = 0; i < 8; i++) await pub.publishAsync('cache/shared', String(i));
  const [ra, rc] = await Promise.all([gotA, gotC]);
  assert.equal(ra.length + rc.length, 8, 'each message to exactly one member');
  assert.equal(ra.length, 4, 'round robin: half each');
});
