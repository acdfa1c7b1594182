// When the database goes away, the broker acknowledges nothing it could not store: the
// publishing connection is closed instead (v5: DISCONNECT 0x80), the client sends again after it
// reconnects, and every acknowledged message reaches the persistent subscriber. Traffic that
// needs no storage keeps flowing meanwhile.
// needs: broker, postgresql
import { test } from 'node:test';
import assert from 'node:assert/strict';

import postgres from 'postgres';
import mqtt from 'mqtt';

import { startBroker, connect, nextMessages, end } from '../helpers/broker.ts';
import { waitFor, waitForEvent } from '../helpers/wait.ts';
import { PG_URL, pgSchema } from '../store/databases.ts';

test('POSTGRESQL outage: no PUBACK for what was not stored; resent messages get through', async () => {
  const made = await pgSchema('outage');
  const { name: schema, sql: admin } = made;
  const broker = await startBroker({ store: { storeType: 'POSTGRESQL', datasource: { url: `${made.store.datasource.url}&application_name=${schema}` } } });
  try {
    const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'outage-sub', clean: false, properties: { sessionExpiryInterval: 600 } });
    await sub.subscribeAsync('outage/#', { qos: 1 });
    await sub.endAsync();

    // A QoS 0 pair that needs no storage, to show it keeps working during the outage.
    const q0sub = await connect(broker.url, { protocolVersion: 5, clientId: 'q0-sub' });
    await q0sub.subscribeAsync('plain/#', { qos: 0 });
    const q0pub = await connect(broker.url, { protocolVersion: 5, clientId: 'q0-pub' });

    // Block the store: lock its table, so its next transaction waits; then kill its connections.
    const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'outage-pub' });
    const disconnects: number[] = [];
    pub.on('disconnect', (p) => disconnects.push(p.reasonCode ?? 0));
    pub.on('error', () => {});
    const blocker = postgres(PG_URL, { max: 1, onnotice: () => {} });
    let lockHeld!: () => void;
    let release!: () => void;
    const held = new Promise<void>((r) => { lockHeld = r; });
    const released = new Promise<void>((r) => { release = r; });
    const locked = blocker.begin(async (tx) => {
      await tx.unsafe(`LOCK TABLE ${schema}.spindle_messages IN ACCESS EXCLUSIVE MODE`);
      lockHeld();
      await released;
    });
    await held;
    const acked: boolean[] = [];
    const attempt = pub.publishAsync('outage/a', 'during outage', { qos: 1 }).then(() => acked.push(true), () => acked.push(false));
    // The broker's write is stuck behind the lock.
    await waitFor(async () => (await admin.unsafe(`SELECT 1 FROM pg_stat_activity WHERE application_name = '${schema}' AND wait_event_type = 'Lock'`)).length > 0,
      { interval: 20, message: "the store's write to wait on the table lock" });
    // QoS 0 without persistent subscribers flows while the store is stuck.
    const plain = nextMessages(q0sub, 1);
    await q0pub.publishAsync('plain/x', 'still flowing', { qos: 0 });
    assert.equal((await plain)[0].payload, 'still flowing');
    const pubClosed = waitForEvent(pub, 'close', { timeout: 10_000 });
    await admin.unsafe(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '${schema}'`);
    release();
    await locked.catch(() => {});
    await blocker.end();
    // The broker answers the failed write by closing the publishing connection: after the close
    // no PUBACK can come.
    await pubClosed;
    assert.notDeepEqual(acked, [true], 'a message whose storing failed was not acknowledged');
    pub.end(true);
    assert.ok(disconnects.length === 0 || disconnects[0] === 0x80, `DISCONNECT reason ${disconnects[0]}`);

    // The client reconnects and sends it again: stored, acknowledged, delivered.
    const again = await connect(broker.url, { protocolVersion: 5, clientId: 'outage-pub' });
    await again.publishAsync('outage/a', 'resent', { qos: 1 });
    // Listen before CONNACK: queued messages follow it at once.
    const back = mqtt.connect(broker.url, { protocolVersion: 5, clientId: 'outage-sub', clean: false, reconnectPeriod: 0, properties: { sessionExpiryInterval: 600 } });
    const got: string[] = [];
    back.on('message', (_t, payload) => got.push(payload.toString()));
    await waitForEvent(back, 'connect');
    // A marker on its subscription, published once it is back, comes after its queued messages.
    await again.publishAsync('outage/marker', 'marker', { qos: 1 });
    await waitFor(() => got.includes('marker'), { message: 'the marker after the queued messages' });
    assert.deepEqual(got, ['resent', 'marker'], 'only the stored (and acknowledged) message is delivered');
    await end(again, back, q0sub, q0pub);
  } finally {
    await broker.stop();
    await admin.unsafe(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
});
