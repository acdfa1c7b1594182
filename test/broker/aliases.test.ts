// Topic aliases in both directions (MQTT 5.0 section 3.3.2.3.4): what a client sets is resolved
// per connection and bounded by the broker's Topic Alias Maximum; what the broker sets is bounded
// by the client's, and starts afresh on every connection.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';
import { rawConnect, type RawClient } from '../helpers/raw.ts';

let broker: TestBroker;
const MAX = 4;
before(async () => { broker = await startBroker({ limits: { topicAliasMaximum: MAX } }); });
after(async () => { await broker.stop(); });

/** A PUBLISH packet (QoS 0, v5) with a Topic Alias, written by hand so any alias value goes out. */
function aliasedPublish(topic: string, alias: number, payload: string): Buffer {
  const t = Buffer.from(topic);
  const p = Buffer.from(payload);
  const props = Buffer.from([0x23, alias >> 8, alias & 0xff]);
  const body = Buffer.concat([Buffer.from([t.length >> 8, t.length & 0xff]), t, Buffer.from([props.length]), props, p]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

test('v5 CONNACK advertises the configured Topic Alias Maximum', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'al-connack' });
  assert.equal((c.connack as { properties?: { topicAliasMaximum?: number } }).properties?.topicAliasMaximum, MAX);
  c.end();
});

test('a topic alias set with a topic is resolved when a later PUBLISH carries the alias only [MQTT-3.3.2-12]', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'al-in-sub' });
  await sub.subscribeAsync('alias/in/#', { qos: 0 });
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'al-in-pub' });
  const w = nextMessages(sub, 3);
  c.send(aliasedPublish('alias/in/one', 1, 'a'));
  c.send(aliasedPublish('', 1, 'b'));
  c.send(aliasedPublish('alias/in/two', 1, 'c')); // an alias may be set again to another topic
  const got = await w;
  assert.deepEqual(got.map((g) => `${g.topic}=${g.payload}`), ['alias/in/one=a', 'alias/in/one=b', 'alias/in/two=c']);
  // The subscriber gets no alias it did not ask for.
  assert.ok(got.every((g) => g.packet.properties?.topicAlias === undefined));
  c.end();
  await end(sub);
});

for (const [what, alias] of [['0', 0], ['above the Topic Alias Maximum', MAX + 1]] as const) {
  test(`a topic alias of ${what} gets DISCONNECT 0x94 [MQTT-3.3.2-8][MQTT-3.3.2-9]`, async () => {
    const c = await rawConnect(broker.ports.tcp!, { clientId: `al-bad-${alias}` });
    c.send(aliasedPublish('alias/bad', alias, 'x'));
    const d = await c.next('disconnect');
    assert.equal((d as { reasonCode?: number }).reasonCode, 0x94);
    await c.closed();
  });
}

test('an alias-only PUBLISH with an alias the client never set is a protocol error (DISCONNECT 0x82) [MQTT-3.3.2-12 context]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'al-unknown' });
  c.send(aliasedPublish('', 3, 'x'));
  const d = await c.next('disconnect');
  assert.equal((d as { reasonCode?: number }).reasonCode, 0x82);
  await c.closed();
});

test('client aliases belong to the connection: after a reconnect an old alias is unknown [MQTT-3.3.2-10]', async () => {
  let c = await rawConnect(broker.ports.tcp!, { clientId: 'al-conn', clean: false, properties: { sessionExpiryInterval: 60 } });
  c.send(aliasedPublish('alias/conn', 2, 'x'));
  c.send({ cmd: 'disconnect', reasonCode: 0 });
  await c.closed();
  c = await rawConnect(broker.ports.tcp!, { clientId: 'al-conn', clean: false, properties: { sessionExpiryInterval: 60 } });
  c.send(aliasedPublish('', 2, 'y'));
  const d = await c.next('disconnect');
  assert.equal((d as { reasonCode?: number }).reasonCode, 0x82);
  await c.closed();
});

interface RawPublish { topic: string; payload: Buffer; properties?: { topicAlias?: number } }

async function receive(c: RawClient, n: number): Promise<RawPublish[]> {
  const out: RawPublish[] = [];
  for (let i = 0; i < n; i++) out.push(await c.next('publish') as unknown as RawPublish);
  return out;
}

test('a client with Topic Alias Maximum > 0 gets aliases: the second message on a topic has an empty topic and the alias [MQTT-3.3.2-12]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'al-out', properties: { topicAliasMaximum: 10 } });
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'alias/out/#', qos: 0 }] });
  await c.next('suback');
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'al-out-pub' });
  for (const p of ['1', '2', '3']) await pub.publishAsync('alias/out/x', p, { qos: 0 });
  const got = await receive(c, 3);
  assert.equal(got[0].topic, 'alias/out/x');
  const alias = got[0].properties?.topicAlias;
  assert.ok(alias !== undefined && alias >= 1 && alias <= 10, `first message sets an alias (${alias})`);
  for (const m of got.slice(1)) {
    assert.equal(m.topic, '');
    assert.equal(m.properties?.topicAlias, alias);
  }
  assert.deepEqual(got.map((m) => m.payload.toString()), ['1', '2', '3']);
  c.end();
  await end(pub);
});

test('mqtt.js with topicAliasMaximum resolves the broker aliases to the right topics', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'al-mqttjs', properties: { topicAliasMaximum: 5 } });
  await sub.subscribeAsync('alias/js/#', { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'al-mqttjs-pub' });
  const w = nextMessages(sub, 4);
  for (const t of ['a', 'b', 'a', 'b']) await pub.publishAsync(`alias/js/${t}`, t, { qos: 1 });
  const got = await w;
  assert.deepEqual(got.map((g) => `${g.topic}=${g.payload}`), ['alias/js/a=a', 'alias/js/b=b', 'alias/js/a=a', 'alias/js/b=b']);
  assert.ok(got.every((g) => typeof g.packet.properties?.topicAlias === 'number'));
  await end(sub, pub);
});

test('the broker never uses an alias above the client Topic Alias Maximum [MQTT-3.3.2-11]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'al-max', properties: { topicAliasMaximum: 2 } });
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'alias/max/#', qos: 0 }] });
  await c.next('suback');
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'al-max-pub' });
  const topics = ['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd'];
  for (const t of topics) await pub.publishAsync(`alias/max/${t}`, t, { qos: 0 });
  const got = await receive(c, topics.length);
  const known = new Map<number, string>();
  for (const [i, m] of got.entries()) {
    const alias = m.properties?.topicAlias;
    if (alias !== undefined) {
      assert.ok(alias >= 1 && alias <= 2, `alias ${alias} within the client maximum`);
      if (m.topic !== '') known.set(alias, m.topic);
    } else {
      assert.notEqual(m.topic, '', 'a message without alias carries its topic');
    }
    const topic = m.topic !== '' ? m.topic : known.get(alias!);
    assert.equal(topic, `alias/max/${topics[i]}`);
  }
  c.end();
  await end(pub);
});

test('a client with Topic Alias Maximum 0 (absent) gets no aliases [MQTT-3.3.2-11]', async () => {
  const c = await rawConnect(broker.ports.tcp!, { clientId: 'al-none' });
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'alias/none', qos: 0 }] });
  await c.next('suback');
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'al-none-pub' });
  for (const p of ['1', '2']) await pub.publishAsync('alias/none', p, { qos: 0 });
  for (const m of await receive(c, 2)) {
    assert.equal(m.topic, 'alias/none');
    assert.equal(m.properties?.topicAlias, undefined);
  }
  c.end();
  await end(pub);
});

test('broker aliases do not survive a reconnect: the first message after it carries the topic [MQTT-3.3.2-7]', async () => {
  const opts = { clientId: 'al-reconn', clean: false, properties: { topicAliasMaximum: 10, sessionExpiryInterval: 60 } };
  let c = await rawConnect(broker.ports.tcp!, opts);
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'alias/re', qos: 1 }] });
  await c.next('suback');
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'al-reconn-pub' });
  await pub.publishAsync('alias/re', 'one', { qos: 0 });
  await pub.publishAsync('alias/re', 'two', { qos: 0 });
  const before = await receive(c, 2);
  assert.equal(before[1].topic, '');
  c.send({ cmd: 'disconnect', reasonCode: 0 });
  await c.closed();
  c = await rawConnect(broker.ports.tcp!, opts);
  assert.equal((c.connack as { sessionPresent?: boolean }).sessionPresent, true);
  await pub.publishAsync('alias/re', 'three', { qos: 0 });
  const [m] = await receive(c, 1);
  assert.equal(m.topic, 'alias/re');
  assert.equal(m.payload.toString(), 'three');
  c.send({ cmd: 'disconnect', reasonCode: 0, properties: { sessionExpiryInterval: 0 } });
  await c.closed();
  await end(pub);
});
