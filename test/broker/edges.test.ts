// Protocol edges, end to end (issue 11): keep alive counts whole packets, a packet half received
// is bounded in time, WebSocket text frames, the client's Maximum Packet Size for CONNACK, what a
// connection published before its SUBSCRIBE, anonymous access with a username, `$` topics that
// are not the broker's, MQTT 3.1's PUBREL with DUP, Authentication Data without a method.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';

import WebSocket from 'ws';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker({ limits: { partialPacketTimeout: 1 } }); });
after(async () => { await broker.stop(); });

test('keep alive counts whole packets: a PUBLISH arriving a byte at a time does not keep the connection open [MQTT-3.1.2-22]', { timeout: 20_000 }, async () => {
  const { client } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'slow-bytes', keepalive: 1 });
  // A PUBLISH announcing 100 bytes, then a byte every 200 ms: never a whole packet.
  client.write([0x30, 100, 0, 3, 0x61, 0x2f, 0x62]);
  const started = Date.now();
  const drip = setInterval(() => { if (!client.closed) client.write([0x78]); }, 200);
  try {
    await client.waitClosed(6000);
  } finally {
    clearInterval(drip);
  }
  // 1.5 x keep alive without a whole packet (the elapsed time is what this test is about).
  const took = Date.now() - started;
  assert.ok(took >= 1300 && took < 4000, `closed after ${took} ms`);
});

test('without keep alive, a packet half received for limits.partialPacketTimeout closes the connection', { timeout: 20_000 }, async () => {
  const { client } = await RawClient.connect(broker.url, { protocolVersion: 4, clientId: 'partial', keepalive: 0 });
  client.write([0x30, 100, 0, 3]);
  const started = Date.now();
  await client.waitClosed(6000);
  assert.ok(Date.now() - started >= 900, 'not before the timeout');
});

test('a WebSocket text frame closes the connection [MQTT-6.0.0-1]', async () => {
  const ws = new WebSocket(broker.wsUrl, 'mqtt');
  await once(ws, 'open');
  ws.send(Buffer.from([0x10, 0x0c, 0, 4, 0x4d, 0x51, 0x54, 0x54, 4, 2, 0, 60, 0, 0]));
  await once(ws, 'message'); // CONNACK, in a binary frame
  const closed = once(ws, 'close').then(([code]) => code as number);
  // A valid QoS 0 PUBLISH to a/b whose bytes are valid UTF-8, sent as a text frame.
  ws.send(String.fromCharCode(0x30, 5, 0, 3, 0x61, 0x2f, 0x62));
  const code = await Promise.race([closed, new Promise<string>((r) => setTimeout(() => r('still open after 3 s'), 3000))]);
  assert.equal(code, 1000);
});

test('CONNACK fits the client\'s Maximum Packet Size of 20 bytes [MQTT-3.1.2-24]', async () => {
  const c = await RawClient.open(broker.url, 5);
  const frames: Buffer[] = [];
  c.socket.on('data', (b) => frames.push(b));
  c.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'tiny', clean: true, keepalive: 60, properties: { maximumPacketSize: 20 } } as never);
  const ack = await c.next('connack');
  assert.equal(ack.reasonCode, 0);
  assert.ok(Buffer.concat(frames).length <= 20, `CONNACK of ${Buffer.concat(frames).length} bytes`);
  c.destroy();
});

test('retained messages a connection publishes just before its SUBSCRIBE are all sent after the SUBACK [MQTT-3.3.1-9]', async () => {
  const c = await connect(broker.url, { protocolVersion: 5, clientId: 'burst' });
  const n = 50;
  for (let i = 0; i < n; i++) c.publish(`burst/${i}`, `r${i}`, { qos: 1, retain: true });
  const got = nextMessages(c, n, 5000);
  c.subscribe('burst/#', { qos: 1 });
  const topics = (await got).map((m) => m.topic).sort();
  assert.equal(new Set(topics).size, n);
  await end(c);
});

test('with anonymous access and no users configured, a CONNECT with a username is accepted as that identity', async () => {
  const c = await connect(broker.url, { protocolVersion: 5, clientId: 'named', username: 'node-red', password: 'whatever' });
  await end(c);
});

test('`$` topics other than the broker\'s own are ordinary topics; $SYS stays refused (v5: 0x87)', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'dollar-sub' });
  await sub.subscribeAsync('$aws/things/#', { qos: 1 });
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'dollar-pub' });
  const got = nextMessages(sub, 1);
  await pub.publishAsync('$aws/things/t1/shadow', 'x', { qos: 1 });
  assert.equal((await got)[0].topic, '$aws/things/t1/shadow');
  const raw = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'dollar-raw' });
  raw.client.send({ cmd: 'publish', topic: '$SYS/fake', payload: Buffer.from('x'), qos: 1, messageId: 3 } as never);
  assert.equal((await raw.client.next('puback')).reasonCode, 0x87);
  raw.client.destroy();
  await end(sub, pub);
});

test('MQTT 3.1: a PUBREL re-sent with DUP set (0x6A) is answered with PUBCOMP', async () => {
  const { client } = await RawClient.connect(broker.url, { protocolVersion: 3, clientId: 'v31', clean: true });
  client.send({ cmd: 'publish', topic: 'v31/x', payload: Buffer.from('m'), qos: 2, messageId: 5 } as never);
  await client.next('pubrec');
  client.write([0x6a, 2, 0, 5]);
  const comp = await client.next('pubcomp');
  assert.equal(comp.messageId, 5);
  assert.equal(client.closed, false);
  client.destroy();
});

test('Authentication Data without Authentication Method is a protocol error: CONNACK 0x82 and close', async () => {
  const c = await RawClient.open(broker.url, 5);
  c.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'authdata', clean: true, keepalive: 60, properties: { authenticationData: Buffer.from('x') } } as never);
  const ack = await c.next('connack');
  assert.equal(ack.reasonCode, 0x82);
  await c.waitClosed();
});
