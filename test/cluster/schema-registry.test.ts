// The schema registry across a two-node cluster: a schema and a topic check made on node A reach
// node B (listed there, and B's workers refuse a bad payload with 0x99 and pass a good one; a
// rule on B decodes with the schema); removing the check on A frees the topic on B.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import protobuf from 'protobufjs';

import { connect, end, nextMessages } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];
const PROTO = 'syntax = "proto3"; package demo; message Reading { string sensor = 1; double temp = 2; }';
const Reading = protobuf.parse(PROTO).root.lookupType('demo.Reading');
const JSON_TYPE = { 'content-type': 'application/json' };

before(async () => {
  nats = await TestNats.start();
  for (const name of ['schema-a', 'schema-b']) {
    nodes.push(await startAdminBroker({ nodeName: name, store: { storeType: 'LOCAL' }, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

test('a schema and a check made on node A apply on node B', async () => {
  const [a, b] = nodes;
  assert.equal((await a.api('POST', '/api/schemas', { body: { name: 'reading', type: 'protobuf', source: PROTO } })).status, 200);
  await waitFor(async () => (await b.api('GET', '/api/schemas/reading')).status === 200, { message: 'the schema on node B' });
  assert.equal((await a.api('POST', '/api/schema-checks', { body: { filter: 'plant/#', schema: 'reading', messageType: 'demo.Reading' } })).status, 200);
  await waitFor(async () => (await b.api('GET', '/api/schema-checks')).json.data.length === 1, { message: 'the check on node B' });

  const sub = await connect(b.url, { clientId: 'cl-sub' });
  await sub.subscribeAsync('plant/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'cl-pub', protocolVersion: 5 });
  await waitFor(async () => {
    try {
      await pub.publishAsync('plant/1', 'junk \xff', { qos: 1 });
      return false;
    } catch (err) {
      return (err as { code?: number }).code === 0x99;
    }
  }, { message: 'node B refuses a bad payload with 0x99' });
  const good = nextMessages(sub, 1);
  await pub.publishAsync('plant/1', Buffer.from(Reading.encode({ sensor: 's', temp: 3 }).finish()), { qos: 1 });
  assert.equal((await good)[0].topic, 'plant/1');

  const gone = await a.api('DELETE', `/api/schema-checks/${encodeURIComponent('plant/#')}`, { headers: JSON_TYPE });
  assert.equal(gone.status, 200, gone.text);
  await waitFor(async () => {
    try {
      await pub.publishAsync('plant/2', 'junk', { qos: 1 });
      return true;
    } catch {
      return false;
    }
  }, { message: 'the topic free again on node B' });
  await end(sub, pub);
});
