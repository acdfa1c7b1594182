// QoS flows end to end with a raw client: QoS 2 exactly once across a resent PUBLISH, a repeated
// PUBREL, the broker's Receive Maximum towards a client that exceeds it, and the client's Receive
// Maximum bounding what the broker has in flight.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, connectionCount, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';
import { waitFor } from '../helpers/wait.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker({ limits: { receiveMaximum: 2 } }); });
after(async () => { await broker.stop(); });

/** The raw client publishes a QoS 2 marker on `topic` and `got` (what the subscriber received)
 * fills up to it: anything the earlier QoS 2 messages of the same publisher on the same topic
 * produced was delivered before it (one topic and QoS keep their order [MQTT-4.6.0-6]; mqtt.js
 * emits a QoS 2 message at its PUBREL, so a QoS 0 marker could overtake them). */
async function untilMarker(client: RawClient, topic: string, got: string[]): Promise<void> {
  client.send(publish(topic, 'marker', 2, 999));
  await client.next('pubrec');
  client.send({ cmd: 'pubrel', messageId: 999 } as never);
  await client.next('pubcomp');
  await waitFor(() => got.includes('marker'), { message: `the marker on ${topic}` });
}

function publish(topic: string, payload: string, qos: 0 | 1 | 2, messageId: number, dup = false) {
  return { cmd: 'publish', topic, payload: Buffer.from(payload), qos, retain: false, dup, messageId } as never;
}

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: a QoS 2 PUBLISH resent with DUP and the same packet id before PUBREL is delivered once [MQTT-4.3.3-10] [MQTT-4.3.3-2]`, async () => {
    const topic = `qos2/once/${protocolVersion}`;
    const sub = await connect(broker.url, { protocolVersion, clientId: `once-sub-${protocolVersion}` });
    await sub.subscribeAsync(topic, { qos: 2 });
    const got: string[] = [];
    sub.on('message', (_t, p) => got.push(p.toString()));
    const { client } = await RawClient.connect(broker.url, { protocolVersion, clientId: `once-pub-${protocolVersion}` });
    client.send(publish(topic, 'exactly once', 2, 7));
    assert.equal((await client.next('pubrec')).messageId, 7);
    client.send(publish(topic, 'exactly once', 2, 7, true));
    assert.equal((await client.next('pubrec')).messageId, 7);
    client.send({ cmd: 'pubrel', messageId: 7 } as never);
    assert.equal((await client.next('pubcomp')).messageId, 7);
    // After PUBREL the packet id is free: a new message with it is a new message [MQTT-4.3.3-9 context].
    client.send(publish(topic, 'second', 2, 7));
    assert.equal((await client.next('pubrec')).messageId, 7);
    client.send({ cmd: 'pubrel', messageId: 7 } as never);
    await client.next('pubcomp');
    await untilMarker(client, topic, got);
    assert.deepEqual(got, ['exactly once', 'second', 'marker']);
    client.destroy();
    await end(sub);
  });

  test(`v${protocolVersion}: a repeated PUBREL is answered with PUBCOMP [MQTT-4.3.3-12] [MQTT-4.3.3-11]`, async () => {
    const { client } = await RawClient.connect(broker.url, { protocolVersion, clientId: `rel-${protocolVersion}` });
    client.send(publish(`qos2/rel/${protocolVersion}`, 'x', 2, 9));
    await client.next('pubrec');
    client.send({ cmd: 'pubrel', messageId: 9 } as never);
    const first = await client.next('pubcomp');
    assert.equal(first.messageId, 9);
    if (protocolVersion === 5) assert.equal(first.reasonCode ?? 0, 0);
    client.send({ cmd: 'pubrel', messageId: 9 } as never);
    const again = await client.next('pubcomp');
    assert.equal(again.messageId, 9);
    // v5 may say the id is no longer known (0x92); v3.1.1 has no reason code.
    if (protocolVersion === 5) assert.ok([0, 0x92].includes(again.reasonCode ?? 0));
    assert.equal(client.closed, false);
    client.destroy();
  });

  test(`v${protocolVersion}: a QoS 2 message released after a reconnect is delivered once [MQTT-4.3.3-10] [MQTT-4.4.0-1]`, async () => {
    const topic = `qos2/reconnect/${protocolVersion}`;
    const sub = await connect(broker.url, { protocolVersion, clientId: `rc-sub-${protocolVersion}` });
    await sub.subscribeAsync(topic, { qos: 2 });
    const got: string[] = [];
    sub.on('message', (_t, p) => got.push(p.toString()));
    const props = protocolVersion === 5 ? { properties: { sessionExpiryInterval: 60 } } : {};
    const n = await connectionCount(broker);
    const { client } = await RawClient.connect(broker.url, { protocolVersion, clientId: `rc-pub-${protocolVersion}`, clean: false, ...props });
    client.send(publish(topic, 'once', 2, 3));
    await client.next('pubrec');
    client.destroy();
    // The broker has handled the drop: the session is offline (a reconnect, not a takeover).
    await waitFor(async () => (await connectionCount(broker)) === n, { message: 'the dropped connection to be closed' });
    // The session keeps the packet id: the resent PUBLISH is acknowledged, not routed again.
    const { client: back } = await RawClient.connect(broker.url, { protocolVersion, clientId: `rc-pub-${protocolVersion}`, clean: false, ...props });
    back.send(publish(topic, 'once', 2, 3, true));
    await back.next('pubrec');
    back.send({ cmd: 'pubrel', messageId: 3 } as never);
    await back.next('pubcomp');
    await untilMarker(back, topic, got);
    assert.deepEqual(got, ['once', 'marker']);
    back.destroy();
    await end(sub);
  });
}

test('v5: more unacknowledged QoS 2 PUBLISH than the broker\'s Receive Maximum gets DISCONNECT 0x93 [MQTT-3.3.4-9]', async () => {
  const { client, connack } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'rm-in' });
  assert.equal(connack.properties?.receiveMaximum, 2);
  client.send(publish('qos2/rm', 'a', 2, 1));
  client.send(publish('qos2/rm', 'b', 2, 2));
  await client.next('pubrec');
  await client.next('pubrec');
  client.send(publish('qos2/rm', 'c', 2, 3));
  const d = await client.next('disconnect');
  assert.equal(d.reasonCode, 0x93);
  await client.waitClosed();
});

test('v5: within the broker\'s Receive Maximum, released QoS 2 messages make room again [MQTT-3.3.4-9]', async () => {
  const { client } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'rm-ok' });
  for (let id = 1; id <= 6; id++) {
    client.send(publish('qos2/rm-ok', `m${id}`, 2, id));
    await client.next('pubrec');
    if (id % 2 === 0) {
      client.send({ cmd: 'pubrel', messageId: id - 1 } as never);
      client.send({ cmd: 'pubrel', messageId: id } as never);
      await client.next('pubcomp');
      await client.next('pubcomp');
    }
  }
  assert.equal(client.closed, false);
  client.destroy();
});

for (const qos of [1, 2] as const) {
  test(`v5: the broker has at most the client's Receive Maximum QoS ${qos} messages in flight [MQTT-3.3.4-9] [MQTT-3.3.4-10]`, async () => {
    const topic = `rm/out/${qos}`;
    const { client } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: `rm-out-${qos}`, properties: { receiveMaximum: 2 } } as never);
    client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos }] } as never);
    await client.next('suback');
    const pub = await connect(broker.url, { protocolVersion: 5, clientId: `rm-out-pub-${qos}` });
    for (let i = 0; i < 6; i++) await pub.publishAsync(topic, `m${i}`, { qos });
    let got = (await client.collect(400)).filter((p) => p.cmd === 'publish');
    assert.deepEqual(got.map((p) => p.payload.toString()), ['m0', 'm1']);
    // Each completed acknowledgement lets one more through, in order.
    const all = [...got];
    while (all.length < 6) {
      const p = got.shift()!;
      if (qos === 1) client.send({ cmd: 'puback', messageId: p.messageId } as never);
      else {
        client.send({ cmd: 'pubrec', messageId: p.messageId } as never);
        await client.next('pubrel');
        // PUBREL sent but PUBCOMP not yet: still in flight, nothing more may come [MQTT-4.9.0-2 context].
        assert.deepEqual((await client.collect(150)).map((x) => x.cmd), []);
        client.send({ cmd: 'pubcomp', messageId: p.messageId } as never);
      }
      const more = (await client.collect(200)).filter((x) => x.cmd === 'publish');
      assert.equal(more.length, 1, `after acking ${p.payload}: ${more.map((x) => x.payload)}`);
      got.push(...more);
      all.push(...more);
    }
    assert.deepEqual(all.map((p) => p.payload.toString()), ['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
    client.destroy();
    await end(pub);
  });
}

test('v3.1.1: limits.maxInflight bounds what the broker has in flight to a client', async () => {
  const small = await startBroker({ limits: { maxInflight: 3 } });
  try {
    const { client } = await RawClient.connect(small.url, { protocolVersion: 4, clientId: 'mi' });
    client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'mi', qos: 1 }] } as never);
    await client.next('suback');
    const pub = await connect(small.url, { protocolVersion: 4, clientId: 'mi-pub' });
    for (let i = 0; i < 5; i++) await pub.publishAsync('mi', `m${i}`, { qos: 1 });
    const got = (await client.collect(400)).filter((p) => p.cmd === 'publish');
    assert.equal(got.length, 3);
    client.send({ cmd: 'puback', messageId: got[0].messageId } as never);
    const more = (await client.collect(300)).filter((p) => p.cmd === 'publish');
    assert.deepEqual(more.map((p) => p.payload.toString()), ['m3']);
    client.destroy();
    await end(pub);
  } finally {
    await small.stop();
  }
});
