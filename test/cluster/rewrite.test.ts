// Topic rewrite across a two-node cluster (the test's own nats-server with JetStream): rules set
// through one node's admin API rewrite a PUBLISH on the other node's workers; removed there too.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  for (const name of ['rewrite-a', 'rewrite-b']) {
    nodes.push(await startAdminBroker({ nodeName: name, workers: 1, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

test('rules set on one node rewrite on the other; removed on both', async () => {
  const [a, b] = nodes;
  let r = await a.api('PUT', '/api/rewrite', { body: { rules: [{ action: 'publish', sourceFilter: 'cl/#', regex: '^cl/(.+)$', destination: 'moved/$1' }] } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => (await b.api('GET', '/api/rewrite')).json.data.rules.length === 1, { message: 'the rules reached node b' });
  const sub = await connect(b.url, { protocolVersion: 5 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  try {
    await sub.subscribeAsync('moved/#', { qos: 1 });
    const got = nextMessages(sub, 1);
    await pub.publishAsync('cl/x', 'y', { qos: 1 });
    assert.equal((await got)[0].topic, 'moved/x');
  } finally {
    await end(sub, pub);
  }
  r = await a.api('PUT', '/api/rewrite', { body: { rules: [] } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => (await b.api('GET', '/api/rewrite')).json.data.rules.length === 0, { message: 'the removal reached node b' });
});
