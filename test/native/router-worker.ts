// Worker half of workers.test.ts: opens the shared router by name and subscribes and matches
// concurrently with the other workers; reports what it saw.
import { parentPort, workerData } from 'node:worker_threads';
import { Router } from '../../src/native/index.ts';

const { name, index, sessions, topics } = workerData as { name: string; index: number; sessions: number; topics: number };
const router = Router.open(name);
const out = new Uint32Array(4096);
let matched = 0;
for (let s = 0; s < sessions; s++) {
  const session = index * 100000 + s;
  router.subscribe(`w/${s % topics}/#`, session, index, 1);
  router.subscribe(`w/+/${index}`, session, index, 0, 7);
  const n = Number(router.match(`w/${s % topics}/${index}`, 0xffffffff, 0, out));
  if (n < 0) throw new Error('match buffer too small');
  // Our own session must be among the deliveries.
  for (let i = 0; i < n;) {
    if (out[i] === session) matched++;
    i += 3 + out[i + 2];
  }
}
// Leave half of our sessions again.
for (let s = 0; s < sessions; s += 2) router.removeSession(index * 100000 + s);
parentPort!.postMessage({ matched });
