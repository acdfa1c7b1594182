// CONNECT and CONNACK end to end: return codes for MQTT 3.1, 3.1.1 and 5.0, unsupported protocol
// levels, a second CONNECT, a first packet that is not CONNECT, client identifiers, and the
// limits a v5 CONNACK advertises.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';

let broker: TestBroker;
before(async () => {
  broker = await startBroker({ limits: { receiveMaximum: 7, maxPacketSize: 65536, topicAliasMaximum: 9 } });
});
after(async () => { await broker.stop(); });

/** A CONNECT frame by hand (mqtt-packet refuses to generate some of these): protocol name and
 * level, client id, connect flags (0x02: clean), keepalive 0. */
function connectBytes(name: string, level: number, clientId = 'c', flags = 0x02): Buffer {
  const id = Buffer.from(clientId);
  const body = Buffer.concat([
    Buffer.from([0, name.length]), Buffer.from(name), Buffer.from([level, flags, 0, 0]),
    ...(level === 5 ? [Buffer.from([0])] : []),
    Buffer.from([0, id.length]), id,
  ]);
  return Buffer.concat([Buffer.from([0x10, body.length]), body]);
}

test('v3.1 (MQIsdp, level 3): CONNACK 0x00 and messages flow [MQTT-3.2.2-4]', async () => {
  const { client, connack } = await RawClient.connect(broker.url, { protocolVersion: 3, clientId: 'v31-raw' });
  assert.equal(connack.returnCode, 0);
  assert.equal(connack.sessionPresent, false);
  client.destroy();
  const c = await connect(broker.url, { protocolId: 'MQIsdp', protocolVersion: 3, clientId: 'v31-mqttjs' });
  await c.subscribeAsync('v31/t', { qos: 1 });
  const got = new Promise<string>((resolve) => c.once('message', (_t, p) => resolve(p.toString())));
  await c.publishAsync('v31/t', 'hi', { qos: 1 });
  assert.equal(await got, 'hi');
  await end(c);
});

test('v3.1 refuses an empty client id with CONNACK 0x02 [MQTT-3.1.3-8 (v3.1 has no assignment)]', async () => {
  const client = await RawClient.open(broker.url, 3);
  client.write(connectBytes('MQIsdp', 3, ''));
  const connack = await client.next('connack');
  assert.equal(connack.returnCode, 2);
  await client.waitClosed();
});

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: a valid CONNECT is answered with CONNACK Success [MQTT-3.2.0-1]`, async () => {
    const { client, connack } = await RawClient.connect(broker.url, { protocolVersion, clientId: `ok-${protocolVersion}` });
    assert.equal(protocolVersion === 5 ? connack.reasonCode : connack.returnCode, 0);
    client.destroy();
  });

  test(`v${protocolVersion}: a second CONNECT is a protocol error and closes the connection [MQTT-3.1.0-2]`, async () => {
    const { client } = await RawClient.connect(broker.url, { protocolVersion, clientId: `twice-${protocolVersion}` });
    client.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, keepalive: 0, clientId: `twice-${protocolVersion}` } as never);
    if (protocolVersion === 5) {
      const d = await client.next('disconnect');
      assert.equal(d.reasonCode, 0x82);
    }
    await client.waitClosed();
    assert.deepEqual(client.packets, []);
  });

  test(`v${protocolVersion}: a first packet other than CONNECT closes the connection without an answer [MQTT-3.1.0-1]`, async () => {
    const client = await RawClient.open(broker.url, protocolVersion);
    client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'a', qos: 0 }] } as never);
    await client.waitClosed();
    assert.deepEqual(client.packets, []);
  });
}

test('v3.1.1: PINGREQ as first packet closes the connection [MQTT-3.1.0-1]', async () => {
  const client = await RawClient.open(broker.url, 4);
  client.write([0xc0, 0x00]);
  await client.waitClosed();
  assert.deepEqual(client.packets, []);
});

for (const level of [2, 6, 0x85]) {
  test(`unsupported protocol level ${level}: CONNACK 0x01 (v3 format), then closed [MQTT-3.1.2-2]`, async () => {
    const client = await RawClient.open(broker.url, 4);
    client.write(connectBytes('MQTT', level));
    const connack = await client.next('connack');
    assert.equal(connack.returnCode, 1);
    assert.equal(connack.sessionPresent, false);
    await client.waitClosed();
  });
}

test('a protocol name other than MQTT/MQIsdp closes the connection [MQTT-3.1.2-1]', async () => {
  const client = await RawClient.open(broker.url, 4);
  client.write(connectBytes('MQTX', 4));
  await client.waitClosed();
  // The server MAY answer; it must not accept.
  assert.ok(client.packets.every((p) => p.cmd !== 'connack' || p.returnCode !== 0));
});

test('v5: an empty client id gets an Assigned Client Identifier in CONNACK [MQTT-3.1.3-6] [MQTT-3.2.2-16]', async () => {
  const { client, connack } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: '' });
  assert.equal(connack.reasonCode, 0);
  const assigned = connack.properties?.assignedClientIdentifier;
  assert.equal(typeof assigned, 'string');
  assert.ok(assigned.length > 0);
  client.destroy();
  // Another empty client id gets a different one.
  const second = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: '' });
  assert.notEqual(second.connack.properties?.assignedClientIdentifier, assigned);
  second.client.destroy();
});

test('v3.1.1: an empty client id with CleanSession=1 is accepted [MQTT-3.1.3-6] [MQTT-3.1.3-7]', async () => {
  const { client, connack } = await RawClient.connect(broker.url, { protocolVersion: 4, clientId: '', clean: true });
  assert.equal(connack.returnCode, 0);
  assert.equal(connack.sessionPresent, false);
  // The connection works: a PINGREQ is answered.
  client.send({ cmd: 'pingreq' });
  await client.next('pingresp');
  client.destroy();
});

test('v3.1.1: an empty client id with CleanSession=0 is refused with CONNACK 0x02 and closed [MQTT-3.1.3-8]', async () => {
  const client = await RawClient.open(broker.url, 4);
  client.write(connectBytes('MQTT', 4, '', 0x00));
  const connack = await client.next('connack');
  assert.equal(connack.returnCode, 2);
  assert.equal(connack.sessionPresent, false);
  await client.waitClosed();
});

test('v5: CONNACK advertises the configured Receive Maximum, Maximum Packet Size and Topic Alias Maximum [MQTT-3.2.2-*]', async () => {
  const { client, connack } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'props' });
  assert.equal(connack.properties?.receiveMaximum, 7);
  assert.equal(connack.properties?.maximumPacketSize, 65536);
  assert.equal(connack.properties?.topicAliasMaximum, 9);
  client.destroy();
});
