// Delayed publish in a two-node cluster on the shared PostgreSQL store: the node holding the run
// lease `delayed` fires what either node accepted (a message published on the other node reaches
// a subscriber once); when that node is lost (SIGKILL), the other takes the lease and publishes
// the messages it had accepted, once each.
// needs: broker, nats, postgresql
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type postgres from 'postgres';

import { delayed } from '../../src/features/delayed/index.ts';
import { startBroker, connect, end, nextMessages, noMessage, type TestBroker } from '../helpers/broker.ts';
import { startProcessBroker, tempDir, type ProcessBroker } from '../helpers/process-broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';
import { pgSchema, type PgSchema } from '../store/databases.ts';

let nats: TestNats;
let db: PgSchema;
let pg: postgres.Sql;
let schema: string;
let b: TestBroker;
let a: ProcessBroker;

before(async () => {
  nats = await TestNats.start();
  db = await pgSchema('delayed');
  ({ name: schema, sql: pg } = db);
  const store = db.store;
  // a starts first: it takes the lease.
  a = await startProcessBroker({
    nodeName: 'delayed-a', dataDir: tempDir(), workers: 2, log: { level: 'info' }, sys: { enabled: false }, admin: { enabled: false },
    mqtt: { host: '127.0.0.1', tcp: { port: await freePort() }, ws: { port: 0 } }, store,
    cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` },
  });
  b = await startBroker({ nodeName: 'delayed-b', store, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } });
  await waitFor(() => b.cluster!.nodes().some((n) => n.id === 'delayed-a' && n.status === 'running'), { message: 'b sees a' });
});

after(async () => {
  await a?.kill();
  await b?.stop();
  await nats?.stop();
  await db?.drop();
});

test('one node fires; when it is lost the other fires what it had accepted, once each', async () => {
  const m = b.features.get(delayed);
  await waitFor(() => m.stats().firingNode === 'delayed-a', { message: 'a holds the lease' });
  assert.equal(m.stats().firing, false);
  const sub = await connect(b.url, { protocolVersion: 5 });
  await sub.subscribeAsync('dl/#', { qos: 1 });

  // Accepted on b, fired by a.
  const onB = await connect(b.url, { protocolVersion: 5 });
  const first = nextMessages(sub, 1);
  await onB.publishAsync('$delayed/1/dl/one', 'one', { qos: 1 });
  assert.equal((await first)[0].topic, 'dl/one');
  await waitFor(() => m.pending === 0, { message: 'b is told it fired' });
  await end(onB);

  // Accepted on a, then a is lost before it is due.
  const onA = await connect(a.url, { protocolVersion: 5 });
  await onA.publishAsync('$delayed/3/dl/two', 'two', { qos: 1, properties: { userProperties: { n: '2' } } });
  await onA.publishAsync('$delayed/3/dl/three', 'three', { qos: 1 });
  onA.end(true);
  await waitFor(() => m.pending === 2, { message: 'b knows a\'s messages' });
  await a.kill('SIGKILL');
  const got = await nextMessages(sub, 2, 30_000);
  assert.deepEqual(got.map((x) => x.topic).sort(), ['dl/three', 'dl/two']);
  assert.deepEqual({ ...got.find((x) => x.topic === 'dl/two')!.packet.properties?.userProperties }, { n: '2' });
  assert.equal(m.stats().firing, true);
  await waitFor(() => m.stats().fired === 2, { message: 'b fired both' });
  await noMessage(sub, 500);
  assert.equal((await pg.unsafe(`SELECT count(*)::int AS n FROM ${schema}.spindle_admin WHERE kind = 'delayed'`))[0].n, 0, 'the rows are deleted');
  await end(sub);
});
