// The store suite against the MEMORY store, which keeps nothing: instead of durability across a
// reopen, its contract is that a new store starts empty.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { storeSuite } from './store-suite.ts';

storeSuite('memory', async () => {
  const store = new MemoryStore();
  await store.open();
  return { store, cleanup: async () => {} };
}, { persists: false });

test('memory: nothing survives, a new store starts empty', async () => {
  const first = new MemoryStore();
  await first.open();
  await first.saveSession({ clientId: 'c', expiryInterval: 60, disconnectedAt: null, username: null, will: null });
  await first.setRetained('t', { id: 1n, topic: 't', payload: Buffer.from('x'), qos: 0, retain: true, properties: null, expiresAt: 0 });
  assert.equal((await first.loadSessions()).length, 1);
  await first.close();
  const second = new MemoryStore();
  await second.open();
  assert.deepEqual(await second.loadSessions(), []);
  assert.deepEqual(await second.loadRetained(), []);
  await second.close();
});
