// Exclusive subscriptions of a node lost for good (SIGKILL), on a database the nodes share
// (POSTGRESQL): the node adopting its sessions takes the places of the persistent ones with them
// (another client still refused 0x97; the holder reconnecting there receives through it), and
// frees the places of its clean sessions.
// needs: broker, nats, postgresql
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';
import type postgres from 'postgres';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, persistent } from '../helpers/broker.ts';
import { startProcessBroker, tempDir, type ProcessBroker } from '../helpers/process-broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';
import { pgSchema, type PgSchema } from '../store/databases.ts';

let nats: TestNats;
let db: PgSchema;
let pg: postgres.Sql;
let schema: string;
let b: AdminBroker;
let a: ProcessBroker;

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  db = await pgSchema('exadopt');
  ({ name: schema, sql: pg } = db);
  const store = db.store;
  b = await startAdminBroker({ nodeName: 'exadopt-b', store, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } });
  a = await startProcessBroker({
    nodeName: 'exadopt-a', dataDir: tempDir(), workers: 2, log: { level: 'info' }, sys: { enabled: false }, admin: { enabled: false },
    mqtt: { host: '127.0.0.1', tcp: { port: await freePort() }, ws: { port: 0 } }, store,
    cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` },
  });
  await waitFor(() => b.cluster!.nodes().some((n) => n.id === 'exadopt-a' && n.status === 'running'), { message: 'b sees a' });
});

after(async () => {
  await a?.kill();
  await b?.stop();
  await nats?.stop();
  await db?.drop();
});

async function granted(c: MqttClient, filter: string): Promise<number> {
  try {
    return (await c.subscribeAsync(filter, { qos: 1 }))[0].qos;
  } catch (err) {
    const code = (err as { packet?: { granted?: number[] } }).packet?.granted?.[0];
    if (code === undefined) throw err;
    return code;
  }
}

test('a node lost: its persistent sessions\' places move with the sessions adopted; its clean sessions\' are freed', async () => {
  const holder = await connect(a.url, persistent('adopt-holder'));
  assert.equal(await granted(holder, '$exclusive/ad/#'), 1);
  const clean = await connect(a.url, { protocolVersion: 5, clientId: 'adopt-clean' });
  assert.equal(await granted(clean, '$exclusive/adc/#'), 1);
  const other = await connect(b.url, { protocolVersion: 5, clientId: 'adopt-other' });
  try {
    assert.equal(await granted(other, '$exclusive/ad/#'), 0x97);
    assert.equal(await granted(other, '$exclusive/adc/#'), 0x97);
    holder.end(true);
    clean.end(true);
    await a.kill('SIGKILL');

    // b adopts a's sessions, with the persistent session's place; the clean one's is freed.
    await waitFor(async () => (await b.api('GET', '/api/exclusive')).json.data.holders.some((h: { clientId: string; filter: string }) => h.clientId === 'adopt-holder' && h.filter === 'ad/#'), { message: 'b holds the adopted session\'s place' });
    await waitFor(async () => (await granted(other, '$exclusive/adc/#')) === 1, { message: 'the clean session\'s place is freed' });
    assert.equal(await granted(other, '$exclusive/ad/#'), 0x97, 'the adopted session holds its place');
    const m = (await b.api('GET', '/prometheus')).text;
    assert.match(m, /spindle_exclusive_cluster_places_total\{what="adopted"[^}]*\} 1/);
    assert.match(m, /spindle_exclusive_cluster_places_total\{what="freed"[^}]*\} 1/);

    // Its record in the store is b's now (a restart of b keeps it); a's are gone.
    await waitFor(async () => {
      const rows = await pg.unsafe(`SELECT id, doc FROM ${schema}.spindle_admin WHERE kind = 'exclusive-hold'`);
      return rows.length === 1 && JSON.parse(rows[0].doc).node === 'exadopt-b' && JSON.parse(rows[0].doc).clientId === 'adopt-holder';
    }, { message: 'the adopted place\'s record names b' });

    // The holder back, on b: it receives through its place.
    const back = await connect(b.url, persistent('adopt-holder'));
    try {
      const got = nextMessages(back, 1);
      await other.publishAsync('ad/x', 'adopted', { qos: 1 });
      assert.equal((await got)[0].payload, 'adopted');
    } finally {
      back.end(true);
    }
  } finally {
    await end(other);
  }
});
