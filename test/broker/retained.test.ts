// Retained messages end to end: store, replace, clear; RETAIN on delivery; Retain As Published;
// Retain Handling; and the retained store seen from both workers.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, nextMessages, noMessage, end, type TestBroker } from '../helpers/broker.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker(); });
after(async () => { await broker.stop(); });

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: a retained message is stored and a new subscriber gets it with RETAIN=1 [MQTT-3.3.1-5][MQTT-3.3.1-9]`, async () => {
    const pub = await connect(broker.url, { protocolVersion, clientId: `r-store-pub-${protocolVersion}` });
    await pub.publishAsync(`ret/${protocolVersion}/a`, 'kept', { qos: 1, retain: true });
    const sub = await connect(broker.url, { protocolVersion, clientId: `r-store-sub-${protocolVersion}` });
    const w = nextMessages(sub, 1);
    await sub.subscribeAsync(`ret/${protocolVersion}/+`, { qos: 1 });
    const [m] = await w;
    assert.equal(m.topic, `ret/${protocolVersion}/a`);
    assert.equal(m.payload, 'kept');
    assert.equal(m.packet.retain, true);
    assert.equal(m.packet.qos, 1);
    await end(pub, sub);
  });

  test(`v${protocolVersion}: a new retained message replaces the old one, an empty payload clears it [MQTT-3.3.1-5][MQTT-3.3.1-6][MQTT-3.3.1-7]`, async () => {
    const topic = `ret/${protocolVersion}/replace`;
    const pub = await connect(broker.url, { protocolVersion, clientId: `r-repl-pub-${protocolVersion}` });
    await pub.publishAsync(topic, 'first', { qos: 1, retain: true });
    await pub.publishAsync(topic, 'second', { qos: 1, retain: true });
    const s1 = await connect(broker.url, { protocolVersion, clientId: `r-repl-s1-${protocolVersion}` });
    const w = nextMessages(s1, 1);
    await s1.subscribeAsync(topic, { qos: 1 });
    assert.equal((await w)[0].payload, 'second');
    await noMessage(s1, 200); // only one retained message per topic
    // The empty retained message is delivered to current subscribers, then nothing is kept.
    const live = nextMessages(s1, 1);
    await pub.publishAsync(topic, '', { qos: 1, retain: true });
    assert.equal((await live)[0].payload, '');
    const s2 = await connect(broker.url, { protocolVersion, clientId: `r-repl-s2-${protocolVersion}` });
    await s2.subscribeAsync(topic, { qos: 1 });
    await noMessage(s2, 300);
    await end(pub, s1, s2);
  });

  test(`v${protocolVersion}: a message forwarded to an existing subscription has RETAIN=0 [MQTT-3.3.1-12]`, async () => {
    const topic = `ret/${protocolVersion}/live`;
    const sub = await connect(broker.url, { protocolVersion, clientId: `r-live-sub-${protocolVersion}` });
    await sub.subscribeAsync(topic, { qos: 1 });
    const pub = await connect(broker.url, { protocolVersion, clientId: `r-live-pub-${protocolVersion}` });
    const w = nextMessages(sub, 1);
    await pub.publishAsync(topic, 'live', { qos: 1, retain: true });
    const [m] = await w;
    assert.equal(m.payload, 'live');
    assert.equal(m.packet.retain, false);
    await pub.publishAsync(topic, '', { qos: 1, retain: true });
    await end(pub, sub);
  });
}

test('v5: Retain As Published keeps RETAIN=1 on live forwarding [MQTT-3.3.1-13]', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'r-rap-sub' });
  await sub.subscribeAsync('rap/a', { qos: 1, rap: true });
  await sub.subscribeAsync('rap/b', { qos: 1, rap: false });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'r-rap-pub' });
  const w = nextMessages(sub, 3);
  await pub.publishAsync('rap/a', 'retained', { qos: 1, retain: true });
  await pub.publishAsync('rap/a', 'plain', { qos: 1, retain: false });
  await pub.publishAsync('rap/b', 'retained', { qos: 1, retain: true });
  const got = await w;
  assert.deepEqual(got.map((g) => [g.topic, g.payload, g.packet.retain]), [
    ['rap/a', 'retained', true],
    ['rap/a', 'plain', false],
    ['rap/b', 'retained', false],
  ]);
  await pub.publishAsync('rap/a', '', { qos: 1, retain: true });
  await pub.publishAsync('rap/b', '', { qos: 1, retain: true });
  await end(pub, sub);
});

test('v5: Retain Handling 0 sends retained messages on every SUBSCRIBE, also when the subscription existed [MQTT-3.3.1-9]', async () => {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'r-rh0-pub' });
  await pub.publishAsync('rh0/t', 'kept', { qos: 1, retain: true });
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'r-rh0-sub' });
  let w = nextMessages(sub, 1);
  await sub.subscribeAsync('rh0/t', { qos: 1, rh: 0 });
  assert.equal((await w)[0].packet.retain, true);
  w = nextMessages(sub, 1);
  await sub.subscribeAsync('rh0/t', { qos: 1, rh: 0 });
  assert.equal((await w)[0].payload, 'kept');
  await end(pub, sub);
});

test('v5: Retain Handling 1 sends retained messages only when the subscription is new [MQTT-3.3.1-10]', async () => {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'r-rh1-pub' });
  await pub.publishAsync('rh1/t', 'kept', { qos: 1, retain: true });
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'r-rh1-sub' });
  const w = nextMessages(sub, 1);
  await sub.subscribeAsync('rh1/t', { qos: 1, rh: 1 });
  assert.equal((await w)[0].payload, 'kept');
  await sub.subscribeAsync('rh1/t', { qos: 1, rh: 1 });
  await noMessage(sub, 300);
  await end(pub, sub);
});

test('v5: Retain Handling 2 sends no retained messages [MQTT-3.3.1-11]', async () => {
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'r-rh2-pub' });
  await pub.publishAsync('rh2/t', 'kept', { qos: 1, retain: true });
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'r-rh2-sub' });
  await sub.subscribeAsync('rh2/t', { qos: 1, rh: 2 });
  await noMessage(sub, 300);
  // ... but live messages still arrive.
  const w = nextMessages(sub, 1);
  await pub.publishAsync('rh2/t', 'live', { qos: 1 });
  assert.equal((await w)[0].payload, 'live');
  await end(pub, sub);
});

test('a retained message set on one worker is sent to subscribers on every worker [MQTT-3.3.1-9]', async () => {
  // Several publishers and subscribers: the kernel spreads them over both workers.
  const pubs = await Promise.all([0, 1, 2, 3].map((i) => connect(broker.url, { protocolVersion: 5, clientId: `r-xw-pub-${i}` })));
  await Promise.all(pubs.map((p, i) => p.publishAsync(`xw/${i}`, `v${i}`, { qos: 1, retain: true })));
  const subs = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => connect(broker.url, { protocolVersion: 4, clientId: `r-xw-sub-${i}` })));
  for (const s of subs) {
    const w = nextMessages(s, 4);
    await s.subscribeAsync('xw/#', { qos: 1 });
    const got = await w;
    assert.deepEqual(got.map((g) => `${g.topic}=${g.payload}`).sort(), ['xw/0=v0', 'xw/1=v1', 'xw/2=v2', 'xw/3=v3']);
    assert.ok(got.every((g) => g.packet.retain));
  }
  await end(...pubs, ...subs);
});
