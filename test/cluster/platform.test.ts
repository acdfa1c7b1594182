// The control platform's records across the cluster: an organization, project, application,
// licence and alert rule made through one node's /api/v1 are on the other node; the application's
// MQTT credentials work there, inside its namespace; a licence changed on one node limits the
// other's clients; an application deleted on one node has its clients on the other disconnected.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt, { type MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker, type ApiResponse } from '../helpers/admin.ts';
import { ADMIN_PASSWORD } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];
const tokens: string[] = [];

before(async () => {
  nats = await TestNats.start();
  for (const name of ['plat-a', 'plat-b']) nodes.push(await startAdminBroker({ nodeName: name, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see each other' });
  for (const n of nodes) {
    const r = await n.api('POST', '/api/v1/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD }, as: 'none' });
    assert.equal(r.status, 200, r.text);
    tokens.push(r.json.accessToken);
  }
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

function v1(node: number, method: string, p: string, body?: unknown): Promise<ApiResponse> {
  return nodes[node].api(method, `/api/v1${p}`, { body, authorization: `Bearer ${tokens[node]}`, headers: method === 'GET' ? {} : { 'content-type': 'application/json' } });
}

function ok(r: ApiResponse): any {
  assert.equal(r.status, 200, r.text);
  return r.json?.data;
}

/** A connected client, or the error of its CONNACK. */
function connectAs(url: string, username: string, password: string, clientId: string): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, { username, password, clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: WAIT_MS });
    c.once('connect', () => resolve(c));
    c.once('error', (err) => {
      c.end(true);
      reject(err);
    });
  });
}

test('records made on one node are on the other, and its clients are admitted and limited there', async () => {
  const [, b] = nodes;
  const org = ok(await v1(0, 'POST', '/organizations', { name: 'clusterco' }));
  const project = ok(await v1(0, 'POST', '/projects', { organizationId: org.id, name: 'site' }));
  const app = ok(await v1(0, 'POST', '/applications', { projectId: project.id, name: 'meters' }));
  const rule = ok(await v1(0, 'POST', '/alert-rules', { name: 'many-conns', signal: 'tenant.connections', operator: '>', threshold: 1000, organizationId: org.id }));
  // On b: the same records.
  await waitFor(async () => (await v1(1, 'GET', `/applications/${app.id}`)).status === 200, { message: 'the application on b' });
  assert.equal(ok(await v1(1, 'GET', `/organizations/${org.id}`)).name, 'clusterco');
  assert.equal(ok(await v1(1, 'GET', `/projects/${project.id}`)).name, 'site');
  await waitFor(async () => (await v1(1, 'GET', `/alert-rules/${rule.id}`)).status === 200, { message: 'the alert rule on b' });

  // Its credentials work on b, inside its namespace.
  const c1 = await connectAs(b.url, app.appKey, app.appSecret, 'meter-1');
  await c1.publishAsync('clusterco/site/meters/m1', 'ok', { qos: 1 });

  // A licence made on a limits b's clients: one connection at most.
  const licence = ok(await v1(0, 'POST', '/licenses', { organizationId: org.id, applicationId: app.id, maxConnections: 1 }));
  await waitFor(async () => (await v1(1, 'GET', `/licenses/${licence.id}`)).status === 200, { message: 'the licence on b' });
  await assert.rejects(connectAs(b.url, app.appKey, app.appSecret, 'meter-2'), (err: Error & { code?: number }) => err.code === 0x97, 'a second client on b is refused (quota exceeded)');

  // Deleted on a: its client on b is disconnected, and it is gone from b.
  const closed = new Promise<void>((resolve) => c1.once('close', () => resolve()));
  ok(await v1(0, 'DELETE', `/applications/${app.id}`));
  await closed;
  await waitFor(async () => (await v1(1, 'GET', `/applications/${app.id}`)).status === 404, { message: 'the application gone from b' });
  await assert.rejects(connectAs(b.url, app.appKey, app.appSecret, 'meter-3'));
});
