// The ban list across a two-node cluster: a ban made on node A kicks the client it names on node
// B and refuses its next CONNECT there within a second (measured from the request to the kick);
// lifting it on A lets the client back on B.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';

import { connect } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];

before(async () => {
  nats = await TestNats.start();
  for (const name of ['bans-a', 'bans-b']) {
    nodes.push(await startAdminBroker({ nodeName: name, store: { storeType: 'LOCAL' }, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

function connackCode(url: string, clientId: string, protocolVersion: 4 | 5): Promise<number> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, protocolVersion, clientId });
  return new Promise<number>((resolve, reject) => {
    client.once('connect', () => resolve(0));
    client.once('error', (err: Error & { code?: number }) => (typeof err.code === 'number' ? resolve(err.code) : reject(err)));
  }).finally(() => client.end(true));
}

test('a ban made on node A refuses the client on node B within a second', async () => {
  const [a, b] = nodes;
  const onB = await connect(b.url, { clientId: 'roamer', protocolVersion: 5 });
  const kicked = new Promise<number>((resolve) => onB.once('close', () => resolve(performance.now())));
  const started = performance.now();
  const r = await a.api('POST', '/api/banned', { body: { as: 'clientid', who: 'roamer', reason: 'cluster test' } });
  assert.equal(r.status, 200, r.text);
  const ms = (await kicked) - started;
  assert.ok(ms < 1000, `kicked on node B ${ms.toFixed(0)} ms after the ban on node A`);
  assert.equal(await connackCode(b.url, 'roamer', 5), 0x8a);
  assert.equal(await connackCode(b.url, 'roamer', 4), 5);
  const listed = await b.api('GET', '/api/banned');
  assert.equal(listed.json.data[0].who, 'roamer');
  assert.equal(listed.json.data[0].reason, 'cluster test');
  const lifted = await a.api('DELETE', '/api/banned/clientid/roamer', { headers: { 'content-type': 'application/json' } });
  assert.equal(lifted.status, 200, lifted.text);
  await waitFor(async () => (await connackCode(b.url, 'roamer', 5)) === 0, { message: 'the ban lifted on node B' });
});
