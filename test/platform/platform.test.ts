// The control platform end to end, as docs/api/platform.md walks a new user through it: the system admin
// signs in to /api/v1, makes an organization, a project and an application; mosquitto_pub and
// mqtt.js connect with the application's credentials inside its namespace and are refused outside
// it (0x87, counted); the licence's connection quota refuses the next CONNECT (0x97) and its
// message rate throttles without losing anything; an alert rule fires to a real webhook receiver
// and to Mailpit's mailbox and resolves; every step is in the audit log. Then every role's scope.
// needs: broker, postgresql, mariadb, mailpit
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';

import mqtt, { type MqttClient } from 'mqtt';
import mysql from 'mysql2/promise';

import { startAdminBroker, type AdminBroker, type ApiResponse } from '../helpers/admin.ts';
import { ADMIN_PASSWORD, end, nextMessages } from '../helpers/broker.ts';
import { ensureMailpit } from '../helpers/services.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';
import { MYSQL_URL, pgSchema, uniqueName } from '../store/databases.ts';

const run = promisify(execFile);
const MAILPIT_API = 'http://127.0.0.1:8025/api/v1';

let b: AdminBroker;
let token: string;

/** A request as a platform user (a bearer token). */
function v1(method: string, p: string, body?: unknown, bearer = token): Promise<ApiResponse> {
  // Every request but a GET is declared JSON (the admin API refuses others: a browser page cannot
  // forge one without a CORS preflight).
  return b.api(method, `/api/v1${p}`, { body, authorization: `Bearer ${bearer}`, headers: method === 'GET' ? {} : { 'content-type': 'application/json' } });
}

async function login(username: string, password: string): Promise<string> {
  const r = await b.api('POST', '/api/v1/auth/login', { body: { username, password }, as: 'none' });
  assert.equal(r.status, 200, r.text);
  return r.json.accessToken as string;
}

function ok(r: ApiResponse, status = 200): any {
  assert.equal(r.status, status, r.text);
  return r.json?.data;
}

/** A connected mqtt.js client, or the CONNACK error it got. */
function connectAs(username: string, password: string, clientId = `c-${randomUUID().slice(0, 8)}`): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(b.url, { username, password, clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: WAIT_MS });
    c.once('connect', () => resolve(c));
    c.once('error', (err) => {
      c.end(true);
      reject(err);
    });
  });
}

/** A real HTTP receiver for the webhook channel: every JSON body it was sent. */
function receiver(): Promise<{ url: string; bodies: any[]; close(): void }> {
  const bodies: any[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200).end('ok');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const port = (server.address() as { port: number }).port;
    resolve({ url: `http://127.0.0.1:${port}/hook`, bodies, close: () => server.close() });
  }));
}

before(async () => {
  ensureMailpit();
  b = await startAdminBroker({ platform: { alertInterval: 1 } });
  token = await login('admin', ADMIN_PASSWORD);
});

after(async () => {
  await b?.stop();
});

describe('a new user\'s path', () => {
  let org: any;
  let app: any;
  let other: any;

  test('the system admin signs in and is SystemAdmin', async () => {
    const me = await v1('GET', '/auth/me');
    assert.equal(me.status, 200);
    assert.equal(me.json.username, 'admin');
    assert.equal(me.json.role, 'SystemAdmin');
    assert.equal(me.json.organizationId, null);
    const wrong = await b.api('POST', '/api/v1/auth/login', { body: { username: 'admin', password: 'wrong-password' }, as: 'none' });
    assert.equal(wrong.status, 401);
    assert.equal((await b.api('GET', '/api/v1/auth/me', { as: 'none' })).status, 401);
  });

  test('creates an organization, a project and an application with MQTT credentials', async () => {
    org = ok(await v1('POST', '/organizations', { name: 'acme', displayName: 'ACME Corp' }));
    assert.equal(org.name, 'acme');
    const project = ok(await v1('POST', '/projects', { organizationId: org.id, name: 'plant-1' }));
    app = ok(await v1('POST', '/applications', { projectId: project.id, name: 'sensors' }));
    assert.equal(app.namespace, 'acme/plant-1/sensors/#');
    assert.match(app.appKey, /^ak_/);
    assert.match(app.appSecret, /^sk_/);
    // The secret is answered once.
    assert.equal(ok(await v1('GET', `/applications/${app.id}`)).appSecret, undefined);
    // Another tenant, for the cross-tenant checks.
    const globex = ok(await v1('POST', '/organizations', { name: 'globex' }));
    const gp = ok(await v1('POST', '/projects', { organizationId: globex.id, name: 'hq' }));
    other = ok(await v1('POST', '/applications', { projectId: gp.id, name: 'fleet' }));
    // Conflicts and bad input.
    const taken = await v1('POST', '/projects', { organizationId: org.id, name: 'plant-1' });
    assert.equal(taken.status, 409);
    assert.equal(taken.json.field, 'name');
    const bad = await v1('POST', '/applications', { projectId: project.id, name: 'has space' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.field, 'name');
    const overlap = await v1('POST', '/applications', { projectId: project.id, name: 'other', namespace: 'acme/plant-1/sensors/room-1/#' });
    assert.equal(overlap.status, 409);
    assert.equal(overlap.json.field, 'namespace');
    const outside = await v1('PUT', `/applications/${app.id}`, { name: 'sensors', namespace: 'globex/x/#' }, await tenantAdminToken(org.id));
    assert.equal(outside.status, 400);
    assert.equal(outside.json.field, 'namespace');
  });

  test('mosquitto_pub and mqtt.js connect with the credentials inside the namespace', async () => {
    const sub = await connectAs(app.appKey, app.appSecret);
    const granted = await sub.subscribeAsync('acme/plant-1/sensors/#', { qos: 1 });
    assert.equal(granted[0].qos, 1);
    const got = nextMessages(sub, 1);
    await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-V', 'mqttv5', '-u', app.appKey, '-P', app.appSecret, '-t', 'acme/plant-1/sensors/t1', '-m', '21.5', '-q', '1']);
    const [m] = await got;
    assert.equal(m.topic, 'acme/plant-1/sensors/t1');
    assert.equal(m.payload, '21.5');
    await end(sub);
  });

  test('outside its namespace the application is refused with 0x87, and it is counted', async () => {
    const c = await connectAs(app.appKey, app.appSecret);
    // mqtt.js rejects a SUBACK whose every code is a refusal; the codes are in its packet.
    const refused = await c.subscribeAsync(['globex/hq/fleet/#', '$SYS/#', 'acme/plant-2/#'], { qos: 1 }).then(
      () => assert.fail('the subscriptions were granted'),
      (err: { packet?: { granted?: number[] } }) => err.packet?.granted,
    );
    assert.deepEqual(refused, [0x87, 0x87, 0x87]);
    // A filter wider than the namespace is granted in part: only the namespace's topics reach it
    // (each delivery is checked, as Mosquitto checks read access).
    assert.equal((await c.subscribeAsync('acme/#', { qos: 1 }))[0].qos, 1);
    // A QoS 1 publish to another tenant's namespace: PUBACK 0x87, and the other tenant sees nothing.
    const victim = await connectAs(other.appKey, other.appSecret);
    await victim.subscribeAsync('globex/hq/fleet/#', { qos: 1 });
    let leaked = 0;
    victim.on('message', () => leaked++);
    const reason = await new Promise<number | undefined>((resolve) => {
      c.publish('globex/hq/fleet/cmd', 'x', { qos: 1 }, (err, packet) => resolve((err as { code?: number } | undefined)?.code ?? (packet as { reasonCode?: number } | undefined)?.reasonCode));
    });
    assert.equal(reason, 0x87);
    const outside = await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-V', 'mqttv5', '-u', app.appKey, '-P', app.appSecret, '-t', 'globex/hq/fleet/cmd', '-m', 'x', '-q', '1', '-d'])
      .then((r) => r.stdout + r.stderr, (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`);
    assert.match(outside, /not authori[sz]ed|reason code 135|0x87/i);
    const usage = ok(await v1('GET', `/applications/${app.id}/usage`));
    assert.ok(usage.aclDenied >= 5, JSON.stringify(usage));
    // A wrong secret is refused at CONNECT.
    await assert.rejects(connectAs(app.appKey, 'sk_wrong'), (err: { code?: number }) => err.code === 0x86);
    assert.equal(leaked, 0);
    await end(c, victim);
  });

  test('the licence caps connections (0x97) and shows the count against it', async () => {
    const licence = ok(await v1('POST', '/licenses', { organizationId: org.id, applicationId: app.id, maxConnections: 2, features: ['mqtt'] }));
    assert.equal(licence.maxConnections, 2);
    const c1 = await connectAs(app.appKey, app.appSecret);
    const c2 = await connectAs(app.appKey, app.appSecret);
    await assert.rejects(connectAs(app.appKey, app.appSecret), (err: { code?: number }) => err.code === 0x97);
    const shown = ok(await v1('GET', `/licenses/${licence.id}`));
    assert.equal(shown.usage.connections, 2);
    assert.equal(shown.usage.maxConnections, 2);
    assert.equal(shown.usage.connectionsUsage, 100);
    assert.equal(shown.usage.quotaRefused, 1);
    await end(c1);
    await waitFor(async () => ok(await v1('GET', `/applications/${app.id}/usage`)).connections === 1, { message: 'the connection given back' });
    const c3 = await connectAs(app.appKey, app.appSecret);
    await end(c2, c3);
    // At the quota, a client taking over its own session is not refused: the connection it takes
    // over gives its place back first.
    ok(await v1('PUT', `/licenses/${licence.id}`, { maxConnections: 1 }));
    const first = await connectAs(app.appKey, app.appSecret, 'device-7');
    const takenOver = new Promise<number | undefined>((resolve) => first.once('disconnect', (p) => resolve(p.reasonCode)));
    const second = await connectAs(app.appKey, app.appSecret, 'device-7');
    assert.equal(await takenOver, 0x8e);
    assert.equal(ok(await v1('GET', `/applications/${app.id}/usage`)).connections, 1);
    first.end(true);
    await end(second);
    ok(await v1('PUT', `/licenses/${licence.id}`, { maxConnections: null }));
  });

  test('a worker that dies gives its tenant connections back', async () => {
    const before = ok(await v1('GET', `/applications/${app.id}/usage`)).connections;
    const c = await connectAs(app.appKey, app.appSecret, 'on-a-dying-worker');
    await waitFor(async () => ok(await v1('GET', `/applications/${app.id}/usage`)).connections === before + 1, { message: 'the connection counted' });
    const { w } = await waitFor(() => {
      const owner = b.supervisor.workerOf('on-a-dying-worker');
      return owner === undefined ? false : { w: owner };
    }, { message: 'the client\'s worker' });
    const dead = b.supervisor.workers[w]!;
    const exited = new Promise((resolve) => dead.once('exit', resolve));
    // A message the worker's handler throws on ends the thread (see test/admin/system.test.ts).
    dead.postMessage({ t: 'publish', message: null });
    await exited;
    await waitFor(async () => ok(await v1('GET', `/applications/${app.id}/usage`)).connections === before, { message: 'the dead worker\'s connection given back' });
    assert.equal(ok(await v1('GET', `/organizations/${org.id}/usage`)).connections, before);
    c.end(true);
    await waitFor(() => b.supervisor.runningWorkers().length === 2, { message: 'the worker restarted' });
  });

  test('the licence\'s message rate throttles the publisher and loses nothing', async () => {
    const licence = ok(await v1('POST', '/licenses', { organizationId: org.id, maxMessageRate: 20 }));
    const sub = await connectAs(app.appKey, app.appSecret);
    await sub.subscribeAsync('acme/plant-1/sensors/rate', { qos: 1 });
    const pub = await connectAs(app.appKey, app.appSecret);
    const got = nextMessages(sub, 60, WAIT_MS * 2);
    for (let i = 0; i < 60; i++) pub.publish('acme/plant-1/sensors/rate', String(i), { qos: 1 });
    const messages = await got;
    assert.deepEqual(messages.map((m) => m.payload), Array.from({ length: 60 }, (_, i) => String(i)));
    const usage = ok(await v1('GET', `/organizations/${org.id}/usage`));
    assert.ok(usage.throttled >= 1, JSON.stringify(usage));
    await end(sub, pub);
    ok(await v1('DELETE', `/licenses/${licence.id}`));
  });

  test('an alert fires to a webhook and to the SMTP mailbox, deduplicated, and resolves', async () => {
    const hook = await receiver();
    try {
      const webhook = ok(await v1('POST', '/notification-channels', { organizationId: org.id, name: 'ops hook', type: 'webhook', config: { url: hook.url } }));
      const mail = ok(await v1('POST', '/notification-channels', {
        organizationId: org.id, name: 'ops mail', type: 'email',
        config: { host: '127.0.0.1', port: 1025, secure: false, from: 'spindle@acme.test', to: ['ops@acme.test'], password: 'smtp-secret', username: 'bot' },
      }));
      assert.equal(mail.config.password, '******');
      const ruleName = `acme connections ${randomUUID().slice(0, 8)}`;
      const rule = ok(await v1('POST', '/alert-rules', {
        organizationId: org.id, name: ruleName, signal: 'tenant.connections', aggregation: 'last', window: 5, operator: '>=', threshold: 2,
        severity: 'critical', channelIds: [webhook.id, mail.id],
      }));
      // A platform-wide signal is a SystemAdmin's rule only.
      const broad = await v1('POST', '/alert-rules', { organizationId: org.id, name: 'x', signal: 'connections', operator: '>', threshold: 1 });
      assert.equal(broad.status, 400);
      assert.equal(broad.json.field, 'signal');

      const c1 = await connectAs(app.appKey, app.appSecret);
      const c2 = await connectAs(app.appKey, app.appSecret);
      await waitFor(() => hook.bodies.some((n) => n.kind === 'firing' && n.ruleId === rule.id), { message: 'the firing notice at the webhook' });
      const firing = hook.bodies.find((n) => n.kind === 'firing');
      assert.equal(firing.severity, 'critical');
      assert.equal(firing.organizationId, org.id);
      const email = await waitFor(async () => {
        const res = await fetch(`${MAILPIT_API}/search?query=${encodeURIComponent(`subject:"${ruleName}"`)}`);
        return ((await res.json()) as { messages: { ID: string; Subject: string }[] }).messages.find((m) => m.Subject.includes(ruleName));
      }, { message: 'the alert e-mail in Mailpit' });
      assert.match(email.Subject, /FIRING/);
      const alerts = ok(await v1('GET', `/alerts?state=firing&ruleId=${rule.id}`).then((r) => ({ ...r, json: { data: r.json } })));
      assert.equal(alerts.total, 1);
      const alert = alerts.data[0];
      // Deduplicated while it stays firing: more evaluations, still one alert and one notice.
      await waitFor(async () => ok(await v1('GET', `/alerts/${alert.id}`)).occurrences >= 3, { message: 'three evaluations' });
      assert.equal(hook.bodies.filter((n) => n.kind === 'firing' && n.ruleId === rule.id).length, 1);
      const handled = ok(await v1('PUT', `/alerts/${alert.id}`, { status: 'handled' }));
      assert.equal(handled.status, 'handled');
      const bad = await v1('PUT', `/alerts/${alert.id}`, { status: 'done' });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.field, 'status');

      await end(c1, c2);
      await waitFor(() => hook.bodies.some((n) => n.kind === 'resolved' && n.ruleId === rule.id), { message: 'the resolved notice' });
      const resolved = ok(await v1('GET', `/alerts/${alert.id}`));
      assert.equal(resolved.state, 'resolved');
      assert.notEqual(resolved.resolvedTime, null);
      const test_ = ok(await v1('POST', `/notification-channels/${webhook.id}/test`));
      assert.equal(test_.ok, true);
      assert.ok(hook.bodies.some((n) => n.kind === 'test'));
    } finally {
      hook.close();
    }
  });

  test('each step is in the audit log, paged and filtered, and cannot be changed', async () => {
    const page = await v1('GET', '/audit-logs?resource=application&action=create&size=50');
    assert.equal(page.status, 200, page.text);
    const created = page.json.data.find((e: any) => e.resourceId === app.id);
    assert.ok(created, 'the application\'s creation');
    assert.equal(created.username, 'admin');
    assert.equal(created.role, 'admin');
    assert.equal(created.organizationId, org.id);
    assert.equal(created.after.appSecret, undefined);
    assert.match(created.address, /127\.0\.0\.1/);
    const orgs = await v1('GET', `/audit-logs?resource=organization&resourceId=${org.id}`);
    assert.equal(orgs.json.total, 1);
    const logins = await v1('GET', '/audit-logs?action=login&username=admin');
    assert.ok(logins.json.total >= 1);
    const failed = await v1('GET', '/audit-logs?action=login_failed');
    assert.ok(failed.json.total >= 1);
    // The broker API's sign-in too, failed or not, without the password.
    assert.equal((await b.api('POST', '/public/login', { body: { username: 'admin', password: 'not-the-password' }, as: 'none' })).status, 401);
    const brokerLogins = await v1('GET', '/audit-logs?action=login_failed&resource=session&size=100');
    const entry = brokerLogins.json.data.find((e: any) => e.path === '/public/login');
    assert.ok(entry, 'the failed /public/login');
    assert.equal(entry.status, 401);
    assert.equal(entry.after.password, '******');
    for (const resource of ['project', 'license', 'notification-channel', 'alert-rule', 'alert']) {
      const r = await v1('GET', `/audit-logs?resource=${resource}`);
      assert.ok(r.json.total >= 1, `an entry for ${resource}`);
    }
    // Paging and time range.
    const two = await v1('GET', '/audit-logs?size=2&page=1');
    assert.equal(two.json.data.length, 2);
    assert.ok(two.json.total > 2);
    assert.ok(Date.parse(two.json.data[0].time) >= Date.parse(two.json.data[1].time));
    const none = await v1('GET', `/audit-logs?to=${encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString())}`);
    assert.equal(none.json.total, 0);
    const badQuery = await v1('GET', '/audit-logs?size=5000');
    assert.equal(badQuery.status, 400);
    assert.equal(badQuery.json.field, 'size');
    // Writes through the broker's own admin API are audited too.
    ok(await b.api('POST', '/api/users/add', { body: { username: 'audited', password: 'audited-password', role: 'viewer' } }));
    const broker = await v1('GET', '/audit-logs?resource=users&resourceId=audited');
    assert.equal(broker.json.total, 1);
    assert.equal(broker.json.data[0].after.password, '******');
    // Nothing changes it.
    for (const method of ['PUT', 'DELETE', 'POST']) {
      const r = await v1(method, `/audit-logs/${broker.json.data[0].id}`);
      assert.equal(r.status, 404);
    }
  });

  test('OpenAPI documents /api/v1 beside the broker\'s API', async () => {
    const doc = await b.api('GET', '/public/openapi-v1.json', { as: 'none' });
    assert.equal(doc.status, 200);
    assert.ok(doc.json.paths['/api/v1/applications/{id}'].put);
    assert.ok(doc.json.paths['/api/v1/audit-logs'].get);
    const broker = await b.api('GET', '/public/openapi.json', { as: 'none' });
    assert.equal(broker.json.paths['/api/v1/applications'], undefined);
  });
});

/** An OrganizationAdmin of `orgId` (made once per organization). */
const tenantAdmins = new Map<string, string>();
async function tenantAdminToken(orgId: string): Promise<string> {
  const had = tenantAdmins.get(orgId);
  if (had) return had;
  const username = `oa-${randomUUID().slice(0, 8)}`;
  ok(await v1('POST', '/users', { username, password: 'org-admin-password', role: 'OrganizationAdmin', organizationId: orgId, email: `${username}@acme.test` }));
  const t = await login(username, 'org-admin-password');
  tenantAdmins.set(orgId, t);
  return t;
}

describe('roles and scope', () => {
  let a: any; let bOrg: any; let pa: any; let pb: any; let appA: any; let appB: any; let appOtherProject: any;
  const tokens: Record<string, string> = {};

  before(async () => {
    a = ok(await v1('POST', '/organizations', { name: 'org-a' }));
    bOrg = ok(await v1('POST', '/organizations', { name: 'org-b' }));
    pa = ok(await v1('POST', '/projects', { organizationId: a.id, name: 'p1' }));
    const pa2 = ok(await v1('POST', '/projects', { organizationId: a.id, name: 'p2' }));
    pb = ok(await v1('POST', '/projects', { organizationId: bOrg.id, name: 'p1' }));
    appA = ok(await v1('POST', '/applications', { projectId: pa.id, name: 'app' }));
    appOtherProject = ok(await v1('POST', '/applications', { projectId: pa2.id, name: 'app' }));
    appB = ok(await v1('POST', '/applications', { projectId: pb.id, name: 'app' }));
    const users = [
      { username: 'org-a-admin', role: 'OrganizationAdmin', organizationId: a.id },
      { username: 'org-a-project-admin', role: 'ProjectAdmin', organizationId: a.id, projectId: pa.id },
      { username: 'org-a-user', role: 'User', organizationId: a.id },
    ];
    for (const u of users) {
      ok(await v1('POST', '/users', { ...u, password: 'tenant-password' }));
      tokens[u.role] = await login(u.username, 'tenant-password');
    }
  });

  test('/auth/me tells each user its role and organization', async () => {
    for (const role of ['OrganizationAdmin', 'ProjectAdmin', 'User']) {
      const me = await v1('GET', '/auth/me', undefined, tokens[role]);
      assert.equal(me.json.role, role);
      assert.equal(me.json.organizationId, a.id);
    }
  });

  test('another organization\'s records are 404 for every tenant role, and absent from lists', async () => {
    for (const role of ['OrganizationAdmin', 'ProjectAdmin', 'User']) {
      const t = tokens[role];
      for (const p of [`/organizations/${bOrg.id}`, `/projects/${pb.id}`, `/applications/${appB.id}`, `/organizations/${bOrg.id}/usage`]) {
        const r = await v1('GET', p, undefined, t);
        assert.equal(r.status, 404, `${role} GET ${p}: ${r.text}`);
        assert.ok(!r.text.includes('org-b'), 'no data of the other organization');
      }
      assert.equal((await v1('PUT', `/applications/${appB.id}`, { description: 'x' }, t)).status, 404);
      assert.equal((await v1('DELETE', `/projects/${pb.id}`, undefined, t)).status, 404);
      const orgs = await v1('GET', '/organizations', undefined, t);
      assert.deepEqual(orgs.json.data.map((o: any) => o.id), [a.id]);
      const apps = await v1('GET', '/applications?size=100', undefined, t);
      assert.ok(apps.json.data.every((x: any) => x.organizationId === a.id));
      // Not even through the broker's own API.
      assert.equal((await b.api('GET', '/api/endpoints/list', { authorization: `Bearer ${t}` })).status, 403);
    }
  });

  test('an OrganizationAdmin manages its organization, not the platform', async () => {
    const t = tokens.OrganizationAdmin;
    assert.equal((await v1('POST', '/organizations', { name: 'mine' }, t)).status, 403);
    const p = ok(await v1('POST', '/projects', { name: 'p3' }, t));
    assert.equal(p.organizationId, a.id);
    ok(await v1('POST', '/applications', { projectId: p.id, name: 'devices' }, t));
    assert.equal((await v1('POST', '/licenses', { organizationId: a.id, maxConnections: 5 }, t)).status, 403);
    assert.equal((await v1('POST', '/users', { username: 'sneaky', password: 'tenant-password', role: 'SystemAdmin' }, t)).status, 403);
    assert.equal((await v1('POST', '/users', { username: 'sneaky2', password: 'tenant-password', role: 'User', organizationId: bOrg.id }, t)).status, 404);
    ok(await v1('POST', '/users', { username: 'new-user', password: 'tenant-password', role: 'User' }, t));
    assert.ok((await v1('GET', '/audit-logs', undefined, t)).json.data.every((e: any) => e.organizationId === a.id));
  });

  test('a ProjectAdmin manages its project\'s applications only', async () => {
    const t = tokens.ProjectAdmin;
    ok(await v1('PUT', `/applications/${appA.id}`, { description: 'changed' }, t));
    assert.equal((await v1('GET', `/applications/${appOtherProject.id}`, undefined, t)).status, 404);
    assert.equal((await v1('POST', '/projects', { name: 'p9' }, t)).status, 403);
    assert.equal((await v1('DELETE', `/organizations/${a.id}`, undefined, t)).status, 403);
  });

  test('a User reads and changes nothing', async () => {
    const t = tokens.User;
    assert.equal((await v1('GET', `/applications/${appA.id}`, undefined, t)).status, 200);
    assert.equal((await v1('PUT', `/applications/${appA.id}`, { description: 'no' }, t)).status, 403);
    assert.equal((await v1('POST', '/applications', { projectId: pa.id, name: 'nope' }, t)).status, 403);
    assert.equal((await v1('GET', '/audit-logs', undefined, t)).status, 403);
  });

  test('a broker viewer has no platform role', async () => {
    const r = await b.api('GET', '/api/v1/organizations', { as: 'viewer' });
    assert.equal(r.status, 403);
  });

  test('deleting an organization with projects is a conflict unless cascaded; its clients are disconnected', async () => {
    const r = await v1('DELETE', `/organizations/${bOrg.id}`);
    assert.equal(r.status, 409);
    assert.equal(r.json.field, 'cascade');
    const c = await connectAs(appB.appKey, appB.appSecret);
    const gone = new Promise<void>((resolve) => c.once('close', () => resolve()));
    ok(await v1('DELETE', `/organizations/${bOrg.id}?cascade=true`));
    await gone;
    await assert.rejects(connectAs(appB.appKey, appB.appSecret), (err: { code?: number }) => err.code === 0x86 || err.code === 0x87);
    assert.equal((await v1('GET', `/applications/${appB.id}`)).status, 404);
  });
});

/** The stores the platform is kept in across a restart: each test gets its own, empty. */
const STORES: { name: string; make(): Promise<{ settings: Record<string, unknown>; drop(): Promise<void> }> }[] = [
  {
    name: 'LOCAL',
    async make() {
      return { settings: { storeType: 'LOCAL' }, drop: async () => {} };
    },
  },
  {
    name: 'POSTGRESQL',
    async make() {
      const schema = await pgSchema('platform');
      return { settings: schema.store, drop: () => schema.drop() };
    },
  },
  {
    name: 'MYSQL',
    async make() {
      const database = uniqueName('platform');
      const url = new URL(MYSQL_URL);
      url.pathname = `/${database}`;
      return {
        settings: { storeType: 'MYSQL', datasource: { url: url.toString() } },
        async drop() {
          const conn = await mysql.createConnection({ uri: MYSQL_URL });
          try {
            await conn.query('DROP DATABASE IF EXISTS ??', [database]);
          } finally {
            await conn.end();
          }
        },
      };
    },
  },
];

describe('persistence on every store type', () => {
  for (const kind of STORES) {
    test(`${kind.name}: tenants, credentials, licences, channels, alert rules and the audit log survive a restart`, async () => {
      const store = await kind.make();
      const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-platform-'));
      const start = () => startAdminBroker({ dataDir, store: store.settings });
      const call = async (broker: AdminBroker, method: string, p: string, body?: unknown) => {
        const r = await broker.api(method, `/api/v1${p}`, { body, headers: method === 'GET' ? {} : { 'content-type': 'application/json' } });
        assert.equal(r.status, 200, r.text);
        return r.json.data ?? r.json;
      };
      try {
        const first = await start();
        let created: any;
        let channel: any;
        let rule: any;
        try {
          const o = await call(first, 'POST', '/organizations', { name: 'durable' });
          const p = await call(first, 'POST', '/projects', { organizationId: o.id, name: 'p' });
          created = await call(first, 'POST', '/applications', { projectId: p.id, name: 'a' });
          await call(first, 'POST', '/licenses', { organizationId: o.id, maxConnections: 1 });
          channel = await call(first, 'POST', '/notification-channels', { organizationId: o.id, name: 'hook', type: 'webhook', config: { url: 'http://127.0.0.1:9/x', headers: { authorization: 'Bearer abc' } } });
          rule = await call(first, 'POST', '/alert-rules', { organizationId: o.id, name: 'r', signal: 'tenant.connections', operator: '>', threshold: 5, channelIds: [channel.id] });
          await call(first, 'POST', '/users', { username: 'durable-admin', password: 'durable-password', role: 'OrganizationAdmin', organizationId: o.id });
        } finally {
          await first.stop();
        }
        const second = await start();
        try {
          const url = `mqtt://127.0.0.1:${second.ports.tcp}`;
          const c = await mqtt.connectAsync(url, { username: created.appKey, password: created.appSecret, protocolVersion: 5, reconnectPeriod: 0 });
          await assert.rejects(mqtt.connectAsync(url, { username: created.appKey, password: created.appSecret, protocolVersion: 5, reconnectPeriod: 0 }), (err: { code?: number }) => err.code === 0x97);
          await c.endAsync();
          assert.equal((await call(second, 'GET', `/notification-channels/${channel.id}`)).config.headers.authorization, '******');
          assert.deepEqual((await call(second, 'GET', `/alert-rules/${rule.id}`)).channelIds, [channel.id]);
          const signedIn = await second.api('POST', '/api/v1/auth/login', { body: { username: 'durable-admin', password: 'durable-password' }, as: 'none' });
          assert.equal(signedIn.status, 200);
          const audit = (await second.api('GET', `/api/v1/audit-logs?resourceId=${created.id}`)).json;
          assert.equal(audit.total, 1);
          assert.equal(audit.data[0].action, 'create');
        } finally {
          await second.stop();
        }
      } finally {
        await store.drop();
      }
    });
  }
});
