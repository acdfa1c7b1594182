// A restart (SIGTERM, start again on the same data) brings back retained messages, persistent
// sessions with their subscriptions and queued messages, and forgets sessions that expired.
// needs: broker
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connect, nextMessages, end } from '../helpers/broker.ts';
import { startProcessBroker, freePort, tempDir } from '../helpers/process-broker.ts';

test('LOCAL: retained messages, sessions, subscriptions and queued messages are back after a restart', async () => {
  const port = await freePort();
  const config = {
    workers: 2,
    dataDir: tempDir(),
    log: { level: 'info' },
    mqtt: { host: '127.0.0.1', tcp: { port }, ws: { enabled: false } },
    sys: { enabled: false },
    store: { storeType: 'LOCAL' },
  };
  let broker = await startProcessBroker(config);
  try {
    const v5 = await connect(broker.url, { protocolVersion: 5, clientId: 'keep-v5', clean: false, properties: { sessionExpiryInterval: 3600 } });
    await v5.subscribeAsync('r/+', { qos: 2 });
    await v5.endAsync();
    const v4 = await connect(broker.url, { protocolVersion: 4, clientId: 'keep-v4', clean: false });
    await v4.subscribeAsync('r/#', { qos: 1 });
    await v4.endAsync();
    const brief = await connect(broker.url, { protocolVersion: 5, clientId: 'brief', clean: false, properties: { sessionExpiryInterval: 1 } });
    await brief.subscribeAsync('r/#', { qos: 1 });
    await brief.endAsync();

    const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'restart-pub' });
    await pub.publishAsync('r/retained', 'kept', { qos: 1, retain: true });
    await pub.publishAsync('r/queued', 'q1', { qos: 1 });
    await pub.publishAsync('r/queued', 'q2', { qos: 2 });
    await pub.endAsync();

    assert.equal(await broker.kill('SIGTERM'), 0, 'graceful shutdown exits 0');
    // Elapsed time is what is tested: the 1 s Session Expiry Interval of "brief" passes while the
    // broker is down.
    await new Promise((r) => setTimeout(r, 1500));
    broker = await startProcessBroker(config);

    // Retained message, to a new subscriber [MQTT-3.3.1-9].
    const fresh = await connect(broker.url, { protocolVersion: 5, clientId: 'fresh' });
    const retained = nextMessages(fresh, 1);
    await fresh.subscribeAsync('r/retained', { qos: 1 });
    const [r] = await retained;
    assert.equal(r.payload, 'kept');
    assert.equal(r.packet.retain, true);

    // Persistent sessions: present, queued messages delivered in order, subscription still there.
    for (const [clientId, protocolVersion] of [['keep-v5', 5], ['keep-v4', 4]] as const) {
      const mqtt = await import('mqtt');
      const c = mqtt.default.connect(broker.url, { protocolVersion, clientId, clean: false, reconnectPeriod: 0, properties: protocolVersion === 5 ? { sessionExpiryInterval: 3600 } : undefined });
      const got = nextMessages(c, 3);
      const present = await new Promise<boolean>((resolve, reject) => {
        c.once('connect', (ack) => resolve(ack.sessionPresent));
        c.once('error', reject);
      });
      assert.ok(present, `${clientId}: session present`);
      const payloads = (await got).map((m) => m.payload);
      // The retained message was queued too (it was published while they were away).
      assert.deepEqual(payloads, ['kept', 'q1', 'q2'], clientId);
      const live = nextMessages(c, 1);
      const p2 = await connect(broker.url, { protocolVersion: 5, clientId: `live-${clientId}` });
      await p2.publishAsync('r/live', 'after restart', { qos: 1 });
      assert.equal((await live)[0].payload, 'after restart', `${clientId}: subscription survived`);
      await end(c, p2);
    }

    // The session with a 1 s expiry is gone [MQTT-3.1.2-23 context].
    const mqtt = await import('mqtt');
    const gone = mqtt.default.connect(broker.url, { protocolVersion: 5, clientId: 'brief', clean: false, reconnectPeriod: 0, properties: { sessionExpiryInterval: 1 } });
    const present = await new Promise<boolean>((resolve, reject) => {
      gone.once('connect', (ack) => resolve(ack.sessionPresent));
      gone.once('error', reject);
    });
    assert.equal(present, false, 'an expired session does not come back');
    await end(gone, fresh);
  } finally {
    await broker.kill('SIGKILL');
  }
});
