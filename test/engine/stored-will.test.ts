// A will's Message Expiry Interval through the store: Persistence writes it to StoredWill's own
// field, and a session restored from the store gets it back, its message still without an expiry.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { storedSession } from '../../src/engine/session/restore.ts';
import { startEngine } from '../helpers/engine.ts';

test("a persistent session's will keeps its Message Expiry Interval and Will Delay Interval through the store", async () => {
  const store = new MemoryStore();
  await store.open();
  const e = startEngine({ store });
  try {
    const c = e.client(0);
    await c.send({
      cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'willer', clean: false, keepalive: 60,
      properties: { sessionExpiryInterval: 300 },
      will: { topic: 'w/x', payload: Buffer.from('gone'), qos: 1, retain: false, properties: { willDelayInterval: 60, messageExpiryInterval: 30 } },
    });
    assert.equal(c.packets('connack').length, 1);
    const [stored] = await store.loadSessions();
    assert.equal(stored.will?.expiryInterval, 30);
    assert.equal(stored.will?.delay, 60);
    assert.equal('expiresAt' in (stored.will?.message ?? {}), false, 'a stored will has no absolute expiry');

    const restored = storedSession(1, { session: stored, subscriptions: [], deliveries: [], incomingQos2: [] }, { maxQueued: 10, dropPolicy: 'drop-oldest' });
    assert.equal(restored.will?.expiryInterval, 30);
    assert.equal(restored.will?.delay, 60);
    assert.equal(restored.will?.message.expiresAt, 0, 'set when the will is published');
  } finally {
    e.close();
    await store.close();
  }
});
