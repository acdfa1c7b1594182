// The built-in client database across a two-node cluster (the test's own nats-server with
// JetStream): a role and a client added through node A's admin API sign in on node B; a role
// change made on B applies on A to a client already connected there; a deletion with kick made on
// A disconnects the client connected to B.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, disconnectReason, end } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];
const JSON_TYPE = { 'content-type': 'application/json' };

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  for (const name of ['db-a', 'db-b']) {
    nodes.push(await startAdminBroker({ nodeName: name, auth: { allowAnonymous: false }, limits: { authMaxFailures: 0 }, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

async function signsIn(url: string): Promise<boolean> {
  try {
    await end(await connect(url, { username: 'roamer', password: 'roam-pw', protocolVersion: 5 }));
    return true;
  } catch {
    return false;
  }
}

test('a client added on node A signs in on node B; a role change on B applies on A without reconnecting; delete with kick on A disconnects it from B', async () => {
  const [a, b] = nodes;
  assert.equal((await a.api('POST', '/api/client-db/roles', { body: { name: 'roam', rules: [{ action: 'publish', permission: 'allow', topic: 'roam/#' }] } })).status, 200);
  const added = await a.api('POST', '/api/client-db/clients', { body: { username: 'roamer', password: 'roam-pw', roles: [{ name: 'roam' }] } });
  assert.equal(added.status, 200, added.text);
  await waitFor(() => signsIn(b.url), { message: 'the client signs in on node B' });
  assert.equal((await b.api('GET', '/api/client-db/clients/roamer')).json.data.roles[0].name, 'roam');

  const onA = await connect(a.url, { username: 'roamer', password: 'roam-pw', protocolVersion: 5 });
  const code = (topic: string) => onA.publishAsync(topic, 'x', { qos: 1 }).then(() => 0, (err: { code: number }) => err.code);
  assert.equal(await code('elsewhere/1'), 0x87);
  const changed = await b.api('PUT', '/api/client-db/roles/roam', { body: { rules: [{ action: 'publish', permission: 'allow', topic: '#' }] } });
  assert.equal(changed.status, 200, changed.text);
  await waitFor(async () => (await code('elsewhere/1')) === 0, { message: "node B's role change applies on node A" });
  await end(onA);

  const onB = await connect(b.url, { username: 'roamer', password: 'roam-pw', protocolVersion: 5 });
  const reason = disconnectReason(onB);
  const removed = await a.api('DELETE', '/api/client-db/clients/roamer?kick=true', { headers: JSON_TYPE });
  assert.equal(removed.status, 200, removed.text);
  assert.equal(await reason, 0x98, 'kicked on node B');
  await waitFor(async () => !(await signsIn(b.url)), { message: 'refused on node B' });
});
