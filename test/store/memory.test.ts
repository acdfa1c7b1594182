// The store suite against the MEMORY store (no reopen: nothing survives).
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { storeSuite } from './store-suite.ts';

storeSuite('memory', async () => {
  const store = new MemoryStore();
  await store.open();
  return { store, cleanup: async () => {} };
});
