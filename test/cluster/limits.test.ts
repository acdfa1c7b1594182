// Rate limits and overload marks across a two-node cluster (the test's own nats-server with
// JetStream): the overload marks changed on one node are in force on the other (its workers
// included), and an endpoint's rate limit set on one node throttles on the other.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  for (const name of ['limits-a', 'limits-b']) {
    nodes.push(await startAdminBroker({ nodeName: name, workers: 1, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

test('overload marks changed on one node are in force on the other', async () => {
  const [a, b] = nodes;
  const r = await a.api('PUT', '/api/overload/marks', { body: { enabled: true, lagHighMs: 777, lagLowMs: 111 } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => {
    const s = (await b.api('GET', '/api/overload')).json.data;
    return s.source === 'api' && s.marks.lagHighMs === 777 && s.marks.lagLowMs === 111 && s.marks.enabled === true;
  }, { message: 'the marks reached node b' });
});

test('an endpoint rate limit set on one node is in force on the other', async () => {
  const [a, b] = nodes;
  // A new endpoint (the nodes share its port through SO_REUSEPORT), then its limits changed.
  const port = await freePort();
  let r = await a.api('POST', '/endpoints/add', { body: { id: 'limited', port } });
  assert.equal(r.status, 200, r.text);
  r = await a.api('POST', '/endpoints/update', { body: { id: 'limited', rateLimit: { messagesPerSecond: 42 }, totalRateLimit: { bytesPerSecond: 4200 } } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => {
    const row = (await b.api('GET', '/api/rate-limits')).json.data.endpoints.find((e: { id: string }) => e.id === 'limited');
    return row?.rateLimit?.messagesPerSecond === 42 && row?.totalRateLimit?.bytesPerSecond === 4200;
  }, { message: 'the limits reached node b\'s workers' });
});
